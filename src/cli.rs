//! `cargo mcpp ...`: argument parsing (clap derive, `bin_name = "cargo"`) and the commands:
//! `build` (fetch the payloads, run the device phase with progress, then `cargo build` with
//! the arguments passed through, whose build.rs step finds everything fresh), `fetch` (install
//! the payloads the package's build needs and record their hashes in `mcpp.lock`), and
//! `why tool <name>` (print the resolver's recorded decision).

use crate::error::{exit_code, Error, ErrorKind, Result};
use crate::manifest::Manifest;
use crate::pipeline::{self, AccelChoice, ACCEL_ENV, NO_ACCEL_ENV};

/// The variable naming the engine `mcpp_build` runs, and the first line the engine prints in
/// `build-script` mode (followed by its version): the client's own constants.
pub use mcpp_build::{ENGINE_ENV, ENGINE_HANDSHAKE};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::Command;

/// `cargo mcpp`, as cargo invokes it.
#[derive(Debug, Parser)]
#[command(name = "cargo", bin_name = "cargo")]
pub enum CargoCli {
    /// Device code in Rust/C++ crates: compile shaders and kernels, generate their surface.
    #[command(version)]
    Mcpp(McppCli),
}

/// The `mcpp` subcommand.
#[derive(Debug, Args)]
pub struct McppCli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command_,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command_ {
    /// Fetch the payloads, compile the device sources (with progress), then run `cargo build` with the same arguments.
    Build(BuildArgs),
    /// Install the payloads (toolchains) this package's build needs, and record their hashes in mcpp.lock.
    Fetch(FetchArgs),
    /// Explain a decision of the last build: `cargo mcpp why tool <name>`.
    Why(WhyArgs),
    /// Build in release and write an AppImage or an MSI of the package's program.
    Pack(crate::pack::PackArgs),
    /// The device phase of a build script whose build.rs calls `mcpp_build::build()` (the
    /// dependency-free client); not for hand use.
    #[command(hide = true)]
    BuildScript(BuildScriptArgs),
}

/// `cargo mcpp build-script` options, as `mcpp_build` passes them.
#[derive(Debug, Args)]
pub struct BuildScriptArgs {
    /// The version of the `mcpp-build` crate that started this engine.
    #[arg(long, value_name = "VERSION")]
    pub client_version: String,
    /// The accelerator set (`mcpp_build::Build::accel`).
    #[arg(long, value_name = "SPEC", conflicts_with = "no_accel")]
    pub accel: Option<String>,
    /// No accelerator (`mcpp_build::Build::no_accel`).
    #[arg(long)]
    pub no_accel: bool,
}

/// `cargo mcpp fetch` options.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Payloads to fetch (NAME or NAME@VERSION), regardless of the gates; default: those the build needs.
    #[arg(value_name = "PAYLOAD")]
    pub payloads: Vec<String>,
    /// The accelerator set the build will use (default: the manifest's), e.g. "vulkan1.2".
    #[arg(long, value_name = "SPEC", conflicts_with = "no_accel")]
    pub accel: Option<String>,
    /// Fetch for a build with no accelerator (fetches nothing).
    #[arg(long)]
    pub no_accel: bool,
    /// Use only the cache; refuse when a payload is not in it (also CARGO_NET_OFFLINE=true).
    #[arg(long)]
    pub offline: bool,
    /// Path to Cargo.toml.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
}

/// `cargo mcpp why` options.
#[derive(Debug, Args)]
pub struct WhyArgs {
    /// What to explain.
    #[command(subcommand)]
    pub what: WhyWhat,
}

/// What `cargo mcpp why` explains.
#[derive(Debug, Subcommand)]
pub enum WhyWhat {
    /// Which program the last build used for a tool, where it came from, and the line that decided it.
    Tool(WhyToolArgs),
}

/// `cargo mcpp why tool` options.
#[derive(Debug, Args)]
pub struct WhyToolArgs {
    /// The tool name (`glslangValidator`, `glslc`, `nvcc`, ...).
    pub name: String,
    /// The packages whose decisions to read.
    #[command(flatten)]
    pub selection: PackageSelection,
    /// Which build to look at.
    #[command(flatten)]
    pub location: BuildLocation,
}

