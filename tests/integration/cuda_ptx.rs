//! CUDA device code as a payload through the library API on temp copies of
//! `tests/fixtures/cuda-ptx` (three kernels, two of which include `kernels/shared.cuh`, compiled
//! with `[package.metadata.mcpp.cuda] output = "ptx"`, and `guarded/bf16max.cu`, whose header
//! guards a redefinition with `#if __CUDA_ARCH__ < 800`, given `output = "ptx"` by its `sources`
//! entry): real nvcc for the bytes criterion, the output switch and the guard; the recording
//! shim for argv, the placeholders of `--no-accel`, the object check and keep-going.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use cargo_mcpp::ErrorKind;
use harness::*;
use std::path::{Path, PathBuf};

/// The embedded copy of the payload `<ns>/<id>` (`kernels/affine_ptx`) of the surface in `<tmp>/out`.
fn payload(tmp: &Path, rel: &str, ext: &str) -> Vec<u8> {
    std::fs::read(tmp.join("out/mcpp/payloads").join(format!("{rel}.{ext}")))
        .unwrap_or_else(|e| panic!("{rel}.{ext}: {e}"))
}

fn ptx(tmp: &Path, rel: &str) -> String {
    let bytes = payload(tmp, rel, "txt");
    assert_eq!(
        bytes.last(),
        Some(&0),
        "{rel}: the text copy carries one NUL"
    );
    String::from_utf8(bytes[..bytes.len() - 1].to_vec()).unwrap()
}

fn surface(tmp: &Path) -> String {
    std::fs::read_to_string(tmp.join("out/mcpp_shaders.rs")).unwrap()
}

fn ids(ran: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = ran.iter().map(String::as_str).collect();
    v.sort_unstable();
    v
}

#[test]
fn an_edited_cuh_changes_exactly_the_ptx_of_its_includers_and_a_noop_starts_no_nvcc() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, nvcc) = counted_toolkit(tmp.path());
    let run = || cuda_build(tmp.path(), &pkg, &root).try_compile().unwrap();
    let first = run();
    assert_eq!(
        ids(&first.report.ran),
        [
            "cuda:ptx:compute_80:guarded/bf16max.cu",
            "cuda:ptx:compute_80:kernels/affine.cu",
            "cuda:ptx:compute_80:kernels/scale.cu",
            "cuda:ptx:compute_80:kernels/solo.cu"
        ]
    );
    let compiles = nvcc.calls().iter().filter(|c| c.has("--ptx")).count();
    assert_eq!(compiles, 4);
    let rs = surface(tmp.path());
    assert!(
        rs.contains("pub fn affine_ptx() -> super::TextPayload")
            && rs.contains("pub fn bf16max_ptx() -> super::TextPayload"),
        "{rs}"
    );
    assert!(rs.contains("pub fn all_text() -> [TextPayload; 8]"), "{rs}");
    let (affine, scale, solo, guarded) = (
        ptx(tmp.path(), "kernels/affine_ptx"),
        ptx(tmp.path(), "kernels/scale_ptx"),
        ptx(tmp.path(), "kernels/solo_ptx"),
        ptx(tmp.path(), "guarded/bf16max_ptx"),
    );
    assert!(
        affine.contains(".target sm_80") && affine.contains(".entry affine"),
        "{affine}"
    );
    assert!(
        guarded.contains(".entry bf16max"),
        "the __CUDA_ARCH__-guarded header compiles device-only: {guarded}"
    );
    // The C++ module hands the same text out.
    let cppm = std::fs::read_to_string(tmp.path().join("out/mcpp/fix_ptx.shaders.cppm")).unwrap();
    assert!(cppm.contains("text_payload affine_ptx()"), "{cppm}");

    // A no-op: nothing runs, no nvcc process at all (not even --version).
    let starts = nvcc.starts();
    let again = run();
    assert!(again.report.ran.is_empty(), "{:?}", again.report.ran);
    assert_eq!(nvcc.starts(), starts);

    // The shared header: exactly its two includers recompile, with new PTX; the others keep their bytes.
    edit(&pkg.join("kernels/shared.cuh"), "0.25f", "0.75f");
    let edited = run();
    assert_eq!(
        ids(&edited.report.ran),
        [
            "cuda:ptx:compute_80:kernels/affine.cu",
            "cuda:ptx:compute_80:kernels/scale.cu"
        ]
    );
    assert_eq!(nvcc.starts(), starts + 2);
    assert_ne!(ptx(tmp.path(), "kernels/affine_ptx"), affine);
    assert_ne!(ptx(tmp.path(), "kernels/scale_ptx"), scale);
    assert_eq!(ptx(tmp.path(), "kernels/solo_ptx"), solo);
    assert_eq!(ptx(tmp.path(), "guarded/bf16max_ptx"), guarded);
}

