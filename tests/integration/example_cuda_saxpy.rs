//! `examples/cuda-saxpy` built with `cargo build` as a user would (the engine installed: `CARGO_MCPP`): the CUDA build (nvcc,
//! sm_90 + PTX, static cudart) says clearly that no CUDA device is present and exits non-zero
//! on a machine without a GPU (CI), and runs the kernel where there is one; the `--no-accel`
//! build runs the C++ host fallback and passes, with g++ (the cc crate's default here) and
//! with clang++-19 compiling the C++20 modules.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use std::path::PathBuf;
use std::process::Command;

fn example() -> PathBuf {
    harness::repo().join("examples/cuda-saxpy")
}

/// `cargo build` of the example with `envs`; returns the binary.
fn cargo_build(envs: &[(&str, &str)]) -> PathBuf {
    let target = harness::packages_target();
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.arg("build")
        .current_dir(example())
        .env("CARGO_TARGET_DIR", &target)
        // The example is an application: its build script runs the installed engine.
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"));
    for v in [
        "MCPP_ACCEL",
        "MCPP_NO_ACCEL",
        "CXX",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
    ] {
        c.env_remove(v);
    }
    if std::env::var_os("CUDA_PATH").is_none() {
        c.env("CUDA_PATH", harness::cuda13());
    }
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "cargo build {envs:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("debug/cuda-saxpy")
}

fn has_gpu() -> bool {
    Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

#[test]
fn cuda_build_reports_no_device_and_no_accel_builds_run_the_fallback() {
    let bin = cargo_build(&[]);
    let out = Command::new(&bin).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if has_gpu() {
        assert!(
            out.status.success() && stdout.contains("saxpy on cuda") && stdout.contains("OK:"),
            "{stdout}\n{stderr}"
        );
    } else {
        assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(stderr.contains("no CUDA device is present"), "{stderr}");
    }

    let bin = cargo_build(&[("MCPP_NO_ACCEL", "1")]);
    let out = Command::new(&bin).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("saxpy on host (CPU), accel `none (--no-accel)`")
            && stdout.contains("y[12345]=24691")
            && stdout.contains("OK:"),
        "{stdout}"
    );

    let bin = cargo_build(&[("MCPP_NO_ACCEL", "1"), ("CXX", "clang++-19")]);
    let out = Command::new(&bin).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("OK:"),
        "clang++-19 modules build: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
