//! One cache a team shares: a Redis server on loopback (Debian's `redis-server`, setup
//! component `ccache`), started by the test on a free port with bounded memory and stopped
//! when the test ends (a guard, also on a failed assertion), as the remote storage of ccache
//! (`remote_storage`) and of sccache (a disk level, then Redis). Two clones of one crate at
//! different paths, each with its own local cache: the second clone's clean build is served from
//! Redis (counted by the launcher's own statistics), and its outputs' bytes equal the first's.
//!
//! Its own binary: both launchers read their settings from the process environment the
//! compilers inherit, which these tests set (one test at a time: [`ONE_AT_A_TIME`]).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

#[path = "integration/harness/mod.rs"]
mod harness;

use harness::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The tests change the process environment: one runs at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A Redis server of this test: loopback only, no persistence, 64 MiB at most (least recently
/// used keys evicted beyond), stopped and reaped when dropped.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start(dir: &Path) -> Redis {
        // A free port: bound, read, released (Redis binds it right after).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(real_tool("redis-server"))
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let redis = Redis { child, port };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "redis-server did not listen on port {port}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        redis
    }
    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const A_CU: &str = "#include \"a.cuh\"\n__global__ void ka(float* y) { y[threadIdx.x] *= A_FACTOR; }\nextern \"C\" void launch_a(float* y) { ka<<<1, 32>>>(y); }\n";
const B_CU: &str = "#include \"b.cuh\"\n__global__ void kb(float* y) { y[threadIdx.x] += B_TERM; }\nextern \"C\" void launch_b(float* y) { kb<<<1, 32>>>(y); }\n";
const ONE_CPP: &str = "#include \"one.h\"\nextern \"C\" int one() { return ONE; }\n";

/// One clone of the crate: a package at `<its temp dir>/pkg` (so two clones are at different
/// paths) with two nvcc kernels and one C++ host source.
fn clone(launcher: &str) -> Package {
    Package::new(&[
        (
            "Cargo.toml",
            &manifest("shared-pkg", &format!("accel = \"cuda13.0+{{sm_80}}\"\nsources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/*.cpp\"]\nlauncher = \"{launcher}\"\n")),
        ),
        ("kernels/a.cu", A_CU),
        ("kernels/a.cuh", "#define A_FACTOR 2.0f\n"),
        ("kernels/b.cu", B_CU),
        ("kernels/b.cuh", "#define B_TERM 1.0f\n"),
        ("cpp/one.cpp", ONE_CPP),
        ("cpp/one.h", "#define ONE 1\n"),
    ])
}

/// A clean release build of `clone` with the launcher on PATH (`bin`); the number of compiles
/// and its outputs' hashes by file name.
fn build(clone: &Package, bin: Option<&Path>) -> (usize, BTreeMap<String, String>) {
    let mut b = cuda_build(clone.dir.path(), &clone.path(""), &cuda13());
    // Optimised, as CI and release builds are: with debug or line information (`-g`,
    // `-lineinfo`) an object names the checkout's directory, and the launchers rightly keep
    // the clones apart.
    b.env_remove("MCPP_LAUNCHER").release(true);
    if let Some(bin) = bin {
        let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        b.env("PATH", path);
    }
    let out = b.try_compile().unwrap_or_else(|e| panic!("{e}"));
    let compiles = out
        .report
        .ran
        .iter()
        .filter(|id| !id.starts_with("archive:"))
        .count();
    let named: BTreeMap<String, String> = out
        .report
        .outputs
        .iter()
        .map(|(p, h)| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                h.clone(),
            )
        })
        .collect();
    (compiles, named)
}

/// Remove every variable starting with `prefix` (the user's own settings).
fn clear_env(prefix: &str) {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with(prefix) {
            std::env::remove_var(&k);
        }
    }
}

/// Files written by the test are made a few seconds old first: ccache takes no direct-mode hit
/// on a header newer than the compile's start.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(2100));
}

fn ccache_stats() -> BTreeMap<String, u64> {
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

#[test]
fn a_second_clone_is_served_from_a_redis_cache_shared_through_ccache() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let a = clone("ccache");
    let b = clone("ccache");
    let redis = Redis::start(a.dir.path());
    clear_env("CCACHE_");
    std::env::set_var("CCACHE_REMOTE_STORAGE", redis.url());
    settle();
    let g = |s: &BTreeMap<String, u64>, k: &str| s.get(k).copied().unwrap_or(0);

    // Clone A, its own local cache: every compile misses and is written to Redis too.
    std::env::set_var("CCACHE_DIR", a.dir.path().join("ccache-dir"));
    std::env::set_var("CCACHE_CONFIGPATH", a.dir.path().join("ccache.conf"));
    let (compiles, first) = build(&a, None);
    assert_eq!(compiles, 3);
    let s = ccache_stats();
    assert_eq!(
        (g(&s, "cache_miss"), g(&s, "remote_storage_write") > 0),
        (3, true),
        "{s:?}"
    );

    // Clone B, at another path, with an empty local cache: every compile comes from Redis.
    std::env::set_var("CCACHE_DIR", b.dir.path().join("ccache-dir"));
    std::env::set_var("CCACHE_CONFIGPATH", b.dir.path().join("ccache.conf"));
    let (_, second) = build(&b, None);
    let s = ccache_stats();
    assert_eq!(g(&s, "cache_miss"), 0, "{s:?}");
    assert_eq!(
        (g(&s, "remote_storage_hit"), g(&s, "local_storage_hit")),
        (3, 0),
        "all three compiles were served by Redis: {s:?}"
    );
    assert_eq!(first, second, "bytes identical");
    drop(redis);
    clear_env("CCACHE_");
}