/// The objects of the variant's CUDA lane (`cuda/obj/*.o`).
fn objects(variant: &Path) -> Vec<PathBuf> {
    walk(&variant.join("cuda/obj"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect()
}

#[test]
fn switching_output_rebuilds_into_its_own_outputs_and_the_arch_guard_compiles_only_device_only() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, nvcc) = counted_toolkit(tmp.path());
    let run = || {
        cuda_build(tmp.path(), &pkg, &root)
            .try_compile()
            .map_err(Box::new)
    };
    let first = run().unwrap();
    let ptx_dir = first.variant_dir.join("cuda/ptx");
    let ptx_files: Vec<(PathBuf, Vec<u8>)> = walk(&ptx_dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    assert_eq!(ptx_files.len(), 4, "{ptx_files:?}");
    assert!(
        objects(&first.variant_dir).is_empty(),
        "PTX is never an object"
    );

    // The table's output becomes "object": the kernels are compiled again, into objects (ELF),
    // archived; the guarded source keeps its entry's "ptx" and is fresh.
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"object\"\n",
    );
    let starts = nvcc.starts();
    let objected = run().unwrap();
    assert_eq!(
        ids(&objected.report.ran),
        [
            "archive:mcpp_cuda_fix_ptx",
            "cuda:kernels/affine.cu",
            "cuda:kernels/scale.cu",
            "cuda:kernels/solo.cu"
        ]
    );
    assert_eq!(nvcc.starts(), starts + 3);
    let objs = objects(&objected.variant_dir);
    assert_eq!(objs.len(), 3, "{objs:?}");
    for o in &objs {
        assert!(
            std::fs::read(o).unwrap().starts_with(b"\x7fELF"),
            "{} is an object file",
            o.display()
        );
    }
    let rs = surface(tmp.path());
    assert!(
        !rs.contains("affine_ptx") && rs.contains("bf16max_ptx"),
        "{rs}"
    );
    for (p, bytes) in &ptx_files {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{}: another kind's build leaves the PTX alone",
            p.display()
        );
    }

    // Back to "ptx": its own outputs are still there and verified, so nothing compiles.
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"object\"\n",
        "output = \"ptx\"\n",
    );
    let starts = nvcc.starts();
    let back = run().unwrap();
    assert!(back.report.ran.is_empty(), "{:?}", back.report.ran);
    assert_eq!(nvcc.starts(), starts);
    assert!(surface(tmp.path()).contains("pub fn affine_ptx()"));

    // The guarded kernel as an object: nvcc's host pass sees `__CUDA_ARCH__ < 800` true and
    // refuses the redefinition, and the build fails with nvcc's words and command line.
    edit(
        &pkg.join("Cargo.toml"),
        "{ glob = \"guarded/*.cu\", output = \"ptx\" }",
        "{ glob = \"guarded/*.cu\", output = \"object\" }",
    );
    let e = run().unwrap_err();
    assert_eq!(e.kind, ErrorKind::ToolFailed, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("guarded/bf16max.cu")
            && text.contains("__hmax_nan")
            && text.contains("has already been defined"),
        "{text}"
    );
    assert!(
        text.contains("command: ") && text.contains(" -c "),
        "{text}"
    );
}

