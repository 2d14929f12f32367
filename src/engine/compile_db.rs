//! `compile_commands.json` (the JSON Compilation Database of Clang's tooling,
//! <https://clang.llvm.org/docs/JSONCompilationDatabase.html>) for every device and host C++
//! translation unit the device phase plans: each planned action that compiles one
//! ([`crate::engine::graph::Action::translation_unit`]: `.cu`, `.hip`, `.sycl`, `.cpp`, `.cppm`, ...),
//! with the real argv (the compiler first, the launcher left out), so clangd and other tools
//! work on `.cu` files.
//!
//! Who writes what (one writer per file and mode):
//! - the device phase (the build script) writes the package's database into the variant of the
//!   device cache ([`crate::engine::layout::Variant::compile_commands`]) on every run, fresh actions
//!   included ([`write()`]);
//! - under `cargo mcpp build`, the command line alone writes the copy, after cargo finishes (even
//!   when every build script was fresh): the databases of every selected package merged into
//!   `--compile-commands DIR`, or else into each manifest's `compile-commands` directory (the
//!   packages naming one directory, through a link too, merged into it: [`canonical_dir`]),
//!   keeping what the copy holds of packages not built ([`merge`]);
//! - under plain `cargo build` (no `cargo mcpp build` side channel), the build script merges its
//!   own package's entries into its manifest's `compile-commands` directory when it runs, as
//!   [`merge`] does for `cargo mcpp build` (a fresh build script writes nothing: a deleted copy
//!   comes back with the next `cargo mcpp build`).
//!
//! Every file only when its content changed ([`crate::engine::fingerprint::write_if_changed`]).
//!
//! A unit of the nvcc route is listed as the equivalent clang CUDA command ([`clang_of_nvcc`]:
//! `clang++ -x cuda --cuda-path=<toolkit> --cuda-gpu-arch=sm_XX`, the includes, defines,
//! forced includes, standard and optimisation level; nvcc's own options left out), since clangd
//! reads clang's options only. clang 19's CUDA wrapper includes two headers a CUDA 13 toolkit
//! does not ship (`texture_fetch_functions.h`, removed in 13, and `curand_mtgp32_kernel.h`,
//! absent from a toolkit without cuRAND): empty stand-ins for them are written beside the
//! database ([`crate::engine::layout::CLANGD_CUDA_STUBS`]) and searched last (`-idirafter`), so a
//! toolkit that has them wins.

use crate::error::{Error, ErrorKind, Result};
use crate::engine::graph::Action;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file name of the database.
pub const FILE_NAME: &str = crate::engine::layout::COMPILE_COMMANDS;

/// One entry of the database: `directory`, `file`, `arguments`, `output` (all absolute paths).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The working directory of the compile.
    pub directory: PathBuf,
    /// The translation unit.
    pub file: PathBuf,
    /// The compiler, then its arguments (never the launcher).
    pub arguments: Vec<String>,
    /// The first output of the compile (its object, PTX, ...); left out of the JSON when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<PathBuf>,
}

