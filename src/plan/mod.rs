//! What one build plans below the orchestrator (`pipeline`), shared with `cargo mcpp fetch`
//! (`crate::fetch`), which does not import the orchestrator: the accelerator set with its
//! origin ([`accel`]) and the toolchain packages the build needs ([`toolchain_packages`]).

pub mod accel;
pub mod toolchain_packages;
