//! `compile_commands.json` (issue 14; the JSON Compilation Database of Clang's tooling,
//! <https://clang.llvm.org/docs/JSONCompilationDatabase.html>) for every device and host C++
//! translation unit the device phase plans: each planned action that compiles one
//! ([`crate::graph::Action::translation_unit`]: `.cu`, `.hip`, `.sycl`, `.cpp`, `.cppm`, ...),
//! with the real argv (the compiler first, the launcher left out), so clangd and other tools
//! work on `.cu` files. Written by [`write`] into the variant of the device cache
//! ([`crate::layout::Variant::compile_commands`]) on every build (fresh actions included), and
//! copied into the directory `--compile-commands DIR` (`MCPP_COMPILE_COMMANDS`) or the manifest's
//! `compile-commands` names; both only when the content changed
//! ([`crate::fingerprint::write_if_changed`]).

use crate::error::{Error, ErrorKind, Result};
use crate::graph::Action;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The variable `cargo mcpp build --compile-commands DIR` sets for the build scripts: the
/// directory (absolute) that gets a copy of the database; it wins over the manifest key.
pub const COMPILE_COMMANDS_ENV: &str = "MCPP_COMPILE_COMMANDS";

/// The file name of the database.
pub const FILE_NAME: &str = "compile_commands.json";

/// One entry of the database: `directory`, `file`, `arguments`, `output` (all absolute paths).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Role;
    use crate::tool::{Tool, ToolSource};

    fn action(input: &str, launcher: Option<&str>) -> Action {
        Action {
            id: format!("x:{input}"),
            description: String::new(),
            role: Role::Object,
            tool: Tool { name: "nvcc".into(), path: "/cuda/bin/nvcc".into(), version: String::new(), source: ToolSource::Path, env: Vec::new(), toolchain_package_root: None, launcher: launcher.map(PathBuf::from) },
            args: vec!["-c".into(), input.into(), "-o".into(), "/w/o.o".into()],
            cwd: "/p".into(),
            inputs: vec![PathBuf::from(input), PathBuf::from("/w/island.h")],
            outputs: vec!["/w/o.o".into()],
            depfile: None,
            include_dirs: Vec::new(),
            deps: Vec::new(),
            builtin: None,
            expect: None,
        }
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
}
