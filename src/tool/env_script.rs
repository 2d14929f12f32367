//! A toolkit set up by a script (oneAPI's `setvars.sh`, CANN's `set_env.sh`): the rule's
//! `env-script` key names it, and the environment it sets goes on that rule's tool processes.
//!
//! The script is sourced once, by `bash` found on the build's PATH, with argv only:
//! `bash -c '. "$0" "$@" 1>&2 && env -0' <script> <args..>` (the script and its
//! `env-script-args` are arguments, never part of the command string; what the script prints
//! goes to standard error, kept for a refusal). It starts from a clean base environment: `PATH`
//! and `HOME` of the build's environment, nothing else ([`BASE_VARS`]), in the package
//! directory, within [`SCRIPT_TIMEOUT`]. The variables whose value differs from the base (new
//! or changed, the shell's own `_`, `SHLVL`, `PWD` and `OLDPWD` left out) are what the script
//! sets ([`ScriptEnv::vars`]); a variable it unsets is not removed.
//!
//! The capture is cached in the device cache's `env-scripts.json`, keyed by the script's path,
//! the sha256 of its bytes, its arguments and the base variables' values: a no-op build does not
//! run the script again. A file the script itself sources is not part of the key.
//!
//! The resolver ([`super::resolve_toolkit_with`]) looks for the toolkit in the build's
//! environment with these variables on top (a root variable the script sets, such as
//! `CMPLR_ROOT`, names the toolkit; a compiler on the PATH it sets counts as declared) and puts
//! them on the tool's [`super::Tool::env`], so they are part of every compile's fingerprint.

use crate::config::env::Env;
use crate::config::manifest::{KeyDoc, Manifest};
use crate::engine::layout::DeviceCache;
use crate::error::{Error, ErrorKind, Result};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long the script may run before it is stopped and refused.
pub const SCRIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// The variables of the build's environment the script starts with; nothing else is passed.
pub const BASE_VARS: &[&str] = &["PATH", "HOME"];

/// Variables the shell sets itself, never taken for the script's.
const SHELL_VARS: &[&str] = &["_", "SHLVL", "PWD", "OLDPWD"];

/// The command string `bash -c` runs: the script is `$0`, its arguments `$@`.
const SOURCE_AND_PRINT: &str = ". \"$0\" \"$@\" 1>&2 && env -0";

/// The largest script read for its hash (setvars.sh is about 30 KiB).
const MAX_SCRIPT_BYTES: u64 = 4 << 20;

/// The documentation of a rule's `env-script` key (the guide's generated manifest reference).
pub const ENV_SCRIPT_DOC: KeyDoc = KeyDoc {
    key: "env-script",
    default: "none",
    meaning: "a shell script that sets up the toolkit (oneAPI's `setvars.sh`, CANN's `set_env.sh`), relative to the package root or absolute. Sourced once by bash from `PATH` and `HOME` alone (60 s at most; cached by its bytes and arguments); the variables it sets go on this rule's tools only, and name the toolkit (a root variable it sets, or the compiler on the `PATH` it sets)",
};
/// The documentation of a rule's `env-script-args` key.
pub use crate::config::manifest::ENV_SCRIPT_ARGS_DOC;

/// A rule's `env-script` (and `env-script-args`), as the manifest wrote it.
#[derive(Debug, Clone)]
pub struct EnvScript {
    /// The script, absolute (made so against the package root).
    pub path: PathBuf,
    /// `env-script-args`.
    pub args: Vec<String>,
    /// The manifest, `path:line:col` of the key where known (for refusals).
    pub at: String,
    /// The manifest file.
    pub manifest: PathBuf,
    /// The key, dotted: `package.metadata.mcpp.sycl.env-script`.
    pub key: String,
    /// The key as messages write it: `[package.metadata.mcpp.sycl] env-script`.
    pub shown_key: String,
    /// The package directory, where the script runs.
    pub dir: PathBuf,
}

impl EnvScript {
    /// The rule `rule`'s `env-script` (`script`, as written) and `env-script-args`; `None`
    /// without a script.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] for `env-script-args` without `env-script`.
    pub fn from_options(rule: &str, script: Option<&Path>, args: Option<&[String]>, manifest: &Manifest) -> Result<Option<EnvScript>> {
        let table = format!("package.metadata.mcpp.{rule}");
        let Some(script) = script else {
            if args.is_some() {
                return Err(Error::new(ErrorKind::Manifest, "`env-script-args` is set without `env-script`")
                    .file(manifest.at_col(&format!("{rule}.env-script-args")))
                    .key(format!("{table}.env-script-args"))
                    .help(format!("name the script with {table}.env-script, or leave the arguments out")));
            }
            return Ok(None);
        };
        let path = if script.is_absolute() { script.to_path_buf() } else { manifest.dir().join(script) };
        Ok(Some(EnvScript {
            path,
            args: args.map(<[String]>::to_vec).unwrap_or_default(),
            at: manifest.at_col(&format!("{rule}.env-script")),
            manifest: manifest.path.clone(),
            key: format!("{table}.env-script"),
            shown_key: format!("[{table}] env-script"),
            dir: manifest.dir().to_path_buf(),
        }))
    }

