//! The library without its `engine` feature: the earlier build.rs form (a `cargo-mcpp`
//! build-dependency with `default-features = false`, build.rs calling `cargo_mcpp::build()`)
//! refused with the lines to write instead. Build scripts depend on `mcpp-build`.

/// The refusal: printed on standard error (cargo shows a failed build script's), and the exit
/// status.
fn refuse() -> ! {
    let message = "the cargo-mcpp library without its `engine` feature no longer runs a build script's device phase: build scripts use the mcpp-build crate";
    let help = concat!(
        "in Cargo.toml write `mcpp-build = \"",
        env!("CARGO_PKG_VERSION"),
        "\"` in [build-dependencies] instead of cargo-mcpp, and in build.rs `mcpp_build::build();`"
    );
    eprintln!("\nerror: {message}\n  help: {help}\n");
    std::process::exit(3)
}

/// The earlier build.rs builder; refused (see [`build`]).
#[doc(hidden)]
#[deprecated(
    note = "build scripts use the mcpp-build crate: `mcpp-build = \"0.1\"` in [build-dependencies], `mcpp_build::Build` in build.rs"
)]
#[derive(Debug, Clone, Default)]
pub struct Build {}

#[allow(deprecated)]
impl Build {
    /// Refused (see [`build`]).
    pub fn new() -> Build {
        Build {}
    }
    /// Refused (see [`build`]).
    pub fn accel(&mut self, _spec: &str) -> &mut Build {
        self
    }
    /// Refused (see [`build`]).
    pub fn no_accel(&mut self) -> &mut Build {
        self
    }
    /// Refused (see [`build`]).
    pub fn release(&mut self, _release: bool) -> &mut Build {
        self
    }
    /// Refused (see [`build`]).
    pub fn jobs(&mut self, _jobs: usize) -> &mut Build {
        self
    }
    /// Refused (see [`build`]).
    pub fn tool(&mut self, _name: &str, _path: impl Into<std::path::PathBuf>) -> &mut Build {
        self
    }
    /// Refused (see [`build`]).
    pub fn env(&mut self, _name: &str, _value: impl Into<std::ffi::OsString>) -> &mut Build {
        self
    }
    /// Refused (see [`build`]).
    pub fn env_remove(&mut self, _name: &str) -> &mut Build {
        self
    }
    /// Refused (see [`build`]).
    pub fn compile(&self) {
        refuse()
    }
}

/// The earlier build.rs form without the `engine` feature: refused, naming the `mcpp-build`
/// lines to write (exit status 3).
#[doc(hidden)]
#[deprecated(
    note = "build scripts use the mcpp-build crate: `mcpp-build = \"0.1\"` in [build-dependencies], `mcpp_build::build();` in build.rs"
)]
pub fn build() {
    refuse()
}