#[test]
fn cubins_per_architecture_a_fat_binary_and_ptx_per_virtual_architecture() {
    let (tmp, pkg) = fixture("cuda-ptx");
    for f in ["kernels/scale.cu", "kernels/solo.cu"] {
        std::fs::remove_file(pkg.join(f)).unwrap();
    }
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"cubin\"\n",
    );
    let root = cuda13();
    let two = "cuda13.0+{sm_80,sm_90}";
    let outcome = cuda_build(tmp.path(), &pkg, &root)
        .accel(two)
        .try_compile()
        .unwrap();
    assert_eq!(
        ids(&outcome.report.ran),
        [
            "cuda:cubin:sm_80:kernels/affine.cu",
            "cuda:cubin:sm_90:kernels/affine.cu",
            "cuda:ptx:compute_80:guarded/bf16max.cu",
            "cuda:ptx:compute_90:guarded/bf16max.cu"
        ]
    );
    let rs = surface(tmp.path());
    for f in [
        "pub fn affine_cubin_sm_80() -> super::BytesPayload",
        "pub fn affine_cubin_sm_90() -> super::BytesPayload",
        "pub fn bf16max_ptx() -> super::TextPayload",
        "pub fn bf16max_ptx_compute_80() -> super::TextPayload",
    ] {
        assert!(rs.contains(f), "{f}\n{rs}");
    }
    assert!(
        ptx(tmp.path(), "guarded/bf16max_ptx").contains(".target sm_80"),
        "the unsuffixed PTX is the lowest virtual architecture's, which JITs on every listed GPU"
    );
    assert!(ptx(tmp.path(), "guarded/bf16max_ptx_compute_90").contains(".target sm_90"));
    // The lowest one's suffixed accessor hands out the unsuffixed one's bytes (stored once),
    // and every accessor's doc names its architecture.
    assert!(
        rs.contains("pub fn bf16max_ptx_compute_80() -> super::TextPayload {\n        super::guarded::bf16max_ptx()\n")
            && !tmp.path().join("out/mcpp/payloads/guarded/bf16max_ptx_compute_80.txt").exists(),
        "{rs}"
    );
    for doc in [
        "/// The default, the lowest architecture this build lists: PTX for compute_80: the driver JIT-compiles it on GPUs of compute capability 8.0 and higher",
        "/// PTX for compute_90: the driver JIT-compiles it on GPUs of compute capability 9.0 and higher",
        "/// A cubin for sm_90: it loads on GPUs of compute capability 9.0 up to 9.9",
        "/// The default, the lowest architecture this build lists: a cubin for sm_80",
    ] {
        assert!(rs.contains(doc), "{doc}\n{rs}");
    }
    for arch in ["sm_80", "sm_90"] {
        // sm_80's accessor hands out the unsuffixed one's copy (the lowest architecture's).
        let name = if arch == "sm_80" {
            "kernels/affine_cubin".to_string()
        } else {
            format!("kernels/affine_cubin_{arch}")
        };
        let cubin = payload(tmp.path(), &name, "bin");
        assert!(
            cubin.starts_with(b"\x7fELF") && cubin.windows(6).any(|w| w == b"affine"),
            "{arch}: an ELF cubin with the kernel"
        );
    }

    // One fat binary: every architecture and the PTX floor.
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"cubin\"\n",
        "output = \"fatbin\"\n",
    );
    let outcome = cuda_build(tmp.path(), &pkg, &root)
        .accel(two)
        .try_compile()
        .unwrap();
    assert_eq!(ids(&outcome.report.ran), ["cuda:fatbin:kernels/affine.cu"]);
    let fatbin = payload(tmp.path(), "kernels/affine_fatbin", "bin");
    assert!(
        fatbin.starts_with(&[0x50, 0xed, 0x55, 0xba]),
        "a fat binary: {:02x?}",
        &fatbin[..8.min(fatbin.len())]
    );
    let rs = surface(tmp.path());
    assert!(
        rs.contains("pub fn affine_fatbin() -> super::BytesPayload")
            && !rs.contains("affine_cubin"),
        "{rs}"
    );
}

#[test]
fn the_argv_of_each_output_kind_on_both_routes() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, shim) = fake_toolkit(tmp.path());
    let ccbin = std::fs::canonicalize(shim.path()).unwrap();
    cuda_build(tmp.path(), &pkg, &root)
        .env("NVCC_CCBIN", &ccbin)
        .accel("cuda13.0+{sm_80,sm_90}")
        .try_compile()
        .unwrap();
    let call = |needle: &str, arch: &str| {
        shim.calls()
            .into_iter()
            .find(|c| c.names(needle) && c.has(arch))
            .unwrap_or_else(|| panic!("{needle} {arch}"))
    };
    let c = call("guarded/bf16max.cu", "-arch=compute_80");
    let (out, dep) = (
        c.after("-o").unwrap().to_string(),
        c.after("-MF").unwrap().to_string(),
    );
    // Package-relative: the compile runs in the package directory.
    let src = "guarded/bf16max.cu".to_string();
    let ccbin = ccbin.to_string_lossy().into_owned();
    let want: Vec<&str> = vec![
        "-ccbin",
        &ccbin,
        "-arch=compute_80",
        "--ptx",
        "-O0",
        "-MMD",
        "-MF",
        &dep,
        &src,
        "-o",
        &out,
    ];
    assert_eq!(c.args, want);
    assert!(
        out.contains("/cuda/ptx/")
            && out.ends_with(".compute_80.ptx")
            && dep.ends_with(".compute_80.d"),
        "{out} {dep}"
    );
    assert!(call("guarded/bf16max.cu", "-arch=compute_90").has("--ptx"));

    // The clang route: --cuda-device-only, -S for PTX, -c for a cubin.
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"cubin\"\ncompiler = \"clang\"\n",
    );
    let clang = Shim::install(&tmp.path().join("clang"), "clang-shim");
    cuda_build(tmp.path(), &pkg, &root)
        .tool("clang++", clang.path())
        .accel("cuda13.0+{sm_90}")
        .try_compile()
        .unwrap();
    let calls = clang.calls();
    let cubin = calls
        .iter()
        .find(|c| c.names("kernels/affine.cu"))
        .expect("affine.cu compiled by clang");
    let toolkit = format!("--cuda-path={}", root.display());
    assert_eq!(
        &cubin.args[..7],
        [
            "-x",
            "cuda",
            toolkit.as_str(),
            "--cuda-device-only",
            "--cuda-gpu-arch=sm_90",
            "-c",
            "-Wno-unknown-cuda-version"
        ]
    );
    let ptx = calls
        .iter()
        .find(|c| c.names("guarded/bf16max.cu"))
        .expect("bf16max.cu compiled by clang");
    assert!(
        ptx.has("--cuda-device-only")
            && ptx.has("-S")
            && ptx.has("--cuda-gpu-arch=sm_90")
            && ptx.has("-MD"),
        "{}",
        ptx.line()
    );
}

