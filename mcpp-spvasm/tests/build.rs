//! The rule as a user's build script registers it: a package whose `build.rs` calls
//! `mcpp_build::Build::new().rule(mcpp_spvasm::Spvasm)`, built by cargo, its program run.
//! What is checked is the embedded bytes (equal to `spirv-as`'s output, changed by an edit of the
//! source) and the refusals a user meets (each naming `Cargo.toml:line:col`).
//!
//! Needs `spirv-as` and `spirv-val` (spirv-tools) on PATH.

#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DOUBLE: &str = include_str!("double.spvasm");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The repository's target directory for packages whose build script compiles the engine
/// (cargo-mcpp's in-process tests build there too, under [`cargo_home`]): the engine is
/// compiled once per run. Each package here has a name of its own.
fn target_dir() -> PathBuf {
    // Under cargo-nextest this test waits for the directory in its test group
    // (`.config/nextest.toml`), not holding one of the run's test threads.
    if std::env::var_os("NEXTEST").is_some() {
        assert_eq!(
            std::env::var("NEXTEST_TEST_GROUP").unwrap_or_default(),
            "in-process-target",
            "this test builds in target/in-process-tests: add it to the `in-process-target` test group in .config/nextest.toml"
        );
    }
    repo().join("target/in-process-tests")
}

/// The `CARGO_HOME` of the builds in [`target_dir`]: nothing installed, the registry a link to
/// this machine's. One path for every build there, so the registry packages' sources keep one
/// path (cargo's fingerprint holds it) and compile once.
fn cargo_home() -> PathBuf {
    let real = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let home = target_dir().join("bare-cargo-home");
    std::fs::create_dir_all(&home).unwrap();
    match std::os::unix::fs::symlink(real.join("registry"), home.join("registry")) {
        Ok(()) => {}
        // Made by another test (a link is made whole or not at all).
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => panic!("linking the registry into {}: {e}", home.display()),
    }
    // The home's config, the one cargo-mcpp's harness writes (the file says why).
    let config = home.join("config.toml");
    let text = include_str!("../../tests/bare-cargo-home.toml");
    if std::fs::read_to_string(&config).ok().as_deref() != Some(text) {
        let tmp = home.join(format!("config.toml.{}", std::process::id()));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &config).unwrap();
    }
    home
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A package named `name` using the rule, with `metadata` after `[package.metadata.mcpp]`.
fn package(dir: &Path, name: &str, metadata: &str) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("shaders")).unwrap();
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\nmcpp-build = {{ path = {:?}, features = [\"engine\"] }}\nmcpp-spvasm = {{ path = {:?} }}\n\n[package.metadata.mcpp]\n{metadata}\n\n[workspace]\n",
        repo().join("mcpp-build").display().to_string(),
        repo().join("mcpp-spvasm").display().to_string(),
    );
    std::fs::write(root.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(
        root.join("build.rs"),
        "fn main() {\n    mcpp_build::Build::new().rule(mcpp_spvasm::Spvasm).compile();\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "mod shaders {\n    include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\"));\n}\n\nfn main() {\n    let words: Vec<String> = shaders::double_spvasm().code.iter().map(|w| format!(\"{w:08x}\")).collect();\n    println!(\"{}\", words.join(\" \"));\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("shaders/double.spvasm"), DOUBLE).unwrap();
    root
}

fn cargo(root: &Path, args: &[&str]) -> Output {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(args)
        .arg("--offline")
        .arg("--target-dir")
        .arg(target_dir())
        .env("CARGO_HOME", cargo_home())
        .current_dir(root)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .output()
        .unwrap()
}

/// `spirv-as`'s words for `source` assembled for `env`, as the program prints them.
fn assembled(source: &Path, env: &str, dir: &Path) -> String {
    let out = dir.join("expected.spv");
    let status = Command::new("spirv-as")
        .args(["--target-env", env, "-o"])
        .arg(&out)
        .arg(source)
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = std::fs::read(&out).unwrap();
    bytes
        .chunks(4)
        .map(|c| format!("{:08x}", u32::from_le_bytes(c.try_into().unwrap())))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The rule's output in the device cache (the one `.spv` under the target directory's `mcpp/`
/// folder of `name`).
fn cached_output(name: &str) -> PathBuf {
    let root = target_dir().join("debug/mcpp").join(name);
    let mut found = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with("double.spvasm.spv") {
                found.push(p);
            }
        }
    }
    assert_eq!(
        found.len(),
        1,
        "one output under {}: {found:?}",
        root.display()
    );
    found.remove(0)
}

#[test]
fn the_rule_embeds_spirv_as_output_and_an_edit_changes_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let root = package(
        dir.path(),
        "spvasm-app",
        "accel = \"vulkan1.2\"\nsources = [\"shaders/*.spvasm\"]",
    );
    let out = cargo(&root, &["run", "-q"]);
    assert!(out.status.success(), "{}", text(&out));
    let first = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        first.starts_with("07230203 "),
        "SPIR-V's magic first: {first}"
    );
    assert_eq!(
        first,
        assembled(&root.join("shaders/double.spvasm"), "vulkan1.2", dir.path())
    );
    let spv = cached_output("spvasm-app");
    let val = Command::new("spirv-val")
        .args(["--target-env", "vulkan1.2"])
        .arg(&spv)
        .output()
        .unwrap();
    assert!(val.status.success(), "spirv-val: {}", text(&val));

    // The same bytes again (the build script reruns, its action does not): the output is not
    // written again.
    let written = std::fs::metadata(&spv).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(root.join("shaders/double.spvasm"), DOUBLE).unwrap();
    let out = cargo(&root, &["build", "-q"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::metadata(&spv).unwrap().modified().unwrap(),
        written,
        "a no-op ran spirv-as"
    );

    // An edit: the factor 2.0 becomes 3.0; the embedded words follow.
    let edited = DOUBLE.replace(
        "%float_2 = OpConstant %float 2\n",
        "%float_2 = OpConstant %float 3\n",
    );
    assert_ne!(
        edited, DOUBLE,
        "the fixture holds the constant the test edits"
    );
    std::fs::write(root.join("shaders/double.spvasm"), &edited).unwrap();
    let out = cargo(&root, &["run", "-q"]);
    assert!(out.status.success(), "{}", text(&out));
    let second = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_ne!(second, first, "stale SPIR-V after an edit of the source");
    assert_eq!(
        second,
        assembled(&root.join("shaders/double.spvasm"), "vulkan1.2", dir.path())
    );

    // The rule's option, set in the manifest, reaches the tool.
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!("{manifest}\n[package.metadata.mcpp.spvasm]\ntarget-env = \"vulkan1.0\"\n"),
    )
    .unwrap();
    let out = cargo(&root, &["run", "-q"]);
    assert!(out.status.success(), "{}", text(&out));
    let third = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        third,
        assembled(&root.join("shaders/double.spvasm"), "vulkan1.0", dir.path())
    );
    assert_ne!(
        third, second,
        "SPIR-V 1.0 and 1.5 differ in their version word"
    );
}

