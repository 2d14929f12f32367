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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// README.md's manifest reference is the registry's and the package keys' (what `cargo xtask
/// codegen` writes), checked here in process as well.
#[test]
fn the_readme_manifest_reference_is_generated_from_the_registry() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let region =
        cargo_mcpp::reference::region(&readme).expect("README.md has the generated region");
    assert_eq!(
        region,
        cargo_mcpp::reference::manifest_reference(),
        "README.md's manifest reference is stale: run `cargo xtask codegen`"
    );
}

/// Every README section the generated manifest reference sends the reader to (`see "Title"`,
/// `README.md "Title"`) is a heading of README.md.
#[test]
fn every_section_the_manifest_reference_names_exists() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let headings: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    let reference = cargo_mcpp::reference::manifest_reference();
    let mut named = Vec::new();
    for marker in ["see \"", "README.md \"", "see cargo-mcpp's README, \""] {
        for (i, _) in reference.match_indices(marker) {
            let rest = &reference[i + marker.len()..];
            if let Some(end) = rest.find('"') {
                named.push(rest[..end].to_string());
            }
        }
    }
    for title in &named {
        assert!(headings.contains(&title.as_str()), "the manifest reference names the README section \"{title}\", which is no heading of README.md ({headings:?})");
    }
}
