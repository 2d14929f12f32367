//! The side channel from a build script's device phase to the `cargo mcpp build` that started
//! its `cargo build` (one device phase): the device work runs only in build scripts,
//! with cargo's facts; `cargo mcpp build` shows its progress.
//!
//! `cargo mcpp build` listens on a Unix socket and names it in [`PROGRESS_ENV`]. A build
//! script (the library, or the `mcpp-build` engine it starts) reads that variable *without*
//! declaring it to cargo (`rerun-if-env-changed`): it is where progress goes, not an input, so
//! plain `cargo build` and `cargo mcpp build` with the same arguments see the same build
//! script fingerprint and neither reruns the other's work. Each build script opens one
//! connection and writes one JSON object per line, a [`DeviceEvent`]. Nothing here can fail a
//! build: with no listener, or a listener gone, events are dropped.

use crate::config::env::Env;
use crate::engine::graph::{Action, Observer};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::Mutex;

/// The variable naming the socket of the `cargo mcpp build` that started this build; absent
/// under plain cargo.
pub const PROGRESS_ENV: &str = "MCPP_PROGRESS_SOCKET";

/// One line of the side channel (JSON, `{"event":"started",...}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum DeviceEvent {
    /// `total` stale actions will run for `package` (fresh ones are not counted).
    Planned {
        /// The package (`CARGO_PKG_NAME`).
        package: String,
        /// Actions to run.
        total: usize,
    },
    /// An action started (`description`: e.g. `glslangValidator shaders/a/scale.comp`).
    Started {
        /// The package.
        package: String,
        /// The action's progress line.
        description: String,
    },
    /// An action finished successfully.
    Finished {
        /// The package.
        package: String,
        /// The action's progress line.
        description: String,
    },
    /// The device phase of `package` succeeded.
    Done {
        /// The package.
        package: String,
        /// The accelerator set, as text (empty for none).
        accel: String,
        /// Actions that ran.
        compiled: usize,
        /// Actions found fresh.
        fresh: usize,
        /// The warnings the build script gave cargo (cargo shows them too).
        warnings: usize,
    },
    /// A device compiler's warning or error with its place ([`crate::output::diagnostic`]), sent
    /// before [`DeviceEvent::Done`] or [`DeviceEvent::Failed`]: `cargo mcpp build
    /// --message-format json` prints it as a `compiler-message`.
    Diagnostic {
        /// The package.
        package: String,
        /// Where and what.
        diagnostic: crate::output::diagnostic::Diagnostic,
        /// The line as the compiler printed it (after the action's description).
        rendered: String,
    },
    /// A device artifact of a successful phase (an object, archive, SPIR-V, PTX, ... in the
    /// device cache) with the sha256 it was verified to have, sent before [`DeviceEvent::Done`].
    Artifact {
        /// The package.
        package: String,
        /// Its absolute path.
        path: std::path::PathBuf,
        /// Its sha256, hex.
        sha256: String,
    },
    /// The device phase of `package` failed or refused; `exit_code` is the documented code
    /// of its error ([`crate::error::exit_code`]).
    Failed {
        /// The package.
        package: String,
        /// The exit code `cargo mcpp build` returns for it.
        exit_code: i32,
        /// The error's first line.
        message: String,
    },
}

impl DeviceEvent {
    /// The package the event is about.
    pub fn package(&self) -> &str {
        match self {
            DeviceEvent::Planned { package, .. }
            | DeviceEvent::Started { package, .. }
            | DeviceEvent::Finished { package, .. }
            | DeviceEvent::Diagnostic { package, .. }
            | DeviceEvent::Artifact { package, .. }
            | DeviceEvent::Done { package, .. }
            | DeviceEvent::Failed { package, .. } => package,
        }
    }
}

/// The events a device phase's result carries besides its end: every compiler line of its
/// warnings (success) or of its errors' details (failure) that names a place
/// ([`crate::output::diagnostic::parse_all`]) as a [`DeviceEvent::Diagnostic`] (rendered: the
/// compiler's own text, without the action's description), then, on success, every
/// output as a [`DeviceEvent::Artifact`], in path order.
pub fn detail_events(
    package: &str,
    result: Result<&crate::engine::graph::RunReport, &crate::error::Error>,
) -> Vec<DeviceEvent> {
    let diagnostics = |lines: &[String]| -> Vec<DeviceEvent> {
        crate::output::diagnostic::parse_all(lines).into_iter().map(|(d, rendered)| DeviceEvent::Diagnostic { package: package.to_string(), diagnostic: d, rendered }).collect()
    };
    match result {
        Ok(report) => diagnostics(&report.warnings)
            .into_iter()
            .chain(report.outputs.iter().map(|(path, sha256)| DeviceEvent::Artifact { package: package.to_string(), path: path.clone(), sha256: sha256.clone() }))
            .collect(),
        Err(e) => std::iter::once(e).chain(e.also.iter()).flat_map(|e| diagnostics(&e.detail)).collect(),
    }
}

