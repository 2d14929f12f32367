//! Facts and floors: a rule measures something about the machine (the CUDA version the driver
//! supports, the HIP runtime's version, the Vulkan loader's API version) and states the floor
//! its output needs; [`require`] compares the two and refuses in one shape for every rule.
//!
//! A fact has a name (`cuda-driver`), a version and where it was read. A floor has the same
//! name, a [`Relation`] and a version, and says who needs it. A probe that reaches no answer
//! states no fact, and nothing is refused then. `MCPP_FACT_<NAME>` (the name upper-cased,
//! `-` as `_`) states the fact by hand instead of probing: the version of the machine the
//! program will run on when that is not the build machine, or `none` to state none.

use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use std::fmt;
use std::path::PathBuf;

/// A version as dot-separated numbers (`13.0`, `5.2.21153`); missing parts compare as 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(pub Vec<u64>);

impl Version {
    /// `"12.8"` -> `[12, 8]`; `None` for an empty part or one that is not a number.
    pub fn parse(text: &str) -> Option<Version> {
        let parts: Option<Vec<u64>> = text.trim().split('.').map(|p| p.parse().ok()).collect();
        parts.filter(|p| !p.is_empty()).map(Version)
    }

    /// The part at `i`, 0 when absent.
    fn part(&self, i: usize) -> u64 {
        self.0.get(i).copied().unwrap_or(0)
    }

    /// Compare part by part, padding the shorter with zeros.
    fn cmp_to(&self, other: &Version) -> std::cmp::Ordering {
        let n = self.0.len().max(other.0.len());
        (0..n).map(|i| self.part(i).cmp(&other.part(i))).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u64::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

/// How a fact must relate to its floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// The fact's version is the floor's or newer.
    AtLeast,
    /// The fact's major version is the floor's or newer (minor versions within one major are
    /// compatible, as CUDA's runtimes are with its drivers).
    MajorAtLeast,
}

impl Relation {
    /// Whether `fact` satisfies `floor` under this relation.
    pub fn holds(self, fact: &Version, floor: &Version) -> bool {
        match self {
            Relation::AtLeast => fact.cmp_to(floor).is_ge(),
            Relation::MajorAtLeast => fact.part(0) >= floor.part(0),
        }
    }

    /// The words for messages: `at least 5.2`, `major version at least 13`.
    fn describe(self, floor: &Version) -> String {
        match self {
            Relation::AtLeast => format!("at least {floor}"),
            Relation::MajorAtLeast => format!("a major version of at least {}", floor.part(0)),
        }
    }
}

/// A fact as read: its version and where it came from (`libcuda.so.1 (cuDriverGetVersion)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The version read.
    pub version: Version,
    /// Where it was read, for messages.
    pub source: String,
}

/// What a rule needs of a fact.
#[derive(Debug, Clone)]
pub struct Floor {
    /// The fact's name (`cuda-driver`, `hip-runtime`, `vulkan-loader`).
    pub fact: &'static str,
    /// What the fact is, in words (`the CUDA version this machine's driver supports`).
    pub what: &'static str,
    /// How the fact must relate to [`Floor::version`].
    pub relation: Relation,
    /// The floor.
    pub version: Version,
    /// Who needs it (`the CUDA toolkit 13.0 at /usr/local/cuda`).
    pub needed_by: String,
    /// Why it is needed: what fails otherwise.
    pub why: String,
    /// The way out.
    pub help: String,
    /// The file to name (the manifest, the toolkit).
    pub file: Option<PathBuf>,
    /// The key to name (`package.metadata.mcpp.accel`).
    pub key: Option<String>,
}

/// The variable that states the fact `name` by hand: `MCPP_FACT_CUDA_DRIVER` for `cuda-driver`.
pub fn variable(name: &str) -> String {
    format!("MCPP_FACT_{}", name.to_ascii_uppercase().replace('-', "_"))
}