/// sccache's statistics as JSON.
fn sccache_stats(sccache: &Path) -> serde_json::Value {
    let out = Command::new(sccache)
        .args(["--show-stats", "--stats-format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

/// The sccache server of one clone (its configuration is read when it starts), stopped when
/// dropped.
struct Server(PathBuf);
impl Server {
    fn start(sccache: &Path) -> Server {
        let _ = Command::new(sccache).arg("--stop-server").output();
        let out = Command::new(sccache)
            .arg("--start-server")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        Server(sccache.to_path_buf())
    }
}
impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new(&self.0).arg("--stop-server").output();
    }
}

#[test]
fn a_second_clone_is_served_from_a_redis_cache_shared_through_sccache() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sccache = std::env::var_os("MCPP_SCCACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mcpp-toolchains/sccache/bin/sccache"));
    assert!(
        sccache.is_file(),
        "no sccache at {}: run scripts/setup-toolchains.sh (the sccache component)",
        sccache.display()
    );
    let bin = sccache.parent().unwrap().to_path_buf();
    let a = clone("sccache");
    let b = clone("sccache");
    let redis = Redis::start(a.dir.path());
    clear_env("SCCACHE_");
    // Two levels: the clone's own disk cache, then Redis.
    std::env::set_var("SCCACHE_MULTILEVEL_CHAIN", "disk,redis");
    std::env::set_var("SCCACHE_REDIS_ENDPOINT", redis.url());
    std::env::set_var(
        "SCCACHE_SERVER_PORT",
        (20000 + (std::process::id() + 7) % 20000).to_string(),
    );
    std::env::set_var("SCCACHE_IDLE_TIMEOUT", "120");
    let count = |v: &serde_json::Value, key: &str, language: &str| {
        v["stats"][key]["counts"][language].as_u64().unwrap_or(0)
    };
    let level_hits = |v: &serde_json::Value, name: &str| {
        v["stats"]["multi_level"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["name"].as_str().is_some_and(|n| n.contains(name)))
            .map(|l| l["hits"].as_u64().unwrap_or(0))
            .sum::<u64>()
    };

    // Clone A: its disk cache and the paths under its temp dir made relative (sccache's
    // basedirs, read when the server starts).
    std::env::set_var("SCCACHE_DIR", a.dir.path().join("sccache-dir"));
    std::env::set_var("SCCACHE_BASEDIRS", a.dir.path());
    let server = Server::start(&sccache);
    let (compiles, first) = build(&a, Some(&bin));
    assert_eq!(compiles, 3);
    let v = sccache_stats(&sccache);
    assert_eq!(
        (
            count(&v, "cache_misses", "CUDA"),
            count(&v, "cache_misses", "C/C++")
        ),
        (2, 1),
        "{v:#}"
    );
    drop(server);

    // Clone B: an empty disk cache of its own; its compiles come from Redis.
    std::env::set_var("SCCACHE_DIR", b.dir.path().join("sccache-dir"));
    std::env::set_var("SCCACHE_BASEDIRS", b.dir.path());
    let server = Server::start(&sccache);
    let (_, second) = build(&b, Some(&bin));
    let v = sccache_stats(&sccache);
    assert_eq!(
        (
            count(&v, "cache_hits", "CUDA"),
            count(&v, "cache_hits", "C/C++")
        ),
        (2, 1),
        "both nvcc compiles and the C++ unit hit: {v:#}"
    );
    assert_eq!(
        (
            count(&v, "cache_misses", "CUDA"),
            count(&v, "cache_misses", "C/C++")
        ),
        (0, 0),
        "{v:#}"
    );
    assert!(level_hits(&v, "redis") >= 3, "served by Redis: {v:#}");
    assert_eq!(
        level_hits(&v, "disk"),
        0,
        "not by its own disk cache: {v:#}"
    );
    assert_eq!(first, second, "bytes identical");
    drop(server);
    drop(redis);
    clear_env("SCCACHE_");
}