/// The manifest's `compile-commands` directory: relative to the package root (an absolute one
/// as written), `.` and `..` folded lexically, so two packages naming the workspace root
/// (`".."`) name one directory. `None` without the key.
pub fn manifest_dir(manifest: &crate::config::manifest::Manifest) -> Option<PathBuf> {
    use std::path::Component;
    let joined = manifest.dir().join(manifest.mcpp.compile_commands.as_ref()?);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// Check the manifest's `compile-commands` directory (before anything runs): not empty, and not
/// an existing file. A directory outside the package (a workspace root, `".."`) is allowed;
/// `cargo mcpp build` prints where it wrote.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `file:line:col`, the key and the way out.
pub fn check_manifest_dir(manifest: &crate::config::manifest::Manifest) -> Result<()> {
    let Some(dir) = &manifest.mcpp.compile_commands else { return Ok(()) };
    let key = "package.metadata.mcpp.compile-commands";
    let refuse = |what: String| Error::new(ErrorKind::Manifest, format!("invalid manifest: `compile-commands` {what}")).file(manifest.at_col("compile-commands")).key(key);
    if dir.trim().is_empty() {
        return Err(refuse("is empty".into()).help("write `compile-commands = \".\"` for the package root, a directory relative to it, or remove the key"));
    }
    let path = manifest_dir(manifest).unwrap_or_default();
    if path.exists() && !path.is_dir() {
        return Err(refuse(format!("names {}, which is not a directory", path.display())).help("name the directory that gets compile_commands.json (`\".\"` for the package root), not the file"));
    }
    if let Err(e) = check_writable(&path) {
        return Err(refuse(format!("names {}, where no file can be written ({e})", path.display())).help("name a directory you can write to (`\".\"` for the package root), or fix its permissions"));
    }
    Ok(())
}

/// Whether a file can be created in `dir` (the copy is written through a temporary file
/// beside it and a rename), or, when `dir` does not exist yet, in its nearest existing
/// ancestor (where `create_dir_all` would start). Decided by creating (and removing) a
/// temporary file, not from permission bits: root, read-only mounts and `/proc` answer alike.
///
/// # Errors
/// The I/O error of the attempt.
fn check_writable(dir: &Path) -> std::io::Result<()> {
    let mut probe = dir;
    while !probe.exists() {
        match probe.parent() {
            Some(p) if !p.as_os_str().is_empty() => probe = p,
            _ => return Ok(()),
        }
    }
    tempfile::Builder::new().prefix(".mcpp-write-probe").tempfile_in(probe).map(drop)
}

/// Check `--compile-commands DIR` before cargo starts and create the directory: it is absolute
/// (relative to the current directory), a directory that exists or can be made, and one a file
/// can be written in (an unwritable directory would otherwise fail only after cargo).
///
/// # Errors
/// [`ErrorKind::Usage`] naming the option, the directory and why.
pub fn prepare_cli_dir(dir: &Path) -> Result<PathBuf> {
    let refuse = |why: String| Error::new(ErrorKind::Usage, format!("--compile-commands {}: {why}", dir.display())).help("name a directory that exists or can be created (e.g. `--compile-commands .`)");
    let abs = std::path::absolute(dir).map_err(|e| refuse(e.to_string()))?;
    if abs.exists() && !abs.is_dir() {
        return Err(refuse("not a directory".into()));
    }
    std::fs::create_dir_all(&abs).map_err(|e| refuse(format!("cannot create the directory: {e}")))?;
    check_writable(&abs).map_err(|e| refuse(format!("no file can be written there: {e}")))?;
    Ok(abs)
}

/// The entries of `actions`, in plan order: one per action that compiles a translation unit;
/// an nvcc compile as its clang CUDA equivalent ([`clang_of_nvcc`]) naming the stand-in headers
/// in `stubs`.
pub fn entries(actions: &[Action], stubs: &Path) -> Vec<Entry> {
    actions
        .iter()
        .filter_map(|a| {
            let file = a.translation_unit()?;
            let args: Vec<String> = a.args.iter().map(|x| x.to_string_lossy().into_owned()).collect();
            let arguments = if a.tool.name == "nvcc" {
                clang_of_nvcc(&a.tool.path, &args, stubs)
            } else {
                std::iter::once(a.tool.path.to_string_lossy().into_owned()).chain(args).collect()
            };
            Some(Entry { directory: a.cwd.clone(), file: file.to_path_buf(), arguments, output: a.outputs.first().cloned() })
        })
        .collect()
}

/// The headers clang 19's CUDA wrapper (`__clang_cuda_runtime_wrapper.h`) includes that a CUDA
/// 13 toolkit lacks; written empty into the stubs directory.
pub const CUDA_STUB_HEADERS: &[&str] = &["texture_fetch_functions.h", "curand_mtgp32_kernel.h"];

/// The newest CUDA architecture number clang 19 (the clangd of the toolchain setup) accepts in
/// `--cuda-gpu-arch`: a newer one of an nvcc unit (`sm_100`, `sm_120`) is listed as `sm_90`.
pub const CLANG_CUDA_ARCH_MAX: u32 = 90;

/// nvcc's options that take the next argument and mean nothing to clang (left out with it).
const NVCC_VALUE_OPTIONS: &[&str] = &["-ccbin", "--compiler-bindir", "-target-dir", "--target-directory", "-Xptxas", "--ptxas-options", "-Xnvlink", "--nvlink-options", "-Xlinker", "--linker-options", "-Xarchive", "--archive-options", "-maxrregcount", "--maxrregcount", "-t", "--threads", "-MF", "-MT", "-MQ", "-odir", "--output-directory", "-x", "--x", "-ftz", "-prec-div", "-prec-sqrt", "-fmad"];

/// The clang CUDA command equivalent to an nvcc compile, as clangd reads it: `clang++ -x cuda
/// --cuda-path=<toolkit> --cuda-gpu-arch=sm_XX...` (each real architecture of `-gencode` /
/// `-arch`), `-fgpu-rdc` for relocatable device code, `-Wno-unknown-cuda-version`, the stubs
/// directory (`-idirafter`), then, in nvcc's order, the includes (`-I`, `-isystem`,
/// `-include`), defines (`-D`, `-U`), the standard (`-std=`), the optimisation level, those of
/// `-Xcompiler`'s values, `-c`, `-o` and the source. Every other nvcc option is left out. The
/// toolkit is the directory above nvcc's `bin/` (symbolic links followed).
pub fn clang_of_nvcc(nvcc: &Path, args: &[String], stubs: &Path) -> Vec<String> {
    let real = std::fs::canonicalize(nvcc).unwrap_or_else(|_| nvcc.to_path_buf());
    let toolkit = real.parent().and_then(Path::parent).unwrap_or(Path::new("/"));
    let mut archs: Vec<String> = Vec::new();
    let mut add_arch = |spec: &str| {
        // `arch=compute_80,code=[sm_80,compute_80]`, `code=sm_80`, `sm_80`, `compute_80`.
        for part in spec.split([',', '[', ']', '=', ' ']) {
            let n = part.strip_prefix("sm_").or_else(|| part.strip_prefix("compute_"));
            if let Some(n) = n.filter(|n| !n.is_empty()) {
                // Past what clang 19 knows (sm_90a) the driver refuses the architecture, and
                // clangd with it: listed as the newest it knows.
                let number: u32 = n.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().unwrap_or(0);
                let arch = if number > CLANG_CUDA_ARCH_MAX { format!("sm_{CLANG_CUDA_ARCH_MAX}") } else { format!("sm_{n}") };
                if !archs.contains(&arch) {
                    archs.push(arch);
                }
            }
        }
    };
    let mut rest: Vec<String> = Vec::new();
    let mut rdc = false;
    let keep_host = |f: &str| ["-I", "-D", "-U", "-std=", "-isystem", "-include"].iter().any(|p| f.starts_with(p));
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).cloned();
        let (opt, joined) = match a.split_once('=') {
            Some((o, v)) if o.starts_with('-') => (o, Some(v.to_string())),
            _ => (a, None),
        };
        let mut value = || -> Option<String> {
            if joined.is_some() {
                joined.clone()
            } else {
                i += 1;
                next.clone()
            }
        };
        match opt {
            "-gencode" | "--generate-code" | "-arch" | "--gpu-architecture" | "-code" | "--gpu-code" => {
                if let Some(v) = value() {
                    add_arch(&v);
                }
            }
            "-rdc" | "--relocatable-device-code" => rdc |= value().is_some_and(|v| v == "true"),
            "-dc" | "--device-c" => {
                rdc = true;
                rest.push("-c".into());
            }
            "-Xcompiler" | "--compiler-options" => {
                if let Some(v) = value() {
                    rest.extend(v.split(',').filter(|f| keep_host(f)).map(str::to_string));
                }
            }
            "-I" | "-isystem" | "-include" | "-D" | "-U" | "-o" | "--include-path" | "--system-include" | "--pre-include" | "--define-macro" | "--undefine-macro" | "--output-file" => {
                let flag = match opt {
                    "--include-path" => "-I",
                    "--system-include" => "-isystem",
                    "--pre-include" => "-include",
                    "--define-macro" => "-D",
                    "--undefine-macro" => "-U",
                    "--output-file" => "-o",
                    o => o,
                };
                if let Some(v) = value() {
                    if flag.len() == 2 && flag != "-o" {
                        rest.push(format!("{flag}{v}"));
                    } else {
                        rest.extend([flag.to_string(), v]);
                    }
                }
            }
            "-std" | "--std" => {
                if let Some(v) = value() {
                    rest.push(format!("-std={v}"));
                }
            }
            _ if NVCC_VALUE_OPTIONS.contains(&opt) => {
                if joined.is_none() {
                    i += 1;
                }
            }
            "-c" | "--compile" => rest.push("-c".into()),
            _ if a.starts_with("-O") && a.len() <= 3 => rest.push(a.to_string()),
            _ if keep_host(a) => rest.push(a.to_string()),
            _ if a.starts_with('-') => {}
            _ => rest.push(a.to_string()),
        }
        i += 1;
    }
    let mut out = vec!["clang++".to_string(), "-x".into(), "cuda".into(), format!("--cuda-path={}", toolkit.display())];
    out.extend(archs.iter().map(|a| format!("--cuda-gpu-arch={a}")));
    if rdc {
        out.push("-fgpu-rdc".into());
    }
    out.extend(["-Wno-unknown-cuda-version".into(), "-idirafter".into(), stubs.display().to_string()]);
    out.extend(rest);
    out
}

