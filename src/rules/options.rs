//! The options a rule's table `[package.metadata.mcpp.<rule>]` shares with the other rules'
//! (rule options belong to the rule): the shapes `includes`, `defines`, `optimize`
//! and `flags` are one type, [`CommonOptions`], with their checks; each rule's own options type
//! embeds it ([`RuleOptions`]) and is read by [`read`].
//!
//! serde's `flatten` does not combine with `deny_unknown_fields`, so [`read`] splits the raw
//! table instead ([`parse_all`]): every unknown key is refused (naming `file:line:col` and every
//! key of the table, shared ones included, in the documented order), then the shared keys are
//! read into [`CommonOptions`] and the rest into the rule's own struct (still
//! `deny_unknown_fields`), key by key through the manifest's one error path, so a wrong type
//! names its key and position and leaves the other keys read. [`read`] then runs the shared
//! checks and the rule's own over what did read: every problem of the table at once.

use crate::error::{Error, ErrorKind, Result};
use crate::config::manifest::{KeyDoc, Manifest, MCPP_TABLE};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// The option shapes every rule's table has: `includes`, `defines`, `optimize`, `flags`. What
/// each means for its compiler (the flag spelling, the default of `optimize`) is the rule's,
/// documented in its [`RuleOptions::KEYS`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CommonOptions {
    /// `includes`: include (or module search) directories as written, relative to the package
    /// root (which must hold them) or absolute; resolved by [`CommonOptions::resolve_includes`].
    #[serde(default)]
    pub includes: Vec<PathBuf>,
    /// `defines`: preprocessor definitions `NAME = "value"` (`-DNAME=value`), in name order;
    /// every name an identifier ([`read`] refuses another).
    #[serde(default)]
    pub defines: BTreeMap<String, String>,
    /// `optimize`: optimisation on or off; `None` leaves it to the rule's default
    /// ([`CommonOptions::optimize_or`]).
    pub optimize: Option<bool>,
    /// `flags`: extra arguments, one argv element each, in order, where the rule puts them.
    #[serde(default)]
    pub flags: Vec<String>,
}

impl CommonOptions {
    /// The shared keys as written in a table (what [`read`] takes out for this type).
    pub const KEYS: &'static [&'static str] = &["includes", "defines", "optimize", "flags"];

    /// The documentation of `includes` where it is a plain `-I` list (SPIR-V, CUDA).
    pub const INCLUDES_DOC: KeyDoc = KeyDoc { key: "includes", default: "`[]`", meaning: "include directories (`-I`), relative to the package root (inside it) or absolute" };

    /// The documentation of `defines`, the same for every rule.
    pub const DEFINES_DOC: KeyDoc = KeyDoc { key: "defines", default: "`{}`", meaning: "`NAME = \"value\"` (`-DNAME=value`); `NAME` must be an identifier" };

    /// The shared checks, every problem: a define name that is no identifier
    /// ([`crate::rules::host::define_name_refusal`]), a NUL character in a define value, a flag or
    /// an include directory (no process argument can carry one; the compiler would never start),
    /// and an include directory that does not exist or leaves the package
    /// ([`crate::rules::host::include_problems`]).
    /// Each names `file:line:col` of its key and the key (`<table>.flags[1]`).
    pub fn problems(&self, manifest: &Manifest, rule: &str) -> Vec<Error> {
        let mut out: Vec<Error> = self.defines.keys().filter_map(|name| crate::rules::host::define_name_refusal(manifest, rule, name)).collect();
        let nul = |key: String, what: &str| {
            Error::new(ErrorKind::Manifest, format!("{what} has a NUL character, which no process argument can carry"))
                .file(manifest.at_col(&format!("{rule}.{key}")))
                .key(format!("{MCPP_TABLE}.{rule}.{}", crate::text::echo(&key)))
                .help("remove the `\\u0000` from the value")
        };
        for name in self.defines.iter().filter(|(_, v)| v.contains('\0')).map(|(name, _)| name) {
            out.push(nul(format!("defines.{name}"), "the value of this define"));
        }
        for (i, _) in self.flags.iter().enumerate().filter(|(_, f)| f.contains('\0')) {
            out.push(nul(format!("flags[{i}]"), "this flag"));
        }
        for (i, _) in self.includes.iter().enumerate().filter(|(_, p)| p.as_os_str().to_string_lossy().contains('\0')) {
            out.push(nul(format!("includes[{i}]"), "this include directory"));
        }
        out.extend(crate::rules::host::include_problems(manifest, &format!("{MCPP_TABLE}.{rule}"), &self.includes));
        out.extend(crate::rules::host::flag_include_problems(manifest, rule, &self.flags));
        out
    }

    /// The include directories resolved against the package root, in order.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming `<table>.includes[i]` for a directory that does not exist
    /// or a relative one that leaves the package ([`crate::rules::host::resolve_includes`]).
    pub fn resolve_includes(&self, manifest: &Manifest, rule: &str) -> Result<Vec<PathBuf>> {
        crate::rules::host::resolve_includes(manifest, &format!("{MCPP_TABLE}.{rule}"), &self.includes)
    }

    /// `-DNAME=value` for every define, in name order (the spelling of every compiler here).
    pub fn define_args(&self) -> Vec<OsString> {
        self.defines.iter().map(|(k, v)| OsString::from(format!("-D{k}={v}"))).collect()
    }

    /// Whether to optimise: `optimize` when set, else the rule's `default`.
    pub fn optimize_or(&self, default: bool) -> bool {
        self.optimize.unwrap_or(default)
    }
}