/// Where a build is: the package, profile, target and target directory (for `build`, they are
/// passed to `cargo build` too).
#[derive(Debug, Args)]
pub struct BuildLocation {
    /// Path to Cargo.toml.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// The release profile (optimises device code).
    #[arg(long, short = 'r')]
    pub release: bool,
    /// The build profile.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// The target triple.
    #[arg(long, value_name = "TRIPLE")]
    pub target: Option<String>,
    /// The target directory.
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
}

/// Which packages cargo builds: cargo's own flags, read here with cargo's meaning (and passed
/// to `cargo build` unchanged), so that a package cargo will not build is not validated,
/// fetched for or compiled.
#[derive(Debug, Args, Default, Clone)]
pub struct PackageSelection {
    /// Package(s) to build (a name, `name@version`, or a glob such as `app-*`).
    #[arg(long = "package", short = 'p', value_name = "SPEC")]
    pub package: Vec<String>,
    /// Every member of the workspace.
    #[arg(long, alias = "all")]
    pub workspace: bool,
    /// Members to leave out of `--workspace` (names or globs).
    #[arg(long, value_name = "SPEC", requires = "workspace")]
    pub exclude: Vec<String>,
}

/// `cargo mcpp build` options; anything else is passed to `cargo build` unchanged.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Override `[package.metadata.mcpp] accel` for this build, e.g. "vulkan1.3".
    #[arg(long, value_name = "SPEC", conflicts_with = "no_accel")]
    pub accel: Option<String>,
    /// Build with no accelerator: no device source compiles (the CPU-only variant).
    #[arg(long)]
    pub no_accel: bool,
    /// The package, profile, target and target directory (passed to cargo too).
    #[command(flatten)]
    pub location: BuildLocation,
    /// The packages (passed to cargo too).
    #[command(flatten)]
    pub selection: PackageSelection,
    /// Parallel compilers (passed to cargo too).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Fetch nothing: use the payload cache or refuse (passed to cargo too; also CARGO_NET_OFFLINE=true).
    #[arg(long)]
    pub offline: bool,
    /// Further `cargo build` arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "CARGO_ARGS")]
    pub cargo_args: Vec<String>,
}

/// Run `cargo mcpp` with `args` (as from `std::env::args_os`) and return the exit code.
pub fn main_with_args(mut args: Vec<std::ffi::OsString>) -> i32 {
    // `cargo mcpp build` runs `cargo-mcpp mcpp build`; `cargo-mcpp build` is accepted too.
    if args.get(1).map(|a| a != "mcpp").unwrap_or(true) {
        args.insert(1, "mcpp".into());
    }
    let cli = match CargoCli::try_parse_from(split_attached_jobs(args)) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { exit_code::USAGE } else { exit_code::SUCCESS };
        }
    };
    let CargoCli::Mcpp(mcpp) = cli;
    let result = match mcpp.command {
        Command_::Build(b) => build(&b),
        Command_::Fetch(f) => fetch(&f),
        Command_::Why(WhyArgs { what: WhyWhat::Tool(w) }) => why_tool(&w),
        Command_::Pack(p) => crate::pack::run(&p),
        Command_::BuildScript(b) => build_script(&b),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// `-j1` as `-j 1`: with cargo's arguments passed through after ours, clap would otherwise
/// take an attached `-jN` for the start of cargo's arguments, and our options after it with it.
pub fn split_attached_jobs(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.into_iter()
        .flat_map(|a| match a.to_str().and_then(|t| t.strip_prefix("-j")).filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
            Some(n) => vec!["-j".into(), n.into()],
            None => vec![a],
        })
        .collect()
}

