//! `cargo mcpp build`: validate every selected package's device phase before cargo starts,
//! fetch the toolchain packages they need, then run `cargo build` with the user's arguments and show the
//! progress its build scripts report; and the hidden `build-script` command, the installed
//! engine of `mcpp_build::build()`. The one place the command line starts cargo (argv).

use super::fetch::fetch_one;
use super::locate::{cargo_program, locate, Located};
use super::{BuildArgs, BuildScriptArgs, ENGINE_ENV, ENGINE_HANDSHAKE};
use crate::cli::progress::{Channel, PackageOutcome};
use crate::config::env::Env;
use crate::config::manifest::Manifest;
use crate::error::{exit_code, Error, ErrorKind, Result};
use crate::pipeline;
use crate::plan::accel::{AccelChoice, ACCEL_ENV, NO_ACCEL_ENV};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};

/// `cargo mcpp build`: validate the selected packages' device phases (every problem, before
/// cargo starts), fetch the toolchain packages they need, then run `cargo build` with the
/// user's arguments and show the progress its build scripts report over the side channel
/// ([`crate::output::report`]). The device work itself runs only in the build scripts, with cargo's
/// facts, so plain `cargo build` and `cargo mcpp build` produce the same bytes.
///
/// # Errors
/// Every refusal of every selected package, at once (`validate_packages`); a failed fetch;
/// a progress channel or a `cargo build` that cannot start. A failed build is an exit code.
pub fn build(args: &BuildArgs) -> Result<i32> {
    refuse_selection_for_cargo_only(&args.cargo_args)?;
    let Located {
        packages,
        without_build_script,
        profile_path,
        ids,
    } = locate(&args.location, &args.selection)?;
    let accel = args.accel.choice();
    let format = message_format(args);
    let json = format.is_some_and(|f| f.starts_with("json"));
    // Where each build script's OUT_DIR is (so its device cache: the profile, target and target
    // directory however cargo got them: options, arguments after `--`, `.cargo/config.toml`,
    // the environment) comes from cargo's own `build-script-executed` messages, asked for in
    // JSON when the user chose no format (diagnostics still rendered by cargo on stderr).
    let read_messages = format.is_none() || json;
    let channel = Channel::open(json).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot open the progress channel: {e}"),
        )
        .help("check that the temporary directory (TMPDIR) is writable")
    })?;
    let env = build_env(&accel, &channel);
    // Before cargo starts: a bad directory is refused now, not after the build.
    let cli_copy = args
        .compile_commands
        .as_deref()
        .map(crate::engine::compile_db::prepare_cli_dir)
        .transpose()?;
    let validated = validate_packages(&packages, &without_build_script, &accel, &env)?;
    let device_packages: Vec<(String, PathBuf)> = validated
        .iter()
        .map(|p| (p.name.clone(), p.manifest_path.clone()))
        .collect();
    for (name, manifest_path) in &device_packages {
        fetch_one(name, manifest_path, &accel, args.offline, &[], false)?;
    }
    let mut cargo = cargo_command(args, &env, format.is_none());
    let (status, scripts) = run_cargo(
        &mut cargo,
        &channel,
        &env,
        &args.cargo_args,
        json,
        read_messages,
    )?;
    let outcomes = channel.close();
    // Package name -> the OUT_DIR of its build script, for the packages cargo built (its build
    // script ran or was fresh); `None` when cargo's messages were not read (a human format the
    // user chose), where the device caches are taken from `profile_path`.
    let built: Option<BTreeMap<String, PathBuf>> = read_messages.then(|| {
        scripts
            .into_iter()
            .filter_map(|(id, out_dir)| ids.get(&id).map(|name| (name.clone(), out_dir)))
            .collect()
    });
    // After cargo, even when every build script was fresh (or one failed: an editor still
    // gets the units it planned).
    write_compile_commands_copies(
        &validated,
        &profile_path,
        built.as_ref(),
        cli_copy.as_deref(),
        status.success(),
    )?;
    Ok(exit_code_of(
        status,
        &device_packages,
        &outcomes,
        built.as_ref(),
    ))
}

