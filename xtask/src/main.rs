//! `cargo xtask tidy`: repository checks that are not compilation: every module under `src/`
//! is named in ARCHITECTURE.md, no `todo!`/`unimplemented!` in shipped code, and every
//! `Command::new` sits in the modules allowed to start processes. `tests/tidy.rs` runs the
//! same checks under `cargo test`.

use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default();
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
        _ => {
            eprintln!("usage: cargo xtask tidy");
            std::process::exit(2);
        }
    }
}

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
            problems.push(format!("{rel} is not named in ARCHITECTURE.md (as `{shown}`)"));
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        if text.contains("todo!(") || text.contains("unimplemented!(") {
            problems.push(format!("{rel} has a todo!/unimplemented! in shipped code"));
        }
        let may_spawn = ["graph.rs", "tool.rs", "cli.rs", "fetch.rs"].iter().any(|ok| rel.ends_with(ok)) || rel.contains("/bin/");
        if text.contains("Command::new(") && !may_spawn {
            problems.push(format!("{rel} starts a process; only graph.rs, tool.rs, cli.rs and fetch.rs may (argv, never a shell)"));
        }
        if text.contains("\"sh\"") || text.contains("\"-c\"") && text.contains("bash") {
            problems.push(format!("{rel} seems to run a shell"));
        }
    }
    // The build.rs client: no todo!, and its one process is the engine (argv).
    let mut client = Vec::new();
    collect(&root.join("mcpp-build/src"), &mut client);
    for f in client {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        if text.contains("todo!(") || text.contains("unimplemented!(") {
            problems.push(format!("{} has a todo!/unimplemented! in shipped code", f.display()));
        }
        if text.contains("\"sh\"") {
            problems.push(format!("{} seems to run a shell", f.display()));
        }
    }
    problems
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
