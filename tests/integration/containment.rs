//! Nothing escapes the package: containment is decided on the resolved path of every file a glob
//! matches and every directory it walks, whatever the spelling; symlinks are followed inside the
//! package, walked once, and refused when they lead out or nowhere; file names that would add a
//! line to generated text are refused.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::os::unix::fs::symlink;

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";

/// A package in `<tmp>/pkg` with a shader outside it at `<tmp>/outside/x.comp`.
fn package(mcpp: &str, files: &[(&str, &str)]) -> Package {
    let mut all = vec![("Cargo.toml", manifest("contain", mcpp))];
    all.extend(files.iter().map(|(p, t)| (*p, t.to_string())));
    let borrowed: Vec<(&str, &str)> = all.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let pkg = Package::new(&borrowed);
    std::fs::create_dir_all(pkg.dir.path().join("outside")).unwrap();
    std::fs::write(pkg.dir.path().join("outside/x.comp"), COMP).unwrap();
    pkg
}

#[test]
fn a_glob_spelling_its_way_out_of_the_package_is_refused_naming_the_glob() {
    for glob in [
        ".[.]/outside/*.comp",
        ".?/outside/*.comp",
        ".*/outside/*.comp",
        "../outside/*.comp",
        "s/../../outside/*.comp",
    ] {
        let pkg = package(
            &format!("accel = \"vulkan\"\nsources = [\"{glob}\"]"),
            &[("s/y.comp", COMP)],
        );
        let e = pkg.refuse(&pkg.build());
        assert!(
            e.contains(&format!("sources entry '{glob}' leaves the package")),
            "{glob}: {e}"
        );
        assert!(
            e.contains("package.metadata.mcpp.sources[0]"),
            "{glob}: {e}"
        );
        assert!(
            e.contains("resolves to") && e.contains("outside"),
            "{glob}: {e}"
        );
        assert_eq!(
            pkg.starts("glslangValidator"),
            0,
            "{glob}: nothing compiled"
        );
    }
    // A `..` that stays inside is no escape: the resolved path decides, not the spelling.
    let pkg = package(
        "accel = \"vulkan\"\nsources = [\"s/../s/*.comp\"]",
        &[("s/y.comp", COMP)],
    );
    let out = pkg.compile(&pkg.build());
    assert_eq!(out.payloads, 1);
    assert!(
        pkg.rust_surface().contains("source: \"s/y.comp\""),
        "{}",
        pkg.rust_surface()
    );
}

#[test]
fn every_glob_key_and_include_directory_is_held_to_the_same_rule() {
    // cxx-sources and the island's lists go through the one expander.
    let pkg = package("accel = \"\"\ncxx-sources = [\".[.]/outside/*.comp\"]", &[]);
    let e = pkg.refuse(pkg.build().no_accel());
    assert!(
        e.contains("`.[.]/outside/*.comp` leaves the package"),
        "{e}"
    );
    assert!(e.contains("package.metadata.mcpp.cxx-sources[0]"), "{e}");
    let pkg = package(
        "accel = \"\"\n[package.metadata.mcpp.island]\nsources = [\".*/outside/*.comp\"]",
        &[],
    );
    let e = pkg.refuse(pkg.build().no_accel());
    assert!(
        e.contains("`.*/outside/*.comp` leaves the package")
            && e.contains("package.metadata.mcpp.island.sources[0]"),
        "{e}"
    );
    // A relative include directory resolving outside (through `..` or a symlink) is refused.
    let pkg = package("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nincludes = [\"../outside\"]", &[("s/y.comp", COMP)]);
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("include directory `../outside` leaves the package"),
        "{e}"
    );
    assert!(e.contains("package.metadata.mcpp.spirv.includes[0]"), "{e}");
    let pkg = package("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nincludes = [\"inc\"]", &[("s/y.comp", COMP)]);
    symlink(pkg.dir.path().join("outside"), pkg.path("inc")).unwrap();
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("include directory `inc` leaves the package: it resolves to"),
        "{e}"
    );
}

#[test]
fn a_symlink_loop_is_walked_once() {
    let pkg = package(
        "accel = \"vulkan\"\nsources = [\"shaders/**/*.comp\"]",
        &[("shaders/x.comp", COMP)],
    );
    symlink(".", pkg.path("shaders/loop")).unwrap();
    symlink(".", pkg.path("shaders/loop2")).unwrap();
    let out = pkg.compile(&pkg.build());
    assert_eq!(out.payloads, 1);
    assert_eq!(
        pkg.starts("glslangValidator"),
        2,
        "the version probe and one compile"
    );
    let rust = pkg.rust_surface();
    assert!(
        rust.contains("source: \"shaders/x.comp\"") && !rust.contains("loop"),
        "{rust}"
    );
}

#[test]
fn a_symlink_leaving_the_package_is_refused_naming_link_and_target() {
    let pkg = package(
        "accel = \"vulkan\"\nsources = [\"shaders/**/*.comp\"]",
        &[("shaders/y.comp", COMP)],
    );
    symlink(
        pkg.dir.path().join("outside/x.comp"),
        pkg.path("shaders/x.comp"),
    )
    .unwrap();
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains(
            "sources entry 'shaders/**/*.comp' leaves the package: `shaders/x.comp` resolves to"
        ),
        "{e}"
    );
    assert!(e.contains("outside/x.comp"), "{e}");
    // A linked directory leading out is refused when the walk enters it, matching or not.
    let pkg = package(
        "accel = \"vulkan\"\nsources = [\"shaders/**/*.comp\"]",
        &[("shaders/y.comp", COMP)],
    );
    symlink(pkg.dir.path().join("outside"), pkg.path("shaders/vendor")).unwrap();
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("leaves the package: `shaders/vendor` resolves to"),
        "{e}"
    );
    // A symlink to a file inside the package is followed, and the file compiled once.
    let pkg = package(
        "accel = \"vulkan\"\nsources = [\"shaders/*.comp\"]",
        &[("shaders/y.comp", COMP)],
    );
    symlink("y.comp", pkg.path("shaders/z.comp")).unwrap();
    assert_eq!(pkg.compile(&pkg.build()).payloads, 1);
}

