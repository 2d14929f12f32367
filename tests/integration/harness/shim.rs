//! [`Shim`]: the recording compiler (the unpublished `mcpp-shim` package of this workspace)
//! installed under a program name, and the [`Record`]s of its starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The recording compiler, built once per test run ([`super::once_per_run`]) with `cargo
/// build` of the workspace's `mcpp-shim` package into its own target directory under
/// `CARGO_TARGET_TMPDIR` (cargo holds the test run's own target directory). It is its own
/// unpublished package so that `cargo install cargo-mcpp` never installs it.
pub fn shim_binary() -> PathBuf {
    static SHIM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SHIM.get_or_init(|| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcpp-shim-target");
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcpp-shim/Cargo.toml");
        super::once_per_run(&target, || {
            let out = std::process::Command::new(
                std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
            )
            .args(["build", "--quiet", "--offline", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target)
            .env_remove("CARGO_BUILD_TARGET")
            .output()
            .expect("cargo runs");
            assert!(
                out.status.success(),
                "cargo build of the mcpp-shim package failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        });
        target
            .join("debug")
            .join(format!("mcpp-shim{}", std::env::consts::EXE_SUFFIX))
    })
    .clone()
}

/// One installed copy of the recording shim: `<dir>/<name>`, its settings in
/// `<dir>/<name>.mcpp-shim.json`, its records in `<dir>/<name>.mcpp-shim-log/records.jsonl`.
///
/// Without a setting it acts as a compiler: it writes the files named by `-o`, `-MF`,
/// `--depfile`, `-depfile` (the output says `object of <inputs>`, after the ELF magic for a `.o`
/// or `.cubin` and the fat binary magic for a `.fatbin`; a depfile lists the inputs),
/// answers `--version`/`-V`/`--help` and exits 0. [`Shim::wrap`] makes it a counting/logging
/// wrapper around a real program instead.
#[derive(Debug, Clone)]
pub struct Shim {
    path: PathBuf,
}

/// One start of a shim: the program name it ran as, its arguments, working directory and
/// environment.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Record {
    /// The file name of argv[0] (`nvcc`, `icpx`, ...).
    pub program: String,
    /// argv[0] as given.
    pub argv0: String,
    /// The arguments after argv[0].
    pub args: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The whole environment.
    pub env: BTreeMap<String, String>,
}

impl Record {
    /// Whether this start only asked for a version or help text (its arguments are nothing but
    /// `--version`, `-V`, `--help`: glslangValidator's `-V` among others means "SPIR-V").
    pub fn is_probe(&self) -> bool {
        !self.args.is_empty()
            && self
                .args
                .iter()
                .all(|a| matches!(a.as_str(), "--version" | "-V" | "--help"))
    }
    /// Whether `arg` is one of the arguments.
    pub fn has(&self, arg: &str) -> bool {
        self.args.iter().any(|a| a == arg)
    }
    /// Whether some argument ends with `suffix` (a source named relative to anything).
    pub fn names(&self, suffix: &str) -> bool {
        self.args.iter().any(|a| a.ends_with(suffix))
    }
    /// The argument after the first `flag` (`-o`, `-MF`, ...).
    pub fn after(&self, flag: &str) -> Option<&str> {
        let at = self.args.iter().position(|a| a == flag)?;
        self.args.get(at + 1).map(String::as_str)
    }
    /// The arguments joined by spaces, as `echo "$*"` would print them.
    pub fn line(&self) -> String {
        self.args.join(" ")
    }
}

/// Copy the executable `from` to `to` with `cp`, in its own process: a copy written by this
/// process would leave its write descriptor, for an instant, in a child another test thread is
/// forking, and executing the copy then fails with "Text file busy" (ETXTBSY).
/// The copy goes to a temporary name first and is renamed into place, so nobody can start it
/// half written.
pub fn copy_executable(from: &Path, to: &Path) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let tmp = to.with_file_name(format!(
        ".{}.{}.{n}.tmp",
        to.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let status = std::process::Command::new("cp")
        .arg(from)
        .arg(&tmp)
        .status()
        .unwrap_or_else(|e| panic!("cannot run cp: {e}"));
    assert!(
        status.success(),
        "cp {} {} failed",
        from.display(),
        tmp.display()
    );
    std::fs::rename(&tmp, to)
        .unwrap_or_else(|e| panic!("cannot rename {} to {}: {e}", tmp.display(), to.display()));
}

impl Shim {
    /// Install the shim as `<dir>/<name>` (a copy) acting as a compiler.
    pub fn install(dir: &Path, name: &str) -> Shim {
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        // A copy, never a hard link: a link to the one shim binary would change the ctime of the
        // inode every installed shim shares, and the engine's version cache (keyed by size,
        // mtime, ctime, inode) would then ask every shim its version again.
        copy_executable(&shim_binary(), &path);
        let shim = Shim { path };
        let _ = std::fs::remove_dir_all(shim.log_dir());
        shim.write_settings(&BTreeMap::new());
        shim
    }
    /// Install the shim as `<dir>/<name>` recording each start, then running `real` with the
    /// same arguments (a counting/logging wrapper).
    pub fn wrap(dir: &Path, name: &str, real: &Path) -> Shim {
        let shim = Shim::install(dir, name);
        shim.set("MCPP_SHIM_EXEC", &real.to_string_lossy());
        shim
    }
    /// The shim installed earlier at `path`.
    pub fn at(path: &Path) -> Shim {
        Shim {
            path: path.to_path_buf(),
        }
    }
    /// The program's path (give it to the build as the tool).
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Answer `--version` and `-V` with `text`. Set it before the first build: a build caches a
    /// tool's version by its path, size and mtime, which a new answer does not change.
    pub fn answer_version(&self, text: &str) -> &Shim {
        self.set("MCPP_SHIM_VERSION", text)
    }
    /// Answer `--help` with `text`.
    pub fn answer_help(&self, text: &str) -> &Shim {
        self.set("MCPP_SHIM_HELP", text)
    }
    /// Fail every start that is not a probe: `message` on stderr, exit `code` (1..=255).
    pub fn fail_with(&self, message: &str, code: u8) -> &Shim {
        self.set("MCPP_SHIM_FAIL", "1")
            .set("MCPP_SHIM_FAIL_MESSAGE", message)
            .set("MCPP_SHIM_FAIL_CODE", &code.to_string())
    }
    /// Fail (as [`Shim::fail_with`] says) only the starts that have the argument `arg`.
    pub fn fail_if_arg(&self, arg: &str, message: &str, code: u8) -> &Shim {
        self.set("MCPP_SHIM_FAIL_IF_ARG", arg)
            .set("MCPP_SHIM_FAIL_MESSAGE", message)
            .set("MCPP_SHIM_FAIL_CODE", &code.to_string())
    }
    /// Print `line` on stderr after a successful compile.
    pub fn warn(&self, line: &str) -> &Shim {
        self.set("MCPP_SHIM_WARN", line)
    }
    /// Make every output and depfile follow the inputs' bytes: the output gains `digest
    /// <sha256>` of each input and each file it includes (`#include "x"` beside it or in a `-I`
    /// directory, recursively), and the depfile lists the included files, as a compiler's does.
    /// A header edit then changes the objects of exactly its includers, and what consumes them.
    pub fn digest_inputs(&self) -> &Shim {
        self.set("MCPP_SHIM_DIGEST", "1")
    }
    /// Exit 0 writing nothing unless the arguments hold `seq` (space-separated, in order), as
    /// DPC++ does with a `.sycl` file and no `-x c++`.
    pub fn silent_unless_args(&self, seq: &str) -> &Shim {
        self.set("MCPP_SHIM_SILENT_UNLESS_ARGS", seq)
    }
    /// Write `text` (instead of `object of <inputs>`) to every `-o` output.
    pub fn output(&self, text: &str) -> &Shim {
        self.set("MCPP_SHIM_OUTPUT", text)
    }
    /// Every start so far, in order.
    pub fn records(&self) -> Vec<Record> {
        let text =
            std::fs::read_to_string(self.log_dir().join("records.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| {
                    panic!("a record of {} is not JSON ({e}): {l}", self.path.display())
                })
            })
            .collect()
    }
    /// How many times it was started (probes included).
    pub fn starts(&self) -> usize {
        self.records().len()
    }
    /// The starts that were not `--version`/`--help` probes.
    pub fn calls(&self) -> Vec<Record> {
        self.records()
            .into_iter()
            .filter(|r| !r.is_probe())
            .collect()
    }
    /// The arguments of each start that was not a probe.
    pub fn argvs(&self) -> Vec<Vec<String>> {
        self.calls().into_iter().map(|r| r.args).collect()
    }

    fn log_dir(&self) -> PathBuf {
        PathBuf::from(format!("{}.mcpp-shim-log", self.path.display()))
    }
    fn sidecar(&self) -> PathBuf {
        PathBuf::from(format!("{}.mcpp-shim.json", self.path.display()))
    }
    fn settings(&self) -> BTreeMap<String, String> {
        std::fs::read_to_string(self.sidecar())
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }
    fn write_settings(&self, settings: &BTreeMap<String, String>) {
        let mut all = settings.clone();
        all.insert(
            "MCPP_SHIM_LOG".into(),
            self.log_dir().to_string_lossy().into_owned(),
        );
        std::fs::write(self.sidecar(), serde_json::to_string_pretty(&all).unwrap())
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", self.sidecar().display()));
    }
    fn set(&self, key: &str, value: &str) -> &Shim {
        let mut s = self.settings();
        s.insert(key.into(), value.into());
        self.write_settings(&s);
        self
    }
}
