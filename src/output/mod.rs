//! What a build says: cargo directives, the side channel's events and the compilers' diagnostics.

pub mod cargo_output;
pub mod diagnostic;
pub mod report;