/// The database's text for `entries` (pretty JSON, a trailing newline).
///
/// # Errors
/// [`ErrorKind::Io`] when serialisation fails (it does not for these types).
pub fn render(entries: &[Entry]) -> Result<Vec<u8>> {
    let mut text = serde_json::to_vec_pretty(entries).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
    text.push(b'\n');
    Ok(text)
}

/// Write the database of `actions` to `in_cache` (the variant's), sorted by file then output,
/// only when changed. The build
/// script's copy is [`merge`]d from it, as `cargo mcpp build`'s are.
///
/// # Errors
/// [`ErrorKind::Io`] naming the path that cannot be written.
pub fn write(actions: &[Action], in_cache: &Path) -> Result<()> {
    let stubs = in_cache.with_file_name(crate::engine::layout::CLANGD_CUDA_STUBS);
    if actions.iter().any(|a| a.tool.name == "nvcc" && a.translation_unit().is_some()) {
        std::fs::create_dir_all(&stubs).map_err(|e| Error::io("cannot create", &stubs, e))?;
        for h in CUDA_STUB_HEADERS {
            crate::engine::fingerprint::write_if_changed(&stubs.join(h), b"/* An empty stand-in for clangd: clang's CUDA wrapper includes this header, which a CUDA 13 toolkit lacks. */\n")?;
        }
    }
    let mut listed = entries(actions, &stubs);
    // The order of the copies ([`merge`]), so a one-package copy has the cache's bytes.
    listed.sort_by(|a, b| (&a.file, &a.output).cmp(&(&b.file, &b.output)));
    let text = render(&listed)?;
    if let Some(parent) = in_cache.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("cannot create", parent, e))?;
    }
    crate::engine::fingerprint::write_if_changed(in_cache, &text).map(drop)
}

