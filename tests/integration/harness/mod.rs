//! The one harness of the integration tests (`crate::harness` in each suite of `tests/integration/`):
//!
//! - temp packages: [`Package`] (a package written into a temp dir, built through the library
//!   API) and [`fixture`] (a temp copy of `tests/fixtures/<name>`);
//! - the real toolchains `scripts/setup-toolchains.sh` installs: [`real_tool`], [`cuda13`], [`real_rocm`],
//!   [`cuda12_clang`], and [`counted_toolkit`] (the real nvcc behind a counting wrapper);
//! - counting/logging wrappers and fake compilers: [`Shim`] (the recording compiler
//!   the `mcpp-shim` package under any program name), [`fake_toolkit`] and [`fake_rocm`];
//!   a lane's builder with its toolkit: [`cuda_build`], [`hip_build`];
//! - the text of outputs ([`text`]) and file helpers ([`walk`], [`tree_state`], [`copy_dir`], [`edit`]).
#![allow(dead_code)]

mod package;
mod shim;

#[allow(unused_imports)] // not every test crate builds packages
pub use package::*;
#[allow(unused_imports)]
pub use shim::*;
use std::path::{Path, PathBuf};

/// A process's stdout then stderr, as text (for assertions and their messages).
pub fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The one target directory of the tests that build a package with cargo and the installed
/// engine (the examples, `cargo mcpp new`'s packages, the packaged app): their dependencies
/// (`ash`, `cudarc`, `mcpp-build`) compile once for all of them, not once per test. Cargo
/// locks it, so their builds take turns. Each package built here has a name of its own (its
/// device cache is `<target>/<profile>/mcpp/<name>`, its program `<target>/<profile>/<name>`);
/// a test clears only its own package's cache.
pub fn packages_target() -> PathBuf {
    in_test_group("package-tests", "target/package-tests");
    repo().join("target/package-tests")
}

/// The one target directory of the tests whose packages compile the engine in their build
/// scripts (`mcpp-build` with `engine` or `bindgen`, for the host or cross), all under
/// [`bare_cargo_home`]: the engine and its dependencies compile once per run. Cargo's
/// fingerprint of a registry package holds the path of its sources, which goes through
/// `CARGO_HOME`: builds under two homes in one target directory would rebuild each other's
/// packages, so every build here uses that one home.
pub fn in_process_target() -> PathBuf {
    in_test_group("in-process-target", "target/in-process-tests");
    repo().join("target/in-process-tests")
}

/// Under cargo-nextest (`scripts/test.sh`), a test that builds in a shared target directory
/// must be in that directory's test group of `.config/nextest.toml`: there it waits for the
/// directory without holding one of the run's test threads. Panics naming the group otherwise.
/// Under `cargo test` (no `NEXTEST`) there are no groups and nothing is checked.
pub fn in_test_group(group: &str, dir: &str) {
    if std::env::var_os("NEXTEST").is_none() {
        return;
    }
    let current = std::env::var("NEXTEST_TEST_GROUP").unwrap_or_default();
    assert_eq!(
        current, group,
        "this test builds in {dir}: add it to the `{group}` test group in .config/nextest.toml"
    );
}

/// Runs `make` once per test run for the work in `dir`, under a lock on `dir`: once per
/// process under `cargo test` (the caller keeps the result in a `OnceLock`), once per run
/// under cargo-nextest, where every test is a process of its own and `NEXTEST_RUN_ID` names
/// the run (a later test of the run finds `dir/made-by-run` holding that id and skips `make`).
pub fn once_per_run(dir: &Path, make: impl FnOnce()) {
    std::fs::create_dir_all(dir).unwrap();
    let lock = std::fs::File::create(dir.join("made-by-run.lock")).unwrap();
    lock.lock().unwrap();
    let marker = dir.join("made-by-run");
    let run = std::env::var("NEXTEST_RUN_ID").ok();
    if run.is_some() && std::fs::read_to_string(&marker).ok() == run {
        return;
    }
    let _ = std::fs::remove_file(&marker);
    make();
    if let Some(run) = run {
        std::fs::write(&marker, run).unwrap();
    }
}

/// A `CARGO_HOME` with nothing installed (no `bin/`) whose registry is a link to this
/// machine's, so crates resolve offline as they would from crates.io. One path for every
/// test, so the registry packages' sources keep one path and compile once in
/// [`in_process_target`].
pub fn bare_cargo_home() -> PathBuf {
    let real = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let home = in_process_target().join("bare-cargo-home");
    std::fs::create_dir_all(&home).unwrap();
    match std::os::unix::fs::symlink(real.join("registry"), home.join("registry")) {
        Ok(()) => {}
        // Made by another test (a link is made whole or not at all).
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => panic!("linking the registry into {}: {e}", home.display()),
    }
    write_whole(&home.join("config.toml"), BARE_CARGO_HOME_CONFIG);
    home
}

