//! Rules from outside cargo-mcpp: a crate implements [`DeviceRule`] (its extensions, its tool,
//! the argv for one source, what the output is) and a build script registers it with
//! `mcpp_build::Build::rule`. The engine adapts it to a [`Rule`] ([`ExternalRule`]) and runs it
//! as it runs its own: the tool is resolved in the one order (manifest `tools`, the rule's
//! variables, `MCPP_TOOL_<NAME>`, PATH with a warning), every action is fingerprinted with its
//! depfile, the output is a payload of the generated surface, and the rule's table
//! `[package.metadata.mcpp.<name>]` is checked key by key (`file:line:col`, the valid keys).
//!
//! The public items here are the rule author's API; `mcpp-build` re-exports them as
//! `mcpp_build::rule` (with its `engine` feature).

use super::options::CommonOptions;
use super::{DeviceSource, Rule, RuleContext, RulePlan};
use crate::config::accel::{AccelEntry, Backend};
use crate::config::manifest::{KeyDoc, Manifest, MCPP_TABLE};
use crate::engine::graph::{Action, External, Role};
use crate::error::{Error, ErrorKind, Result};
use crate::rules::options::RuleOptionsBox;
use crate::tool::ToolSpec;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A rule a crate outside cargo-mcpp provides: device sources with its extensions, compiled one
/// action per source by its tool, each making one output file that becomes a payload of the
/// generated surface (the accessor `<stem>_<ext>()`, as for GLSL: `double.spvasm` ->
/// `double_spvasm()`).
///
/// Registered in `build.rs` with `mcpp_build::Build::rule` (the `engine` feature). Its sources
/// are listed in `[package.metadata.mcpp] sources` like any other; they are compiled when the
/// accelerator set names its [`DeviceRule::backend`].
pub trait DeviceRule: Send + Sync + 'static {
    /// The rule's name: its options table `[package.metadata.mcpp.<name>]`, its action ids and
    /// messages (`spvasm`). Lowercase letters, digits and `-`; not a built-in rule's name.
    fn name(&self) -> &'static str;
    /// The accelerator backend whose entry selects the rule: a built-in one (`vulkan`) or a new
    /// one (`metal`), which the accelerator set may then name. Lowercase ASCII letters.
    fn backend(&self) -> &'static str;
    /// The file extensions it claims, without the dot (`["spvasm"]`); none a built-in rule or
    /// another registered rule claims.
    fn extensions(&self) -> &'static [&'static str];
    /// The tool it runs.
    fn tool(&self) -> ToolDecl;
    /// What each output is: how the surface checks and hands out its bytes.
    fn payload_kind(&self) -> PayloadKind;
    /// The extension of each output file (`spv`): the output of `a/b.x` is
    /// `<lane>/a/b.x.<extension>`.
    fn output_extension(&self) -> &'static str;
    /// The keys of its options table besides the shared ones (`includes`, `defines`,
    /// `optimize`, `flags`, `storage`), each with its type: a key not listed, or a value of
    /// another type, is refused naming `file:line:col`. Default: none.
    fn option_keys(&self) -> &'static [OptionKey] {
        &[]
    }
    /// Check the values of its options beyond their types. Each refusal naming a key
    /// ([`Refusal::key`]) is shown at that key's `file:line:col`. Default: none.
    fn check_options(&self, _options: &Options) -> Vec<Refusal> {
        Vec::new()
    }
    /// Check the version of its accelerator entry (`metal3` -> `Some("3")`). The refusal is
    /// shown as a refusal of the accelerator set, naming where the set came from. Default: any.
    ///
    /// # Errors
    /// A version the rule cannot compile for.
    fn check_accel(&self, _version: Option<&str>) -> Result<(), Refusal> {
        Ok(())
    }
    /// The arguments (after the program) that compile `job.source` into `job.output`. They are
    /// passed as they are, never through a shell.
    ///
    /// # Errors
    /// A refusal of this source or of the options (naming a key).
    fn command(&self, job: &Job<'_>) -> Result<CommandLine, Refusal>;
}

