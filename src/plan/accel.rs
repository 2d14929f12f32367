//! The accelerator set of one build and where it came from: the choice (`--accel`,
//! `--no-accel`, the builder, or the manifest), the environment variables `cargo mcpp build`
//! sets for build scripts (`MCPP_ACCEL`, `MCPP_NO_ACCEL`), and docs.rs (`DOCS_RS`: the empty
//! set). One computation for the device phase (`pipeline`) and `cargo mcpp fetch`.

use crate::accel::AccelSet;
use crate::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::manifest::Manifest;

/// The environment variable `cargo mcpp build --accel SPEC` sets for build.rs.
pub const ACCEL_ENV: &str = "MCPP_ACCEL";
/// The environment variable `cargo mcpp build --no-accel` sets (to `1`) for build.rs.
pub const NO_ACCEL_ENV: &str = "MCPP_NO_ACCEL";

/// Where the accelerator set of one build comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AccelChoice {
    /// `[package.metadata.mcpp] accel`, unless the environment overrides it.
    #[default]
    Manifest,
    /// `--accel SPEC` / [`crate::Build::accel`].
    Spec(String),
    /// `--no-accel` / [`crate::Build::no_accel`]: the empty set; no device source compiles.
    NoAccel,
}

/// Whether this is a docs.rs build (`DOCS_RS` set): documentation only, so no device compiler
/// runs; the build has the empty accelerator set and its surface and bindings are generated
/// as for `MCPP_NO_ACCEL=1`, with nothing compiled or linked.
pub fn docs_rs(env: &Env) -> bool {
    env.get_nonempty(DOCS_RS_ENV).is_some()
}

/// The variable docs.rs sets for the builds it documents.
pub const DOCS_RS_ENV: &str = "DOCS_RS";

/// Resolve the accelerator set: the empty set under docs.rs ([`docs_rs`]), else the explicit choice, else `MCPP_NO_ACCEL` / `MCPP_ACCEL` from
/// the environment (set by `cargo mcpp build`), else the manifest.
///
/// # Errors
/// [`ErrorKind::Accel`] naming where the malformed string came from.
pub fn resolve_accel(choice: &AccelChoice, manifest: &Manifest, env: &Env) -> Result<AccelSet> {
    if docs_rs(env) {
        return Ok(AccelSet::none());
    }
    let (text, origin, key) = match choice {
        AccelChoice::NoAccel => return Ok(AccelSet::none()),
        AccelChoice::Spec(s) => (s.clone(), "--accel".to_string(), None),
        AccelChoice::Manifest => {
            if env.get_nonempty(NO_ACCEL_ENV).is_some() {
                return Ok(AccelSet::none());
            }
            match env.get(ACCEL_ENV) {
                Some(s) => (s, format!("the environment variable {ACCEL_ENV}"), None),
                None => (manifest.mcpp.accel.clone().unwrap_or_default(), manifest.path.display().to_string(), Some("package.metadata.mcpp.accel")),
            }
        }
    };
    AccelSet::parse(&text).map_err(|e| {
        let mut err = Error::new(ErrorKind::Accel, format!("malformed accelerator set from {origin}")).detail(e.to_string());
        if let Some(k) = key {
            err = err.file(manifest.at_col("accel")).key(k);
        }
        err.help("write a comma-separated set such as \"vulkan1.2\" or \"hip, cuda12.9+{sm_89}\" (README.md \"The accelerator set\")")
    })
}

/// Where the accelerator set came from when not from the manifest: `--accel` / the builder, or
/// the environment variable `cargo mcpp build` sets; `None` for the manifest (and `--no-accel`).
pub fn accel_origin(choice: &AccelChoice, env: &Env) -> Option<String> {
    match choice {
        AccelChoice::Spec(s) => Some(format!("--accel \"{}\"", crate::text::echo(s))),
        AccelChoice::NoAccel => None,
        AccelChoice::Manifest => env.get(ACCEL_ENV).filter(|_| env.get_nonempty(NO_ACCEL_ENV).is_none()).map(|v| format!("{ACCEL_ENV}=\"{}\" (`cargo mcpp build --accel`)", crate::text::echo(&v))),
    }
}