fn cargo_program() -> std::ffi::OsString {
    crate::env::Env::process().get_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The packages a command works on and the profile directory of their build (`why tool`
/// reads the decisions recorded there).
struct Located {
    packages: Vec<(String, PathBuf)>,
    profile_path: PathBuf,
    /// The selected packages without a build script (cargo metadata: no `custom-build` target).
    without_build_script: Vec<String>,
}

fn locate(location: &BuildLocation, selection: &PackageSelection) -> Result<Located> {
    let mut meta = cargo_metadata::MetadataCommand::new();
    meta.cargo_path(cargo_program()).no_deps();
    if let Some(p) = &location.manifest_path {
        meta.manifest_path(p);
    }
    let metadata = meta.exec().map_err(|e| {
        Error::new(ErrorKind::Manifest, "`cargo metadata` failed, so the package cannot be found")
            .detail(e.to_string())
            .help("run from a package directory or pass --manifest-path path/to/Cargo.toml")
    })?;
    let packages = select_packages(&metadata, location.manifest_path.as_deref(), selection)?;
    // Where cargo puts a profile's output (`why tool` only reads it): `dev`/`test` build into
    // `debug`, `bench` into `release`, any other profile into its own name.
    let profile = match (&location.profile, location.release) {
        (Some(p), _) => p.clone(),
        (None, true) => "release".to_string(),
        (None, false) => "dev".to_string(),
    };
    let profile_dir = match profile.as_str() {
        "dev" | "test" => "debug".to_string(),
        "bench" => "release".to_string(),
        other => other.to_string(),
    };
    let mut profile_path = location.target_dir.clone().unwrap_or_else(|| metadata.target_directory.clone().into_std_path_buf());
    if let Some(t) = &location.target {
        profile_path.push(t);
    }
    profile_path.push(&profile_dir);
    let without_build_script = packages.iter().filter(|p| !p.targets.iter().any(|t| t.is_custom_build())).map(|p| p.name.to_string()).collect();
    Ok(Located { packages: packages.iter().map(|p| (p.name.to_string(), p.manifest_path.clone().into_std_path_buf())).collect(), profile_path, without_build_script })
}

/// A `-p`/`--exclude` spec: the name, the version after `@`, and the glob when it is one.
type PackageSpec = (String, Option<String>, Option<glob::Pattern>);

/// The workspace packages cargo builds for these flags, by cargo's rules: `--workspace` (less
/// `--exclude`), else the `-p` specs, else the package of the manifest (`--manifest-path`, or
/// the nearest `Cargo.toml` above the current directory), else, for a virtual manifest, the
/// workspace's `default-members` (all members when it has none). A `-p` naming a package
/// outside the workspace (a dependency) selects nothing here: cargo builds it, and its own
/// build script does its device work.
///
/// # Errors
/// [`ErrorKind::Manifest`] for a malformed `-p`/`--exclude` glob.
pub fn select_packages<'m>(metadata: &'m cargo_metadata::Metadata, manifest_path: Option<&std::path::Path>, selection: &PackageSelection) -> Result<Vec<&'m cargo_metadata::Package>> {
    let members = metadata.workspace_packages();
    let matcher = |specs: &[String]| -> Result<Vec<PackageSpec>> {
        specs
            .iter()
            .map(|spec| {
                let (name, version) = match spec.split_once('@') {
                    Some((n, v)) => (n.to_string(), Some(v.to_string())),
                    None => (spec.clone(), None),
                };
                let pattern = if name.contains(['*', '?', '[']) {
                    Some(glob::Pattern::new(&name).map_err(|e| Error::new(ErrorKind::Usage, format!("`{spec}` is not a valid package glob: {}", e.msg)).help("write a package name, name@version, or a glob such as `app-*`"))?)
                } else {
                    None
                };
                Ok((name, version, pattern))
            })
            .collect()
    };
    let matches = |specs: &[(String, Option<String>, Option<glob::Pattern>)], p: &cargo_metadata::Package| {
        specs.iter().any(|(name, version, pattern)| {
            let name_ok = match pattern {
                Some(g) => g.matches(&p.name),
                None => *name == *p.name,
            };
            name_ok && version.as_ref().is_none_or(|v| p.version.to_string() == *v || p.version.to_string().starts_with(&format!("{v}.")))
        })
    };
    if selection.workspace {
        let excluded = matcher(&selection.exclude)?;
        return Ok(members.into_iter().filter(|p| !matches(&excluded, p)).collect());
    }
    if !selection.package.is_empty() {
        let wanted = matcher(&selection.package)?;
        return Ok(members.into_iter().filter(|p| matches(&wanted, p)).collect());
    }
    let manifest = match manifest_path {
        Some(p) => Some(p.to_path_buf()),
        None => std::env::current_dir().ok().and_then(|d| d.ancestors().map(|a| a.join("Cargo.toml")).find(|m| m.is_file())),
    };
    let canonical = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if let Some(m) = manifest.map(|m| canonical(&m)) {
        if let Some(p) = members.iter().find(|p| canonical(p.manifest_path.as_std_path()) == m) {
            return Ok(vec![*p]);
        }
    }
    Ok(metadata.workspace_default_packages())
}

