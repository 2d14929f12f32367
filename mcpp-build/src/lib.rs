//! `mcpp-build`: the device phase of a crate's `build.rs`, with no dependencies.
//!
//! The whole `build.rs` is
//!
//! ```no_run
//! // build.rs (Cargo.toml: [build-dependencies] mcpp-build = "0.1")
//! mcpp_build::build();
//! ```
//!
//! It does what `cargo_mcpp::build()` does (read `[package.metadata.mcpp]`, compile the device
//! sources, generate the surface into `OUT_DIR`, print the cargo directives) by running the
//! installed `cargo-mcpp` executable (the *engine*) as `cargo-mcpp mcpp build-script`, with this
//! build script's environment, standard output (the directives reach cargo) and jobserver.
//!
//! Why two ways: `cargo_mcpp` as a build-dependency brings ~40 packages (serde, toml, sha2, cc,
//! ...) that cargo resolves and fingerprints on every `cargo build`, even one with nothing to
//! do; this crate brings none, so a no-op build costs what it costs a crate without build
//! dependencies. The price is that the engine must be installed (`cargo install cargo-mcpp`),
//! as it already is for `cargo mcpp build` and `cargo mcpp fetch`.
//!
//! The engine is found, in this order (never on PATH: a program found by accident is the
//! defect this project exists to avoid):
//! 1. [`Build::engine`] in build.rs;
//! 2. `CARGO_MCPP`, the path of a `cargo-mcpp` executable (`cargo mcpp build` sets it to itself
//!    when it is unset and the command is not the installed one of step 3, so the build script
//!    runs the same engine as the command);
//! 3. where `cargo install` puts it: `$CARGO_HOME/bin/cargo-mcpp` (`CARGO_HOME` defaults to
//!    `$HOME/.cargo`, `%USERPROFILE%\.cargo` on Windows).
//!
//! Nothing found is a refusal naming the three ways. The engine refuses a client of another
//! version ([`VERSION`] against its own), naming both: install the matching one.
//! The build script reruns when `CARGO_MCPP` or `CARGO_HOME` changes or the engine file does.
//!
//! What the engine reads is what `cargo_mcpp::build()` reads: the manifest (including
//! `[package.metadata.mcpp.tools]`) and the environment (`MCPP_TOOL_<NAME>`, `NVCC`,
//! `CUDA_PATH`, `MCPP_ACCEL`, ...; see the cargo-mcpp README). The builder's finer controls
//! ([`Build::tool`], [`Build::env`], [`Build::env_remove`], [`Build::jobs`], [`Build::release`])
//! are passed to the engine as arguments, and it applies them through `cargo_mcpp::Build`'s
//! methods of the same names, so they mean exactly what they mean in process.
//!
//! The `cargo-mcpp` library built without its `engine` feature (a build-dependency with
//! `default-features = false`) is this client under its own name: `cargo_mcpp::build()` and
//! `cargo_mcpp::Build` run the engine through this crate.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The environment variable naming the engine (a `cargo-mcpp` executable), an absolute path.
pub const ENGINE_ENV: &str = "CARGO_MCPP";

/// The first line an engine prints, followed by its version; a program that does not print it
/// is not a cargo-mcpp engine (or one older than this client), and the build is refused.
pub const ENGINE_HANDSHAKE: &str = "mcpp-engine=";

/// This client's version; the engine runs only for its own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The variable naming `cargo mcpp build`'s progress channel (a Unix socket taking one JSON
/// event per line; cargo-mcpp's `report::PROGRESS_ENV`): a failure of this client itself (no
/// engine, an engine killed) is sent there, so `cargo mcpp build` exits with its code instead of
/// cargo's 101.
pub const PROGRESS_ENV: &str = "MCPP_PROGRESS_SOCKET";

/// The progress channel's `failed` event for `package` (cargo-mcpp's `DeviceEvent::Failed`:
/// `{"event":"failed","package":...,"exit_code":...,"message":...}`), one line without its
/// newline. JSON written here, this crate having no dependencies; the engine's tests parse it.
#[doc(hidden)]
pub fn failure_event(package: &str, exit_code: i32, message: &str) -> String {
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
    format!(
        "{{\"event\":\"failed\",\"package\":{},\"exit_code\":{exit_code},\"message\":{}}}",
        json(package),
        json(message)
    )
}

/// Send this client's own failure to `cargo mcpp build`'s progress channel, when there is one.
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

/// The device phase of a build script, configured: which engine, which accelerator set, and the
/// finer controls the engine applies (tools, environment view, jobs, optimisation).
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
    /// The crate the build script depends on, for the engine's version refusal (`None`: this one).
    client: Option<&'static str>,
}

