//! The planned actions as a build script may adjust them before they run (`mcpp_build::Build::
//! edit_plan`): an argument of a command, an extra input, an order between two actions. The
//! rare build that needs it (a flag a rule has no key for, a generated file a compile reads that
//! no depfile can name) gets it without a fork of the rule; everything else about the action
//! (its tool, its outputs, its fingerprint) stays the engine's. An edited argument or input is
//! part of the action's fingerprint, so exactly the edited actions rerun.
//!
//! The public items here are re-exported by `mcpp-build` as `mcpp_build::plan`.

use crate::engine::graph::Action;
use crate::error::{Error, ErrorKind, Result};
use crate::rules::external::Refusal;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One planned action, as [`Plan`] shows it.
#[derive(Debug, Clone)]
pub struct PlannedAction {
    id: String,
    program: PathBuf,
    in_process: bool,
    args: Vec<OsString>,
    inputs: Vec<PathBuf>,
    added_inputs: Vec<PathBuf>,
    outputs: Vec<PathBuf>,
    after: Vec<String>,
}

impl PlannedAction {
    /// Its stable id: the rule and the source (`spirv:shaders/a.comp`, `cuda:device-link`).
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The program it starts (absolute), or the name of the in-process step
    /// ([`PlannedAction::is_in_process`]).
    pub fn program(&self) -> &Path {
        &self.program
    }
    /// Whether it runs in the engine's process (WGSL through naga, an archive): it then has no
    /// argument list to edit.
    pub fn is_in_process(&self) -> bool {
        self.in_process
    }
    /// The arguments after the program.
    pub fn args(&self) -> &[OsString] {
        &self.args
    }
    /// The arguments after the program, to edit: passed as they are, never through a shell.
    pub fn args_mut(&mut self) -> &mut Vec<OsString> {
        &mut self.args
    }
    /// Its declared inputs (their bytes are part of its fingerprint), the added ones last.
    pub fn inputs(&self) -> Vec<&Path> {
        self.inputs.iter().chain(&self.added_inputs).map(PathBuf::as_path).collect()
    }
    /// Declare one more input: its bytes become part of the fingerprint, so an edit of it
    /// reruns the action. When another action writes it, this action runs after that one.
    pub fn add_input(&mut self, path: impl Into<PathBuf>) -> &mut PlannedAction {
        self.added_inputs.push(path.into());
        self
    }
    /// The files it writes.
    pub fn outputs(&self) -> &[PathBuf] {
        &self.outputs
    }
    /// Run it after the action `id` (and again whenever that one reruns).
    pub fn run_after(&mut self, id: impl Into<String>) -> &mut PlannedAction {
        self.after.push(id.into());
        self
    }
}

/// The actions a device phase planned, in plan order.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    actions: Vec<PlannedAction>,
}

impl Plan {
    /// Every action.
    pub fn actions(&self) -> &[PlannedAction] {
        &self.actions
    }
    /// Every action, to edit.
    pub fn actions_mut(&mut self) -> &mut [PlannedAction] {
        &mut self.actions
    }
    /// The action `id`, to edit; `None` when there is none (a source this build leaves out).
    pub fn action_mut(&mut self, id: &str) -> Option<&mut PlannedAction> {
        self.actions.iter_mut().find(|a| a.id == id)
    }
}

/// An edit of the plan, as `mcpp_build::Build::edit_plan` takes it.
pub type PlanEdit = Arc<dyn Fn(&mut Plan) -> std::result::Result<(), Refusal> + Send + Sync>;

/// The edits a build script gave, in call order.
#[derive(Clone, Default)]
pub struct PlanEdits {
    /// The edits.
    pub edits: Vec<PlanEdit>,
    /// The build.rs line of each (`build.rs:9`), in the same order; may be shorter.
    pub at: Vec<String>,
}

impl fmt::Debug for PlanEdits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PlanEdits({} at {:?})", self.edits.len(), self.at)
    }
}

fn refusal(message: String, at: Option<&String>) -> Error {
    let e = Error::new(ErrorKind::Usage, message).key("Build::edit_plan");
    match at {
        Some(at) => e.file(at),
        None => e,
    }
}

