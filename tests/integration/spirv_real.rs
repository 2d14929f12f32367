//! The SPIR-V lane with the real glslangValidator and glslc: outputs validated by spirv-val,
//! and the criterion of every rebuild test is the embedded bytes, not the exit code.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;

fn spirv_val(bytes: &[u8], env: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.spv");
    std::fs::write(&f, bytes).unwrap();
    let out = std::process::Command::new(real_tool("spirv-val"))
        .arg("--target-env")
        .arg(env)
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "spirv-val refused the output: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn both_compilers_compile_the_example_shaders_and_spirv_val_accepts_them() {
    for compiler in ["glslang", "glslc"] {
        let pkg = shader_package(compiler);
        let outcome = pkg.compile(&pkg.build());
        assert_eq!(outcome.report.ran.len(), 2, "{compiler}");
        assert_eq!(outcome.payloads, 2);
        for src in ["shaders/a/scale.comp", "shaders/b/scale.comp"] {
            let bytes = pkg.embedded_bytes(src);
            assert_eq!(
                &bytes[..4],
                &[0x03, 0x02, 0x23, 0x07],
                "{compiler} {src}: SPIR-V magic"
            );
            spirv_val(&bytes, "vulkan1.2");
        }
        assert_ne!(
            pkg.embedded_bytes("shaders/a/scale.comp"),
            pkg.embedded_bytes("shaders/b/scale.comp"),
            "two distinct payloads"
        );
        let program = if compiler == "glslang" {
            "glslangValidator"
        } else {
            "glslc"
        };
        assert_eq!(
            pkg.starts(program),
            3,
            "one --version probe and two compiles"
        );
        let other = if compiler == "glslang" {
            "glslc"
        } else {
            "glslangValidator"
        };
        assert_eq!(pkg.starts(other), 0, "the undeclared compiler is never run");
    }
}

#[test]
fn editing_only_the_included_glsl_changes_the_embedded_bytes() {
    for compiler in ["glslang", "glslc"] {
        let pkg = shader_package(compiler);
        pkg.compile(&pkg.build());
        let a_before = pkg.embedded_bytes("shaders/a/scale.comp");
        let b_before = pkg.embedded_bytes("shaders/b/scale.comp");
        pkg.write(
            "shaders/include/common.glsl",
            &COMMON_GLSL.replace("3.0", "5.0"),
        );
        let outcome = pkg.compile(&pkg.build());
        assert_eq!(
            outcome.report.ran,
            ["spirv:shaders/a/scale.comp"],
            "{compiler}: exactly the includer reruns"
        );
        assert_ne!(
            pkg.embedded_bytes("shaders/a/scale.comp"),
            a_before,
            "{compiler}: stale bytes after editing common.glsl"
        );
        assert_eq!(pkg.embedded_bytes("shaders/b/scale.comp"), b_before);
        // The payload copy the surface names carries the new bytes too (no C/C++ unit in the
        // package, so no C arrays).
        let copy = std::fs::read(pkg.out_dir().join("mcpp/payloads/a/scale_comp.spv")).unwrap();
        assert_eq!(copy, pkg.embedded_bytes("shaders/a/scale.comp"));
        assert_ne!(copy, a_before, "{compiler}: stale payload copy");
        assert!(!pkg.out_dir().join("mcpp/data").exists());
    }
}

#[test]
fn a_define_change_rebuilds_with_new_bytes() {
    let pkg = shader_package("glslang");
    pkg.compile(&pkg.build());
    let before = pkg.embedded_bytes("shaders/b/scale.comp");
    let m = pkg
        .read("Cargo.toml")
        .replace("WORKGROUP = \"64\"", "WORKGROUP = \"32\"");
    pkg.write("Cargo.toml", &m);
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran.len(), 2);
    assert_ne!(pkg.embedded_bytes("shaders/b/scale.comp"), before);
}

#[test]
fn switching_glslang_and_glslc_rebuilds_everything() {
    let pkg = shader_package("glslang");
    pkg.compile(&pkg.build());
    let glslang_bytes = pkg.embedded_bytes("shaders/a/scale.comp");
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml")
            .replace("compiler = \"glslang\"", "compiler = \"glslc\""),
    );
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran.len(), 2);
    assert_eq!(pkg.starts("glslc"), 3);
    assert_ne!(
        pkg.embedded_bytes("shaders/a/scale.comp"),
        glslang_bytes,
        "glslc's output differs from glslang's (generator word)"
    );
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml")
            .replace("compiler = \"glslc\"", "compiler = \"glslang\""),
    );
    pkg.compile(&pkg.build());
    assert_eq!(pkg.embedded_bytes("shaders/a/scale.comp"), glslang_bytes);
}

