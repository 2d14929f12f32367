//! `examples/cuda-ptx` built with `cargo build` as a user would (the engine installed: `CARGO_MCPP`) (real nvcc: a cubin and PTX
//! chosen by the selection function, and a fat binary, embedded; cudarc with dynamic loading):
//! on a machine without a GPU (CI) it says "no CUDA device" and exits 2; where there is one,
//! both kernels run and agree.
#![allow(clippy::disallowed_methods)] // tests start processes and read the environment freely

use crate::harness;

use std::process::Command;

fn has_gpu() -> bool {
    Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

#[test]
fn the_example_embeds_ptx_and_a_fat_binary_and_says_no_cuda_device_without_one() {
    let target = harness::packages_target();
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.arg("build")
        .current_dir(harness::repo().join("examples/cuda-ptx"))
        .env("CARGO_TARGET_DIR", &target)
        // The example is an application: its build script runs the installed engine.
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"));
    for v in [
        "MCPP_ACCEL",
        "MCPP_NO_ACCEL",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
    ] {
        c.env_remove(v);
    }
    if std::env::var_os("CUDA_PATH").is_none() {
        c.env("CUDA_PATH", harness::cuda13());
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(target.join("debug/cuda-ptx"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    if has_gpu() {
        assert!(
            run.status.success() && stdout.contains("OK: both kernels ran"),
            "{stdout}\n{stderr}"
        );
    } else {
        assert_eq!(run.status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(stderr.contains("no CUDA device"), "{stderr}");
    }
    // The embedded payloads are real device code: the PTX names its kernel, the fat binary has its magic.
    // This package's build script's OUT_DIR (the target directory holds other packages too).
    let out_dirs: Vec<_> = harness::walk(&target.join("debug/build"))
        .into_iter()
        .filter(|p| {
            p.ends_with("mcpp/payloads/kernels/affine_ptx.txt")
                && p.strip_prefix(target.join("debug/build"))
                    .is_ok_and(|r| r.to_string_lossy().starts_with("cuda-ptx-"))
        })
        .collect();
    assert!(!out_dirs.is_empty());
    let ptx = std::fs::read_to_string(&out_dirs[0]).unwrap();
    assert!(
        ptx.contains(".entry affine") && ptx.contains(".target sm_90"),
        "{ptx}"
    );
    let cubin = std::fs::read(out_dirs[0].with_file_name("affine_cubin.bin")).unwrap();
    assert!(cubin.starts_with(b"\x7fELF"), "the sm_90 cubin of affine");
    let fatbin = std::fs::read(out_dirs[0].with_file_name("scale_fatbin.bin")).unwrap();
    assert!(fatbin.starts_with(&[0x50, 0xed, 0x55, 0xba]));
}