fn fetch(args: &FetchArgs) -> Result<i32> {
    let location = BuildLocation { manifest_path: args.manifest_path.clone(), release: false, profile: None, target: None, target_dir: None };
    let located = locate(&location, &PackageSelection::default())?;
    let accel = match (&args.accel, args.no_accel) {
        (_, true) => AccelChoice::NoAccel,
        (Some(s), _) => AccelChoice::Spec(s.clone()),
        (None, false) => AccelChoice::Manifest,
    };
    for (name, manifest_path) in &located.packages {
        let manifest = Manifest::read(manifest_path)?;
        if !manifest.has_mcpp_table && manifest.mcpp.pack.is_none() && args.payloads.is_empty() {
            continue;
        }
        fetch_one(name, manifest_path, &accel, args.offline, &args.payloads, true)?;
    }
    Ok(exit_code::SUCCESS)
}

/// Fetch for one package and say what happened; `verbose` (the `fetch` command) also says
/// when nothing was needed and which payloads were already installed.
fn fetch_one(package: &str, manifest_path: &std::path::Path, accel: &AccelChoice, offline: bool, names: &[String], verbose: bool) -> Result<()> {
    let env = crate::env::Env::process();
    let report = crate::fetch::fetch_package(manifest_path, accel, &env, offline, names)?;
    for r in &report.reports {
        eprintln!("    Override {r}");
    }
    if report.payloads.is_empty() && verbose {
        eprintln!("     Nothing to fetch for {package}: no rule in use here drives a payload for this accelerator set, or its tool is named explicitly");
    }
    for (inst, what, why) in &report.payloads {
        let verb = match what {
            crate::fetch::Fetched::Installed => "Installed",
            crate::fetch::Fetched::Fresh if verbose => "Fresh",
            crate::fetch::Fetched::Fresh => continue,
        };
        eprintln!("{verb:>12} payload {} {} ({why}) in {}", inst.name, inst.version, inst.dir.display());
    }
    if report.lock_written {
        eprintln!("      Locked {}", manifest_path.parent().unwrap_or(std::path::Path::new(".")).join(crate::payload::LOCKFILE).display());
    }
    Ok(())
}

fn why_tool(args: &WhyToolArgs) -> Result<i32> {
    let located = locate(&args.location, &args.selection)?;
    let mut looked = Vec::new();
    for (package, _) in &located.packages {
        let dir = located.profile_path.join("mcpp").join(package);
        let all = crate::tool::read_decisions(&dir);
        let file = dir.join(crate::tool::DECISIONS_FILE);
        let Some(d) = all.get(&args.name) else {
            looked.push(format!("{} (recorded: {})", file.display(), if all.is_empty() { "nothing".to_string() } else { all.keys().cloned().collect::<Vec<_>>().join(", ") }));
            continue;
        };
        println!("{} for package {package} (recorded in {})", d.tool, file.display());
        match &d.answer {
            Some(a) => println!("  answer:  {}", a.display()),
            None => println!("  answer:  none"),
        }
        if let Some(v) = &d.version {
            println!("  version: {v}");
        }
        println!("  source:  {}", d.source);
        println!("  from:    {}", d.origin);
        if let Some(root) = &d.toolkit {
            println!("  toolkit: {}", root.display());
            if let Some(o) = &d.toolkit_origin {
                println!("    from:  {o}");
            }
        }
        if !d.considered.is_empty() {
            println!("  considered before it:");
            for c in &d.considered {
                println!("    {c}");
            }
        }
        if let Some(w) = &d.warning {
            println!("  warning: {w}");
        }
        if let Some(r) = &d.refusal {
            println!("  refused:");
            for line in r.lines() {
                println!("    {line}");
            }
        }
        return Ok(exit_code::SUCCESS);
    }
    Err(Error::new(ErrorKind::Manifest, format!("no build has resolved the tool `{}` yet", args.name))
        .detail(format!("looked in: {}", looked.join("; ")))
        .help("run `cargo mcpp build` (or `cargo build`) first, with the same --profile/--release/--target/--target-dir"))
}