#[test]
fn an_accel_change_rebuilds_for_the_new_target_env_in_its_own_variant() {
    let pkg = shader_package("glslang");
    let first = pkg.compile(&pkg.build());
    let v12 = pkg.embedded_bytes("shaders/a/scale.comp");
    let second = pkg.compile(pkg.build().accel("vulkan1.3"));
    assert_eq!(second.report.ran.len(), 2);
    assert_ne!(
        first.variant_dir, second.variant_dir,
        "device variants live in different directories"
    );
    let v13 = pkg.embedded_bytes("shaders/a/scale.comp");
    assert_ne!(v12, v13);
    assert_eq!(
        v13[4..8],
        [0x00, 0x06, 0x01, 0x00],
        "vulkan1.3 targets SPIR-V 1.6"
    );
    assert_eq!(
        v12[4..8],
        [0x00, 0x05, 0x01, 0x00],
        "vulkan1.2 targets SPIR-V 1.5"
    );
    // Back to the manifest's set: its variant is still fresh, nothing compiles, the bytes return.
    let starts = pkg.starts("glslangValidator");
    let third = pkg.compile(&pkg.build());
    assert!(third.report.ran.is_empty());
    assert_eq!(pkg.starts("glslangValidator"), starts);
    assert_eq!(pkg.embedded_bytes("shaders/a/scale.comp"), v12);
}

#[test]
fn a_no_op_build_starts_no_compiler_process() {
    for compiler in ["glslang", "glslc"] {
        let pkg = shader_package(compiler);
        pkg.compile(&pkg.build());
        let program = if compiler == "glslang" {
            "glslangValidator"
        } else {
            "glslc"
        };
        let starts = pkg.starts(program);
        let outcome = pkg.compile(&pkg.build());
        assert!(outcome.report.ran.is_empty());
        assert_eq!(outcome.report.fresh.len(), 2);
        assert_eq!(
            pkg.starts(program),
            starts,
            "{compiler}: a no-op build started a compiler"
        );
        assert!(
            outcome.generated.unwrap().written.is_empty(),
            "no generated file rewritten"
        );
    }
}

#[test]
fn a_deleted_or_tampered_output_is_rebuilt() {
    let pkg = shader_package("glslang");
    let first = pkg.compile(&pkg.build());
    let good = pkg.embedded_bytes("shaders/b/scale.comp");
    let spv = first.variant_dir.join("spirv/shaders/b/scale.comp.spv");
    std::fs::write(&spv, b"\0\0\0\0").unwrap();
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran, ["spirv:shaders/b/scale.comp"]);
    assert_eq!(pkg.embedded_bytes("shaders/b/scale.comp"), good);
}

#[test]
fn rerun_lines_cover_every_real_input_and_no_missing_path() {
    let pkg = shader_package("glslc");
    let outcome = pkg.compile(&pkg.build());
    let lines = outcome.cargo.lines();
    let rerun: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("cargo::rerun-if-changed="))
        .collect();
    for needed in [
        "Cargo.toml",
        "shaders/a/scale.comp",
        "shaders/b/scale.comp",
        "shaders/include/common.glsl",
    ] {
        assert!(
            rerun.iter().any(|r| r.ends_with(needed)),
            "no rerun-if-changed for {needed}: {rerun:#?}"
        );
    }
    for r in &rerun {
        assert!(
            std::path::Path::new(r).exists(),
            "rerun-if-changed names a missing path {r}"
        );
    }
    // Also on a fresh run, where the depfile-discovered include comes from the recorded state.
    let again = pkg.compile(&pkg.build());
    assert!(again
        .cargo
        .lines()
        .iter()
        .any(|l| l.starts_with("cargo::rerun-if-changed=") && l.ends_with("common.glsl")));
    for var in ["MCPP_ACCEL", "MCPP_NO_ACCEL"] {
        assert!(lines.contains(&format!("cargo::rerun-if-env-changed={var}")));
    }
    assert!(lines.contains(&"cargo::rustc-cfg=mcpp_accel=\"vulkan\"".to_string()));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("cargo::rustc-check-cfg=cfg(mcpp_accel")));
}

