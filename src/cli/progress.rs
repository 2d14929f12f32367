//! `cargo mcpp build`'s view of the device phases that run in the build scripts of its
//! `cargo build`: it listens on the side channel of [`crate::output::report`] and shows one indicatif
//! bar per package when stderr is a terminal (cargo's own stderr lines printed above the bars),
//! plain lines otherwise. Every line names its package.

use crate::output::report::DeviceEvent;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// How one package's device phase ended, as its build script reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackageOutcome {
    /// It succeeded: the accelerator set as text, actions run, actions fresh.
    Done {
        /// The accelerator set (empty for none).
        accel: String,
        /// Actions that ran.
        compiled: usize,
        /// Actions found fresh.
        fresh: usize,
    },
    /// It failed with this exit code and message.
    Failed {
        /// The documented exit code of the error.
        exit_code: i32,
        /// The error's first line.
        message: String,
    },
}

/// The display: bars on a terminal, lines otherwise.
struct Display {
    multi: Option<MultiProgress>,
    /// `--message-format json`: diagnostics, artifacts and each package's end also go to
    /// standard output as JSON lines ([`json_line`]), with cargo's own.
    json: bool,
    /// One writer of standard output at a time (cargo's forwarded lines and this channel's).
    stdout: Mutex<()>,
    bars: Mutex<BTreeMap<String, ProgressBar>>,
    outcomes: Mutex<BTreeMap<String, PackageOutcome>>,
}

impl Display {
    fn line(&self, text: &str) {
        match &self.multi {
            Some(m) => {
                let _ = m.println(text);
            }
            None => eprintln!("{text}"),
        }
    }
    fn bar(&self, package: &str) -> Option<ProgressBar> {
        let multi = self.multi.as_ref()?;
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        Some(
            bars.entry(package.to_string())
                .or_insert_with(|| {
                    let bar = multi.add(ProgressBar::new(0));
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{prefix:>12.cyan.bold} [{bar:25}] {pos}/{len} {wide_msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                    );
                    bar.set_prefix("Device");
                    bar
                })
                .clone(),
        )
    }
    fn remove_bar(&self, package: &str) {
        if let Some(bar) = self
            .bars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(package)
        {
            bar.finish_and_clear();
            if let Some(m) = &self.multi {
                m.remove(&bar);
            }
        }
    }
    /// Print one line to standard output, whole.
    fn out(&self, text: &str) {
        use std::io::Write;
        let _one = self.stdout.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
    fn event(&self, event: DeviceEvent) {
        if self.json {
            if let Some(line) = json_line(&event) {
                self.out(&line);
            }
        }
        match event {
            // Shown on standard output as JSON only (cargo shows the warnings itself).
            DeviceEvent::Diagnostic { .. } | DeviceEvent::Artifact { .. } => {}
            DeviceEvent::Planned { package, total } => match self.bar(&package) {
                Some(bar) => bar.set_length(total as u64),
                None if total > 0 => self.line(&format!(
                    "      Device {package} ({total} action(s) to run)"
                )),
                None => {}
            },
            DeviceEvent::Started {
                package,
                description,
            } => match self.bar(&package) {
                Some(bar) => bar.set_message(format!("{package}: {description}")),
                None => self.line(&format!("   Compiling {description} ({package})")),
            },
            DeviceEvent::Finished { package, .. } => {
                if let Some(bar) = self.bar(&package) {
                    bar.inc(1);
                }
            }
            DeviceEvent::Done {
                package,
                accel,
                compiled,
                fresh,
                ..
            } => {
                self.remove_bar(&package);
                let set = if accel.is_empty() {
                    "no accelerator".to_string()
                } else {
                    accel.clone()
                };
                self.line(&format!(
                    "      Device {package} [{set}]: {compiled} compiled, {fresh} fresh"
                ));
                self.outcomes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        package,
                        PackageOutcome::Done {
                            accel,
                            compiled,
                            fresh,
                        },
                    );
            }
            DeviceEvent::Failed {
                package,
                exit_code,
                message,
            } => {
                self.remove_bar(&package);
                self.line(&format!("      Device {package} failed: {message}"));
                self.outcomes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(package, PackageOutcome::Failed { exit_code, message });
            }
        }
    }
}

/// The JSON line `cargo mcpp build --message-format json` prints for `event`, in the shape of
/// cargo's messages (<https://doc.rust-lang.org/cargo/reference/external-tools.html>): a device
/// diagnostic is a `compiler-message` whose `message` is a rustc-style diagnostic with one
/// primary span (file, line, column); an artifact is `mcpp-device-artifact` (path, sha256); a
/// package's end is `mcpp-device-finished` (`success`, counts). Not `build-finished`: cargo's
/// own is the last line of the stream, and a reader stops at the first one it sees. Progress
/// events print nothing here.
pub fn json_line(event: &DeviceEvent) -> Option<String> {
    let value = match event {
        DeviceEvent::Diagnostic {
            package,
            diagnostic: d,
            rendered,
        } => serde_json::json!({
            "reason": "compiler-message",
            "package_id": format!("mcpp-device:{package}"),
            "target": { "kind": ["mcpp-device"], "crate_types": [], "name": package, "src_path": d.file },
            "message": {
                "$message_type": "diagnostic",
                "message": d.message,
                "code": null,
                "level": d.level,
                "spans": [{
                    "file_name": d.file, "byte_start": 0, "byte_end": 0,
                    "line_start": d.line, "line_end": d.line, "column_start": d.column, "column_end": d.column,
                    "is_primary": true, "text": [], "label": null, "suggested_replacement": null, "suggestion_applicability": null, "expansion": null
                }],
                "children": [],
                "rendered": format!("{rendered}\n"),
            }
        }),
        DeviceEvent::Artifact {
            package,
            path,
            sha256,
        } => {
            serde_json::json!({ "reason": "mcpp-device-artifact", "package": package, "path": path, "sha256": sha256 })
        }
        DeviceEvent::Done {
            package,
            accel,
            compiled,
            fresh,
            warnings,
        } => {
            serde_json::json!({ "reason": "mcpp-device-finished", "package": package, "success": true, "accel": accel, "compiled": compiled, "fresh": fresh, "warnings": warnings })
        }
        DeviceEvent::Failed {
            package,
            exit_code,
            message,
        } => {
            serde_json::json!({ "reason": "mcpp-device-finished", "package": package, "success": false, "exit_code": exit_code, "message": message })
        }
        DeviceEvent::Planned { .. }
        | DeviceEvent::Started { .. }
        | DeviceEvent::Finished { .. } => return None,
    };
    Some(value.to_string())
}

