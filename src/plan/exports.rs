//! Include directories shared between packages the way `-sys` crates share theirs: a package
//! with `[package] links = "shaderlib"` and `export-includes = ["shaders/include"]` prints
//! `cargo::metadata=MCPP_INCLUDE=<dirs>` ([`export_directive`]); cargo passes it to the build
//! script of every package depending on it directly as `DEP_SHADERLIB_MCPP_INCLUDE`; a package
//! naming `include-from = ["shaderlib"]` reads it ([`dependency_includes`]) and every rule
//! searches those directories after its own `includes` ([`crate::rules::host::resolve_includes`]).
//! A header read there is in the compiler's depfile like any other, so an edit to it reruns
//! the dependent's build script (a rerun line) and recompiles exactly its includers.

use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::config::manifest::{Manifest, MCPP_TABLE};
use std::path::{Path, PathBuf};

/// The metadata key cargo turns into `DEP_<LINKS>_MCPP_INCLUDE`.
pub const METADATA_KEY: &str = "MCPP_INCLUDE";

/// The variable cargo sets in a dependent's build script for the `links` name `links`:
/// `DEP_<LINKS>_MCPP_INCLUDE`, the name upper-cased with `-` as `_` (cargo's rule).
pub fn dep_variable(links: &str) -> String {
    format!("DEP_{}_{METADATA_KEY}", links.to_uppercase().replace('-', "_"))
}

/// Every problem of `export-includes` and `include-from`, before anything runs: an export
/// without `[package] links` (cargo passes metadata only from a `links` package), an exported
/// directory that does not exist, leaves the package, or holds the path list separator, and an
/// `include-from` name that is no `links` name.
pub fn problems(manifest: &Manifest) -> Vec<Error> {
    let mut out = Vec::new();
    let exports = &manifest.mcpp.export_includes;
    if !exports.is_empty() && manifest.links.is_none() {
        out.push(
            Error::new(ErrorKind::Manifest, "`export-includes` needs `links` in [package]")
                .file(manifest.at_col("export-includes"))
                .key(format!("{MCPP_TABLE}.export-includes"))
                .detail("cargo passes a build script's metadata only from a package with `links` to the build scripts of the packages depending on it")
                .help(format!("add `links = \"{}\"` to [package] (the name dependents write in `include-from`)", manifest.package_name)),
        );
    }
    for (i, dir) in exports.iter().enumerate() {
        let key = format!("{MCPP_TABLE}.export-includes[{i}]");
        let at = manifest.at_col(&format!("export-includes[{i}]"));
        if dir.is_absolute() {
            out.push(
                Error::new(ErrorKind::Manifest, format!("exported include directory `{}` is absolute", crate::text::echo_path(dir)))
                    .file(at)
                    .key(key)
                    .help("export a directory of this package, relative to its root"),
            );
            continue;
        }
        match crate::sources::walk::package_dir(manifest.dir(), Path::new(&at), &key, dir) {
            Ok(abs) if std::env::join_paths([&abs]).is_err() => out.push(
                Error::new(ErrorKind::Manifest, format!("exported include directory `{}` holds the path list separator", crate::text::echo_path(&abs)))
                    .file(at)
                    .key(key)
                    .help("rename the directory: the exported list is one variable"),
            ),
            Ok(_) => {}
            Err(e) => out.push(e),
        }
    }
    for (i, name) in manifest.mcpp.include_from.iter().enumerate() {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            out.push(
                Error::new(ErrorKind::Manifest, format!("`{}` is not a `links` name", crate::text::echo(name)))
                    .file(manifest.at_col(&format!("include-from[{i}]")))
                    .key(format!("{MCPP_TABLE}.include-from[{i}]"))
                    .help("write the `links` value of a dependency's [package] (letters, digits, `-`, `_`)"),
            );
        }
    }
    out
}

/// The `cargo::metadata` value of `export-includes`: the directories, absolute, joined as the
/// platform's path list; `None` when the package exports none.
///
/// # Errors
/// As [`problems`] (checked again here: the build script is where the value is printed).
pub fn export_directive(manifest: &Manifest) -> Result<Option<String>> {
    if manifest.mcpp.export_includes.is_empty() {
        return Ok(None);
    }
    Error::all(problems(manifest))?;
    let dirs: Vec<PathBuf> = manifest.mcpp.export_includes.iter().map(|d| manifest.dir().join(d)).collect();
    let joined = std::env::join_paths(&dirs).map_err(|e| Error::new(ErrorKind::Manifest, format!("the exported include directories cannot be one path list: {e}")).key(format!("{MCPP_TABLE}.export-includes")))?;
    Ok(Some(joined.to_string_lossy().into_owned()))
}

/// The include directories of every `include-from` name, in order, from
/// `DEP_<LINKS>_MCPP_INCLUDE` (read through `env`, so its change reruns the build script).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `include-from[i]`: the variable is unset (the dependency is
/// not a direct one, has another `links`, or exports nothing), or names a directory that does
/// not exist.
pub fn dependency_includes(manifest: &Manifest, env: &Env) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, name) in manifest.mcpp.include_from.iter().enumerate() {
        let var = dep_variable(name);
        let at = manifest.at_col(&format!("include-from[{i}]"));
        let key = format!("{MCPP_TABLE}.include-from[{i}]");
        let Some(value) = env.get_os(&var).filter(|v| !v.is_empty()) else {
            problems.push(
                Error::new(ErrorKind::Manifest, format!("no dependency exports include directories under the `links` name `{}`", crate::text::echo(name)))
                    .file(at)
                    .key(key)
                    .detail(format!("`{var}` is not set in the build script's environment"))
                    .help(format!("depend directly on the package with `links = \"{}\"` in [dependencies], and give it `export-includes` in [package.metadata.mcpp]", crate::text::echo(name))),
            );
            continue;
        };
        for dir in std::env::split_paths(&value) {
            if !dir.is_dir() {
                problems.push(
                    Error::new(ErrorKind::Manifest, format!("`{var}` names `{}`, which is not a directory", crate::text::echo_path(&dir)))
                        .file(at.clone())
                        .key(key.clone())
                        .help("build the dependency again (`cargo clean -p <dependency>`), or fix its `export-includes`"),
                );
            } else if !out.contains(&dir) {
                out.push(dir);
            }
        }
    }
    Error::all(problems)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_is_cargos_spelling_of_the_links_name() {
        assert_eq!(dep_variable("shader-lib"), "DEP_SHADER_LIB_MCPP_INCLUDE");
        assert_eq!(dep_variable("z"), "DEP_Z_MCPP_INCLUDE");
    }
}