/// A rule's options type: its own keys as a serde struct with `deny_unknown_fields`, and a
/// [`CommonOptions`] field marked `#[serde(skip)]` that [`parse_all`] fills from the shared keys.
pub trait RuleOptions: serde::de::DeserializeOwned + Default {
    /// Every key of the table, shared ones included, documented, in the order the guide's
    /// reference and the unknown-key refusal list them (what [`crate::rules::Rule::option_keys`]
    /// returns; a test holds it equal to the keys [`read`] accepts).
    const KEYS: &'static [KeyDoc];
    /// The shared shapes inside.
    fn common(&self) -> &CommonOptions;
    /// The same, for [`parse_all`] to fill.
    fn common_mut(&mut self) -> &mut CommonOptions;
    /// The rule's own checks of its values beyond serde's types, every problem, each naming its
    /// `file:line:col` and key. Default: none.
    fn problems(&self, _manifest: &Manifest, _rule: &str) -> Vec<Error> {
        Vec::new()
    }
}

/// Read the table of `rule` into `T` and check it: every problem of [`parse_all`] (unknown
/// keys, wrong types), then, over the keys that did parse, [`CommonOptions::problems`] and
/// [`RuleOptions::problems`], all at once.
///
/// # Errors
/// [`ErrorKind::Manifest`]: every problem, each naming its key and position.
pub fn read<T: RuleOptions>(manifest: &Manifest, rule: &str) -> Result<T> {
    let (opts, problems) = read_all(manifest, rule);
    Error::all(problems)?;
    Ok(opts)
}

/// [`read`] without the verdict: `T` as far as the table reads ([`parse_all`]) and every
/// problem of it, the shared checks and the rule's own included.
pub fn read_all<T: RuleOptions>(manifest: &Manifest, rule: &str) -> (T, Vec<Error>) {
    let (opts, mut problems): (T, _) = parse_all(manifest, rule);
    problems.extend(opts.common().problems(manifest, rule));
    problems.extend(opts.problems(manifest, rule));
    (opts, problems)
}

/// What [`crate::rules::Rule::read_options`] returns for a rule whose options type is `T`:
/// [`read_all`], the value boxed.
pub fn read_boxed<T: RuleOptions + Send + Sync + 'static>(manifest: &Manifest, rule: &str) -> (RuleOptionsBox, Vec<Error>) {
    let (opts, problems) = read_all::<T>(manifest, rule);
    (RuleOptionsBox::new(opts), problems)
}

/// What [`crate::rules::Rule::read_options`] returns for a rule whose options type `T` shares
/// none of the common shapes: the table read by serde ([`Manifest::rule_options`]), or
/// `T::default()` and the problem.
pub fn read_plain<T: serde::de::DeserializeOwned + Default + Send + Sync + 'static>(manifest: &Manifest, rule: &str) -> (RuleOptionsBox, Vec<Error>) {
    match manifest.rule_options::<T>(rule) {
        Ok(opts) => (RuleOptionsBox::new(opts), Vec::new()),
        Err(e) => (RuleOptionsBox::new(T::default()), vec![e]),
    }
}

