//! The lanes' plans gathered into one action graph: each rule of the registry plans its
//! selected sources ([`plan_rule`]) and names the empty placeholders of those it leaves out;
//! the host C++ lane ([`plan_host`], [`crate::rules::cxx::plan_host`]) is planned once the payload
//! surface is written; their
//! actions are appended with dependency indices shifted, their payloads, tools and link
//! directives collected in plan order, their warnings kept in order.

use super::island::IslandState;
use crate::config::accel::AccelSet;
use crate::config::cargo_facts::CargoFacts;
use crate::config::env::Env;
use crate::error::Result;
use crate::engine::graph::Action;
use crate::engine::layout::{DeviceCache, Variant};
use crate::rules::link::LinkDirective;
use crate::config::manifest::Manifest;
use crate::rules::options::RuleOptionsBox;
use crate::rules::{DeviceSource, Rule, RuleContext, RulePlan};
use crate::sources::Collected;
use crate::tool::{ToolChoices, ToolSource};
use std::path::PathBuf;

/// What the lanes plan with.
pub struct LaneInputs<'a> {
    /// The manifest.
    pub manifest: &'a Manifest,
    /// The accelerator set of the build.
    pub accel: &'a AccelSet,
    /// The classified device sources.
    pub collected: &'a Collected,
    /// The rules, in dispatch order (the indices of [`DeviceSource::rule`]).
    pub registry: &'a [Box<dyn Rule>],
    /// Each rule's options, in the same order, as validation read them ([`Rule::read_options`]).
    pub options: &'a [RuleOptionsBox],
    /// The package's device cache.
    pub cache: &'a DeviceCache,
    /// This build's variant of it.
    pub variant: &'a Variant,
    /// The environment view.
    pub env: &'a Env,
    /// The resolver's explicit choices and the build's toolchain packages.
    pub tools: &'a ToolChoices,
    /// Cargo's facts.
    pub facts: &'a CargoFacts,
    /// The island, when declared.
    pub island: Option<&'a IslandState>,
    /// Where the accelerator set came from ([`crate::pipeline::Validated::accel_origin`]),
    /// handed to the rules, which key their refusals of its entries with it.
    pub accel_origin: Option<&'a crate::config::accel::AccelOrigin>,
}

/// What every lane planned, in plan order.
#[derive(Debug, Default)]
pub struct Planned {
    /// Every action, dependency indices into this list.
    pub actions: Vec<Action>,
    /// Payloads for the surface, each with the name of the rule that made it (named in the
    /// refusal of a payload that is malformed for its kind).
    pub payloads: Vec<(&'static str, crate::surface::Payload)>,
    /// The program files the actions run (watched for changes).
    pub tool_files: Vec<PathBuf>,
    /// Whether a tool was found on PATH (the build then depends on PATH).
    pub path_tools: bool,
    /// The link directives, in plan order.
    pub link: Vec<LinkDirective>,
    /// Warnings, in plan order.
    pub warnings: Vec<String>,
    /// The host C++ lane's launcher (`cxx.launcher`, else the package's:
    /// [`crate::rules::launcher::Launchers::for_rule`]`("cxx")`) for the lane planned after the surface
    /// ([`plan_host`]): `None` while not resolved yet (no rule
    /// compiled anything, so no launcher was needed), `Some(None)` for no launcher.
    pub host_launcher: Option<Option<crate::rules::launcher::Launcher>>,
}

impl Planned {
    /// Append actions, shifting their dependency indices past the actions already planned (the
    /// host C++ lane's are appended once they ran, for the directives: their include directories
    /// are watched).
    pub fn append_actions(&mut self, mut more: Vec<Action>) {
        let base = self.actions.len();
        for a in &mut more {
            for d in &mut a.deps {
                *d += base;
            }
        }
        self.actions.extend(more);
    }

