//! `cargo mcpp pack --format appimage` end to end: a tiny program packed with the runtime
//! `cargo mcpp fetch` installed (crates.io `appimage` 0.4.0, hash-pinned), then run from its
//! AppImage by the runtime itself (`--appimage-extract-and-run`, `APPIMAGE_EXTRACT_AND_RUN=1`)
//! with arguments and exit code passed through, extracted (`--appimage-extract`) and compared
//! with the plan, its `.desktop` validated by `desktop-file-validate`; reproducible bytes; the
//! dry run; and `examples/vulkan-compute` packed and run on the first Vulkan device (lavapipe
//! on CI), printing "all results match".
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::{copy_dir, real_tool, repo, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MAIN_RS: &str = r#"fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let beside = std::env::current_exe().unwrap().parent().unwrap().join("data/greeting.txt");
    let greeting = std::fs::read_to_string(&beside).unwrap_or_else(|e| format!("no greeting: {e}"));
    println!("hello [{}] {}", args.join("|"), greeting.trim());
    std::process::exit(args.last().and_then(|a| a.parse().ok()).unwrap_or(0));
}
"#;

/// A temp package `hello` (version 1.2.3) with a pack table, an icon and an extra file, and
/// its own toolchain package cache (`MCPP_HOME`).
struct Hello {
    tmp: tempfile::TempDir,
}

impl Hello {
    fn new(pack_table: &str) -> Hello {
        let tmp = tempfile::Builder::new()
            .prefix("mcpp-pack-")
            .tempdir()
            .unwrap();
        let pkg = tmp.path().join("pkg");
        std::fs::create_dir_all(pkg.join("src")).unwrap();
        std::fs::create_dir_all(pkg.join("data")).unwrap();
        std::fs::write(
            pkg.join("Cargo.toml"),
            format!("[package]\nname = \"hello\"\nversion = \"1.2.3\"\nedition = \"2021\"\ndescription = \"Says hello\"\nauthors = [\"Ann Example <ann@example.org>\"]\n\n[workspace]\n\n{pack_table}"),
        )
        .unwrap();
        std::fs::write(pkg.join("src/main.rs"), MAIN_RS).unwrap();
        std::fs::write(pkg.join("data/greeting.txt"), "good day\n").unwrap();
        std::fs::write(
            pkg.join("icon.svg"),
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"16\" height=\"16\"/>\n",
        )
        .unwrap();
        Hello { tmp }
    }
    fn pkg(&self) -> PathBuf {
        self.tmp.path().join("pkg")
    }
    fn home(&self) -> PathBuf {
        self.tmp.path().join("mcpp-home")
    }
    fn mcpp(&self, args: &[&str]) -> Output {
        self.mcpp_env(args, &[])
    }
    fn mcpp_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
            .arg("mcpp")
            .args(args)
            .current_dir(self.pkg())
            .env("MCPP_HOME", self.home())
            .env_remove("SOURCE_DATE_EPOCH")
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }
    fn appimage(&self) -> PathBuf {
        self.pkg()
            .join("target/release/pack/Hello-1.2.3-x86_64.AppImage")
    }
}

const PACK_TABLE: &str = "[package.metadata.mcpp.pack]\napp-name = \"Hello\"\ncategories = [\"Development\", \"Building\"]\nicon = \"icon.svg\"\nfiles = [{ glob = \"data/*.txt\", dest = \"data\" }]\n";

/// `Packed <path> (<size> bytes, sha256 <hex>)`, the last line, parsed; checked against the file.
fn packed(out: &Output, expected: &Path) -> String {
    let all = text(out);
    let last = String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string();
    let want = format!("Packed {} (", expected.display());
    assert!(
        last.starts_with(&want),
        "last line `{last}`, not `{want}...`:\n{all}"
    );
    let bytes = std::fs::read(expected).unwrap();
    let sha = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert_eq!(
        last,
        format!("{want}{} bytes, sha256 {sha})", bytes.len()),
        "{all}"
    );
    sha
}

