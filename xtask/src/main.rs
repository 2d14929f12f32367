//! `cargo xtask tidy`: repository checks that are not compilation: every module under `src/`
//! is named in ARCHITECTURE.md, no `todo!`/`unimplemented!` in shipped code, every
//! `Command::new` sits in the modules allowed to start processes, cargo directives are spelled
//! and printed only by `cargo_output.rs`, and the guide's generated reference pages
//! (`docs/src/reference/`) are what `cargo xtask codegen` writes. The test
//! `the_repository_is_tidy` runs the same checks under `cargo test --workspace`, in process: a
//! `cargo run` from a test would build this crate again with other features.
//!
//! `cargo xtask codegen`: rewrites the guide's reference pages (`cargo_mcpp::reference::pages`)
//! from the registry, the package keys and the environment list, each only when it changed.

use std::path::{Path, PathBuf};

mod layers;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    match std::env::args().nth(1).as_deref() {
        Some("tidy") => {
            let problems = tidy(&root);
            for p in &problems {
                eprintln!("tidy: {p}");
            }
            if !problems.is_empty() {
                std::process::exit(1);
            }
            eprintln!("tidy: ok");
        }
        Some("codegen") => {
            for (rel, text) in cargo_mcpp::reference::pages() {
                let path = root.join(rel);
                if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
                    eprintln!("codegen: {rel} up to date");
                    continue;
                }
                // Written atomically: a temporary file beside it, then renamed over it.
                let tmp = path.with_extension("md.tmp");
                let written = std::fs::create_dir_all(path.parent().unwrap_or(&root))
                    .and_then(|()| std::fs::write(&tmp, &text))
                    .and_then(|()| std::fs::rename(&tmp, &path));
                if let Err(e) = written {
                    eprintln!("codegen: cannot write {}: {e}", path.display());
                    std::process::exit(1);
                }
                eprintln!("codegen: {rel} rewritten");
            }
        }
        _ => {
            eprintln!("usage: cargo xtask tidy | cargo xtask codegen");
            std::process::exit(2);
        }
    }
}

/// The modules that start processes (ARCHITECTURE.md "Invariants"): actions, tool probes,
/// `cargo build`, `cargo metadata` (through the cargo_metadata crate), pip and `cargo fetch`,
/// `cargo mcpp pack`'s release build (this executable), patchelf, wixl and wix.
const SPAWNS: &[&str] = &[
    "src/engine/graph.rs",
    "src/tool/process.rs",
    "src/cli/build.rs",
    "src/cli/locate.rs",
    "src/toolchain_package/fetch.rs",
    "src/cli/pack.rs",
    "src/pack/appimage.rs",
    "src/pack/msi.rs",
    "src/tool/env_script.rs",
];

/// The one file that runs a shell: a rule's `env-script` must be sourced, by `bash -c` with a
/// fixed command string, the script and its arguments argv.
const SOURCES_A_SCRIPT: &str = "src/tool/env_script.rs";