/// Why the device phase did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong (one line); empty when the engine already printed its error.
    pub message: String,
    /// The way out (one line), or empty.
    pub help: String,
    /// The exit status to leave with, and `cargo mcpp build`'s: the engine's own when it failed
    /// (1 compiler failed or refused in build.rs, 3 version refused), 3 when no engine could be
    /// found, started or answered (a missing tool, as the engine's own refusal of one), 1 when
    /// it was killed.
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
    /// A builder with every default: the engine from `CARGO_MCPP` or the `cargo install`
    /// location, the manifest's accelerator set.
    pub fn new() -> Build {
        Build::default()
    }
    /// Run this `cargo-mcpp` executable (first in the order, before `CARGO_MCPP`).
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
    /// debug info). Default: cargo's `OPT_LEVEL` and `DEBUG`. (`cargo_mcpp::Build::release`.)
    pub fn release(&mut self, release: bool) -> &mut Build {
        self.release = Some(release);
        self
    }
    /// Parallel compilers when cargo's jobserver is absent (default `NUM_JOBS`, else the CPUs).
    /// (`cargo_mcpp::Build::jobs`.)
    pub fn jobs(&mut self, jobs: usize) -> &mut Build {
        self.jobs = Some(jobs);
        self
    }
    /// Name a tool's program explicitly (first in the resolver's order), e.g.
    /// `.tool("glslc", "/opt/shaderc/bin/glslc")`; the calling line is recorded with the decision
    /// (`cargo mcpp why tool glslc` prints it). (`cargo_mcpp::Build::tool`.)
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
    /// environment is untouched). (`cargo_mcpp::Build::env`.)
    pub fn env(&mut self, name: &str, value: impl Into<OsString>) -> &mut Build {
        self.env.insert(name.to_string(), Some(value.into()));
        self
    }
    /// Hide an environment variable from the engine's view of the build.
    /// (`cargo_mcpp::Build::env_remove`.)
    pub fn env_remove(&mut self, name: &str) -> &mut Build {
        self.env.insert(name.to_string(), None);
        self
    }
    /// The crate this build script depends on, named in the engine's refusal of a client of
    /// another version (the `cargo-mcpp` library without its `engine` feature says
    /// `"cargo-mcpp"`). Default: `mcpp-build`.
    #[doc(hidden)]
    pub fn client(&mut self, name: &'static str) -> &mut Build {
        self.client = Some(name);
        self
    }

    /// The engine this build would run and where it came from (`"Build::engine"`,
    /// `"CARGO_MCPP"` or `"cargo install location"`).
    ///
    /// # Errors
    /// A named engine that is not a file; no engine where `cargo install` puts it.
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
                    "no cargo-mcpp engine: {}CARGO_MCPP is unset, and {}",
                    if self.client.is_some() { "" } else { "build.rs names none (Build::engine), " },
                    match other {
                        Some(p) => format!("`{}` (the `cargo install` location, $CARGO_HOME/bin) does not exist", p.display()),
                        None => "neither CARGO_HOME nor HOME is set (the `cargo install` location)".into(),
                    }
                ),
                help: format!(
                    "set CARGO_MCPP=/path/to/cargo-mcpp (a plain `cargo build` or `cargo run` needs it when cargo-mcpp {VERSION} was installed elsewhere, e.g. with `cargo install --root`), install it into $CARGO_HOME/bin (`cargo install --path <the cargo-mcpp source>`), {}",
                    match self.client {
                        // The library without its `engine` feature: the other way is the feature.
                        Some(_) => "or turn on the library's `engine` feature (`cargo-mcpp = { ..., default-features = false, features = [\"engine\"] }` in [build-dependencies]) to run the device phase in the build script itself",
                        None => "or call Build::engine(path) in build.rs",
                    }
                ),
                code: MISSING_ENGINE,
            }),
        }
    }

    /// The engine's arguments for this build (after the program name): `mcpp build-script
    /// --client-version V`, then, where set, `--client NAME`, `--accel SPEC` or `--no-accel`,
    /// `--release true|false`, `--jobs N`, `--tool NAME PROGRAM LINE` per tool, `--env NAME VALUE`
    /// and `--env-remove NAME` per variable (names in order).
    pub fn engine_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = ["mcpp", "build-script", "--client-version", VERSION]
            .iter()
            .map(OsString::from)
            .collect();
        if let Some(client) = self.client {
            args.extend(["--client".into(), client.into()]);
        }
        match &self.accel {
            Accel::Manifest => {}
            Accel::Spec(s) => args.extend([OsString::from("--accel"), OsString::from(s)]),
            Accel::None => args.push("--no-accel".into()),
        }
        if let Some(release) = self.release {
            args.extend(["--release".into(), release.to_string().into()]);
        }
        if let Some(jobs) = self.jobs {
            args.extend(["--jobs".into(), jobs.to_string().into()]);
        }
        for (name, (program, line)) in &self.tools {
            args.extend(["--tool".into(), name.into(), program.into(), line.into()]);
        }
        for (name, value) in &self.env {
            match value {
                Some(v) => args.extend(["--env".into(), name.into(), v.clone()]),
                None => args.extend(["--env-remove".into(), name.into()]),
            }
        }
        args
    }

    /// Run the device phase: print the rerun directives of the engine choice, then run the
    /// engine, whose directives and messages go straight to cargo.
    ///
    /// # Errors
    /// No engine (see [`Build::locate_engine`]), an engine that cannot be started, or one that
    /// exits non-zero (it has printed why; [`Error::message`] is then empty).
    pub fn try_compile(&self) -> Result<(), Error> {
        println!("cargo:rerun-if-env-changed={ENGINE_ENV}");
        println!("cargo:rerun-if-env-changed=CARGO_HOME");
        let (engine, how) = self.locate_engine()?;
        println!("cargo:rerun-if-changed={}", engine.display());
        // argv only; stderr and the jobserver's descriptors are inherited, stdout is passed on
        // line by line (the directives reach cargo) after the handshake line is taken out.
        let mut child = Command::new(&engine).args(self.engine_args()).stdout(Stdio::piped()).spawn().map_err(|e| Error {
            message: format!("cannot start the cargo-mcpp engine `{}` ({how}): {e}", engine.display()),
            help: "check that it is an executable for this machine, or set CARGO_MCPP to one that is".into(),
            code: MISSING_ENGINE,
        })?;
        let mut answered = None;
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out)
                .lines()
                .map_while(std::result::Result::ok)
            {
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
                // Killed (a signal: a crash, the OOM killer) before it could say anything.
                None => Err(Error {
                    message: format!("the cargo-mcpp engine `{}` ({how}) was killed before it finished ({status})", engine.display()),
                    help: "a crash of the engine or a killed process (out of memory?): rerun the build; if it happens again, report it with the build's output".into(),
                    code: 1,
                }),
            },
            (None, _) => Err(Error {
                message: format!(
                    "`{}` ({how}) is not a cargo-mcpp engine this client can use: it ran `mcpp build-script` and did not answer ({status})",
                    engine.display()
                ),
                help: format!(
                    "name cargo-mcpp {VERSION} (`cargo install cargo-mcpp --version {VERSION}`) with CARGO_MCPP{}",
                    if self.client.is_some() { "" } else { " or Build::engine" }
                ),
                code: MISSING_ENGINE,
            }),
        }
    }

    /// Run the device phase; on failure print the error (cargo shows a failed build script's
    /// output) and exit with the engine's status, without a panic backtrace.
    pub fn compile(&self) {
        if let Err(e) = self.try_compile() {
            // Only this client's own failures are printed here, without a prefix (they name the
            // engine themselves; cargo shows `warning: <pkg>@<ver>: <message>`). The engine's
            // failures were printed by the engine, whose warnings carry `cargo-mcpp: ` once.
            if !e.message.is_empty() {
                eprintln!("\nerror: {e}\n");
                println!("cargo::warning={}", e.message);
                report_failure(e.code, &e.message);
            }
            std::process::exit(e.code);
        }
    }
}

