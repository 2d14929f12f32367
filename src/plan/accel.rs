//! The accelerator set of one build and where it came from: the choice (`--accel`,
//! `--no-accel`, the builder, or the manifest), the environment variables `cargo mcpp build`
//! sets for build scripts (`MCPP_ACCEL`, `MCPP_NO_ACCEL`), and docs.rs (`DOCS_RS`: the empty
//! set). One computation for the device phase (`pipeline`) and `cargo mcpp fetch`.

use crate::config::accel::{AccelSet, Backend};
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::config::manifest::Manifest;

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
    env.docs_rs()
}

pub use crate::config::accel::{AccelOrigin, ACCEL_KEY};

/// Resolve the accelerator set: the empty set under docs.rs ([`docs_rs`]), else the explicit choice, else `MCPP_NO_ACCEL` / `MCPP_ACCEL` from
/// the environment (set by `cargo mcpp build`), else the manifest.
///
/// # Errors
/// [`ErrorKind::Accel`] naming where the malformed string came from.
pub fn resolve_accel(choice: &AccelChoice, manifest: &Manifest, env: &Env) -> Result<AccelSet> {
    resolve_accel_with_origin(choice, manifest, env).map(|(set, _)| set)
}

/// [`resolve_accel`], and where the set came from ([`AccelOrigin`]; `None` for the empty set
/// of `--no-accel`, `MCPP_NO_ACCEL` or docs.rs), for the refusals of checks the set's grammar
/// cannot make (a rule's, [`crate::rules::Rule::check_entry`]).
///
/// # Errors
/// As [`resolve_accel`].
pub fn resolve_accel_with_origin(choice: &AccelChoice, manifest: &Manifest, env: &Env) -> Result<(AccelSet, Option<AccelOrigin>)> {
    if docs_rs(env) {
        return Ok((AccelSet::none(), None));
    }
    let (text, origin) = match choice {
        AccelChoice::NoAccel => return Ok((AccelSet::none(), None)),
        AccelChoice::Spec(s) => (s.clone(), AccelOrigin { named: "--accel".to_string(), file: None, key: None, elsewhere: Some(format!("--accel \"{}\"", crate::text::echo(s))) }),
        AccelChoice::Manifest => {
            if env.get_nonempty(NO_ACCEL_ENV).is_some() {
                return Ok((AccelSet::none(), None));
            }
            match env.get(ACCEL_ENV) {
                Some(s) => {
                    let elsewhere = Some(format!("{ACCEL_ENV}=\"{}\" (`cargo mcpp build --accel`)", crate::text::echo(&s)));
                    (s, AccelOrigin { named: format!("the environment variable {ACCEL_ENV}"), file: None, key: None, elsewhere })
                }
                None => (
                    manifest.mcpp.accel.clone().unwrap_or_default(),
                    AccelOrigin { named: manifest.path.display().to_string(), file: Some(manifest.at_col("accel")), key: Some(ACCEL_KEY), elsewhere: None },
                ),
            }
        }
    };
    let set = AccelSet::parse(&text).map_err(|e| {
        origin.refusal(e.to_string()).help("write a comma-separated set such as \"vulkan1.2\" or \"hip, cuda12.9+{sm_89}\" (cargo-mcpp guide, \"The accelerator set\")")
    })?;
    Ok((set, Some(origin)))
}

/// `e`, a refusal of an entry, made a refusal of the set naming its origin: its message becomes
/// a detail of the origin's headline, its details and help are kept.
fn keyed(origin: Option<&AccelOrigin>, e: Error) -> Error {
    let mut refusal = match origin {
        Some(o) => o.refusal(e.message),
        None => Error::new(ErrorKind::Accel, e.message),
    };
    refusal.detail.extend(e.detail);
    refusal.help.extend(e.help);
    refusal
}

/// The refusal of an entry whose backend no rule of `registry` serves (a backend of a rule the
/// build script did not register, or a typo): the backends there are, and the nearest one.
fn unserved_backend(backend: Backend, registry: &[Box<dyn crate::rules::Rule>]) -> Error {
    let mut served: Vec<&str> = Vec::new();
    for r in registry {
        if !served.contains(&r.backend().name()) {
            served.push(r.backend().name());
        }
    }
    let name = backend.name();
    let nearest = served.iter().map(|s| (strsim::levenshtein(s, name), *s)).filter(|(d, _)| *d <= 2).min();
    let e = Error::new(ErrorKind::Accel, format!("the backend `{name}` is served by no rule of this build")).detail(format!("the backends this build's rules serve: {}", served.join(", ")));
    match nearest {
        Some((_, s)) => e.help(format!("did you mean `{s}`?")),
        None => e.help(format!("a rule crate serves a new backend: register its rule in build.rs (`mcpp_build::Build::rule`), or remove `{name}` from the set")),
    }
}

/// Every rule's check of its entries of `accel` ([`crate::rules::Rule::check_entry`]), each problem a
/// refusal of the set naming its origin (`--accel`, `MCPP_ACCEL`, the manifest's key).
/// `deferred`: the build script may register rules beyond `registry` (the command line's
/// checks), so a backend no rule of `registry` serves is left to it.
pub(crate) fn check_entries(accel: &AccelSet, origin: Option<&AccelOrigin>, registry: &[Box<dyn crate::rules::Rule>], deferred: bool) -> Vec<Error> {
    let mut out = Vec::new();
    for entry in &accel.entries {
        if !registry.iter().any(|r| r.backend() == entry.backend) {
            if deferred {
                continue;
            }
            out.push(keyed(origin, unserved_backend(entry.backend, registry)));
            continue;
        }
        for rule in registry.iter().filter(|r| r.backend() == entry.backend) {
            let Err(e) = rule.check_entry(entry) else { continue };
            let refusal = keyed(origin, e);
            if !out.iter().any(|o: &Error| o.detail == refusal.detail) {
                out.push(refusal);
            }
        }
    }
    out
}

/// The accelerator set of `choice` as a build takes it: [`resolve_accel_with_origin`] (the
/// grammar), then every rule's check of its entries (`check_entries`), each refusal naming
/// where the set came from. One parse, one check, for `cargo mcpp fetch` and `cargo mcpp pack`
/// as for the device phase's validation: a set the build refuses is refused by them too.
///
/// # Errors
/// [`ErrorKind::Accel`], every problem at once.
pub fn resolve_checked(choice: &AccelChoice, manifest: &Manifest, env: &Env) -> Result<AccelSet> {
    let (set, origin) = resolve_accel_with_origin(choice, manifest, env)?;
    // A backend only a build script's rule serves is the build script's to check.
    Error::all(check_entries(&set, origin.as_ref(), &crate::rules::registry(), true))?;
    Ok(set)
}
