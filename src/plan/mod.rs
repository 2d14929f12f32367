//! The planning steps of the device phase, below the orchestrator ([`crate::pipeline::run`]),
//! in the order it takes them: the accelerator set with its origin ([`accel`]) and the
//! toolchain packages the build needs ([`toolchain_packages`]), both shared with
//! `cargo mcpp fetch` (`crate::toolchain_package::fetch`, which does not import the orchestrator); what a run is
//! given ([`config`]), the island prepared before the rules plan ([`island`]), the rules' and
//! the host C++ lane's actions gathered into one graph ([`lanes`]), and what the build script
//! tells cargo ([`directives`]); the include directories shared with dependents and taken from dependencies ([`exports`]); where each payload's bytes live ([`storage`]). Paths come from [`crate::engine::layout`], computed once.

pub mod accel;
pub mod config;
pub mod edit;
pub mod directives;
pub mod exports;
pub mod island;
pub mod lanes;
pub mod storage;
pub mod toolchain_packages;
