//! The build script's request: the settings of `mcpp_build::Build`, written by that crate as
//! one JSON object ([`FORMAT`]), read here and applied to the engine's builder. The one path
//! of a build script's device phase, whether `mcpp-build` runs the engine in its own process
//! (its `engine` feature) or as the installed `cargo-mcpp mcpp build-script` (the request on
//! standard input).

use crate::error::{Error, ErrorKind, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The variable naming the engine `mcpp_build` runs (a `cargo-mcpp` executable); the same
/// text as `mcpp_build::ENGINE_ENV` (the build_client tests compare them).
pub const ENGINE_ENV: &str = "CARGO_MCPP";
/// The first line the engine prints in `build-script` mode, followed by its version; the same
/// text as `mcpp_build::ENGINE_HANDSHAKE`.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub const ENGINE_HANDSHAKE: &str = "mcpp-engine=";

/// The request format this engine reads (`mcpp_build::REQUEST_FORMAT`).
pub(crate) const FORMAT: u32 = 2;

/// Where the accelerator set comes from (`mcpp_build::Build::accel` / `no_accel`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum Accel {
    /// The manifest's `accel` (and `MCPP_ACCEL`/`MCPP_NO_ACCEL`).
    Manifest,
    /// No accelerator.
    None,
    /// This accelerator set.
    Spec(String),
}

/// A tool named in build.rs (`mcpp_build::Build::tool`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Tool {
    /// The program.
    pub program: PathBuf,
    /// The build.rs line that named it (`file:line`).
    pub at: String,
}

/// A value of a manifest key set in build.rs (`mcpp_build::Value`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(untagged)]
pub(crate) enum Value {
    /// A string.
    String(String),
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A list of strings.
    List(Vec<String>),
}

/// One manifest value set in build.rs, with the line that set it (`file:line`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Setting {
    /// `Build::include(rule, dir)`.
    Include { rule: String, dir: String, at: String },
    /// `Build::define(rule, name, value)`.
    Define { rule: String, name: String, value: String, at: String },
    /// `Build::flag(rule, flag)`.
    Flag { rule: String, flag: String, at: String },
    /// `Build::option(rule, key, value)`.
    Option { rule: String, key: String, value: Value, at: String },
    /// `Build::storage(value)`.
    Storage { value: String, at: String },
    /// `Build::module_name(value)`.
    ModuleName { value: String, at: String },
}

impl Setting {
    /// The manifest's form of this setting.
    fn manifest(&self) -> crate::config::manifest::BuilderSetting {
        use crate::config::manifest::{BuilderSetting, SettingKind, SettingValue};
        let (kind, at) = match self.clone() {
            Setting::Include { rule, dir, at } => (SettingKind::Include { rule, dir }, at),
            Setting::Define { rule, name, value, at } => (SettingKind::Define { rule, name, value }, at),
            Setting::Flag { rule, flag, at } => (SettingKind::Flag { rule, flag }, at),
            Setting::Option { rule, key, value, at } => {
                let value = match value {
                    Value::String(s) => SettingValue::String(s),
                    Value::Bool(b) => SettingValue::Bool(b),
                    Value::Int(i) => SettingValue::Int(i),
                    Value::List(l) => SettingValue::List(l),
                };
                (SettingKind::Option { rule, key, value }, at)
            }
            Setting::Storage { value, at } => (SettingKind::Storage(value), at),
            Setting::ModuleName { value, at } => (SettingKind::ModuleName(value), at),
        };
        BuilderSetting { kind, at }
    }
}

