//! Where the resolver starts programs, always by argv and within [`PROBE_TIMEOUT`]: a tool's
//! version (asked once, cached by the program file's stat data in the device cache's
//! `tool-versions.json`), what a tool accepts ([`probe_cached`], `tool-probes.json`), hardware
//! and driver probes ([`probe`]), and the PATH lookup ([`find_on_path`]).

use super::{override_var, Tool, ToolSpec};
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::layout::DeviceCache;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a tool may take to answer a probe (its version, what it accepts, `nvidia-smi`):
/// a program that hangs there is refused (its version) or ignored (a probe) instead of
/// hanging the build.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How a probe ended.
pub(super) enum Ran {
    /// It exited (or was killed by a signal) with this output.
    Exited { status: ExitStatus, stdout: Vec<u8>, stderr: Vec<u8> },
    /// It was still running after the timeout, and was killed.
    TimedOut,
}

/// Run `cmd` (stdin empty, stdout and stderr into unnamed temporary files, so a grandchild
/// holding them open cannot block the read) for at most `timeout`.
pub(super) fn run_timed(cmd: &mut Command, timeout: Duration) -> std::io::Result<Ran> {
    use std::io::{Read, Seek};
    let mut out = tempfile::tempfile()?;
    let mut err = tempfile::tempfile()?;
    cmd.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(err.try_clone()?);
    let mut child = cmd.spawn()?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let elapsed = started.elapsed();
        if elapsed >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Ran::TimedOut);
        }
        std::thread::sleep(pause.min(timeout - elapsed));
        pause = (pause * 2).min(Duration::from_millis(50));
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    out.rewind()?;
    out.read_to_end(&mut stdout)?;
    err.rewind()?;
    err.read_to_end(&mut stderr)?;
    Ok(Ran::Exited { status, stdout, stderr })
}

/// Run a hardware or driver probe (`nvidia-smi --query-gpu=...`) by argv, for at most
/// [`PROBE_TIMEOUT`], and return its stdout when it exits 0; `None` when it cannot start,
/// fails or hangs. Probes are facts, never refusals by themselves.
pub fn probe(program: &Path, args: &[&str]) -> Option<String> {
    #[allow(clippy::disallowed_methods)] // tool/process.rs runs hardware and driver probes (argv)
    let mut cmd = Command::new(program);
    match run_timed(cmd.args(args), PROBE_TIMEOUT).ok()? {
        Ran::Exited { status, stdout, .. } => status.success().then(|| String::from_utf8_lossy(&stdout).into_owned()),
        Ran::TimedOut => None,
    }
}

/// The first `program` on the PATH of `env`, found as `which` finds it (the `which` crate:
/// executable regular files, relative PATH entries taken from the working directory).
pub fn find_on_path(program: &str, env: &Env) -> Option<PathBuf> {
    let path = env.get_os("PATH")?;
    let cwd = std::env::current_dir().ok()?;
    which::which_in(program, Some(path), cwd).ok()
}

/// Whether `p` is a file this user may execute (any execute bit on Unix; a file elsewhere).
pub fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// The cache key of a program file: its path and stat data (size, mtime, ctime, inode), the
/// hash cache's key ([`crate::engine::fingerprint`]): a program replaced in place keeps its path and
/// may keep size and mtime (`cp -p`), but not its ctime. Size and mtime where the platform
/// has no ctime and inode.
fn file_key(path: &Path) -> Result<String> {
    if let Some((size, mtime, ctime, inode)) = crate::engine::fingerprint::stat_key(path) {
        return Ok(format!("{}|{size}|{mtime}|{ctime}|{inode}", path.display()));
    }
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot read", path, e))?;
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0);
    Ok(format!("{}|{}|{mtime}", path.display(), meta.len()))
}