/// The `config.toml` of [`bare_cargo_home`] (`tests/bare-cargo-home.toml`, which says why):
/// build scripts' dependencies compile alike with and without `--target`, so the engine
/// compiles once in [`in_process_target`]; no incremental state.
pub const BARE_CARGO_HOME_CONFIG: &str = include_str!("../../bare-cargo-home.toml");

/// Writes `text` to `path` unless it holds it already, through a temp file and a rename: a
/// concurrent reader sees the old file or the new one, whole.
pub fn write_whole(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return;
    }
    let tmp = tempfile::NamedTempFile::new_in(path.parent().unwrap()).unwrap();
    std::fs::write(tmp.path(), text).unwrap();
    tmp.persist(path).unwrap();
}

/// A temp copy of `tests/fixtures/<name>`; the package is `<tmp>/pkg`.
pub fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    copy_dir(&repo().join("tests/fixtures").join(name), &pkg);
    (tmp, pkg)
}

/// Copy the tree `from` to `to`, leaving out build output (`target`) and `Cargo.lock` (a copy
/// resolves afresh, its path dependencies rewritten).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() == "target" || e.file_name() == "Cargo.lock" {
            continue;
        }
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The CUDA 13 toolkit (nvcc from the PyPI wheels): `CUDA_PATH`, else the setup script's prefix.
pub fn cuda13() -> PathBuf {
    let p = std::env::var_os("CUDA_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mcpp-toolchains/cuda-13"));
    assert!(
        p.join("bin/nvcc").is_file(),
        "no nvcc under {}: run scripts/setup-toolchains.sh",
        p.display()
    );
    p
}

/// A toolkit root `<dir>/counted-cuda` whose `bin/nvcc` is a counting wrapper ([`Shim::wrap`])
/// around the real nvcc of [`cuda13`] (its `include/` and `lib/` linked); returns (root, shim).
pub fn counted_toolkit(dir: &Path) -> (PathBuf, Shim) {
    let real = cuda13();
    let root = dir.join("counted-cuda");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    for d in ["include", "lib"] {
        std::os::unix::fs::symlink(real.join(d), root.join(d)).unwrap();
    }
    let nvcc = Shim::wrap(&root.join("bin"), "nvcc", &real.join("bin/nvcc"));
    (root, nvcc)
}

/// The CUDA 12.9 layout for clang-19: `MCPP_CUDA12_CLANG`, else the setup script's prefix.
pub fn cuda12_clang() -> PathBuf {
    let p = std::env::var_os("MCPP_CUDA12_CLANG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mcpp-toolchains/cuda-12.9-clang"));
    assert!(
        p.join("include/cuda.h").is_file(),
        "no CUDA 12.9 layout at {}: run scripts/setup-toolchains.sh",
        p.display()
    );
    p
}

/// Replace `from` by `to` in the file (asserting it was there).
pub fn edit(path: &Path, from: &str, to: &str) {
    let t = std::fs::read_to_string(path).unwrap();
    assert!(t.contains(from), "`{from}` not in {}", path.display());
    std::fs::write(path, t.replace(from, to)).unwrap();
}

/// The real program `name` on PATH (tests fail, not skip, when it is missing: CI installs it).
pub fn real_tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed; run scripts/setup-toolchains.sh"))
}

/// A fake toolkit `<dir>/fake-cuda` whose `bin/nvcc` is a recording [`Shim`] (13.0 headers
/// stand-ins, an empty `lib/libcudart_static.a`); returns (root, shim).
pub fn fake_toolkit(dir: &Path) -> (PathBuf, Shim) {
    let root = dir.join("fake-cuda");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("include")).unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(root.join("include/cuda_runtime.h"), "").unwrap();
    std::fs::write(root.join("include/cuda.h"), "#define CUDA_VERSION 13000\n").unwrap();
    std::fs::write(root.join("lib/libcudart_static.a"), "!<arch>\n").unwrap();
    let shim = Shim::install(&root.join("bin"), "nvcc");
    (root, shim)
}

/// Every file below `dir`, recursively (empty when `dir` does not exist).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Everything below `dir`, directories included, each with its size and modification time
/// (sorted): two states compare equal only when nothing was created, removed or written.
pub fn tree_state(dir: &Path) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).ok();
            out.push((
                p.clone(),
                m.as_ref().map_or(0, |m| m.len()),
                m.and_then(|m| m.modified().ok()),
            ));
            if p.is_dir() {
                out.extend(tree_state(&p));
            }
        }
    }
    out.sort();
    out
}