/// One request, as `mcpp_build::Build::request` writes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Request {
    /// [`FORMAT`].
    pub format: u32,
    /// The crate that wrote it (`mcpp-build`), named in a version refusal.
    pub client: String,
    /// Its version: the engine runs only requests of its own version.
    pub client_version: String,
    /// The accelerator choice.
    pub accel: Accel,
    /// `Build::release`.
    pub release: Option<bool>,
    /// `Build::jobs`.
    pub jobs: Option<usize>,
    /// `Build::tool`, by tool name.
    pub tools: BTreeMap<String, Tool>,
    /// `Build::env` (a value) and `Build::env_remove` (`null`), by variable name.
    pub env: BTreeMap<String, Option<String>>,
    /// The manifest values set in build.rs, in call order.
    pub settings: Vec<Setting>,
}

impl Request {
    /// Parse a request: its format first (a request of another format is refused as such,
    /// whatever its fields), then every field.
    ///
    /// # Errors
    /// [`ErrorKind::Usage`]: not JSON, another format, a missing or unknown field.
    pub(crate) fn parse(text: &str) -> Result<Request> {
        let bad = |why: String| {
            Error::new(ErrorKind::Usage, format!("the build script's request is not one this engine reads: {why}"))
                .help("the request is written by the mcpp-build crate; use mcpp-build and cargo-mcpp of one version")
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        match value.get("format").and_then(serde_json::Value::as_u64) {
            Some(f) if f == u64::from(FORMAT) => {}
            other => {
                return Err(bad(format!(
                    "format {}, this engine reads format {FORMAT}",
                    other.map_or("missing".to_string(), |f| f.to_string())
                )))
            }
        }
        serde_json::from_value(value).map_err(|e| bad(e.to_string()))
    }

    /// The engine's builder with every setting applied, the version checked.
    ///
    /// # Errors
    /// [`ErrorKind::ToolNotFound`] for a request of another version than this engine's.
    pub(crate) fn builder(&self) -> Result<crate::Build> {
        let mut b = crate::Build::new();
        self.apply(&mut b)?;
        Ok(b)
    }

    /// Apply every setting to `b`, the version checked first.
    ///
    /// # Errors
    /// As [`Request::builder`].
    pub(crate) fn apply(&self, b: &mut crate::Build) -> Result<()> {
        let engine_version = env!("CARGO_PKG_VERSION");
        if self.client_version != engine_version {
            let me = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "this executable".into());
            return Err(Error::new(ErrorKind::ToolNotFound, format!(
                "{} {} (this package's build-dependency) started cargo-mcpp {engine_version} ({me}); they must be the same version",
                self.client, self.client_version
            ))
            .help(format!(
                "turn on the `engine` feature of the build-dependency (`{} = {{ version = \"{}\", features = [\"engine\"] }}`: nothing to install), or install cargo-mcpp {} (`cargo install cargo-mcpp --version {}`) or set CARGO_MCPP to one",
                self.client, self.client_version, self.client_version, self.client_version
            )));
        }
        match &self.accel {
            Accel::Manifest => {}
            Accel::None => {
                b.no_accel();
            }
            Accel::Spec(spec) => {
                b.accel(spec);
            }
        }
        if let Some(release) = self.release {
            b.release(release);
        }
        if let Some(jobs) = self.jobs {
            b.jobs(jobs);
        }
        for (name, tool) in &self.tools {
            b.tool_at(name, &tool.program, tool.at.clone());
        }
        for (name, value) in &self.env {
            match value {
                Some(v) => b.env(name, v),
                None => b.env_remove(name),
            };
        }
        for setting in &self.settings {
            let s = setting.manifest();
            b.setting_at(s.kind, s.at);
        }
        Ok(())
    }
}

