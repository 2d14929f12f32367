//! The one reader of environment variables. Every read is recorded so that build.rs can
//! declare it with `cargo:rerun-if-env-changed` (the pattern of cc-rs `Build::getenv`):
//! a variable that changes what we compile must rerun the build script.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Mutex;

/// A view of the environment: the process environment with explicit overrides on top
/// (the builder's [`crate::Build::env`]), recording the name of every variable read.
#[derive(Debug, Default)]
pub struct Env {
    overrides: BTreeMap<String, Option<OsString>>,
    inherit: bool,
    reads: Mutex<Vec<String>>,
}

impl Clone for Env {
    fn clone(&self) -> Self {
        Env { overrides: self.overrides.clone(), inherit: self.inherit, reads: Mutex::new(self.reads()) }
    }
}

/// The variable docs.rs sets for the builds it documents.
pub const DOCS_RS_ENV: &str = "DOCS_RS";

impl Env {
    /// The process environment.
    pub fn process() -> Env {
        Env { overrides: BTreeMap::new(), inherit: true, reads: Mutex::new(Vec::new()) }
    }
    /// An empty environment (tests): only the overrides are visible.
    pub fn empty() -> Env {
        Env { overrides: BTreeMap::new(), inherit: false, reads: Mutex::new(Vec::new()) }
    }
    /// Set `name` to `value` in this view (the process environment is untouched).
    pub fn set(&mut self, name: &str, value: impl Into<OsString>) {
        self.overrides.insert(name.to_string(), Some(value.into()));
    }
    /// Hide `name` in this view.
    pub fn remove(&mut self, name: &str) {
        self.overrides.insert(name.to_string(), None);
    }
    /// Read `name`, recording the read; `None` when unset.
    pub fn get_os(&self, name: &str) -> Option<OsString> {
        self.record_read(name);
        self.get_os_untracked(name)
    }
    /// Record `name` as read without reading it: a read made through another view of this
    /// environment (a view with a script's variables on top, [`crate::tool::env_script`]).
    pub fn record_read(&self, name: &str) {
        let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        if !reads.iter().any(|r| r == name) {
            reads.push(name.to_string());
        }
    }
    /// Read `name` without recording the read: only for variables that are not inputs of the
    /// build and so must not be declared with `rerun-if-env-changed` (the progress channel of
    /// `cargo mcpp build`, [`crate::output::report::PROGRESS_ENV`]).
    pub fn get_os_untracked(&self, name: &str) -> Option<OsString> {
        match self.overrides.get(name) {
            Some(v) => v.clone(),
            #[allow(clippy::disallowed_methods)] // the door itself: the one read of the process environment
            None if self.inherit => std::env::var_os(name),
            None => None,
        }
    }
    /// Read `name` as UTF-8 (lossy), recording the read; `None` when unset.
    pub fn get(&self, name: &str) -> Option<String> {
        self.get_os(name).map(|v| v.to_string_lossy().into_owned())
    }
    /// Read `name`; `None` when unset or empty.
    pub fn get_nonempty(&self, name: &str) -> Option<String> {
        self.get(name).filter(|v| !v.is_empty())
    }
    /// Whether this is a docs.rs build (`DOCS_RS` set and not empty): documentation only, so no
    /// device compiler runs; the build has the empty accelerator set and its surface and
    /// bindings are generated as for `MCPP_NO_ACCEL=1`, with nothing compiled or linked.
    pub fn docs_rs(&self) -> bool {
        self.get_nonempty(DOCS_RS_ENV).is_some()
    }
    /// The names read so far, in first-read order.
    pub fn reads(&self) -> Vec<String> {
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    /// The variables to give a child process: the overrides (set or removed) on top of what
    /// the child inherits from this process.
    pub fn child_overrides(&self) -> impl Iterator<Item = (&str, Option<&OsString>)> {
        self.overrides.iter().map(|(k, v)| (k.as_str(), v.as_ref()))
    }
    /// Every variable of this view with its value, sorted by name: the process environment
    /// (when inherited) with the overrides on top and the removed variables left out. For a
    /// library that reads the environment itself, the `cc` crate ([`crate::rules::host`]), so that it
    /// sees this view and not the process. Not recorded as reads: the caller declares the
    /// variables that library reads.
    pub fn snapshot(&self) -> Vec<(OsString, OsString)> {
        let mut vars: BTreeMap<OsString, OsString> = BTreeMap::new();
        if self.inherit {
            #[allow(clippy::disallowed_methods)] // the door itself: the view's copy of the process environment
            vars.extend(std::env::vars_os());
        }
        for (k, v) in &self.overrides {
            match v {
                Some(v) => vars.insert(k.into(), v.clone()),
                None => vars.remove(std::ffi::OsStr::new(k)),
            };
        }
        vars.into_iter().collect()
    }
    /// Whether the process environment is inherited (false only for [`Env::empty`]).
    pub fn inherits(&self) -> bool {
        self.inherit
    }
}

/// Give `cmd` the environment of the view `env`: cleared first for [`Env::empty`], then the
/// overrides set or removed (the process environment itself is untouched).
pub fn apply_to(cmd: &mut std::process::Command, env: &Env) {
    if !env.inherits() {
        cmd.env_clear();
    }
    for (k, v) in env.child_overrides() {
        match v {
            Some(v) => {
                cmd.env(k, v);
            }
            None => {
                cmd.env_remove(k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_the_view_not_the_process() {
        let mut env = Env::empty();
        env.set("CXXFLAGS", "-DFROM_VIEW=1");
        env.set("GONE", "x");
        env.remove("GONE");
        assert_eq!(env.snapshot(), vec![(OsString::from("CXXFLAGS"), OsString::from("-DFROM_VIEW=1"))]);
        let mut process = Env::process();
        process.remove("PATH");
        process.set("MCPP_SNAPSHOT_PROBE", "1");
        let snap = process.snapshot();
        assert!(!snap.iter().any(|(k, _)| k == "PATH"), "a removed variable is left out");
        assert!(snap.iter().any(|(k, v)| k == "MCPP_SNAPSHOT_PROBE" && v == "1"));
        assert!(env.reads().is_empty(), "a snapshot is no read");
    }
}