/// The refusal of a temp package named `refusals` with `[package.metadata.mcpp]` body `mcpp`
/// and `files`, built with `configure` applied, its temp paths redacted ([`redact`]): the one
/// shape of the snapshot tests that pin a lane's refusal texts (`refusals_spirv`,
/// `refusals_storage`). Panics when the build is not refused.
pub fn package_refusal(
    mcpp: &str,
    files: &[(&str, &str)],
    configure: impl FnOnce(&mut cargo_mcpp::Build),
) -> String {
    let manifest = manifest("refusals", mcpp);
    let mut all = vec![("Cargo.toml", manifest.as_str())];
    all.extend_from_slice(files);
    let pkg = Package::new(&all);
    let mut b = pkg.build();
    configure(&mut b);
    let text = pkg.refuse(&b);
    redact(&text, pkg.dir.path())
}

/// `text` with the temp paths of a test replaced for a snapshot: `<tmp>/pkg` (the package of
/// [`Package`] and [`fixture`]) by `[PKG]`, any other path under `tmp` by `[TMP]`.
pub fn redact(text: &str, tmp: &Path) -> String {
    let tmp = tmp.display().to_string();
    text.replace(&format!("{tmp}/pkg"), "[PKG]")
        .replace(&tmp, "[TMP]")
}

/// A `Build` of the CUDA package `pkg` with `toolkit` as its `CUDA_PATH` (a real toolkit or a
/// fake one with a recording shim as nvcc), its outputs and `MCPP_HOME` under `tmp`, every
/// variable that could name another nvcc, toolkit or accelerator set removed.
pub fn cuda_build(tmp: &Path, pkg: &Path, toolkit: &Path) -> cargo_mcpp::Build {
    let mut b = isolated_build(
        tmp,
        pkg,
        &[
            "NVCC",
            "MCPP_NVCC",
            "MCPP_TOOL_NVCC",
            "CUDA_HOME",
            "CUDAHOSTCXX",
            "NVCC_CCBIN",
        ],
    );
    b.env("CUDA_PATH", toolkit);
    b
}

/// A `Build` of `pkg` (debug, two jobs) with its outputs (`out/`, `work/`) and `MCPP_HOME`
/// under `tmp`, without the variables in `remove` nor those that choose an accelerator set or
/// a target (`MCPP_ACCEL`, `MCPP_NO_ACCEL`, `TARGET`, `HOST`): the one shape of every lane's
/// builder ([`cuda_build`], [`device_build`], [`hip_build`]).
pub fn isolated_build(tmp: &Path, pkg: &Path, remove: &[&str]) -> cargo_mcpp::Build {
    let mut b = cargo_mcpp::Build::new();
    b.manifest_dir(pkg)
        .out_dir(tmp.join("out"))
        .work_dir(tmp.join("work"))
        .release(false)
        .jobs(2)
        .env("MCPP_HOME", tmp.join("mcpp-home"));
    for v in remove
        .iter()
        .chain(&["MCPP_ACCEL", "MCPP_NO_ACCEL", "TARGET", "HOST"])
    {
        b.env_remove(v);
    }
    b
}

/// A fake oneAPI installation `<dir>/oneapi` whose DPC++ compiler root `compiler/latest` has a
/// recording [`Shim`] as `bin/icpx` (answering `--version` as oneAPI 2025.0.4 does),
/// `include/sycl/sycl.hpp` and `lib/libsycl.so`; returns (the `ONEAPI_ROOT`, the shim). The
/// compiler root (`CMPLR_ROOT`) is `<oneapi>/compiler/latest`.
pub fn fake_oneapi(dir: &Path) -> (PathBuf, Shim) {
    let oneapi = dir.join("oneapi");
    let root = oneapi.join("compiler/latest");
    for d in ["bin", "include/sycl", "lib"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("include/sycl/sycl.hpp"), "#pragma once\n").unwrap();
    std::fs::write(root.join("lib/libsycl.so"), "").unwrap();
    let shim = Shim::install(&root.join("bin"), "icpx");
    shim.answer_version("Intel(R) oneAPI DPC++/C++ Compiler 2025.0.4 (2025.0.4.20241205)\nTarget: x86_64-unknown-linux-gnu");
    (oneapi, shim)
}