#[test]
fn without_an_accelerator_the_accessors_are_generated_empty_and_nothing_compiles() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, shim) = fake_toolkit(tmp.path());
    let outcome = cuda_build(tmp.path(), &pkg, &root)
        .no_accel()
        .try_compile()
        .unwrap();
    assert!(outcome.report.ran.is_empty());
    assert_eq!(shim.starts(), 0, "no nvcc at all");
    let rs = surface(tmp.path());
    for f in [
        "pub fn affine_ptx() -> super::TextPayload",
        "pub fn solo_ptx() -> super::TextPayload",
        "pub fn bf16max_ptx() -> super::TextPayload",
    ] {
        assert!(rs.contains(f), "{f}\n{rs}");
    }
    assert_eq!(
        payload(tmp.path(), "kernels/affine_ptx", "txt"),
        b"\0",
        "an empty text: its NUL only"
    );
    let cppm = std::fs::read_to_string(tmp.path().join("out/mcpp/fix_ptx.shaders.cppm")).unwrap();
    assert!(cppm.contains("text_payload affine_ptx()"), "{cppm}");
    // The same names as the accelerated build's (one architecture).
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"fatbin\"\n",
    );
    cuda_build(tmp.path(), &pkg, &root)
        .no_accel()
        .try_compile()
        .unwrap();
    let rs = surface(tmp.path());
    assert!(
        rs.contains("pub fn affine_fatbin() -> super::BytesPayload")
            && rs.contains("pub fn bf16max_ptx()"),
        "{rs}"
    );
    assert_eq!(payload(tmp.path(), "kernels/affine_fatbin", "bin"), b"");
}

/// Every per-architecture accessor the manifest declares is generated under any set: empty
/// under `--no-accel`, and empty for an architecture the build's set does not list, with its
/// doc saying so; the unsuffixed one is the lowest architecture the build lists.
#[test]
fn per_architecture_accessors_exist_under_every_accelerator_set() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, _shim) = fake_toolkit(tmp.path());
    edit(
        &pkg.join("Cargo.toml"),
        "accel = \"cuda13.0+{sm_80}\"",
        "accel = \"cuda13.0+{sm_80,sm_90}\"",
    );
    cuda_build(tmp.path(), &pkg, &root)
        .no_accel()
        .try_compile()
        .unwrap();
    let rs = surface(tmp.path());
    for f in [
        "pub fn affine_ptx() -> super::TextPayload",
        "pub fn affine_ptx_compute_80() -> super::TextPayload",
        "pub fn affine_ptx_compute_90() -> super::TextPayload",
    ] {
        assert!(rs.contains(f), "{f}\n{rs}");
    }
    assert!(rs.contains("/// Empty: compute_90 is declared in the manifest, and this build's accelerator set does not list it."), "{rs}");
    assert_eq!(
        payload(tmp.path(), "kernels/affine_ptx_compute_90", "txt"),
        b"\0"
    );
    // No image to read names from: the kernels the source defines, so code naming them compiles.
    assert!(
        rs.contains("pub const AFFINE: &str = \"affine\";")
            && rs.contains("pub fn affine_select(major: u32, minor: u32)"),
        "{rs}"
    );
    let cppm = std::fs::read_to_string(tmp.path().join("out/mcpp/fix_ptx.shaders.cppm")).unwrap();
    assert!(
        cppm.contains("text_payload affine_ptx_compute_90()"),
        "{cppm}"
    );

    // A set listing only sm_90: compute_80 (declared) is an empty placeholder, compute_90 the
    // built one and the default.
    let real = cuda13();
    cuda_build(tmp.path(), &pkg, &real)
        .accel("cuda13.0+{sm_90}")
        .try_compile()
        .unwrap();
    assert_eq!(
        payload(tmp.path(), "kernels/affine_ptx_compute_80", "txt"),
        b"\0"
    );
    assert!(ptx(tmp.path(), "kernels/affine_ptx").contains(".target sm_90"));
    let rs = surface(tmp.path());
    assert!(rs.contains("pub fn affine_ptx_compute_90() -> super::TextPayload {\n        super::kernels::affine_ptx()\n"), "{rs}");
    // The entry names are read from the image, also when its accessor shares the default's copy.
    assert!(rs.contains("pub const AFFINE: &str = \"affine\";"), "{rs}");
}

