//! The action graph: each action is argv (never a shell), declared inputs, outputs and an
//! optional depfile. [`run`] checks every fingerprint first, so a
//! no-op build starts no process; stale actions run in parallel, one compiler per token of
//! cargo's jobserver (or `jobs` when there is none), in dependency waves.

use crate::error::{Error, ErrorKind, Result};
use crate::engine::fingerprint::{hash_file, parse_depfile, sha256_hex, ActionState};
use crate::tool::Tool;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The role of an action: a `source` action produces something later compiled or
/// embedded (SPIR-V); an `object` action produces something linked; a `check` action verifies
/// other actions' outputs (its inputs) and produces nothing but a stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Produces a payload or a generated source.
    Source,
    /// Produces an object file or archive that is linked.
    Object,
    /// Verifies its inputs; its one output is a stamp the graph writes when the tool exits 0
    /// (the tool writes nothing), so the check is fingerprinted like any action and a no-op
    /// build runs none. A `blocking` check that fails fails the build (nothing is embedded or
    /// linked); a non-blocking one turns its failure into warnings and writes no stamp, so it
    /// runs again on the next build until it passes.
    Check {
        /// Whether a failure fails the build (`true`) or is a warning (`false`).
        blocking: bool,
    },
}

/// A rule's hint for a failed action: given the action's id and what the compiler printed, the
/// way out to add to the refusal, or `None` when the failure is not one the rule recognises.
pub type FailureHint = fn(&str, &str) -> Option<String>;

/// One compiler invocation.
#[derive(Debug, Clone)]
pub struct Action {
    /// Stable id, e.g. `spirv:shaders/a/scale.comp`; names the fingerprint file.
    pub id: String,
    /// What the progress line shows, e.g. `glslangValidator shaders/a/scale.comp`.
    pub description: String,
    /// The role.
    pub role: Role,
    /// The tool it runs (its identity is part of the key); `argv[0]` is `tool.path`.
    pub tool: Tool,
    /// The arguments after the program.
    pub args: Vec<OsString>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Declared inputs (their content is part of the key).
    pub inputs: Vec<PathBuf>,
    /// Outputs (must exist after a successful run).
    pub outputs: Vec<PathBuf>,
    /// The depfile the tool writes, listing what it read.
    pub depfile: Option<PathBuf>,
    /// The include search directories given to the tool (`-I`), so that a file created later
    /// that would shadow an included one makes the action stale.
    pub include_dirs: Vec<PathBuf>,
    /// Indices (in the same list) of actions that must finish first.
    pub deps: Vec<usize>,
    /// Work done in process instead of starting `tool` (which then only names it for messages):
    /// a [`Step`] a rule hands the graph ([`Action::in_process`]); its identity is part of the key.
    pub builtin: Option<std::sync::Arc<dyn Step>>,
    /// What to tell the user when this action's compiler fails, given the action's id and the
    /// compiler's output (a rule's hint for a failure it recognises); `None` for no hint.
    pub failure_hint: Option<FailureHint>,
    /// What every output must be, checked from its first bytes when the tool exits 0 (an object
    /// file of the target, a cubin, a fat binary): a tool that writes something else has failed.
    pub expect: Option<Expect>,
}

/// The extensions of the C, C++ and device C++ translation units ([`Action::translation_unit`]).
pub const TRANSLATION_UNIT_EXTENSIONS: &[&str] = &["cu", "hip", "sycl", "cpp", "cc", "cxx", "c++", "c", "cppm", "ixx", "mpp", "cce", "asc"];

/// What an action's outputs must be, by their first bytes ([`Expect::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect {
    /// The bytes the file starts with: ELF `7f 45 4c 46`, 64-bit Mach-O `cf fa ed fe`, a CUDA
    /// fat binary `50 ed 55 ba` (0xba55ed50, little-endian).
    pub magic: &'static [u8],
    /// What that is, in the failure's text (`an ELF object file`).
    pub what: &'static str,
}

impl Expect {
    /// An ELF file (an object of an ELF target, a cubin).
    pub const ELF: Expect = Expect { magic: b"\x7fELF", what: "an ELF file" };
    /// A 64-bit Mach-O file (an object of an Apple target).
    pub const MACH_O: Expect = Expect { magic: &[0xcf, 0xfa, 0xed, 0xfe], what: "a 64-bit Mach-O file" };
    /// A CUDA fat binary (`nvcc -fatbin`).
    pub const FATBIN: Expect = Expect { magic: &[0x50, 0xed, 0x55, 0xba], what: "a CUDA fat binary" };

    /// The object files of `format`'s targets: ELF for GNU, Mach-O for Darwin; none for COFF
    /// (whose objects start with the machine type, not a magic number).
    pub fn object(format: crate::engine::archive::ArchiveFormat) -> Option<Expect> {
        match format {
            crate::engine::archive::ArchiveFormat::Gnu => Some(Expect::ELF),
            crate::engine::archive::ArchiveFormat::Darwin => Some(Expect::MACH_O),
            crate::engine::archive::ArchiveFormat::Coff => None,
        }
    }

    /// Whether `bytes` (a file's first bytes, or all of it) start as expected.
    pub fn check(self, bytes: &[u8]) -> bool {
        bytes.starts_with(self.magic)
    }
}