/// A rule's options, read once per build into the rule's own type
/// ([`crate::rules::Rule::read_options`], run by [`crate::pipeline::validate`]) and kept in the
/// validated plan; the rule's other steps take the value back with [`RuleOptionsBox::get`]
/// (in a plan: [`crate::rules::RuleContext::options`]). Boxed because the registry holds the
/// rules as `dyn Rule`, each with its own options type.
pub struct RuleOptionsBox(Box<dyn std::any::Any + Send + Sync>);

impl RuleOptionsBox {
    /// Box `options`.
    pub fn new<T: std::any::Any + Send + Sync>(options: T) -> RuleOptionsBox {
        RuleOptionsBox(Box::new(options))
    }

    /// The options, as the rule's type `T`.
    ///
    /// # Errors
    /// The value is of another type: the rule asks for a type its
    /// [`crate::rules::Rule::read_options`] does not read (a defect of cargo-mcpp).
    pub fn get<T: std::any::Any>(&self) -> Result<&T> {
        self.0.downcast_ref().ok_or_else(|| {
            Error::new(ErrorKind::Manifest, format!("a rule's options were read as another type than `{}`", std::any::type_name::<T>())).help("this is a defect of cargo-mcpp; report it")
        })
    }
}

impl std::fmt::Debug for RuleOptionsBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuleOptionsBox(..)")
    }
}

/// Read the table of `rule` as far as it reads: `T` from the keys that parse (the shared keys
/// into [`CommonOptions`], the rest into the rule's own struct), and every problem of the
/// others, each at its key's `file:line:col`: an unknown key (the dotted key and every key
/// valid in the table: the documented ones `T` or [`CommonOptions`] accepts, in
/// [`RuleOptions::KEYS`] order, then any accepted but undocumented), or a value of a wrong type
/// (as [`Manifest::rule_options`] words it). A key with a problem is left at its default, so
/// the checks of the other keys still run ([`read`]) and one pass reports everything.
pub fn parse_all<T: RuleOptions>(manifest: &Manifest, rule: &str) -> (T, Vec<Error>) {
    let Some(table) = manifest.rule_table(rule) else { return (T::default(), Vec::new()) };
    let own: &[&str] = crate::config::manifest::serde_fields::<T>().unwrap_or(&[]);
    let accepted = |k: &str| CommonOptions::KEYS.contains(&k) || own.contains(&k);
    let mut problems = Vec::new();
    let mut valid: Vec<&str> = T::KEYS.iter().map(|d| d.key).filter(|k| accepted(k)).collect();
    for k in own.iter().chain(CommonOptions::KEYS) {
        if !valid.contains(k) {
            valid.push(k);
        }
    }
    for unknown in table.keys().filter(|k| !accepted(k)) {
        problems.push(manifest.unknown_rule_key(rule, unknown, &valid));
    }
    let (shared, rest): (toml::Table, toml::Table) = table.clone().into_iter().filter(|(k, _)| accepted(k)).partition(|(k, _)| CommonOptions::KEYS.contains(&k.as_str()));
    let common: CommonOptions = read_keys(manifest, rule, shared, &mut problems);
    let mut opts: T = read_keys(manifest, rule, rest, &mut problems);
    *opts.common_mut() = common;
    (opts, problems)
}