/// Package selection given to cargo only (after `--`: `-p b`, `--package=b`, `--workspace`,
/// `--all`, `--exclude b`, `--manifest-path P`) is refused: `cargo mcpp build` validates,
/// fetches for, reports and writes the compile database of the packages it selects itself, and
/// would check other packages than cargo builds.
///
/// # Errors
/// [`ErrorKind::Usage`] naming the argument and the way out.
fn refuse_selection_for_cargo_only(cargo_args: &[String]) -> Result<()> {
    const SELECTION: [&str; 6] = [
        "--package",
        "-p",
        "--workspace",
        "--all",
        "--exclude",
        "--manifest-path",
    ];
    let found = cargo_args
        .iter()
        .take_while(|a| a.as_str() != "--")
        .find(|a| {
            let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
            SELECTION.contains(&name) || (a.starts_with("-p") && !a.starts_with("--"))
        });
    match found {
        None => Ok(()),
        Some(a) => Err(Error::new(ErrorKind::Usage, format!("`{a}` after `--` would reach cargo only: cargo mcpp build checks, fetches for and reports the packages it selects itself"))
            .help("give the package selection (`-p`, `--workspace`, `--exclude`, `--manifest-path`) before `--`: `cargo mcpp build -p NAME -- <cargo's other options>`")),
    }
}

/// A selected package with a device phase and a build script, as validated before cargo starts.
struct DevicePackage {
    /// The package's name.
    name: String,
    /// Its `Cargo.toml`.
    manifest_path: PathBuf,
    /// Its accelerator set (the variant the build script writes its database into).
    accel: crate::config::accel::AccelSet,
    /// Its manifest's `compile-commands` directory, absolute.
    copy_dir: Option<PathBuf>,
}

/// The one writer of the copies of `compile_commands.json` under `cargo mcpp build`
/// ([`crate::engine::compile_db`]): every package's variant database (the device cache beside the
/// `OUT_DIR` cargo reported for its build script in `built`; under `profile_path` when cargo's
/// messages were not read or cargo failed before that package; a package cargo did not build
/// after a successful cargo is left out) merged into `cli_dir` (`--compile-commands DIR`), or else into each
/// manifest's `compile-commands` directory (the packages naming one directory, however spelled,
/// through a symbolic link too, merged, [`crate::engine::compile_db::canonical_dir`]); each written only
/// when changed, keeping the entries of packages this build did not select
/// ([`crate::engine::compile_db::merge`]). Says where on standard error when it wrote; when cargo
/// succeeded (`cargo_ok`: every build script ran or was fresh) warns about a package whose
/// database is missing (its device cache removed while cargo finds the build script fresh),
/// naming the way out.
///
/// # Errors
/// [`ErrorKind::Io`] naming a database that cannot be read or a copy that cannot be written.
fn write_compile_commands_copies(
    packages: &[DevicePackage],
    profile_path: &std::path::Path,
    built: Option<&BTreeMap<String, PathBuf>>,
    cli_dir: Option<&std::path::Path>,
    cargo_ok: bool,
) -> Result<()> {
    let source = |p: &DevicePackage| {
        // The cache beside cargo's own OUT_DIR of the build script, when cargo said it.
        let cache = match built.and_then(|b| b.get(&p.name)) {
            Some(out_dir) => crate::engine::layout::DeviceCache::from_out_dir(out_dir, &p.name),
            None => crate::engine::layout::DeviceCache::in_profile(profile_path, &p.name),
        };
        crate::engine::compile_db::Source {
            package: p.name.clone(),
            database: cache.variant(&p.accel).compile_commands(),
            cache_dir: cache.dir().to_path_buf(),
        }
    };
    let mut groups: Vec<(PathBuf, Vec<crate::engine::compile_db::Source>)> = Vec::new();
    for p in packages {
        // A package cargo built no build script of (after a successful cargo: not in its graph)
        // has nothing of this build to give.
        if cargo_ok && built.is_some_and(|b| !b.contains_key(&p.name)) {
            continue;
        }
        let Some(dir) = cli_dir
            .map(std::path::Path::to_path_buf)
            .or_else(|| p.copy_dir.clone())
        else {
            continue;
        };
        let dir = crate::engine::compile_db::canonical_dir(&dir);
        match groups.iter_mut().find(|(d, _)| *d == dir) {
            Some((_, sources)) => sources.push(source(p)),
            None => groups.push((dir, vec![source(p)])),
        }
    }
    if let (Some(dir), true) = (cli_dir, groups.is_empty()) {
        eprintln!("warning: --compile-commands {}: no package this build selected has device sources or host C++ (a device phase with a build script), so nothing was written", dir.display());
    }
    for (dir, sources) in &groups {
        let merged = crate::engine::compile_db::merge(sources, dir)?;
        if let Some(why) = &merged.replaced_unreadable {
            eprintln!("warning: {} was not a JSON array of compile commands ({why}): written again with this build's packages only; the entries of packages not built now are lost until they are built", merged.path.display());
        }
        if merged.written {
            eprintln!(
                "     Writing {} ({} translation unit{})",
                merged.path.display(),
                merged.entries,
                if merged.entries == 1 { "" } else { "s" }
            );
        }
        for name in merged.missing.iter().filter(|_| cargo_ok) {
            eprintln!(
                "warning: the device cache of package `{name}` has no {} (removed after its build script last ran, and cargo found the build script fresh): {} is not updated for `{name}`\nhelp: build it again: `cargo clean -p {name}` (or touch its build.rs), then `cargo mcpp build`",
                crate::engine::compile_db::FILE_NAME,
                merged.path.display()
            );
        }
    }
    Ok(())
}