    /// A refusal of this script: the headline, the key and file, the way out.
    fn refusal(&self, headline: String) -> Error {
        Error::new(ErrorKind::ToolNotFound, headline)
            .file(self.at.clone())
            .key(self.key.clone())
            .detail(format!("cargo-mcpp sources it with bash (`. <script> <args> && env -0`) from PATH and HOME alone, in {}, within {} s", crate::text::echo_path(&self.dir), SCRIPT_TIMEOUT.as_secs()))
            .help(match self.key.contains("host-toolchain") {
                true => format!("fix the script, or leave {} out and name the compiler with [package.metadata.mcpp.host-toolchain] cxx or layout", self.key),
                false => format!("fix the script, or point {} at the toolkit's own setup script (oneAPI's setvars.sh, CANN's set_env.sh), or leave the key out and name the toolkit with the rule's `toolkit` key", self.key),
            })
    }
}

/// What a script set, for one rule's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptEnv {
    /// The variables the script set or changed, sorted by name.
    pub vars: Vec<(String, OsString)>,
    /// The script, absolute.
    pub script: PathBuf,
    /// Where it is named: `<manifest>:<line>:<col> [package.metadata.mcpp.<rule>] env-script = "<script>"`.
    pub origin: String,
    /// The manifest file.
    pub manifest: PathBuf,
    /// The key as messages write it: `[package.metadata.mcpp.sycl] env-script`.
    pub shown_key: String,
}

impl ScriptEnv {
    /// Whether the script set `name`.
    pub fn sets(&self, name: &str) -> bool {
        self.vars.iter().any(|(k, _)| k == name)
    }
    /// `env` with the script's variables on top.
    pub fn overlay(&self, env: &Env) -> Env {
        let mut e = env.clone();
        for (k, v) in &self.vars {
            e.set(k, v.clone());
        }
        e
    }
}

/// The environment rule `rule`'s `env-script` sets (with its `env-script-args`), captured or
/// cached; `None` without the key.
///
/// # Errors
/// As [`EnvScript::from_options`] and [`capture`].
pub fn for_rule(rule: &str, script: Option<&Path>, args: Option<&[String]>, manifest: &Manifest, env: &Env, cache: &DeviceCache) -> Result<Option<ScriptEnv>> {
    match EnvScript::from_options(rule, script, args, manifest)? {
        Some(s) => capture(&s, env, cache).map(Some),
        None => Ok(None),
    }
}

/// One cached capture in `env-scripts.json`, by the script's path.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Cached {
    key: String,
    vars: Vec<(String, String)>,
}

/// The environment `script` sets: from the device cache's `env-scripts.json` when the script's
/// bytes, arguments and base variables are unchanged, else by sourcing it once (cached).
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] naming the file and key when the script is missing, is not a
/// regular file, is larger than 4 MiB, fails, runs past [`SCRIPT_TIMEOUT`], prints no
/// environment, or when no bash is on PATH.
pub fn capture(script: &EnvScript, env: &Env, cache: &DeviceCache) -> Result<ScriptEnv> {
    capture_within(script, env, cache, SCRIPT_TIMEOUT)
}