/// The listening end of the side channel, for the duration of one `cargo build`.
pub struct Channel {
    _dir: tempfile::TempDir,
    path: PathBuf,
    display: Arc<Display>,
    stop: Arc<AtomicBool>,
    listener: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl Channel {
    /// Open a socket in a new temporary directory and start listening.
    ///
    /// # Errors
    /// The temporary directory or the socket cannot be created.
    /// `json`: `--message-format json` ([`json_line`]).
    #[cfg(unix)]
    pub fn open(json: bool) -> std::io::Result<Channel> {
        let dir = tempfile::Builder::new().prefix("cargo-mcpp-").tempdir()?;
        let path = dir.path().join("progress.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path)?;
        let multi = std::io::stderr()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let display = Arc::new(Display {
            multi,
            json,
            stdout: Mutex::new(()),
            bars: Mutex::new(BTreeMap::new()),
            outcomes: Mutex::new(BTreeMap::new()),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (d, s) = (display.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            let mut readers = Vec::new();
            let read = |stream: std::os::unix::net::UnixStream, d: Arc<Display>| {
                let _ = stream.set_nonblocking(false);
                std::thread::spawn(move || {
                    for line in BufReader::new(stream).lines() {
                        let Ok(line) = line else { break };
                        if let Ok(event) = serde_json::from_str::<DeviceEvent>(&line) {
                            d.event(event);
                        }
                    }
                })
            };
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                readers.push(read(stream, d.clone()));
                if s.load(Ordering::SeqCst) {
                    // The waking connection of `close` came last: take what is still queued.
                    if listener.set_nonblocking(true).is_ok() {
                        while let Ok((stream, _)) = listener.accept() {
                            readers.push(read(stream, d.clone()));
                        }
                    }
                    break;
                }
            }
            readers
        });
        Ok(Channel {
            _dir: dir,
            path,
            display,
            stop,
            listener: Some(handle),
        })
    }

    /// The socket path to name in [`crate::output::report::PROGRESS_ENV`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether bars are drawn (stderr is a terminal): then cargo's stderr should come through
    /// [`Channel::print_line`], so its lines appear above the bars instead of through them.
    pub fn draws_bars(&self) -> bool {
        self.display.multi.is_some()
    }

    /// Print a line (of cargo's stderr) above the bars.
    pub fn print_line(&self, line: &str) {
        self.display.line(line);
    }

    /// Print `line` (one of cargo's JSON messages) to standard output, whole, between the
    /// channel's own lines.
    pub fn print_stdout(&self, line: &str) {
        self.display.out(line);
    }

    /// Stop listening once `cargo build` has exited (every build script is done, so every
    /// connection has ended) and return each reporting package's outcome.
    pub fn close(mut self) -> BTreeMap<String, PackageOutcome> {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept with one last connection.
        #[cfg(unix)]
        let _ = std::os::unix::net::UnixStream::connect(&self.path);
        if let Some(h) = self.listener.take() {
            for reader in h.join().unwrap_or_default() {
                let _ = reader.join();
            }
        }
        for package in self
            .display
            .bars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect::<Vec<_>>()
        {
            self.display.remove_bar(&package);
        }
        std::mem::take(
            &mut *self
                .display
                .outcomes
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::config::env::Env;
    use crate::output::report::{Reporter, PROGRESS_ENV};

    #[test]
    fn a_build_scripts_events_reach_the_channel_and_its_outcome_is_kept() {
        let channel = Channel::open(false).unwrap();
        let mut env = Env::empty();
        env.set(PROGRESS_ENV, channel.path());
        let r = Reporter::from_env(&env, "app");
        r.send(&DeviceEvent::Planned {
            package: "app".into(),
            total: 1,
        });
        r.send(&DeviceEvent::Done {
            package: "app".into(),
            accel: "vulkan1.2".into(),
            compiled: 1,
            fresh: 0,
            warnings: 0,
        });
        let f = Reporter::from_env(&env, "lib");
        f.send(&DeviceEvent::Failed {
            package: "lib".into(),
            exit_code: 3,
            message: "refused".into(),
        });
        drop((r, f));
        let outcomes = channel.close();
        assert_eq!(
            outcomes.get("app"),
            Some(&PackageOutcome::Done {
                accel: "vulkan1.2".into(),
                compiled: 1,
                fresh: 0
            })
        );
        assert_eq!(
            outcomes.get("lib"),
            Some(&PackageOutcome::Failed {
                exit_code: 3,
                message: "refused".into()
            })
        );
    }
}
