//! The published crates from their own tarballs: `cargo package` of `cargo-mcpp` and
//! `mcpp-build`, the `.crate` files unpacked, `cargo install` of the unpacked `cargo-mcpp` into
//! an empty root (only `cargo-mcpp` lands in its `bin/`: the tests' recording compiler is not
//! part of the package), then with that installed command `cargo mcpp new --lane spirv`,
//! `cargo mcpp build` and the program, which runs the shader on the first Vulkan device
//! (lavapipe where there is no GPU). A template or a table left out of the package fails here.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// This workspace's target directory (the parent of `CARGO_TARGET_TMPDIR`).
fn workspace_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_MCPP")
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL");
    cmd
}

fn ok(out: Output, what: &str) -> Output {
    assert!(out.status.success(), "{what}: {}", text(&out));
    out
}

#[test]
fn the_packaged_crates_install_into_an_empty_root_and_build_a_new_shader_package() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let version = env!("CARGO_PKG_VERSION");
    // The build directories stay between runs (the engine's dependencies compile once); the
    // unpacked sources, the root and the new package are in a temp dir outside this workspace.
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("packaging");
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-packaging-")
        .tempdir()
        .unwrap();
    for d in ["unpacked", "root", "apps"] {
        std::fs::create_dir_all(tmp.path().join(d)).unwrap();
    }
    let package_target = work.join("package-target");
    let _ = std::fs::remove_dir_all(package_target.join("package"));
    ok(
        cargo()
            .args(["package", "-p", "cargo-mcpp", "-p", "mcpp-build"])
            .args([
                "--no-verify",
                "--offline",
                "--allow-dirty",
                "--manifest-path",
            ])
            .arg(repo.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&package_target)
            .output()
            .unwrap(),
        "cargo package",
    );
    let unpacked = tmp.path().join("unpacked");
    let mut sizes = Vec::new();
    for name in ["cargo-mcpp", "mcpp-build"] {
        let file = package_target.join(format!("package/{name}-{version}.crate"));
        sizes.push(format!(
            "{name}: {} bytes",
            std::fs::metadata(&file).unwrap().len()
        ));
        // `-m`: the unpacked files take the time of unpacking. A `.crate` holds fixed times,
        // so with them cargo would find the builds kept between runs fresh and install the
        // command an earlier run compiled from other sources.
        ok(
            Command::new("tar")
                .arg("xzmf")
                .arg(&file)
                .arg("-C")
                .arg(&unpacked)
                .output()
                .unwrap(),
            "tar",
        );
    }
    eprintln!("packaged: {}", sizes.join(", "));
    let command_src = unpacked.join(format!("cargo-mcpp-{version}"));
    let client_src = unpacked.join(format!("mcpp-build-{version}"));
    assert!(
        !command_src.join("mcpp-shim").exists() && !command_src.join("tests").exists(),
        "the package holds what the command compiles, not the tests"
    );

    // Installed from the unpacked package (its own Cargo.lock, offline) into an empty root.
    let root = tmp.path().join("root");
    ok(
        cargo()
            .args(["install", "--locked", "--offline", "--debug", "--path"])
            .arg(&command_src)
            .arg("--root")
            .arg(&root)
            .env("CARGO_TARGET_DIR", work.join("install-target"))
            // Its intermediate files in this workspace's build directory: the dependencies the
            // test build compiled with the same features and profile are not compiled again
            // (the packaged cargo-mcpp itself is other sources, so it is). The installed
            // program is written to the install's own directory, never over the test build's.
            .env("CARGO_BUILD_BUILD_DIR", workspace_target())
            // The unpacked sources are new each run: incremental state would never be read.
            .env("CARGO_INCREMENTAL", "0")
            .output()
            .unwrap(),
        "cargo install",
    );
    let mut installed: Vec<String> = std::fs::read_dir(root.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    installed.sort();
    assert_eq!(installed, ["cargo-mcpp"], "only the command is installed");
    let engine = root.join("bin/cargo-mcpp");

    // The installed command makes a package on the unpacked mcpp-build; mcpp-build's optional
    // engine dependency is the unpacked cargo-mcpp (neither is on crates.io yet).
    let apps = tmp.path().join("apps");
    let out = ok(
        Command::new(&engine)
            .args([
                "mcpp",
                "new",
                "packaged-app",
                "--lane",
                "spirv",
                "--mcpp-build-path",
            ])
            .arg(&client_src)
            .current_dir(&apps)
            .env_remove("CARGO_MCPP")
            .output()
            .unwrap(),
        "cargo mcpp new",
    );
    assert!(
        text(&out).contains("Created shaders/double.comp"),
        "{}",
        text(&out)
    );
    let app = apps.join("packaged-app");
    let manifest = std::fs::read_to_string(app.join("Cargo.toml")).unwrap();
    std::fs::write(
        app.join("Cargo.toml"),
        format!(
            "{manifest}\n[patch.crates-io]\ncargo-mcpp = {{ path = {:?} }}\n",
            command_src.display().to_string()
        ),
    )
    .unwrap();
    // The app's dependencies compile once with the other packages the tests build with an
    // installed engine; the packaged crates themselves are other sources.
    let target: PathBuf = crate::harness::packages_target();
    ok(
        Command::new(&engine)
            .args(["mcpp", "build", "--offline", "--target-dir"])
            .arg(&target)
            .current_dir(&app)
            .env_remove("CARGO_MCPP")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("MCPP_ACCEL")
            .env_remove("MCPP_NO_ACCEL")
            .output()
            .unwrap(),
        "cargo mcpp build",
    );
    let run = ok(
        Command::new(target.join("debug/packaged-app"))
            .output()
            .unwrap(),
        "the program",
    );
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(
        said.starts_with("double.comp (")
            && said.contains("words of SPIR-V) doubled 1024 floats on ")
            && said.contains("y[100] = 200"),
        "{}",
        text(&run)
    );
}
