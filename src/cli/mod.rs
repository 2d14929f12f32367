//! `cargo mcpp ...`: argument parsing (clap derive, `bin_name = "cargo"`) and the commands:
//! `build` (fetch the toolchain packages, run the device phase with progress, then `cargo build`
//! with the arguments passed through, whose build.rs step finds everything fresh), `fetch`
//! (install the toolchain packages the package's build needs and record their hashes in `mcpp.lock`),
//! `why tool <name>` (print the resolver's recorded decision), and `pack` (build in release and
//! write an AppImage or an MSI of the program).
//!
//! This module holds the arguments and the dispatch; each command is its own module:
//! [`build`] (`build`, and the hidden `build-script` engine), [`fetch`], [`why`], [`pack`], and
//! [`locate`], which finds the packages and the profile directory of a build as cargo does.

pub mod progress;

pub mod build;
pub mod fetch;
pub mod init;
pub mod locate;
pub mod pack;
pub mod why;

pub use locate::select_packages;

use crate::error::exit_code;
use crate::plan::accel::AccelChoice;

pub use crate::request::{ENGINE_ENV, ENGINE_HANDSHAKE};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

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
    /// Fetch the toolchain packages, compile the device sources (with progress), then run `cargo build` with the same arguments.
    Build(BuildArgs),
    /// Install the toolchain packages (compilers) this package's build needs, and record their hashes in mcpp.lock.
    Fetch(FetchArgs),
    /// Explain a decision of the last build: `cargo mcpp why tool <name>`.
    Why(WhyArgs),
    /// Build in release and write an AppImage or an MSI of the package's program.
    Pack(PackArgs),
    /// Add device code to the package in this directory: the manifest table, the build dependency, build.rs, an example device source and the Rust code calling it (never overwriting a file).
    Init(init::InitArgs),
    /// Create a package NAME with device code (as `init` does in it).
    New(NewArgs),
    /// The device phase of a build script whose build.rs calls `mcpp_build::build()` without
    /// its `engine` feature (the request on standard input); not for hand use.
    #[command(hide = true)]
    BuildScript(BuildScriptArgs),
}

/// `cargo mcpp mcpp build-script` options: where the build script's request is
/// (`mcpp_build::Build`'s settings, JSON).
#[derive(Debug, Args)]
pub struct BuildScriptArgs {
    /// The request file; standard input when absent (what `mcpp-build` gives).
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,
}

/// `cargo mcpp new` options.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The new package's directory (its last component is the package name).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// A library (`src/lib.rs` with the generated surface public, the example program under
    /// `examples/`): its build dependency runs the device phase in the build script
    /// (`mcpp-build`'s `engine` feature), so its dependents build it with nothing installed.
    #[arg(long)]
    pub lib: bool,
    /// The lane, the accelerator set and the build dependency.
    #[command(flatten)]
    pub init: init::InitArgs,
}

/// `cargo mcpp fetch` options.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Toolchain packages to fetch (NAME or NAME@VERSION), regardless of the gates; default: those the build needs.
    #[arg(value_name = "PACKAGE")]
    pub packages: Vec<String>,
    /// The accelerator set, over the manifest's `accel`.
    #[command(flatten)]
    pub accel: AccelArgs,
    /// Use only the cache; refuse when a toolchain package is not in it (also CARGO_NET_OFFLINE=true).
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

