//! The one writer of cargo directives (`cargo::rerun-if-changed=`, `cargo::rustc-cfg=`, ...),
//! as cc-rs `CargoOutput`. Directives are collected, then printed by [`crate::build`] at the
//! end, so a refused build prints its error and nothing half-done.

use std::path::Path;

/// The directives one run produced, in order, without duplicates.
#[derive(Debug, Default, Clone)]
pub struct CargoOutput {
    lines: Vec<String>,
}

impl CargoOutput {
    fn push(&mut self, line: String) {
        if !self.lines.contains(&line) {
            self.lines.push(line);
        }
    }
    /// `cargo::rerun-if-changed=<path>`, only for a path that exists: a missing path makes
    /// cargo rerun the build script on every build.
    pub fn rerun_if_changed(&mut self, path: &Path) {
        if path.exists() {
            self.push(format!("cargo::rerun-if-changed={}", path.display()));
        }
    }
    /// `cargo::rerun-if-env-changed=<name>`.
    pub fn rerun_if_env_changed(&mut self, name: &str) {
        self.push(format!("cargo::rerun-if-env-changed={name}"));
    }
    /// `cargo::rustc-cfg=<cfg>`.
    pub fn rustc_cfg(&mut self, cfg: &str) {
        self.push(format!("cargo::rustc-cfg={cfg}"));
    }
    /// `cargo::rustc-check-cfg=<cfg>`.
    pub fn rustc_check_cfg(&mut self, cfg: &str) {
        self.push(format!("cargo::rustc-check-cfg={cfg}"));
    }
    /// `cargo::rustc-env=<name>=<value>`.
    pub fn rustc_env(&mut self, name: &str, value: &str) {
        self.push(format!("cargo::rustc-env={name}={value}"));
    }
    /// `cargo::metadata=<key>=<value>`: cargo passes it to the build scripts of the packages
    /// depending on this one (which must have `links`) as `DEP_<LINKS>_<KEY>`.
    pub fn metadata(&mut self, key: &str, value: &str) {
        self.push(format!("cargo::metadata={key}={value}"));
    }
    /// `cargo::warning=cargo-mcpp: <line>`, one directive per line of `text`. This is the one
    /// place the `cargo-mcpp: ` prefix is added (cargo shows `warning: <pkg>@<ver>: cargo-mcpp:
    /// ...`); a line that already starts with it keeps one, so no warning prints it twice.
    pub fn warning(&mut self, text: &str) {
        for line in text.lines() {
            self.push(warning_directive(line));
        }
    }
    /// `cargo::rustc-link-search=native=<dir>`.
    pub fn link_search(&mut self, dir: &Path) {
        self.push(format!("cargo::rustc-link-search=native={}", dir.display()));
    }
    /// `cargo::rustc-link-lib=<spec>` (e.g. `static=mcpp_kernels`, `dylib=stdc++`).
    pub fn link_lib(&mut self, spec: &str) {
        self.push(format!("cargo::rustc-link-lib={spec}"));
    }
    /// `cargo::rustc-link-arg=<arg>`.
    pub fn link_arg(&mut self, arg: &str) {
        self.push(format!("cargo::rustc-link-arg={arg}"));
    }
    /// Print the directives on standard output, in order: what a build script says to cargo.
    /// The one place cargo-mcpp prints a directive (`cargo xtask tidy` checks that no other
    /// module spells one).
    pub fn print(&self) {
        for line in &self.lines {
            println!("{line}");
        }
    }
    /// The directives, in order.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }
    /// The warnings only (their text, without the directive and the `cargo-mcpp: ` prefix).
    pub fn warnings(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|l| l.strip_prefix("cargo::warning=")).map(|w| w.strip_prefix(WARNING_PREFIX).unwrap_or(w))
    }
}

/// What every warning of cargo-mcpp starts with, after cargo's own `warning: <pkg>@<ver>: `.
pub const WARNING_PREFIX: &str = "cargo-mcpp: ";

/// The directive for one warning line: `cargo::warning=cargo-mcpp: <line>`, the prefix added
/// once (a `line` that already carries it, or several copies of it, keeps exactly one).
pub fn warning_directive(line: &str) -> String {
    let mut text = line;
    while let Some(rest) = text.strip_prefix(WARNING_PREFIX) {
        text = rest;
    }
    format!("cargo::warning={WARNING_PREFIX}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_carries_the_prefix_exactly_once() {
        let mut c = CargoOutput::default();
        c.warning("no accelerator\ncargo-mcpp: cargo-mcpp: two device sources map to one payload name");
        assert_eq!(c.lines(), ["cargo::warning=cargo-mcpp: no accelerator", "cargo::warning=cargo-mcpp: two device sources map to one payload name"]);
        assert_eq!(c.warnings().collect::<Vec<_>>(), ["no accelerator", "two device sources map to one payload name"]);
    }
}
