//! The documentation's checks under `cargo test` (the repository checks of `cargo xtask tidy`
//! run as that crate's own test, `the_repository_is_tidy`, built with the workspace): the
//! guide's generated reference pages are current, every environment variable the code reads by
//! name is on the environment page, the pages the reference links to exist, the documents'
//! relative links resolve, and no document a user reads uses words of our own process.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel))
        .unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
}

/// Every file under `dir` (relative to the repository root) whose name ends with one of `exts`.
fn files(dir: &str, exts: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, exts, out);
            } else if exts.iter().any(|x| p.to_string_lossy().ends_with(x)) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(ROOT).join(dir), exts, &mut out);
    out.sort();
    out
}

/// The guide's reference pages are what `cargo xtask codegen` writes from the code, checked
/// here in process as well.
#[test]
fn the_reference_pages_are_generated_from_the_code() {
    for (rel, text) in cargo_mcpp::reference::pages() {
        assert!(
            read(rel) == text,
            "{rel} is stale: run `cargo xtask codegen`"
        );
    }
}

/// The anchor mdBook gives a heading: lower case, spaces as `-`, only letters, digits, `-`
/// and `_` kept.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of the headings of a markdown file (outside code fences).
fn anchors(text: &str) -> Vec<String> {
    let mut fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every section a key's meaning names (`see "Title"`) is one the generated page links, and
/// each link's page and heading exist in the guide.
#[test]
fn every_section_the_manifest_reference_names_exists() {
    let reference = cargo_mcpp::reference::manifest_reference();
    for (i, _) in reference.match_indices("see \"") {
        let rest = &reference[i + 5..];
        let title = &rest[..rest.find('"').unwrap()];
        assert!(
            cargo_mcpp::reference::SECTIONS
                .iter()
                .any(|(t, _)| *t == title),
            "the manifest reference names the section \"{title}\", which reference::SECTIONS does not link"
        );
    }
    for (title, target) in cargo_mcpp::reference::SECTIONS {
        let (page, frag) = target.split_once('#').unwrap_or((target, ""));
        let path = format!("docs/src/reference/{page}");
        let text = read(&path);
        assert!(
            frag.is_empty() || anchors(&text).iter().any(|a| a == frag),
            "\"{title}\" links {target}, and {path} has no heading with the anchor #{frag}"
        );
    }
}

/// The relative links of README.md, CONTRIBUTING.md and the guide lead to files that exist, and
/// a link into a page's section (`page.md#anchor`) to one of its headings.
#[test]
fn relative_links_of_the_documents_resolve() {
    let mut docs = vec![
        Path::new(ROOT).join("README.md"),
        Path::new(ROOT).join("CONTRIBUTING.md"),
    ];
    docs.extend(files("docs/src", &[".md"]));
    let mut broken = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with('#') || target.contains(' ') {
                continue;
            }
            let (file, frag) = target.split_once('#').unwrap_or((target, ""));
            let path = doc.parent().unwrap().join(file);
            if !path.exists() {
                broken.push(format!("{}: {target}", doc.display()));
            } else if !frag.is_empty() && file.ends_with(".md") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if !anchors(&text).iter().any(|a| a == frag) {
                    broken.push(format!("{}: {target} (no such heading)", doc.display()));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to files that do not exist: {broken:#?}"
    );
}

/// The names of the environment variables a source file reads by name: string literals passed
/// to an environment read (`env.get("X")`, `std::env::var_os("X")`, ...; a closure `get("X")`
/// that reads a header is no environment read), `const X_ENV: &str =
/// "NAME"` constants, and the literals of `env_vars: &[..]` and `root_vars: &[..]` lists
/// (the tools' and toolkits' variables; a `ROOT/subdir` entry counts as `ROOT`).
fn variables_read(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let name_at = |s: &str| -> Option<String> {
        let s = s.strip_prefix('"')?;
        let end = s.find(['"', '/'])?;
        let name = &s[..end];
        (!name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && name.starts_with(|c: char| c.is_ascii_uppercase()))
        .then(|| name.to_string())
    };
    for call in [
        "get(",
        "get_os(",
        "get_nonempty(",
        "get_os_untracked(",
        "var(",
        "var_os(",
    ] {
        for (i, _) in text.match_indices(call) {
            // A method (`env.get(`) or a path (`std::env::var(`), not a local closure (`get(`).
            if !text[..i].ends_with(['.', ':']) {
                continue;
            }
            names.extend(name_at(text[i + call.len()..].trim_start()));
        }
    }
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if let Some(rest) = code
            .strip_prefix("pub const ")
            .or_else(|| code.strip_prefix("const "))
        {
            if let Some((name, value)) = rest.split_once(": &str = ") {
                if name.ends_with("_ENV") {
                    names.extend(name_at(value.trim()));
                }
            }
        }
    }
    for list in ["env_vars: &[", "root_vars: &[", "_ENV_FLAGS: &[&str] = &["] {
        for (i, _) in text.match_indices(list) {
            let rest = &text[i + list.len()..];
            let items = &rest[..rest.find(']').unwrap_or(0)];
            names.extend(items.split(',').filter_map(|item| name_at(item.trim())));
        }
    }
    names
}

#[test]
fn variables_read_are_found_in_code() {
    let code = "let a = env.get_nonempty(\"MCPP_HOME\");\nlet b = std::env::var_os(PROGRESS_ENV);\nlet h = get(\"HIP_VERSION_MAJOR\");\npub const LAUNCHER_ENV: &str = \"MCPP_LAUNCHER\";\nroot_vars: &[\"CMPLR_ROOT\", \"ONEAPI_ROOT/compiler/latest\"],\nlet c = map.get(\"lowercase\");\n";
    assert_eq!(
        variables_read(code),
        ["MCPP_HOME", "MCPP_LAUNCHER", "CMPLR_ROOT", "ONEAPI_ROOT"]
    );
}

/// Every environment variable a module of `src/` or `mcpp-build/src/` reads by name is on the
/// generated environment page (the test-only compiler shim, `src/bin/`, is no part of the tool).
#[test]
fn every_environment_variable_read_is_documented() {
    let documented = cargo_mcpp::reference::environment_names();
    let mut missing = Vec::new();
    for f in files("src", &[".rs"])
        .into_iter()
        .chain(files("mcpp-build/src", &[".rs"]))
    {
        if f.components().any(|c| c.as_os_str() == "bin") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // Unit tests set variables of their own; only the code above them reads the environment.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for name in variables_read(code) {
            if !documented.contains(&name) {
                missing.push(format!("{name} ({})", f.display()));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "environment variables read but not in reference::ENVIRONMENT (the guide's environment page): {missing:#?}"
    );
}

/// Words of our own process that a user cannot follow: issue numbers, the names and places of
/// design documents, working notes. Each is (what to look for, lower case; why it is refused).
const PROCESS_WORDS: &[(&str, &str)] = &[
    ("issue #", "an issue number"),
    ("issue \"", "an issue title"),
    ("fresh-user", "a word of our process"),
    ("fresh user pass", "a word of our process"),
    ("upstream-facts", "a design document's name"),
    ("shared/seeds", "a path outside the repository"),
    ("../shared", "a path outside the repository"),
    ("mcpp:plugins", "a design document's name"),
    ("session", "a word of our process"),
];

/// The process words in `text`: `PROCESS_WORDS`, `issue N`/`issues N`, `seed N`, and the
/// design documents' file names (`000_` to `003_` then hex digits).
fn process_words(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut found: Vec<String> = PROCESS_WORDS
        .iter()
        .filter(|(w, _)| lower.contains(w))
        .map(|(w, why)| format!("`{w}` ({why})"))
        .collect();
    for word in ["issue ", "issues ", "seed ", "seeds "] {
        for (i, _) in lower.match_indices(word) {
            let before_ok = !lower[..i].ends_with(|c: char| c.is_alphanumeric());
            if before_ok && lower[i + word.len()..].starts_with(|c: char| c.is_ascii_digit()) {
                found.push(format!(
                    "`{}` (an issue or design document number)",
                    &text[i..i + word.len() + 1]
                ));
            }
        }
    }
    for n in ["000_", "001_", "002_", "003_"] {
        for (i, _) in lower.match_indices(n) {
            let hex = lower[i + 4..]
                .chars()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            if hex >= 6 {
                found.push(format!("`{n}...` (a design document's file name)"));
            }
        }
    }
    found
}

#[test]
fn process_words_are_found() {
    assert_eq!(
        process_words("the figures of Issue 14 and issue #3").len(),
        2
    );
    assert_eq!(
        process_words("see ../shared/seeds/000_e1d220ffe120366c.txt").len(),
        3
    );
    assert_eq!(process_words("a fresh-user finding (seed 002)").len(), 2);
    assert!(process_words("tissue 3, the issue at hand, 0001_ab").is_empty());
}

/// README.md, CONTRIBUTING.md, ARCHITECTURE.md (the guide includes it), the guide, the code's
/// documentation and messages, and the templates of generated files speak to users: no words
/// of our own process.
#[test]
fn documents_a_user_reads_have_no_process_words() {
    let mut paths: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"]
        .iter()
        .map(|f| Path::new(ROOT).join(f))
        .collect();
    paths.extend(files("docs/src", &[".md"]));
    for dir in ["src", "mcpp-build/src", "templates"] {
        paths.extend(files(dir, &[""]));
    }
    let mut problems = Vec::new();
    for p in paths {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for w in process_words(line) {
                problems.push(format!("{}:{}: {w}", p.display(), n + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "say what the code or the tool does and why, not where the idea came from:\n{}",
        problems.join("\n")
    );
}