/// `cargo mcpp pack` options; anything else is passed to `cargo build` unchanged.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// The package format.
    #[arg(long, value_enum)]
    pub format: crate::pack::Format,
    /// The target triple (the build's, passed to cargo); default the host's.
    #[arg(long, value_name = "TRIPLE")]
    pub target: Option<String>,
    /// The binary target to pack, when the package has several.
    #[arg(long, value_name = "NAME")]
    pub bin: Option<String>,
    /// Where to write the package; default `<target-dir>/[<triple>/]release/pack`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the plan (each file with its source and place, the tool) and write nothing: no build, no package.
    #[arg(long)]
    pub dry_run: bool,
    /// Fetch nothing (passed to cargo too; also CARGO_NET_OFFLINE=true).
    #[arg(long)]
    pub offline: bool,
    /// Accepted and ignored: pack always builds in release.
    #[arg(long)]
    pub release: bool,
    /// Refused: pack always builds the release profile (its place names the package's directory).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Path to Cargo.toml.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// The package to pack (a workspace member's name).
    #[arg(long = "package", short = 'p', value_name = "NAME")]
    pub package: Option<String>,
    /// The target directory.
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// AppImage: a type-2 runtime file instead of the `appimage-runtime` toolchain package.
    #[arg(long, value_name = "PATH")]
    pub runtime_file: Option<PathBuf>,
    /// The accelerator set, over the manifest's `accel`.
    #[command(flatten)]
    pub accel: AccelArgs,
    /// Further `cargo build` arguments (`--features x`, ...).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CARGO_ARGS"
    )]
    pub cargo_args: Vec<String>,
}

/// `cargo mcpp build` options; anything else is passed to `cargo build` unchanged.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The accelerator set, over the manifest's `accel`.
    #[command(flatten)]
    pub accel: AccelArgs,
    /// The package, profile, target and target directory (passed to cargo too).
    #[command(flatten)]
    pub location: BuildLocation,
    /// The packages (passed to cargo too).
    #[command(flatten)]
    pub selection: PackageSelection,
    /// Parallel jobs, as cargo takes them (`N`, a negative `-N`: the CPUs less N, `default`):
    /// passed to cargo, which checks it and hands its jobserver to the build scripts.
    #[arg(long, short = 'j', value_name = "N", allow_negative_numbers = true)]
    pub jobs: Option<String>,
    /// Fetch nothing: use the toolchain package cache or refuse (passed to cargo too; also CARGO_NET_OFFLINE=true).
    #[arg(long)]
    pub offline: bool,
    /// Also write compile_commands.json (every selected package's device and host C++ units, merged after cargo) into DIR (e.g. `.`), besides the device cache's.
    #[arg(long, value_name = "DIR")]
    pub compile_commands: Option<PathBuf>,
    /// `human` (default) or `json` (also `json-diagnostic-short`, ...): with json, the device phase's diagnostics, artifacts and end are JSON lines on stdout among cargo's own (passed to cargo too; one after `--` is honoured the same).
    #[arg(long, value_name = "FMT")]
    pub message_format: Option<String>,
    /// Further `cargo build` arguments.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CARGO_ARGS"
    )]
    pub cargo_args: Vec<String>,
}

/// Run `cargo mcpp` with `args` (as from `std::env::args_os`) and return the exit code.
pub fn main_with_args(mut args: Vec<std::ffi::OsString>) -> i32 {
    // `cargo mcpp build` runs `cargo-mcpp mcpp build`; `cargo-mcpp build` is accepted too.
    if args.get(1).map(|a| a != "mcpp").unwrap_or(true) {
        args.insert(1, "mcpp".into());
    }
    let cli = match CargoCli::try_parse_from(build_options_first(split_attached_jobs(args))) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit_code::USAGE
            } else {
                exit_code::SUCCESS
            };
        }
    };
    let CargoCli::Mcpp(mcpp) = cli;
    let result = match mcpp.command {
        Command_::Build(b) => build::build(&b),
        Command_::Fetch(f) => fetch::fetch(&f),
        Command_::Why(WhyArgs {
            what: WhyWhat::Tool(w),
        }) => why::why_tool(&w),
        Command_::Pack(p) => pack::pack(&p),
        Command_::Init(a) => init::init(&a),
        Command_::New(n) => init::new(&n.name, n.lib, &n.init),
        Command_::BuildScript(b) => build::build_script(&b),
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
        .flat_map(|a| {
            match a
                .to_str()
                .and_then(|t| t.strip_prefix("-j"))
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                Some(n) => vec!["-j".into(), n.into()],
                None => vec![a],
            }
        })
        .collect()
}