/// The whole `build.rs`: `fn main() { mcpp_build::build(); }` (see the crate docs).
pub fn build() {
    Build::new().compile();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_arguments_carry_the_version_and_the_accelerator_choice() {
        let mut b = Build::new();
        assert_eq!(
            b.engine_args(),
            ["mcpp", "build-script", "--client-version", VERSION]
        );
        b.accel("vulkan1.3");
        assert_eq!(b.engine_args()[4..], ["--accel", "vulkan1.3"]);
        b.no_accel();
        assert_eq!(b.engine_args()[4..], ["--no-accel"]);
    }

    #[test]
    fn the_finer_controls_are_engine_arguments_one_per_setting_the_last_call_winning() {
        let mut b = Build::new();
        b.release(false)
            .jobs(3)
            .env("A", "1")
            .env_remove("B")
            .env("B", "x y")
            .env_remove("A")
            .client("cargo-mcpp");
        let line = line!() + 1;
        b.tool("glslc", "/opt/with space/glslc");
        let at = format!("{}:{line}", file!());
        assert_eq!(
            b.engine_args()[4..],
            [
                "--client",
                "cargo-mcpp",
                "--release",
                "false",
                "--jobs",
                "3",
                "--tool",
                "glslc",
                "/opt/with space/glslc",
                at.as_str(),
                "--env-remove",
                "A",
                "--env",
                "B",
                "x y"
            ]
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
