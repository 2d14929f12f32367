//! `mcpp-shim`: the recording compiler of cargo-mcpp's tests. Its own unpublished package
//! (`publish = false`), so `cargo install` of cargo-mcpp never installs it.
//!
//! The test harness (`tests/integration/harness`, `Shim`) copies or hard-links it under any program name
//! (`nvcc`, `clang++`, `icpx`, `bisheng`, ...). Each start appends one JSON line to
//! `<MCPP_SHIM_LOG>/records.jsonl`: the program name (the file name of its own argv[0]), the
//! arguments, the working directory and the environment. Then it either runs the real program
//! (`MCPP_SHIM_EXEC`, a counting/logging wrapper) or acts as a compiler: it answers a start
//! whose only arguments are `--version`, `-V` or `--help` with the text it is told, fails on request, and otherwise writes the
//! files named by `-o`, `-MF`, `--depfile` and `-depfile` (a depfile lists the inputs).
//!
//! Settings come from `MCPP_SHIM_*` environment variables, overlaid by the sidecar file
//! `<its own path>.mcpp-shim.json` (a JSON object of the same names) that the harness writes
//! next to an installed copy, so a build that does not pass the test's environment to its
//! compilers still reaches the right log. Without `MCPP_SHIM_LOG` from either, the shim refuses
//! to run (exit 2): it exists only for tests.
//!
//! | setting | meaning |
//! |---|---|
//! | `MCPP_SHIM_LOG` | the directory of `records.jsonl` (required) |
//! | `MCPP_SHIM_EXEC` | after recording, run this program with the same arguments (wrapper mode) |
//! | `MCPP_SHIM_VERSION` | the answer to `--version` / `-V` (default `<name> (mcpp recording shim) 1.0`) |
//! | `MCPP_SHIM_HELP` | the answer to `--help` (default a one-line usage) |
//! | `MCPP_SHIM_FAIL` | `1`: every start that is not a probe fails |
//! | `MCPP_SHIM_FAIL_IF_ARG` | fail only starts that have this argument |
//! | `MCPP_SHIM_FAIL_MESSAGE` | the failure's stderr (default `<name>: simulated failure`) |
//! | `MCPP_SHIM_FAIL_CODE` | the failure's exit code (default 1) |
//! | `MCPP_SHIM_WARN` | a line printed on stderr by a successful compile |
//! | `MCPP_SHIM_DIGEST` | `1`: every output and depfile follows the inputs' bytes: the output ends with `digest <sha256>` of each input and each file it includes (`#include "x"`, looked up beside the including file, then in the `-I` directories, recursively), and the depfile lists those included files too, as a compiler's does |
//! | `MCPP_SHIM_SILENT_UNLESS_ARGS` | a start whose arguments lack this space-separated sequence (`-x c++`) exits 0 and writes nothing, as DPC++ does with a `.sycl` file and no `-x c++` (it takes the file for a linker input) |
//! | `MCPP_SHIM_OUTPUT` | the content of every `-o` output (default `object of <inputs>`, after `\x7fELF ` for a `.o` or `.cubin`, after the fat binary magic `50 ed 55 ba` and a space for a `.fatbin`) |
// A test-only program outside the library: it records its whole environment and runs the
// program it wraps; the library's doors (env::Env, graph.rs) are not its concern.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The file, in the log directory, holding one JSON record per start.
const RECORDS: &str = "records.jsonl";
/// The suffix of the sidecar settings file next to an installed copy.
const SIDECAR: &str = ".mcpp-shim.json";

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let argv0 = argv
        .first()
        .cloned()
        .unwrap_or_else(|| OsString::from("mcpp-shim"));
    let name = Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mcpp-shim".into());
    let args: Vec<String> = argv
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let settings = match Settings::load(&argv0) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{name} (mcpp-shim): {e}");
            return ExitCode::from(2);
        }
    };
    let Some(log) = settings.get("MCPP_SHIM_LOG").map(PathBuf::from) else {
        eprintln!(
            "{name} (mcpp-shim): this is cargo-mcpp's recording compiler for its own tests, and it runs only inside them.\n\
             help: the test harness sets MCPP_SHIM_LOG (the directory of its records) or writes `<this program>{SIDECAR}`; \
             nothing here compiles anything"
        );
        return ExitCode::from(2);
    };
    if let Err(e) = record(&log, &name, &argv0, &args) {
        eprintln!(
            "{name} (mcpp-shim): cannot record this start in {}: {e}",
            log.display()
        );
        return ExitCode::from(2);
    }
    if let Some(real) = settings.get("MCPP_SHIM_EXEC") {
        return exec(&name, Path::new(real), &argv[1..]);
    }
    compile(&name, &settings, &args)
}

/// The shim's settings: the `MCPP_SHIM_*` environment, overlaid by the sidecar file.
struct Settings(BTreeMap<String, String>);