/// `cargo mcpp build`'s (and `pack`'s) own options first, wherever they stand before a `--`: clap passes
/// everything from the first argument it does not know (`--features`, a misspelt `--bogus`) to
/// `cargo build`, so without this `cargo mcpp build --features x --accel vulkan1.3` would hand
/// `--accel` to cargo (which refuses it) and `... --features x -p b` would select `b` for cargo
/// but not for the device phase's checks. The options are the ones clap declares for `build`
/// (long names, aliases, short names; with their value, attached `--accel=X`/`-pX` or the next
/// argument); every other argument keeps its order and goes after one `--`, to cargo, as
/// written (an unknown option reaches cargo, which refuses it with its own message). After a
/// `--` nothing is taken: `cargo mcpp build -- --accel x` gives cargo `--accel x`. Other
/// commands are returned as they are.
pub fn build_options_first(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let Some(command) = args
        .get(2)
        .and_then(|a| a.to_str())
        .filter(|a| ["build", "pack"].contains(a))
        .map(str::to_string)
    else {
        return args;
    };
    let cli = CargoCli::command();
    let Some(build) = cli
        .find_subcommand("mcpp")
        .and_then(|m| m.find_subcommand(&command))
    else {
        return args;
    };
    // (spelling, takes a value) of every option of `build`.
    let mut longs: Vec<(String, bool)> = Vec::new();
    let mut shorts: Vec<(char, bool)> = Vec::new();
    for arg in build.get_arguments() {
        let takes = arg.get_action().takes_values();
        for l in arg
            .get_long()
            .into_iter()
            .chain(arg.get_all_aliases().unwrap_or_default())
        {
            longs.push((format!("--{l}"), takes));
        }
        shorts.extend(arg.get_short().map(|c| (c, takes)));
    }
    // clap's own help flags (not among the declared arguments until the command is built):
    // `cargo mcpp build --help` shows our help, not cargo's.
    longs.push(("--help".into(), false));
    shorts.push(('h', false));
    let (head, rest) = args.split_at(3);
    let mut ours: Vec<std::ffi::OsString> = head.to_vec();
    let mut theirs: Vec<std::ffi::OsString> = Vec::new();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        let Some(t) = a.to_str() else {
            theirs.push(a.clone());
            continue;
        };
        if t == "--" {
            theirs.extend(it.by_ref().cloned());
            break;
        }
        // `--accel X`, `--accel=X`, `--no-accel`: (the option, whether its value is the next argument).
        if let Some((_, takes)) = longs.iter().find(|(l, _)| {
            t == l
                || t.strip_prefix(l.as_str())
                    .is_some_and(|r| r.starts_with('='))
        }) {
            ours.push(a.clone());
            if *takes && !t.contains('=') {
                ours.extend(it.next().cloned());
            }
            continue;
        }
        // `-p b`, `-pb` (given to clap as `-p b`: clap takes an attached short value for the
        // start of the trailing arguments when it comes first, as with `-j1`), `-r`.
        let mut chars = t.chars();
        match (chars.next(), chars.next(), chars.as_str()) {
            (Some('-'), Some(c), rest) if c != '-' => match shorts.iter().find(|(s, _)| *s == c) {
                Some((_, true)) => {
                    ours.push(format!("-{c}").into());
                    if rest.is_empty() {
                        ours.extend(it.next().cloned());
                    } else {
                        ours.push(rest.into());
                    }
                }
                Some((_, false)) if rest.is_empty() => ours.push(a.clone()),
                _ => theirs.push(a.clone()),
            },
            _ => theirs.push(a.clone()),
        }
    }
    if !theirs.is_empty() {
        ours.push("--".into());
        ours.extend(theirs);
    }
    ours
}

/// `--accel SPEC` / `--no-accel`, taken alike by `build`, `pack` and `fetch`.
#[derive(Debug, Args, Default)]
pub struct AccelArgs {
    /// The accelerator set for this build instead of `[package.metadata.mcpp] accel`, e.g.
    /// "vulkan1.3".
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "SPEC",
        conflicts_with = "no_accel"
    )]
    pub accel: Option<String>,
    /// Build with no accelerator: no device source compiles (the CPU-only variant).
    #[arg(long)]
    pub no_accel: bool,
}

