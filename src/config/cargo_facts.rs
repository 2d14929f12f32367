//! Cargo's facts about one build, read in one place: the target and host triples, the
//! profile, its optimisation level and whether it carries debug information. A build script
//! gets them from cargo (`TARGET`, `HOST`, `PROFILE`, `OPT_LEVEL`, `DEBUG`); nothing else in
//! cargo-mcpp guesses them (one device phase: the CLI used to compute its own target
//! and profile, and its bytes disagreed with the build script's).
//!
//! How the facts decide device optimisation (the guide, "Optimisation follows cargo"):
//!
//! | `OPT_LEVEL` | nvcc / clang CUDA | glslangValidator | glslc |
//! |---|---|---|---|
//! | `0` | `-O0` | no `-O` flag | `-O0` |
//! | `1`, `2`, `3` | `-O3` | `-Os` | `-O` |
//! | `s`, `z` | `-O3` | `-Os` | `-Os` |
//!
//! A rule's `optimize` key overrides the on/off decision; `DEBUG` is recorded for rules that
//! want it. The host C++ lane gives the `cc` crate the level and the debug flag as they are.

use crate::config::env::Env;

/// A profile's `opt-level`, as cargo passes it in `OPT_LEVEL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptLevel {
    /// `0`: no optimisation.
    O0,
    /// `1`.
    O1,
    /// `2`.
    O2,
    /// `3`.
    O3,
    /// `"s"`: optimise for size.
    Size,
    /// `"z"`: optimise for size, harder.
    MinSize,
}

impl OptLevel {
    /// Parse cargo's spelling (`0`..`3`, `s`, `z`); `None` for anything else.
    pub fn parse(text: &str) -> Option<OptLevel> {
        Some(match text.trim() {
            "0" => OptLevel::O0,
            "1" => OptLevel::O1,
            "2" => OptLevel::O2,
            "3" => OptLevel::O3,
            "s" => OptLevel::Size,
            "z" => OptLevel::MinSize,
            _ => return None,
        })
    }
    /// Cargo's spelling, as the `cc` crate takes it (`"0"`, `"3"`, `"s"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OptLevel::O0 => "0",
            OptLevel::O1 => "1",
            OptLevel::O2 => "2",
            OptLevel::O3 => "3",
            OptLevel::Size => "s",
            OptLevel::MinSize => "z",
        }
    }
    /// Whether device code is optimised (every level but `0`).
    pub fn optimizes(self) -> bool {
        self != OptLevel::O0
    }
    /// Whether the level asks for small code (`s`, `z`).
    pub fn for_size(self) -> bool {
        matches!(self, OptLevel::Size | OptLevel::MinSize)
    }
}

/// What cargo says about the build a build script belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoFacts {
    /// `TARGET`: the triple the crate is compiled for.
    pub target: String,
    /// `HOST`: the triple of the machine running the build.
    pub host: String,
    /// `PROFILE`: `debug` or `release` (cargo's coarse name; custom profiles map to one of them).
    pub profile: String,
    /// `OPT_LEVEL`.
    pub opt_level: OptLevel,
    /// `DEBUG`: whether the profile emits debug information.
    pub debug: bool,
}

impl CargoFacts {
    /// Read the facts from a build script's environment. Outside cargo (tests driving the
    /// library directly) a missing `TARGET`/`HOST` is this machine's triple, a missing
    /// `OPT_LEVEL` is `3` under `PROFILE=release` and `0` otherwise, and a missing `DEBUG` is
    /// the opposite of optimising.
    pub fn from_env(env: &Env) -> CargoFacts {
        let profile = env.get_nonempty("PROFILE").unwrap_or_else(|| "debug".to_string());
        let opt_level = env.get_nonempty("OPT_LEVEL").and_then(|v| OptLevel::parse(&v)).unwrap_or(if profile == "release" { OptLevel::O3 } else { OptLevel::O0 });
        let debug = env.get_nonempty("DEBUG").map(|v| v != "false" && v != "0" && v != "none").unwrap_or(!opt_level.optimizes());
        CargoFacts {
            target: env.get_nonempty("TARGET").unwrap_or_else(this_machine_triple),
            host: env.get_nonempty("HOST").unwrap_or_else(this_machine_triple),
            profile,
            opt_level,
            debug,
        }
    }
    /// The facts with the optimisation forced on (`opt-level 3`, no debug info) or off
    /// (`opt-level 0`, debug info): [`crate::Build::release`].
    pub fn with_release(mut self, release: bool) -> CargoFacts {
        self.opt_level = if release { OptLevel::O3 } else { OptLevel::O0 };
        self.debug = !release;
        self
    }
    /// Whether the target is not the host (a cross build).
    pub fn is_cross(&self) -> bool {
        self.target != self.host
    }
}

/// The triple of the machine cargo-mcpp was compiled for: the stand-in for `TARGET`/`HOST`
/// outside a build script.
pub fn this_machine_triple() -> String {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "linux" => format!("{arch}-unknown-linux-gnu"),
        "macos" => format!("{arch}-apple-darwin"),
        "windows" => format!("{arch}-pc-windows-msvc"),
        os => format!("{arch}-unknown-{os}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(vars: &[(&str, &str)]) -> CargoFacts {
        let mut env = Env::empty();
        for (k, v) in vars {
            env.set(k, v);
        }
        CargoFacts::from_env(&env)
    }

    #[test]
    fn the_opt_level_is_cargos_not_the_profile_name() {
        // A custom profile inheriting release reaches the build script as PROFILE=release.
        assert_eq!(facts(&[("PROFILE", "release"), ("OPT_LEVEL", "s")]).opt_level, OptLevel::Size);
        // A release profile with opt-level = 0 does not optimise.
        let f = facts(&[("PROFILE", "release"), ("OPT_LEVEL", "0"), ("DEBUG", "true")]);
        assert!(!f.opt_level.optimizes() && f.debug);
        // A dev profile with opt-level = 2 does.
        assert!(facts(&[("PROFILE", "debug"), ("OPT_LEVEL", "2")]).opt_level.optimizes());
        // Outside cargo: the profile decides.
        assert_eq!(facts(&[("PROFILE", "release")]).opt_level, OptLevel::O3);
        assert_eq!(facts(&[]).opt_level, OptLevel::O0);
        assert!(!facts(&[("DEBUG", "false")]).debug);
    }

    #[test]
    fn the_target_is_cargos() {
        let f = facts(&[("TARGET", "aarch64-unknown-linux-gnu"), ("HOST", "x86_64-unknown-linux-gnu")]);
        assert_eq!(f.target, "aarch64-unknown-linux-gnu");
        assert!(f.is_cross());
        assert!(!facts(&[]).is_cross());
    }
}