#[test]
fn no_accel_compiles_nothing_and_keeps_every_accessor_empty() {
    let pkg = shader_package("glslang");
    let outcome = pkg.compile(pkg.build().no_accel());
    assert!(outcome.report.ran.is_empty() && outcome.report.fresh.is_empty());
    assert_eq!(pkg.starts("glslangValidator"), 0, "no tool is even probed");
    // Both shaders keep their accessors, empty, each saying why.
    assert_eq!(outcome.payloads, 2);
    let rust = pkg.rust_surface();
    assert!(rust.contains("pub fn all() -> [Payload; 2]"), "{rust}");
    assert_eq!(rust.matches("pub fn scale_comp() -> ").count(), 2, "{rust}");
    assert_eq!(
        rust.matches("/// Empty: not built in this build (accelerator set none")
            .count(),
        2,
        "{rust}"
    );
    assert!(pkg.embedded_bytes("shaders/a/scale.comp").is_empty());
    assert!(outcome
        .cargo
        .lines()
        .contains(&"cargo::rustc-cfg=mcpp_accel=\"none\"".to_string()));
    // The environment form, as `cargo mcpp build --no-accel` passes it to build.rs.
    let outcome = pkg.compile(pkg.build().env("MCPP_NO_ACCEL", "1"));
    assert_eq!(outcome.payloads, 2);
    assert!(pkg.embedded_bytes("shaders/b/scale.comp").is_empty());
}

#[test]
fn jobs_one_means_one_compiler_at_a_time() {
    let pkg = shader_package("glslang");
    let one = pkg.compile(pkg.build().jobs(1));
    assert_eq!(one.report.peak_concurrency, 1);
}

#[test]
fn constrained_globs_are_included_excluded_or_refused() {
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "{}\n[package.metadata.mcpp.spirv]\nincludes = [\"shaders/include\"]\ndefines = {{ WORKGROUP = \"8\" }}\n",
                manifest(
                    "constrained",
                    "accel = \"vulkan1.2\"\nsources = [\"shaders/b/*.comp\", { glob = \"shaders/a/*.comp\", accel = \"vulkan1.3\" }]"
                )
            ),
        ),
        ("shaders/include/common.glsl", COMMON_GLSL),
        ("shaders/a/scale.comp", SCALE_COMP),
        ("shaders/b/scale.comp", SQUARE_COMP),
    ]);
    let refused = pkg.refuse(&pkg.build());
    assert!(refused.contains("sources entry 'shaders/a/*.comp' is constrained to accel \"vulkan1.3\", which this build does not cover"), "{refused}");
    assert!(
        refused.contains("this build targets: vulkan1.2"),
        "{refused}"
    );
    assert!(refused.contains("--no-accel"), "{refused}");
    let covered = pkg.compile(pkg.build().accel("vulkan1.3"));
    assert_eq!(covered.payloads, 2);
    assert!(!pkg.embedded_bytes("shaders/a/scale.comp").is_empty());
    // Left out, the constrained shader keeps its accessor, empty, naming the set that left it.
    let none = pkg.compile(pkg.build().no_accel());
    assert_eq!(none.payloads, 2);
    assert!(pkg.embedded_bytes("shaders/a/scale.comp").is_empty());
}

#[test]
fn a_new_file_shadowing_an_include_rebuilds_the_includer() {
    for compiler in ["glslang", "glslc"] {
        let pkg = shader_package(compiler);
        pkg.compile(&pkg.build());
        let before = pkg.embedded_bytes("shaders/a/scale.comp");
        // `#include "common.glsl"` resolves next to the includer before the -I directory.
        pkg.write("shaders/a/common.glsl", &COMMON_GLSL.replace("3.0", "7.0"));
        let outcome = pkg.compile(&pkg.build());
        assert_eq!(
            outcome.report.ran,
            ["spirv:shaders/a/scale.comp"],
            "{compiler}"
        );
        assert_ne!(
            pkg.embedded_bytes("shaders/a/scale.comp"),
            before,
            "{compiler}: stale bytes after a shadowing include appeared"
        );
        // And the include directories are watched by cargo.
        assert!(outcome
            .cargo
            .lines()
            .iter()
            .any(|l| l.starts_with("cargo::rerun-if-changed=") && l.ends_with("shaders/include")));
    }
}

