//! Helpers shared by the integration tests: temp copies of fixtures, the toolchains
//! `scripts/setup-toolchains.sh` installs, a fake CUDA toolkit around a recording shim.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A process's stdout then stderr, as text (for assertions and their messages).
pub fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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
    let p = std::env::var_os("CUDA_PATH").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/opt/mcpp-toolchains/cuda-13"));
    assert!(p.join("bin/nvcc").is_file(), "no nvcc under {}: run scripts/setup-toolchains.sh", p.display());
    p
}

/// The CUDA 12.9 layout for clang-19: `MCPP_CUDA12_CLANG`, else the setup script's prefix.
pub fn cuda12_clang() -> PathBuf {
    let p = std::env::var_os("MCPP_CUDA12_CLANG").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/opt/mcpp-toolchains/cuda-12.9-clang"));
    assert!(p.join("include/cuda.h").is_file(), "no CUDA 12.9 layout at {}: run scripts/setup-toolchains.sh", p.display());
    p
}

/// Replace `from` by `to` in the file (asserting it was there).
pub fn edit(path: &Path, from: &str, to: &str) {
    let t = std::fs::read_to_string(path).unwrap();
    assert!(t.contains(from), "`{from}` not in {}", path.display());
    std::fs::write(path, t.replace(from, to)).unwrap();
}

/// A fake toolkit `<dir>/fake-cuda` whose `bin/nvcc` is the recording shim (13.0 headers
/// stand-ins, an empty `lib/libcudart_static.a`); returns (root, shim path).
pub fn fake_toolkit(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("fake-cuda");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("include")).unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(root.join("include/cuda_runtime.h"), "").unwrap();
    std::fs::write(root.join("include/cuda.h"), "#define CUDA_VERSION 13000\n").unwrap();
    std::fs::write(root.join("lib/libcudart_static.a"), "!<arch>\n").unwrap();
    let shim = root.join("bin/nvcc");
    std::fs::copy(repo().join("tests/fixtures/record-shim.sh"), &shim).unwrap();
    (root, shim)
}

/// The argv lines of each call recorded by a shim.
pub fn recorded(shim: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(format!("{}.log", shim.display())).unwrap_or_default();
    let mut calls = Vec::new();
    let mut cur = Vec::new();
    for l in text.lines() {
        if l == "--end--" {
            calls.push(std::mem::take(&mut cur));
        } else {
            cur.push(l.to_string());
        }
    }
    calls
}

/// A counting wrapper at `path` running `real`; [`starts`] reads its count.
pub fn counting_wrapper(path: &Path, real: &Path) {
    std::fs::copy(repo().join("tests/fixtures/count-wrapper.sh"), path).unwrap();
    std::fs::write(format!("{}.real", path.display()), real.to_string_lossy().as_bytes()).unwrap();
}

pub fn starts(path: &Path) -> usize {
    std::fs::read_to_string(format!("{}.count", path.display())).map(|t| t.lines().count()).unwrap_or(0)
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
