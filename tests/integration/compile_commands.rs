//! `compile_commands.json` (`src/engine/compile_db.rs`): every device and host C++ unit of a
//! build with its real argv (no launcher), in the device cache and in the directory asked for,
//! written only when changed, and good enough for clangd: `clangd-19 --check` over the CUDA
//! kernel of the cuda-island fixture finds no error on either route (an nvcc unit is listed as
//! its clang CUDA equivalent, since clangd reads neither `-gencode` nor `-ccbin`).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use harness::*;
use std::path::{Path, PathBuf};

fn entries(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str::<Vec<serde_json::Value>>(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn clangd() -> PathBuf {
    ["/usr/bin/clangd-19", "/usr/lib/llvm-19/bin/clangd"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("clangd-19 is installed (scripts/setup-toolchains.sh, component clangd)")
}

/// `clangd --check=<file>` with the database in `dir`: its exit status and output.
fn clangd_check(dir: &Path, file: &Path) -> (bool, String) {
    let out = std::process::Command::new(clangd())
        .arg(format!("--compile-commands-dir={}", dir.display()))
        .arg(format!("--check={}", file.display()))
        .arg("--log=error")
        // The check itself logs its errors at error level; 0 when none.
        .output()
        .unwrap();
    (out.status.success(), text(&out))
}

#[test]
fn every_unit_is_listed_in_the_cache_and_the_copy_an_nvcc_one_as_clang_cuda() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(&pkg.join("Cargo.toml"), "sources = [\"kernels/*.cu\"]\n", "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/*.cppm\", \"cpp/*.cpp\"]\nlauncher = \"none\"\ncompile-commands = \".\"\n");
    edit(&pkg.join("Cargo.toml"), "flags = [\"--extra-flag\"]\n", "");
    let out = cuda_build(tmp.path(), &pkg, &cuda13())
        .env_remove("MCPP_LAUNCHER")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let in_cache = out.variant_dir.join("compile_commands.json");
    let copy = pkg.join("compile_commands.json");
    let listed = entries(&in_cache);
    assert_eq!(
        std::fs::read(&in_cache).unwrap(),
        std::fs::read(&copy).unwrap()
    );
    let files: Vec<String> = listed
        .iter()
        .map(|e| e["file"].as_str().unwrap().to_string())
        .collect();
    let cu = pkg.join("kernels/scale.cu");
    assert!(files.contains(&cu.display().to_string()), "{files:?}");
    assert!(
        files.contains(&pkg.join("cpp/use.cpp").display().to_string()),
        "{files:?}"
    );
    let entry = listed
        .iter()
        .find(|e| e["file"] == cu.display().to_string())
        .unwrap();
    let argv: Vec<&str> = entry["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    // The nvcc route's unit is listed as the equivalent clang CUDA command, which clangd reads.
    assert_eq!(argv[..3], ["clang++", "-x", "cuda"], "{argv:?}");
    assert!(
        argv.contains(&format!("--cuda-path={}", cuda13().display()).as_str()),
        "{argv:?}"
    );
    assert!(argv.contains(&"--cuda-gpu-arch=sm_80"), "{argv:?}");
    assert!(argv.contains(&"-DWIDTH=4"), "{argv:?}");
    for nvcc_only in [
        "-ccbin",
        "-gencode",
        "-Xcompiler",
        "-lineinfo",
        "-MMD",
        "-MF",
    ] {
        assert!(
            !argv.iter().any(|a| a.starts_with(nvcc_only)),
            "{nvcc_only}: {argv:?}"
        );
    }
    // The compile runs in the package directory with the package-relative source (same bytes
    // from any checkout); the entry's `directory` says where.
    assert!(argv.contains(&"kernels/scale.cu"), "{argv:?}");
    assert_eq!(
        entry["directory"].as_str(),
        Some(pkg.display().to_string().as_str()),
        "{entry}"
    );

    // Written only when changed: a no-op build leaves the file's mtime.
    let before = std::fs::metadata(&copy).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    cuda_build(tmp.path(), &pkg, &cuda13())
        .env_remove("MCPP_LAUNCHER")
        .try_compile()
        .unwrap();
    assert_eq!(
        std::fs::metadata(&copy).unwrap().modified().unwrap(),
        before
    );
}

#[test]
fn clangd_checks_the_kernel_of_the_clang_route_with_the_database() {
    let (tmp, pkg) = fixture("cuda-island");
    let layout = cuda12_clang();
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.cu\"]\n",
        "sources = [\"kernels/*.cu\"]\ncompile-commands = \".\"\n",
    );
    edit(
        &pkg.join("Cargo.toml"),
        "[package.metadata.mcpp.cuda]\n",
        &format!(
            "[package.metadata.mcpp.cuda]\ncompiler = \"clang\"\ntoolkit = \"{}\"\n",
            layout.display()
        ),
    );
    let out = cuda_build(tmp.path(), &pkg, &layout)
        .tool("clang++", "/usr/bin/clang++-19")
        .accel("cuda12.9+{sm_90}")
        .env("MCPP_LAUNCHER", "none")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out
        .report
        .ran
        .contains(&"cuda:kernels/scale.cu".to_string()));
    let cu = pkg.join("kernels/scale.cu");
    let listed = entries(&pkg.join("compile_commands.json"));
    assert!(
        listed
            .iter()
            .any(|e| e["file"] == cu.display().to_string()
                && e["arguments"][0] == "/usr/bin/clang++-19"),
        "{listed:#?}"
    );
    let (ok, said) = clangd_check(&pkg, &cu);
    assert!(ok, "clangd --check failed:\n{said}");
    assert!(!said.contains("E["), "clangd logged an error:\n{said}");
    // The check can fail: a syntax error in the kernel is found through the same database.
    std::fs::write(
        &cu,
        format!(
            "{}\nint broken = ;\n",
            std::fs::read_to_string(&cu).unwrap()
        ),
    )
    .unwrap();
    let (ok, said) = clangd_check(&pkg, &cu);
    assert!(!ok && said.contains("E["), "{said}");
}

#[test]
fn clangd_checks_the_kernel_of_the_nvcc_route_with_the_database() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = [\"--expt-relaxed-constexpr\", \"-Xptxas\", \"-v\"]",
    );
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.cu\"]\n",
        "sources = [\"kernels/*.cu\"]\ncompile-commands = \".\"\n",
    );
    let out = cuda_build(tmp.path(), &pkg, &cuda13())
        .env("MCPP_LAUNCHER", "none")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out
        .report
        .ran
        .contains(&"cuda:kernels/scale.cu".to_string()));
    let cu = pkg.join("kernels/scale.cu");
    let (ok, said) = clangd_check(&pkg, &cu);
    assert!(ok, "clangd --check failed:\n{said}");
    assert!(!said.contains("E["), "clangd logged an error:\n{said}");
    // The kernel `cargo mcpp new --lane cuda --island` writes (its entry point has the fixture's
    // signature), which includes <cuda_runtime.h> itself.
    std::fs::copy(repo().join("templates/init/cuda/scale.cu"), &cu).unwrap();
    cuda_build(tmp.path(), &pkg, &cuda13())
        .env("MCPP_LAUNCHER", "none")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let (ok, said) = clangd_check(&pkg, &cu);
    assert!(
        ok && !said.contains("E["),
        "clangd on the template's kernel:\n{said}"
    );
    // An architecture newer than clangd's clang 19 knows (sm_120, which CUDA 13 compiles for).
    cuda_build(tmp.path(), &pkg, &cuda13())
        .env("MCPP_LAUNCHER", "none")
        .accel("cuda13.0+{sm_120}")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let (ok, said) = clangd_check(&pkg, &cu);
    assert!(
        ok && !said.contains("E["),
        "clangd with an sm_120 build:\n{said}"
    );
    // The check can fail: a call of an undeclared CUDA function is found through the database.
    let text = std::fs::read_to_string(&cu).unwrap();
    std::fs::write(
        &cu,
        text.replace("cudaFree(d);", "cudaFree(d);\n    cudaNoSuchCall(d);"),
    )
    .unwrap();
    let (ok, said) = clangd_check(&pkg, &cu);
    assert!(
        !ok && said.contains("E[") && said.contains("cudaNoSuchCall"),
        "{said}"
    );
}