#[test]
fn the_rules_refusals_name_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let root = package(
        dir.path(),
        "spvasm-refusals",
        "accel = \"vulkan1.2\"\nsources = [\"shaders/*.spvasm\"]\n\n[package.metadata.mcpp.spvasm]\ntarget-env = \"vulkan9.9\"\nbogus = 1\npreserve-numeric-ids = \"yes\"",
    );
    let out = cargo(&root, &["build", "-q"]);
    assert!(!out.status.success());
    let said = text(&out);
    let manifest = root.join("Cargo.toml").display().to_string();
    for (line, col, what) in [
        (
            15,
            1,
            "`vulkan9.9` is no target environment spirv-as assembles for",
        ),
        (16, 1, "unknown field `bogus`"),
        (17, 1, "expected a boolean"),
    ] {
        assert!(
            said.contains(&format!("{manifest}:{line}:{col}")) && said.contains(what),
            "{what} at {line}:{col}: {said}"
        );
    }
    assert!(
        said.contains("`target-env`, `preserve-numeric-ids`"),
        "the valid keys: {said}"
    );

    // The accelerator entry the rule checks, refused as the set's refusal.
    let root = package(
        dir.path(),
        "spvasm-accel",
        "accel = \"vulkan1.4\"\nsources = [\"shaders/*.spvasm\"]",
    );
    let out = cargo(&root, &["build", "-q"]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("spirv-as assembles for no Vulkan 1.4")
            && said.contains("package.metadata.mcpp.accel"),
        "{said}"
    );

    // The rule registered twice: refused naming the build.rs line of the registration.
    let root = package(
        dir.path(),
        "spvasm-twice",
        "accel = \"vulkan1.2\"\nsources = [\"shaders/*.spvasm\"]",
    );
    std::fs::write(root.join("build.rs"), "fn main() {\n    let mut b = mcpp_build::Build::new();\n    b.rule(mcpp_spvasm::Spvasm);\n    b.rule(mcpp_spvasm::Spvasm);\n    b.compile();\n}\n").unwrap();
    let out = cargo(&root, &["build", "-q"]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains(
            "a registered rule is named `spvasm`, which another rule of this build already has"
        ) && said.contains("build.rs:4"),
        "{said}"
    );

    // The tool named where it is not: refused naming the variable, not taken from PATH.
    let root = package(
        dir.path(),
        "spvasm-tool",
        "accel = \"vulkan1.2\"\nsources = [\"shaders/*.spvasm\"]",
    );
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "-q", "--offline", "--target-dir"])
        .arg(target_dir())
        .env("CARGO_HOME", cargo_home())
        .current_dir(&root)
        .env("SPIRV_AS", dir.path().join("no-such-spirv-as"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("SPIRV_AS") && said.contains("no-such-spirv-as"),
        "{said}"
    );
}