/// One package's database for [`merge`]: the package, its variant's `compile_commands.json`
/// and its device cache directory (`target/<profile>/mcpp/<package>`, where every output of its
/// entries lies).
#[derive(Debug, Clone)]
pub struct Source {
    /// The package's name, for the warning about a missing database.
    pub package: String,
    /// Its variant's database ([`crate::engine::layout::Variant::compile_commands`]).
    pub database: PathBuf,
    /// Its device cache directory ([`crate::engine::layout::DeviceCache::dir`]).
    pub cache_dir: PathBuf,
}

/// What [`merge`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The copy, `<dir>/compile_commands.json`.
    pub path: PathBuf,
    /// Whether it was written (its content changed).
    pub written: bool,
    /// The number of entries it holds.
    pub entries: usize,
    /// The packages whose database is missing (their device cache removed after the build
    /// script last ran), in order: the copy keeps what it listed of them.
    pub missing: Vec<String>,
    /// Why the copy that was there could not be read as a JSON array (what it listed of the
    /// packages not built now is lost), when that happened: the caller warns.
    pub replaced_unreadable: Option<String>,
}

/// Merge the databases `sources` (each a selected package's, in order) into
/// `<dir>/compile_commands.json`, written only when changed (the directory created).
///
/// The copy may be shared with packages this build did not select (`cargo mcpp build -p b` into
/// a workspace-wide copy) or hold entries of another tool (CMake's): an entry already in the copy
/// is kept unless it belongs to a package read here (its `output` lies in that package's device
/// cache) or its `file` is one the new entries list; kept entries may be any JSON object
/// (`command` instead of `arguments`). The entries are sorted by `file`, then `output`, so the
/// copy does not depend on which packages were selected. A missing source (a removed device
/// cache, or a package that never ran) is skipped and named in [`Merged::missing`]; nothing is
/// written when every source is missing (an existing copy is left as it is). An existing copy
/// that is not a JSON array is replaced.
///
/// # Errors
/// [`ErrorKind::Io`] naming a source that cannot be read or parsed (remove it, or `cargo clean`)
/// or the copy that cannot be written.
pub fn merge(sources: &[Source], dir: &Path) -> Result<Merged> {
    let mut fresh: Vec<Listed> = Vec::new();
    let mut read: Vec<&Path> = Vec::new();
    let mut missing = Vec::new();
    for src in sources {
        let bytes = match std::fs::read(&src.database) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing.push(src.package.clone());
                continue;
            }
            Err(e) => return Err(Error::io("cannot read", &src.database, e)),
        };
        let entries: Vec<Entry> = serde_json::from_slice(&bytes)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{}: not a compilation database written by cargo-mcpp: {e}", src.database.display())).help("remove the file (the next build writes it again) or run `cargo clean`"))?;
        fresh.extend(entries.into_iter().map(Listed::Ours));
        read.push(&src.cache_dir);
    }
    let path = dir.join(FILE_NAME);
    if read.is_empty() {
        return Ok(Merged { path, written: false, entries: 0, missing, replaced_unreadable: None });
    }
    let files: std::collections::BTreeSet<String> = fresh.iter().filter_map(|v| v.field("file")).collect();
    let (previous, replaced_unreadable): (Vec<serde_json::Value>, Option<String>) = match std::fs::read(&path) {
        Err(_) => (Vec::new(), None),
        Ok(b) => match serde_json::from_slice(&b) {
            Ok(v) => (v, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        },
    };
    let mut all: Vec<Listed> = previous
        .into_iter()
        .map(|v| {
            // cargo-mcpp's own shape only with exactly its fields; anything else is kept whole.
            let ours = v.as_object().is_some_and(|o| o.keys().all(|k| ["directory", "file", "arguments", "output"].contains(&k.as_str())));
            match serde_json::from_value::<Entry>(v.clone()) {
                Ok(e) if ours => Listed::Ours(e),
                _ => Listed::Other(v),
            }
        })
        .filter(|v| {
            let of_read = v.field("output").is_some_and(|o| read.iter().any(|c| Path::new(&o).starts_with(c)));
            !of_read && !v.field("file").is_some_and(|f| files.contains(&f))
        })
        .collect();
    all.extend(fresh);
    all.sort_by_key(|v| (v.field("file"), v.field("output")));
    let mut text = serde_json::to_vec_pretty(&all).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
    text.push(b'\n');
    let written = crate::engine::fingerprint::write_if_changed(&path, &text)?;
    Ok(Merged { path, written, entries: all.len(), missing, replaced_unreadable })
}