/// The program a [`DeviceRule`] runs, as the one resolver finds it: the manifest's
/// `[package.metadata.mcpp.tools] <name>`, `Build::tool`, the variables [`ToolDecl::env_vars`],
/// `MCPP_TOOL_<NAME>`, then PATH (with a warning). Its version output (`--version`) is part of
/// every action's fingerprint, so another version of the tool rebuilds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDecl {
    name: &'static str,
    programs: &'static [&'static str],
    env_vars: &'static [&'static str],
    version_args: &'static [&'static str],
    install_hint: &'static str,
}

impl ToolDecl {
    /// A tool named `name` (the key of `[package.metadata.mcpp.tools]` and the program looked
    /// for), its version printed by `--version`.
    pub const fn new(name: &'static str) -> ToolDecl {
        ToolDecl { name, programs: &[], env_vars: &[], version_args: &["--version"], install_hint: "" }
    }
    /// Program names looked for, in order (default: the tool's name).
    pub const fn programs(mut self, programs: &'static [&'static str]) -> ToolDecl {
        self.programs = programs;
        self
    }
    /// Environment variables that name the program, in order (`SPIRV_AS`).
    pub const fn env_vars(mut self, vars: &'static [&'static str]) -> ToolDecl {
        self.env_vars = vars;
        self
    }
    /// The arguments that make it print its version (default `--version`).
    pub const fn version_args(mut self, args: &'static [&'static str]) -> ToolDecl {
        self.version_args = args;
        self
    }
    /// How to install it, for the refusal when it is not found (`apt install spirv-tools`).
    pub const fn install_hint(mut self, hint: &'static str) -> ToolDecl {
        self.install_hint = hint;
        self
    }
    /// The tool's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> ToolSpec {
        let own: &'static [&'static str] = Box::leak(Box::new([self.name]));
        ToolSpec {
            name: self.name,
            programs: if self.programs.is_empty() { own } else { self.programs },
            env_vars: self.env_vars,
            version_args: self.version_args,
            install_hint: if self.install_hint.is_empty() { "install it, or name it in [package.metadata.mcpp.tools]" } else { self.install_hint },
            toolchain_package: None,
            toolkit: None,
        }
    }
}

/// What an output's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PayloadKind {
    /// 32-bit little-endian words (SPIR-V): a size that is a multiple of 4; Rust sees `&[u32]`.
    Words32,
    /// Bytes as they are; Rust sees `&[u8]`.
    Bytes,
    /// UTF-8 text with no NUL; Rust sees `&str`.
    Text,
}

impl PayloadKind {
    fn surface(self) -> crate::surface::PayloadKind {
        match self {
            PayloadKind::Words32 => crate::surface::PayloadKind::Words32,
            PayloadKind::Bytes => crate::surface::PayloadKind::Bytes,
            PayloadKind::Text => crate::surface::PayloadKind::Text,
        }
    }
}

/// The type of an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionKind {
    /// A TOML string.
    String,
    /// A TOML boolean.
    Bool,
    /// A TOML integer.
    Integer,
    /// A TOML array of strings.
    Strings,
}

impl OptionKind {
    fn describe(self) -> &'static str {
        match self {
            OptionKind::String => "a string",
            OptionKind::Bool => "a boolean",
            OptionKind::Integer => "an integer",
            OptionKind::Strings => "an array of strings",
        }
    }
}

/// One key of a rule's options table, documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionKey {
    key: &'static str,
    kind: OptionKind,
    default: &'static str,
    meaning: &'static str,
}

