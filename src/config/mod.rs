//! What a build is given: the manifest, the accelerator set, the environment view and cargo's facts.

pub mod accel;
pub mod cargo_facts;
pub mod env;
pub mod manifest;