/// The message format of the build: `--message-format FMT`, else one given to cargo after `--`
/// (`-- --message-format json`, `--message-format=json`: honoured the same, cargo gets it as
/// written).
fn message_format(args: &BuildArgs) -> Option<&str> {
    if let Some(f) = &args.message_format {
        return Some(f);
    }
    let mut it = args.cargo_args.iter();
    let mut found = None;
    while let Some(a) = it.next() {
        if a == "--message-format" {
            found = it.next().map(String::as_str).or(found);
        } else if let Some(f) = a.strip_prefix("--message-format=") {
            found = Some(f);
        }
    }
    found
}

/// This process's environment view for the build: the choice the build scripts will see
/// (`MCPP_NO_ACCEL=1` or `MCPP_ACCEL=<spec>`, the other removed) and the progress channel, so a
/// refusal here names `cargo mcpp build --no-accel`, as the build scripts' will.
fn build_env(accel: &AccelChoice, channel: &Channel) -> Env {
    let mut env = Env::process();
    env.set(crate::output::report::PROGRESS_ENV, channel.path());
    match accel {
        AccelChoice::NoAccel => {
            env.set(NO_ACCEL_ENV, "1");
            env.remove(ACCEL_ENV);
        }
        AccelChoice::Spec(s) => {
            env.set(ACCEL_ENV, s);
            env.remove(NO_ACCEL_ENV);
        }
        AccelChoice::Manifest => {}
    }
    // A relative launcher path (`MCPP_LAUNCHER=./tools/wrap.sh`) is read from the directory
    // `cargo mcpp build` started in, as cargo reads RUSTC_WRAPPER; the build scripts run in
    // their package roots, so they get it absolute.
    if let Some(v) = env.get_os(crate::rules::launcher::LAUNCHER_ENV) {
        let path = std::path::Path::new(&v);
        let s = v.to_string_lossy();
        if (s.contains('/') || s.contains('\\')) && path.is_relative() {
            if let Ok(abs) = std::path::absolute(path) {
                env.set(crate::rules::launcher::LAUNCHER_ENV, abs);
            }
        }
    }
    env
}

/// The packages with a device phase (`[package.metadata.mcpp]`), each validated
/// ([`pipeline::validate`], with the command line's own `choice`, so a refusal names `--accel`
/// as its origin, not the variable `env` carries for the build scripts) and required to have a
/// build script.
/// Returns them in selection order.
///
/// # Errors
/// Every problem of every package at once ([`Error::all`]), each naming its package.
fn validate_packages(
    packages: &[(String, PathBuf)],
    without_build_script: &[String],
    choice: &AccelChoice,
    env: &Env,
) -> Result<Vec<DevicePackage>> {
    let mut device_packages = Vec::new();
    let mut problems = Vec::new();
    for (name, manifest_path) in packages {
        match Manifest::read(manifest_path) {
            Ok(m) if !m.has_mcpp_table => continue,
            Ok(_) => {}
            Err(e) => {
                problems.push(e);
                continue;
            }
        }
        // The build scripts may register rules this command cannot see: what no known rule
        // takes is left to them.
        let validated = pipeline::validate_with(
            manifest_path,
            choice,
            env,
            &[],
            &crate::rules::external::RegisteredRules::unknown(),
        );
        let has_build_script = !without_build_script.contains(name);
        match validated {
            Ok(v) if has_build_script => device_packages.push(DevicePackage {
                name: name.clone(),
                manifest_path: manifest_path.clone(),
                copy_dir: crate::engine::compile_db::manifest_dir(&v.manifest),
                accel: v.accel,
            }),
            Ok(_) => {}
            Err(e) => problems.push(e.detail(format!("(package `{name}`)"))),
        }
        if !has_build_script {
            // The device phase runs in the build script only: without one, nothing would
            // compile the device sources or generate the surface.
            problems.push(
                Error::new(ErrorKind::Manifest, format!("the package `{name}` declares [package.metadata.mcpp] but has no build script to run its device phase"))
                    .file(manifest_path)
                    .key("package.metadata.mcpp")
                    .help("add build.rs with `fn main() { mcpp_build::build(); }` (build-dependency mcpp-build)"),
            );
        }
    }
    // Every problem of every package, before cargo starts.
    Error::all(problems)?;
    Ok(device_packages)
}