/// The engine `cargo mcpp build` names to the build scripts of its `cargo build`: this
/// executable, unless `CARGO_MCPP` already names one or this is the one `mcpp_build` finds
/// anyway (its own lookup, [`mcpp_build::Build::locate_engine`]). Setting the variable only
/// when it changes the choice keeps `cargo build` and `cargo mcpp build` from rerunning each
/// other's build scripts (the client declares `rerun-if-env-changed=CARGO_MCPP`).
fn engine_to_name() -> Option<PathBuf> {
    if crate::env::Env::process().get_nonempty(ENGINE_ENV).is_some() {
        return None;
    }
    let me = std::env::current_exe().ok()?;
    let found = mcpp_build::Build::new().locate_engine().ok().and_then(|(p, _)| std::fs::canonicalize(p).ok());
    match found {
        Some(f) if std::fs::canonicalize(&me).is_ok_and(|m| m == f) => None,
        _ => Some(me),
    }
}

/// The engine of `mcpp_build::build()`: this process runs with the build script's environment
/// and standard output, so it is `cargo_mcpp::build()` run in a child process; a client of
/// another version is refused (its arguments and expectations may differ).
fn build_script(args: &BuildScriptArgs) -> Result<i32> {
    let engine_version = env!("CARGO_PKG_VERSION");
    // The handshake `mcpp_build` waits for (cargo ignores stdout lines not starting `cargo:`).
    println!("{ENGINE_HANDSHAKE}{engine_version}");
    if args.client_version != engine_version {
        let message = format!(
            "mcpp-build {} (this package's build-dependency) started cargo-mcpp {engine_version} ({}); they must be the same version",
            args.client_version,
            std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "this executable".into())
        );
        let mut out = crate::cargo_output::CargoOutput::default();
        out.warning(&message);
        out.print();
        return Err(Error::new(ErrorKind::ToolNotFound, message).help(format!(
            "install the engine of the client's version (`cargo install cargo-mcpp --version {}`) or set CARGO_MCPP to one, or make the build-dependency mcpp-build = \"{engine_version}\"",
            args.client_version
        )));
    }
    let mut b = crate::Build::new();
    if args.no_accel {
        b.no_accel();
    } else if let Some(spec) = &args.accel {
        b.accel(spec);
    }
    b.compile();
    Ok(exit_code::SUCCESS)
}