/// A fake CANN toolkit `<dir>/cann` for this host's architecture directory
/// (`cargo_mcpp::rules::ascend::ARCH_DIR`): a recording [`Shim`] as
/// `<arch>/ccec_compiler/bin/bisheng`, two of the toolkit's include directories, `lib64` with
/// `libascendc_runtime.so`, `libruntime.so` and `libc_sec.a`, the driver stubs directory, and
/// `ascend_toolkit_install.info` saying `version=8.5.0`; returns (the root, the shim).
pub fn fake_cann(dir: &Path) -> (PathBuf, Shim) {
    let root = dir.join("cann");
    let arch = root.join(cargo_mcpp::rules::ascend::ARCH_DIR);
    let stubs = format!(
        "devlib/linux/{}",
        cargo_mcpp::rules::ascend::ARCH_DIR.trim_end_matches("-linux")
    );
    for d in [
        "ccec_compiler/bin",
        "asc/include",
        "tikcpp/tikcfw",
        "lib64",
        stubs.as_str(),
    ] {
        std::fs::create_dir_all(arch.join(d)).unwrap();
    }
    for f in ["libascendc_runtime.so", "libruntime.so", "libc_sec.a"] {
        std::fs::write(arch.join("lib64").join(f), "").unwrap();
    }
    std::fs::write(
        arch.join("ascend_toolkit_install.info"),
        "package_name=Ascend-cann-toolkit\nversion=8.5.0\n",
    )
    .unwrap();
    let shim = Shim::install(&arch.join("ccec_compiler/bin"), "bisheng");
    (root, shim)
}

/// A `Build` of the package `pkg` with its outputs and `MCPP_HOME` under `tmp` and every
/// variable that could name another SYCL, Ascend C or CUDA compiler, toolkit or accelerator
/// set removed (the lanes verified by argv through the shim).
pub fn device_build(tmp: &Path, pkg: &Path) -> cargo_mcpp::Build {
    let mut b = isolated_build(
        tmp,
        pkg,
        &[
            "ICPX",
            "MCPP_ICPX",
            "MCPP_TOOL_ICPX",
            "ACPP",
            "MCPP_ACPP",
            "MCPP_TOOL_ACPP",
            "CMPLR_ROOT",
            "ONEAPI_ROOT",
            "BISHENG",
            "MCPP_BISHENG",
            "MCPP_TOOL_BISHENG",
            "ASCEND_HOME_PATH",
            "NVCC",
            "MCPP_NVCC",
            "MCPP_TOOL_NVCC",
            "CUDA_PATH",
            "CUDA_HOME",
        ],
    );
    b.env("CARGO_PKG_NAME", "dev-pkg");
    b
}

/// The ROCm root of the real HIP (`apt install hipcc libamdhip64-dev`: `/usr`, HIP 5.2):
/// `ROCM_PATH`, else `/usr` (tests fail, not skip, when it is missing: CI installs it).
pub fn real_rocm() -> PathBuf {
    let p = std::env::var_os("ROCM_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr"));
    assert!(
        p.join("include/hip/hip_version.h").is_file() && p.join("bin/hipcc").is_file(),
        "no HIP under {}: run scripts/setup-toolchains.sh (the hip component)",
        p.display()
    );
    p
}

/// A fake ROCm `<dir>/fake-rocm` whose `bin/hipcc` is a recording [`Shim`]: HIP 5.2's
/// `hip_version.h`, the NVIDIA platform's `hip/nvidia_detail/nvidia_hip_runtime.h`, an empty
/// `lib/libamdhip64.so`, device libraries for gfx908, gfx90a and gfx1030 (none for gfx1100);
/// returns (root, shim).
pub fn fake_rocm(dir: &Path) -> (PathBuf, Shim) {
    let root = dir.join("fake-rocm");
    for d in ["bin", "include/hip/nvidia_detail", "lib", "amdgcn/bitcode"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("include/hip/hip_version.h"), "#define HIP_VERSION_MAJOR 5\n#define HIP_VERSION_MINOR 2\n#define HIP_VERSION_PATCH 21153\n").unwrap();
    std::fs::write(
        root.join("include/hip/nvidia_detail/nvidia_hip_runtime.h"),
        "",
    )
    .unwrap();
    std::fs::write(root.join("lib/libamdhip64.so"), "").unwrap();
    for isa in ["908", "90a", "1030"] {
        std::fs::write(
            root.join(format!("amdgcn/bitcode/oclc_isa_version_{isa}.bc")),
            "",
        )
        .unwrap();
    }
    let shim = Shim::install(&root.join("bin"), "hipcc");
    (root, shim)
}

/// A `Build` of the HIP package `pkg` with `rocm` as its `ROCM_PATH`, its outputs and
/// `MCPP_HOME` under `tmp`, every variable that could name another hipcc, clang, ROCm, CUDA
/// toolkit or accelerator set removed.
pub fn hip_build(tmp: &Path, pkg: &Path, rocm: &Path) -> cargo_mcpp::Build {
    let mut b = isolated_build(
        tmp,
        pkg,
        &[
            "HIPCC",
            "MCPP_HIPCC",
            "MCPP_TOOL_HIPCC",
            "HIP_PATH",
            "MCPP_HIP_CLANG",
            "MCPP_TOOL_CLANGXX",
            "NVCC",
            "MCPP_NVCC",
            "CUDA_PATH",
            "CUDA_HOME",
        ],
    );
    b.env("ROCM_PATH", rocm);
    b
}
