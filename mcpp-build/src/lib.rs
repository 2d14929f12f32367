//! The device phase of a crate's `build.rs`: compile the crate's shaders and kernels
//! (`[package.metadata.mcpp]` in its `Cargo.toml`) and generate their Rust surface in `OUT_DIR`.
//!
//! ```no_run
//! // build.rs: `fn main() { mcpp_build::build(); }`
//! mcpp_build::build();
//! ```
//!
//! [`Build`] gives finer control (accelerator set, tools, environment, jobs, optimisation), and
//! sets manifest values computed in build.rs (a rule's includes, defines, flags and other
//! keys; the package's storage and module name).
//!
//! The work is done by the cargo-mcpp *engine*, in one of two places:
//! - **in the build script** with the `engine` feature (`mcpp-build = { version = "0.1",
//!   features = ["engine"] }`). Nothing needs to be installed. Use it for a library: its
//!   dependents build it with a plain `cargo build`. The `bindgen` feature adds the Rust
//!   bindings of a CUDA or HIP island; the `wgsl` feature adds the WGSL translator (naga) for
//!   `.wgsl` shaders.
//! - **in the installed `cargo-mcpp`** without it. This crate then has no dependencies, so a
//!   `cargo build` with nothing to do stays fast. Use it for an application whose developers
//!   run `cargo install cargo-mcpp`. The engine is `Build::engine`'s path, else `CARGO_MCPP`,
//!   else `$CARGO_HOME/bin/cargo-mcpp` (never a program found on `PATH`). It must be the
//!   version of this crate.
//!
//! Under docs.rs (`DOCS_RS` set) no compiler runs and the surface is still generated, so the
//! crate's documentation builds.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable naming the engine (a `cargo-mcpp` executable).
#[doc(hidden)]
pub const ENGINE_ENV: &str = "CARGO_MCPP";

/// The first line an engine prints, followed by its version.
#[doc(hidden)]
pub const ENGINE_HANDSHAKE: &str = "mcpp-engine=";

/// This crate's version; the engine runs only requests of its own version.
#[doc(hidden)]
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The version of the request format ([`Build::request`]).
#[doc(hidden)]
pub const REQUEST_FORMAT: u32 = 2;

/// The variable naming `cargo mcpp build`'s progress channel (a Unix socket taking one JSON
/// event per line): a failure of this crate itself (no engine) is sent there.
#[doc(hidden)]
pub const PROGRESS_ENV: &str = "MCPP_PROGRESS_SOCKET";

/// `s` as a JSON string literal.
fn json(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The progress channel's `failed` event for `package` (`{"event":"failed","package":...,
/// "exit_code":...,"message":...}`), one line without its newline.
#[doc(hidden)]
pub fn failure_event(package: &str, exit_code: i32, message: &str) -> String {
    format!(
        "{{\"event\":\"failed\",\"package\":{},\"exit_code\":{exit_code},\"message\":{}}}",
        json(package),
        json(message)
    )
}

/// Send this crate's own failure to `cargo mcpp build`'s progress channel, when there is one.
fn report_failure(code: i32, message: &str) {
    #[cfg(unix)]
    if let Some(path) = std::env::var_os(PROGRESS_ENV).filter(|p| !p.is_empty()) {
        use std::io::Write;
        let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
        if let Ok(mut s) = std::os::unix::net::UnixStream::connect(path) {
            let _ = writeln!(s, "{}", failure_event(&package, code, message));
        }
    }
    #[cfg(not(unix))]
    let _ = (code, message);
}

/// Where the accelerator set comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Accel {
    #[default]
    Manifest,
    Spec(String),
    None,
}