/// Work an action does in process instead of starting a program: a rule whose compiler is a
/// library (the WGSL translator) or the engine's own writer (the archive of a lane's objects)
/// hands the graph a step. It is fingerprinted like an external action: its identity
/// ([`Step::name`], [`Step::version`], [`Step::options`]) stands where a tool's path, version
/// and argv stand, with the content of each declared input and the path of each output. So an
/// edit of an input or a changed option runs it again, a no-op runs nothing, and its outputs
/// are verified as a compiler's are (each must exist, [`Action::expect`] holds, their hashes are
/// recorded and checked by the next run).
pub trait Step: Send + Sync + std::fmt::Debug {
    /// Its name in messages and in its identity (`naga`, `archive writer`).
    fn name(&self) -> &str;
    /// What produces its bytes, with versions (`naga 30.0.2 in cargo-mcpp 0.1.0`): a new
    /// version runs it again.
    fn version(&self) -> String;
    /// Its options as one line of text (`spirv 1.5`): a changed option runs it again. The
    /// graph shows it where an external action shows its command line.
    fn options(&self) -> String;
    /// Read `inputs` (the action's declared inputs, in order) and write every one of `outputs`
    /// (the action's outputs, deleted before it runs). Returns what to show as warnings, one
    /// line each.
    ///
    /// # Errors
    /// The step's refusal of its inputs (a validation error naming `file:line:col`), or
    /// [`ErrorKind::Io`] when an output cannot be written.
    fn run(&self, inputs: &[PathBuf], outputs: &[PathBuf]) -> Result<Vec<String>>;
}

/// The parts of an action whose work is a [`Step`], for [`Action::in_process`].
#[derive(Debug, Clone)]
pub struct InProcess {
    /// Stable id (`wgsl:shaders/x.wgsl`); names the fingerprint file.
    pub id: String,
    /// What the progress line shows.
    pub description: String,
    /// The role.
    pub role: Role,
    /// The work.
    pub step: std::sync::Arc<dyn Step>,
    /// The package root (part of the key, as an external action's working directory is).
    pub cwd: PathBuf,
    /// Declared inputs (their content is part of the key).
    pub inputs: Vec<PathBuf>,
    /// Outputs (their paths are part of the key; each must exist after the step ran).
    pub outputs: Vec<PathBuf>,
    /// What every output must start with, checked after the step ran.
    pub expect: Option<Expect>,
}

/// The parts of an action that starts a program, for [`Action::external`] (the rest take
/// their defaults, set with the `with_*` methods).
#[derive(Debug, Clone)]
pub struct External {
    /// Stable id (`spirv:shaders/a/scale.comp`); names the fingerprint file.
    pub id: String,
    /// What the progress line shows (`glslangValidator shaders/a/scale.comp`).
    pub description: String,
    /// The role.
    pub role: Role,
    /// The program (its identity is part of the key).
    pub tool: Tool,
    /// The arguments after the program.
    pub args: Vec<OsString>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Declared inputs (their content is part of the key).
    pub inputs: Vec<PathBuf>,
    /// Outputs (each must exist after a successful run).
    pub outputs: Vec<PathBuf>,
}

/// The `Tool::path` of a [`Step`]'s action: no program is started.
pub const IN_PROCESS: &str = "(built into cargo-mcpp)";

impl Action {
    /// The fingerprint key: tool identity, argv, cwd, and the content of each declared input.
    pub fn key(&self) -> String {
        let mut text = String::new();
        text.push_str(&self.tool.identity());
        for a in &self.args {
            text.push('\0');
            text.push_str(&a.to_string_lossy());
        }
        text.push_str(&format!("\0cwd={}", self.cwd.display()));
        for input in &self.inputs {
            let h = hash_file(input).unwrap_or_else(|| "missing".into());
            text.push_str(&format!("\0in={}={h}", input.display()));
        }
        if let Some(step) = &self.builtin {
            text.push_str(&format!("\0step={}\0{}\0{}", step.name(), step.version(), step.options()));
            for out in &self.outputs {
                text.push_str(&format!("\0out={}", out.display()));
            }
        }
        sha256_hex(text.as_bytes())
    }

    /// The action that starts `p.tool` with `p.args`: no depfile, no include directories, no
    /// dependency index (the graph derives edges from inputs that are other actions' outputs,
    /// [`connect_inputs`]), no failure hint, no check of its outputs' first bytes. The
    /// `with_*` methods set those.
    pub fn external(p: External) -> Action {
        Action {
            id: p.id,
            description: p.description,
            role: p.role,
            tool: p.tool,
            args: p.args,
            cwd: p.cwd,
            inputs: p.inputs,
            outputs: p.outputs,
            depfile: None,
            include_dirs: Vec::new(),
            deps: Vec::new(),
            builtin: None,
            failure_hint: None,
            expect: None,
        }
    }

    /// This action with the depfile its tool writes (what it read) and the include directories
    /// it searches (a file created there later that would shadow an include makes it stale).
    #[must_use]
    pub fn with_depfile(mut self, depfile: PathBuf, include_dirs: Vec<PathBuf>) -> Action {
        self.depfile = Some(depfile);
        self.include_dirs = include_dirs;
        self
    }

    /// This action with explicit dependency indices (in the same list) beside the derived ones.
    #[must_use]
    pub fn with_deps(mut self, deps: Vec<usize>) -> Action {
        self.deps = deps;
        self
    }

    /// This action with a rule's hint for a failure of its compiler.
    #[must_use]
    pub fn with_failure_hint(mut self, hint: FailureHint) -> Action {
        self.failure_hint = Some(hint);
        self
    }

    /// This action with what every output must start with (`None`: not checked).
    #[must_use]
    pub fn with_expect(mut self, expect: Option<Expect>) -> Action {
        self.expect = expect;
        self
    }

    /// The action of an in-process step: its tool names the step ([`IN_PROCESS`] as the path,
    /// [`Step::version`] as the version), no arguments, no depfile, no dependency index (the
    /// graph derives edges from inputs that are other actions' outputs, [`connect_inputs`]).
    pub fn in_process(p: InProcess) -> Action {
        let tool = Tool {
            name: p.step.name().to_string(),
            path: PathBuf::from(IN_PROCESS),
            version: p.step.version(),
            source: crate::tool::ToolSource::Derived("built into cargo-mcpp".into()),
            env: Vec::new(),
            toolchain_package_root: None,
            launcher: None,
        };
        let external = External { id: p.id, description: p.description, role: p.role, tool, args: Vec::new(), cwd: p.cwd, inputs: p.inputs, outputs: p.outputs };
        let mut action = Action::external(external).with_expect(p.expect);
        action.builtin = Some(p.step);
        action
    }