/// A workspace of two packages with one host C++ unit each (`a/cpp/a.cpp`, `b/cpp/b.cpp`).
fn cxx_workspace(extra_mcpp: &str) -> Package {
    let mut files: Vec<(String, String)> = vec![(
        "Cargo.toml".into(),
        "[workspace]\nmembers = [\"a\", \"b\"]\nresolver = \"2\"\n".into(),
    )];
    for name in ["a", "b"] {
        files.push((format!("{name}/Cargo.toml"), format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\ncxx-sources = [\"cpp/*.cpp\"]\n{extra_mcpp}", client_dependency())));
        files.push((
            format!("{name}/build.rs"),
            "fn main() { mcpp_build::build(); }\n".into(),
        ));
        files.push((format!("{name}/src/lib.rs"), "\n".into()));
        files.push((
            format!("{name}/cpp/{name}.cpp"),
            format!("extern \"C\" int {name}_one() {{ return 1; }}\n"),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    Package::new(&refs)
}

/// `cargo mcpp <args>` in `dir` with the engine named, the launcher off.
fn cargo_mcpp(pkg: &Package, dir: &Path, args: &[&str]) -> std::process::Output {
    run_in(
        pkg,
        dir,
        std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
            .arg("mcpp")
            .args(args),
    )
}

/// `cmd` (cargo, or `cargo mcpp`) run in `dir` with this package's target directory, the engine
/// named, the launcher off, no accelerator choice from the environment.
fn run_in(pkg: &Package, dir: &Path, cmd: &mut std::process::Command) -> std::process::Output {
    let engine = PathBuf::from(env!("CARGO_BIN_EXE_cargo-mcpp"));
    cmd.current_dir(dir)
        .env("CARGO_TARGET_DIR", pkg.path("target"))
        .env("CARGO_MCPP", &engine)
        .env("MCPP_HOME", pkg.path("mcpp-home"))
        .env("MCPP_LAUNCHER", "none")
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .env_remove("DOCS_RS")
        .output()
        .unwrap()
}

fn listed_files(path: &Path) -> Vec<String> {
    let mut f: Vec<String> = entries(path)
        .iter()
        .map(|e| e["file"].as_str().unwrap().to_string())
        .collect();
    f.sort();
    f
}

#[test]
fn cargo_mcpp_build_merges_every_package_into_the_copy_and_writes_a_deleted_one_again() {
    let pkg = cxx_workspace("");
    let root = pkg.path("");
    let out = cargo_mcpp(
        &pkg,
        &root,
        &["build", "--workspace", "--compile-commands", "."],
    );
    assert!(out.status.success(), "{}", text(&out));
    let copy = root.join("compile_commands.json");
    let want = vec![
        pkg.path("a/cpp/a.cpp").display().to_string(),
        pkg.path("b/cpp/b.cpp").display().to_string(),
    ];
    assert_eq!(
        listed_files(&copy),
        want,
        "both packages, not only the last"
    );
    assert!(
        text(&out).contains(&format!("Writing {}", copy.display())),
        "says where: {}",
        text(&out)
    );
    // The mode of a plain write (0666 & !umask), not a temporary file's 0600.
    {
        use std::os::unix::fs::PermissionsExt;
        let plain = root.join("plain");
        std::fs::write(&plain, "").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&copy), mode(&plain));
        let in_cache = walk(&pkg.path("target"))
            .into_iter()
            .find(|p| p.ends_with("compile_commands.json"))
            .unwrap();
        assert_eq!(mode(&in_cache), mode(&plain), "{}", in_cache.display());
    }
    // Deleted (or `git clean`ed) while every build script is fresh: written again.
    std::fs::remove_file(&copy).unwrap();
    let out = cargo_mcpp(
        &pkg,
        &root,
        &["build", "--workspace", "--compile-commands", "."],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(listed_files(&copy), want);
    // The manifest key, one directory named by both packages (the workspace root): merged too.
    std::fs::remove_file(&copy).unwrap();
    for name in ["a", "b"] {
        let manifest = pkg.read(&format!("{name}/Cargo.toml"));
        pkg.write(
            &format!("{name}/Cargo.toml"),
            &format!("{manifest}compile-commands = \"..\"\n"),
        );
    }
    let out = cargo_mcpp(&pkg, &root, &["build", "--workspace"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(listed_files(&copy), want);
}

#[test]
fn a_shared_copy_keeps_every_package_through_links_selections_and_a_removed_cache() {
    let pkg = cxx_workspace("");
    let root = pkg.path("");
    // One directory, named by `a` as it is and by `b` through a symbolic link to it.
    std::fs::create_dir(pkg.path("shared")).unwrap();
    std::os::unix::fs::symlink(pkg.path("shared"), pkg.path("link")).unwrap();
    for (name, dir) in [("a", "../shared"), ("b", "../link")] {
        let manifest = pkg.read(&format!("{name}/Cargo.toml"));
        pkg.write(
            &format!("{name}/Cargo.toml"),
            &format!("{manifest}compile-commands = \"{dir}\"\n"),
        );
    }
    let copy = pkg.path("shared/compile_commands.json");
    let want = vec![
        pkg.path("a/cpp/a.cpp").display().to_string(),
        pkg.path("b/cpp/b.cpp").display().to_string(),
    ];
    let out = cargo_mcpp(&pkg, &root, &["build", "--workspace"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        listed_files(&copy),
        want,
        "merged, not overwritten through the link: {}",
        text(&out)
    );
    let both = std::fs::read(&copy).unwrap();
    // `-p b` alone: a's entry stays (what a clangd user of the workspace expects); same bytes.
    let out = cargo_mcpp(&pkg, &root, &["build", "-p", "b"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(&copy).unwrap(), both, "{}", text(&out));
    // Plain `cargo build -p b` (its build script rerun by an edit) merges b's entries the same way.
    edit(&pkg.path("b/cpp/b.cpp"), "return 1;", "return 2;");
    let out = run_in(
        &pkg,
        &root,
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "-p", "b"]),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(pkg.read("b/cpp/b.cpp").contains("return 2;"));
    assert_eq!(
        listed_files(&copy),
        want,
        "a's entry kept by b's build script: {}",
        text(&out)
    );
    // a's device cache removed while cargo finds its build script fresh: said, with the way out;
    // the copy keeps what it listed of `a`.
    std::fs::remove_dir_all(pkg.path("target/debug/mcpp/a")).unwrap();
    let out = cargo_mcpp(&pkg, &root, &["build", "--workspace"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out)
            .contains("warning: the device cache of package `a` has no compile_commands.json")
            && text(&out).contains("cargo clean -p a"),
        "{}",
        text(&out)
    );
    assert_eq!(listed_files(&copy), want);
}

#[test]
fn a_bad_copy_directory_is_refused_before_cargo_starts() {
    let pkg = cxx_workspace("");
    let root = pkg.path("");
    pkg.write("file", "");
    // `/proc` exists and is a directory, but no file can be written there (even by root): refused
    // before cargo, not with exit 4 after it.
    for bad in ["file", "/proc/nope", "/proc"] {
        let out = cargo_mcpp(
            &pkg,
            &root,
            &["build", "--workspace", "--compile-commands", bad],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out).contains(&format!("--compile-commands {bad}")),
            "{}",
            text(&out)
        );
        assert!(
            !pkg.path("target").exists(),
            "cargo did not start: {}",
            text(&out)
        );
    }
    for (value, says) in [
        ("\"\"", "`compile-commands` is empty"),
        ("\"../file\"", "which is not a directory"),
        ("\"/proc\"", "where no file can be written"),
    ] {
        let manifest = pkg.read("a/Cargo.toml");
        pkg.write(
            "a/Cargo.toml",
            &format!("{manifest}compile-commands = {value}\n"),
        );
        let out = cargo_mcpp(&pkg, &root, &["build", "--workspace"]);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        assert!(
            text(&out).contains(says)
                && text(&out).contains("a/Cargo.toml:")
                && text(&out).contains("package.metadata.mcpp.compile-commands"),
            "{}",
            text(&out)
        );
        assert!(
            !pkg.path("target").exists(),
            "cargo did not start: {}",
            text(&out)
        );
        pkg.write("a/Cargo.toml", &manifest);
    }
}

/// The copy describes the build cargo just ran, wherever cargo took its profile and target
/// from: options after `--`, `.cargo/config.toml` (the device caches are found from cargo's own
/// `build-script-executed` messages, not recomputed); package selection after `--` is refused
/// (cargo mcpp build would check and report other packages than cargo builds).
#[test]
fn the_copy_follows_the_profile_and_target_cargo_used_and_selection_after_dashdash_is_refused() {
    let pkg = cxx_workspace("");
    let root = pkg.path("");
    let copy = root.join("compile_commands.json");
    let out = cargo_mcpp(
        &pkg,
        &root,
        &[
            "build",
            "-p",
            "a",
            "--compile-commands",
            ".",
            "--",
            "--release",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let db = std::fs::read_to_string(&copy).unwrap();
    assert!(
        db.contains("/target/release/mcpp/a/") && !db.contains("/target/debug/"),
        "{db}"
    );

    let host = String::from_utf8(
        std::process::Command::new("rustc")
            .arg("-vV")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let host = host
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap()
        .to_string();
    pkg.write(
        ".cargo/config.toml",
        &format!("[build]\ntarget = \"{host}\"\n"),
    );
    let out = cargo_mcpp(
        &pkg,
        &root,
        &["build", "-p", "a", "--compile-commands", "."],
    );
    assert!(out.status.success(), "{}", text(&out));
    let db = std::fs::read_to_string(&copy).unwrap();
    assert!(
        db.contains(&format!("/target/{host}/debug/mcpp/a/")),
        "{db}"
    );
    assert!(
        !text(&out).contains("Device b"),
        "b is not built: {}",
        text(&out)
    );

    for args in [
        &["build", "--", "-p", "a"][..],
        &["build", "--", "--package=a"],
        &["build", "--", "-pa"],
        &["build", "--", "--workspace"],
    ] {
        let out = cargo_mcpp(&pkg, &root, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("after `--` would reach cargo only")
                && text(&out).contains("before `--`"),
            "{}",
            text(&out)
        );
    }
}

/// `--compile-commands` where no selected package has device or C++ work says so (it wrote
/// nothing, silently).
#[test]
fn a_copy_with_nothing_to_list_is_said_not_silently_skipped() {
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"plain\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        ),
        ("src/lib.rs", "\n"),
    ]);
    let out = cargo_mcpp(&pkg, &pkg.path(""), &["build", "--compile-commands", "."]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("no package this build selected has device sources or host C++")
            && text(&out).contains("nothing was written"),
        "{}",
        text(&out)
    );
    assert!(!pkg.path("compile_commands.json").exists());
}
