//! The planning steps of the device phase, in the order [`crate::pipeline::run`] takes them:
//! what a run is given ([`config`]), the island prepared before the rules plan ([`island`]),
//! the rules' and the host C++ lane's actions gathered into one graph ([`lanes`]), and what the
//! build script tells cargo ([`directives`]). Paths come from [`crate::layout`], computed once.

pub mod config;
pub mod directives;
pub mod island;
pub mod lanes;
