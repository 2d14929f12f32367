//! `cargo mcpp pack --format appimage|msi`: the command around [`crate::pack`]. It locates the
//! one package (`-p`, `--manifest-path` or the current one, by cargo's rules: `cli::locate`), runs
//! every check that needs no build ([`Prepared::prepare`], its decisions recorded in the
//! package's release device cache, [`DeviceCache::in_profile`]), builds, plans, then prints the
//! plan (`--dry-run`) or writes the package and names it.
//!
//! The build is `cargo mcpp build --release` itself (this executable, in a child process, with
//! `--message-format=json-render-diagnostics` passed to cargo): the same validation, toolchain
//! package fetch, device phase and progress as a plain `cargo mcpp build`, whose cargo JSON
//! messages arrive on the child's standard output ([`crate::pack::read_messages`]).
//!
//! `--dry-run` writes nothing and builds nothing: it runs the same checks (their decisions
//! recorded in a temporary device cache, dropped after), then prints the plan on standard
//! output: every file going in with its source and its place in the package, and the tool
//! that will run. The program is named by its binary target from `cargo metadata` and shown
//! as built by cargo at pack time (its path comes only from cargo's messages, never a guess);
//! what only the build tells (the shared libraries, the sidecars) is said in a note. The last
//! line of a real run names the package written, its size and its sha256, on standard error.

use super::locate::{metadata, profile_path, select_packages};
use super::{BuildLocation, PackArgs, PackageSelection};
use crate::config::env::Env;
use crate::config::manifest::Manifest;
use crate::engine::layout::DeviceCache;
use crate::error::{exit_code, Error, ErrorKind, Result};
use crate::pack::{
    choose_program, host_triple, program_name, read_messages, Origin, PackageFacts, Prepared,
    Program,
};
use std::io::BufRead;
use std::path::PathBuf;

/// `cargo mcpp pack`: refuse what can be refused before building, build (see the module
/// docs), plan, then print the plan (`--dry-run`) or write the package.
///
/// # Errors
/// Every refusal of the format writers, the manifest and the build; the build's own failure
/// is its exit code.
pub fn pack(args: &PackArgs) -> Result<i32> {
    let env = Env::process();
    // `--release` is a declared no-op (pack always builds in release); another profile is
    // refused, also when it comes among the cargo arguments.
    let profile = args.profile.clone().or_else(|| {
        args.cargo_args.iter().enumerate().find_map(|(i, a)| {
            if a == "--profile" {
                Some(args.cargo_args.get(i + 1).cloned().unwrap_or_default())
            } else {
                a.strip_prefix("--profile=").map(str::to_string)
            }
        })
    });
    if let Some(p) = profile {
        return Err(Error::new(ErrorKind::Usage, format!("`cargo mcpp pack` builds the release profile, so `--profile {}` cannot be used", crate::text::echo(&p)))
            .help("drop --profile; to change how the packed program is built, set [profile.release] in Cargo.toml (--release is accepted and changes nothing)"));
    }
    let (facts, package_id, profile_dir) = locate(args)?;
    // The accelerator set, refused now as the build would refuse it (also in a dry run).
    let accel = args.accel.choice();
    crate::plan::accel::resolve_checked(&accel, &facts.manifest, &env)?;
    let out_dir = args.out.clone().unwrap_or_else(|| profile_dir.join("pack"));
    // Everything that needs no build, before it. A dry run writes nothing: its decisions go
    // to a temporary device cache.
    let scratch = if args.dry_run {
        Some(
            tempfile::Builder::new()
                .prefix("mcpp-pack-dry-run-")
                .tempdir()
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Io,
                        format!("cannot create a temporary directory: {e}"),
                    )
                })?,
        )
    } else {
        None
    };
    let cache = DeviceCache::in_profile(
        scratch.as_ref().map_or(profile_dir.as_path(), |t| t.path()),
        &facts.name,
    );
    let prepared = Prepared::prepare(
        args.format,
        &facts,
        args.runtime_file.as_deref(),
        &env,
        &cache,
    )?;
    // The program's name is checked before the build too (cargo names its executable after).
    let name = program_name(&facts, args.bin.as_deref())?;
    if args.dry_run {
        let plan = prepared.plan(
            &facts,
            &Program {
                name: name.clone(),
                origin: Origin::BuiltAtPack(name),
            },
            None,
            &out_dir,
        )?;
        print!("{}", plan.render());
        return Ok(exit_code::SUCCESS);
    }
    let messages = match build(args)? {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let built = read_messages(std::io::Cursor::new(messages), &package_id);
    for line in &built.text {
        eprintln!("{line}");
    }
    let program = choose_program(&facts, args.bin.as_deref(), &built)?;
    let plan = prepared.plan(&facts, &program, Some(&built), &out_dir)?;
    // What the plan decided from the build (the libraries bundled, the RUNPATH), said.
    for note in &plan.notes {
        eprintln!("note: {note}");
    }
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| Error::io("cannot create the output directory", &out_dir, e))?;
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    spinner.set_message(prepared.writing(&plan));
    let written = prepared.write(&facts, &program.name, &plan, &env);
    spinner.finish_and_clear();
    written?;
    // Read in pieces: a package of gigabytes is never held whole.
    let size = std::fs::metadata(&plan.output)
        .map_err(|e| Error::io("cannot read the package written", &plan.output, e))?
        .len();
    let sha256 = crate::engine::fingerprint::sha256_file(&plan.output)
        .map_err(|e| Error::io("cannot read the package written", &plan.output, e))?;
    eprintln!(
        "      Packed {} ({size} bytes, sha256 {sha256})",
        plan.output.display(),
    );
    Ok(exit_code::SUCCESS)
}