/// `table` (known keys of the table of `rule`) read into `U`, key by key: a key whose value
/// does not read is a problem (at its position) and left out; the rest are read together.
fn read_keys<U: serde::de::DeserializeOwned + Default>(manifest: &Manifest, rule: &str, table: toml::Table, problems: &mut Vec<Error>) -> U {
    let mut good = toml::Table::new();
    for (k, v) in table {
        let one: toml::Table = std::iter::once((k.clone(), v.clone())).collect();
        match manifest.read_rule_table::<U>(rule, one) {
            Ok(_) => {
                good.insert(k, v);
            }
            Err(e) => problems.push(e),
        }
    }
    manifest.read_rule_table(rule, good).unwrap_or_else(|e| {
        problems.push(e);
        U::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::spirv::{SpirvCompilerName, SpirvOptions};
    use std::path::Path;

    fn manifest(table: &str) -> Manifest {
        Manifest::parse(Path::new("/p/Cargo.toml"), &format!("[package]\nname = \"p\"\n[package.metadata.mcpp.spirv]\n{table}")).expect("a manifest")
    }

    #[test]
    fn include_directories_are_found_in_flags_in_every_spelling() {
        let flags: Vec<String> = ["-g", "-Ia", "-I", "b", "-isystem", "c", "-iquoted", "-idirafter", "e", "/If", "--include-path=g", "--include-path", "h", "--system-include=i", "-include", "x.h", "--include-pathology", "-I"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let got: Vec<(usize, String)> = crate::rules::host::flag_include_dirs(&flags).into_iter().map(|(i, p)| (i, p.display().to_string())).collect();
        let want: Vec<(usize, String)> = [(1, "a"), (3, "b"), (5, "c"), (6, "d"), (8, "e"), (9, "f"), (10, "g"), (12, "h"), (13, "i")].iter().map(|(i, s)| (*i, s.to_string())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_shared_keys_are_the_ones_serde_reads_into_common_options() {
        assert_eq!(crate::config::manifest::serde_fields::<CommonOptions>(), Some(CommonOptions::KEYS));
        // The rules' own types leave them out (serde skips the embedded field).
        for own in [crate::config::manifest::serde_fields::<SpirvOptions>(), crate::config::manifest::serde_fields::<crate::rules::slang::SlangOptions>(), crate::config::manifest::serde_fields::<crate::rules::cuda::CudaOptions>()] {
            let own = own.expect("a plain struct");
            assert!(CommonOptions::KEYS.iter().all(|k| !own.contains(k)), "{own:?}");
        }
    }

    #[test]
    fn a_table_is_split_into_the_shared_shapes_and_the_rules_own_keys() {
        let m = manifest("compiler = \"glslc\"\nincludes = [\"inc\"]\ndefines = { N = \"4\" }\ntarget-env = \"vulkan1.1\"\noptimize = false\nflags = [\"-g\", \"-x\"]\n");
        // `parse_all`: types only (`read` would also refuse the include directory, absent here).
        let (o, problems): (SpirvOptions, _) = parse_all(&m, "spirv");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!((o.compiler, o.target_env.as_deref()), (Some(SpirvCompilerName::Glslc), Some("vulkan1.1")));
        assert_eq!(
            o.common,
            CommonOptions { includes: vec![PathBuf::from("inc")], defines: [("N".to_string(), "4".to_string())].into(), optimize: Some(false), flags: vec!["-g".into(), "-x".into()] }
        );
        assert_eq!(o.common.define_args(), [OsString::from("-DN=4")]);
        assert!(!o.common.optimize_or(true));
        // Absent table: every default.
        let none = Manifest::parse(Path::new("/p/Cargo.toml"), "[package]\nname = \"p\"\n").unwrap();
        let d: SpirvOptions = read(&none, "spirv").unwrap();
        assert_eq!(d.common, CommonOptions::default());
        assert!(d.common.optimize_or(true));
    }

    #[test]
    fn an_unknown_key_is_refused_at_its_position_listing_every_key_in_the_documented_order() {
        let e = read::<SpirvOptions>(&manifest("includes = []\ncompilr = \"glslc\"\n"), "spirv").unwrap_err().to_string();
        assert!(e.starts_with("invalid manifest: unknown field `compilr`, expected one of `compiler`, `includes`, `defines`, `target-env`, `validate`, `optimize`, `flags`\n"), "{e}");
        assert!(e.contains("--> /p/Cargo.toml:5:1 (key `package.metadata.mcpp.spirv.compilr`)"), "{e}");
        assert!(e.contains("help: the keys valid in [package.metadata.mcpp.spirv] are `compiler`, `includes`,"), "{e}");
    }

    #[test]
    fn a_wrong_type_of_a_shared_or_own_key_names_that_key_and_its_position() {
        let e = read::<SpirvOptions>(&manifest("compiler = \"glslc\"\nincludes = 3\n"), "spirv").unwrap_err().to_string();
        assert!(e.contains("invalid type: integer `3`, expected a sequence") && e.contains("/p/Cargo.toml:5:1 (key `package.metadata.mcpp.spirv.includes`)"), "{e}");
        let e = read::<SpirvOptions>(&manifest("flags = [\"-g\", 7]\n"), "spirv").unwrap_err().to_string();
        assert!(e.contains("(key `package.metadata.mcpp.spirv.flags[1]`)"), "{e}");
        let e = read::<SpirvOptions>(&manifest("includes = []\ncompiler = \"shaderc\"\n"), "spirv").unwrap_err().to_string();
        assert!(e.contains("unknown variant `shaderc`") && e.contains("/p/Cargo.toml:5:1 (key `package.metadata.mcpp.spirv.compiler`)"), "{e}");
    }

    #[test]
    fn every_shared_problem_is_refused_at_once_naming_its_key() {
        let e = read::<SpirvOptions>(&manifest("defines = { \"A B\" = \"1\", C = \"x\\u0000y\" }\nflags = [\"-g\", \"a\\u0000\"]\nincludes = [\"i\\u0000\"]\n"), "spirv").unwrap_err();
        assert_eq!(e.problems(), 4, "{e}");
        let text = e.to_string();
        assert!(text.contains("`A B` is not a preprocessor macro name") && text.contains("(key `package.metadata.mcpp.spirv.defines.A B`)"), "{text}");
        assert!(text.contains("the value of this define has a NUL character") && text.contains("(key `package.metadata.mcpp.spirv.defines.C`)"), "{text}");
        assert!(text.contains("this flag has a NUL character") && text.contains("/p/Cargo.toml:5:16 (key `package.metadata.mcpp.spirv.flags[1]`)"), "{text}");
        assert!(text.contains("this include directory has a NUL character") && text.contains("(key `package.metadata.mcpp.spirv.includes[0]`)"), "{text}");
    }

    #[test]
    fn read_all_keeps_the_values_beside_the_problems_and_read_refuses_them() {
        let m = manifest("compiler = \"glslc\"\ndefines = { \"A B\" = \"1\" }\n");
        let (o, problems): (SpirvOptions, _) = read_all(&m, "spirv");
        assert_eq!(o.compiler, Some(SpirvCompilerName::Glslc), "which compiler (and so which toolchain package) is known beside the value's problem");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(read::<SpirvOptions>(&m, "spirv").unwrap_err().to_string().contains("`A B` is not a preprocessor macro name"));
        let slang = Manifest::parse(Path::new("/p/Cargo.toml"), "[package]\nname = \"p\"\n[package.metadata.mcpp.slang]\nentry = \"a b\"\ndefines = { \"X Y\" = \"1\" }\n").unwrap();
        let e = read::<crate::rules::slang::SlangOptions>(&slang, "slang").unwrap_err();
        assert_eq!(e.problems(), 2, "the shared problem and the rule's own, at once: {e}");
        assert!(e.to_string().contains("`X Y` is not a preprocessor macro name") && e.to_string().contains("`a b` is not a Slang function name"), "{e}");
    }

    #[test]
    fn a_boxed_value_is_given_back_as_its_own_type_and_refused_as_another() {
        let (boxed, problems) = read_boxed::<SpirvOptions>(&manifest("compiler = \"glslc\"\n"), "spirv");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(boxed.get::<SpirvOptions>().unwrap().compiler, Some(SpirvCompilerName::Glslc));
        let e = boxed.get::<crate::rules::cuda::CudaOptions>().unwrap_err().to_string();
        assert!(e.contains("read as another type than `cargo_mcpp::rules::cuda::CudaOptions`") && e.contains("a defect of cargo-mcpp"), "{e}");
    }

    #[test]
    fn a_key_that_does_not_read_leaves_the_others_read_and_checked() {
        // Two unknown keys, a wrong type of a shared key and of an own key: each reported, and
        // the define that did read is still checked.
        let m = manifest("includ = []\nzzz = 1\nflags = 3\ncompiler = \"shaderc\"\ndefines = { \"1BAD\" = \"1\" }\ntarget-env = \"vulkan1.1\"\n");
        let (o, problems): (SpirvOptions, _) = parse_all(&m, "spirv");
        assert_eq!((o.target_env.as_deref(), o.compiler), (Some("vulkan1.1"), None), "the keys that read are kept");
        assert_eq!(problems.len(), 4, "{problems:?}");
        let e = read::<SpirvOptions>(&m, "spirv").unwrap_err();
        assert_eq!(e.problems(), 5, "{e}");
        let t = e.to_string();
        for want in ["unknown field `includ`", "unknown field `zzz`", "(key `package.metadata.mcpp.spirv.flags`)", "unknown variant `shaderc`", "`1BAD` is not a preprocessor macro name"] {
            assert!(t.contains(want), "{want}: {t}");
        }
    }
}