    /// Add a rule's plan.
    fn add_rule(&mut self, rule: &'static str, plan: RulePlan) {
        self.warnings.extend(plan.warnings);
        self.tool_files.extend(plan.tools.iter().map(|t| t.path.clone()));
        self.tool_files.extend(plan.watch);
        self.path_tools |= plan.tools.iter().any(|t| t.source == ToolSource::Path);
        self.append_actions(plan.actions);
        self.payloads.extend(plan.payloads.into_iter().map(|p| (rule, p)));
        self.link.extend(plan.link);
    }
}

/// Plan every rule of the registry (with the empty placeholders of the sources it leaves out,
/// [`Rule::placeholders`]); the host C++ lane comes later ([`plan_host`]).
///
/// # Errors
/// The first refusal of a rule ([`plan_rule`]) or of the host C++ lane.
pub fn plan(inputs: &LaneInputs) -> Result<Planned> {
    let mut planned = Planned::default();
    // Resolved (and refused) only when a compiler runs: an absent launcher does not stop a
    // build that starts none (`MCPP_NO_ACCEL=1 cargo doc` of a shader crate).
    let mut launchers: Option<crate::rules::launcher::Launchers> = None;
    let mut left_out: Vec<(crate::rules::launcher::Launcher, String, String)> = Vec::new();
    for (index, rule) in inputs.registry.iter().enumerate() {
        if let Some(mut plan) = plan_rule(inputs, index, rule.as_ref(), &mut planned.warnings)? {
            let compiles = plan.actions.iter().any(|a| a.builtin.is_none());
            if compiles && launchers.is_none() {
                launchers = Some(crate::rules::launcher::Launchers::resolve(inputs.manifest, inputs.env)?);
            }
            if let Some(launcher) = launchers.as_ref().filter(|_| compiles).and_then(|l| l.for_rule(rule.name())) {
                for action in plan.actions.iter_mut().filter(|a| a.builtin.is_none()) {
                    if rule.launcher_ok(action, launcher) {
                        action.tool.launcher = Some(launcher.program.clone());
                    } else if !left_out.iter().any(|(l, r, t)| l == launcher && r == rule.name() && *t == action.tool.name) {
                        left_out.push((launcher.clone(), rule.name().to_string(), action.tool.name.clone()));
                    }
                }
            }
            planned.add_rule(rule.name(), plan);
        }
        // The sources this build leaves out keep their accessors, empty (`Rule::placeholders`).
        let left_out: Vec<&DeviceSource> = inputs.collected.sources.iter().filter(|s| s.rule == index && !s.selected).collect();
        if !left_out.is_empty() {
            let placeholders = rule.placeholders(inputs.manifest, &inputs.options[index], &left_out)?;
            let doc = placeholder_doc(inputs.accel);
            planned.payloads.extend(placeholders.into_iter().map(|p| (rule.name(), if p.doc.is_some() { p } else { p.with_doc(doc.clone()) })));
        }
    }
    // The package-level edges: an action over other actions' outputs runs after them.
    crate::engine::graph::connect_inputs(&mut planned.actions)?;
    // Said once per launcher: which compilers run without it.
    let mut seen: Vec<&crate::rules::launcher::Launcher> = Vec::new();
    for (launcher, _, _) in &left_out {
        if seen.contains(&launcher) {
            continue;
        }
        seen.push(launcher);
        let tools: Vec<(String, String)> = left_out.iter().filter(|(l, _, _)| l == launcher).map(|(_, r, t)| (r.clone(), t.clone())).collect();
        planned.warnings.extend(crate::rules::launcher::left_out_warning(launcher, &tools));
    }
    // The host C++ lane, planned later, takes its table's `launcher` (`cxx.launcher`), else the
    // package's; resolved there when it compiles something unless a rule already did.
    planned.host_launcher = launchers.map(|l| l.for_rule("cxx").cloned());
    Ok(planned)
}

/// The doc sentence of a placeholder whose rule gives none ([`Rule::placeholders`]): it is
/// empty, which accelerator set left it out, and how code tells.
fn placeholder_doc(accel: &AccelSet) -> String {
    let set = if accel.is_empty() { "none: `--no-accel`, `MCPP_NO_ACCEL=1` or a docs.rs build".to_string() } else { format!("`{accel}`") };
    format!("Empty: not built in this build (accelerator set {set}). Its size is 0 (`is_empty()` in Rust, `size_bytes == 0` in C++): check before handing it to a device API.")
}

/// Plan the host C++ lane ([`crate::rules::cxx::plan_host`]) once the payload surface is written (its
/// implementation unit holds the payloads' bytes, so it is planned after the rules' actions
/// ran): `cxx-sources`, the island's units, and the surface's units when there is a surface.
/// Returns its actions (dependency indices local to them, the package's launcher in front of
/// the compilers it handles); its link directives, watched files and the launcher's warning are
/// added to `planned`, after the rules'.
///
/// # Errors
/// The host C++ lane's refusal.
pub fn plan_host(inputs: &LaneInputs, surface: Option<crate::rules::cxx::SurfaceUnits>, planned: &mut Planned) -> Result<Vec<Action>> {
    let island = inputs.island.map(IslandState::cxx_units);
    let Some(mut host) = crate::rules::cxx::plan_host(inputs.manifest, island, surface, (inputs.env, inputs.facts, inputs.tools), inputs.cache, inputs.variant)? else { return Ok(Vec::new()) };
    if planned.host_launcher.is_none() && host.actions.iter().any(|a| a.builtin.is_none()) {
        planned.host_launcher = Some(crate::rules::launcher::Launchers::resolve(inputs.manifest, inputs.env)?.for_rule("cxx").cloned());
    }
    if let Some(launcher) = planned.host_launcher.as_ref().and_then(Option::as_ref) {
        let mut left_out: Vec<(String, String)> = Vec::new();
        for action in host.actions.iter_mut().filter(|a| a.builtin.is_none()) {
            if launcher.handles(&action.tool) {
                action.tool.launcher = Some(launcher.program.clone());
            } else if !left_out.iter().any(|(_, t)| *t == action.tool.name) {
                left_out.push(("cxx".to_string(), action.tool.name.clone()));
            }
        }
        planned.warnings.extend(crate::rules::launcher::left_out_warning(launcher, &left_out));
    }
    planned.link.extend(host.link);
    planned.tool_files.extend(host.watch);
    Ok(host.actions)
}

/// Plan rule `index`'s selected sources; `None` (with a warning when it matters) when the
/// accelerator set names no backend of the rule, or the rule has no selected source.
///
/// # Errors
/// The rule's refusal.
pub fn plan_rule(inputs: &LaneInputs, index: usize, rule: &dyn Rule, warnings: &mut Vec<String>) -> Result<Option<RulePlan>> {
    let collected = inputs.collected;
    let mine: Vec<&DeviceSource> = collected.sources.iter().filter(|s| s.rule == index && s.selected).collect();
    let Some(entry) = inputs.accel.entry(rule.backend()) else {
        let left_out = collected.sources.iter().filter(|s| s.rule == index).count();
        if left_out > 0 && !inputs.accel.is_empty() {
            warnings.push(format!("{left_out} {} source(s) left out: the accelerator set `{}` names no {}", rule.name(), inputs.accel, rule.backend()));
        }
        return Ok(None);
    };
    if mine.is_empty() {
        if let Some(w) = nothing_for_backend(inputs, index, rule) {
            warnings.push(w);
        }
        return Ok(None);
    }
    let ctx = RuleContext {
        manifest: inputs.manifest,
        options: &inputs.options[index],
        accel: entry,
        set: inputs.accel,
        cache: inputs.cache,
        variant: inputs.variant,
        env: inputs.env,
        tools: inputs.tools,
        facts: inputs.facts,
        island: inputs.island.map(|i| &i.boundary),
        accel_origin: inputs.accel_origin,
    };
    rule.plan(&ctx, &mine).map(Some)
}

/// Several rules may compile for one backend (GLSL and Slang both target vulkan): the backend
/// has nothing to compile only when none of them has a selected source, nor a rule that reads
/// its entry ([`Rule::borrows`]: HIP on NVIDIA), and that is said once, by the first of them,
/// naming them all.
fn nothing_for_backend(inputs: &LaneInputs, index: usize, rule: &dyn Rule) -> Option<String> {
    let registry = inputs.registry;
    let same_backend: Vec<usize> = (0..registry.len()).filter(|&i| registry[i].backend() == rule.backend()).collect();
    // A rule with selected sources that reads this backend's entry (HIP on NVIDIA and `cuda`) uses it.
    let borrowed = inputs.collected.sources.iter().any(|s| s.selected && registry[s.rule].borrows().contains(&rule.backend()));
    let backend_has_sources = borrowed || inputs.collected.sources.iter().any(|s| s.selected && same_backend.contains(&s.rule));
    if backend_has_sources || same_backend.first() != Some(&index) {
        return None;
    }
    let names: Vec<&str> = same_backend.iter().map(|&i| registry[i].name()).collect();
    Some(format!("the accelerator set names {} but no source in `sources` is a {} source; nothing was compiled for it", rule.backend(), names.join(" or ")))
}