    /// The translation unit this action compiles, when it compiles one: not a [`Step`], and
    /// its first declared input whose extension is one of [`TRANSLATION_UNIT_EXTENSIONS`] (what
    /// `compile_commands.json` lists, [`crate::engine::compile_db`]; a new rule's `.hip` or `.sycl`
    /// compile is listed with no change here).
    pub fn translation_unit(&self) -> Option<&Path> {
        if self.builtin.is_some() {
            return None;
        }
        self.inputs.iter().map(PathBuf::as_path).find(|p| p.extension().and_then(|e| e.to_str()).is_some_and(|e| TRANSLATION_UNIT_EXTENSIONS.contains(&e)))
    }

    /// The command line as one displayable string (for messages only; never run through a shell),
    /// the launcher first when there is one.
    pub fn command_line(&self) -> String {
        if let Some(step) = &self.builtin {
            return format!("{} (in process) {}", step.name(), step.options());
        }
        self.tool
            .launcher
            .iter()
            .map(|l| l.to_string_lossy().into_owned())
            .chain(std::iter::once(self.tool.path.to_string_lossy().into_owned()))
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Make the package-level edges of `actions` explicit: every declared input of an action that
/// is an output of another action makes that producer one of its [`Action::deps`] (added once,
/// in list order). A rule then plans an action over other actions' outputs (SYCL's
/// `-fsycl-link` over every SYCL object, CUDA's `nvcc -dlink` over the relocatable objects, an
/// archive) by naming those files as its inputs, without knowing where in the package's list
/// their producers sit ([`crate::rules::package_step`]); [`run`] then runs it after them, reruns
/// it whenever one of them reruns, and skips it when one of them fails. Called once on the
/// whole graph ([`crate::plan::lanes::plan`]), so an edge may cross lanes.
///
/// # Errors
/// [`ErrorKind::Io`] when a producer is listed after the action reading its output (the run
/// decides freshness in list order, so a consumer must follow what it reads), naming both ids.
pub fn connect_inputs(actions: &mut [Action]) -> Result<()> {
    let mut producer: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    for (i, a) in actions.iter().enumerate() {
        for o in &a.outputs {
            producer.entry(o.clone()).or_insert(i);
        }
    }
    for i in 0..actions.len() {
        let mut found: Vec<usize> = Vec::new();
        for input in &actions[i].inputs {
            if let Some(&p) = producer.get(input) {
                if p == i {
                    continue;
                }
                if p > i {
                    return Err(Error::new(ErrorKind::Io, format!("the action `{}` reads {}, which `{}` writes later in the plan", actions[i].id, input.display(), actions[p].id))
                        .help("this is a planning bug of cargo-mcpp; please report it with the manifest"));
                }
                found.push(p);
            }
        }
        for p in found {
            if !actions[i].deps.contains(&p) {
                actions[i].deps.push(p);
            }
        }
    }
    Ok(())
}

/// Progress reporting for [`run`].
pub trait Observer: Sync {
    /// `total` actions will run (the stale ones).
    fn planned(&self, _total: usize) {}
    /// An action started.
    fn started(&self, _action: &Action) {}
    /// An action finished successfully.
    fn finished(&self, _action: &Action) {}
}

/// An observer that says nothing.
pub struct Silent;
impl Observer for Silent {}

/// How to run the graph.
pub struct RunOptions<'a> {
    /// The variant of the device cache whose fingerprint state this run reads and writes (one
    /// record per action, and the hash cache: [`crate::engine::layout::Variant::fingerprints_dir`]).
    pub variant: &'a crate::engine::layout::Variant,
    /// Parallelism when there is no jobserver.
    pub jobs: usize,
    /// Cargo's jobserver, when running under cargo.
    pub jobserver: Option<&'a jobserver::Client>,
}

/// What [`run`] did.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// Ids of the actions that ran.
    pub ran: Vec<String>,
    /// Ids of the actions that were fresh.
    pub fresh: Vec<String>,
    /// Every file any action read (declared inputs plus depfile-discovered), existing only.
    pub read: Vec<PathBuf>,
    /// Peak number of compilers running at once.
    pub peak_concurrency: usize,
    /// Every output of every action (fresh or ran) with the sha256 it was verified to have in
    /// this run: what a later reader (the surface) checks the bytes it reads against.
    pub outputs: std::collections::BTreeMap<PathBuf, String>,
    /// What the compilers that ran and succeeded printed (their warnings), in action order,
    /// one line each, prefixed with the action's description and shown safely
    /// ([`warning_lines`]). A fresh action adds none (it did not run).
    pub warnings: Vec<String>,
}

/// The most lines of one action's output shown as warnings; the rest are counted.
pub const WARNING_LINES_MAX: usize = 20;

/// The most characters of one line of a compiler's output shown as a warning.
pub const WARNING_LINE_CHARS_MAX: usize = 400;