impl Settings {
    fn load(argv0: &OsString) -> Result<Settings, String> {
        let mut map: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| k.starts_with("MCPP_SHIM_"))
            .collect();
        if let Some(sidecar) = own_paths(argv0)
            .into_iter()
            .map(|p| sidecar_of(&p))
            .find(|p| p.is_file())
        {
            let text = std::fs::read_to_string(&sidecar)
                .map_err(|e| format!("cannot read {}: {e}", sidecar.display()))?;
            let table: BTreeMap<String, String> = serde_json::from_str(&text).map_err(|e| {
                format!("{} is not a JSON object of strings: {e}", sidecar.display())
            })?;
            map.extend(table);
        }
        Ok(Settings(map))
    }
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
}

/// Where this copy may live: argv[0] as given (a path), found on PATH (a bare name), and the
/// executable the kernel ran (a hard link or copy; a symlink resolves to its target).
fn own_paths(argv0: &OsString) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let p = Path::new(argv0);
    if p.components().count() > 1 {
        out.push(p.to_path_buf());
    } else if let Some(path) = std::env::var_os("PATH") {
        out.extend(
            std::env::split_paths(&path)
                .map(|d| d.join(p))
                .filter(|c| c.is_file())
                .take(1),
        );
    }
    if let Ok(exe) = std::env::current_exe() {
        out.push(exe);
    }
    out
}

fn sidecar_of(program: &Path) -> PathBuf {
    let mut s = program.as_os_str().to_owned();
    s.push(SIDECAR);
    PathBuf::from(s)
}

/// Append this start's record (one line, one write) to the log.
fn record(log: &Path, name: &str, argv0: &OsString, args: &[String]) -> std::io::Result<()> {
    std::fs::create_dir_all(log)?;
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let env: BTreeMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let line = serde_json::json!({
        "program": name,
        "argv0": argv0.to_string_lossy(),
        "args": args,
        "cwd": cwd,
        "env": env,
    });
    let mut text = line.to_string();
    text.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log.join(RECORDS))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

/// Wrapper mode: become `real` with the same arguments.
fn exec(name: &str, real: &Path, args: &[OsString]) -> ExitCode {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = std::process::Command::new(real).args(args).exec();
        eprintln!("{name} (mcpp-shim): cannot run {}: {e}", real.display());
        ExitCode::from(2)
    }
    #[cfg(not(unix))]
    {
        match std::process::Command::new(real).args(args).status() {
            Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("{name} (mcpp-shim): cannot run {}: {e}", real.display());
                ExitCode::from(2)
            }
        }
    }
}

/// Compiler mode: answer probes, fail on request, else write the outputs and depfiles named.
fn compile(name: &str, settings: &Settings, args: &[String]) -> ExitCode {
    // A probe is a start with nothing but probe flags: `glslangValidator -V x.comp` compiles.
    let probe = !args.is_empty()
        && args
            .iter()
            .all(|a| matches!(a.as_str(), "--version" | "-V" | "--help"));
    if probe {
        let answer = if args.iter().any(|a| a == "--help") {
            settings
                .get("MCPP_SHIM_HELP")
                .map(str::to_string)
                .unwrap_or_else(|| {
                    format!("usage: {name} [options] <inputs> -o <output> (mcpp recording shim)")
                })
        } else {
            settings
                .get("MCPP_SHIM_VERSION")
                .map(str::to_string)
                .unwrap_or_else(|| format!("{name} (mcpp recording shim) 1.0"))
        };
        println!("{answer}");
        return ExitCode::SUCCESS;
    }
    let fail = settings.get("MCPP_SHIM_FAIL") == Some("1")
        || settings
            .get("MCPP_SHIM_FAIL_IF_ARG")
            .is_some_and(|a| args.iter().any(|x| x == a));
    if fail {
        let message = settings
            .get("MCPP_SHIM_FAIL_MESSAGE")
            .map(str::to_string)
            .unwrap_or_else(|| format!("{name}: simulated failure"));
        eprintln!("{message}");
        let code = match settings.get("MCPP_SHIM_FAIL_CODE").map(str::parse::<u8>) {
            None => 1,
            Some(Ok(c)) if c != 0 => c,
            Some(_) => {
                eprintln!("{name} (mcpp-shim): MCPP_SHIM_FAIL_CODE must be a number from 1 to 255");
                2
            }
        };
        return ExitCode::from(code);
    }
    if let Some(seq) = settings.get("MCPP_SHIM_SILENT_UNLESS_ARGS") {
        let seq: Vec<&str> = seq.split(' ').filter(|w| !w.is_empty()).collect();
        if !seq.is_empty()
            && !args
                .windows(seq.len())
                .any(|w| w.iter().zip(&seq).all(|(a, b)| a == b))
        {
            return ExitCode::SUCCESS;
        }
    }
    let named = Named::parse(args);
    let inputs = named.inputs.join(" ");
    // With MCPP_SHIM_DIGEST, what the inputs include, and the digest of all their bytes.
    let (included, digest) = if settings.get("MCPP_SHIM_DIGEST") == Some("1") {
        digest(&named)
    } else {
        (Vec::new(), String::new())
    };
    if let Some(out) = &named.output {
        // By default an output starts as its kind's files do (the engine checks objects,
        // cubins and fat binaries by their first bytes): ELF for `.o` and `.cubin`, the fat
        // binary magic for `.fatbin`.
        let text: Vec<u8> = match settings.get("MCPP_SHIM_OUTPUT") {
            Some(t) => t.as_bytes().to_vec(),
            None => {
                let magic: &[u8] = if out.ends_with(".o") || out.ends_with(".cubin") {
                    b"\x7fELF "
                } else if out.ends_with(".fatbin") {
                    &[0x50, 0xed, 0x55, 0xba, b' ']
                } else {
                    b""
                };
                let digest_line = if digest.is_empty() {
                    String::new()
                } else {
                    format!("digest {digest}\n")
                };
                [
                    magic,
                    format!("object of {inputs}\n{digest_line}").as_bytes(),
                ]
                .concat()
            }
        };
        if let Err(e) = write(out, &text) {
            eprintln!("{name} (mcpp-shim): cannot write the output {out}: {e}");
            return ExitCode::from(2);
        }
    }
    for dep in &named.depfiles {
        let target = named.output.as_deref().unwrap_or("out");
        let listed: Vec<&str> = named
            .inputs
            .iter()
            .map(String::as_str)
            .chain(included.iter().map(String::as_str))
            .collect();
        if let Err(e) = write(dep, format!("{target}: {}\n", listed.join(" ")).as_bytes()) {
            eprintln!("{name} (mcpp-shim): cannot write the depfile {dep}: {e}");
            return ExitCode::from(2);
        }
    }
    if let Some(warn) = settings.get("MCPP_SHIM_WARN") {
        eprintln!("{warn}");
    }
    ExitCode::SUCCESS
}