/// The problems found in the repository at `root`.
pub fn tidy(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_default();
    let mut files = Vec::new();
    collect(&root.join("src"), &mut files);
    for f in files {
        let rel = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        let shown = rel.trim_start_matches("src/").to_string();
        if !architecture.contains(&format!("`{shown}`")) {
            problems.push(format!(
                "{rel} is not named in ARCHITECTURE.md (as `{shown}`)"
            ));
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        if text.contains("todo!(") || text.contains("unimplemented!(") {
            problems.push(format!("{rel} has a todo!/unimplemented! in shipped code"));
        }
        let may_spawn = SPAWNS.iter().any(|ok| rel == *ok) || rel.contains("/bin/");
        if text.contains("Command::new(") && !may_spawn {
            problems.push(format!(
                "{rel} starts a process; only {} may (argv, never a shell)",
                SPAWNS.join(", ")
            ));
        }
        if rel != SOURCES_A_SCRIPT
            && (text.contains("\"sh\"") || text.contains("\"-c\"") && text.contains("bash"))
        {
            problems.push(format!("{rel} seems to run a shell"));
        }
        problems.extend(directive_doors(&rel, &text));
    }
    problems.extend(generated_pages(root));
    problems.extend(layering(root));
    // The build.rs client: no todo!, and its one process is the engine (argv).
    let mut client = Vec::new();
    collect(&root.join("mcpp-build/src"), &mut client);
    for f in client {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        if text.contains("todo!(") || text.contains("unimplemented!(") {
            problems.push(format!(
                "{} has a todo!/unimplemented! in shipped code",
                f.display()
            ));
        }
        if text.contains("\"sh\"") {
            problems.push(format!("{} seems to run a shell", f.display()));
        }
    }
    problems
}

/// Cargo directives only through `CargoOutput` (src/output/cargo_output.rs): no other module has a
/// string literal that starts a directive (`"cargo:` or `"cargo::`), builds a warning directive
/// itself, or prints to standard output, which a build script's cargo reads as directives
/// (the command line, `src/cli/`, prints its own answers: `why tool`, `pack --dry-run`'s plan
/// and the engine handshake, no directive; the
/// test-only compiler shim `mcpp-shim/src/main.rs` prints what the compiler it plays prints).
pub fn directive_doors(rel: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if rel.ends_with("src/output/cargo_output.rs") {
        return problems;
    }
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if code.contains("\"cargo:") {
            problems.push(format!("{rel}:{}: spells a cargo directive; directives go through cargo_output::CargoOutput", n + 1));
        }
        if code.contains("warning_directive(") {
            problems.push(format!(
                "{rel}:{}: builds a warning directive; use CargoOutput::warning",
                n + 1
            ));
        }
        let prints = ["println!(", "print!("].iter().any(|m| macro_call(code, m));
        if prints && !rel.starts_with("src/cli/") && !rel.ends_with("mcpp-shim/src/main.rs") {
            problems.push(format!("{rel}:{}: prints to standard output, which cargo reads as directives; use CargoOutput (or eprintln!)", n + 1));
        }
    }
    problems
}

/// Whether `code` calls the macro `name` (`println!(`), not one whose name ends with it
/// (`eprintln!(`).
fn macro_call(code: &str, name: &str) -> bool {
    code.match_indices(name)
        .any(|(i, _)| !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// Each generated reference page of the guide must be what `cargo xtask codegen` writes.
fn generated_pages(root: &Path) -> Vec<String> {
    cargo_mcpp::reference::pages()
        .into_iter()
        .filter(|(rel, text)| {
            std::fs::read_to_string(root.join(rel)).ok().as_deref() != Some(text.as_str())
        })
        .map(|(rel, _)| format!("{rel} differs from the code: run `cargo xtask codegen`"))
        .collect()
}

/// The layering of `src/` against ARCHITECTURE.md's `layers` block (see `layers.rs`).
fn layering(root: &Path) -> Vec<String> {
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_default();
    let Some(spec) = layers::parse_layers(&architecture) else {
        return vec![
            "ARCHITECTURE.md has no ```layers block (the module layers, top first)".into(),
        ];
    };
    let src = root.join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    files.sort();
    let modules: Vec<layers::Module> = files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&src).ok()?.to_str()?.replace('\\', "/");
            Some(layers::Module {
                path: layers::module_path(&rel)?,
                file: format!("src/{rel}"),
                text: std::fs::read_to_string(f).unwrap_or_default(),
            })
        })
        .collect();
    layers::check(&modules, &spec)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo xtask tidy` on this repository, in process.
    #[test]
    fn the_repository_is_tidy() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let problems = tidy(root);
        assert!(
            problems.is_empty(),
            "cargo xtask tidy:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn a_directive_outside_cargo_output_is_refused() {
        let spelled = "fn f() {\n    println!(\"cargo::rustc-cfg=x\");\n}\n";
        let problems = directive_doors("src/pipeline.rs", spelled);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("src/pipeline.rs:2: spells a cargo directive"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("prints to standard output"),
            "{problems:?}"
        );
        assert!(directive_doors("src/output/cargo_output.rs", spelled).is_empty());
        assert_eq!(
            directive_doors("src/cli/why.rs", "let d = warning_directive(&m);\n").len(),
            1
        );
        // The command line prints its own answers; no other module prints.
        assert!(directive_doors("src/cli/why.rs", "println!(\"  answer: x\");\n").is_empty());
        assert_eq!(
            directive_doors("src/plan/lanes.rs", "println!(\"x\");\n").len(),
            1
        );
        // Comments, stderr and help text that mentions a directive mid-string are fine.
        assert!(directive_doors("src/rules/cuda/mod.rs", "// cargo::warning\neprintln!(\"x\");\nlet h = \"e.g. cargo::rustc-link-lib=static=cudart\";\n").is_empty());
    }
}