/// Run a build script's device phase from its request: parse, check, apply, compile, print the
/// cargo directives. Returns the exit status (0 done); a failure is printed as a build script
/// prints one (cargo shows it) and sent to `cargo mcpp build`'s progress channel.
pub(crate) fn run(text: &str, rules: crate::rules::external::RegisteredRules, edits: crate::plan::edit::PlanEdits) -> i32 {
    match Request::parse(text).and_then(|r| r.builder()) {
        Ok(mut b) => {
            b.extensions(rules, edits);
            b.compile_status()
        }
        Err(e) => {
            let env = crate::config::env::Env::process();
            let package = env.get("CARGO_PKG_NAME").unwrap_or_default();
            crate::output::report::Reporter::from_env(&env, &package).send(
                &crate::output::report::DeviceEvent::Failed {
                    package: package.clone(),
                    exit_code: e.exit_code(),
                    message: e.message.clone(),
                },
            );
            crate::api::print_failure(&e);
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_of_another_format_or_with_an_unknown_field_is_refused_as_such() {
        let e = Request::parse("{\"format\":3,\"whatever\":1}").unwrap_err();
        assert!(e.message.contains("format 3, this engine reads format 2"), "{e}");
        // Format 1 (no manifest values) is another format: its client is another version.
        let e = Request::parse("{\"format\":1,\"client\":\"mcpp-build\",\"client_version\":\"0\",\"accel\":\"manifest\",\"release\":null,\"jobs\":null,\"tools\":{},\"env\":{}}").unwrap_err();
        assert!(e.message.contains("format 1, this engine reads format 2"), "{e}");
        let e = Request::parse("{\"format\":2,\"client\":\"mcpp-build\",\"client_version\":\"0\",\"accel\":\"manifest\",\"release\":null,\"jobs\":null,\"tools\":{},\"env\":{},\"settings\":[],\"bogus\":1}").unwrap_err();
        assert!(e.message.contains("unknown field `bogus`"), "{e}");
        let e = Request::parse("{\"format\":2,\"client\":\"mcpp-build\",\"client_version\":\"0\",\"accel\":\"manifest\",\"release\":null,\"jobs\":null,\"tools\":{},\"env\":{},\"settings\":[{\"method\":\"flag\",\"rule\":\"spirv\",\"flag\":\"-g\",\"at\":\"b.rs:1\",\"x\":1}]}").unwrap_err();
        assert!(e.message.contains("unknown field `x`"), "{e}");
        let e = Request::parse("not json").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Usage);
    }

    #[test]
    fn a_request_of_another_version_is_refused_naming_the_engine_feature() {
        let r = Request::parse("{\"format\":2,\"client\":\"mcpp-build\",\"client_version\":\"0.0.1\",\"accel\":\"manifest\",\"release\":null,\"jobs\":null,\"tools\":{},\"env\":{},\"settings\":[]}").unwrap();
        let e = r.builder().unwrap_err();
        assert!(e.message.contains("mcpp-build 0.0.1 (this package's build-dependency) started cargo-mcpp"), "{e}");
        assert!(format!("{e}").contains("features = [\"engine\"]"), "{e}");
    }

    /// Every setting of `mcpp_build::Build`, written by that crate (a dev-dependency), read
    /// here and applied: compared field by field, values that start with `-` or hold a newline,
    /// quotes and non-ASCII text included.
    #[test]
    fn every_setting_of_mcpp_build_round_trips_through_the_request_into_the_engines_config() {
        assert_eq!(mcpp_build::REQUEST_FORMAT, FORMAT);
        let default = Request::parse(&mcpp_build::Build::new().request().unwrap()).unwrap();
        assert_eq!(
            default,
            Request {
                format: FORMAT,
                client: "mcpp-build".into(),
                client_version: mcpp_build::VERSION.into(),
                accel: Accel::Manifest,
                release: None,
                jobs: None,
                tools: BTreeMap::new(),
                env: BTreeMap::new(),
                settings: Vec::new(),
            }
        );
        let mut b = mcpp_build::Build::new();
        b.accel("-vulkan1.3")
            .release(true)
            .jobs(7)
            .env("CXXFLAGS", "-O2\n\"q\" \\ é")
            .env("KEEP", "")
            .env_remove("-x");
        let line = line!() + 1;
        b.tool("glslc", "-weird path/glslc");
        let at = format!("{}:{line}", file!());
        let line = line!() + 1;
        b.include("spirv", "-inc dir/é").define("cuda", "N", "-1 \"x\"\n").flag("spirv", "-O0").option("spirv", "optimize", false).option("cuda", "arch", vec!["-sm_80"]).option("x", "n", -3).storage("-object").module_name("a.b");
        let set_at = format!("{}:{line}", file!());
        let r = Request::parse(&b.request().unwrap()).unwrap();
        assert_eq!(
            r,
            Request {
                format: FORMAT,
                client: "mcpp-build".into(),
                client_version: mcpp_build::VERSION.into(),
                accel: Accel::Spec("-vulkan1.3".into()),
                release: Some(true),
                jobs: Some(7),
                tools: BTreeMap::from([(
                    "glslc".to_string(),
                    Tool { program: "-weird path/glslc".into(), at: at.clone() }
                )]),
                env: BTreeMap::from([
                    ("-x".to_string(), None),
                    ("CXXFLAGS".to_string(), Some("-O2\n\"q\" \\ é".to_string())),
                    ("KEEP".to_string(), Some(String::new())),
                ]),
                settings: vec![
                    Setting::Include { rule: "spirv".into(), dir: "-inc dir/é".into(), at: set_at.clone() },
                    Setting::Define { rule: "cuda".into(), name: "N".into(), value: "-1 \"x\"\n".into(), at: set_at.clone() },
                    Setting::Flag { rule: "spirv".into(), flag: "-O0".into(), at: set_at.clone() },
                    Setting::Option { rule: "spirv".into(), key: "optimize".into(), value: Value::Bool(false), at: set_at.clone() },
                    Setting::Option { rule: "cuda".into(), key: "arch".into(), value: Value::List(vec!["-sm_80".into()]), at: set_at.clone() },
                    Setting::Option { rule: "x".into(), key: "n".into(), value: Value::Int(-3), at: set_at.clone() },
                    Setting::Storage { value: "-object".into(), at: set_at.clone() },
                    Setting::ModuleName { value: "a.b".into(), at: set_at.clone() },
                ],
            }
        );
        let mut engine = r.builder().unwrap();
        engine.manifest_dir("/m").out_dir("/o");
        let c = engine.config().unwrap();
        assert_eq!(c.accel, crate::plan::accel::AccelChoice::Spec("-vulkan1.3".into()));
        assert_eq!(c.jobs, 7);
        assert_eq!(c.builder_tools["glslc"], PathBuf::from("-weird path/glslc"));
        assert_eq!(c.builder_tool_lines["glslc"], at);
        assert_eq!(c.env.get("CXXFLAGS").as_deref(), Some("-O2\n\"q\" \\ é"));
        assert_eq!(c.env.get("KEEP").as_deref(), Some(""));
        use crate::config::manifest::{BuilderSetting, SettingKind, SettingValue};
        assert_eq!(c.builder_settings.len(), 8);
        assert_eq!(c.builder_settings[0], BuilderSetting { kind: SettingKind::Include { rule: "spirv".into(), dir: "-inc dir/é".into() }, at: set_at.clone() });
        assert_eq!(c.builder_settings[2].kind, SettingKind::Flag { rule: "spirv".into(), flag: "-O0".into() });
        assert_eq!(c.builder_settings[4].kind, SettingKind::Option { rule: "cuda".into(), key: "arch".into(), value: SettingValue::List(vec!["-sm_80".into()]) });
        assert_eq!(c.builder_settings[6].kind, SettingKind::Storage("-object".into()));
        assert!(c.env.get_os("-x").is_none());
        assert_eq!(
            c.facts,
            crate::config::cargo_facts::CargoFacts::from_env(&c.env).with_release(true)
        );
        b.no_accel();
        let r = Request::parse(&b.request().unwrap()).unwrap();
        assert_eq!(r.accel, Accel::None);
        assert_eq!(
            r.builder().unwrap().manifest_dir("/m").out_dir("/o").config().unwrap().accel,
            crate::plan::accel::AccelChoice::NoAccel
        );
    }
}
