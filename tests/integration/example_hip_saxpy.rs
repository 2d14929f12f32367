//! `examples/hip-saxpy` built with `cargo build` as a user would (the engine installed: `CARGO_MCPP`): the HIP build (hipcc, gfx90a,
//! Debian's HIP 5.2 named by `ROCM_PATH`) says "no HIP device" and exits 2
//! on a machine without an AMD GPU (CI), never crashing, and runs the kernel where there is one;
//! `cargo mcpp why tool hipcc` names the choice; the `--no-accel` build runs the C++ host fallback
//! and passes.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use std::path::PathBuf;
use std::process::Command;

/// `cargo build` of the example with `envs`; returns the binary.
fn cargo_build(envs: &[(&str, &str)]) -> PathBuf {
    let target = harness::packages_target();
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.arg("build")
        .current_dir(harness::repo().join("examples/hip-saxpy"))
        .env("CARGO_TARGET_DIR", &target)
        // The example is an application: its build script runs the installed engine.
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"));
    for v in [
        "MCPP_ACCEL",
        "MCPP_NO_ACCEL",
        "CXX",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "HIPCC",
        "MCPP_HIPCC",
        "HIP_PATH",
    ] {
        c.env_remove(v);
    }
    c.env("ROCM_PATH", harness::real_rocm());
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "cargo build {envs:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("debug/hip-saxpy")
}

/// Whether this machine has an AMD GPU the HIP runtime can reach (`/dev/kfd`).
fn has_amd_gpu() -> bool {
    std::path::Path::new("/dev/kfd").exists()
}

#[test]
fn hip_build_reports_no_hip_device_and_no_accel_runs_the_fallback() {
    let bin = cargo_build(&[]);
    // `cargo mcpp why tool hipcc` answers from the device cache: the ROCm root's hipcc, named by ROCM_PATH.
    let why = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "why", "tool", "hipcc", "--target-dir"])
        .arg(harness::packages_target())
        .current_dir(harness::repo().join("examples/hip-saxpy"))
        .output()
        .unwrap();
    let hipcc = harness::real_rocm().join("bin/hipcc");
    assert!(
        why.status.success()
            && harness::text(&why).contains(&format!("answer:  {}", hipcc.display()))
            && harness::text(&why).contains("ROCM_PATH"),
        "{}",
        harness::text(&why)
    );
    let out = Command::new(&bin).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if has_amd_gpu() {
        assert!(
            out.status.success() && stdout.contains("saxpy on hip") && stdout.contains("OK:"),
            "{stdout}\n{stderr}"
        );
    } else {
        // Exit 2 from the program itself: a crash would be a signal (no code) or another code.
        assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(stderr.contains("no HIP device"), "{stderr}");
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
}
