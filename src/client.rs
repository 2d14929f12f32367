//! The library without its `engine` feature: a build.rs client with no dependencies but
//! `mcpp-build`. [`build`] and [`Build`] run the installed `cargo-mcpp` executable as the
//! engine of the device phase, through [`mcpp_build`] (its engine lookup, handshake, version
//! check and protocol; see that crate's docs): `CARGO_MCPP`, else `$CARGO_HOME/bin/cargo-mcpp`,
//! never PATH.
//!
//! Why: cargo resolves and fingerprints every package of the build graph on every `cargo
//! build`, even one with nothing to do; the engine's ~45 packages (serde, toml, sha2, cc, ...)
//! cost a no-op build of the crate ~80 ms over an empty crate's (README "Benchmark"), this
//! client costs what `mcpp-build` costs. The engine in the process is the `engine` feature.
//!
//! [`Build`]'s methods are those of the engine's `Build` with the same signatures (the feature
//! is additive: a crate that turns `engine` on for another dependent keeps compiling), and the
//! engine applies each through that `Build`'s method of the same name.

/// The device phase of a build script, configured; run by the installed engine.
///
/// Defaults are the engine's (`cargo_mcpp::Build` with the `engine` feature): the manifest's
/// accelerator set, cargo's `OPT_LEVEL`/`DEBUG`, `NUM_JOBS` and cargo's jobserver, the
/// resolver's order for every tool, the build script's environment.
#[derive(Debug, Clone)]
pub struct Build {
    client: mcpp_build::Build,
}

impl Default for Build {
    fn default() -> Self {
        Build::new()
    }
}

impl Build {
    /// A builder with every default (see the type docs).
    pub fn new() -> Build {
        let mut client = mcpp_build::Build::new();
        client.client("cargo-mcpp");
        Build { client }
    }
    /// Override the accelerator set (as `cargo mcpp build --accel SPEC`).
    pub fn accel(&mut self, spec: &str) -> &mut Build {
        self.client.accel(spec);
        self
    }
    /// Build with no accelerator (as `--no-accel`): no device source compiles.
    pub fn no_accel(&mut self) -> &mut Build {
        self.client.no_accel();
        self
    }
    /// Optimise device code (`true`: as `OPT_LEVEL=3`) or not (`false`: as `OPT_LEVEL=0` with
    /// debug info). Default: cargo's `OPT_LEVEL` and `DEBUG`.
    pub fn release(&mut self, release: bool) -> &mut Build {
        self.client.release(release);
        self
    }
    /// Parallel compilers when cargo's jobserver is absent (default `NUM_JOBS`, else the CPUs).
    pub fn jobs(&mut self, jobs: usize) -> &mut Build {
        self.client.jobs(jobs);
        self
    }
    /// Name a tool's program explicitly (first in the resolver's order), e.g.
    /// `.tool("glslc", "/opt/shaderc/bin/glslc")`. The calling line is recorded with the
    /// decision (`cargo mcpp why tool glslc` prints it).
    #[track_caller]
    pub fn tool(&mut self, name: &str, path: impl Into<std::path::PathBuf>) -> &mut Build {
        self.client.tool(name, path);
        self
    }
    /// Set an environment variable for this build's view (the process environment is untouched).
    pub fn env(&mut self, name: &str, value: impl Into<std::ffi::OsString>) -> &mut Build {
        self.client.env(name, value);
        self
    }
    /// Hide an environment variable from this build's view.
    pub fn env_remove(&mut self, name: &str) -> &mut Build {
        self.client.env_remove(name);
        self
    }
    /// Run the device phase in the engine and pass its cargo directives on. On a refusal or
    /// failure, the error is printed (cargo shows a build script's output when it fails) and the
    /// build script exits with the engine's status (1 when no engine could be found or started).
    pub fn compile(&self) {
        self.client.compile();
    }
}

/// The whole `build.rs`: `fn main() { cargo_mcpp::build(); }`, run by the installed engine.
pub fn build() {
    Build::new().compile();
}
