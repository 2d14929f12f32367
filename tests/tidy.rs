//! `cargo xtask tidy` under `cargo test`: ARCHITECTURE.md names every module, no stubs, and
//! processes are started only where the architecture says.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

#[test]
fn tidy() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--package", "xtask", "--", "tidy"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo run xtask");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// README.md's manifest reference is the registry's and the package keys' (what `cargo xtask
/// codegen` writes), checked here in process as well.
#[test]
fn the_readme_manifest_reference_is_generated_from_the_registry() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let region = cargo_mcpp::reference::region(&readme).expect("README.md has the generated region");
    assert_eq!(region, cargo_mcpp::reference::manifest_reference(), "README.md's manifest reference is stale: run `cargo xtask codegen`");
}