/// `cargo build` with the location, selection, `-j`, `--offline` and the further arguments of
/// `args`, the engine named when that changes the choice ([`engine_to_name`]), and `env`;
/// `ask_json`: with `--message-format json-render-diagnostics` (the user chose no format: cargo
/// still renders its diagnostics on stderr, and its JSON messages on stdout are read, never
/// shown).
fn cargo_command(args: &BuildArgs, env: &Env, ask_json: bool) -> Command {
    #[allow(clippy::disallowed_methods)] // cli/build.rs runs cargo (argv)
    let mut cargo = Command::new(cargo_program());
    cargo.arg("build");
    if let Some(p) = &args.location.manifest_path {
        cargo.arg("--manifest-path").arg(p);
    }
    if args.location.release {
        cargo.arg("--release");
    }
    if let Some(p) = &args.location.profile {
        cargo.args(["--profile", p]);
    }
    if let Some(t) = &args.location.target {
        cargo.args(["--target", t]);
    }
    if let Some(d) = &args.location.target_dir {
        cargo.arg("--target-dir").arg(d);
    }
    for p in &args.selection.package {
        cargo.args(["--package", p]);
    }
    if args.selection.workspace {
        cargo.arg("--workspace");
    }
    for p in &args.selection.exclude {
        cargo.args(["--exclude", p]);
    }
    if let Some(j) = &args.jobs {
        cargo.arg(format!("--jobs={j}"));
    }
    if args.offline {
        cargo.arg("--offline");
    }
    if let Some(f) = &args.message_format {
        cargo.args(["--message-format", f]);
    } else if ask_json {
        cargo.args(["--message-format", "json-render-diagnostics"]);
    }
    cargo.args(&args.cargo_args);
    // A build.rs calling `mcpp_build::build()` runs this same engine (unless one is named).
    if let Some(me) = engine_to_name() {
        cargo.env(ENGINE_ENV, me);
    }
    crate::config::env::apply_to(&mut cargo, env);
    cargo
}

/// Run `cargo` to its end. When the channel draws progress bars, cargo's stderr comes through
/// here, printed above the bars, with colours kept (unless the user chose `--color` or
/// `CARGO_TERM_COLOR`); otherwise cargo prints as usual. Cargo's stdout (JSON messages) is read
/// when `forward_json` (the user asked for JSON: passed on through the channel's one writer of
/// standard output, so a device message never cuts one of them) or `read_messages`; returns
/// cargo's status and, when read, each `build-script-executed` message's `(package_id,
/// out_dir)`.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when cargo cannot start.
fn run_cargo(
    cargo: &mut Command,
    channel: &Channel,
    env: &Env,
    cargo_args: &[String],
    forward_json: bool,
    read_messages: bool,
) -> Result<(ExitStatus, Vec<(String, PathBuf)>)> {
    use std::io::BufRead;
    let cannot = |e: std::io::Error| {
        Error::new(
            ErrorKind::ToolNotFound,
            format!("cannot run `cargo build`: {e}"),
        )
    };
    if forward_json || read_messages {
        cargo.stdout(std::process::Stdio::piped());
    }
    if channel.draws_bars() {
        if env.get_os("CARGO_TERM_COLOR").is_none()
            && !cargo_args.iter().any(|a| a.starts_with("--color"))
        {
            cargo.env("CARGO_TERM_COLOR", "always");
        }
        cargo.stderr(std::process::Stdio::piped());
    }
    let mut child = cargo.spawn().map_err(cannot)?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let scripts = std::thread::scope(|scope| {
        let reader = stdout.map(|stdout| {
            scope.spawn(move || {
                let mut scripts = Vec::new();
                for line in std::io::BufReader::new(stdout)
                    .lines()
                    .map_while(std::result::Result::ok)
                {
                    if read_messages {
                        if let Ok(cargo_metadata::Message::BuildScriptExecuted(b)) =
                            serde_json::from_str::<cargo_metadata::Message>(&line)
                        {
                            scripts.push((b.package_id.repr, b.out_dir.into_std_path_buf()));
                        }
                    }
                    if forward_json {
                        channel.print_stdout(&line);
                    }
                }
                scripts
            })
        });
        if let Some(stderr) = stderr {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(std::result::Result::ok)
            {
                channel.print_line(&line);
            }
        }
        reader.and_then(|r| r.join().ok()).unwrap_or_default()
    });
    Ok((child.wait().map_err(cannot)?, scripts))
}