/// The package (by `-p`, `--manifest-path` or the current directory, as cargo selects), its
/// facts, its package id and the release profile directory of the build
/// (`<target-dir>/[<triple>/]release`, [`profile_path`]).
///
/// # Errors
/// [`ErrorKind::Manifest`] when `cargo metadata` fails or the manifest is refused;
/// [`ErrorKind::Usage`] when the selection is not one package.
fn locate(args: &PackArgs) -> Result<(PackageFacts, String, PathBuf)> {
    let metadata = metadata(args.manifest_path.as_deref())?;
    super::locate::check_target_dir(&metadata, args.target_dir.as_deref())?;
    let selection = PackageSelection {
        package: args.package.iter().cloned().collect(),
        ..Default::default()
    };
    let packages = select_packages(&metadata, args.manifest_path.as_deref(), &selection)?;
    let package = match packages.as_slice() {
        [one] => *one,
        _ => {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "`cargo mcpp pack` packs one package, and this selects {}",
                    packages.len()
                ),
            )
            .help(format!(
                "pass -p NAME, one of {}",
                metadata
                    .workspace_packages()
                    .iter()
                    .map(|p| format!("`{}`", p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    let manifest = Manifest::read(package.manifest_path.as_std_path())?;
    let version = manifest
        .mcpp
        .pack
        .as_ref()
        .and_then(|p| p.version.clone())
        .unwrap_or_else(|| package.version.to_string());
    let facts = PackageFacts {
        name: package.name.to_string(),
        version,
        description: package.description.clone(),
        authors: package.authors.clone(),
        repository: package.repository.clone(),
        bins: package
            .targets
            .iter()
            .filter(|t| t.is_bin())
            .map(|t| t.name.clone())
            .collect(),
        target: args.target.clone().unwrap_or_else(host_triple),
        target_dir: args
            .target_dir
            .clone()
            .unwrap_or_else(|| metadata.target_directory.clone().into_std_path_buf()),
        manifest,
    };
    let location = BuildLocation {
        manifest_path: args.manifest_path.clone(),
        release: true,
        profile: None,
        target: args.target.clone(),
        target_dir: args.target_dir.clone(),
    };
    Ok((
        facts,
        package.id.repr.clone(),
        profile_path(&metadata, &location),
    ))
}

/// Run `cargo mcpp build --release` (this executable) with cargo's JSON messages on its
/// standard output, returned whole; `Err(code)` when the build failed (its own output said
/// why, on standard error).
///
/// # Errors
/// [`ErrorKind::Io`] when this executable cannot be found; [`ErrorKind::ToolNotFound`] when it
/// cannot be started or waited for.
fn build(args: &PackArgs) -> Result<std::result::Result<Vec<u8>, i32>> {
    let me = std::env::current_exe().map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot find this executable to run the build: {e}"),
        )
    })?;
    #[allow(clippy::disallowed_methods)] // pack runs the build (this executable, argv)
    let mut cmd = std::process::Command::new(me);
    cmd.args(["mcpp", "build", "--release"]);
    if let Some(p) = &args.manifest_path {
        cmd.arg("--manifest-path").arg(p);
    }
    if let Some(t) = &args.target {
        cmd.args(["--target", t]);
    }
    if let Some(d) = &args.target_dir {
        cmd.arg("--target-dir").arg(d);
    }
    if let Some(p) = &args.package {
        cmd.args(["--package", p]);
    }
    if args.offline {
        cmd.arg("--offline");
    }
    cmd.args(args.accel.to_args());
    cmd.arg("--")
        .arg("--message-format=json-render-diagnostics")
        .args(args.cargo_args.iter().filter(|a| *a != "--release"));
    cmd.stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        Error::new(
            ErrorKind::ToolNotFound,
            format!("cannot run `cargo mcpp build`: {e}"),
        )
    })?;
    // cargo prints no `Compiling` lines with JSON messages: a spinner names each crate as it
    // is compiled (drawn on a terminal only).
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    spinner.set_message("building (release)");
    let mut messages = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in std::io::BufReader::new(stdout)
            .split(b'\n')
            .map_while(std::result::Result::ok)
        {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) {
                if v["reason"] == "compiler-artifact" {
                    spinner.set_message(format!(
                        "building (release): compiled {}",
                        v["target"]["name"].as_str().unwrap_or_default()
                    ));
                }
            }
            messages.extend_from_slice(&line);
            messages.push(b'\n');
        }
    }
    let status = child.wait().map_err(|e| {
        Error::new(
            ErrorKind::ToolNotFound,
            format!("cannot wait for `cargo mcpp build`: {e}"),
        )
    })?;
    spinner.finish_and_clear();
    if !status.success() {
        return Ok(Err(status.code().unwrap_or(exit_code::CARGO_FAILED)));
    }
    Ok(Ok(messages))
}