fn capture_within(script: &EnvScript, env: &Env, cache: &DeviceCache, timeout: Duration) -> Result<ScriptEnv> {
    let shown = crate::text::echo_path(&script.path);
    let meta = std::fs::metadata(&script.path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => script.refusal(format!("{} names `{shown}`, which does not exist", script.shown_key)),
        _ => script.refusal(format!("{} names `{shown}`, which cannot be read: {e}", script.shown_key)),
    })?;
    if !meta.is_file() {
        return Err(script.refusal(format!("{} names `{shown}`, which is not a regular file", script.shown_key)));
    }
    if meta.len() > MAX_SCRIPT_BYTES {
        return Err(script.refusal(format!("{} names `{shown}`, which is larger than {} MiB", script.shown_key, MAX_SCRIPT_BYTES >> 20)));
    }
    let bytes = std::fs::read(&script.path).map_err(|e| script.refusal(format!("{} names `{shown}`, which cannot be read: {e}", script.shown_key)))?;
    let base: BTreeMap<String, OsString> = BASE_VARS.iter().filter_map(|v| env.get_os(v).map(|x| (v.to_string(), x))).collect();
    let mut key_text = format!("{}\0{}\0{}", script.path.display(), crate::engine::fingerprint::sha256_hex(&bytes), script.args.len());
    for a in &script.args {
        key_text.push('\0');
        key_text.push_str(a);
    }
    for (k, v) in &base {
        key_text.push_str(&format!("\0{k}={}", v.to_string_lossy()));
    }
    let key = crate::engine::fingerprint::sha256_hex(key_text.as_bytes());
    let result = |vars: Vec<(String, OsString)>| ScriptEnv {
        vars,
        script: script.path.clone(),
        origin: format!("{} {} = \"{shown}\"", crate::text::echo_path(Path::new(&script.at)), script.shown_key),
        manifest: script.manifest.clone(),
        shown_key: script.shown_key.clone(),
    };
    let cache_file = cache.env_scripts();
    let mut cached: BTreeMap<String, Cached> = std::fs::read(&cache_file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    let path_key = script.path.display().to_string();
    if let Some(c) = cached.get(&path_key).filter(|c| c.key == key) {
        return Ok(result(c.vars.iter().map(|(k, v)| (k.clone(), OsString::from(v))).collect()));
    }
    let vars = run(script, &base, env, timeout)?;
    cached.insert(path_key, Cached { key, vars: vars.iter().map(|(k, v)| (k.clone(), v.to_string_lossy().into_owned())).collect() });
    if let Ok(json) = serde_json::to_vec_pretty(&cached) {
        crate::engine::fingerprint::write_if_changed(&cache_file, &json)?;
    }
    Ok(result(vars))
}

/// Source the script once and read what it set.
fn run(script: &EnvScript, base: &BTreeMap<String, OsString>, env: &Env, timeout: Duration) -> Result<Vec<(String, OsString)>> {
    let shown = crate::text::echo_path(&script.path);
    let bash = super::find_on_path("bash", env).ok_or_else(|| script.refusal(format!("{} names `{shown}`, and no bash is on PATH to source it", script.shown_key)))?;
    #[allow(clippy::disallowed_methods)] // tool/env_script.rs sources the env-script: a fixed command string, the script and its arguments argv
    let mut cmd = Command::new(&bash);
    cmd.arg("-c").arg(SOURCE_AND_PRINT).arg(&script.path).args(&script.args).env_clear().envs(base).current_dir(&script.dir);
    let ran = super::process::run_timed(&mut cmd, timeout).map_err(|e| script.refusal(format!("{} names `{shown}`, and bash could not start: {e}", script.shown_key)))?;
    let super::process::Ran::Exited { status, stdout, stderr } = ran else {
        return Err(script.refusal(format!("{} names `{shown}`, which was still running after {} s and was stopped", script.shown_key, timeout.as_secs_f64())));
    };
    let said = || -> Vec<String> {
        let text = String::from_utf8_lossy(&stderr);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(5)..].iter().map(|l| format!("  {}", crate::text::echo(l))).collect()
    };
    if !status.success() {
        let mut e = script.refusal(format!("{} names `{shown}`, which failed ({status})", script.shown_key));
        let lines = said();
        if !lines.is_empty() {
            e = e.detail("it said (last lines):");
            for l in lines {
                e = e.detail(l);
            }
        }
        return Err(e);
    }
    if stdout.is_empty() {
        return Err(script.refusal(format!("{} names `{shown}`, which printed no environment (a script that ends with `exit` ends the shell before `env -0`)", script.shown_key)));
    }
    Ok(changed(&parse_env0(&stdout), base))
}

/// `env -0`'s output as (name, value) pairs: `NAME=value` entries separated by NUL; an entry
/// whose name is no shell variable name (bash's exported functions) is left out.
fn parse_env0(out: &[u8]) -> BTreeMap<String, OsString> {
    use std::os::unix::ffi::OsStrExt;
    let mut vars = BTreeMap::new();
    for entry in out.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let Some(eq) = entry.iter().position(|b| *b == b'=') else { continue };
        let Ok(name) = std::str::from_utf8(&entry[..eq]) else { continue };
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            vars.insert(name.to_string(), std::ffi::OsStr::from_bytes(&entry[eq + 1..]).to_os_string());
        }
    }
    vars
}