impl OptionKey {
    /// The key `key` (as written in the manifest, `target-env`) of type `kind`; `default` and
    /// `meaning` are what the refusal of an unknown key and the rule's documentation show.
    pub const fn new(key: &'static str, kind: OptionKind, default: &'static str, meaning: &'static str) -> OptionKey {
        OptionKey { key, kind, default, meaning }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum OptionValue {
    String(String),
    Bool(bool),
    Integer(i64),
    Strings(Vec<String>),
}

/// The values of a rule's own option keys ([`DeviceRule::option_keys`]) as the manifest and
/// `Build::option` set them, each already of its declared type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    values: BTreeMap<String, OptionValue>,
}

impl Options {
    /// The value of a [`OptionKind::String`] key; `None` when unset.
    pub fn string(&self, key: &str) -> Option<&str> {
        match self.values.get(key) {
            Some(OptionValue::String(s)) => Some(s),
            _ => None,
        }
    }
    /// The value of a [`OptionKind::Bool`] key; `None` when unset.
    pub fn bool(&self, key: &str) -> Option<bool> {
        match self.values.get(key) {
            Some(OptionValue::Bool(b)) => Some(*b),
            _ => None,
        }
    }
    /// The value of a [`OptionKind::Integer`] key; `None` when unset.
    pub fn integer(&self, key: &str) -> Option<i64> {
        match self.values.get(key) {
            Some(OptionValue::Integer(i)) => Some(*i),
            _ => None,
        }
    }
    /// The value of a [`OptionKind::Strings`] key; empty when unset.
    pub fn strings(&self, key: &str) -> &[String] {
        match self.values.get(key) {
            Some(OptionValue::Strings(v)) => v,
            _ => &[],
        }
    }
}

/// One source to compile, what [`DeviceRule::command`] gets.
#[derive(Debug)]
#[non_exhaustive]
pub struct Job<'a> {
    /// The source, absolute.
    pub source: &'a Path,
    /// The source relative to the package root, `/`-separated, as messages show it.
    pub rel: &'a str,
    /// The file the tool must write (absolute; its directory exists when the tool runs).
    pub output: &'a Path,
    /// Where the tool writes its depfile (Makefile form: `output: input...`) when the command
    /// says so ([`CommandLine::writes_depfile`]).
    pub depfile: &'a Path,
    /// The version of the accelerator entry the rule compiles for (`vulkan1.2` -> `"1.2"`).
    pub accel_version: Option<&'a str>,
    /// The rule's own options.
    pub options: &'a Options,
    /// The table's `includes`, resolved (absolute, existing), then the package's dependencies'
    /// exported include directories.
    pub includes: &'a [PathBuf],
    /// The table's `defines` (`NAME` -> value), in name order.
    pub defines: &'a BTreeMap<String, String>,
    /// The table's `flags`, in order (the rule decides where they go).
    pub flags: &'a [String],
    /// Whether to optimise: the table's `optimize`, else whether cargo's profile optimises.
    pub optimize: bool,
}

/// The arguments of one action, and whether the tool writes the depfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    args: Vec<OsString>,
    depfile: bool,
}

impl CommandLine {
    /// The arguments after the program, one argv element each.
    pub fn new<I, A>(args: I) -> CommandLine
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        CommandLine { args: args.into_iter().map(Into::into).collect(), depfile: false }
    }
    /// The tool writes [`Job::depfile`]: every file it lists is part of the action's
    /// fingerprint, so an edit of an included file rebuilds. Without it only the source is.
    pub fn writes_depfile(mut self) -> CommandLine {
        self.depfile = true;
        self
    }
}

/// A rule's refusal: what is wrong, the option key it is about (shown at its `file:line:col`)
/// and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    message: String,
    key: Option<String>,
    help: Vec<String>,
}

impl Refusal {
    /// A refusal saying `message` (one line, no trailing period).
    pub fn new(message: impl Into<String>) -> Refusal {
        Refusal { message: message.into(), key: None, help: Vec::new() }
    }
    /// About the option `key` of the rule's table.
    pub fn key(mut self, key: impl Into<String>) -> Refusal {
        self.key = Some(key.into());
        self
    }
    /// A line saying how to fix it.
    pub fn help(mut self, line: impl Into<String>) -> Refusal {
        self.help.push(line.into());
        self
    }
}

