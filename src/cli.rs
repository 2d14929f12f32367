//! `cargo mcpp ...`: argument parsing (clap derive, `bin_name = "cargo"`), and the `build`
//! command: validate and run the device phase with progress, then `cargo build` with the
//! arguments passed through, whose build.rs step finds everything fresh.

use crate::error::{exit_code, Error, ErrorKind, Result};
use crate::manifest::Manifest;
use crate::pipeline::{self, AccelChoice, Config, ACCEL_ENV, NO_ACCEL_ENV};
use crate::progress::Progress;
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
    /// Compile the device sources (with progress), then run `cargo build` with the same arguments.
    Build(BuildArgs),
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
    /// Path to Cargo.toml (passed to cargo too).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Release profile (passed to cargo too; optimises device code).
    #[arg(long, short = 'r')]
    pub release: bool,
    /// Build profile (passed to cargo too).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Target triple (passed to cargo too).
    #[arg(long, value_name = "TRIPLE")]
    pub target: Option<String>,
    /// Target directory (passed to cargo too).
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// Parallel compilers (passed to cargo too).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
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
    let cli = match CargoCli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { exit_code::USAGE } else { exit_code::SUCCESS };
        }
    };
    let CargoCli::Mcpp(mcpp) = cli;
    let result = match mcpp.command {
        Command_::Build(b) => build(&b),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn cargo_program() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn build(args: &BuildArgs) -> Result<i32> {
    let mut meta = cargo_metadata::MetadataCommand::new();
    meta.cargo_path(cargo_program()).no_deps();
    if let Some(p) = &args.manifest_path {
        meta.manifest_path(p);
    }
    let metadata = meta.exec().map_err(|e| {
        Error::new(ErrorKind::Manifest, "`cargo metadata` failed, so the package cannot be found")
            .detail(e.to_string())
            .help("run from a package directory or pass --manifest-path path/to/Cargo.toml")
    })?;
    let packages: Vec<&cargo_metadata::Package> = match (&args.manifest_path, metadata.root_package()) {
        (Some(p), _) => {
            let wanted = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            metadata.workspace_packages().into_iter().filter(|pkg| std::fs::canonicalize(&pkg.manifest_path).ok().as_ref() == Some(&wanted)).collect()
        }
        (None, Some(root)) => vec![root],
        (None, None) => metadata.workspace_packages(),
    };
    let profile = match (&args.profile, args.release) {
        (Some(p), _) => p.clone(),
        (None, true) => "release".to_string(),
        (None, false) => "dev".to_string(),
    };
    let profile_dir = match profile.as_str() {
        "dev" | "test" => "debug".to_string(),
        "bench" => "release".to_string(),
        other => other.to_string(),
    };
    let release = matches!(profile.as_str(), "release" | "bench");
    let target_dir = args.target_dir.clone().unwrap_or_else(|| metadata.target_directory.clone().into_std_path_buf());
    let mut profile_path = target_dir.clone();
    if let Some(t) = &args.target {
        profile_path.push(t);
    }
    profile_path.push(&profile_dir);
    let accel = match (&args.accel, args.no_accel) {
        (_, true) => AccelChoice::NoAccel,
        (Some(s), _) => AccelChoice::Spec(s.clone()),
        (None, false) => AccelChoice::Manifest,
    };
    for pkg in &packages {
        let manifest_path = pkg.manifest_path.clone().into_std_path_buf();
        let manifest = Manifest::read(&manifest_path)?;
        if !manifest.has_mcpp_table {
            continue;
        }
        let progress = Progress::new(&pkg.name);
        let config = Config {
            manifest_path,
            accel: accel.clone(),
            work_dir: profile_path.join("mcpp").join(pkg.name.as_str()),
            out_dir: None,
            release,
            jobs: args.jobs.map(|j| j as usize).unwrap_or_else(crate::default_jobs),
            env: crate::env::Env::process(),
            builder_tools: Default::default(),
        };
        let outcome = pipeline::run(&config, &progress, None);
        progress.finish();
        // Its warnings are not printed here: the build script prints the same ones, and cargo
        // shows them once.
        let outcome = outcome?;
        eprintln!(
            "      Device {} [{}]: {} compiled, {} fresh",
            pkg.name,
            if outcome.accel.is_empty() { "no accelerator".to_string() } else { outcome.accel.to_string() },
            outcome.report.ran.len(),
            outcome.report.fresh.len()
        );
    }
    let mut cargo = Command::new(cargo_program());
    cargo.arg("build");
    if let Some(p) = &args.manifest_path {
        cargo.arg("--manifest-path").arg(p);
    }
    if args.release {
        cargo.arg("--release");
    }
    if let Some(p) = &args.profile {
        cargo.args(["--profile", p]);
    }
    if let Some(t) = &args.target {
        cargo.args(["--target", t]);
    }
    if let Some(d) = &args.target_dir {
        cargo.arg("--target-dir").arg(d);
    }
    if let Some(j) = args.jobs {
        cargo.arg(format!("-j{j}"));
    }
    cargo.args(&args.cargo_args);
    match &accel {
        AccelChoice::NoAccel => {
            cargo.env(NO_ACCEL_ENV, "1").env_remove(ACCEL_ENV);
        }
        AccelChoice::Spec(s) => {
            cargo.env(ACCEL_ENV, s).env_remove(NO_ACCEL_ENV);
        }
        AccelChoice::Manifest => {}
    }
    let status = cargo.status().map_err(|e| Error::new(ErrorKind::ToolNotFound, format!("cannot run `cargo build`: {e}")))?;
    Ok(if status.success() { exit_code::SUCCESS } else { exit_code::CARGO_FAILED })
}