/// What a compiler that succeeded printed, as warning lines for the user (cargo shows them as
/// `warning: <pkg>@<ver>: cargo-mcpp: <line>`): each non-empty line of `stdout` then `stderr`,
/// prefixed with `description` (`glslangValidator shaders/x.comp: <line>`), control characters
/// escaped and cut to [`WARNING_LINE_CHARS_MAX`] characters, at most [`WARNING_LINES_MAX`]
/// lines and then one saying how many more there were. A stdout line equal to one of `args`
/// is left out: glslangValidator names its input file on stdout on every compile (its
/// warnings follow on stdout too, where glslc, nvcc, clang and g++ print theirs on stderr).
pub fn warning_lines(description: &str, args: &[OsString], stdout: &str, stderr: &str) -> Vec<String> {
    let echoed = |line: &str| args.iter().any(|a| a.to_string_lossy() == line);
    let lines: Vec<&str> = stdout
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !echoed(l.trim()))
        .chain(stderr.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()))
        .collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(WARNING_LINES_MAX)
        .map(|l| {
            let shown = crate::text::escape_control(l);
            let count = shown.chars().count();
            if count > WARNING_LINE_CHARS_MAX {
                let cut: String = shown.chars().take(WARNING_LINE_CHARS_MAX).collect();
                format!("{description}: {cut}... ({} more characters)", count - WARNING_LINE_CHARS_MAX)
            } else {
                format!("{description}: {shown}")
            }
        })
        .collect();
    if lines.len() > WARNING_LINES_MAX {
        out.push(format!("{description}: ... ({} more lines)", lines.len() - WARNING_LINES_MAX));
    }
    out
}

/// Run the stale actions of `actions`. A failure does not stop the build (as `make -k` and
/// `cargo build --keep-going`): every action that does not depend on a failed one still runs
/// (and is recorded, so the next build finds it fresh), and every failure is reported.
///
/// # Errors
/// [`ErrorKind::ToolFailed`] when a compiler exits non-zero, leaves an output missing or writes
/// an output that is not what it should be ([`Expect`]): one error per failed action, in action
/// order (the first carrying the others in [`Error::also`]), each with its command line and
/// output, then one naming the actions not run because they depend on a failed one.
/// [`ErrorKind::Io`] for state files.
pub fn run(actions: &[Action], options: &RunOptions, observer: &dyn Observer) -> Result<RunReport> {
    let state_dir = options.variant.fingerprints_dir();
    std::fs::create_dir_all(&state_dir).map_err(|e| Error::io("cannot create", &state_dir, e))?;
    let hash_cache = options.variant.hash_cache();
    crate::engine::fingerprint::load_hash_cache(&hash_cache);
    let mut report = RunReport::default();
    let mut stale = vec![false; actions.len()];
    let mut keys = vec![String::new(); actions.len()];
    for (i, a) in actions.iter().enumerate() {
        keys[i] = a.key();
        let state = ActionState::load(&options.variant.action_record(&a.id));
        let deps_stale = a.deps.iter().any(|&d| stale[d]);
        stale[i] = deps_stale || !state.as_ref().is_some_and(|s| s.is_fresh(&keys[i]));
        if !stale[i] {
            report.fresh.push(a.id.clone());
            if let Some(s) = state {
                report.read.extend(s.discovered.into_iter().map(|(p, _)| p));
                report.outputs.extend(s.outputs);
            }
        }
        report.read.extend(a.inputs.iter().cloned());
    }
    let todo: Vec<usize> = (0..actions.len()).filter(|&i| stale[i]).collect();
    observer.planned(todo.len());
    let mut done = vec![false; actions.len()];
    for (i, s) in stale.iter().enumerate() {
        done[i] = !s;
    }
    let running = AtomicUsize::new(0);
    let peak = AtomicUsize::new(0);
    // Actions that failed, or depend (transitively) on one that did: never run.
    let mut failed = vec![false; actions.len()];
    let mut failures: Vec<(usize, Error)> = Vec::new();
    let mut skipped: Vec<usize> = Vec::new();
    loop {
        for i in 0..actions.len() {
            if !done[i] && !failed[i] && actions[i].deps.iter().any(|&d| failed[d]) {
                failed[i] = true;
                skipped.push(i);
            }
        }
        if (0..actions.len()).all(|i| done[i] || failed[i]) {
            break;
        }
        let mut wave: Vec<usize> = todo.iter().copied().filter(|&i| !done[i] && !failed[i] && actions[i].deps.iter().all(|&d| done[d])).collect();
        // Longest first (input bytes stand in for compile time): the last compiler to finish
        // is then a short one, so the wave's tail, where one worker idles, is short.
        let weight = |i: usize| -> u64 { actions[i].inputs.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum() };
        wave.sort_by_key(|&i| std::cmp::Reverse(weight(i)));
        if wave.is_empty() {
            return Err(Error::new(ErrorKind::Io, "the action graph has a cycle"));
        }
        // Keys of actions depending on earlier waves see those outputs now.
        let wave_keys: Vec<String> = wave.iter().map(|&i| if actions[i].deps.is_empty() { keys[i].clone() } else { actions[i].key() }).collect();
        let next = AtomicUsize::new(0);
        let wave_failures: Mutex<Vec<(usize, Error)>> = Mutex::new(Vec::new());
        let results: Mutex<Vec<(usize, Executed)>> = Mutex::new(Vec::new());
        let workers = options.jobs.max(1).min(wave.len());
        std::thread::scope(|scope| {
            for worker in 0..workers {
                let (next, wave_failures, results, wave, wave_keys, running, peak) = (&next, &wave_failures, &results, &wave, &wave_keys, &running, &peak);
                scope.spawn(move || loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&i) = wave.get(n) else { return };
                    // Worker 0 runs on the token cargo gave this build script; every other
                    // concurrent compiler holds a token of its own.
                    let _token = match (worker, options.jobserver) {
                        (0, _) | (_, None) => None,
                        (_, Some(client)) => match client.acquire() {
                            Ok(t) => Some(t),
                            Err(_) => return,
                        },
                    };
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    observer.started(&actions[i]);
                    let outcome = execute(&actions[i], &wave_keys[n], options.variant);
                    running.fetch_sub(1, Ordering::SeqCst);
                    match outcome {
                        Ok(read) => {
                            observer.finished(&actions[i]);
                            if let Ok(mut r) = results.lock() {
                                r.push((i, read));
                            }
                        }
                        Err(e) => {
                            if let Ok(mut f) = wave_failures.lock() {
                                f.push((i, e));
                            }
                        }
                    }
                });
            }
        });
        for (i, e) in wave_failures.into_inner().unwrap_or_else(|e| e.into_inner()) {
            failed[i] = true;
            failures.push((i, e));
        }
        let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        // Action order, not the order parallel compilers finished in: the build script's output
        // is a function of its inputs.
        results.sort_by_key(|(i, _)| *i);
        for (i, (read, outputs, warnings)) in results {
            done[i] = true;
            report.ran.push(actions[i].id.clone());
            report.read.extend(read);
            report.outputs.extend(outputs);
            report.warnings.extend(warnings);
        }
        if wave.iter().any(|&i| !done[i] && !failed[i]) {
            return Err(Error::new(ErrorKind::ToolFailed, "a compiler could not be started (jobserver token refused)"));
        }
    }
    report.peak_concurrency = peak.load(Ordering::SeqCst);
    if !failures.is_empty() {
        // What did run is recorded (its hashes kept for the next build), then every failure.
        report.read.retain(|p| p.exists());
        report.read.sort();
        report.read.dedup();
        crate::engine::fingerprint::save_hash_cache(&hash_cache, &report.read)?;
        failures.sort_by_key(|(i, _)| *i);
        let count = failures.len();
        let mut problems: Vec<Error> = failures.into_iter().map(|(_, e)| e).collect();
        if count > 1 {
            problems[0].help.push(format!("{count} actions failed; each is reported below with its command and output (the others that do not depend on them ran)"));
        }
        if !skipped.is_empty() {
            skipped.sort_unstable();
            let names: Vec<&str> = skipped.iter().map(|&i| actions[i].description.as_str()).collect();
            problems.push(Error::new(ErrorKind::ToolFailed, format!("{} action(s) not run: they depend on a failed one", skipped.len())).detail(names.join(", ")));
        }
        return Error::all(problems).map(|()| report);
    }
    // Sorted: the build script's output must not depend on the order parallel actions finished
    // in, or cargo would see a changed output and rebuild the crate after a no-op run.
    report.read.retain(|p| p.exists());
    report.read.sort();
    report.read.dedup();
    crate::engine::fingerprint::save_hash_cache(&hash_cache, &report.read)?;
    Ok(report)
}