impl Refusal {
    /// The key it is about, if any.
    pub(crate) fn key_name(&self) -> Option<&str> {
        self.key.as_deref()
    }
    /// The help lines, for the engine's refusal.
    pub(crate) fn help_lines(&self) -> Vec<String> {
        self.help.clone()
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

/// The rules a build script registered, in order.
#[derive(Clone, Default)]
pub struct RegisteredRules {
    /// The rules, in registration order.
    pub rules: Vec<Arc<dyn DeviceRule>>,
    /// The build.rs line that registered each (`build.rs:4`), in the same order; a refusal of
    /// the registration names it. May be shorter than `rules` (a registration with no line).
    pub at: Vec<String>,
    /// Whether the build script may register rules beyond the known ones: true for the command
    /// line's checks before cargo runs the build scripts (`cargo mcpp build`), which cannot see
    /// them. A rule table, a backend, a source extension or a tool that no known rule has is
    /// then left to the build script, which takes it or refuses it.
    pub deferred: bool,
}

impl fmt::Debug for RegisteredRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredRules").field("rules", &self.rules.iter().map(|r| r.name()).collect::<Vec<_>>()).field("deferred", &self.deferred).finish()
    }
}

impl RegisteredRules {
    /// `rules`, registered by a build script.
    pub fn new(rules: Vec<Arc<dyn DeviceRule>>) -> RegisteredRules {
        RegisteredRules { rules, at: Vec::new(), deferred: false }
    }

    /// None known, more possible: the command line's checks ([`RegisteredRules::deferred`]).
    pub fn unknown() -> RegisteredRules {
        RegisteredRules { rules: Vec::new(), at: Vec::new(), deferred: true }
    }

    /// The registered rules as the engine's, each checked against `builtin` and the ones
    /// before it.
    ///
    /// # Errors
    /// [`ErrorKind::Usage`]: a name or an extension already taken, a name or backend of the
    /// wrong shape; the refusal names `Build::rule`.
    pub fn adapt(&self, builtin: &[Box<dyn Rule>]) -> Result<Vec<Box<dyn Rule>>> {
        let mut names: Vec<&str> = builtin.iter().map(|r| r.name()).collect();
        names.push("cxx");
        let mut claimed: Vec<(&str, &str)> = builtin.iter().flat_map(|r| r.extensions().iter().chain(r.constrained_extensions()).map(|e| (*e, r.name()))).collect();
        let mut out: Vec<Box<dyn Rule>> = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let name = rule.name();
            let at = self.at.get(i);
            let refuse = |message: String, help: &str| {
                let e = Error::new(ErrorKind::Usage, message).key("Build::rule").help(help.to_string());
                match at {
                    Some(at) => e.file(at),
                    None => e,
                }
            };
            if name.is_empty() || !name.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-') {
                return Err(refuse(format!("a registered rule is named `{}`, which is no rule name", crate::text::echo(name)), "a rule's name is lowercase letters, digits and `-` (`spvasm`); the rule crate must change it"));
            }
            if crate::config::manifest::PACKAGE_KEYS.iter().any(|k| k.key == name) {
                return Err(refuse(format!("a registered rule is named `{name}`, which is a key of [package.metadata.mcpp]"), "a rule's name is its options table, [package.metadata.mcpp.<name>]: the rule crate must choose another"));
            }
            if names.contains(&name) {
                return Err(refuse(format!("a registered rule is named `{name}`, which another rule of this build already has"), "register each rule once; a built-in rule cannot be replaced"));
            }
            let Some(backend) = Backend::named(rule.backend()) else {
                return Err(refuse(format!("the registered rule `{name}` names the backend `{}`, which is no backend name", crate::text::echo(rule.backend())), "a backend is lowercase ASCII letters (`vulkan`, `metal`); the rule crate must change it"));
            };
            for ext in rule.extensions() {
                if ext.is_empty() || !ext.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_') {
                    return Err(refuse(format!("the registered rule `{name}` claims the extension `{}`, which is no file extension it can match", crate::text::echo(ext)), "an extension is written without the dot, in lowercase letters, digits and `_` (`spvasm`); the rule crate must change it"));
                }
                if let Some((_, by)) = claimed.iter().find(|(e, _)| e == ext) {
                    return Err(refuse(format!("the registered rule `{name}` claims `.{ext}`, which the rule `{by}` claims"), "a file extension belongs to one rule; register one of the two"));
                }
                claimed.push((ext, name));
            }
            names.push(name);
            out.push(Box::new(ExternalRule::new(rule.clone(), backend)));
        }
        Ok(out)
    }
}