/// An entry of a merged copy: one of cargo-mcpp's (written in [`Entry`]'s field order, as the
/// device cache's), or another tool's, kept as it was read.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum Listed {
    /// cargo-mcpp's shape.
    Ours(Entry),
    /// Any other JSON value (CMake's `command` form, ...).
    Other(serde_json::Value),
}

impl Listed {
    /// A path field (`file`, `output`) as text, when present.
    fn field(&self, key: &str) -> Option<String> {
        match self {
            Listed::Ours(e) => match key {
                "file" => Some(e.file.to_string_lossy().into_owned()),
                "output" => e.output.as_ref().map(|o| o.to_string_lossy().into_owned()),
                _ => None,
            },
            Listed::Other(v) => v.get(key).and_then(serde_json::Value::as_str).map(str::to_string),
        }
    }
}

/// `dir` with its existing part resolved (symbolic links, `..`): two spellings of one directory
/// (a link to it, `a/../b`) give one path, so the packages naming it are merged into one copy
/// rather than overwriting each other. The part that does not exist yet is appended as written.
pub fn canonical_dir(dir: &Path) -> PathBuf {
    let mut existing = dir.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(&existing) {
            return rest.iter().rev().fold(c, |p: PathBuf, part| p.join(part));
        }
        match (existing.file_name().map(std::ffi::OsStr::to_os_string), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return dir.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Tool, ToolSource};

    fn action(input: &str, launcher: Option<&str>) -> Action {
        let mut a = crate::engine::graph::test_action(&format!("x:{input}"), &[input, "/w/island.h"], &["/w/o.o"]);
        a.description = String::new();
        a.tool = Tool { name: "nvcc".into(), path: "/cuda/bin/nvcc".into(), version: String::new(), source: ToolSource::Path, env: Vec::new(), toolchain_package_root: None, launcher: launcher.map(PathBuf::from) };
        a.args = vec!["-c".into(), input.into(), "-o".into(), "/w/o.o".into()];
        a
    }

    #[test]
    fn translation_units_only_with_the_real_compiler_first() {
        let mut host = action("/p/m.cppm", None);
        (host.tool.name, host.tool.path) = ("c++".into(), "/usr/bin/c++".into());
        let actions = [action("/p/k.cu", Some("/usr/bin/sccache")), action("/p/s.comp", None), host];
        let e = entries(&actions, Path::new("/stubs"));
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!(e[0].file, PathBuf::from("/p/k.cu"));
        assert_eq!(e[0].arguments, ["clang++", "-x", "cuda", "--cuda-path=/cuda", "-Wno-unknown-cuda-version", "-idirafter", "/stubs", "-c", "/p/k.cu", "-o", "/w/o.o"]);
        assert_eq!(e[1].arguments[0], "/usr/bin/c++", "another compiler is listed as it runs");
        assert_eq!(e[1].file, PathBuf::from("/p/m.cppm"));
        let text = String::from_utf8(render(&e).unwrap()).unwrap();
        assert!(!text.contains("sccache") && text.contains("\"directory\": \"/p\""), "{text}");
    }

    #[test]
    fn an_nvcc_compile_is_listed_as_its_clang_cuda_equivalent() {
        let nvcc: Vec<String> = [
            "-ccbin", "/usr/bin/g++", "-Xcompiler", "-fPIC,-DHOST=1", "-gencode", "arch=compute_80,code=[sm_80,compute_80]", "-gencode=arch=compute_90,code=sm_90", "-O0", "-lineinfo", "-rdc=true", "-include", "/c/island.h",
            "-I/p/include", "-DWIDTH=4", "--std", "c++17", "-Xptxas", "-v", "--expt-relaxed-constexpr", "-MMD", "-MF", "/w/k.d", "-c", "/p/k.cu", "-o", "/w/k.o",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let got = clang_of_nvcc(Path::new("/cuda/bin/nvcc"), &nvcc, Path::new("/stubs"));
        let newer: Vec<String> = ["-gencode", "arch=compute_120,code=[sm_120,compute_120]", "-gencode", "arch=compute_100a,code=sm_100a", "-gencode", "arch=compute_75,code=sm_75"].iter().map(|s| s.to_string()).collect();
        let archs: Vec<String> = clang_of_nvcc(Path::new("/cuda/bin/nvcc"), &newer, Path::new("/s")).into_iter().filter(|a| a.starts_with("--cuda-gpu-arch")).collect();
        assert_eq!(archs, ["--cuda-gpu-arch=sm_90", "--cuda-gpu-arch=sm_75"], "an architecture clang 19 does not know is listed as sm_90");
        assert_eq!(
            got,
            [
                "clang++", "-x", "cuda", "--cuda-path=/cuda", "--cuda-gpu-arch=sm_80", "--cuda-gpu-arch=sm_90", "-fgpu-rdc", "-Wno-unknown-cuda-version", "-idirafter", "/stubs", "-DHOST=1", "-O0", "-include", "/c/island.h", "-I/p/include", "-DWIDTH=4", "-std=c++17", "-c", "/p/k.cu", "-o",
                "/w/k.o"
            ]
        );
    }

    fn source(dir: &Path, package: &str) -> Source {
        Source { package: package.into(), database: dir.join(format!("{package}.json")), cache_dir: dir.join(format!("cache-{package}")) }
    }

    /// A database of `package` with one unit `file`, its output in the package's cache.
    fn database(dir: &Path, package: &str, file: &str) -> Source {
        let src = source(dir, package);
        let mut a = action(file, None);
        a.outputs = vec![src.cache_dir.join("host/o.o")];
        std::fs::write(&src.database, render(&entries(&[a], Path::new("/stubs"))).unwrap()).unwrap();
        src
    }

    #[test]
    fn merge_concatenates_the_packages_and_rewrites_a_deleted_copy() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (database(dir.path(), "a", "/p/k.cu"), database(dir.path(), "b", "/q/m.cpp"));
        let out = dir.path().join("out");
        let sources = [a, source(dir.path(), "missing"), b];
        let m = merge(&sources, &out).unwrap();
        assert!(m.written && m.entries == 2, "{m:?}");
        assert_eq!(m.missing, ["missing"]);
        let text = std::fs::read_to_string(&m.path).unwrap();
        assert!(text.contains("/p/k.cu") && text.contains("/q/m.cpp"), "{text}");
        assert!(!merge(&sources, &out).unwrap().written, "unchanged: not written");
        std::fs::remove_file(&m.path).unwrap();
        assert!(merge(&sources, &out).unwrap().written && m.path.is_file(), "a deleted copy is written again");
        assert!(!merge(&sources[1..2], &out).unwrap().written, "no source yet: the copy is left as it is");
        assert!(std::fs::read_to_string(&m.path).unwrap().contains("/q/m.cpp"));
        // A copy that is not JSON (hand-edited, truncated) is written again, and said.
        std::fs::write(&m.path, "garbage").unwrap();
        let again = merge(&sources, &out).unwrap();
        assert!(again.written && again.replaced_unreadable.is_some() && again.entries == 2, "{again:?}");
        assert!(merge(&sources, &out).unwrap().replaced_unreadable.is_none());
        std::fs::write(&sources[0].database, "not json").unwrap();
        assert!(merge(&sources, &out).unwrap_err().to_string().contains("a.json"));
    }

    #[test]
    fn merge_keeps_the_entries_of_packages_not_built_and_of_other_tools() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (database(dir.path(), "a", "/p/a.cpp"), database(dir.path(), "b", "/q/b.cpp"));
        let out = dir.path().join("out");
        merge(std::slice::from_ref(&a), &out).unwrap();
        assert_eq!(std::fs::read(out.join(FILE_NAME)).unwrap(), std::fs::read(&a.database).unwrap(), "one package: the cache's bytes");
        merge(&[a.clone(), b.clone()], &out).unwrap();
        let both = std::fs::read(out.join(FILE_NAME)).unwrap();
        // `-p b`: a's entry stays; the copy's bytes do not depend on the selection.
        assert!(!merge(std::slice::from_ref(&b), &out).unwrap().written);
        assert_eq!(std::fs::read(out.join(FILE_NAME)).unwrap(), both);
        // b's unit renamed: its old entry (an output in b's cache) goes, a's stays.
        let b2 = database(dir.path(), "b", "/q/c.cpp");
        merge(std::slice::from_ref(&b2), &out).unwrap();
        let text = std::fs::read_to_string(out.join(FILE_NAME)).unwrap();
        assert!(text.contains("/p/a.cpp") && text.contains("/q/c.cpp") && !text.contains("/q/b.cpp"), "{text}");
        // Another tool's entry (CMake's `command` form) is kept; one for a file b now lists is replaced.
        let mut v: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        v.push(serde_json::json!({ "directory": "/r", "file": "/r/x.c", "command": "cc -c x.c" }));
        v.push(serde_json::json!({ "directory": "/r", "file": "/r/y.c", "arguments": ["cc", "-c", "y.c"] }));
        v.push(serde_json::json!({ "directory": "/r", "file": "/q/c.cpp", "command": "old" }));
        std::fs::write(out.join(FILE_NAME), serde_json::to_vec(&v).unwrap()).unwrap();
        let m = merge(std::slice::from_ref(&b2), &out).unwrap();
        let text = std::fs::read_to_string(&m.path).unwrap();
        assert!(m.entries == 4 && text.contains("cc -c x.c") && !text.contains("\"old\"") && !text.contains("null"), "kept as they were: {text}");
    }

    #[test]
    fn one_directory_through_a_link_is_one_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        assert_eq!(canonical_dir(&dir.path().join("link")), canonical_dir(&dir.path().join("real")));
        assert_eq!(canonical_dir(&dir.path().join("link/new/sub")), canonical_dir(&dir.path().join("real")).join("new/sub"), "a part not there yet is kept");
        std::fs::create_dir(dir.path().join("x")).unwrap();
        assert_eq!(canonical_dir(&dir.path().join("x/../real")), canonical_dir(&dir.path().join("real")));
    }
}
