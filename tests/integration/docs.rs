//! The snippets of README.md, CONTRIBUTING.md and the guide (`docs/src/`): every ```toml block
//! parses, and one that holds `[package.metadata.mcpp]` is a manifest cargo-mcpp accepts
//! (`Manifest::parse`, the check of its keys, then every rule's own option check); every ```rust block is marked
//! `rust,ignore` (a fragment of a user's crate: it reaches a module generated into a build's
//! `OUT_DIR`, so it cannot compile on its own) and its section says why, with the words
//! "not compiled".
#![allow(clippy::disallowed_methods)] // tests read files freely

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A fenced block: the document, the line of its opening fence, its info string, its text, and
/// the text of its section before it (since the last heading).
struct Block {
    doc: PathBuf,
    line: usize,
    info: String,
    text: String,
    section_before: String,
}

fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let root = Path::new(ROOT);
    let mut out = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    walk(&root.join("docs/src"), &mut out);
    out.sort();
    out
}

fn blocks(doc: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let mut out = Vec::new();
    let mut section = String::new();
    let mut open: Option<(usize, String, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((n + 1, info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => {
                let (line, info, body) = open.take().unwrap();
                out.push(Block {
                    doc: doc.to_path_buf(),
                    line,
                    info,
                    text: body,
                    section_before: section.clone(),
                });
            }
            (Some((_, _, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) if line.starts_with('#') => section.clear(),
            (None, None) => {
                section.push_str(line);
                section.push('\n');
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: a code fence is not closed",
        doc.display()
    );
    out
}

fn all_blocks() -> Vec<Block> {
    documents().iter().flat_map(|d| blocks(d)).collect()
}

/// A TOML snippet as a manifest: its `[package]` given a name when it has none, so that a
/// `[package.metadata.mcpp]` table alone is checked as the table of a package.
fn as_manifest(mut table: toml::Table) -> String {
    let package = table
        .entry("package")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(p) = package {
        p.entry("name")
            .or_insert_with(|| toml::Value::String("snippet".into()));
    }
    toml::to_string(&table).unwrap()
}

/// The relative directories the `includes` lists of a snippet's `[package.metadata.mcpp.*]`
/// tables name.
fn includes(table: &toml::Table) -> Vec<String> {
    let Some(mcpp) = table
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("mcpp"))
        .and_then(|m| m.as_table())
    else {
        return Vec::new();
    };
    mcpp.values()
        .filter_map(|v| v.get("includes").and_then(|i| i.as_array()))
        .flatten()
        .filter_map(|i| i.as_str())
        .filter(|i| !Path::new(i).is_absolute())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_toml_snippet_parses_and_every_mcpp_table_is_accepted() {
    let mut problems = Vec::new();
    let mut manifests = 0;
    for b in all_blocks().into_iter().filter(|b| b.info == "toml") {
        let at = format!("{}:{}", b.doc.display(), b.line);
        let table: toml::Table = match toml::from_str(&b.text) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("{at}: not TOML: {e}"));
                continue;
            }
        };
        let has_mcpp = table
            .get("package")
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.get("mcpp"))
            .is_some();
        if !has_mcpp {
            continue;
        }
        manifests += 1;
        // A snippet names include directories of its own package: they exist there.
        let dir = tempfile::tempdir().unwrap();
        for include in includes(&table) {
            std::fs::create_dir_all(dir.path().join(include)).unwrap();
        }
        let text = as_manifest(table);
        let path = dir.path().join("Cargo.toml");
        match cargo_mcpp::config::manifest::Manifest::parse(&path, &text) {
            Err(e) => problems.push(format!("{at}: refused: {e}")),
            Ok(m) => {
                // The guide's example rule crate is registered, as its users' build scripts do.
                let registered =
                    cargo_mcpp::rules::external::RegisteredRules::new(vec![std::sync::Arc::new(
                        mcpp_spvasm::Spvasm,
                    )]);
                let rules = cargo_mcpp::rules::registry_with(&registered).unwrap();
                let names: Vec<&str> = rules.iter().map(|r| r.name()).collect();
                for e in m.check_keys(&names) {
                    problems.push(format!("{at}: refused: {e}"));
                }
                for rule in rules {
                    if let Err(e) = cargo_mcpp::Error::all(rule.read_options(&m).1) {
                        problems.push(format!("{at}: [{}] refused: {e}", rule.name()));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(
        manifests >= 10,
        "only {manifests} manifest snippets were found: is the extraction right?"
    );
}

#[test]
fn every_rust_snippet_is_marked_not_compiled_with_a_reason() {
    let mut problems = Vec::new();
    for b in all_blocks()
        .into_iter()
        .filter(|b| b.info == "rust" || b.info.starts_with("rust,"))
    {
        let at = format!("{}:{}", b.doc.display(), b.line);
        if b.info != "rust,ignore" {
            problems.push(format!("{at}: ```{} (write ```rust,ignore and say why in the text: \"not compiled here: ...\")", b.info));
        } else if !b.section_before.contains("not compiled") {
            problems.push(format!("{at}: ```rust,ignore without a reason in its section (write \"not compiled here: ...\" before it)"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// README.md is a front page: at most 300 lines, with the quick start (`cargo mcpp new`,
/// `cargo mcpp build`, `cargo run`) in its first 80.
#[test]
fn the_readme_is_short_and_starts_with_the_quick_start() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    assert!(
        lines.len() <= 300,
        "README.md has {} lines; move detail into the guide",
        lines.len()
    );
    let first = lines[..lines.len().min(80)].join("\n");
    for command in [
        "## Quick start",
        "cargo mcpp new",
        "cargo mcpp build",
        "cargo run",
    ] {
        assert!(
            first.contains(command),
            "README.md's first 80 lines lack `{command}`"
        );
    }
}
