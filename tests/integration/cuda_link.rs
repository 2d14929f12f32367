//! The CUDA runtime choices and relocatable device code with the real nvcc (CUDA 13): each
//! build's link directives are handed to rustc as cargo would hand them, linking a Rust program
//! that calls the kernels' `extern "C"` entry point, and the program runs (without a GPU the
//! runtime reports no device: the entry point returns 1, not a crash). The criterion is the link:
//! without the device link (`rdc`), or without a runtime (`cudart = "none"`), it fails.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `kernels/a.cu`: a kernel calling `twice`, defined in `kernels/b.cu` (a device function of
/// another translation unit: only relocatable device code and a device link resolve it), and
/// the entry point `cuda_run` launching it.
const A_CU: &str = "#include <cuda_runtime.h>\nextern __device__ float twice(float x);\n__global__ void k(float* y) { y[threadIdx.x] = twice(y[threadIdx.x]); }\nextern \"C\" int cuda_run(void) {\n    float* d = nullptr;\n    if (cudaMalloc(&d, 4 * sizeof(float)) != cudaSuccess) return 1;\n    k<<<1, 4>>>(d);\n    cudaError_t e = cudaDeviceSynchronize();\n    cudaFree(d);\n    return e == cudaSuccess ? 0 : 2;\n}\n";
const B_CU: &str = "__device__ float twice(float x) { return 2.0f * x; }\n";
/// The same entry point with the kernel in one file (no cross-file device call).
const ONE_CU: &str = "#include <cuda_runtime.h>\n__global__ void k(float* y) { y[threadIdx.x] *= 2.0f; }\nextern \"C\" int cuda_run(void) {\n    float* d = nullptr;\n    if (cudaMalloc(&d, 4 * sizeof(float)) != cudaSuccess) return 1;\n    k<<<1, 4>>>(d);\n    cudaError_t e = cudaDeviceSynchronize();\n    cudaFree(d);\n    return e == cudaSuccess ? 0 : 2;\n}\n";
const MAIN_RS: &str = "extern \"C\" { fn cuda_run() -> i32; }\nfn main() { println!(\"cuda_run={}\", unsafe { cuda_run() }); }\n";

fn package(files: &[(&str, &str)], cuda_table: &str) -> Package {
    let pkg = Package::new(files);
    pkg.write(
        "Cargo.toml",
        &format!(
            "{}\n[package.metadata.mcpp.cuda]\n{cuda_table}\n",
            manifest(
                "cuda-link",
                "accel = \"cuda13.0+{sm_80}\"\nsources = [\"kernels/*.cu\"]"
            )
        ),
    );
    pkg
}

fn build(pkg: &Package) -> cargo_mcpp::Build {
    let mut b = pkg.build();
    for v in [
        "NVCC",
        "MCPP_NVCC",
        "MCPP_TOOL_NVCC",
        "CUDA_HOME",
        "CUDAHOSTCXX",
        "NVCC_CCBIN",
        "TARGET",
        "HOST",
    ] {
        b.env_remove(v);
    }
    b.env("CUDA_PATH", cuda13()).env("MCPP_LAUNCHER", "none");
    b
}

/// rustc links `MAIN_RS` with the build's link directives ([`rustc_link_args`]) and `extra`
/// arguments, as cargo would; the link's output, and the program when it linked.
fn link(
    pkg: &Package,
    outcome: &cargo_mcpp::pipeline::Outcome,
    extra: &[&str],
) -> (Output, PathBuf) {
    let main = pkg.path("main.rs");
    std::fs::write(&main, MAIN_RS).unwrap();
    let exe = pkg.path("prog");
    let out = Command::new("rustc")
        .args(["--edition", "2021", "-o"])
        .arg(&exe)
        .arg(&main)
        .args(rustc_link_args(outcome))
        .args(extra)
        .output()
        .unwrap();
    (out, exe)
}

/// The program's line, which must have run.
fn run(exe: &Path) -> String {
    let out = Command::new(exe).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.starts_with("cuda_run="), "{said}");
    said
}