/// What `tool` prints (stdout then stderr) for `args`, asked once and cached in
/// the device cache's `tool-probes.json` ([`DeviceCache::tool_probes`]) by the program file's key (path and stat data, like its
/// version) and `args`, so a no-op build starts no process. `None` when it does not start, is
/// killed, does not answer within [`PROBE_TIMEOUT`], cannot execute (126/127) or prints nothing
/// (nothing is cached then); another exit code counts as an answer (`glslangValidator --help`
/// exits 1). Used for what a compiler accepts (`nvcc --list-gpu-code`, clang's
/// `--print-supported-cpus`).
pub fn probe_cached(tool: &Tool, args: &[&str], cache: &DeviceCache) -> Option<String> {
    let key = format!("{}|{}", file_key(&tool.path).ok()?, args.join(" "));
    let cache_file = cache.tool_probes();
    let mut cache: BTreeMap<String, String> = std::fs::read(&cache_file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    if let Some(v) = cache.get(&key) {
        return Some(v.clone());
    }
    #[allow(clippy::disallowed_methods)] // tool/process.rs asks a tool what it accepts (argv, cached)
    let mut cmd = Command::new(&tool.path);
    cmd.args(args);
    tool.apply_env(&mut cmd);
    let Ran::Exited { status, stdout, stderr } = run_timed(&mut cmd, PROBE_TIMEOUT).ok()? else { return None };
    if matches!(status.code(), None | Some(126) | Some(127)) {
        return None;
    }
    let text = format!("{}{}", String::from_utf8_lossy(&stdout), String::from_utf8_lossy(&stderr));
    if text.trim().is_empty() {
        return None;
    }
    cache.insert(key, text.clone());
    if let Ok(json) = serde_json::to_vec_pretty(&cache) {
        let _ = crate::engine::fingerprint::write_if_changed(&cache_file, &json);
    }
    Some(text)
}

/// The version text of `spec`'s program at `path` (run with `tool_env`), from the device cache's
/// `tool-versions.json` ([`DeviceCache::tool_versions`]) when the program file is unchanged,
/// else asked within `timeout` and cached.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when the program does not start, cannot execute (126/127), or
/// does not answer within `timeout` (killed; nothing cached).
pub(super) fn version_of(spec: &ToolSpec, path: &Path, tool_env: &[(String, OsString)], cache: &DeviceCache, timeout: Duration) -> Result<String> {
    let key = file_key(path)?;
    let cache_file = cache.tool_versions();
    let mut cache: BTreeMap<String, String> =
        std::fs::read(&cache_file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    if let Some(v) = cache.get(&key) {
        return Ok(v.clone());
    }
    #[allow(clippy::disallowed_methods)] // tool/process.rs asks a tool its version (argv, cached)
    let mut cmd = Command::new(path);
    cmd.args(spec.version_args);
    for (k, v) in tool_env {
        cmd.env(k, v);
    }
    let ran = run_timed(&mut cmd, timeout).map_err(|e| {
        Error::new(ErrorKind::ToolNotFound, format!("{} cannot be used: `{}` does not run: {e}", spec.name, crate::text::echo_path(path)))
    })?;
    let Ran::Exited { status, stdout, stderr } = ran else {
        return Err(Error::new(ErrorKind::ToolNotFound, format!("{} cannot be used: `{} {}` did not answer within {} s", spec.name, crate::text::echo_path(path), spec.version_args.join(" "), timeout.as_secs_f64()))
            .file(path)
            .detail("cargo-mcpp asks each tool its version once (then cached by the program file); this one was still running, and was stopped.")
            .help(format!("name a program that answers `{}` ([package.metadata.mcpp.tools] {}, or {}), or fix this one", spec.version_args.join(" "), spec.name, override_var(spec.name))));
    };
    let text = format!("{}{}", String::from_utf8_lossy(&stdout), String::from_utf8_lossy(&stderr));
    if matches!(status.code(), None | Some(126) | Some(127)) {
        return Err(Error::new(ErrorKind::ToolNotFound, format!("{} cannot be used: `{}` does not run ({})", spec.name, crate::text::echo_path(path), status))
            .detail(text.trim().lines().take(5).map(crate::text::echo).collect::<Vec<_>>().join("\n"))
            .help("a toolchain package's programs need its library directories; run `cargo mcpp fetch` again, or name a working program"));
    }
    let version = if text.trim().is_empty() { "unknown".to_string() } else { text.trim().to_string() };
    cache.insert(key, version.clone());
    if let Ok(json) = serde_json::to_vec_pretty(&cache) {
        crate::engine::fingerprint::write_if_changed(&cache_file, &json)?;
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool that hangs on `--version` is refused after the timeout, naming the tool, its path
    /// and the arguments, instead of hanging the build; nothing is cached for it.
    #[cfg(unix)]
    #[test]
    fn a_version_probe_that_hangs_is_refused_after_the_timeout() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let hang = dir.path().join("hangcc");
        std::fs::write(&hang, "#!/bin/sh\nexec sleep 30\n").unwrap();
        std::fs::set_permissions(&hang, std::fs::Permissions::from_mode(0o755)).unwrap();
        let spec = ToolSpec { name: "hangcc", programs: &["hangcc"], env_vars: &[], version_args: &["--version"], install_hint: "none", toolchain_package: None, toolkit: None };
        let started = Instant::now();
        let e = version_of(&spec, &hang, &[], &DeviceCache::at(dir.path()), Duration::from_millis(300)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10), "stopped at the timeout, not when sleep ended: {:?}", started.elapsed());
        assert_eq!(e.kind, ErrorKind::ToolNotFound);
        let text = e.to_string();
        assert!(text.contains(&format!("hangcc cannot be used: `{} --version` did not answer within 0.3 s", hang.display())), "{text}");
        assert!(text.contains("MCPP_TOOL_HANGCC"), "the way out: {text}");
        assert!(!DeviceCache::at(dir.path()).tool_versions().exists(), "nothing cached");
        // A probe that answers in time is read whole, stdout then stderr.
        let ok = dir.path().join("okcc");
        std::fs::write(&ok, "#!/bin/sh\necho out; echo err >&2; exit 3\n").unwrap();
        std::fs::set_permissions(&ok, std::fs::Permissions::from_mode(0o755)).unwrap();
        let v = version_of(&ToolSpec { name: "okcc", ..spec }, &ok, &[], &DeviceCache::at(dir.path()), Duration::from_secs(5)).unwrap();
        assert_eq!(v, "out\nerr");
    }
}
