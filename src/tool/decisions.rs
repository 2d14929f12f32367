//! The resolver's record: every decision (the program, its version, what named it, what was
//! consulted before it, the toolkit root) and every refusal, kept per tool in the device cache's
//! `tool-decisions.json` ([`DeviceCache::tool_decisions`]) for `cargo mcpp why tool <name>`.

use super::{Tool, ToolSpec, ToolkitRoot};
use crate::error::{Error, ErrorKind, Result};
use crate::engine::layout::DeviceCache;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One resolver decision, as recorded in `tool-decisions.json` ([`DeviceCache::tool_decisions`]) and printed by `cargo mcpp why tool`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The tool name.
    pub tool: String,
    /// The program used; `None` when nothing answered (the refusal is in `refusal`).
    pub answer: Option<PathBuf>,
    /// The first line of its version.
    pub version: Option<String>,
    /// `choice`, `env`, `override`, `root`, `toolchain-package`, `path`, `derived` or `none`.
    pub source: String,
    /// What made the decision, with its line: `/p/Cargo.toml:12 [package.metadata.mcpp.tools] glslc`,
    /// `the environment variable GLSLC=/usr/bin/glslc`, `toolchain package glslang 13.1.1 (pinned at /p/Cargo.toml:9)`.
    pub origin: String,
    /// The sources consulted before it, in order, each with why it did not answer.
    pub considered: Vec<String>,
    /// The PATH warning, when there was one.
    pub warning: Option<String>,
    /// The refusal text, when nothing answered.
    pub refusal: Option<String>,
    /// For a toolkit tool: the toolkit root used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit: Option<PathBuf>,
    /// For a toolkit tool: what named the root, with its value or line
    /// (`the environment variable CUDA_PATH=/opt/cuda`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit_origin: Option<String>,
    /// Why the rule runs this tool rather than its alternative, when the manifest does not say
    /// (the CUDA route: clang++ because the host C++ compiler is clang) ([`add_reason`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Add `reason` to the recorded decision of `tool` (already recorded by the resolver), for
/// `cargo mcpp why tool`.
///
/// # Errors
/// [`ErrorKind::Io`] when the record cannot be written.
pub fn add_reason(cache: &DeviceCache, tool: &str, reason: &str) -> Result<()> {
    let Some(mut d) = read_decisions(cache).remove(tool) else { return Ok(()) };
    d.reason = Some(reason.to_string());
    record(cache, d)
}

/// Read the recorded decisions of `cache` (empty when none were recorded or the file is not
/// readable JSON).
pub fn read_decisions(cache: &DeviceCache) -> BTreeMap<String, Decision> {
    std::fs::read(cache.tool_decisions()).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

/// Record `d` as the decision for its tool, keeping the other tools' records.
fn record(cache: &DeviceCache, d: Decision) -> Result<()> {
    let mut all = read_decisions(cache);
    all.insert(d.tool.clone(), d);
    let json = serde_json::to_vec_pretty(&all).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
    crate::engine::fingerprint::write_if_changed(&cache.tool_decisions(), &json)?;
    Ok(())
}

/// Record `decision` for `cargo mcpp why tool`, made outside the resolver's order: a file
/// `cargo mcpp pack` takes rather than runs (the AppImage runtime: `--runtime-file`, the
/// manifest's `runtime-file`, or its toolchain package), so every input a command uses is
/// explained in one place, the device cache's `tool-decisions.json`.
///
/// # Errors
/// [`ErrorKind::Io`] when the decisions file cannot be written.
pub fn record_decision(cache: &DeviceCache, decision: Decision) -> Result<()> {
    record(cache, decision)
}

/// Record that `spec` could not be resolved (`error`), so `cargo mcpp why tool` never shows an
/// earlier build's answer after a refusal.
pub fn record_refusal(spec: &ToolSpec, error: &Error, cache: &DeviceCache) {
    record_refusal_after(spec, error, Vec::new(), cache);
}

/// As [`record_refusal`], with the sources consulted before nothing answered.
pub(super) fn record_refusal_after(spec: &ToolSpec, error: &Error, considered: Vec<String>, cache: &DeviceCache) {
    let _ = record(
        cache,
        Decision {
            tool: spec.name.to_string(),
            answer: None,
            version: None,
            source: "none".into(),
            origin: "nothing answered".into(),
            considered,
            warning: None,
            refusal: Some(error.to_string()),
            toolkit: None,
            toolkit_origin: None,
            reason: None,
        },
    );
}

/// Record the answer `tool` (decided by `origin`, after `considered`, in `toolkit`) for
/// `cargo mcpp why tool`.
pub(super) fn record_answer(tool: &Tool, origin: String, considered: Vec<String>, warning: Option<String>, toolkit: Option<&ToolkitRoot>, cache: &DeviceCache) -> Result<()> {
    record(
        cache,
        Decision {
            tool: tool.name.clone(),
            answer: Some(tool.path.clone()),
            version: Some(tool.version_line().to_string()),
            source: tool.source.class().to_string(),
            origin,
            considered,
            warning,
            refusal: None,
            toolkit: toolkit.map(|t| t.root.clone()),
            toolkit_origin: toolkit.map(|t| t.origin.clone()),
            reason: None,
        },
    )
}
