//! `cargo mcpp fetch`: install the toolchain packages a package's build needs and those
//! `cargo mcpp pack` takes (or the ones named), and say what happened; also the fetch step of
//! `cargo mcpp build` ([`fetch_one`]).

use super::locate::locate;
use super::{BuildLocation, FetchArgs, PackageSelection};
use crate::config::manifest::Manifest;
use crate::error::{exit_code, Result};
use crate::plan::accel::AccelChoice;

/// `cargo mcpp fetch`: for the package of `--manifest-path` (or the current one), fetch what
/// its build with `--accel`/`--no-accel` needs (and, for a package with
/// `[package.metadata.mcpp.pack]`, the AppImage runtime), or the toolchain packages named; a
/// package without `[package.metadata.mcpp]` needs none.
///
/// # Errors
/// As [`crate::toolchain_package::fetch::fetch_package`]; a package that cannot be located or read.
pub fn fetch(args: &FetchArgs) -> Result<i32> {
    let location = BuildLocation {
        manifest_path: args.manifest_path.clone(),
        release: false,
        profile: None,
        target: None,
        target_dir: None,
    };
    let located = locate(&location, &PackageSelection::default())?;
    let accel = args.accel.choice();
    for (name, manifest_path) in &located.packages {
        let manifest = Manifest::read(manifest_path)?;
        if !manifest.has_mcpp_table && manifest.mcpp.pack.is_none() && args.packages.is_empty() {
            continue;
        }
        fetch_one(
            name,
            manifest_path,
            &accel,
            args.offline,
            &args.packages,
            true,
        )?;
    }
    Ok(exit_code::SUCCESS)
}

/// Fetch for one package and say what happened; `verbose` (the `fetch` command) also says
/// when nothing was needed and which toolchain packages were already installed, fetches
/// what `cargo mcpp pack` takes too (the AppImage runtime: the build itself never needs it),
/// and checks every installed file's bytes (the build's step checks their sizes, as a build
/// does).
///
/// # Errors
/// As [`crate::toolchain_package::fetch::fetch_package`].
pub fn fetch_one(
    package: &str,
    manifest_path: &std::path::Path,
    accel: &AccelChoice,
    offline: bool,
    names: &[String],
    verbose: bool,
) -> Result<()> {
    let env = crate::config::env::Env::process();
    let report = crate::toolchain_package::fetch::fetch_package(
        manifest_path,
        accel,
        &env,
        offline,
        names,
        verbose,
        verbose,
    )?;
    for r in &report.reports {
        eprintln!("    Override {r}");
    }
    if report.packages.is_empty() && verbose {
        eprintln!("     Nothing to fetch for {package}: no rule in use here drives a toolchain package for this accelerator set, or its tool is named explicitly");
    }
    for (inst, what, why) in &report.packages {
        let verb = match what {
            crate::toolchain_package::fetch::Fetched::Installed => "Installed",
            crate::toolchain_package::fetch::Fetched::Fresh if verbose => "Fresh",
            crate::toolchain_package::fetch::Fetched::Fresh => continue,
        };
        eprintln!(
            "{verb:>12} toolchain package {} {} ({why}) in {}",
            inst.name,
            inst.version,
            inst.dir.display()
        );
    }
    if report.lock_written {
        eprintln!(
            "      Locked {}",
            manifest_path
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(crate::toolchain_package::LOCKFILE)
                .display()
        );
    }
    Ok(())
}