/// The variables of `after` that are new or changed against `base`, the shell's own left out.
fn changed(after: &BTreeMap<String, OsString>, base: &BTreeMap<String, OsString>) -> Vec<(String, OsString)> {
    after.iter().filter(|(k, v)| !SHELL_VARS.contains(&k.as_str()) && base.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, text: &str) -> EnvScript {
        let path = dir.join("setvars.sh");
        std::fs::write(&path, text).unwrap();
        EnvScript {
            path,
            args: vec!["--force".into(), "two words".into()],
            at: "Cargo.toml:9:1".into(),
            manifest: dir.join("Cargo.toml"),
            key: "package.metadata.mcpp.sycl.env-script".into(),
            shown_key: "[package.metadata.mcpp.sycl] env-script".into(),
            dir: dir.to_path_buf(),
        }
    }

    fn base_env(dir: &Path) -> Env {
        let mut env = Env::empty();
        env.set("PATH", "/usr/bin:/bin");
        env.set("HOME", dir);
        env.set("NOT_PASSED", "x");
        env
    }

    #[test]
    fn the_script_gets_its_arguments_as_argv_and_what_it_sets_is_captured_once() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("runs");
        let s = script(
            dir.path(),
            &format!(
                "echo ran >> {:?}\necho noise\nexport CMPLR_ROOT=/opt/x\nexport ARGS=\"$1|$2\"\nexport PATH=/opt/x/bin:$PATH\nexport MULTI='a\nb'\nexport SEEN=\"${{NOT_PASSED:-unset}}\"\n",
                count.display()
            ),
        );
        let cache = DeviceCache::at(dir.path().join("cache"));
        let env = base_env(dir.path());
        let got = capture(&s, &env, &cache).unwrap();
        let vars: BTreeMap<String, String> = got.vars.iter().map(|(k, v)| (k.clone(), v.to_string_lossy().into_owned())).collect();
        assert_eq!(vars.get("CMPLR_ROOT").map(String::as_str), Some("/opt/x"));
        assert_eq!(vars.get("ARGS").map(String::as_str), Some("--force|two words"), "arguments are argv, words kept");
        assert_eq!(vars.get("PATH").map(String::as_str), Some("/opt/x/bin:/usr/bin:/bin"));
        assert_eq!(vars.get("MULTI").map(String::as_str), Some("a\nb"), "a value with a newline survives env -0");
        assert_eq!(vars.get("SEEN").map(String::as_str), Some("unset"), "only PATH and HOME go in");
        assert!(!vars.contains_key("HOME") && !vars.contains_key("SHLVL") && !vars.contains_key("PWD"), "{vars:?}");
        assert!(got.origin.ends_with(&format!("[package.metadata.mcpp.sycl] env-script = \"{}\"", s.path.display())), "{}", got.origin);
        // Cached: the second capture does not run the script.
        assert_eq!(capture(&s, &env, &cache).unwrap(), got);
        assert_eq!(std::fs::read_to_string(&count).unwrap(), "ran\n");
        // A changed argument runs it again.
        let mut s2 = s.clone();
        s2.args.pop();
        capture(&s2, &env, &cache).unwrap();
        assert_eq!(std::fs::read_to_string(&count).unwrap(), "ran\nran\n");
    }

    #[test]
    fn a_script_that_fails_hangs_or_is_no_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DeviceCache::at(dir.path().join("cache"));
        let env = base_env(dir.path());
        let s = script(dir.path(), "echo 'component not found' >&2\nreturn 3\n");
        let e = capture(&s, &env, &cache).unwrap_err().to_string();
        assert!(e.contains("which failed (exit status: 3)") && e.contains("component not found") && e.contains("Cargo.toml:9:1"), "{e}");
        assert!(e.contains("package.metadata.mcpp.sycl.env-script"), "{e}");
        let s = script(dir.path(), "sleep 30\n");
        let started = std::time::Instant::now();
        let e = capture_within(&s, &env, &cache, Duration::from_millis(300)).unwrap_err().to_string();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(e.contains("still running after 0.3 s"), "{e}");
        let mut s = script(dir.path(), "");
        s.path = dir.path().join("missing.sh");
        let e = capture(&s, &env, &cache).unwrap_err().to_string();
        assert!(e.contains("missing.sh`, which does not exist"), "{e}");
        s.path = dir.path().to_path_buf();
        let e = capture(&s, &env, &cache).unwrap_err().to_string();
        assert!(e.contains("which is not a regular file"), "{e}");
        assert!(!cache.env_scripts().exists(), "a refusal caches nothing");
    }
}