#[test]
fn an_object_that_is_not_an_object_file_is_a_failure() {
    let (tmp, pkg) = fixture("cuda-ptx");
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"object\"\n",
    );
    let (root, shim) = fake_toolkit(tmp.path());
    shim.output("//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n");
    let e = cuda_build(tmp.path(), &pkg, &root)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ToolFailed);
    let text = e.to_string();
    assert!(
        text.contains("exited 0 but")
            && text.contains("is not an ELF file")
            && text.contains("it starts with 2f 2f 0a 2f"),
        "{text}"
    );
}

#[test]
fn every_failed_compile_is_reported_and_the_independent_ones_still_run() {
    let (tmp, pkg) = fixture("cuda-ptx");
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"object\"\n",
    );
    let (root, shim) = fake_toolkit(tmp.path());
    // Every object compile fails (they have -c); the guarded PTX compile does not.
    shim.fail_if_arg("-c", "k.cu(1): error: simulated", 2);
    let e = cuda_build(tmp.path(), &pkg, &root)
        .jobs(1)
        .try_compile()
        .unwrap_err();
    let text = e.to_string();
    assert_eq!(
        e.problems(),
        4,
        "three failures and the archive not run:\n{text}"
    );
    for k in ["kernels/affine.cu", "kernels/scale.cu", "kernels/solo.cu"] {
        assert!(text.contains(&format!("nvcc {k} failed")), "{k}:\n{text}");
    }
    assert_eq!(text.matches("command: ").count(), 3, "{text}");
    assert!(
        text.contains("1 action(s) not run: they depend on a failed one")
            && text.contains("archive libmcpp_cuda_fix_ptx.a"),
        "{text}"
    );
    assert_eq!(
        shim.calls().iter().filter(|c| c.has("--ptx")).count(),
        1,
        "the independent PTX compile ran"
    );
    // Fixed: the PTX compile that succeeded is fresh.
    let shim = Shim::install(&root.join("bin"), "nvcc");
    let outcome = cuda_build(tmp.path(), &pkg, &root)
        .jobs(1)
        .try_compile()
        .unwrap();
    assert!(
        !outcome.report.ran.iter().any(|a| a.starts_with("cuda:ptx")),
        "{:?}",
        outcome.report.ran
    );
    assert_eq!(shim.calls().iter().filter(|c| c.has("--ptx")).count(), 0);
}