/// Run `edits` over `actions` and apply what they changed: arguments, added inputs (an edge to
/// the action that writes one), `run_after` edges. The actions are then put in an order where
/// every action comes after those it waits for (the graph's order).
///
/// # Errors
/// [`ErrorKind::Usage`] naming `Build::edit_plan`: an edit's own refusal; arguments given to an
/// in-process action or holding a NUL; an added input that neither exists nor is written by an
/// action; `run_after` of an unknown id or of the action itself; edges that make a cycle.
pub(crate) fn apply(edits: &PlanEdits, actions: &mut Vec<Action>) -> Result<()> {
    if edits.edits.is_empty() {
        return Ok(());
    }
    // A refusal of what the edits did names the first edit's line (one edit is the usual).
    let first = edits.at.first();
    let mut plan = Plan {
        actions: actions
            .iter()
            .map(|a| PlannedAction {
                id: a.id.clone(),
                program: a.tool.path.clone(),
                in_process: a.builtin.is_some(),
                args: a.args.clone(),
                inputs: a.inputs.clone(),
                added_inputs: Vec::new(),
                outputs: a.outputs.clone(),
                after: Vec::new(),
            })
            .collect(),
    };
    for (i, edit) in edits.edits.iter().enumerate() {
        edit(&mut plan).map_err(|r| {
            let about = r.key_name().map(|k| format!(" (about `{k}`)")).unwrap_or_default();
            let mut e = refusal(format!("the build script's plan edit refused the build: {r}{about}"), edits.at.get(i));
            e.help.extend(r.help_lines());
            e
        })?;
    }
    let ids: Vec<String> = actions.iter().map(|a| a.id.clone()).collect();
    // Which action writes each file: an added input that one writes is an edge to it (the
    // plan's own inputs have their edges already).
    let mut writer: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    for (i, a) in actions.iter().enumerate() {
        for o in &a.outputs {
            writer.entry(o.clone()).or_insert(i);
        }
    }
    for (i, (action, edited)) in actions.iter_mut().zip(&plan.actions).enumerate() {
        if edited.args != action.args {
            if action.builtin.is_some() {
                return Err(refusal(format!("the action `{}` runs in process and has no arguments to edit", action.id), first).help("edit the arguments of an action whose PlannedAction::is_in_process() is false"));
            }
            if edited.args.iter().any(|a| a.to_string_lossy().contains('\0')) {
                return Err(refusal(format!("an edited argument of `{}` has a NUL character, which no process argument can carry", action.id), first));
            }
            action.args = edited.args.clone();
        }
        for input in &edited.added_inputs {
            if !input.is_absolute() {
                return Err(refusal(format!("the input {} added to `{}` is relative", input.display(), action.id), first).help("give an absolute path (the package directory is CARGO_MANIFEST_DIR)"));
            }
            match writer.get(input) {
                Some(&p) if p != i && !action.deps.contains(&p) => action.deps.push(p),
                Some(_) => {}
                None if !input.exists() => return Err(refusal(format!("the input {} added to `{}` does not exist, and no action writes it", input.display(), action.id), first)),
                None => {}
            }
            action.inputs.push(input.clone());
        }
        for id in &edited.after {
            let Some(d) = ids.iter().position(|i| i == id) else {
                let known: Vec<&str> = ids.iter().take(8).map(String::as_str).collect();
                return Err(refusal(format!("`{}` is to run after `{id}`, which is no action of this build", action.id), first).detail(format!("the actions: {}{}", known.join(", "), if ids.len() > 8 { ", ..." } else { "" })));
            };
            if *id == action.id {
                return Err(refusal(format!("`{id}` is to run after itself"), first));
            }
            if !action.deps.contains(&d) {
                action.deps.push(d);
            }
        }
    }
    // The edges may now point later in the plan: the graph's order.
    order(actions, first)
}

/// Reorder `actions` so that each comes after every action it depends on (stable: otherwise the
/// plan's order), remapping the edges.
///
/// # Errors
/// [`ErrorKind::Usage`]: the edges make a cycle (its actions named).
fn order(actions: &mut Vec<Action>, at: Option<&String>) -> Result<()> {
    let n = actions.len();
    let mut placed = vec![false; n];
    let mut order: Vec<usize> = Vec::with_capacity(n);
    while order.len() < n {
        let Some(next) = (0..n).find(|&i| !placed[i] && actions[i].deps.iter().all(|&d| placed[d])) else {
            let stuck: Vec<&str> = (0..n).filter(|&i| !placed[i]).map(|i| actions[i].id.as_str()).collect();
            return Err(refusal("the plan edits make a cycle: these actions wait for each other".to_string(), at).detail(stuck.join(", ")).help("remove a run_after or an added input between them"));
        };
        placed[next] = true;
        order.push(next);
    }
    let mut new_index = vec![0; n];
    for (to, &from) in order.iter().enumerate() {
        new_index[from] = to;
    }
    let mut old: Vec<Option<Action>> = std::mem::take(actions).into_iter().map(Some).collect();
    for &from in &order {
        if let Some(mut a) = old[from].take() {
            a.deps = a.deps.iter().map(|&d| new_index[d]).collect();
            actions.push(a);
        }
    }
    Ok(())
}
