//! The integration tests, one binary: the harness and every suite compiled once.
//!
//! Run one suite with `cargo test --test integration <suite>::` (for example
//! `cargo test --test integration slang::`); CONTRIBUTING.md lists which toolchain each needs.
//! The tests that change the process environment stay in binaries of their own
//! (`tests/launcher_sccache.rs`, `tests/launcher_sccache_dist.rs`, `tests/launcher_ccache.rs`,
//! `tests/launcher_shared_cache.rs`).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

mod harness;

mod accepted;
mod archive;
mod ascend;
mod build_client;
mod check_doc;
mod cli;
mod compile_commands;
mod containment;
mod cross;
mod cuda;
mod cuda_link;
mod cuda_ptx;
mod cxx_surface;
mod dependency_includes;
mod device_phase;
mod docs;
mod embed;
mod example_cuda_ptx;
mod example_cuda_saxpy;
mod example_hip_saxpy;
mod example_shader_cxx;
mod external_rule;
mod hip;
mod host_toolchain;
mod init;
mod kill;
mod launcher;
mod manifest_fuzz;
mod message_format;
mod pack_appimage;
mod pack_msi;
mod packaging;
mod per_entry;
mod plan_edit;
mod refusals;
mod refusals_cuda;
mod refusals_embed;
mod refusals_hip;
mod refusals_pack;
mod refusals_spirv;
mod refusals_storage;
mod refusals_sycl;
mod resolver;
mod shim;
mod slang;
mod spirv_real;
mod stale_matrix;
mod storage;
mod storage_per_glob;
mod surface;
mod sycl;
mod tidy;
mod toolchain_package_reverify;
mod toolchain_packages;
mod validate_plan;
mod wgsl;