/// `cargo mcpp build`: validate the selected packages' device phases (every problem, before
/// cargo starts), fetch the toolchain payloads they need, then run `cargo build` with the
/// user's arguments and show the progress its build scripts report over the side channel
/// ([`crate::report`]). The device work itself runs only in the build scripts, with cargo's
/// facts, so plain `cargo build` and `cargo mcpp build` produce the same bytes.
fn build(args: &BuildArgs) -> Result<i32> {
    let Located { packages, without_build_script, .. } = locate(&args.location, &args.selection)?;
    let accel = match (&args.accel, args.no_accel) {
        (_, true) => AccelChoice::NoAccel,
        (Some(s), _) => AccelChoice::Spec(s.clone()),
        (None, false) => AccelChoice::Manifest,
    };
    let channel = crate::progress::Channel::open().map_err(|e| Error::new(ErrorKind::Io, format!("cannot open the progress channel: {e}")).help("check that the temporary directory (TMPDIR) is writable"))?;
    // This process's view: the choice the build scripts will see, and the channel (so a
    // refusal here names `cargo mcpp build --no-accel`, as the build scripts' will).
    let mut env = crate::env::Env::process();
    env.set(crate::report::PROGRESS_ENV, channel.path());
    match &accel {
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
    let mut device_packages = Vec::new();
    let mut problems = Vec::new();
    for (name, manifest_path) in &packages {
        match Manifest::read(manifest_path) {
            Ok(m) if !m.has_mcpp_table => continue,
            Ok(_) => {}
            Err(e) => {
                problems.push(e);
                continue;
            }
        }
        let validated = pipeline::validate(manifest_path, &AccelChoice::Manifest, &env);
        let has_build_script = !without_build_script.contains(name);
        match validated {
            Ok(_) if has_build_script => device_packages.push((name.clone(), manifest_path.clone())),
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
                    .help("add build.rs with `fn main() { cargo_mcpp::build(); }` (build-dependency cargo-mcpp) or `fn main() { mcpp_build::build(); }` (build-dependency mcpp-build)"),
            );
        }
    }
    // Every problem of every package, before cargo starts.
    Error::all(problems)?;
    for (name, manifest_path) in &device_packages {
        fetch_one(name, manifest_path, &accel, args.offline, &[], false)?;
    }
    #[allow(clippy::disallowed_methods)] // cli.rs runs cargo (argv)
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
    if let Some(j) = args.jobs {
        cargo.arg(format!("-j{j}"));
    }
    if args.offline {
        cargo.arg("--offline");
    }
    cargo.args(&args.cargo_args);
    // A build.rs calling `mcpp_build::build()` runs this same engine (unless one is named).
    if let Some(me) = engine_to_name() {
        cargo.env(ENGINE_ENV, me);
    }
    crate::env::apply_to(&mut cargo, &env);
    let status = if channel.draws_bars() {
        // cargo's stderr comes through here, printed above the bars; colours kept.
        if env.get_os("CARGO_TERM_COLOR").is_none() && !args.cargo_args.iter().any(|a| a.starts_with("--color")) {
            cargo.env("CARGO_TERM_COLOR", "always");
        }
        cargo.stderr(std::process::Stdio::piped());
        let mut child = cargo.spawn().map_err(|e| Error::new(ErrorKind::ToolNotFound, format!("cannot run `cargo build`: {e}")))?;
        if let Some(stderr) = child.stderr.take() {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines().map_while(std::result::Result::ok) {
                channel.print_line(&line);
            }
        }
        child.wait()
    } else {
        cargo.status()
    }
    .map_err(|e| Error::new(ErrorKind::ToolNotFound, format!("cannot run `cargo build`: {e}")))?;
    let outcomes = channel.close();
    if status.success() {
        for (name, _) in device_packages.iter().filter(|(n, _)| !outcomes.contains_key(n)) {
            eprintln!("      Device {name}: fresh (cargo did not need to run its build script)");
        }
        return Ok(exit_code::SUCCESS);
    }
    // A device phase that failed decides the exit code (1 compiler failed, 3 refused, ...).
    let failed = outcomes.values().find_map(|o| match o {
        crate::progress::PackageOutcome::Failed { exit_code, .. } => Some(*exit_code),
        _ => None,
    });
    Ok(failed.unwrap_or(exit_code::CARGO_FAILED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attached_jobs_value_leaves_the_options_after_it_ours() {
        let args: Vec<std::ffi::OsString> = ["cargo-mcpp", "mcpp", "build", "-j1", "--no-accel", "--features", "x"].iter().map(Into::into).collect();
        let CargoCli::Mcpp(m) = CargoCli::try_parse_from(split_attached_jobs(args)).unwrap();
        let Command_::Build(b) = m.command else { panic!("not build") };
        assert_eq!(b.jobs, Some(1));
        assert!(b.no_accel);
        assert_eq!(b.cargo_args, ["--features", "x"]);
    }
}
