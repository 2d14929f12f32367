//! `compile_commands.json` (issue 14; the JSON Compilation Database of Clang's tooling,
//! <https://clang.llvm.org/docs/JSONCompilationDatabase.html>) for every device and host C++
//! translation unit the device phase plans: each planned action that compiles one
//! ([`crate::graph::Action::translation_unit`]: `.cu`, `.hip`, `.sycl`, `.cpp`, `.cppm`, ...),
//! with the real argv (the compiler first, the launcher left out), so clangd and other tools
//! work on `.cu` files.
//!
//! Who writes what (one writer per file and mode):
//! - the device phase (the build script) writes the package's database into the variant of the
//!   device cache ([`crate::layout::Variant::compile_commands`]) on every run, fresh actions
//!   included ([`write`]);
//! - under `cargo mcpp build`, the command line alone writes the copy, after cargo finishes (even
//!   when every build script was fresh): the databases of every selected package merged, in
//!   selection order, into `--compile-commands DIR`, or else into each manifest's
//!   `compile-commands` directory (the packages naming one directory merged into it) ([`merge`]);
//! - under plain `cargo build` (no `cargo mcpp build` side channel), the build script writes its
//!   own package's entries into its manifest's `compile-commands` directory when it runs (a fresh
//!   build script writes nothing: a deleted copy comes back with the next `cargo mcpp build`).
//!
//! Every file only when its content changed ([`crate::fingerprint::write_if_changed`]).

use crate::error::{Error, ErrorKind, Result};
use crate::graph::Action;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file name of the database.
pub const FILE_NAME: &str = "compile_commands.json";

/// One entry of the database: `directory`, `file`, `arguments`, `output` (all absolute paths).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The working directory of the compile.
    pub directory: PathBuf,
    /// The translation unit.
    pub file: PathBuf,
    /// The compiler, then its arguments (never the launcher).
    pub arguments: Vec<String>,
    /// The first output of the compile (its object, PTX, ...).
    pub output: Option<PathBuf>,
}

/// The manifest's `compile-commands` directory: relative to the package root (an absolute one
/// as written), `.` and `..` folded lexically, so two packages naming the workspace root
/// (`".."`) name one directory. `None` without the key.
pub fn manifest_dir(manifest: &crate::manifest::Manifest) -> Option<PathBuf> {
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
pub fn check_manifest_dir(manifest: &crate::manifest::Manifest) -> Result<()> {
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

/// The entries of `actions`, in plan order: one per action that compiles a translation unit.
pub fn entries(actions: &[Action]) -> Vec<Entry> {
    actions
        .iter()
        .filter_map(|a| {
            let file = a.translation_unit()?;
            let arguments = std::iter::once(a.tool.path.to_string_lossy().into_owned()).chain(a.args.iter().map(|x| x.to_string_lossy().into_owned())).collect();
            Some(Entry { directory: a.cwd.clone(), file: file.to_path_buf(), arguments, output: a.outputs.first().cloned() })
        })
        .collect()
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

/// Write the database of `actions` to `in_cache` and, when `copy_dir` is given, to
/// `<copy_dir>/compile_commands.json` too (the directory created); each only when changed.
/// Returns the paths written to (changed or not).
///
/// # Errors
/// [`ErrorKind::Io`] naming the path that cannot be written.
pub fn write(actions: &[Action], in_cache: &Path, copy_dir: Option<&Path>) -> Result<Vec<PathBuf>> {
    let text = render(&entries(actions))?;
    let mut paths = vec![in_cache.to_path_buf()];
    if let Some(dir) = copy_dir {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create the compile_commands.json directory", dir, e))?;
        paths.push(dir.join(FILE_NAME));
    }
    for p in &paths {
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("cannot create", parent, e))?;
        }
        crate::fingerprint::write_if_changed(p, &text)?;
    }
    Ok(paths)
}

/// Merge the databases `sources` (each a variant's `compile_commands.json`, in order; a missing
/// one is skipped: its package planned nothing yet) into `<dir>/compile_commands.json`, written
/// only when changed (the directory created); nothing is written when every source is missing
/// (no device phase ran yet: an existing copy is left as it is). Returns the file, whether it
/// was written, and the number of entries.
///
/// # Errors
/// [`ErrorKind::Io`] naming a source that cannot be read or parsed (remove it, or `cargo clean`)
/// or the copy that cannot be written.
pub fn merge(sources: &[PathBuf], dir: &Path) -> Result<(PathBuf, bool, usize)> {
    let mut all: Vec<Entry> = Vec::new();
    let mut found = false;
    for src in sources {
        let bytes = match std::fs::read(src) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("cannot read", src, e)),
        };
        let entries: Vec<Entry> = serde_json::from_slice(&bytes)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{}: not a compilation database written by cargo-mcpp: {e}", src.display())).help("remove the file (the next build writes it again) or run `cargo clean`"))?;
        all.extend(entries);
        found = true;
    }
    let path = dir.join(FILE_NAME);
    if !found {
        return Ok((path, false, 0));
    }
    let text = render(&all)?;
    let written = crate::fingerprint::write_if_changed(&path, &text)?;
    Ok((path, written, all.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Tool, ToolSource};

    fn action(input: &str, launcher: Option<&str>) -> Action {
        let mut a = crate::graph::test_action(&format!("x:{input}"), &[input, "/w/island.h"], &["/w/o.o"]);
        a.description = String::new();
        a.tool = Tool { name: "nvcc".into(), path: "/cuda/bin/nvcc".into(), version: String::new(), source: ToolSource::Path, env: Vec::new(), toolchain_package_root: None, launcher: launcher.map(PathBuf::from) };
        a.args = vec!["-c".into(), input.into(), "-o".into(), "/w/o.o".into()];
        a
    }

    #[test]
    fn translation_units_only_with_the_real_compiler_first() {
        let actions = [action("/p/k.cu", Some("/usr/bin/sccache")), action("/p/s.comp", None), action("/p/m.cppm", None)];
        let e = entries(&actions);
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!(e[0].file, PathBuf::from("/p/k.cu"));
        assert_eq!(e[0].arguments, ["/cuda/bin/nvcc", "-c", "/p/k.cu", "-o", "/w/o.o"]);
        assert_eq!(e[1].file, PathBuf::from("/p/m.cppm"));
        let text = String::from_utf8(render(&e).unwrap()).unwrap();
        assert!(!text.contains("sccache") && text.contains("\"directory\": \"/p\""), "{text}");
    }

    #[test]
    fn merge_concatenates_the_packages_and_rewrites_a_deleted_copy() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        std::fs::write(&a, render(&entries(&[action("/p/k.cu", None)])).unwrap()).unwrap();
        std::fs::write(&b, render(&entries(&[action("/q/m.cpp", None)])).unwrap()).unwrap();
        let out = dir.path().join("out");
        let sources = [a, dir.path().join("missing.json"), b];
        let (path, written, n) = merge(&sources, &out).unwrap();
        assert!(written && n == 2, "{n}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("/p/k.cu") && text.contains("/q/m.cpp"), "{text}");
        assert!(!merge(&sources, &out).unwrap().1, "unchanged: not written");
        std::fs::remove_file(&path).unwrap();
        assert!(merge(&sources, &out).unwrap().1 && path.is_file(), "a deleted copy is written again");
        assert!(!merge(&sources[1..2], &out).unwrap().1, "no source yet: the copy is left as it is");
        assert!(std::fs::read_to_string(&path).unwrap().contains("/q/m.cpp"));
        std::fs::write(&sources[0], "not json").unwrap();
        assert!(merge(&sources, &out).unwrap_err().to_string().contains("a.json"));
    }
}