/// The number of device compiler warnings among `lines` (diagnostics of level `warning`, not
/// lines: a warning's notes and source excerpts do not count), for `mcpp-device-finished`.
pub fn warning_count(lines: &[String]) -> usize {
    crate::output::diagnostic::parse_all(lines).iter().filter(|(d, _)| d.level == "warning").count()
}

/// Whether this build was started by `cargo mcpp build` (it opened the side channel): refusals
/// name the way out in the command the user ran.
pub fn started_by_cargo_mcpp(env: &Env) -> bool {
    env.get_os_untracked(PROGRESS_ENV).is_some_and(|v| !v.is_empty())
}

/// How to build with no accelerator, in the command the user ran: `cargo mcpp build
/// --no-accel` under `cargo mcpp`, `MCPP_NO_ACCEL=1` before plain cargo (which has no
/// `--no-accel`).
pub fn no_accel_way(env: &Env) -> &'static str {
    if started_by_cargo_mcpp(env) {
        "`cargo mcpp build --no-accel`"
    } else {
        "`MCPP_NO_ACCEL=1 cargo build` (the variable works with any cargo command; `cargo mcpp build --no-accel` sets it)"
    }
}

/// How to build with the accelerator set `spec` for one build, in the command the user ran.
pub fn accel_way(env: &Env, spec: &str) -> String {
    if started_by_cargo_mcpp(env) {
        format!("`cargo mcpp build --accel \"{spec}\"`")
    } else {
        format!("`MCPP_ACCEL=\"{spec}\" cargo build`")
    }
}

/// The build script's end of the channel: an [`Observer`] of the action graph that sends
/// every event to `cargo mcpp build`, or nothing under plain cargo.
pub struct Reporter {
    package: String,
    stream: Option<Mutex<Connection>>,
}

#[cfg(unix)]
type Connection = std::os::unix::net::UnixStream;
#[cfg(not(unix))]
type Connection = std::io::Sink;

impl Reporter {
    /// Connect to the channel named in [`PROGRESS_ENV`] (read untracked, see the module docs);
    /// a reporter that sends nothing when it is absent or cannot be reached.
    pub fn from_env(env: &Env, package: &str) -> Reporter {
        let stream = env.get_os_untracked(PROGRESS_ENV).filter(|v| !v.is_empty()).and_then(|path| connect(std::path::Path::new(&path)));
        Reporter { package: package.to_string(), stream: stream.map(Mutex::new) }
    }
    /// A reporter that sends nothing.
    pub fn silent() -> Reporter {
        Reporter { package: String::new(), stream: None }
    }
    /// The package events are sent for.
    pub fn package(&self) -> &str {
        &self.package
    }
    /// Send one event (dropped when there is no listener).
    pub fn send(&self, event: &DeviceEvent) {
        let Some(stream) = &self.stream else { return };
        let Ok(mut line) = serde_json::to_vec(event) else { return };
        line.push(b'\n');
        let mut s = stream.lock().unwrap_or_else(|e| e.into_inner());
        // A listener gone (the user pressed ^C) must not fail the build script.
        let _ = s.write_all(&line);
    }
}

#[cfg(unix)]
fn connect(path: &std::path::Path) -> Option<Connection> {
    std::os::unix::net::UnixStream::connect(path).ok()
}

#[cfg(not(unix))]
fn connect(_path: &std::path::Path) -> Option<Connection> {
    None
}

impl Observer for Reporter {
    fn planned(&self, total: usize) {
        self.send(&DeviceEvent::Planned { package: self.package.clone(), total });
    }
    fn started(&self, action: &Action) {
        self.send(&DeviceEvent::Started { package: self.package.clone(), description: action.description.clone() });
    }
    fn finished(&self, action: &Action) {
        self.send(&DeviceEvent::Finished { package: self.package.clone(), description: action.description.clone() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_one_json_object_per_line_with_the_event_named() {
        let e = DeviceEvent::Done { package: "app".into(), accel: "vulkan1.2".into(), compiled: 2, fresh: 1, warnings: 0 };
        let text = serde_json::to_string(&e).unwrap();
        assert!(text.starts_with("{\"event\":\"done\""), "{text}");
        assert_eq!(serde_json::from_str::<DeviceEvent>(&text).unwrap(), e);
    }

    #[test]
    fn the_way_out_names_the_command_the_user_ran() {
        let mut env = Env::empty();
        assert!(no_accel_way(&env).starts_with("`MCPP_NO_ACCEL=1 cargo build`"));
        assert_eq!(accel_way(&env, "vulkan1.3"), "`MCPP_ACCEL=\"vulkan1.3\" cargo build`");
        env.set(PROGRESS_ENV, "/tmp/x.sock");
        assert_eq!(no_accel_way(&env), "`cargo mcpp build --no-accel`");
        // The channel is not an input: reading it is not recorded for rerun-if-env-changed.
        assert!(!env.reads().contains(&PROGRESS_ENV.to_string()));
    }
}