/// The shared libraries a program needs (`readelf -d`'s NEEDED entries).
fn needed(exe: &Path) -> String {
    let out = Command::new("readelf").arg("-d").arg(exe).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("NEEDED"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn real_nvcc_rdc_device_links_a_device_call_across_two_files() {
    let pkg = package(
        &[("kernels/a.cu", A_CU), ("kernels/b.cu", B_CU)],
        "rdc = true",
    );
    let outcome = pkg.compile(&build(&pkg));
    let ran = &outcome.report.ran;
    assert!(
        ran.iter().any(|id| id == "cuda:kernels/a.cu")
            && ran.iter().any(|id| id == "cuda:kernels/b.cu"),
        "{ran:?}"
    );
    assert!(
        ran.iter().any(|id| id == "cuda:device-link"),
        "a device-link step ran: {ran:?}"
    );
    let lines = outcome.cargo.lines().to_vec();
    assert!(
        lines.contains(&"cargo::rustc-link-lib=static=cudadevrt".to_string()),
        "{lines:#?}"
    );
    let (out, exe) = link(&pkg, &outcome, &[]);
    assert!(
        out.status.success(),
        "the device-linked archive does not link: {}",
        text(&out)
    );
    run(&exe);
    // The criterion can fail: without relocatable device code `twice` is unresolved, and nvcc
    // (ptxas) refuses the kernel.
    let plain = package(&[("kernels/a.cu", A_CU), ("kernels/b.cu", B_CU)], "");
    let e = build(&plain)
        .try_compile()
        .expect_err("a cross-file device call without rdc");
    assert!(e.to_string().contains("twice"), "{e}");
}

#[test]
fn real_nvcc_cudart_shared_links_the_shared_runtime_with_an_rpath() {
    let pkg = package(&[("kernels/one.cu", ONE_CU)], "cudart = \"shared\"");
    let outcome = pkg.compile(&build(&pkg));
    let lines = outcome.cargo.lines().to_vec();
    assert!(
        !lines.iter().any(|l| l.contains("cudart_static")),
        "{lines:#?}"
    );
    let (out, exe) = link(&pkg, &outcome, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        needed(&exe).contains("libcudart.so"),
        "the program needs the shared runtime: {}",
        needed(&exe)
    );
    // It runs without LD_LIBRARY_PATH: the rpath names the toolkit's runtime directory.
    run(&exe);
    // The static default needs no libcudart.so.
    let pkg = package(&[("kernels/one.cu", ONE_CU)], "");
    let outcome = pkg.compile(&build(&pkg));
    let (out, exe) = link(&pkg, &outcome, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!needed(&exe).contains("libcudart"), "{}", needed(&exe));
    run(&exe);
}

#[test]
fn real_nvcc_cudart_none_links_no_runtime_and_the_users_own_one_completes_the_link() {
    let pkg = package(&[("kernels/one.cu", ONE_CU)], "cudart = \"none\"");
    let outcome = pkg.compile(&build(&pkg));
    let lines = outcome.cargo.lines().to_vec();
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("cargo::rustc-link-lib") && l.contains("cudart")),
        "no runtime linked: {lines:#?}"
    );
    assert!(
        outcome
            .cargo
            .warnings()
            .any(|w| w.contains("cudart = \"none\"")),
        "the choice is said"
    );
    let (out, _) = link(&pkg, &outcome, &[]);
    assert!(!out.status.success(), "linked with no runtime at all");
    assert!(
        text(&out).contains("cudaMalloc") || text(&out).contains("__cudaRegisterFatBinary"),
        "{}",
        text(&out)
    );
    // The user's own runtime (here the toolkit's static one) completes it.
    let lib = cuda13().join("lib");
    let (out, exe) = link(
        &pkg,
        &outcome,
        &[
            "-L",
            &lib.display().to_string(),
            "-l",
            "static=cudart_static",
            "-l",
            "dylib=dl",
            "-l",
            "dylib=rt",
            "-l",
            "dylib=pthread",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    run(&exe);
}