/// A value of a manifest key set in build.rs ([`Build::option`]): what a TOML value of that key
/// would be. Made from `&str`/`String` (a string), `bool`, an integer, or a list of strings
/// (`Vec<String>`, `Vec<&str>`, `&[&str]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string (`compiler = "glslc"`).
    String(String),
    /// A boolean (`optimize = true`).
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A list of strings (`arch = ["sm_80", "sm_90"]`).
    List(Vec<String>),
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::String(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::String(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Int(v.into())
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v.into())
    }
}
impl From<Vec<String>> for Value {
    fn from(v: Vec<String>) -> Value {
        Value::List(v)
    }
}
impl From<Vec<&str>> for Value {
    fn from(v: Vec<&str>) -> Value {
        Value::List(v.into_iter().map(str::to_string).collect())
    }
}
impl<const N: usize> From<[&str; N]> for Value {
    fn from(v: [&str; N]) -> Value {
        Value::List(v.iter().map(|s| s.to_string()).collect())
    }
}
impl From<&[&str]> for Value {
    fn from(v: &[&str]) -> Value {
        Value::List(v.iter().map(|s| s.to_string()).collect())
    }
}

impl Value {
    /// The value as JSON.
    fn json(&self) -> String {
        match self {
            Value::String(s) => json(s),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::List(l) => format!(
                "[{}]",
                l.iter().map(|s| json(s)).collect::<Vec<_>>().join(",")
            ),
        }
    }
}

/// One manifest value set in build.rs, in call order, with the calling line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Setting {
    /// `Build::include(rule, dir)`.
    Include { rule: String, dir: PathBuf },
    /// `Build::define(rule, name, value)`.
    Define {
        rule: String,
        name: String,
        value: String,
    },
    /// `Build::flag(rule, flag)`.
    Flag { rule: String, flag: String },
    /// `Build::option(rule, key, value)`.
    Option {
        rule: String,
        key: String,
        value: Value,
    },
    /// `Build::storage(value)`.
    Storage(String),
    /// `Build::module_name(name)`.
    ModuleName(String),
}

/// The calling line of a `#[track_caller]` method (`build.rs:12`).
#[track_caller]
fn caller() -> String {
    let at = std::panic::Location::caller();
    format!("{}:{}", at.file(), at.line())
}

/// The device phase of a build script, configured.
///
/// Defaults: the manifest's accelerator set, cargo's `OPT_LEVEL` and `DEBUG`, `NUM_JOBS` and
/// cargo's jobserver, the resolver's order for every tool, the build script's environment.
#[derive(Debug, Clone, Default)]
pub struct Build {
    engine: Option<PathBuf>,
    accel: Accel,
    release: Option<bool>,
    jobs: Option<usize>,
    /// name -> (program, the build.rs line that named it).
    tools: BTreeMap<String, (PathBuf, String)>,
    /// name -> value to set, or `None`: hidden from the engine's view.
    env: BTreeMap<String, Option<OsString>>,
    /// Manifest values set here, in call order, each with the build.rs line that set it.
    settings: Vec<(Setting, String)>,
    /// Rules registered from rule crates ([`Build::rule`]).
    #[cfg(feature = "engine")]
    rules: cargo_mcpp::rules::external::RegisteredRules,
    /// Edits of the planned actions ([`Build::edit_plan`]).
    #[cfg(feature = "engine")]
    plan_edits: cargo_mcpp::plan::edit::PlanEdits,
}

/// The planned device actions as a build script may adjust them before they run
/// ([`Build::edit_plan`], this crate's `engine` feature): an argument, an extra input, an order.
#[cfg(feature = "engine")]
pub mod plan {
    pub use cargo_mcpp::plan::edit::{Plan, PlannedAction};
}

/// The API of a rule crate: a rule from outside cargo-mcpp, which a build script registers
/// with [`Build::rule`] (this crate's `engine` feature).
///
/// A rule claims file extensions, names its tool ([`rule::ToolDecl`]) and gives the argv for one
/// source ([`rule::DeviceRule::command`]). The engine resolves the tool, fingerprints each
/// action (its depfile included), checks the rule's options table
/// `[package.metadata.mcpp.<name>]` key by key, and hands each output to the generated surface
/// as a payload, as it does for its own rules.
#[cfg(feature = "engine")]
pub mod rule {
    pub use cargo_mcpp::rules::external::{
        CommandLine, DeviceRule, Job, OptionKey, OptionKind, Options, PayloadKind, Refusal,
        ToolDecl,
    };
}