#[test]
fn a_deleted_source_leaves_no_data_behind() {
    let pkg = shader_package("glslang");
    pkg.compile(&pkg.build());
    assert!(pkg
        .out_dir()
        .join("mcpp/payloads/b/scale_comp.spv")
        .exists());
    std::fs::remove_file(pkg.path("shaders/b/scale.comp")).unwrap();
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.payloads, 1);
    assert!(!pkg
        .out_dir()
        .join("mcpp/payloads/b/scale_comp.spv")
        .exists());
    assert!(!pkg.rust_surface().contains("shaders/b/scale.comp"));
}

#[test]
fn a_root_level_glob_is_warned_and_its_new_file_is_compiled_by_the_next_run() {
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &manifest("rooted", "accel = \"vulkan\"\nsources = [\"*.comp\"]"),
        ),
        (
            "one.comp",
            "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n",
        ),
    ]);
    let first = pkg.compile(&pkg.build());
    assert!(first
        .cargo
        .warnings()
        .any(|w| w.contains("cargo cannot watch the root for new files")));
    assert_eq!(first.payloads, 1);
    pkg.write(
        "two.comp",
        "#version 450\nlayout(local_size_x = 2) in;\nvoid main() {}\n",
    );
    assert_eq!(pkg.compile(&pkg.build()).payloads, 2);
}

#[test]
fn a_tool_found_on_path_declares_path() {
    let pkg = shader_package("glslc");
    let mut b = cargo_mcpp::Build::new();
    b.manifest_dir(pkg.path(""))
        .out_dir(pkg.out_dir())
        .work_dir(pkg.work_dir());
    for v in ["GLSLC", "MCPP_GLSLC", "MCPP_ACCEL", "MCPP_NO_ACCEL"] {
        b.env_remove(v);
    }
    let outcome = pkg.compile(&b);
    assert!(outcome
        .cargo
        .warnings()
        .any(|w| w.contains("glslc was found on PATH")));
    assert!(outcome
        .cargo
        .lines()
        .contains(&"cargo::rerun-if-env-changed=PATH".to_string()));
}

#[test]
fn names_that_meet_at_an_underscore_get_distinct_c_symbols() {
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &manifest("meet", "accel = \"vulkan\"\nsources = [\"c/**/*.comp\"]"),
        ),
        (
            "c/a_b/c.comp",
            "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n",
        ),
        (
            "c/a/b_c.comp",
            "#version 450\nlayout(local_size_x = 2) in;\nvoid main() {}\n",
        ),
    ]);
    pkg.compile(&pkg.build());
    let out = std::process::Command::new(real_tool("g++"))
        .args(["-c", "meet.shaders.impl.cpp", "-o", "impl.o"])
        .current_dir(pkg.out_dir().join("mcpp"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A file system with 1-second timestamps, simulated: after a same-size edit with the mtime set
/// back to the recorded one, the saved hash cache is given the file's new stat data (on such a
/// file system size, mtime, ctime and inode all stay as they were) with the old hash. The hash
/// was taken in the tick of the mtime (set so, not timed), so it is not trusted: the shader is compiled again.
#[test]
fn a_same_size_edit_in_the_tick_of_the_last_read_is_recompiled() {
    use std::os::unix::fs::MetadataExt;
    let pkg = shader_package("glslang");
    let first = pkg.compile(&pkg.build());
    let before = pkg.embedded_bytes("shaders/b/scale.comp");
    let src = pkg.path("shaders/b/scale.comp");
    let recorded = std::fs::metadata(&src).unwrap().modified().unwrap();
    let edited = SQUARE_COMP.replace("data[i] * data[i]", "data[i] + data[i]");
    assert_eq!(edited.len(), SQUARE_COMP.len());
    std::fs::write(&src, &edited).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_modified(recorded)
        .unwrap();
    let m = std::fs::metadata(&src).unwrap();
    let cache = first.variant_dir.join("fingerprints/file-hashes.json");
    let mut saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
    let entry = saved
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e[0] == src.to_str().unwrap())
        .expect("the source is in the hash cache");
    entry[1]["key"] = serde_json::json!([
        m.len(),
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        m.ino()
    ]);
    // The first build read the source in the tick of its mtime (set, not timed).
    entry[1]["hashed_at"] =
        serde_json::json!(m.mtime() * 1_000_000_000 + m.mtime_nsec() + 500_000_000);
    std::fs::write(&cache, serde_json::to_vec(&saved).unwrap()).unwrap();
    cargo_mcpp::engine::fingerprint::clear_hash_cache();
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran, ["spirv:shaders/b/scale.comp"]);
    let after = pkg.embedded_bytes("shaders/b/scale.comp");
    assert_ne!(after, before, "the edit reached the embedded bytes");
}

