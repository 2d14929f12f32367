//! The real ccache (Debian's 4.7, setup component `ccache`) as the launcher of a package with
//! CUDA kernels and C++ host sources, on both CUDA routes (nvcc, and clang-19 with the CUDA 12.9
//! layout): two clean builds into separate target directories with one ccache directory, the
//! second all hits (counted by `ccache --print-stats`) with bytes identical to the first; a
//! header edit then misses for its one includer only; switching the launcher off rebuilds nothing.
//!
//! One test in its own binary: ccache reads `CCACHE_DIR` from the process environment the
//! compilers inherit, which this test sets for itself.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

#[path = "integration/harness/mod.rs"]
mod harness;

use harness::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// `ccache --print-stats` as a map (`direct_cache_hit` -> 3).
fn stats() -> BTreeMap<String, u64> {
    let out = Command::new(real_tool("ccache"))
        .arg("--print-stats")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('\t')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn zero() {
    let out = Command::new(real_tool("ccache"))
        .arg("--zero-stats")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// (hits, misses): direct and preprocessed hits, and misses.
fn counts(s: &BTreeMap<String, u64>) -> (u64, u64) {
    let g = |k: &str| s.get(k).copied().unwrap_or(0);
    (
        g("direct_cache_hit") + g("preprocessed_cache_hit"),
        g("cache_miss"),
    )
}

/// A build's output hashes keyed by file name, so two builds into different target directories
/// compare (a library's directory name depends on where it is).
fn by_name(outputs: &BTreeMap<PathBuf, String>) -> BTreeMap<String, String> {
    let named: BTreeMap<String, String> = outputs
        .iter()
        .map(|(p, h)| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                h.clone(),
            )
        })
        .collect();
    assert_eq!(
        named.len(),
        outputs.len(),
        "one output per file name: {outputs:?}"
    );
    named
}

const A_CU: &str = "#include \"a.cuh\"\n__global__ void ka(float* y) { y[threadIdx.x] *= A_FACTOR; }\nextern \"C\" void launch_a(float* y) { ka<<<1, 32>>>(y); }\n";
const B_CU: &str = "#include \"b.cuh\"\n__global__ void kb(float* y) { y[threadIdx.x] += B_TERM; }\nextern \"C\" void launch_b(float* y) { kb<<<1, 32>>>(y); }\n";
const ONE_CPP: &str = "#include \"one.h\"\nextern \"C\" int one() { return ONE; }\n";
const TWO_CPP: &str = "extern \"C\" int two() { return 2; }\n";

/// ccache refuses direct-mode hits on a header newer than the compile's start: files written
/// by the test are made a few seconds old first.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(2100));
}

#[test]
fn ccache_serves_a_second_clean_build_on_both_cuda_routes_and_the_host_lane() {
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &manifest("ccache-pkg", "accel = \"cuda13.0+{sm_80}\"\nsources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/*.cpp\"]\nlauncher = \"ccache\"\n"),
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
    // Its own cache; none of the user's settings.
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CCACHE_") {
            std::env::remove_var(&k);
        }
    }
    std::env::set_var("CCACHE_DIR", tmp.join("ccache-dir"));
    std::env::set_var("CCACHE_CONFIGPATH", tmp.join("ccache.conf"));
    settle();

    // The nvcc route. Each build has a target directory of its own.
    let nvcc = |target: &str| {
        let mut b = cuda_build(&tmp.join(target), &pkg.path(""), &cuda13());
        b.env_remove("MCPP_LAUNCHER");
        b
    };
    zero();
    let first = nvcc("t1").try_compile().unwrap_or_else(|e| panic!("{e}"));
    let compiles = first
        .report
        .ran
        .iter()
        .filter(|id| !id.starts_with("archive:"))
        .count();
    assert_eq!(compiles, 4, "{:?}", first.report.ran);
    let s = stats();
    assert_eq!(
        counts(&s),
        (0, 4),
        "every compile went through ccache: {s:?}"
    );

    // Switching the launcher off: the first build is fresh (the fingerprint keys the compiler).
    let off = nvcc("t1")
        .env("MCPP_LAUNCHER", "none")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(off.report.ran.is_empty(), "{:?}", off.report.ran);

    zero();
    let second = nvcc("t2").try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(second.report.ran.len(), first.report.ran.len());
    let s = stats();
    assert_eq!(
        counts(&s),
        (4, 0),
        "the second clean build is all hits: {s:?}"
    );
    assert_eq!(
        by_name(&first.report.outputs),
        by_name(&second.report.outputs),
        "bytes identical"
    );

    // A header edit: a clean build misses for its one includer and hits for the other three.
    edit(&pkg.path("kernels/a.cuh"), "2.0f", "3.0f");
    settle();
    zero();
    let third = nvcc("t3").try_compile().unwrap_or_else(|e| panic!("{e}"));
    let s = stats();
    assert_eq!(counts(&s), (3, 1), "a.cu, and only a.cu, missed: {s:?}");
    let before = by_name(&first.report.outputs);
    let changed: Vec<String> = by_name(&third.report.outputs)
        .into_iter()
        .filter(|(p, h)| before.get(p) != Some(h))
        .map(|(p, _)| p)
        .collect();
    assert!(changed.iter().any(|p| p.contains("a.cu")), "{changed:?}");
    assert!(
        changed
            .iter()
            .all(|p| p.contains("a.cu") || p.ends_with(".a")),
        "only a.cu's object (and its archive) changed: {changed:?}"
    );

    // The clang route (clang-19, the CUDA 12.9 layout): two clean builds, the second all hits.
    let layout = cuda12_clang();
    let manifest_text = pkg.read("Cargo.toml");
    pkg.write(
        "Cargo.toml",
        &format!(
            "{manifest_text}\n[package.metadata.mcpp.cuda]\ncompiler = \"clang\"\ntoolkit = \"{}\"\n",
            layout.display()
        ),
    );
    let clang = |target: &str| {
        let mut b = cuda_build(&tmp.join(target), &pkg.path(""), &layout);
        b.env_remove("MCPP_LAUNCHER")
            .tool("clang++", "/usr/bin/clang++-19")
            .accel("cuda12.9+{sm_80}");
        b
    };
    zero();
    let c1 = clang("c1").try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        c1.report.ran.iter().any(|id| id == "cuda:kernels/a.cu"),
        "{:?}",
        c1.report.ran
    );
    let (_, misses) = counts(&stats());
    assert!(misses >= 2, "both clang CUDA compiles went through ccache");
    zero();
    let c2 = clang("c2").try_compile().unwrap_or_else(|e| panic!("{e}"));
    let s = stats();
    assert_eq!(
        counts(&s),
        (4, 0),
        "clang route: the second clean build is all hits: {s:?}"
    );
    assert_eq!(by_name(&c1.report.outputs), by_name(&c2.report.outputs));
}
