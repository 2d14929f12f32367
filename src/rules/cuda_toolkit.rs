//! The CUDA toolkit, shared by every rule that compiles against it: the CUDA rule (nvcc or
//! clang), HIP on NVIDIA (clang++ with the CUDA runtime) and SYCL for NVIDIA (DPC++'s
//! `--cuda-path`). Each asks the one resolver ([`crate::tool::resolve_toolkit`],
//! [`crate::tool::find_toolkit_root`]) for the toolkit declared here ([`CUDA_TOOLKIT`], found
//! through [`NVCC`]), rooted where `[package.metadata.mcpp.cuda] toolkit` names it
//! ([`root_choice`]); reads its version ([`Toolkit::read`]) and checks it against the `cuda`
//! entry of the accelerator set ([`check_version`]); and finds the CUDA runtime of the build's
//! target ([`CudaTarget`], [`Toolkit::runtime_dir`]).

use crate::config::accel::AccelEntry;
use crate::config::manifest::Manifest;
use crate::error::{Error, ErrorKind, Result};
use crate::tool::{RootChoice, ToolSpec, ToolkitSpec};
use std::path::{Path, PathBuf};

/// The manifest table that names the toolkit (the CUDA rule's options table).
pub const MANIFEST_KEY: &str = "package.metadata.mcpp.cuda";

/// The CUDA toolkit, as the resolver reads it: `[package.metadata.mcpp.cuda] toolkit`, then
/// `CUDA_PATH`, `CUDA_HOME`; a root holds `bin/nvcc` and `include/cuda_runtime.h`.
pub const CUDA_TOOLKIT: ToolkitSpec = ToolkitSpec {
    root_key: Some("[package.metadata.mcpp.cuda] toolkit"),
    root_vars: &["CUDA_PATH", "CUDA_HOME"],
    marker_files: &["include/cuda_runtime.h"],
    ..ToolkitSpec::new("CUDA toolkit", "bin/nvcc")
};

/// nvcc, in its toolkit: the explicit choice, `NVCC`, `MCPP_NVCC`, `MCPP_TOOL_NVCC`, the
/// toolkit root ([`CUDA_TOOLKIT`]), the `cuda-nvcc` toolchain package, then PATH.
pub const NVCC: ToolSpec = ToolSpec {
    name: "nvcc",
    programs: &["nvcc"],
    env_vars: &["NVCC", "MCPP_NVCC"],
    version_args: &["--version"],
    install_hint: "pip install nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-crt nvidia-nvvm, or cargo mcpp fetch (the cuda-nvcc toolchain package)",
    toolchain_package: Some("cuda-nvcc"),
    toolkit: Some(&CUDA_TOOLKIT),
};

/// The explicit toolkit root, `[package.metadata.mcpp.cuda] toolkit` (made absolute against
/// the package root), for the resolver; `None` when the key is absent. The CUDA rule checks the
/// whole table before anything plans (its options type reads this key as a path); every rule
/// compiling against the toolkit reads the root here, so the three agree.
pub fn root_choice(manifest: &Manifest) -> Option<RootChoice> {
    let t = PathBuf::from(manifest.rule_table("cuda")?.get("toolkit")?.as_str()?);
    let root = if t.is_absolute() { t } else { manifest.dir().join(t) };
    Some(RootChoice { root, manifest: manifest.path.clone(), line: manifest.line("cuda.toolkit"), key: format!("{MANIFEST_KEY}.toolkit") })
}

/// A resolved CUDA toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    /// The root (`<root>/include/cuda.h`).
    pub root: PathBuf,
    /// `CUDA_VERSION` of `include/cuda.h` as (major, minor), e.g. (13, 0).
    pub version: Option<(u32, u32)>,
    /// How it was found (for messages).
    pub found_by: String,
}

impl Toolkit {
    /// Read the toolkit at `root`; `None` when it has no `include/cuda_runtime.h`
    /// ([`CUDA_TOOLKIT`]'s marker).
    pub fn at(root: &Path, found_by: impl Into<String>) -> Option<Toolkit> {
        CUDA_TOOLKIT.is_root(root).then(|| Toolkit::read(root, found_by))
    }

    /// Read the version of the toolkit at `root`, a root the resolver accepted
    /// ([`tool::ToolkitRoot`]); the version is `None` when `include/cuda.h` does not say it.
    pub fn read(root: &Path, found_by: impl Into<String>) -> Toolkit {
        let version = std::fs::read_to_string(root.join("include").join("cuda.h")).ok().and_then(|t| {
            t.lines().find_map(|l| l.trim().strip_prefix("#define CUDA_VERSION").and_then(|v| v.trim().parse::<u32>().ok())).map(|v| (v / 1000, (v % 1000) / 10))
        });
        Toolkit { root: root.to_path_buf(), version, found_by: found_by.into() }
    }

    /// The directories that may hold the CUDA runtime for `target`, in the order they are
    /// looked at: for the build machine's own target `lib64/`, `lib/` (the PyPI layout), then
    /// `targets/<dir>/lib/`; for a cross target only `targets/<dir>/lib/` (`lib64/` and `lib/`
    /// are the build machine's), `<dir>` from [`CudaTarget::dirs`].
    pub fn runtime_candidates(&self, target: &CudaTarget) -> Vec<PathBuf> {
        let mut c = Vec::new();
        if !target.cross {
            c.extend([self.root.join("lib64"), self.root.join("lib")]);
        }
        c.extend(target.dirs.iter().map(|d| self.root.join("targets").join(d).join("lib")));
        c
    }