/// Start the action's tool and wait for it; a non-zero exit is an error carrying its output.
/// On success, what it printed, as warning lines ([`warning_lines`]).
fn spawn(action: &Action) -> Result<Vec<String>> {
    #[allow(clippy::disallowed_methods)] // graph.rs runs the actions (argv, never a shell)
    let mut cmd = match &action.tool.launcher {
        Some(launcher) => {
            #[allow(clippy::disallowed_methods)] // as above: the launcher, then the compiler as its first argument
            let mut c = Command::new(launcher);
            c.arg(&action.tool.path);
            // The launcher's own settings (ccache's base directory, ...): for its process only,
            // so never part of a fingerprint; a variable the user set wins.
            let user = crate::config::env::Env::process();
            for (k, v) in crate::tool::launch::ccache_env(launcher, &action.args, &action.cwd, |k| user.get_os_untracked(k).is_some()) {
                c.env(k, v);
            }
            c
        }
        None => Command::new(&action.tool.path),
    };
    cmd.args(&action.args).current_dir(&action.cwd);
    action.tool.apply_env(&mut cmd);
    let output = cmd.output().map_err(|e| {
        Error::new(ErrorKind::ToolFailed, format!("{} could not be started: {e}", action.tool.name)).detail(action.command_line())
    })?;
    if !output.status.success() {
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        let mut e = Error::new(ErrorKind::ToolFailed, format!("{} failed ({})", action.description, output.status))
            .detail(format!("command: {}", action.command_line()));
        for line in text.lines() {
            e = e.detail(line.to_string());
        }
        if let Some(hint) = action.failure_hint.and_then(|hint| hint(&action.id, &text)) {
            e = e.help(hint);
        }
        return Err(e);
    }
    Ok(warning_lines(&action.description, &action.args, &String::from_utf8_lossy(&output.stdout), &String::from_utf8_lossy(&output.stderr)))
}

/// Delete `path` if it exists. A delete that fails for another reason (a read-only device
/// cache, a directory in the output's place) is an [`ErrorKind::Io`] naming the path, not a
/// compiler failure later.
fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("cannot delete the previous output", path, e)
            .help("the device cache (target/<profile>/mcpp/) must be writable; delete the path, or build with another CARGO_TARGET_DIR")),
    }
}