/// Four device phases of one package on one device cache at once (as two cargo processes'
/// build scripts would run them), each with its own OUT_DIR, twice (the second time after an
/// edit makes every action stale again): all succeed, and all embed the same bytes.
#[test]
fn concurrent_device_phases_on_one_device_cache_all_succeed_with_identical_bytes() {
    let pkg = shader_package("glslang");
    let sources = ["shaders/a/scale.comp", "shaders/b/scale.comp"];
    let mut previous: Option<Vec<Vec<u8>>> = None;
    for round in 0..2 {
        if round == 1 {
            pkg.write(
                "shaders/include/common.glsl",
                &COMMON_GLSL.replace("3.0", "5.0"),
            );
        }
        let embedded: Vec<Vec<Vec<u8>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|n| {
                    let pkg = &pkg;
                    scope.spawn(move || {
                        let out = pkg.dir.path().join(format!("out-{n}"));
                        let mut b = pkg.build();
                        b.out_dir(&out);
                        b.try_compile()
                            .unwrap_or_else(|e| panic!("round {round}, build {n} failed:\n{e}"));
                        let rust = std::fs::read_to_string(out.join("mcpp_shaders.rs")).unwrap();
                        sources
                            .iter()
                            .map(|s| embedded_in(&rust, s))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (n, e) in embedded.iter().enumerate() {
            assert_eq!(
                e, &embedded[0],
                "round {round}: build {n} embedded other bytes than build 0"
            );
        }
        if let Some(p) = &previous {
            assert_ne!(
                p[0], embedded[0][0],
                "the edit of the included file reached the bytes"
            );
            assert_eq!(
                p[1], embedded[0][1],
                "the shader not including it kept its bytes"
            );
        }
        previous = Some(embedded[0].clone());
    }
}

/// The bytes a Rust surface `include_bytes!`s for `source`.
fn embedded_in(rust: &str, source: &str) -> Vec<u8> {
    let at = rust.find(&format!("source: {source:?}")).unwrap();
    let before = &rust[..at];
    let lit = &before[before.rfind("include_bytes!(").unwrap() + "include_bytes!(".len()..];
    let path: String = serde_json::from_str(&lit[..lit.find(')').unwrap()]).unwrap();
    std::fs::read(path).unwrap()
}

/// What the surface embeds is a copy in OUT_DIR written by the device phase from the bytes it
/// verified, never the device cache's file: an output overwritten there after the build (which
/// a plain `cargo build` would not rerun the build script for) does not reach the binary, and
/// the next device phase finds it stale and compiles it again.
#[test]
fn an_output_overwritten_in_the_device_cache_is_never_embedded() {
    let pkg = shader_package("glslang");
    let first = pkg.compile(&pkg.build());
    let good = pkg.embedded_bytes("shaders/b/scale.comp");
    let rust = pkg.rust_surface();
    assert!(
        !rust.contains(first.variant_dir.to_str().unwrap()),
        "the surface includes nothing from the device cache:\n{rust}"
    );
    assert!(
        rust.contains(pkg.out_dir().join("mcpp/payloads").to_str().unwrap()),
        "{rust}"
    );
    let spv = first.variant_dir.join("spirv/shaders/b/scale.comp.spv");
    std::fs::write(&spv, b"\x03\x02\x23\x07\0\0\0\0").unwrap();
    assert_eq!(
        pkg.embedded_bytes("shaders/b/scale.comp"),
        good,
        "without a device phase the embedded bytes are the compiler's"
    );
    let again = pkg.compile(&pkg.build());
    assert_eq!(again.report.ran, ["spirv:shaders/b/scale.comp"]);
    assert_eq!(pkg.embedded_bytes("shaders/b/scale.comp"), good);
    assert_eq!(
        std::fs::read(&spv).unwrap(),
        good,
        "the device cache has the compiler's bytes again"
    );
}

/// glslangValidator and glslc run no shell: a define value that a shell would run is an
/// ordinary (unused) macro.
#[test]
fn a_shell_looking_define_is_never_run_by_the_glsl_compilers() {
    for compiler in ["glslang", "glslc"] {
        let pkg = shader_package(compiler);
        let pwned = pkg.dir.path().join("pwned");
        let manifest = pkg.read("Cargo.toml").replace(
            "defines = { WORKGROUP = \"64\" }",
            &format!(
                "defines = {{ WORKGROUP = \"64\", UNUSED = \"$(touch {})\" }}",
                pwned.display()
            ),
        );
        pkg.write("Cargo.toml", &manifest);
        let outcome = pkg.compile(&pkg.build());
        assert_eq!(outcome.report.ran.len(), 2, "{compiler}");
        assert!(!pwned.exists(), "{compiler} ran the define value");
    }
}

/// An output the device phase cannot delete (a read-only device cache; here, as the tests may
/// run as root, a directory in the output's place) is a file error naming the path (exit 4),
/// not a compiler failure.
#[test]
fn an_output_that_cannot_be_deleted_is_a_file_error_naming_it() {
    let pkg = shader_package("glslang");
    let first = pkg.compile(&pkg.build());
    let spv = first.variant_dir.join("spirv/shaders/b/scale.comp.spv");
    std::fs::remove_file(&spv).unwrap();
    std::fs::create_dir_all(spv.join("in-the-way")).unwrap();
    let e = pkg.build().try_compile().unwrap_err();
    assert_eq!(e.kind, cargo_mcpp::ErrorKind::Io, "{e}");
    assert_eq!(e.exit_code(), 4);
    assert!(e.to_string().contains(&spv.display().to_string()), "{e}");
}

/// A warning the real compiler prints on a successful compile reaches the build's
/// `cargo::warning` lines, naming the action (glslangValidator prints it on stdout after the
/// file name, glslc on stderr); a clean compile and a fresh rerun add none.
#[test]
fn a_compiler_warning_on_success_is_shown_and_a_clean_or_fresh_compile_shows_none() {
    for (compiler, program) in [("glslang", "glslangValidator"), ("glslc", "glslc")] {
        let pkg = shader_package(compiler);
        let clean = pkg.compile(&pkg.build());
        let compiler_lines = |o: &cargo_mcpp::pipeline::Outcome| -> Vec<String> {
            o.cargo
                .warnings()
                .filter(|w| w.starts_with(&format!("{program} ")))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            compiler_lines(&clean),
            Vec::<String>::new(),
            "{compiler}: a clean compile warns nothing"
        );
        pkg.write(
            "shaders/b/scale.comp",
            &SQUARE_COMP.replace(
                "layout(local_size_x",
                "#extension GL_EXT_mcpp_nonexistent : warn\nlayout(local_size_x",
            ),
        );
        let warned = pkg.compile(&pkg.build());
        assert_eq!(
            warned.report.ran,
            ["spirv:shaders/b/scale.comp"],
            "{compiler}"
        );
        let lines = compiler_lines(&warned);
        assert!(
            !lines.is_empty(),
            "{compiler}: no warning in {:?}",
            warned.cargo.lines()
        );
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with(&format!("{program} shaders/b/scale.comp: "))),
            "{compiler}: {lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("GL_EXT_mcpp_nonexistent")),
            "{compiler}: {lines:?}"
        );
        assert!(
            !lines
                .iter()
                .any(|l| l.ends_with("scale.comp") && !l.contains("GL_EXT")),
            "{compiler}: the echoed file name is no warning: {lines:?}"
        );
        assert!(warned
            .cargo
            .lines()
            .iter()
            .any(|l| l.starts_with("cargo::warning=cargo-mcpp: ")
                && l.contains("GL_EXT_mcpp_nonexistent")));
        // Fresh: the compiler does not run, so its warning is not shown again (as the cc crate).
        let fresh = pkg.compile(&pkg.build());
        assert!(fresh.report.ran.is_empty(), "{compiler}");
        assert_eq!(compiler_lines(&fresh), Vec::<String>::new(), "{compiler}");
    }
}

/// The SPIR-V package with `validate = true` and spirv-val behind a counting wrapper.
fn validated_package() -> (Package, cargo_mcpp::Build) {
    let pkg = shader_package("glslang");
    pkg.write(
        "Cargo.toml",
        &format!("{}validate = true\n", pkg.read("Cargo.toml")),
    );
    let mut b = pkg.build();
    b.env_remove("SPIRV_VAL")
        .env_remove("MCPP_SPIRV_VAL")
        .tool("spirv-val", pkg.counting_tool("spirv-val"));
    (pkg, b)
}

#[test]
fn validation_checks_each_module_once_and_a_no_op_runs_no_check() {
    let (pkg, b) = validated_package();
    let outcome = pkg.compile(&b);
    assert_eq!(
        outcome.report.ran,
        [
            "spirv:shaders/a/scale.comp",
            "spirv:shaders/b/scale.comp",
            "spirv-val:shaders/a/scale.comp",
            "spirv-val:shaders/b/scale.comp"
        ],
        "each check after the module it reads"
    );
    let checks = pkg.compiles("spirv-val");
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert!(
        checks
            .iter()
            .all(|c| c.starts_with("--target-env vulkan1.2 ") && c.ends_with(".spv")),
        "{checks:?}"
    );
    let starts = pkg.starts("spirv-val");

    let outcome = pkg.compile(&b);
    assert!(outcome.report.ran.is_empty(), "{:?}", outcome.report.ran);
    assert_eq!(
        pkg.starts("spirv-val"),
        starts,
        "a no-op build started the validator"
    );

    // An edit: the edited shader is compiled and checked again, the other is not.
    let before = pkg.embedded_bytes("shaders/a/scale.comp");
    pkg.write(
        "shaders/a/scale.comp",
        &SCALE_COMP.replace("transform(data[i])", "transform(data[i]) + 1.0"),
    );
    let outcome = pkg.compile(&b);
    assert_eq!(
        outcome.report.ran,
        [
            "spirv:shaders/a/scale.comp",
            "spirv-val:shaders/a/scale.comp"
        ]
    );
    assert_ne!(pkg.embedded_bytes("shaders/a/scale.comp"), before);
    assert_eq!(pkg.starts("spirv-val"), starts + 1);
}

#[test]
fn validation_is_off_by_default() {
    let pkg = shader_package("glslang");
    let mut b = pkg.build();
    b.tool("spirv-val", pkg.counting_tool("spirv-val"));
    let outcome = pkg.compile(&b);
    assert!(
        outcome
            .report
            .ran
            .iter()
            .all(|id| !id.starts_with("spirv-val:")),
        "{:?}",
        outcome.report.ran
    );
    assert_eq!(pkg.starts("spirv-val"), 0);
}

#[test]
fn an_invalid_module_fails_the_build_naming_the_shader_and_the_validators_message() {
    let (pkg, mut b) = validated_package();
    // A compiler that exits 0 and writes text where the module belongs.
    let tools = tempfile::tempdir().unwrap();
    let bad = Shim::install(tools.path(), "glslangValidator");
    bad.output("this is not SPIR-V!!");
    b.tool("glslangValidator", bad.path());
    let e = pkg.refuse(&b);
    assert!(e.contains("spirv-val shaders/a/scale.comp failed"), "{e}");
    assert!(
        e.contains("Invalid SPIR-V magic number") && e.contains("spirv/shaders/a/scale.comp.spv"),
        "the validator's message: {e}"
    );
    assert!(e.contains("set validate = false to skip the check"), "{e}");
    assert!(
        !pkg.out_dir().join("mcpp_shaders.rs").exists(),
        "a failed check blocks the surface"
    );
    // It blocks again on the next build: a failed check leaves no stamp.
    let again = pkg.refuse(&b);
    assert!(again.contains("Invalid SPIR-V magic number"), "{again}");
}

#[test]
fn a_vulkan_loader_older_than_the_entry_is_refused_through_the_fact_channel() {
    let pkg = shader_package("glslang");
    let mut b = pkg.build();
    b.env("MCPP_FACT_VULKAN_LOADER", "1.1");
    let e = pkg.refuse(&b);
    assert!(
        e.contains("the Vulkan API version of this machine's loader is 1.1 (stated by MCPP_FACT_VULKAN_LOADER), and the accelerator entry `vulkan1.2` needs at least 1.2"),
        "{e}"
    );
    assert!(
        e.contains("package.metadata.mcpp.accel") && e.contains("update the Vulkan loader"),
        "{e}"
    );
    assert_eq!(
        pkg.starts("glslangValidator"),
        1,
        "refused before compiling (one --version probe)"
    );
    // `none` states no fact: the build goes on.
    b.env("MCPP_FACT_VULKAN_LOADER", "none");
    pkg.compile(&b);
}

/// `pkg.build()` with the manifest values of `client` (a build.rs's `mcpp_build::Build`)
/// applied through its request, as the engine of a build script applies them.
fn with_client(pkg: &Package, client: &mcpp_build::Build) -> cargo_mcpp::Build {
    let mut b = pkg.build();
    cargo_mcpp::__build_script::apply(&mut b, &client.request().unwrap()).unwrap();
    b
}

#[test]
fn a_define_set_in_build_rs_reaches_the_shader_as_the_manifests_would() {
    let pkg = shader_package("glslang");
    pkg.compile(&pkg.build());
    let manifest_64 = pkg.embedded_bytes("shaders/b/scale.comp");
    let mut client = mcpp_build::Build::new();
    client.define("spirv", "WORKGROUP", "32");
    let outcome = pkg.compile(&with_client(&pkg, &client));
    assert_eq!(outcome.report.ran.len(), 2);
    let build_rs_32 = pkg.embedded_bytes("shaders/b/scale.comp");
    assert_ne!(build_rs_32, manifest_64);
    assert!(
        pkg.compiles("glslangValidator")
            .iter()
            .any(|l| l.contains("-DWORKGROUP=32")),
        "{:?}",
        pkg.compiles("glslangValidator")
    );
    // The same bytes as the manifest's own define of 32.
    let m = pkg
        .read("Cargo.toml")
        .replace("WORKGROUP = \"64\"", "WORKGROUP = \"32\"");
    pkg.write("Cargo.toml", &m);
    pkg.compile(&pkg.build());
    assert_eq!(pkg.embedded_bytes("shaders/b/scale.comp"), build_rs_32);
}

#[test]
fn an_include_directory_set_in_build_rs_is_searched_and_an_edit_in_it_rebuilds() {
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "{}\n[package.metadata.mcpp.spirv]\ncompiler = \"glslang\"\ndefines = {{ WORKGROUP = \"64\" }}\n",
                manifest("inc-pkg", "accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\"]")
            ),
        ),
        ("generated/common.glsl", COMMON_GLSL),
        ("shaders/a/scale.comp", SCALE_COMP),
    ]);
    let mut client = mcpp_build::Build::new();
    client.include("spirv", "generated");
    pkg.compile(&with_client(&pkg, &client));
    let before = pkg.embedded_bytes("shaders/a/scale.comp");
    assert!(!before.is_empty());
    edit(
        &pkg.path("generated/common.glsl"),
        "SCALE = 3.0",
        "SCALE = 5.0",
    );
    let outcome = pkg.compile(&with_client(&pkg, &client));
    assert_eq!(outcome.report.ran.len(), 1);
    assert_ne!(pkg.embedded_bytes("shaders/a/scale.comp"), before);
    // Without it the header is not found: the directory came from build.rs alone.
    assert!(pkg.refuse(&pkg.build()).contains("common.glsl"));
}