    /// The first of [`Toolkit::runtime_candidates`] holding `libcudart_static.a` or a shared
    /// `libcudart.so[.N]`, with the `targets/` directory name when it is one; `None` when none does.
    pub fn runtime_dir(&self, target: &CudaTarget) -> Option<(PathBuf, Option<&'static str>)> {
        let found = self.runtime_candidates(target).into_iter().find(|d| d.join("libcudart_static.a").is_file() || shared_cudart(d).is_some())?;
        let name = target.dirs.iter().copied().find(|d| found == self.root.join("targets").join(d).join("lib"));
        Some((found, name))
    }
}

/// The CUDA side of the build's target: the triple (cargo's `TARGET`), whether
/// it is another machine than the build's (`TARGET` is not `HOST`), and the names a CUDA
/// toolkit gives it under `targets/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaTarget {
    /// The Rust target triple, e.g. `aarch64-unknown-linux-gnu`.
    pub triple: String,
    /// The target is not the build machine (nvcc then gets `-target-dir`).
    pub cross: bool,
    /// The toolkit's directory names for it, in the order looked at ([`cuda_target_dirs`]).
    pub dirs: &'static [&'static str],
}

impl CudaTarget {
    /// The build's target, from cargo's facts ([`crate::config::cargo_facts`]).
    pub fn of_build(facts: &crate::config::cargo_facts::CargoFacts) -> CudaTarget {
        CudaTarget { dirs: cuda_target_dirs(&facts.target), cross: facts.is_cross(), triple: facts.target.clone() }
    }
}

/// The directory names under a CUDA toolkit's `targets/` for a Rust target triple:
/// `x86_64-linux` for x86_64 Linux; for aarch64 Linux `sbsa-linux` (servers: Grace, ARM SBSA)
/// then `aarch64-linux` (Jetson), both of which a triple names as `aarch64-unknown-linux-gnu`.
/// Empty for a target CUDA has no directory for.
pub fn cuda_target_dirs(triple: &str) -> &'static [&'static str] {
    let arch = triple.split('-').next().unwrap_or_default();
    match (arch, triple.contains("-linux")) {
        ("x86_64", true) => &["x86_64-linux"],
        ("aarch64", true) => &["sbsa-linux", "aarch64-linux"],
        _ => &[],
    }
}

/// The shared CUDA runtime in `dir`: `libcudart.so`, else the highest `libcudart.so.N`.
pub fn shared_cudart(dir: &Path) -> Option<String> {
    if dir.join("libcudart.so").is_file() {
        return Some("libcudart.so".into());
    }
    let mut versioned: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("libcudart.so."))
        .collect();
    versioned.sort();
    versioned.pop()
}

/// The accelerator entry's CUDA version (`cuda13.0`) is the toolkit's, when both are known: a
/// different toolkit would make the build lie about the CUDA it compiles with.
///
/// # Errors
/// [`ErrorKind::Accel`] naming both versions and the toolkit.
pub fn check_version(entry: &AccelEntry, toolkit: &Toolkit) -> Result<()> {
    if let (Some(want), Some((major, minor))) = (&entry.version, toolkit.version) {
        let nums = entry.version_numbers();
        if nums.first() != Some(&(major as u64)) || nums.get(1).copied().unwrap_or(0) != minor as u64 {
            return Err(Error::new(ErrorKind::Accel, format!("the accelerator names cuda{want}, but the CUDA toolkit found is CUDA {major}.{minor}"))
                .detail(format!("toolkit: {} (found through {})", toolkit.root.display(), toolkit.found_by))
                .detail("The version in the accelerator entry is the CUDA the build compiles with; a different toolkit would make the build lie about it.")
                .help(format!("write the entry as cuda{major}.{minor}+{{...}} (in `accel` or `--accel`), or point the toolkit at a CUDA {want} installation ([{MANIFEST_KEY}] toolkit, CUDA_PATH)")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_target_directories_and_runtime_candidates() {
        assert_eq!(cuda_target_dirs("x86_64-unknown-linux-gnu"), ["x86_64-linux"]);
        assert_eq!(cuda_target_dirs("aarch64-unknown-linux-gnu"), ["sbsa-linux", "aarch64-linux"]);
        assert!(cuda_target_dirs("x86_64-pc-windows-msvc").is_empty() && cuda_target_dirs("riscv64gc-unknown-linux-gnu").is_empty());
        let kit = Toolkit { root: PathBuf::from("/cuda"), version: None, found_by: String::new() };
        let cross = CudaTarget { triple: "aarch64-unknown-linux-gnu".into(), cross: true, dirs: cuda_target_dirs("aarch64-unknown-linux-gnu") };
        assert_eq!(kit.runtime_candidates(&cross), [PathBuf::from("/cuda/targets/sbsa-linux/lib"), PathBuf::from("/cuda/targets/aarch64-linux/lib")]);
        let native = CudaTarget { triple: "x86_64-unknown-linux-gnu".into(), cross: false, dirs: cuda_target_dirs("x86_64-unknown-linux-gnu") };
        assert_eq!(kit.runtime_candidates(&native), [PathBuf::from("/cuda/lib64"), PathBuf::from("/cuda/lib"), PathBuf::from("/cuda/targets/x86_64-linux/lib")]);
    }
}