/// Read the fact `floor.fact` (the variable [`variable`] names when set, else `probe`) and
/// compare it with the floor. Returns what was read (`None`: no fact, nothing compared).
///
/// # Errors
/// [`ErrorKind::Accel`] when the fact does not satisfy the floor: one shape for every fact
/// (`<what> is <fact> (<source>), and <needed by> needs <relation>`), naming the floor's file
/// and key, with its reason and way out; also for a variable that is neither a
/// version nor `none`.
pub fn require(floor: &Floor, env: &Env, probe: impl FnOnce() -> Option<Reading>) -> Result<Option<Reading>> {
    let var = variable(floor.fact);
    let reading = match env.get(&var) {
        Some(v) if v.trim() == "none" => None,
        Some(v) => match Version::parse(&v) {
            Some(version) => Some(Reading { version, source: format!("stated by {var}") }),
            None => {
                return Err(Error::new(ErrorKind::Accel, format!("{var} = `{}` is no version", crate::text::echo(&v)))
                    .key(var.clone())
                    .help(format!("write a version such as \"{}\", or \"none\" to state no fact, or unset {var} to read it from this machine", floor.version)))
            }
        },
        None => probe(),
    };
    let Some(r) = reading else { return Ok(None) };
    if floor.relation.holds(&r.version, &floor.version) {
        return Ok(Some(r));
    }
    let mut e = Error::new(ErrorKind::Accel, format!("{} is {} ({}), and {} needs {}", floor.what, r.version, r.source, floor.needed_by, floor.relation.describe(&floor.version)))
        .detail(floor.why.clone())
        .detail(format!("(the fact `{}` against its floor; {var} states it by hand for a program that runs on another machine)", floor.fact))
        .help(floor.help.clone());
    if let Some(f) = &floor.file {
        e = e.file(f);
    }
    if let Some(k) = &floor.key {
        e = e.key(k.clone());
    }
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(relation: Relation, v: &str) -> Floor {
        Floor {
            fact: "test-runtime",
            what: "the test runtime",
            relation,
            version: Version::parse(v).unwrap(),
            needed_by: "the test entry".into(),
            why: "an older runtime fails at its first call".into(),
            help: "update it".into(),
            file: Some("/p/Cargo.toml".into()),
            key: Some("package.metadata.mcpp.accel".into()),
        }
    }

    fn read(v: &str) -> Option<Reading> {
        Some(Reading { version: Version::parse(v).unwrap(), source: "a probe".into() })
    }

    #[test]
    fn versions_parse_and_compare_part_by_part() {
        assert_eq!(Version::parse("5.2.21153"), Some(Version(vec![5, 2, 21153])));
        assert!(Version::parse("5.x").is_none() && Version::parse("").is_none() && Version::parse("5.").is_none());
        let v = |s| Version::parse(s).unwrap();
        assert!(Relation::AtLeast.holds(&v("1.3"), &v("1.3.0")) && Relation::AtLeast.holds(&v("1.10"), &v("1.9")));
        assert!(!Relation::AtLeast.holds(&v("1.2.999"), &v("1.3")));
        assert!(Relation::MajorAtLeast.holds(&v("13.0"), &v("13.5")) && !Relation::MajorAtLeast.holds(&v("12.8"), &v("13.0")));
    }

    #[test]
    fn a_fact_below_its_floor_is_refused_in_one_shape_and_no_fact_refuses_nothing() {
        let env = Env::empty();
        assert!(require(&floor(Relation::AtLeast, "5.2"), &env, || read("5.2.21153")).unwrap().is_some());
        assert!(require(&floor(Relation::AtLeast, "5.2"), &env, || None).unwrap().is_none(), "no probe answer, no refusal");
        let e = require(&floor(Relation::AtLeast, "5.3"), &env, || read("5.2.21153")).unwrap_err().to_string();
        assert!(e.contains("the test runtime is 5.2.21153 (a probe), and the test entry needs at least 5.3"), "{e}");
        assert!(e.contains("an older runtime fails") && e.contains("MCPP_FACT_TEST_RUNTIME") && e.contains("update it") && e.contains("/p/Cargo.toml"), "{e}");
        let e = require(&floor(Relation::MajorAtLeast, "13.0"), &env, || read("12.8")).unwrap_err().to_string();
        assert!(e.contains("is 12.8 (a probe), and the test entry needs a major version of at least 13"), "{e}");
    }

    #[test]
    fn the_variable_states_the_fact_instead_of_the_probe() {
        let mut env = Env::empty();
        env.set("MCPP_FACT_TEST_RUNTIME", "6.0");
        let probed = std::cell::Cell::new(false);
        let r = require(&floor(Relation::AtLeast, "5.3"), &env, || {
            probed.set(true);
            read("5.2")
        });
        assert_eq!(r.unwrap().unwrap().source, "stated by MCPP_FACT_TEST_RUNTIME");
        assert!(!probed.get(), "a stated fact is not probed");
        env.set("MCPP_FACT_TEST_RUNTIME", "none");
        assert!(require(&floor(Relation::AtLeast, "5.3"), &env, || read("5.2")).unwrap().is_none());
        env.set("MCPP_FACT_TEST_RUNTIME", "new");
        let e = require(&floor(Relation::AtLeast, "5.3"), &env, || read("5.2")).unwrap_err().to_string();
        assert!(e.contains("MCPP_FACT_TEST_RUNTIME = `new` is no version"), "{e}");
    }
}