/// Check that `out` starts as `expect` says; otherwise the action failed (its output is
/// deleted, so nothing takes it for a result).
fn check_output(action: &Action, out: &Path, expect: Expect) -> Result<()> {
    use std::io::Read;
    let mut head = Vec::new();
    let read = std::fs::File::open(out).and_then(|f| f.take(expect.magic.len() as u64).read_to_end(&mut head));
    read.map_err(|e| Error::io("cannot read the output", out, e))?;
    if expect.check(&head) {
        return Ok(());
    }
    let _ = std::fs::remove_file(out);
    let shown: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
    Err(Error::new(ErrorKind::ToolFailed, format!("{} exited 0 but `{}` is not {}", action.description, out.display(), expect.what))
        .detail(format!("it starts with {}, not {}", if shown.is_empty() { "nothing (empty)".to_string() } else { shown.join(" ") }, expect.magic.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")))
        .detail(format!("command: {}", action.command_line()))
        .help("a flag in the rule's `flags` may have changed what the compiler writes (nvcc --ptx writes PTX text where the object belongs): remove it, or choose the output with the rule's `output` key"))
}

/// Write the stamp of a check that passed: each declared output, holding what it checked (the
/// inputs' paths and hashes), written only when that changes.
fn write_stamps(action: &Action) -> Result<()> {
    let mut text = format!("checked by {}\n", action.description);
    for input in &action.inputs {
        text.push_str(&format!("{} {}\n", hash_file(input).unwrap_or_else(|| "missing".into()), input.display()));
    }
    for out in &action.outputs {
        crate::engine::fingerprint::write_if_changed(out, text.as_bytes())?;
    }
    Ok(())
}

/// The warning lines of a non-blocking check that failed: its message, then its details (the
/// tool's output), bounded like any tool's warnings.
fn check_warnings(action: &Action, e: &Error) -> Vec<String> {
    let mut lines = vec![format!("{} (a check that does not block the build): {}", action.description, e.message)];
    lines.extend(e.detail.iter().take(WARNING_LINES_MAX).map(|d| d.chars().take(WARNING_LINE_CHARS_MAX).collect()));
    lines
}

/// The files an action read, its outputs with their hashes, and the warning lines of its tool.
type Executed = (Vec<PathBuf>, Vec<(PathBuf, String)>, Vec<String>);

/// Run one action, check its outputs, record its state; returns the files it read and the
/// outputs with their hashes.
fn execute(action: &Action, key: &str, variant: &crate::engine::layout::Variant) -> Result<Executed> {
    let state_path = variant.action_record(&action.id);
    remove_if_present(&state_path)?;
    // Outputs and depfile go first: a tool that exits 0 without writing them must not leave
    // the previous run's bytes looking current.
    for out in action.outputs.iter().chain(action.depfile.as_ref()) {
        remove_if_present(out)?;
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create", dir, e))?;
        }
    }
    let ran = match &action.builtin {
        Some(step) => step.run(&action.inputs, &action.outputs),
        None => spawn(action),
    };
    let warnings = match (ran, action.role) {
        (Ok(w), Role::Check { .. }) => {
            write_stamps(action)?;
            w
        }
        (Ok(w), _) => w,
        // A non-blocking check's failure is a warning; no state is recorded, so it runs again.
        (Err(e), Role::Check { blocking: false }) => return Ok((Vec::new(), Vec::new(), check_warnings(action, &e))),
        (Err(e), _) => return Err(e),
    };
    let mut outputs = Vec::new();
    for out in &action.outputs {
        let Some(h) = hash_file(out) else {
            return Err(Error::new(ErrorKind::ToolFailed, format!("{} exited 0 but did not write `{}`", action.description, out.display()))
                .detail(format!("command: {}", action.command_line())));
        };
        if let Some(expect) = action.expect {
            check_output(action, out, expect)?;
        }
        outputs.push((out.clone(), h));
    }
    let mut discovered = Vec::new();
    if let Some(depfile) = &action.depfile {
        let text = std::fs::read_to_string(depfile).map_err(|e| {
            Error::new(ErrorKind::ToolFailed, format!("{} did not write its depfile `{}`: {e}", action.description, depfile.display()))
                .detail("without it an edit to an included file would not rebuild, so this is refused")
        })?;
        for p in parse_depfile(&text, &action.cwd) {
            if action.inputs.contains(&p) || action.outputs.contains(&p) {
                continue;
            }
            let h = hash_file(&p).unwrap_or_else(|| "missing".into());
            discovered.push((p, h));
        }
    }
    let read: Vec<PathBuf> = discovered.iter().map(|(p, _)| p.clone()).collect();
    let mut search: Vec<PathBuf> = action.inputs.iter().chain(&read).filter_map(|p| p.parent().map(Path::to_path_buf)).collect();
    search.extend(action.include_dirs.iter().cloned());
    search.dedup();
    let absent = crate::engine::fingerprint::shadow_candidates(&read, &search);
    let state = ActionState { key: key.to_string(), discovered, outputs, absent };
    let json = serde_json::to_vec_pretty(&state).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
    crate::engine::fingerprint::write_if_changed(&state_path, &json)?;
    Ok((read, state.outputs, warnings))
}

/// An `Action` for unit tests: the tool `t` at `/t`, no arguments, run in `/p`, with `inputs` and
/// `outputs` (the graph's and `compile_db`'s tests shape it further).
#[cfg(test)]
pub(crate) fn test_action(id: &str, inputs: &[&str], outputs: &[&str]) -> Action {
    Action::external(External {
        id: id.into(),
        description: id.into(),
        role: Role::Object,
        tool: Tool { name: "t".into(), path: "/t".into(), version: String::new(), source: crate::tool::ToolSource::Path, env: Vec::new(), toolchain_package_root: None, launcher: None },
        args: Vec::new(),
        cwd: "/p".into(),
        inputs: inputs.iter().map(PathBuf::from).collect(),
        outputs: outputs.iter().map(PathBuf::from).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_lines_name_the_action_leave_out_the_echoed_file_escape_and_cut() {
        let args: Vec<OsString> = vec!["-V".into(), "/p/shaders/x.comp".into()];
        // glslangValidator: the file name, then its warning, on stdout.
        let w = warning_lines("glslangValidator shaders/x.comp", &args, "/p/shaders/x.comp\nWARNING: x.comp:3: unused\n\n", "");
        assert_eq!(w, ["glslangValidator shaders/x.comp: WARNING: x.comp:3: unused"]);
        // A clean compile: nothing.
        assert!(warning_lines("glslangValidator shaders/x.comp", &args, "/p/shaders/x.comp\n", "").is_empty());
        // Control characters escaped; a long line cut; many lines cut with a count.
        let w = warning_lines("nvcc k.cu", &[], "", "w.cu(2): \u{1b}[31mwarn\ring\n");
        assert_eq!(w, ["nvcc k.cu: w.cu(2): \\u{1b}[31mwarn\\ring"]);
        let long = "x".repeat(WARNING_LINE_CHARS_MAX + 5);
        assert!(warning_lines("nvcc k.cu", &[], "", &long)[0].ends_with("... (5 more characters)"));
        let many: String = (0..WARNING_LINES_MAX + 3).map(|i| format!("line {i}\n")).collect();
        let w = warning_lines("nvcc k.cu", &[], "", &many);
        assert_eq!(w.len(), WARNING_LINES_MAX + 1);
        assert_eq!(w.last().map(String::as_str), Some("nvcc k.cu: ... (3 more lines)"));
    }

    use super::test_action as action;

    /// A step for the tests: each input's text upper-cased, joined, then `suffix` (its option),
    /// at the one output; counts its runs. `write: false` writes nothing (a broken step).
    #[derive(Debug)]
    struct Shout {
        suffix: &'static str,
        write: bool,
        runs: std::sync::Arc<AtomicUsize>,
    }

    impl Step for Shout {
        fn name(&self) -> &str {
            "shout"
        }
        fn version(&self) -> String {
            "shout 1".into()
        }
        fn options(&self) -> String {
            format!("suffix={}", self.suffix)
        }
        fn run(&self, inputs: &[PathBuf], outputs: &[PathBuf]) -> Result<Vec<String>> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            let mut text = String::new();
            for i in inputs {
                text.push_str(&std::fs::read_to_string(i).map_err(|e| Error::io("cannot read", i, e))?.to_uppercase());
            }
            text.push_str(self.suffix);
            if self.write {
                crate::engine::fingerprint::write_if_changed(&outputs[0], text.as_bytes())?;
            }
            Ok(vec![format!("shouted {} bytes", text.len())])
        }
    }

    /// The in-process action of `step` over `input`, writing `out`.
    fn shout_action(step: Shout, input: &Path, out: &Path) -> Action {
        Action::in_process(InProcess {
            id: "shout:x".into(),
            description: "shout x".into(),
            role: Role::Source,
            step: std::sync::Arc::new(step),
            cwd: input.parent().unwrap().to_path_buf(),
            inputs: vec![input.to_path_buf()],
            outputs: vec![out.to_path_buf()],
            expect: None,
        })
    }

    #[test]
    fn an_in_process_step_reruns_on_an_input_edit_or_an_option_change_and_a_no_op_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let variant = crate::engine::layout::DeviceCache::at(dir.path().join("cache")).variant(&crate::config::accel::AccelSet::none());
        let options = RunOptions { variant: &variant, jobs: 1, jobserver: None };
        let input = dir.path().join("x.txt");
        let out = dir.path().join("out/x.txt");
        crate::engine::fingerprint::write_if_changed(&input, b"hello").unwrap();
        let runs = std::sync::Arc::new(AtomicUsize::new(0));
        let step = |suffix| Shout { suffix, write: true, runs: runs.clone() };

        let report = run(&[shout_action(step("!"), &input, &out)], &options, &Silent).unwrap();
        assert_eq!(report.ran, ["shout:x"]);
        assert_eq!(report.warnings, ["shouted 6 bytes"], "the step's lines are warnings");
        assert_eq!(std::fs::read(&out).unwrap(), b"HELLO!");
        assert_eq!(report.outputs.get(&out), Some(&sha256_hex(b"HELLO!")), "its output is verified and recorded");

        // A no-op: fresh, the step is not called.
        let report = run(&[shout_action(step("!"), &input, &out)], &options, &Silent).unwrap();
        assert!(report.ran.is_empty() && report.fresh == ["shout:x"], "{report:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 1);

        // An edit of its input: it runs again, and the output's bytes change.
        crate::engine::fingerprint::write_if_changed(&input, b"hello, world").unwrap();
        let report = run(&[shout_action(step("!"), &input, &out)], &options, &Silent).unwrap();
        assert_eq!(report.ran, ["shout:x"]);
        assert_eq!(std::fs::read(&out).unwrap(), b"HELLO, WORLD!");

        // A changed option is a new identity: it runs again.
        let report = run(&[shout_action(step("?"), &input, &out)], &options, &Silent).unwrap();
        assert_eq!(report.ran, ["shout:x"]);
        assert_eq!(std::fs::read(&out).unwrap(), b"HELLO, WORLD?");

        // An output changed behind its back: it runs again.
        crate::engine::fingerprint::write_if_changed(&out, b"tampered").unwrap();
        let report = run(&[shout_action(step("?"), &input, &out)], &options, &Silent).unwrap();
        assert_eq!(report.ran, ["shout:x"]);
        assert_eq!(std::fs::read(&out).unwrap(), b"HELLO, WORLD?");
        assert_eq!(runs.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn an_in_process_step_that_writes_no_output_fails_naming_it_and_the_step() {
        let dir = tempfile::tempdir().unwrap();
        let variant = crate::engine::layout::DeviceCache::at(dir.path().join("cache")).variant(&crate::config::accel::AccelSet::none());
        let options = RunOptions { variant: &variant, jobs: 1, jobserver: None };
        let input = dir.path().join("x.txt");
        crate::engine::fingerprint::write_if_changed(&input, b"hello").unwrap();
        let out = dir.path().join("out/x.txt");
        let broken = Shout { suffix: "!", write: false, runs: Default::default() };
        let action = shout_action(broken, &input, &out);
        assert!(action.translation_unit().is_none() && action.tool.path == Path::new(IN_PROCESS));
        let e = run(&[action], &options, &Silent).unwrap_err().to_string();
        assert!(e.contains("shout x exited 0 but did not write") && e.contains("shout (in process) suffix=!"), "{e}");
    }


    /// A check for the tests: passes when every input holds "ok" (any case), counts its runs.
    #[derive(Debug)]
    struct HoldsOk(std::sync::Arc<AtomicUsize>);

    impl Step for HoldsOk {
        fn name(&self) -> &str {
            "holds-ok"
        }
        fn version(&self) -> String {
            "holds-ok 1".into()
        }
        fn options(&self) -> String {
            String::new()
        }
        fn run(&self, inputs: &[PathBuf], _outputs: &[PathBuf]) -> Result<Vec<String>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            for i in inputs {
                if !std::fs::read_to_string(i).unwrap_or_default().to_lowercase().contains("ok") {
                    return Err(Error::new(ErrorKind::ToolFailed, format!("holds-ok: `{}` is not ok", i.display())).detail("line 1: no ok"));
                }
            }
            Ok(Vec::new())
        }
    }

    /// A producer (upper-cases `input` into `out`) and a check of `out` writing `stamp`.
    fn produce_and_check(input: &Path, out: &Path, stamp: &Path, blocking: bool, runs: &std::sync::Arc<AtomicUsize>) -> Vec<Action> {
        let mut check = Action::in_process(InProcess {
            id: "check:x".into(),
            description: "holds-ok x".into(),
            role: Role::Check { blocking },
            step: std::sync::Arc::new(HoldsOk(runs.clone())),
            cwd: input.parent().unwrap().to_path_buf(),
            inputs: vec![out.to_path_buf()],
            outputs: vec![stamp.to_path_buf()],
            expect: None,
        });
        check.description = "holds-ok x".into();
        let mut actions = vec![shout_action(Shout { suffix: "", write: true, runs: Default::default() }, input, out), check];
        connect_inputs(&mut actions).unwrap();
        actions
    }

    #[test]
    fn a_check_runs_once_writes_its_stamp_a_no_op_runs_nothing_and_a_failure_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let variant = crate::engine::layout::DeviceCache::at(dir.path().join("cache")).variant(&crate::config::accel::AccelSet::none());
        let options = RunOptions { variant: &variant, jobs: 2, jobserver: None };
        let (input, out, stamp) = (dir.path().join("x.txt"), dir.path().join("out/x.txt"), dir.path().join("out/x.checked"));
        let runs = std::sync::Arc::new(AtomicUsize::new(0));
        crate::engine::fingerprint::write_if_changed(&input, b"ok").unwrap();

        let report = run(&produce_and_check(&input, &out, &stamp, true, &runs), &options, &Silent).unwrap();
        assert_eq!(report.ran, ["shout:x", "check:x"], "the check follows what it reads");
        assert!(std::fs::read_to_string(&stamp).unwrap().contains("x.txt"), "the stamp names what was checked");
        assert_eq!(runs.load(Ordering::SeqCst), 1);

        let report = run(&produce_and_check(&input, &out, &stamp, true, &runs), &options, &Silent).unwrap();
        assert!(report.ran.is_empty(), "a no-op runs no check: {report:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 1);

        // An edit that makes the output fail the check: the build fails, naming the file.
        crate::engine::fingerprint::write_if_changed(&input, b"bad").unwrap();
        let e = run(&produce_and_check(&input, &out, &stamp, true, &runs), &options, &Silent).unwrap_err().to_string();
        assert!(e.contains("holds-ok: `") && e.contains("out/x.txt` is not ok") && e.contains("line 1: no ok"), "{e}");
        assert!(!stamp.exists(), "a failed check leaves no stamp");
        // And it runs again next time (no state was recorded), still failing.
        assert!(run(&produce_and_check(&input, &out, &stamp, true, &runs), &options, &Silent).is_err());
        assert_eq!(runs.load(Ordering::SeqCst), 3);

        // Non-blocking: the same failure is a warning, the build goes on, and it runs again.
        let report = run(&produce_and_check(&input, &out, &stamp, false, &runs), &options, &Silent).unwrap();
        assert!(report.warnings.iter().any(|w| w.contains("does not block the build") && w.contains("is not ok")), "{report:?}");
        assert!(report.warnings.iter().any(|w| w == "line 1: no ok"), "{report:?}");
        let report = run(&produce_and_check(&input, &out, &stamp, false, &runs), &options, &Silent).unwrap();
        assert_eq!(report.ran, ["check:x"], "a failed non-blocking check runs until it passes");
        crate::engine::fingerprint::write_if_changed(&input, b"ok again").unwrap();
        run(&produce_and_check(&input, &out, &stamp, false, &runs), &options, &Silent).unwrap();
        let report = run(&produce_and_check(&input, &out, &stamp, false, &runs), &options, &Silent).unwrap();
        assert!(report.ran.is_empty(), "{report:?}");
    }

    #[test]
    fn a_package_level_step_depends_on_the_producers_of_its_inputs_and_a_misordered_plan_is_refused() {
        let mut a = vec![action("a", &["/s/a.sycl"], &["/o/a.o"]), action("b", &["/s/b.sycl"], &["/o/b.o"]), action("other", &["/s/c.comp"], &["/o/c.spv"]), action("link", &["/o/a.o", "/o/b.o"], &["/o/dl.o"]), action("ar", &["/o/a.o", "/o/b.o", "/o/dl.o"], &["/o/lib.a"])];
        a[4].deps = vec![0];
        connect_inputs(&mut a).unwrap();
        assert_eq!(a[3].deps, [0, 1]);
        assert_eq!(a[4].deps, [0, 1, 3], "an existing edge is kept once, the others added");
        assert!(a[0].deps.is_empty() && a[2].deps.is_empty());
        let mut wrong = vec![action("link", &["/o/a.o"], &["/o/dl.o"]), action("a", &["/s/a.sycl"], &["/o/a.o"])];
        let e = connect_inputs(&mut wrong).unwrap_err().to_string();
        assert!(e.contains("`link` reads /o/a.o, which `a` writes later"), "{e}");
    }
}