#[test]
fn a_dangling_symlink_matched_by_a_glob_is_refused_by_name() {
    let pkg = package(
        "accel = \"vulkan\"\nsources = [\"shaders/*.comp\"]",
        &[("shaders/y.comp", COMP)],
    );
    symlink("gone.comp", pkg.path("shaders/x.comp")).unwrap();
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("sources entry 'shaders/*.comp' matches `shaders/x.comp`, a symbolic link to `gone.comp`, which does not exist"), "{e}");
    assert!(
        e.contains("package.metadata.mcpp.sources[0]") && e.contains("help: remove the link"),
        "{e}"
    );
}

#[test]
fn a_file_name_with_a_control_character_is_refused_and_never_reaches_generated_text() {
    let pkg = package(
        "accel = \"vulkan\"\nsources = [\"shaders/*.comp\"]",
        &[("shaders/y.comp", COMP)],
    );
    std::fs::write(pkg.path("shaders/x\n#include <evil>\n.comp"), COMP).unwrap();
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains(
            "matches `shaders/x\\n#include <evil>\\n.comp`, a file name with a control character"
        ),
        "{e}"
    );
    assert!(!e.contains("x\n#include"), "the name is shown escaped: {e}");
    assert!(!pkg.out_dir().join("mcpp_shaders.rs").exists());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Any glob of dots, wildcards and names either matches files inside the package only, or
    /// is refused; it never yields the file outside.
    #[test]
    fn no_glob_yields_a_file_outside_the_package(parts in proptest::collection::vec("(\\.\\.|\\.|\\.\\[\\.\\]|\\.\\?|\\.\\*|\\*|\\*\\*|s|outside|pkg)", 1..5)) {
        let pkg = package("accel = \"vulkan\"\nsources = [\"s/*.comp\"]", &[("s/y.comp", COMP)]);
        let glob = format!("{}/*.comp", parts.join("/"));
        let m = cargo_mcpp::config::manifest::Manifest::read(&pkg.path("Cargo.toml")).unwrap();
        match cargo_mcpp::sources::expand_globs(&m, "k", std::slice::from_ref(&glob)) {
            Ok((files, _)) => {
                let root = std::fs::canonicalize(pkg.path("")).unwrap();
                for (p, rel) in files {
                    proptest::prop_assert!(std::fs::canonicalize(&p).unwrap().starts_with(&root), "{glob} gave {}", p.display());
                    proptest::prop_assert!(!rel.contains(".."), "{glob} named {rel}");
                }
            }
            Err(e) => {
                let t = e.to_string();
                proptest::prop_assert!(t.contains("leaves the package") || t.contains("matches no file") || t.contains("not a valid glob"), "{glob}: {t}");
            }
        }
    }
}

/// An include directory written in a rule's `flags` is held to the rule of `includes`: every
/// spelling (`-I<dir>`, `-I <dir>`, `-isystem`, `-iquote`, `-idirafter`, `/I`,
/// `--include-path`, `--include-path=`) of a relative directory leaving the package is refused
/// at the flag's key; an absolute one, as in `includes`, is an explicit choice.
#[test]
fn an_include_directory_in_flags_is_held_to_the_rule_of_includes() {
    for (rule, flags) in [
        ("spirv", "\"-I../outside\""),
        ("spirv", "\"-g\", \"-I\", \"../outside\""),
        ("slang", "\"-I\", \"../outside\""),
        ("cuda", "\"-isystem\", \"../outside\""),
        ("cuda", "\"-iquote../outside\""),
        ("hip", "\"-idirafter\", \"../outside\""),
        ("cuda", "\"--include-path=../outside\""),
        ("cuda", "\"--include-path\", \"../outside\""),
        ("cuda", "\"/I../outside\""),
    ] {
        let pkg = package(&format!("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.{rule}]\nflags = [{flags}]"), &[("s/y.comp", COMP)]);
        let e = pkg.refuse(&pkg.build());
        assert!(
            e.contains("include directory `../outside` leaves the package"),
            "{rule} {flags}: {e}"
        );
        assert!(
            e.contains(&format!("package.metadata.mcpp.{rule}.flags[")),
            "{rule} {flags}: {e}"
        );
        assert!(
            e.contains("export-includes"),
            "the way out names the dependency form: {e}"
        );
    }
    // The host C++ lane's flags too.
    let pkg = package("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.cxx]\nflags = [\"-isystem\", \"../outside\"]", &[("s/y.comp", COMP)]);
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("include directory `../outside` leaves the package")
            && e.contains("package.metadata.mcpp.cxx.flags[1]"),
        "{e}"
    );
    // Inside the package, or absolute: accepted (the build compiles).
    let pkg = package("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nflags = [\"-Iinc\"]", &[("s/y.comp", COMP), ("inc/a.glsl", "")]);
    pkg.compile(&pkg.build());
    let outside = pkg.dir.path().join("outside");
    let pkg = package(&format!("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nflags = [\"-I{}\"]", outside.display()), &[("s/y.comp", COMP)]);
    pkg.compile(&pkg.build());
}