/// The files the inputs include (`#include "x"` beside the including file, then in the `-I`
/// directories; recursively, each once) and the sha256 of every input's and included file's
/// name and bytes, in that order.
fn digest(named: &Named) -> (Vec<String>, String) {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut included: Vec<String> = Vec::new();
    let mut todo: Vec<PathBuf> = named.inputs.iter().map(PathBuf::from).collect();
    while let Some(file) = todo.pop() {
        if seen.contains(&file) {
            continue;
        }
        let bytes = std::fs::read(&file).unwrap_or_default();
        hasher.update(file.to_string_lossy().as_bytes());
        hasher.update(&bytes);
        seen.push(file.clone());
        for line in String::from_utf8_lossy(&bytes).lines() {
            let Some(rest) = line.trim().strip_prefix("#include") else {
                continue;
            };
            let Some(name) = rest
                .trim()
                .strip_prefix('"')
                .and_then(|r| r.split('"').next())
            else {
                continue;
            };
            let beside = file.parent().map(|d| d.join(name));
            let found = beside
                .into_iter()
                .chain(named.includes.iter().map(|d| Path::new(d).join(name)))
                .find(|c| c.is_file());
            if let Some(f) = found {
                if !seen.contains(&f) {
                    included.push(f.to_string_lossy().into_owned());
                    todo.push(f);
                }
            }
        }
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (included, hex)
}

fn write(path: &str, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = Path::new(path)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, bytes)
}

/// The files a command line names: its output, its depfiles and its inputs (the value of `-c`,
/// else every other argument that names an existing file).
struct Named {
    output: Option<String>,
    depfiles: Vec<String>,
    inputs: Vec<String>,
    /// The `-I<dir>` / `-I <dir>` directories, in order.
    includes: Vec<String>,
}

impl Named {
    fn parse(args: &[String]) -> Named {
        let mut named = Named {
            output: None,
            depfiles: Vec::new(),
            inputs: Vec::new(),
            includes: Vec::new(),
        };
        let mut compiled = Vec::new();
        let mut files = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "-o" => named.output = it.next().cloned(),
                "-MF" | "--depfile" | "-depfile" => named.depfiles.extend(it.next().cloned()),
                "-I" => named.includes.extend(it.next().cloned()),
                "-c" => match it.as_slice().first() {
                    Some(next) if !next.starts_with('-') => compiled.extend(it.next().cloned()),
                    _ => {}
                },
                _ => {
                    if let Some(v) = a.strip_prefix("-I").filter(|v| !v.is_empty()) {
                        named.includes.push(v.to_string());
                    } else if let Some(v) = a
                        .strip_prefix("--depfile=")
                        .or_else(|| a.strip_prefix("-MF="))
                    {
                        named.depfiles.push(v.to_string());
                    } else if !a.starts_with('-') && Path::new(a).is_file() {
                        files.push(a.clone());
                    }
                }
            }
        }
        named.inputs = if compiled.is_empty() { files } else { compiled };
        named
    }
}