/// A kernel using `assert` (whose message embeds `__FILE__`) with a header from an include
/// directory, compiled to PTX, a cubin, a fat binary and an object, in a debug build (line
/// info) with the real nvcc: the package built from two directories of different lengths
/// gives identical bytes for every output, and none holds the checkout's path.
#[test]
fn two_checkouts_of_one_package_compile_identical_ptx_cubin_fatbin_and_object_bytes() {
    const KERNEL: &str = "#include <cassert>\n#include \"checks.cuh\"\nextern \"C\" __global__ void NAME(float* y, unsigned n) {\n    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n    assert(i < n + 1024);\n    if (i < n) y[i] = twice(y[i]);\n}\n";
    let root = cuda13();
    let build = |parent: &Path| -> Vec<(String, Vec<u8>)> {
        let pkg = parent.join("pkg");
        std::fs::create_dir_all(pkg.join("k")).unwrap();
        std::fs::create_dir_all(pkg.join("inc")).unwrap();
        std::fs::write(pkg.join("Cargo.toml"), "[package]\nname = \"same-bytes\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package.metadata.mcpp]\naccel = \"cuda13.0+{sm_80,sm_90}\"\nsources = [{ glob = \"k/p.cu\", output = \"ptx\" }, { glob = \"k/c.cu\", output = \"cubin\" }, { glob = \"k/f.cu\", output = \"fatbin\" }, \"k/o.cu\"]\n\n[package.metadata.mcpp.cuda]\nincludes = [\"inc\"]\n").unwrap();
        std::fs::write(pkg.join("inc/checks.cuh"), "#pragma once\n#include <cassert>\n__device__ inline float twice(float x) { assert(x == x); return 2.0f * x; }\n").unwrap();
        for name in ["p", "c", "f", "o"] {
            std::fs::write(
                pkg.join(format!("k/{name}.cu")),
                KERNEL.replace("NAME", &format!("kernel_{name}")),
            )
            .unwrap();
        }
        let outcome = cuda_build(parent, &pkg, &root).try_compile().unwrap();
        let mut files: Vec<(String, Vec<u8>)> = walk(&outcome.variant_dir.join("cuda"))
            .into_iter()
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| ["ptx", "cubin", "fatbin", "o"].contains(&e.to_str().unwrap()))
            })
            .map(|p| {
                (
                    p.strip_prefix(&outcome.variant_dir)
                        .unwrap()
                        .display()
                        .to_string(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        files.sort();
        for (name, bytes) in &files {
            let parent = parent.to_string_lossy();
            assert!(
                !bytes.windows(parent.len()).any(|w| w == parent.as_bytes()),
                "{name} holds the checkout's path {parent}"
            );
        }
        files
    };
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let b_deeper = b.path().join("a-longer/checkout-path");
    std::fs::create_dir_all(&b_deeper).unwrap();
    let (first, second) = (build(a.path()), build(&b_deeper));
    let kinds: Vec<&str> = first
        .iter()
        .map(|(n, _)| n.rsplit('.').next().unwrap())
        .collect();
    for kind in ["ptx", "cubin", "fatbin", "o"] {
        assert!(
            kinds.contains(&kind),
            "no .{kind} among {:?}",
            first.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
    }
    let ptx = String::from_utf8(
        first
            .iter()
            .find(|(n, _)| n.ends_with(".ptx"))
            .unwrap()
            .1
            .clone(),
    )
    .unwrap();
    // PTX spells a string as its bytes: `k/p.cu` is `107, 47, 112, 46, 99, 117`.
    let file: Vec<String> = b"k/p.cu".iter().map(|b| b.to_string()).collect();
    assert!(
        ptx.contains("__assertfail") && ptx.contains(&file.join(", ")),
        "the assert's message names the package-relative file: {ptx}"
    );
    assert_eq!(first.len(), second.len());
    for ((name, x), (name2, y)) in first.iter().zip(&second) {
        assert_eq!(name, name2);
        let (x, y) = if name.ends_with(".o") {
            (without_nvcc_pid(x), without_nvcc_pid(y))
        } else {
            (x.clone(), y.clone())
        };
        assert!(x == y, "{name} differs between the two checkouts");
    }
}

/// An nvcc object with the process id in its host pass's temporary file name
/// (`tmpxft_<8 hex digits>_...cudafe1.cpp`, the object's file symbol) zeroed: nvcc names that
/// file after its own process, so it differs between any two runs, in one directory too.
fn without_nvcc_pid(object: &[u8]) -> Vec<u8> {
    let mut out = object.to_vec();
    let tag = b"tmpxft_";
    let at = out
        .windows(tag.len())
        .position(|w| w == tag)
        .expect("an nvcc object names its temporary file");
    for b in &mut out[at + tag.len()..at + tag.len() + 8] {
        *b = b'0';
    }
    out
}

/// An object compile that meets a `__CUDA_ARCH__`-guarded definition fails in nvcc's host pass
/// with a redefinition; the refusal adds the way out: a device-only output.
#[test]
fn the_arch_guard_failing_in_object_mode_gets_the_hint_to_compile_device_only() {
    let (tmp, pkg) = fixture("cuda-ptx");
    edit(
        &pkg.join("Cargo.toml"),
        "{ glob = \"guarded/*.cu\", output = \"ptx\" }",
        "\"guarded/*.cu\"",
    );
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"object\"\n",
    );
    let e = cuda_build(tmp.path(), &pkg, &cuda13())
        .try_compile()
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("has already been defined"), "{text}");
    assert!(
        text.contains("compile guarded/bf16max.cu device-only instead, with output = \"ptx\"")
            && text.contains("{ glob = \"guarded/bf16max.cu\", output = \"ptx\" }"),
        "{text}"
    );
}

/// The selection function of each CUDA source and its kernel names, in Rust and in C (through
/// the C++ implementation unit), built with the real nvcc for `{sm_80,sm_90}`: PTX, cubins and
/// a fat binary, a C++ kernel among them (its mangled name is the constant's value). A program
/// asks for several compute capabilities and prints what it got.
#[test]
fn the_selection_function_picks_the_best_image_and_entry_names_come_from_the_built_images() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir_all(pkg.join("k")).unwrap();
    std::fs::write(pkg.join("Cargo.toml"), "[package]\nname = \"pick\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package.metadata.mcpp]\naccel = \"cuda13.0+{sm_80,sm_90}\"\nmodules = false\ncxx-sources = [\"host/unit.cpp\"]\nsources = [{ glob = \"k/p.cu\", output = \"ptx\" }, { glob = \"k/c.cu\", output = \"cubin\" }, { glob = \"k/f.cu\", output = \"fatbin\" }, { glob = \"k/b.cu\", output = \"cubin+ptx\" }]\n").unwrap();
    // A C++ unit of the package: header storage writes the C forms of the payloads, which the
    // C program below compiles against, only for a package that has one.
    std::fs::create_dir_all(pkg.join("host")).unwrap();
    std::fs::write(
        pkg.join("host/unit.cpp"),
        "int pick_host_unit() { return 1; }\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("k/b.cu"),
        "extern \"C\" __global__ void both(float* y) { y[threadIdx.x] = 1; }\n",
    )
    .unwrap();
    std::fs::write(pkg.join("k/p.cu"), "extern \"C\" __global__ void axpy(float* y, float a, unsigned n) { unsigned i = threadIdx.x; if (i < n) y[i] += a; }\nextern \"C\" __global__ void zero(float* y) { y[threadIdx.x] = 0; }\n").unwrap();
    std::fs::write(pkg.join("k/c.cu"), "__global__ void scale(float* y, unsigned n) { unsigned i = threadIdx.x; if (i < n) y[i] *= 2; }\n").unwrap();
    std::fs::write(
        pkg.join("k/f.cu"),
        "extern \"C\" __global__ void neg(float* y) { y[threadIdx.x] = -y[threadIdx.x]; }\n",
    )
    .unwrap();
    cuda_build(tmp.path(), &pkg, &cuda13())
        .try_compile()
        .unwrap();
    let rs = surface(tmp.path());
    assert!(
        rs.contains("pub const SCALE: &str = \"_Z5scalePfj\";")
            && rs.contains("pub const ALL: [&str; 2] = [AXPY, ZERO];"),
        "{rs}"
    );
    let main = tmp.path().join("main.rs");
    std::fs::write(&main, format!("mod shaders {{ include!({:?}); }}\nuse shaders as k;\n{}", tmp.path().join("out/mcpp_shaders.rs"), r#"
fn show(r: Result<shaders::CudaImage, shaders::NoCudaImage>) -> String {
    match r { Ok(i) => format!("{:?} {} {}", i.kind, i.arch, i.bytes.len()), Err(e) => format!("error: {e}") }
}
fn main() {
    for (ma, mi) in [(9, 0), (8, 6), (8, 0), (12, 0), (7, 5)] {
        println!("{ma}.{mi} ptx: {}", show(k::p_select(ma, mi)));
        println!("{ma}.{mi} cubin: {}", show(k::c_select(ma, mi)));
        println!("{ma}.{mi} fatbin: {}", show(k::f_select(ma, mi)));
    }
    let p = k::p_select(8, 6).unwrap();
    assert_eq!(p.ptx(), Some(k::p_ptx_compute_80().text));
    assert_eq!(k::c_select(9, 0).unwrap().bytes, k::c_cubin_sm_90().bytes);
    println!("entries: {:?} {:?} {:?}", k::p_entries::ALL, k::c_entries::SCALE, k::f_entries::ALL);
    // cubin+ptx: a cubin where one fits, PTX elsewhere.
    println!("both: {} | {} | {}", show(k::b_select(8, 6)), show(k::b_select(12, 0)), k::b_entries::BOTH);
}
"#)).unwrap();
    let exe = tmp.path().join("pick");
    let out = std::process::Command::new("rustc")
        .args(["--edition", "2021", "-D", "warnings", "-o"])
        .arg(&exe)
        .arg(&main)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<String> = text
        .lines()
        .map(|l| l.split(' ').take(4).collect::<Vec<_>>().join(" "))
        .collect();
    let want = [
        "9.0 ptx: Ptx compute_90",
        "9.0 cubin: Cubin sm_90",
        "9.0 fatbin: Fatbin sm_80,sm_90,compute_90",
        "8.6 ptx: Ptx compute_80",
        "8.6 cubin: Cubin sm_80",
        "8.6 fatbin: Fatbin sm_80,sm_90,compute_90",
        "8.0 ptx: Ptx compute_80",
        "8.0 cubin: Cubin sm_80",
        "8.0 fatbin: Fatbin sm_80,sm_90,compute_90",
        "12.0 ptx: Ptx compute_90",
        "12.0 cubin: error: no",
        "12.0 fatbin: Fatbin sm_80,sm_90,compute_90",
        "7.5 ptx: error: no",
        "7.5 cubin: error: no",
        "7.5 fatbin: error: no",
    ];
    assert_eq!(got[..15], want, "{text}");
    assert!(text.contains("7.5 cubin: error: no image of k/c.cu loads on a GPU of compute capability 7.5: built sm_80, sm_90;"), "{text}");
    assert!(
        text.contains("entries: [\"axpy\", \"zero\"] \"_Z5scalePfj\" [\"neg\"]"),
        "{text}"
    );
    assert!(
        text.contains("both: Cubin sm_80 ")
            && text.contains(" | Ptx compute_90 ")
            && text.ends_with("| both\n"),
        "{text}"
    );

    // C, through the implementation unit: the same choices.
    let c_main = tmp.path().join("main.c");
    std::fs::write(&c_main, "#include <stdio.h>\n#include \"pick.shaders.h\"\nint main(void) {\n    const unsigned char* d; unsigned long n; const char* arch;\n    int k1 = mcpp_embed_4pick7shaders8c_select(8, 6, &d, &n, &arch);\n    printf(\"%d %s %lu\\n\", k1, arch, n);\n    int k2 = mcpp_embed_4pick7shaders8p_select(9, 0, &d, &n, &arch);\n    printf(\"%d %s %d\\n\", k2, arch, d[n - 1]);\n    printf(\"%d %s\\n\", mcpp_embed_4pick7shaders8c_select(7, 5, &d, &n, &arch), mcpp_embed_4pick7shaders8c_select_entry(0));\n    return 0;\n}\n").unwrap();
    let dir = tmp.path().join("out/mcpp");
    let cexe = tmp.path().join("pick-c");
    let out = std::process::Command::new("g++")
        .args(["-std=c++20", "-x", "c++"])
        .arg(dir.join("pick.shaders.impl.cpp"))
        .args(["-x", "c"])
        .arg(&c_main)
        .arg("-I")
        .arg(&dir)
        .arg("-o")
        .arg(&cexe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(&cexe).output().unwrap();
    let c_text = String::from_utf8(out.stdout).unwrap();
    let cubin_80 = payload(tmp.path(), "c_cubin", "bin").len();
    assert_eq!(
        c_text,
        format!("1 sm_80 {cubin_80}\n2 compute_90 0\n0 _Z5scalePfj\n"),
        "{c_text}"
    );
}

/// `driver-floor`: a toolkit of a newer major version is refused before anything compiles; PTX
/// whose `.version` needs a newer driver than the floor is refused once built (clang-19 with
/// the CUDA 12.9 layout writes PTX ISA 8.5, which needs CUDA 12.5), naming the ways out; a
/// value that is no version is refused at its key; a floor the PTX meets builds. The refusal
/// texts are one snapshot (`tests/snapshots/cuda_ptx__driver_floor_refusals.snap`).
#[test]
fn driver_floor_refusals() {
    let floor = |pkg: &Path, value: &str| {
        edit(
            &pkg.join("Cargo.toml"),
            "[package.metadata.mcpp.cuda]\n",
            &format!("[package.metadata.mcpp.cuda]\ndriver-floor = \"{value}\"\n"),
        )
    };
    let mut cases = Vec::new();

    let (tmp, pkg) = fixture("cuda-ptx");
    floor(&pkg, "12.4");
    let (root, nvcc) = counted_toolkit(tmp.path());
    let e = cuda_build(tmp.path(), &pkg, &root)
        .try_compile()
        .unwrap_err();
    assert_eq!(
        nvcc.calls().iter().filter(|c| c.has("--ptx")).count(),
        0,
        "nothing compiles before the refusal"
    );
    cases.push((
        "nvcc 13.0 and a floor of 12.4",
        redact(&e.to_string(), tmp.path()),
    ));

    let (tmp, pkg) = fixture("cuda-ptx");
    floor(&pkg, "12.4");
    edit(
        &pkg.join("Cargo.toml"),
        "[package.metadata.mcpp.cuda]\n",
        &format!(
            "[package.metadata.mcpp.cuda]\ncompiler = \"clang\"\ntoolkit = \"{}\"\n",
            cuda12_clang().display()
        ),
    );
    let e = cuda_build(tmp.path(), &pkg, &cuda12_clang())
        .tool("clang++", "/usr/bin/clang++-19")
        .accel("cuda12.9+{sm_80}")
        .try_compile()
        .unwrap_err();
    cases.push((
        "clang-19 PTX ISA 8.5 and a floor of 12.4",
        redact(&e.to_string(), tmp.path())
            .replace(&cuda12_clang().display().to_string(), "[CUDA12]"),
    ));
    // The same build with the floor its PTX needs.
    edit(
        &pkg.join("Cargo.toml"),
        "driver-floor = \"12.4\"",
        "driver-floor = \"12.5\"",
    );
    cuda_build(tmp.path(), &pkg, &cuda12_clang())
        .tool("clang++", "/usr/bin/clang++-19")
        .accel("cuda12.9+{sm_80}")
        .try_compile()
        .unwrap();
    assert!(ptx(tmp.path(), "kernels/affine_ptx").contains(".version 8.5"));

    let (tmp, pkg) = fixture("cuda-ptx");
    floor(&pkg, "twelve");
    let e = cuda_build(tmp.path(), &pkg, &cuda13())
        .try_compile()
        .unwrap_err();
    cases.push((
        "a floor that is no version",
        redact(&e.to_string(), tmp.path()),
    ));

    // nvcc 13.0 writes PTX ISA 9.0, which a CUDA 13.0 driver loads.
    let (tmp, pkg) = fixture("cuda-ptx");
    floor(&pkg, "13.0");
    cuda_build(tmp.path(), &pkg, &cuda13())
        .try_compile()
        .unwrap();
    assert!(ptx(tmp.path(), "kernels/affine_ptx").contains(".version 9.0"));

    let text: String = cases
        .iter()
        .map(|(name, t)| {
            format!(
                "== {name}\n{}\n",
                t.replace(&cuda13().display().to_string(), "[CUDA13]")
            )
        })
        .collect();
    insta::assert_snapshot!("driver_floor_refusals", text);
}