impl AccelArgs {
    /// The accelerator choice (clap keeps the two options apart): the empty set, the spec, or
    /// the manifest's.
    pub fn choice(&self) -> AccelChoice {
        match (&self.accel, self.no_accel) {
            (_, true) => AccelChoice::NoAccel,
            (Some(s), _) => AccelChoice::Spec(s.clone()),
            (None, false) => AccelChoice::Manifest,
        }
    }

    /// The options again, for a `cargo mcpp build` started by another command.
    pub fn to_args(&self) -> Vec<String> {
        match (&self.accel, self.no_accel) {
            (_, true) => vec!["--no-accel".into()],
            (Some(a), _) => vec!["--accel".into(), a.clone()],
            (None, false) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_before_a_double_dash_is_ours_for_build_and_pack() {
        for (command, flag) in [
            ("build", "--help"),
            ("pack", "-h"),
            ("build", "-h"),
            ("pack", "--help"),
        ] {
            let args: Vec<std::ffi::OsString> =
                ["cargo-mcpp", "mcpp", command, "--features", "x", flag]
                    .iter()
                    .map(Into::into)
                    .collect();
            let e = CargoCli::try_parse_from(build_options_first(args)).unwrap_err();
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp,
                "{command} {flag}: {e}"
            );
            assert!(e.to_string().contains("--accel"), "{command} {flag}: {e}");
        }
        // After `--`, cargo's.
        let args: Vec<std::ffi::OsString> = ["cargo-mcpp", "mcpp", "build", "--", "--help"]
            .iter()
            .map(Into::into)
            .collect();
        let CargoCli::Mcpp(m) = CargoCli::try_parse_from(build_options_first(args)).unwrap();
        let Command_::Build(b) = m.command else {
            panic!()
        };
        assert_eq!(b.cargo_args, ["--help"]);
    }

    #[test]
    fn an_attached_jobs_value_leaves_the_options_after_it_ours() {
        let args: Vec<std::ffi::OsString> = [
            "cargo-mcpp",
            "mcpp",
            "build",
            "-j1",
            "--no-accel",
            "--features",
            "x",
        ]
        .iter()
        .map(Into::into)
        .collect();
        let CargoCli::Mcpp(m) = CargoCli::try_parse_from(split_attached_jobs(args)).unwrap();
        let Command_::Build(b) = m.command else {
            panic!("not build")
        };
        assert_eq!(b.jobs.as_deref(), Some("1"));
        assert!(b.accel.no_accel);
        assert_eq!(b.cargo_args, ["--features", "x"]);
    }

    fn parse_build(args: &[&str]) -> BuildArgs {
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let CargoCli::Mcpp(m) =
            CargoCli::try_parse_from(build_options_first(split_attached_jobs(args))).unwrap();
        let Command_::Build(b) = m.command else {
            panic!("not build")
        };
        b
    }

    #[test]
    fn jobs_are_taken_as_cargo_takes_them_negative_or_default() {
        for (args, want) in [
            (&["-j", "-1"][..], "-1"),
            (&["--jobs", "default"], "default"),
            (&["-j8"], "8"),
            (&["--jobs=-2"], "-2"),
        ] {
            let b = parse_build(&[&["cargo-mcpp", "mcpp", "build"][..], args].concat());
            assert_eq!(b.jobs.as_deref(), Some(want), "{args:?}");
            assert!(b.cargo_args.is_empty(), "{args:?}: {:?}", b.cargo_args);
        }
    }

    #[test]
    fn build_options_after_cargo_options_are_still_ours() {
        // Before: everything from `--features` (or a misspelt `--bogus`) went to cargo, `--accel` too.
        let b = parse_build(&[
            "cargo-mcpp",
            "mcpp",
            "build",
            "--bogus",
            "--accel",
            "vulkan1.3",
        ]);
        assert_eq!(
            (b.accel.accel.as_deref(), b.cargo_args.as_slice()),
            (Some("vulkan1.3"), ["--bogus".to_string()].as_slice())
        );
        let b = parse_build(&[
            "cargo-mcpp",
            "mcpp",
            "build",
            "--features",
            "x",
            "--no-accel",
            "-p",
            "b",
            "--accel-free",
            "-j1",
            "--compile-commands=.",
            "--all",
        ]);
        assert!(b.accel.no_accel && b.selection.workspace);
        assert_eq!(
            (
                b.selection.package.as_slice(),
                b.jobs.as_deref(),
                b.compile_commands.as_deref()
            ),
            (
                ["b".to_string()].as_slice(),
                Some("1"),
                Some(std::path::Path::new("."))
            )
        );
        assert_eq!(
            b.cargo_args,
            ["--features", "x", "--accel-free"],
            "another option keeps its place, for cargo"
        );
        let b = parse_build(&[
            "cargo-mcpp",
            "mcpp",
            "build",
            "--features",
            "x",
            "-pb",
            "--accel=cuda13.0",
            "--",
            "--accel",
            "y",
        ]);
        assert_eq!(
            (b.selection.package.as_slice(), b.accel.accel.as_deref()),
            (["b".to_string()].as_slice(), Some("cuda13.0"))
        );
        assert_eq!(
            b.cargo_args,
            ["--features", "x", "--accel", "y"],
            "after `--`: cargo's, as written"
        );
        let b = parse_build(&["cargo-mcpp", "mcpp", "build", "--release"]);
        assert!(b.location.release && b.cargo_args.is_empty());
    }

    #[test]
    fn fetch_takes_toolchain_packages_by_name_and_says_so() {
        use clap::CommandFactory;
        let mut cli = CargoCli::command();
        let help = cli
            .find_subcommand_mut("mcpp")
            .and_then(|m| m.find_subcommand_mut("fetch"))
            .expect("fetch")
            .render_help()
            .to_string();
        assert!(
            help.contains("[PACKAGE]...")
                && help.contains("Toolchain packages to fetch (NAME or NAME@VERSION)"),
            "{help}"
        );
        assert!(!help.to_lowercase().contains("payload"), "{help}");
        let CargoCli::Mcpp(m) =
            CargoCli::try_parse_from(["cargo-mcpp", "mcpp", "fetch", "glslang@13.1.1", "slang"])
                .unwrap();
        let Command_::Fetch(f) = m.command else {
            panic!("not fetch")
        };
        assert_eq!(f.packages, ["glslang@13.1.1", "slang"]);
    }

    #[test]
    fn pack_takes_a_format_and_passes_the_rest_to_cargo() {
        let CargoCli::Mcpp(m) = CargoCli::try_parse_from([
            "cargo-mcpp",
            "mcpp",
            "pack",
            "--format",
            "msi",
            "--target",
            "x86_64-pc-windows-gnu",
            "--dry-run",
            "--features",
            "x",
        ])
        .unwrap();
        let Command_::Pack(p) = m.command else {
            panic!("not pack")
        };
        assert_eq!(
            (p.format, p.target.as_deref(), p.dry_run),
            (
                crate::pack::Format::Msi,
                Some("x86_64-pc-windows-gnu"),
                true
            )
        );
        assert_eq!(p.cargo_args, ["--features", "x"]);
        // The accelerator options `cargo mcpp build` takes, wherever they stand (before, cargo
        // was handed `--accel` and refused it as unknown).
        let parse_pack = |args: &[&str]| {
            let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            let CargoCli::Mcpp(m) = CargoCli::try_parse_from(build_options_first(args)).unwrap();
            let Command_::Pack(p) = m.command else {
                panic!("not pack")
            };
            p
        };
        let p = parse_pack(&[
            "cargo-mcpp",
            "mcpp",
            "pack",
            "--format",
            "appimage",
            "--features",
            "x",
            "--accel",
            "vulkan1.3",
        ]);
        assert_eq!(
            (p.accel.accel.as_deref(), p.cargo_args.as_slice()),
            (
                Some("vulkan1.3"),
                ["--features".to_string(), "x".to_string()].as_slice()
            )
        );
        let p = parse_pack(&["cargo-mcpp", "mcpp", "pack", "--no-accel", "--format=msi"]);
        assert!(p.accel.no_accel && p.accel.accel.is_none() && p.cargo_args.is_empty());
        let e = CargoCli::try_parse_from(["cargo-mcpp", "mcpp", "pack", "--format", "bogus"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("appimage") && e.contains("msi"), "{e}");
    }
}
