//! The refusal texts of the SYCL and Ascend C lanes, pinned as one snapshot per lane
//! (`tests/integration/snapshots/integration__refusals_sycl__sycl_refusals.snap`, `..._ascend_refusals.snap`): each bad
//! input on a temp package with a fake oneAPI or CANN layout (the recording [`Shim`] as the
//! compiler), the temp paths replaced by `[PKG]` and `[TMP]`. Nothing may compile before a
//! refusal. Accept a change of wording with `INSTA_UPDATE=always`.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::Build;
use harness::*;
use std::path::Path;

/// A SYCL package with `[package.metadata.mcpp] <mcpp>` and `[package.metadata.mcpp.sycl] <table>`,
/// built with a fake oneAPI as `ONEAPI_ROOT` and `change`d; its refusal.
fn sycl(mcpp: &str, table: &str, change: impl Fn(&mut Build, &Path)) -> String {
    let p = Package::new(&[
        ("kernels/a.sycl", "void a() {}\n"),
        ("kernels/c.cpp", "void c() {}\n"),
    ]);
    p.write(
        "Cargo.toml",
        &format!(
            "{}\n[package.metadata.mcpp.sycl]\n{table}\n",
            manifest("sycl-pkg", mcpp)
        ),
    );
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    let (cuda, _) = fake_toolkit(p.dir.path());
    let mut b = device_build(p.dir.path(), &p.path(""));
    b.env("ONEAPI_ROOT", &oneapi).env("CUDA_PATH", &cuda);
    change(&mut b, p.dir.path());
    let text = match b.try_compile() {
        Ok(_) => panic!("{mcpp} / {table}: the build was expected to be refused"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        icpx.calls().len(),
        0,
        "nothing may compile before the refusal:\n{text}"
    );
    redact(&text, p.dir.path())
}

/// The Ascend C counterpart, with a fake CANN as `ASCEND_HOME_PATH`.
fn ascend(accel: &str, table: &str, change: impl Fn(&mut Build, &Path)) -> String {
    let p = Package::new(&[("kernels/add.asc", "void add() {}\n")]);
    p.write(
        "Cargo.toml",
        &format!(
            "{}\n[package.metadata.mcpp.ascend]\n{table}\n",
            manifest(
                "asc-pkg",
                &format!("accel = \"{accel}\"\nsources = [\"kernels/*.asc\"]")
            )
        ),
    );
    let (cann, bisheng) = fake_cann(p.dir.path());
    let mut b = device_build(p.dir.path(), &p.path(""));
    b.env("ASCEND_HOME_PATH", &cann);
    change(&mut b, p.dir.path());
    let text = match b.try_compile() {
        Ok(_) => panic!("{accel} / {table}: the build was expected to be refused"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        bisheng.calls().len(),
        0,
        "nothing may compile before the refusal:\n{text}"
    );
    redact(&text, p.dir.path())
}

fn same(_: &mut Build, _: &Path) {}

const SYCL: &str = "accel = \"sycl\"\nsources = [\"kernels/*.sycl\"]";

#[test]
fn sycl_refusals() {
    let cases: Vec<(&str, String)> = vec![
        ("no oneAPI at all", sycl(SYCL, "", |b, _| {
            b.env_remove("ONEAPI_ROOT").env("PATH", "/nonexistent");
        })),
        ("an ONEAPI_ROOT that holds no compiler", sycl(SYCL, "", |b, tmp| {
            b.env("ONEAPI_ROOT", tmp.join("nowhere"));
        })),
        ("a toolkit key that names no compiler root", sycl(SYCL, "toolkit = \"/nonexistent/oneapi\"", same)),
        ("an unknown SYCL target", sycl("accel = \"sycl+{gfx90a}\"\nsources = [\"kernels/*.sycl\"]", "", same)),
        ("a sycl version the compiler is not", sycl("accel = \"sycl2024.2\"\nsources = [\"kernels/*.sycl\"]", "", same)),
        ("a cuda entry without architectures", sycl("accel = \"sycl, cuda13.0\"\nsources = [\"kernels/*.sycl\"]", "", same)),
        ("a cuda entry whose version is not the toolkit's", sycl("accel = \"sycl, cuda12.9+{sm_89}\"\nsources = [\"kernels/*.sycl\"]", "", same)),
        ("a gcc-install-dir that does not exist", sycl(SYCL, "gcc-install-dir = \"/nonexistent/gcc\"", same)),
        ("an unknown compiler", sycl(SYCL, "compiler = \"computecpp\"", same)),
        ("a .cpp through a plain glob", sycl("accel = \"sycl\"\nsources = [\"kernels/*.cpp\"]", "", same)),
        ("an env-script that does not exist", sycl(SYCL, "env-script = \"setup/setvars.sh\"", same)),
        ("an env-script that fails", sycl(SYCL, "env-script = \"setvars.sh\"\nenv-script-args = [\"--bogus\"]", |_, tmp| {
            std::fs::write(tmp.join("pkg/setvars.sh"), "echo \"unknown option $1\" >&2\nreturn 2\n").unwrap();
        })),
        ("an env-script that is a FIFO", sycl(SYCL, "env-script = \"setvars.sh\"", |_, tmp| {
            let fifo = tmp.join("pkg/setvars.sh");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(made.success());
        })),
        ("an env-script that ends the shell", sycl(SYCL, "env-script = \"setvars.sh\"", |_, tmp| {
            std::fs::write(tmp.join("pkg/setvars.sh"), "export X=1\nexit 0\n").unwrap();
        })),
        ("env-script-args without env-script", sycl(SYCL, "env-script-args = [\"--force\"]", same)),
        ("a .cpp in a sycl-constrained glob and in cxx-sources", sycl("accel = \"sycl\"\nsources = [{ glob = \"kernels/*.cpp\", accel = \"sycl\" }]\ncxx-sources = [\"kernels/c.cpp\"]", "", same)),
    ];
    let all: String = cases
        .iter()
        .map(|(name, text)| format!("===== {name}\n{text}\n\n"))
        .collect();
    insta::assert_snapshot!("sycl_refusals", all);
}

#[test]
fn ascend_refusals() {
    let cases: Vec<(&str, String)> = vec![
        (
            "no CANN toolkit at all",
            ascend("ascend8.5+{dav-c220}", "", |b, _| {
                b.env_remove("ASCEND_HOME_PATH").env("PATH", "/nonexistent");
            }),
        ),
        (
            "a toolkit without bisheng",
            ascend("ascend8.5+{dav-c220}", "", |b, tmp| {
                std::fs::create_dir_all(tmp.join("empty-cann")).unwrap();
                b.env("ASCEND_HOME_PATH", tmp.join("empty-cann"));
            }),
        ),
        (
            "an unknown architecture",
            ascend("ascend8.5+{dav-x999}", "", same),
        ),
        ("no architecture", ascend("ascend8.5", "", same)),
        (
            "a version the toolkit is not",
            ascend("ascend8.2+{dav-c220}", "", same),
        ),
        (
            "a version without a minor",
            ascend("ascend8+{dav-c220}", "", same),
        ),
        (
            "an env-script that does not exist",
            ascend(
                "ascend8.5+{dav-c220}",
                "env-script = \"/nonexistent/set_env.sh\"",
                same,
            ),
        ),
        (
            "optimize",
            ascend("ascend8.5+{dav-c220}", "optimize = true", same),
        ),
    ];
    let all: String = cases
        .iter()
        .map(|(name, text)| format!("===== {name}\n{text}\n\n"))
        .collect();
    insta::assert_snapshot!("ascend_refusals", all);
}