/// Why the device phase did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong (one line); empty when the engine already printed its error.
    pub message: String,
    /// The way out (one line), or empty.
    pub help: String,
    /// The exit status to leave with: 1 a compiler failed or the manifest was refused, 3 no
    /// engine could be found, started or used (cargo-mcpp's code of a missing tool).
    pub code: i32,
}

/// [`Error::code`] of a missing engine: cargo-mcpp's exit code of a missing tool.
const MISSING_ENGINE: i32 = 3;

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.message)?;
        if !self.help.is_empty() {
            write!(f, "\n  help: {}", self.help)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl Build {
    /// A builder with every default (see the type docs).
    pub fn new() -> Build {
        Build::default()
    }
    /// Run this `cargo-mcpp` executable (a relative path is taken from the package directory).
    /// Not used with the `engine` feature, where the device phase runs in the build script.
    pub fn engine(&mut self, path: impl Into<PathBuf>) -> &mut Build {
        self.engine = Some(path.into());
        self
    }
    /// Override the accelerator set (as `cargo mcpp build --accel SPEC`), e.g. `"vulkan1.3"`.
    pub fn accel(&mut self, spec: &str) -> &mut Build {
        self.accel = Accel::Spec(spec.to_string());
        self
    }
    /// Build with no accelerator (as `--no-accel`): no device source compiles.
    pub fn no_accel(&mut self) -> &mut Build {
        self.accel = Accel::None;
        self
    }
    /// Optimise device code (`true`: as `OPT_LEVEL=3`) or not (`false`: as `OPT_LEVEL=0` with
    /// debug info). Default: cargo's `OPT_LEVEL` and `DEBUG`.
    pub fn release(&mut self, release: bool) -> &mut Build {
        self.release = Some(release);
        self
    }
    /// Parallel compilers when cargo's jobserver is absent (default `NUM_JOBS`, else the CPUs).
    pub fn jobs(&mut self, jobs: usize) -> &mut Build {
        self.jobs = Some(jobs);
        self
    }
    /// Name a tool's program, first in the resolver's order, e.g.
    /// `.tool("glslc", "/opt/shaderc/bin/glslc")`. The calling line is recorded with the
    /// decision (`cargo mcpp why tool glslc` prints it).
    #[track_caller]
    pub fn tool(&mut self, name: &str, path: impl Into<PathBuf>) -> &mut Build {
        let at = std::panic::Location::caller();
        self.tools.insert(
            name.to_string(),
            (path.into(), format!("{}:{}", at.file(), at.line())),
        );
        self
    }
    /// Set an environment variable in the engine's view of the build (the build script's own
    /// environment is untouched).
    pub fn env(&mut self, name: &str, value: impl Into<OsString>) -> &mut Build {
        self.env.insert(name.to_string(), Some(value.into()));
        self
    }
    /// Hide an environment variable from the engine's view of the build.
    pub fn env_remove(&mut self, name: &str) -> &mut Build {
        self.env.insert(name.to_string(), None);
        self
    }
    /// Add an include directory to the table of `rule` (`[package.metadata.mcpp.<rule>]`
    /// `includes`, e.g. `.include("spirv", "shaders/generated")`): after the manifest's own,
    /// in call order. A relative path is taken from the package root and must stay inside it,
    /// as a manifest entry must.
    ///
    /// # Errors
    /// Reported when the device phase runs ([`Build::compile`]), naming this build.rs line: a
    /// rule that does not exist, a directory that does not exist or leaves the package, a
    /// path that is not UTF-8.
    #[track_caller]
    pub fn include(&mut self, rule: &str, dir: impl Into<PathBuf>) -> &mut Build {
        let at = caller();
        self.settings.push((
            Setting::Include {
                rule: rule.into(),
                dir: dir.into(),
            },
            at,
        ));
        self
    }
    /// Define a preprocessor name in the table of `rule` (`defines`: `-DNAME=value`, e.g.
    /// `.define("spirv", "WORKGROUP", "64")`). Added to the manifest's `defines`; a name the
    /// manifest defines too takes this value.
    ///
    /// # Errors
    /// Reported when the device phase runs, naming this build.rs line: a rule that does not
    /// exist, a name that is not an identifier, a NUL character in the value.
    #[track_caller]
    pub fn define(&mut self, rule: &str, name: &str, value: impl Into<String>) -> &mut Build {
        let at = caller();
        self.settings.push((
            Setting::Define {
                rule: rule.into(),
                name: name.into(),
                value: value.into(),
            },
            at,
        ));
        self
    }
    /// Add one compiler argument to the table of `rule` (`flags`, one argv element, passed
    /// as given, e.g. `.flag("spirv", "-g")`): after the manifest's own, in call order.
    ///
    /// # Errors
    /// Reported when the device phase runs, naming this build.rs line: a rule that does not
    /// exist, a NUL character, an `-I` directory outside the package.
    #[track_caller]
    pub fn flag(&mut self, rule: &str, flag: &str) -> &mut Build {
        let at = caller();
        self.settings.push((
            Setting::Flag {
                rule: rule.into(),
                flag: flag.into(),
            },
            at,
        ));
        self
    }
    /// Set the key `key` of the table of `rule` (`[package.metadata.mcpp.<rule>]`) to `value`,
    /// as the manifest would write it: `.option("spirv", "compiler", "glslc")`,
    /// `.option("spirv", "optimize", false)`. Over the manifest's value of that key. The keys
    /// and their values are the rule's, listed in the guide's "Manifest reference". The list
    /// keys `includes`, `defines` and `flags` take [`Build::include`], [`Build::define`] and
    /// [`Build::flag`], which add to the manifest's.
    ///
    /// # Errors
    /// Reported when the device phase runs, as the manifest's key would be, naming this
    /// build.rs line: a rule or key that does not exist (with the valid keys), a value of
    /// another type or not among the key's values.
    #[track_caller]
    pub fn option(&mut self, rule: &str, key: &str, value: impl Into<Value>) -> &mut Build {
        let at = caller();
        self.settings.push((
            Setting::Option {
                rule: rule.into(),
                key: key.into(),
                value: value.into(),
            },
            at,
        ));
        self
    }
    /// Where the payloads' bytes live, over the manifest's `storage`: `"header"`, `"object"`
    /// or `"sidecar"` (a rule's or an entry's own `storage` still wins).
    ///
    /// # Errors
    /// Reported when the device phase runs, naming this build.rs line: another value.
    #[track_caller]
    pub fn storage(&mut self, storage: &str) -> &mut Build {
        let at = caller();
        self.settings.push((Setting::Storage(storage.into()), at));
        self
    }
    /// The C++ module and namespace of the generated surface (`"my_app.shaders"`), over the
    /// manifest's `module-name`.
    ///
    /// # Errors
    /// Reported when the device phase runs, naming this build.rs line: a name that is not
    /// dotted identifiers.
    #[track_caller]
    pub fn module_name(&mut self, name: &str) -> &mut Build {
        let at = caller();
        self.settings.push((Setting::ModuleName(name.into()), at));
        self
    }
    /// This build's settings as the engine's request: one JSON object, format
    /// [`REQUEST_FORMAT`]. The engine reads it with serde (the same code in process and as a
    /// child): `{"format":2,"client":"mcpp-build","client_version":"0.1.0","accel":"manifest"
    /// |"none"|{"spec":S},"release":null|bool,"jobs":null|N,"tools":{NAME:{"program":P,
    /// "at":"file:line"}},"env":{NAME:VALUE|null},"settings":[SETTING]}`, each SETTING in call
    /// order one of `{"method":"include","rule":R,"dir":D,"at":A}`,
    /// `{"method":"define","rule":R,"name":N,"value":V,"at":A}`,
    /// `{"method":"flag","rule":R,"flag":F,"at":A}`,
    /// `{"method":"option","rule":R,"key":K,"value":STRING|BOOL|INT|[STRING],"at":A}`,
    /// `{"method":"storage","value":V,"at":A}`, `{"method":"module_name","value":V,"at":A}`.
    ///
    /// # Errors
    /// A tool path, an include directory or an environment value that is not UTF-8 (the
    /// request is text).
    #[doc(hidden)]
    pub fn request(&self) -> Result<String, Error> {
        let text = |what: String, v: &std::ffi::OsStr| -> Result<String, Error> {
            v.to_str().map(json).ok_or_else(|| Error {
                message: format!("{what} is not UTF-8 ({v:?}), and the engine's request is text"),
                help: "give a UTF-8 value in build.rs".into(),
                code: 1,
            })
        };
        let accel = match &self.accel {
            Accel::Manifest => "\"manifest\"".to_string(),
            Accel::None => "\"none\"".to_string(),
            Accel::Spec(s) => format!("{{\"spec\":{}}}", json(s)),
        };
        let opt = |v: Option<String>| v.unwrap_or_else(|| "null".into());
        let mut tools = Vec::new();
        for (name, (program, at)) in &self.tools {
            let program = text(
                format!("Build::tool(\"{name}\")'s path"),
                program.as_os_str(),
            )?;
            tools.push(format!(
                "{}:{{\"program\":{program},\"at\":{}}}",
                json(name),
                json(at)
            ));
        }
        let mut env = Vec::new();
        for (name, value) in &self.env {
            let value = match value {
                Some(v) => text(format!("Build::env(\"{name}\")'s value"), v)?,
                None => "null".into(),
            };
            env.push(format!("{}:{value}", json(name)));
        }
        let mut settings = Vec::new();
        for (setting, at) in &self.settings {
            let fields = match setting {
                Setting::Include { rule, dir } => format!(
                    "\"method\":\"include\",\"rule\":{},\"dir\":{}",
                    json(rule),
                    text(
                        format!("Build::include(\"{rule}\")'s directory"),
                        dir.as_os_str()
                    )?
                ),
                Setting::Define { rule, name, value } => format!(
                    "\"method\":\"define\",\"rule\":{},\"name\":{},\"value\":{}",
                    json(rule),
                    json(name),
                    json(value)
                ),
                Setting::Flag { rule, flag } => format!(
                    "\"method\":\"flag\",\"rule\":{},\"flag\":{}",
                    json(rule),
                    json(flag)
                ),
                Setting::Option { rule, key, value } => format!(
                    "\"method\":\"option\",\"rule\":{},\"key\":{},\"value\":{}",
                    json(rule),
                    json(key),
                    value.json()
                ),
                Setting::Storage(v) => format!("\"method\":\"storage\",\"value\":{}", json(v)),
                Setting::ModuleName(v) => {
                    format!("\"method\":\"module_name\",\"value\":{}", json(v))
                }
            };
            settings.push(format!("{{{fields},\"at\":{}}}", json(at)));
        }
        Ok(format!(
            "{{\"format\":{REQUEST_FORMAT},\"client\":{},\"client_version\":{},\"accel\":{accel},\"release\":{},\"jobs\":{},\"tools\":{{{}}},\"env\":{{{}}},\"settings\":[{}]}}",
            json("mcpp-build"),
            json(VERSION),
            opt(self.release.map(|r| r.to_string())),
            opt(self.jobs.map(|j| j.to_string())),
            tools.join(","),
            env.join(","),
            settings.join(","),
        ))
    }

    /// The engine this build would run and where it came from (`"Build::engine"`,
    /// `"CARGO_MCPP"` or `"cargo install location"`).
    ///
    /// # Errors
    /// A named engine that is not a file; no engine where `cargo install` puts it.
    #[doc(hidden)]
    pub fn locate_engine(&self) -> Result<(PathBuf, &'static str), Error> {
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        // A relative name is a file of the package (a build script runs in its directory), made
        // absolute so that the program that runs is the file that was checked, never one on PATH.
        let base = env("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let named = |path: PathBuf, how: &'static str| -> Result<(PathBuf, &'static str), Error> {
            let path = if path.is_relative() {
                base.join(path)
            } else {
                path
            };
            if path.is_file() {
                Ok((path, how))
            } else {
                Err(Error {
                    message: format!("{how} names `{}` as the cargo-mcpp executable, and it is not a file", path.display()),
                    help: match how {
                        "CARGO_MCPP" => "name an existing cargo-mcpp executable (a relative name is taken from the package directory), or unset CARGO_MCPP to use the one `cargo install cargo-mcpp` put in $CARGO_HOME/bin".into(),
                        _ => "pass Build::engine an existing cargo-mcpp executable (a relative path is taken from the package directory), or drop the call to use CARGO_MCPP or $CARGO_HOME/bin".into(),
                    },
                    code: MISSING_ENGINE,
                })
            }
        };
        if let Some(p) = &self.engine {
            return named(p.clone(), "Build::engine");
        }
        if let Some(p) = env(ENGINE_ENV) {
            return named(PathBuf::from(p), "CARGO_MCPP");
        }
        let cargo_home = env("CARGO_HOME").map(PathBuf::from).or_else(|| {
            env(if cfg!(windows) { "USERPROFILE" } else { "HOME" })
                .map(|h| Path::new(&h).join(".cargo"))
        });
        let installed = cargo_home.map(|h| {
            h.join("bin")
                .join(format!("cargo-mcpp{}", std::env::consts::EXE_SUFFIX))
        });
        match installed {
            Some(p) if p.is_file() => Ok((p, "cargo install location")),
            other => Err(Error {
                message: format!(
                    "no cargo-mcpp engine: build.rs names none (Build::engine), CARGO_MCPP is unset, and {}",
                    match other {
                        Some(p) => format!("`{}` (the `cargo install` location, $CARGO_HOME/bin) does not exist", p.display()),
                        None => "neither CARGO_HOME nor HOME is set (the `cargo install` location)".into(),
                    }
                ),
                help: format!(
                    "{}turn on this crate's `engine` feature to run the device phase in the build script (`features = [\"engine\"]` on mcpp-build in [build-dependencies]; a package `cargo mcpp new` made has it as its feature `mcpp-engine`: `cargo run --features mcpp-engine`), or install cargo-mcpp {VERSION} into $CARGO_HOME/bin (`cargo install --path <the cargo-mcpp source>`), or set CARGO_MCPP=/path/to/cargo-mcpp",
                    match on_path() {
                        // Never run from PATH unasked (the program that runs is declared), but say it is there.
                        Some(p) => format!("a cargo-mcpp is on PATH (`{}`), and a build script never takes a program from PATH by itself: `export CARGO_MCPP={}` to use it; or "
                            , p.display(), p.display()),
                        None => String::new(),
                    }
                ),
                code: MISSING_ENGINE,
            }),
        }
    }

    /// Register `rule`, a rule from a rule crate ([`rule::DeviceRule`]): the files with its
    /// extensions that `sources` lists are compiled by it when the accelerator set names its
    /// backend, after the built-in rules. Only with the `engine` feature: the rule runs in this
    /// build script.
    #[cfg(feature = "engine")]
    #[track_caller]
    pub fn rule(&mut self, rule: impl rule::DeviceRule) -> &mut Build {
        self.rules.rules.push(std::sync::Arc::new(rule));
        self.rules.at.push(caller());
        self
    }

    /// Adjust the planned device actions before they run: `edit` gets every action the rules
    /// planned ([`plan::Plan`]) and may change an action's arguments, add an input (an edit of
    /// it then reruns the action; another action writing it runs first) or order two actions
    /// ([`plan::PlannedAction::run_after`]). An edited action's fingerprint covers the edit, so
    /// exactly the edited actions rerun. For the rare build a rule's options cannot express;
    /// only with the `engine` feature. A [`rule::Refusal`] from `edit` stops the build with its
    /// message.
    #[cfg(feature = "engine")]
    #[track_caller]
    pub fn edit_plan(
        &mut self,
        edit: impl Fn(&mut plan::Plan) -> Result<(), rule::Refusal> + Send + Sync + 'static,
    ) -> &mut Build {
        self.plan_edits.edits.push(std::sync::Arc::new(edit));
        self.plan_edits.at.push(caller());
        self
    }

    /// Run the device phase and print its cargo directives.
    ///
    /// # Errors
    /// No engine, an engine that cannot be started, or a device phase that failed (the engine
    /// has printed why; [`Error::message`] is then empty).
    pub fn try_compile(&self) -> Result<(), Error> {
        let request = self.request()?;
        #[cfg(feature = "engine")]
        {
            match cargo_mcpp::__build_script::run_with(
                &request,
                self.rules.clone(),
                self.plan_edits.clone(),
            ) {
                0 => Ok(()),
                code => Err(Error {
                    message: String::new(),
                    help: String::new(),
                    code,
                }),
            }
        }
        #[cfg(not(feature = "engine"))]
        self.run_engine(&request)
    }

    /// The installed engine run as `cargo-mcpp mcpp build-script`, the request on its standard
    /// input, with this build script's environment, standard error and jobserver; its standard
    /// output is passed on line by line (the directives reach cargo), the handshake taken out.
    #[cfg(not(feature = "engine"))]
    fn run_engine(&self, request: &str) -> Result<(), Error> {
        use std::io::{BufRead, BufReader, Write};
        use std::process::{Command, Stdio};
        println!("cargo:rerun-if-env-changed={ENGINE_ENV}");
        println!("cargo:rerun-if-env-changed=CARGO_HOME");
        let (engine, how) = self.locate_engine()?;
        println!("cargo:rerun-if-changed={}", engine.display());
        let mut child = Command::new(&engine)
            .args(["mcpp", "build-script"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| Error {
                message: format!("cannot start the cargo-mcpp engine `{}` ({how}): {e}", engine.display()),
                help: "check that it is an executable for this machine, or set CARGO_MCPP to one that is".into(),
                code: MISSING_ENGINE,
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            // An engine that exits before reading (not an engine) is found out below.
            let _ = stdin.write_all(request.as_bytes());
        }
        let mut answered = None;
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                match line.strip_prefix(ENGINE_HANDSHAKE) {
                    Some(v) if answered.is_none() => answered = Some(v.to_string()),
                    _ => println!("{line}"),
                }
            }
        }
        let status = child.wait().map_err(|e| Error {
            message: format!("lost the cargo-mcpp engine `{}`: {e}", engine.display()),
            help: String::new(),
            code: 1,
        })?;
        match (answered, status.success()) {
            (Some(_), true) => Ok(()),
            (Some(_), false) => match status.code() {
                // It failed and said why (its messages are already on cargo's streams).
                Some(code) => Err(Error { message: String::new(), help: String::new(), code }),
                None => Err(Error {
                    message: format!("the cargo-mcpp engine `{}` ({how}) was killed before it finished ({status})", engine.display()),
                    help: "a crash of the engine or a killed process (out of memory?): rerun the build; if it happens again, report it with the build's output".into(),
                    code: 1,
                }),
            },
            (None, _) => Err(Error {
                message: format!(
                    "`{}` ({how}) is not a cargo-mcpp engine this build script can use: it ran `mcpp build-script` and did not answer ({status})",
                    engine.display()
                ),
                help: format!("name cargo-mcpp {VERSION} with CARGO_MCPP or Build::engine, or turn on this crate's `engine` feature"),
                code: MISSING_ENGINE,
            }),
        }
    }

    /// Run the device phase; on failure print the error (cargo shows a failed build script's
    /// output) and exit with its status, without a panic backtrace.
    pub fn compile(&self) {
        if let Err(e) = self.try_compile() {
            // Only this crate's own failures are printed here (the engine printed its own).
            if !e.message.is_empty() {
                eprintln!("\nerror: {e}\n");
                println!("cargo::warning={}", e.message);
                report_failure(e.code, &e.message);
            }
            std::process::exit(e.code);
        }
    }
}

/// The whole `build.rs`: `fn main() { mcpp_build::build(); }`, every default.
pub fn build() {
    Build::new().compile();
}

/// The first `cargo-mcpp` on PATH, named in the refusal when no engine is declared (never run
/// from there unasked).
fn on_path() -> Option<PathBuf> {
    let exe = format!("cargo-mcpp{}", std::env::consts::EXE_SUFFIX);
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(&exe))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_the_format_the_version_and_every_setting() {
        let b = Build::new();
        assert_eq!(
            b.request().unwrap(),
            format!("{{\"format\":2,\"client\":\"mcpp-build\",\"client_version\":\"{VERSION}\",\"accel\":\"manifest\",\"release\":null,\"jobs\":null,\"tools\":{{}},\"env\":{{}},\"settings\":[]}}")
        );
        let mut b = Build::new();
        b.no_accel()
            .release(false)
            .jobs(3)
            .env("A", "-O2\n\"x\"")
            .env_remove("B");
        let line = line!() + 1;
        b.tool("glslc", "/opt/with space/glslc");
        let r = b.request().unwrap();
        assert!(
            r.contains("\"accel\":\"none\",\"release\":false,\"jobs\":3"),
            "{r}"
        );
        assert!(
            r.contains(&format!("\"tools\":{{\"glslc\":{{\"program\":\"/opt/with space/glslc\",\"at\":\"{}:{line}\"}}}}", file!())),
            "{r}"
        );
        assert!(
            r.contains("\"env\":{\"A\":\"-O2\\n\\\"x\\\"\",\"B\":null}"),
            "{r}"
        );
        b.accel("vulkan1.3");
        assert!(b
            .request()
            .unwrap()
            .contains("\"accel\":{\"spec\":\"vulkan1.3\"}"));
    }

    #[test]
    fn manifest_values_are_written_in_call_order_with_their_lines() {
        let mut b = Build::new();
        let line = line!() + 1;
        b.include("spirv", "gen/inc")
            .define("spirv", "N", "\"q\"")
            .flag("spirv", "-g")
            .option("spirv", "optimize", false)
            .option("cuda", "arch", ["sm_80", "-x"])
            .option("x", "n", 3)
            .storage("object")
            .module_name("a.b");
        let r = b.request().unwrap();
        // Each call of the chain is recorded at its own line.
        let expected = [
            "{\"method\":\"include\",\"rule\":\"spirv\",\"dir\":\"gen/inc\"",
            "{\"method\":\"define\",\"rule\":\"spirv\",\"name\":\"N\",\"value\":\"\\\"q\\\"\"",
            "{\"method\":\"flag\",\"rule\":\"spirv\",\"flag\":\"-g\"",
            "{\"method\":\"option\",\"rule\":\"spirv\",\"key\":\"optimize\",\"value\":false",
            "{\"method\":\"option\",\"rule\":\"cuda\",\"key\":\"arch\",\"value\":[\"sm_80\",\"-x\"]",
            "{\"method\":\"option\",\"rule\":\"x\",\"key\":\"n\",\"value\":3",
            "{\"method\":\"storage\",\"value\":\"object\"",
            "{\"method\":\"module_name\",\"value\":\"a.b\"",
        ]
        .iter()
        .zip(line..)
        .map(|(s, l)| format!("{s},\"at\":{}}}", json(&format!("{}:{l}", file!()))))
        .collect::<Vec<_>>()
        .join(",");
        assert!(r.ends_with(&format!("\"settings\":[{expected}]}}")), "{r}");
    }

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_is_refused_by_its_name() {
        use std::os::unix::ffi::OsStringExt;
        let e = Build::new()
            .env("CXXFLAGS", OsString::from_vec(vec![0xff]))
            .request()
            .unwrap_err();
        assert!(
            e.message
                .contains("Build::env(\"CXXFLAGS\")'s value is not UTF-8"),
            "{e}"
        );
    }

    #[test]
    fn a_relative_engine_name_is_a_file_of_the_package_never_a_program_on_path() {
        // `ls` is on PATH, but not in this package directory: refused, not run from PATH.
        let e = Build::new().engine("ls").locate_engine().unwrap_err();
        assert!(
            e.message.contains(&format!(
                "`{}` as the cargo-mcpp executable, and it is not a file",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("ls").display()
            )),
            "{e}"
        );
        let (p, how) = Build::new().engine("Cargo.toml").locate_engine().unwrap();
        assert_eq!(
            (p, how),
            (
                Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
                "Build::engine"
            )
        );
    }

    #[test]
    fn a_named_engine_that_is_not_a_file_is_refused_by_its_name() {
        let e = Build::new()
            .engine("/nonexistent/cargo-mcpp")
            .locate_engine()
            .unwrap_err();
        assert!(
            e.message
                .contains("Build::engine names `/nonexistent/cargo-mcpp`"),
            "{e}"
        );
        assert_eq!(e.code, 3);
    }
}