#[test]
fn a_flag_starting_with_a_dash_survives_the_request_into_argv_and_bytes() {
    const LATE: &str = "#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer Data { float data[]; };\nvoid main() {\n    uint i = gl_GlobalInvocationID.x;\n#ifdef LATE\n    data[i] = data[i] * 7.0;\n#else\n    data[i] = data[i] + 1.0;\n#endif\n}\n";
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "{}\n[package.metadata.mcpp.spirv]\ncompiler = \"glslang\"\n",
                manifest(
                    "flag-pkg",
                    "accel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\"]"
                )
            ),
        ),
        ("shaders/late.comp", LATE),
    ]);
    pkg.compile(&pkg.build());
    let without = pkg.embedded_bytes("shaders/late.comp");
    let mut client = mcpp_build::Build::new();
    client.flag("spirv", "-DLATE=1");
    pkg.compile(&with_client(&pkg, &client));
    assert_ne!(pkg.embedded_bytes("shaders/late.comp"), without);
    assert!(
        pkg.compiles("glslangValidator")
            .last()
            .is_some_and(|l| l.contains(" -DLATE=1")),
        "{:?}",
        pkg.compiles("glslangValidator")
    );
}

#[test]
fn a_misspelt_key_set_in_build_rs_is_refused_naming_the_call_and_the_valid_keys() {
    let pkg = shader_package("glslang");
    let mut client = mcpp_build::Build::new();
    let line = line!() + 1;
    client.option("spirv", "compilr", "glslc");
    let e = pkg.refuse(&with_client(&pkg, &client));
    assert!(e.contains("unknown field `compilr`"), "{e}");
    assert!(
        e.contains(&format!(
            "--> set by {}:{line}: Build::option(\"spirv\", \"compilr\", ..) (key `package.metadata.mcpp.spirv.compilr`)",
            file!()
        )),
        "{e}"
    );
    assert!(
        e.contains("the keys valid in [package.metadata.mcpp.spirv] are")
            && e.contains("`compiler`"),
        "{e}"
    );
    assert_eq!(
        pkg.starts("glslangValidator"),
        0,
        "refused before any compiler ran"
    );
}