/// A [`DeviceRule`] as the engine's [`Rule`].
pub struct ExternalRule {
    rule: Arc<dyn DeviceRule>,
    backend: Backend,
    tools: &'static [ToolSpec],
    keys: &'static [KeyDoc],
}

impl ExternalRule {
    fn new(rule: Arc<dyn DeviceRule>, backend: Backend) -> ExternalRule {
        let tools: &'static [ToolSpec] = Box::leak(Box::new([rule.tool().spec()]));
        let mut keys: Vec<KeyDoc> = rule.option_keys().iter().map(|k| KeyDoc { key: k.key, default: k.default, meaning: k.meaning }).collect();
        keys.extend([
            CommonOptions::INCLUDES_DOC,
            CommonOptions::DEFINES_DOC,
            KeyDoc { key: "optimize", default: "the profile's", meaning: "optimisation on or off" },
            KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments, where the rule puts them" },
        ]);
        ExternalRule { rule, backend, tools, keys: Box::leak(keys.into_boxed_slice()) }
    }

    fn identifier(s: &DeviceSource) -> String {
        let stem = s.path.file_stem().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
        format!("{stem}_{}", s.ext)
    }

    /// Where the output of `s` goes in the rule's lane directory `lane`.
    fn output(&self, lane: &Path, s: &DeviceSource) -> PathBuf {
        lane.join(format!("{}.{}", s.rel, self.rule.output_extension()))
    }

    /// `r` as the engine's refusal: at its key's `file:line:col` when it names one.
    fn refusal(&self, manifest: &Manifest, kind: ErrorKind, r: Refusal) -> Error {
        let mut e = Error::new(kind, format!("{}: {}", self.rule.name(), r.message));
        if let Some(key) = &r.key {
            e = e.file(manifest.at_col(&format!("{}.{key}", self.rule.name()))).key(format!("{MCPP_TABLE}.{}.{key}", self.rule.name()));
        }
        e.help.extend(r.help);
        e
    }
}

/// What [`ExternalRule`] reads from its table: the shared keys and its own.
#[derive(Debug, Default)]
struct ExternalOptions {
    common: CommonOptions,
    own: Options,
}