#[test]
fn an_appimage_runs_its_program_with_arguments_exit_code_and_files_and_extracts_to_its_plan() {
    let h = Hello::new(PACK_TABLE);
    let f = h.mcpp(&["fetch"]);
    assert!(f.status.success(), "{}", text(&f));
    assert!(text(&f).contains("Installed toolchain package appimage-runtime 0.4.0 (toolchain-packages.toml default for [package.metadata.mcpp.pack])"), "{}", text(&f));
    assert!(
        h.home()
            .join("packages/appimage-runtime/0.4.0/assets/runtime-x86_64")
            .is_file(),
        "the runtime is installed under packages/"
    );
    assert!(std::fs::read_to_string(h.pkg().join("mcpp.lock"))
        .unwrap()
        .contains("file = \"appimage-0.4.0.crate\""));

    // The dry run prints every file with its source and place, and the tool; it builds
    // nothing and writes nothing (no target/, the package directory unchanged).
    let before = harness::tree_state(&h.pkg());
    let dry = h.mcpp(&["pack", "--format", "appimage", "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let plan = String::from_utf8_lossy(&dry.stdout).to_string();
    for line in [
        "AppRun (executable)  <-  (generated: launcher",
        "hello.desktop  <-  (generated: desktop entry",
        ".DirIcon  <-  ",
        "hello.svg  <-  ",
        "usr/bin/data/greeting.txt  <-  ",
        "usr/bin/hello (executable)  <-  (built by cargo at pack time: the binary target `hello`; its path is the one cargo's compiler-artifact message names, not guessed here)",
        "runtime-x86_64 (toolchain package appimage-runtime 0.4.0)",
        "note: a dry run builds nothing",
    ] {
        assert!(plan.contains(line), "`{line}` not in the plan:\n{plan}");
    }
    assert!(
        !plan.contains("target/release/hello"),
        "a guessed executable path in the plan:\n{plan}"
    );
    assert!(
        !h.pkg().join("target").exists(),
        "--dry-run built or recorded into target/: {:?}",
        harness::walk(&h.pkg().join("target"))
    );
    assert_eq!(
        harness::tree_state(&h.pkg()),
        before,
        "--dry-run changed the package directory"
    );

    let out = h.mcpp(&["pack", "--format", "appimage", "--offline"]);
    assert!(out.status.success(), "{}", text(&out));
    let first = packed(&out, &h.appimage());
    let why = h.mcpp(&["why", "tool", "appimage-runtime", "--release"]);
    assert!(
        why.status.success()
            && text(&why).contains("runtime-x86_64")
            && text(&why).contains("source:  toolchain-package")
            && text(&why).contains("from:    toolchain package appimage-runtime 0.4.0"),
        "{}",
        text(&why)
    );
    assert!(
        text(&why).contains(
            &h.pkg()
                .join("target/release/mcpp/hello/tool-decisions.json")
                .display()
                .to_string()
        ),
        "recorded in the release device cache: {}",
        text(&why)
    );

    // The runtime runs the program without FUSE, arguments and exit code passed through, and
    // the extra file found beside the program.
    let run = Command::new(h.appimage())
        .args(["--appimage-extract-and-run", "a b", "c", "7"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "hello [a b|c|7] good day\n",
        "{}",
        text(&run)
    );
    assert_eq!(run.status.code(), Some(7));
    let run = Command::new(h.appimage())
        .args(["x", "3"])
        .env("APPIMAGE_EXTRACT_AND_RUN", "1")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "hello [x|3] good day\n",
        "{}",
        text(&run)
    );
    assert_eq!(run.status.code(), Some(3));

    // --appimage-extract gives back the AppDir of the plan.
    let x = tempfile::tempdir().unwrap();
    let ex = Command::new(h.appimage())
        .arg("--appimage-extract")
        .current_dir(x.path())
        .output()
        .unwrap();
    assert!(ex.status.success(), "{}", text(&ex));
    let root = x.path().join("squashfs-root");
    let mut files: Vec<String> = harness::walk(&root)
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            ".DirIcon",
            "AppRun",
            "hello.desktop",
            "hello.svg",
            "usr/bin/data/greeting.txt",
            "usr/bin/hello"
        ]
    );
    assert_eq!(
        std::fs::read(root.join("usr/bin/hello")).unwrap(),
        std::fs::read(h.pkg().join("target/release/hello")).unwrap()
    );
    assert_eq!(
        std::fs::read(root.join(".DirIcon")).unwrap(),
        std::fs::read(h.pkg().join("icon.svg")).unwrap()
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(root.join("AppRun"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
    assert_eq!(
        std::fs::metadata(root.join("hello.desktop"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    let desktop = std::fs::read_to_string(root.join("hello.desktop")).unwrap();
    assert!(
        desktop.contains("Name=Hello\n")
            && desktop.contains("Comment=Says hello\n")
            && desktop.contains("Categories=Development;Building;\n")
            && desktop.contains("Exec=hello\n"),
        "{desktop}"
    );
    let v = Command::new(real_tool("desktop-file-validate"))
        .arg(root.join("hello.desktop"))
        .output()
        .unwrap();
    assert!(
        v.status.success() && text(&v).trim().is_empty(),
        "desktop-file-validate: {}",
        text(&v)
    );
    // The extracted AppRun is relocatable: run from the extracted tree, elsewhere.
    let moved = x.path().join("moved");
    std::fs::rename(&root, &moved).unwrap();
    let run = Command::new(moved.join("AppRun"))
        .arg("9")
        .output()
        .unwrap();
    assert_eq!(
        (
            String::from_utf8_lossy(&run.stdout).to_string(),
            run.status.code()
        ),
        ("hello [9] good day\n".to_string(), Some(9))
    );

    // The same inputs give the same bytes; SOURCE_DATE_EPOCH dates every entry.
    let again = h.mcpp(&["pack", "--format", "appimage"]);
    assert_eq!(
        packed(&again, &h.appimage()),
        first,
        "a second pack of the same inputs gave other bytes"
    );
    let dated = h.mcpp_env(
        &["pack", "--format", "appimage"],
        &[("SOURCE_DATE_EPOCH", "1700000000")],
    );
    let dated_sha = packed(&dated, &h.appimage());
    assert_ne!(dated_sha, first);
    let dated = h.mcpp_env(
        &["pack", "--format", "appimage"],
        &[("SOURCE_DATE_EPOCH", "1700000000")],
    );
    assert_eq!(packed(&dated, &h.appimage()), dated_sha);

    // A plain build writes no package; an unknown format exits 2 listing the formats.
    std::fs::remove_dir_all(h.pkg().join("target/release/pack")).unwrap();
    let b = h.mcpp(&["build", "--release"]);
    assert!(b.status.success(), "{}", text(&b));
    assert!(harness::walk(&h.pkg().join("target"))
        .iter()
        .all(|p| !p.to_string_lossy().ends_with(".AppImage")
            && !p.to_string_lossy().ends_with(".msi")));
    let bogus = h.mcpp(&["pack", "--format", "bogus"]);
    assert_eq!(bogus.status.code(), Some(2), "{}", text(&bogus));
    assert!(
        bogus.stdout.is_empty() && text(&bogus).contains("[possible values: appimage, msi]"),
        "{}",
        text(&bogus)
    );
}

/// The start of a type-2 runtime: an ELF header (x86-64) with `AI\x02` at offset 8.
const FAKE_RUNTIME: &[u8] = b"\x7fELF\x02\x01\x01\x00AI\x02\x00\x00\x00\x00\x00\x02\x00\x3e\x00";

#[test]
fn a_files_glob_never_takes_the_target_directory_the_output_or_git_and_keeps_the_executable_bit() {
    let h = Hello::new("[package.metadata.mcpp.pack]\nfiles = [{ glob = \"**/*.txt\", dest = \"all\" }, { glob = \"data/*.sh\", dest = \"bin\" }]\n");
    let pkg = h.pkg();
    for d in ["target/release/pack", ".git", "dist", "sub/.git"] {
        std::fs::create_dir_all(pkg.join(d)).unwrap();
    }
    for f in [
        "target/release/old.txt",
        "target/release/pack/x.txt",
        ".git/x.txt",
        "sub/.git/y.txt",
        "dist/z.txt",
    ] {
        std::fs::write(pkg.join(f), "x").unwrap();
    }
    std::fs::write(pkg.join("data/run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(pkg.join("data/plain.sh"), "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        pkg.join("data/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(pkg.join("rt"), FAKE_RUNTIME).unwrap();
    let dry = h.mcpp(&[
        "pack",
        "--format",
        "appimage",
        "--release",
        "--runtime-file",
        "rt",
        "--out",
        "dist",
        "--dry-run",
    ]);
    assert!(dry.status.success(), "{}", text(&dry));
    let plan = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(
        plan.contains("usr/bin/all/data/greeting.txt  <-  "),
        "{plan}"
    );
    for never in ["old.txt", "x.txt", "y.txt", "z.txt"] {
        assert!(!plan.contains(never), "`{never}` packed:\n{plan}");
    }
    assert!(
        plan.contains("usr/bin/bin/run.sh (executable)  <-  ")
            && plan.contains("usr/bin/bin/plain.sh  <-  "),
        "{plan}"
    );
    // The package is named by the target's architecture, its runtime checked against it.
    let mut aarch64 = FAKE_RUNTIME.to_vec();
    aarch64[18] = 183;
    std::fs::write(pkg.join("rt"), aarch64).unwrap();
    let dry = h.mcpp(&[
        "pack",
        "--format",
        "appimage",
        "--target",
        "aarch64-unknown-linux-gnu",
        "--runtime-file",
        "rt",
        "--dry-run",
    ]);
    assert!(
        dry.status.success()
            && String::from_utf8_lossy(&dry.stdout).contains("/hello-1.2.3-aarch64.AppImage\n"),
        "{}",
        text(&dry)
    );
    // Only excluded files: refused by name.
    let h = Hello::new(
        "[package.metadata.mcpp.pack]\nfiles = [{ glob = \"target/*.txt\", dest = \"t\" }]\n",
    );
    std::fs::create_dir_all(h.pkg().join("target")).unwrap();
    std::fs::write(h.pkg().join("target/a.txt"), "x").unwrap();
    std::fs::write(h.pkg().join("rt"), FAKE_RUNTIME).unwrap();
    let out = h.mcpp(&[
        "pack",
        "--format",
        "appimage",
        "--runtime-file",
        "rt",
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("`target/*.txt` matches only files in cargo's target directory")
            && text(&out).contains("pack.files[0].glob"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_shared_library_the_build_links_is_packed_and_found_by_the_program() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-pack-lib-")
        .tempdir()
        .unwrap();
    let pkg = tmp.path().join("pkg");
    let lib = tmp.path().join("greet-lib");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("greet.c"), "int greet(void) { return 42; }\n").unwrap();
    let cc = Command::new(real_tool("gcc"))
        .args(["-shared", "-fPIC", "-Wl,-soname,libgreet.so.1", "-o"])
        .arg(lib.join("libgreet.so.1"))
        .arg(lib.join("greet.c"))
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", text(&cc));
    std::os::unix::fs::symlink("libgreet.so.1", lib.join("libgreet.so")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        "[package]\nname = \"greeter\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    // The build script links the library the way a rule's link directives do (no rpath).
    std::fs::write(
        pkg.join("build.rs"),
        "fn main() {\n    println!(\"cargo::rustc-link-search=native={}\", std::env::var(\"GREET_LIB_DIR\").unwrap());\n    println!(\"cargo::rustc-link-lib=dylib=greet\");\n    println!(\"cargo::rerun-if-env-changed=GREET_LIB_DIR\");\n}\n",
    )
    .unwrap();
    std::fs::write(pkg.join("src/main.rs"), "extern \"C\" {\n    fn greet() -> i32;\n}\nfn main() {\n    println!(\"greet says {}\", unsafe { greet() });\n}\n").unwrap();
    let mcpp = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
            .arg("mcpp")
            .args(args)
            .current_dir(&pkg)
            .env("MCPP_HOME", tmp.path().join("mcpp-home"))
            .env("GREET_LIB_DIR", &lib)
            .output()
            .unwrap()
    };
    let f = mcpp(&["fetch", "appimage-runtime"]);
    assert!(f.status.success(), "{}", text(&f));
    let dry = mcpp(&["pack", "--format", "appimage", "--dry-run"]);
    let plan = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(dry.status.success() && plan.contains("note: when the build links shared libraries, they go to usr/lib/ and the program's copy gets the RUNPATH $ORIGIN/../lib (patchelf)"), "{}", text(&dry));
    let out = mcpp(&["pack", "--format", "appimage"]);
    assert!(out.status.success(), "{}", text(&out));
    let image = pkg.join("target/release/pack/greeter-0.1.0-x86_64.AppImage");
    packed(&out, &image);
    let built = pkg.join("target/release/greeter");
    assert!(
        patchelf(&["--print-rpath"], &built).is_empty(),
        "the built executable was changed"
    );
    // Where the build found it is gone: the program finds the packed copy through its RUNPATH.
    std::fs::rename(&lib, tmp.path().join("moved-away")).unwrap();
    let direct = Command::new(&built).output().unwrap();
    assert!(
        !direct.status.success(),
        "the built program still finds the library: {}",
        text(&direct)
    );
    let run = Command::new(&image)
        .arg("--appimage-extract-and-run")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "greet says 42\n",
        "{}",
        text(&run)
    );
    // The packed copy carries RUNPATH $ORIGIN/../lib and runs without AppRun; AppRun sets no
    // LD_LIBRARY_PATH.
    let x = tempfile::tempdir().unwrap();
    let ex = Command::new(&image)
        .arg("--appimage-extract")
        .current_dir(x.path())
        .output()
        .unwrap();
    assert!(ex.status.success(), "{}", text(&ex));
    let root = x.path().join("squashfs-root");
    assert_eq!(
        patchelf(&["--print-rpath"], &root.join("usr/bin/greeter")),
        "$ORIGIN/../lib"
    );
    assert_eq!(
        std::fs::read(root.join("usr/lib/libgreet.so.1")).unwrap(),
        std::fs::read(tmp.path().join("moved-away/libgreet.so.1")).unwrap()
    );
    assert!(!std::fs::read_to_string(root.join("AppRun"))
        .unwrap()
        .contains("LD_LIBRARY_PATH"));
    let direct = Command::new(root.join("usr/bin/greeter"))
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&direct.stdout),
        "greet says 42\n",
        "{}",
        text(&direct)
    );
    let why = mcpp(&["why", "tool", "patchelf", "--release"]);
    assert!(
        why.status.success() && text(&why).contains("patchelf"),
        "{}",
        text(&why)
    );
}

/// `patchelf <args> <file>`'s standard output, trimmed (the real patchelf, apt's).
fn patchelf(args: &[&str], file: &Path) -> String {
    let out = Command::new(real_tool("patchelf"))
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_sidecars_a_build_script_lists_are_packed_beside_the_program() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-pack-sidecar-")
        .tempdir()
        .unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        "[package]\nname = \"sider\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    // The producer's contract: OUT_DIR/mcpp-sidecars.json lists absolute sources and their
    // places relative to the executable's directory.
    std::fs::write(
        pkg.join("build.rs"),
        r#"fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("kernel.bin"), "kernel bytes\n").unwrap();
    let list = format!("{{\"version\":1,\"sidecars\":[{{\"source\":{:?},\"relative\":\"kernels/main.bin\"}}]}}", out.join("kernel.bin").display().to_string());
    std::fs::write(out.join("mcpp-sidecars.json"), list).unwrap();
}
"#,
    )
    .unwrap();
    std::fs::write(pkg.join("src/main.rs"), "fn main() {\n    let k = std::env::current_exe().unwrap().parent().unwrap().join(\"kernels/main.bin\");\n    print!(\"sidecar: {}\", std::fs::read_to_string(k).unwrap());\n}\n").unwrap();
    let mcpp = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
            .arg("mcpp")
            .args(args)
            .current_dir(&pkg)
            .env("MCPP_HOME", tmp.path().join("mcpp-home"))
            .output()
            .unwrap()
    };
    let f = mcpp(&["fetch", "appimage-runtime"]);
    assert!(f.status.success(), "{}", text(&f));
    let out = mcpp(&["pack", "--format", "appimage"]);
    assert!(out.status.success(), "{}", text(&out));
    let image = pkg.join("target/release/pack/sider-0.1.0-x86_64.AppImage");
    packed(&out, &image);
    let run = Command::new(&image)
        .arg("--appimage-extract-and-run")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "sidecar: kernel bytes\n",
        "{}",
        text(&run)
    );
    let x = tempfile::tempdir().unwrap();
    assert!(Command::new(&image)
        .arg("--appimage-extract")
        .current_dir(x.path())
        .output()
        .unwrap()
        .status
        .success());
    assert_eq!(
        std::fs::read(x.path().join("squashfs-root/usr/bin/kernels/main.bin")).unwrap(),
        b"kernel bytes\n"
    );

    // A list naming a source that is gone is refused, naming the list.
    let list = harness::walk(&pkg.join("target/release/build"))
        .into_iter()
        .find(|p| p.ends_with("out/mcpp-sidecars.json"))
        .unwrap();
    std::fs::remove_file(list.with_file_name("kernel.bin")).unwrap();
    let out = mcpp(&["pack", "--format", "appimage"]);
    assert!(
        !out.status.success()
            && text(&out).contains(&list.display().to_string())
            && text(&out).contains("sidecars[0].source")
            && text(&out).contains("does not exist"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_installed_runtime_whose_bytes_differ_from_the_pin_is_refused_by_name_with_the_way_out() {
    let h = Hello::new("[package.metadata.mcpp.pack]\n");
    let f = h.mcpp(&["fetch", "appimage-runtime"]);
    assert!(f.status.success(), "{}", text(&f));
    let runtime = h
        .home()
        .join("packages/appimage-runtime/0.4.0/assets/runtime-x86_64");
    let mut bytes = std::fs::read(&runtime).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&runtime, &bytes).unwrap();
    let out = h.mcpp(&["pack", "--format", "appimage", "--dry-run"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "{t}");
    assert!(t.contains(&format!("the installed AppImage runtime {} does not have the bytes toolchain-packages.toml pins", runtime.display())), "{t}");
    assert!(
        t.contains("pinned: 328e0d745c5c6817048c27bc3e8314871703f8f47ffa81a37cb06cd95a94b323")
            && t.contains("run `cargo mcpp fetch --manifest-path"),
        "{t}"
    );
    assert!(out.stdout.is_empty(), "a plan was printed: {t}");
    // The way out works: the fetch it names reinstalls the pinned bytes.
    let manifest = h.pkg().join("Cargo.toml");
    let f = h.mcpp(&["fetch", "--manifest-path", manifest.to_str().unwrap()]);
    assert!(f.status.success(), "{}", text(&f));
    let sha = {
        use sha2::Digest;
        sha2::Sha256::digest(std::fs::read(&runtime).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert_eq!(
        sha,
        "328e0d745c5c6817048c27bc3e8314871703f8f47ffa81a37cb06cd95a94b323"
    );
    assert!(h
        .mcpp(&["pack", "--format", "appimage", "--dry-run"])
        .status
        .success());
}

#[test]
fn the_vulkan_compute_example_runs_from_its_appimage() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-pack-vk-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().join("vulkan-compute");
    copy_dir(&repo().join("examples/vulkan-compute"), &dir);
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        manifest.replace(
            "path = \"../../mcpp-build\"",
            &format!(
                "path = {:?}",
                repo().join("mcpp-build").display().to_string()
            ),
        ),
    )
    .unwrap();
    let home = tmp.path().join("mcpp-home");
    // Packed in release: a release build shares nothing with the debug builds of the other
    // example tests, so it has a target directory of its own (kept between runs) and takes no
    // turn in theirs.
    let target = harness::repo().join("target/tmp/pack-appimage-release");
    let out_dir = tmp.path().join("out");
    let mcpp = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
            .arg("mcpp")
            .args(args)
            .arg("--manifest-path")
            .arg(dir.join("Cargo.toml"))
            .env("MCPP_HOME", &home)
            .env("SLANGC", harness::real_slangc())
            .env_remove("MCPP_ACCEL")
            .env_remove("MCPP_NO_ACCEL")
            .output()
            .unwrap()
    };
    let f = mcpp(&["fetch", "appimage-runtime"]);
    assert!(f.status.success(), "{}", text(&f));
    let out = mcpp(&[
        "pack",
        "--format",
        "appimage",
        "--target-dir",
        target.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    // What `cargo mcpp build` shows, not the device phase's JSON lines (pack reads cargo's
    // messages as JSON; the device phase's are not for the user).
    assert!(
        !text(&out).contains("\"reason\":\"mcpp-device"),
        "{}",
        text(&out)
    );
    let image = out_dir.join("vulkan-compute-0.1.0-x86_64.AppImage");
    packed(&out, &image);
    let run = Command::new(&image)
        .arg("--appimage-extract-and-run")
        .output()
        .unwrap();
    assert!(
        run.status.success() && String::from_utf8_lossy(&run.stdout).contains("all results match"),
        "{}",
        text(&run)
    );
}

/// A program linking a system library that not every desktop has (libpng16, libjpeg) gets it
/// bundled into `usr/lib/` (with the program's RUNPATH `$ORIGIN/../lib`), and pack says so;
/// the C library and the others of the exclude list stay the system's. Run from the extracted
/// AppDir with the system's copies hidden (bubblewrap mounts an empty file over each), the
/// program still starts: before, it failed with
/// `libpng16.so.16: cannot open shared object file`.
#[test]
fn system_libraries_beyond_the_exclude_list_are_bundled_and_used() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-pack-syslib-")
        .tempdir()
        .unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        "[package]\nname = \"pngver\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("build.rs"),
        "fn main() {\n    println!(\"cargo::rustc-link-lib=dylib=png16\");\n    println!(\"cargo::rustc-link-lib=dylib=jpeg\");\n}\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("src/main.rs"),
        "extern \"C\" {\n    fn png_access_version_number() -> u32;\n    fn jpeg_std_error(err: *mut u8) -> *mut u8;\n}\nfn main() {\n    let mut err = vec![0u8; 4096];\n    let e = unsafe { jpeg_std_error(err.as_mut_ptr()) };\n    println!(\"png {} jpeg {}\", unsafe { png_access_version_number() }, !e.is_null());\n}\n",
    )
    .unwrap();
    let mcpp = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
            .arg("mcpp")
            .args(args)
            .current_dir(&pkg)
            .env("MCPP_HOME", tmp.path().join("mcpp-home"))
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .unwrap()
    };
    let f = mcpp(&["fetch", "appimage-runtime"]);
    assert!(f.status.success(), "{}", text(&f));
    let out = mcpp(&["pack", "--format", "appimage"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("libpng16.so.16")
            && said.contains("libjpeg.so.62")
            && said.contains("bundled"),
        "pack does not say what it bundled:\n{said}"
    );
    let image = pkg.join("target/release/pack/pngver-0.1.0-x86_64.AppImage");
    packed(&out, &image);
    let x = tempfile::tempdir().unwrap();
    let ex = Command::new(&image)
        .arg("--appimage-extract")
        .current_dir(x.path())
        .output()
        .unwrap();
    assert!(ex.status.success(), "{}", text(&ex));
    let root = x.path().join("squashfs-root");
    let lib = root.join("usr/lib");
    for (bundled, excluded) in [
        ("libpng16.so.16", "libc.so.6"),
        ("libjpeg.so.62", "libz.so.1"),
    ] {
        assert!(lib.join(bundled).is_file(), "{bundled} is not in usr/lib");
        assert!(
            !lib.join(excluded).exists(),
            "{excluded} (on the exclude list) was bundled"
        );
    }
    assert_eq!(
        patchelf(&["--print-rpath"], &root.join("usr/bin/pngver")),
        "$ORIGIN/../lib"
    );
    // The system's copies hidden: bubblewrap runs the program with an empty file mounted over
    // each (the library files the system's links lead to).
    let empty = tmp.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let hidden = |program: &Path| {
        let mut c = Command::new(real_tool("bwrap"));
        c.args(["--dev-bind", "/", "/"]);
        for lib in ["libpng16.so.16", "libjpeg.so.62"] {
            let real =
                std::fs::canonicalize(Path::new("/usr/lib/x86_64-linux-gnu").join(lib)).unwrap();
            c.arg("--ro-bind").arg(&empty).arg(real);
        }
        c.arg(program)
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap()
    };
    let run = hidden(&root.join("usr/bin/pngver"));
    assert!(
        run.status.success() && String::from_utf8_lossy(&run.stdout).starts_with("png 106"),
        "{}",
        text(&run)
    );
    // The built program (no RUNPATH, no bundle) does not start so: the hiding works.
    let built = hidden(&pkg.join("target/release/pngver"));
    assert!(!built.status.success(), "{}", text(&built));
}