/// The exit code of `cargo mcpp build`: success (saying which device packages cargo found
/// fresh, their build scripts not run), else the code of a device phase that failed (1
/// compiler failed, 3 refused, ...), else [`exit_code::CARGO_FAILED`].
fn exit_code_of(
    status: ExitStatus,
    device_packages: &[(String, PathBuf)],
    outcomes: &BTreeMap<String, PackageOutcome>,
    built: Option<&BTreeMap<String, PathBuf>>,
) -> i32 {
    if status.success() {
        // Fresh: cargo built the package (when its messages say which) and ran no build script.
        for (name, _) in device_packages
            .iter()
            .filter(|(n, _)| !outcomes.contains_key(n) && built.is_none_or(|b| b.contains_key(n)))
        {
            eprintln!("      Device {name}: fresh (cargo did not need to run its build script)");
        }
        return exit_code::SUCCESS;
    }
    // A device phase that failed decides the exit code (1 compiler failed, 3 refused, ...).
    let failed = outcomes.values().find_map(|o| match o {
        PackageOutcome::Failed { exit_code, .. } => Some(*exit_code),
        _ => None,
    });
    failed.unwrap_or(exit_code::CARGO_FAILED)
}

/// The engine `cargo mcpp build` names to the build scripts of its `cargo build`: this
/// executable, unless `CARGO_MCPP` already names one or this is the one `mcpp_build` finds
/// anyway (its last step, [`installed_engine`]). Setting the variable only when it changes the
/// choice keeps `cargo build` and `cargo mcpp build` from rerunning each other's build scripts
/// (the client declares `rerun-if-env-changed=CARGO_MCPP`). `cargo mcpp init`'s `Next:` line
/// asks the same question: what a plain `cargo run` must be told.
pub(crate) fn engine_to_name() -> Option<PathBuf> {
    if crate::config::env::Env::process()
        .get_nonempty(ENGINE_ENV)
        .is_some()
    {
        return None;
    }
    let me = std::env::current_exe().ok()?;
    let found = installed_engine().and_then(|p| std::fs::canonicalize(p).ok());
    match found {
        Some(f) if std::fs::canonicalize(&me).is_ok_and(|m| m == f) => None,
        _ => Some(me),
    }
}

/// Where `cargo install` puts the engine, as `mcpp_build` looks for it last:
/// `$CARGO_HOME/bin/cargo-mcpp` (`CARGO_HOME` defaulting to `$HOME/.cargo`,
/// `%USERPROFILE%\.cargo` on Windows). tests/build_client.rs checks that both find the same.
#[doc(hidden)]
pub fn installed_engine() -> Option<PathBuf> {
    let env = crate::config::env::Env::process();
    let home = env
        .get_nonempty("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            env.get_nonempty(if cfg!(windows) { "USERPROFILE" } else { "HOME" })
                .map(|h| PathBuf::from(h).join(".cargo"))
        })?;
    let path = home
        .join("bin")
        .join(format!("cargo-mcpp{}", std::env::consts::EXE_SUFFIX));
    path.is_file().then_some(path)
}

/// `cargo mcpp mcpp build-script`, the installed engine of `mcpp_build::build()`: this process
/// runs with the build script's environment and standard output; it prints the handshake, reads
/// the request (standard input, or `--request FILE`) and runs it through the same code as
/// `mcpp-build`'s `engine` feature.
///
/// # Errors
/// [`ErrorKind::Io`] when the request cannot be read; the device phase's own failure is its
/// exit status, already printed.
pub fn build_script(args: &BuildScriptArgs) -> Result<i32> {
    use std::io::Read;
    // The handshake `mcpp_build` waits for (cargo ignores stdout lines not starting `cargo:`).
    println!("{ENGINE_HANDSHAKE}{}", env!("CARGO_PKG_VERSION"));
    let mut request = String::new();
    match &args.request {
        Some(path) => {
            request = std::fs::read_to_string(path)
                .map_err(|e| Error::io("cannot read the request", path, e))?;
        }
        None => {
            std::io::stdin().read_to_string(&mut request).map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("cannot read the request from standard input: {e}"),
                )
            })?;
        }
    }
    Ok(crate::request::run(
        &request,
        Default::default(),
        Default::default(),
    ))
}