impl Rule for ExternalRule {
    fn name(&self) -> &'static str {
        self.rule.name()
    }
    fn backend(&self) -> Backend {
        self.backend
    }
    fn extensions(&self) -> &'static [&'static str] {
        self.rule.extensions()
    }
    fn tools(&self) -> &'static [ToolSpec] {
        self.tools
    }
    fn option_keys(&self) -> &'static [KeyDoc] {
        self.keys
    }
    fn read_options(&self, manifest: &Manifest) -> (RuleOptionsBox, Vec<Error>) {
        let name = self.rule.name();
        let mut problems = Vec::new();
        let mut opts = ExternalOptions::default();
        let Some(table) = manifest.rule_table(name) else { return (RuleOptionsBox::new(opts), problems) };
        let declared = self.rule.option_keys();
        let valid: Vec<&str> = self.keys.iter().map(|k| k.key).collect();
        let mut shared = toml::Table::new();
        for (key, value) in table {
            if CommonOptions::KEYS.contains(&key.as_str()) {
                shared.insert(key.clone(), value.clone());
                continue;
            }
            let Some(decl) = declared.iter().find(|d| d.key == key) else {
                problems.push(manifest.unknown_rule_key(name, key, &valid));
                continue;
            };
            let read = match (decl.kind, value) {
                (OptionKind::String, toml::Value::String(s)) => Some(OptionValue::String(s.clone())),
                (OptionKind::Bool, toml::Value::Boolean(b)) => Some(OptionValue::Bool(*b)),
                (OptionKind::Integer, toml::Value::Integer(i)) => Some(OptionValue::Integer(*i)),
                (OptionKind::Strings, toml::Value::Array(items)) => items.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<Vec<_>>>().map(OptionValue::Strings),
                _ => None,
            };
            match read {
                Some(v) => {
                    opts.own.values.insert(key.clone(), v);
                }
                None => problems.push(manifest.rule_table_error(name, key, &format!("invalid type: {}, expected {}", value.type_str(), decl.kind.describe()))),
            }
        }
        match manifest.read_rule_table::<CommonOptions>(name, shared) {
            Ok(common) => opts.common = common,
            Err(e) => problems.push(e),
        }
        problems.extend(opts.common.problems(manifest, name));
        problems.extend(self.rule.check_options(&opts.own).into_iter().map(|r| self.refusal(manifest, ErrorKind::Manifest, r)));
        (RuleOptionsBox::new(opts), problems)
    }
    fn check_entry(&self, entry: &AccelEntry) -> Result<()> {
        self.rule.check_accel(entry.version.as_deref()).map_err(|r| {
            let mut e = Error::new(ErrorKind::Accel, format!("{}: {}", self.rule.name(), r.message));
            e.help.extend(r.help);
            e
        })
    }
    fn placeholders(&self, _manifest: &Manifest, _options: &RuleOptionsBox, sources: &[&DeviceSource]) -> Result<Vec<crate::surface::Payload>> {
        Ok(sources.iter().map(|s| crate::surface::Payload::empty(s.rel.clone(), Self::identifier(s), self.rule.payload_kind().surface())).collect())
    }
    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan> {
        let opts: &ExternalOptions = ctx.options()?;
        let name = self.rule.name();
        let (tool, warning) = crate::tool::resolve(&self.tools[0], ctx.tools, ctx.env, ctx.cache)?;
        let includes = opts.common.resolve_includes(ctx.manifest, name)?;
        let optimize = opts.common.optimize_or(ctx.facts.opt_level != crate::config::cargo_facts::OptLevel::O0);
        let lane = ctx.variant.lane_dir(name);
        let mut plan = RulePlan::default();
        plan.warnings.extend(warning);
        for s in sources {
            let out = self.output(&lane, s);
            let depfile = lane.join(format!("{}.d", s.rel));
            let job = Job {
                source: &s.path,
                rel: &s.rel,
                output: &out,
                depfile: &depfile,
                accel_version: ctx.accel.version.as_deref(),
                options: &opts.own,
                includes: &includes,
                defines: &opts.common.defines,
                flags: &opts.common.flags,
                optimize,
            };
            let command = self.rule.command(&job).map_err(|r| self.refusal(ctx.manifest, ErrorKind::Manifest, r).detail(format!("  (compiling {})", s.rel)))?;
            if command.args.iter().any(|a| a.to_string_lossy().contains('\0')) {
                return Err(Error::new(ErrorKind::Usage, format!("{name}: the rule's command for {} has a NUL character, which no process argument can carry", s.rel)).help("this is a defect of the rule crate; report it there"));
            }
            let action = Action::external(External {
                id: format!("{name}:{}", s.rel),
                description: format!("{} {}", tool.name, s.rel),
                role: Role::Source,
                tool: tool.clone(),
                args: command.args,
                cwd: ctx.manifest.dir().to_path_buf(),
                inputs: vec![s.path.clone()],
                outputs: vec![out.clone()],
            });
            plan.actions.push(if command.depfile { action.with_depfile(depfile, includes.clone()) } else { action });
            let (rel, id) = (s.rel.clone(), Self::identifier(s));
            plan.payloads.push(match self.rule.payload_kind() {
                PayloadKind::Words32 => crate::surface::Payload::words(rel, id, out),
                PayloadKind::Bytes => crate::surface::Payload::bytes(rel, id, out),
                PayloadKind::Text => crate::surface::Payload::text(rel, id, out),
            });
        }
        plan.tools.push(tool);
        Ok(plan)
    }
}
