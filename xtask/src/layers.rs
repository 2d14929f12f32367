//! The layering check: the modules of `src/` import only from layers below their own, and no
//! modules import each other in a loop.
//!
//! The layers are read from ARCHITECTURE.md, from its one fenced block tagged `layers`: one
//! layer a line, the top first, each line the module paths of that layer separated by spaces.
//! A path names a module and everything under it (`rules` covers `rules::cuda::argv`). Modules
//! of one layer may import each other; a loop is refused wherever it stands.
//!
//! Imports are read as text: every `crate::` path in code (comments, strings and character
//! literals left out), `use crate::{a, b::c}` trees included, and `super::`/`self::` paths
//! resolved against the importing module. A path is attributed to the longest module it names.

use std::collections::{BTreeMap, BTreeSet};

/// One module of `src/` and its source text: `path` is the module path (`rules::cuda::argv`,
/// `""` for the crate root `lib.rs`), `file` the file shown in problems (`src/rules/cuda/argv.rs`).
pub struct Module {
    pub path: String,
    pub file: String,
    pub text: String,
}

/// The module path of a file under `src/` (`rules/cuda/mod.rs` -> `rules::cuda`, `lib.rs` ->
/// `""`); `None` for files outside the library (`main.rs`, `bin/`).
pub fn module_path(rel_to_src: &str) -> Option<String> {
    if rel_to_src == "main.rs" || rel_to_src.starts_with("bin/") {
        return None;
    }
    if rel_to_src == "lib.rs" {
        return Some(String::new());
    }
    let without = rel_to_src.strip_suffix(".rs")?;
    let without = without.strip_suffix("/mod").unwrap_or(without);
    Some(without.replace('/', "::"))
}

/// The layers of the fenced `layers` block of `architecture` (ARCHITECTURE.md), top first.
pub fn parse_layers(architecture: &str) -> Option<Vec<Vec<String>>> {
    let mut lines = architecture.lines();
    lines.by_ref().find(|l| l.trim() == "```layers")?;
    let mut layers = Vec::new();
    for line in lines {
        let line = line.trim();
        if line.starts_with("```") {
            return Some(layers);
        }
        let names: Vec<String> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(|s| s.trim_matches('`').trim_end_matches('/').replace('/', "::"))
            .collect();
        if !names.is_empty() {
            layers.push(names);
        }
    }
    None
}

/// The problems of `modules` against `layers`: modules no layer covers, imports from a higher
/// layer, and import loops.
pub fn check(modules: &[Module], layers: &[Vec<String>]) -> Vec<String> {
    let mut problems = Vec::new();
    let known: BTreeSet<&str> = modules.iter().map(|m| m.path.as_str()).collect();
    let layer_of = |path: &str| -> Option<usize> {
        // The longest layer entry that covers the path decides.
        let mut best: Option<(usize, usize)> = None;
        for (i, layer) in layers.iter().enumerate() {
            for entry in layer {
                let covers = path == entry
                    || (path.starts_with(entry.as_str()) && path[entry.len()..].starts_with("::"))
                    || (entry == "lib" && path.is_empty());
                if covers && best.is_none_or(|(len, _)| entry.len() > len) {
                    best = Some((entry.len(), i));
                }
            }
        }
        best.map(|(_, i)| i)
    };
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for m in modules {
        let Some(own) = layer_of(&m.path) else {
            problems.push(format!(
                "{} (module `{}`) is in no layer of ARCHITECTURE.md's `layers` block",
                m.file,
                show(&m.path)
            ));
            continue;
        };
        for (line, target) in imports(&m.path, &m.text, &known) {
            if target == m.path || is_ancestor(&m.path, &target) && m.path.is_empty() {
                continue;
            }
            edges.entry(&m.path).or_default().insert(target.clone());
            if let Some(theirs) = layer_of(&target) {
                if theirs < own {
                    problems.push(format!(
                        "{}:{line}: `{}` imports `{}` from a higher layer ({} over {}): move the \
                         name down, or pass it in",
                        m.file,
                        show(&m.path),
                        show(&target),
                        layers[theirs].join(" "),
                        layers[own].join(" ")
                    ));
                }
            }
        }
    }
    for cycle in cycles(&edges) {
        problems.push(format!("import loop among: {}", cycle.join(", ")));
    }
    problems
}

fn show(path: &str) -> &str {
    if path.is_empty() {
        "lib"
    } else {
        path
    }
}

fn is_ancestor(ancestor: &str, path: &str) -> bool {
    ancestor.is_empty() || path.starts_with(ancestor) && path[ancestor.len()..].starts_with("::")
}

/// The modules `text` (the source of module `own`) imports, with the line of each.
fn imports(own: &str, text: &str, known: &BTreeSet<&str>) -> Vec<(usize, String)> {
    let code = strip_test_modules(&strip_comments_and_literals(text));
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = find_root(rest) {
            let (root, after) = rest[i..].split_at(rest[i..].find("::").unwrap_or(0) + 2);
            let base: Vec<String> = match root.trim_end_matches("::") {
                "crate" | "$crate" => Vec::new(),
                "self" => split(own),
                _ => {
                    // `super::` (possibly repeated)
                    let mut b = split(own);
                    b.pop();
                    let mut tail = after;
                    while let Some(t) = tail.strip_prefix("super::") {
                        b.pop();
                        tail = t;
                    }
                    let consumed = after.len() - tail.len();
                    for path in use_paths(tail) {
                        let mut full = b.clone();
                        full.extend(path);
                        if let Some(m) = longest_module(&full, known) {
                            found.push((n + 1, m));
                        }
                    }
                    rest = &after[consumed..];
                    continue;
                }
            };
            for path in use_paths(after) {
                let mut full = base.clone();
                full.extend(path);
                if let Some(m) = longest_module(&full, known) {
                    found.push((n + 1, m));
                }
            }
            rest = after;
        }
    }
    found
}

fn split(path: &str) -> Vec<String> {
    if path.is_empty() {
        Vec::new()
    } else {
        path.split("::").map(str::to_string).collect()
    }
}

/// The first `crate::`, `$crate::`, `self::` or `super::` of `s` that starts a path (not the
/// tail of a longer name), as a byte index.
fn find_root(s: &str) -> Option<usize> {
    let mut best: Option<usize> = None;
    for root in ["crate::", "self::", "super::"] {
        let mut from = 0;
        while let Some(i) = s[from..].find(root) {
            let at = from + i;
            let before = s[..at].chars().next_back();
            let starts = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            if starts {
                let at = if root == "crate::" && s[..at].ends_with('$') {
                    at - 1
                } else {
                    at
                };
                best = Some(best.map_or(at, |b: usize| b.min(at)));
                break;
            }
            from = at + root.len();
        }
    }
    best
}

/// The paths a use tree (or a plain path) starting at `s` names, each as its segments:
/// `a::{b, c::d}` -> `[a, b]`, `[a, c, d]`.
fn use_paths(s: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    if let Some(inner) = s.strip_prefix('{') {
        let end = matching_brace(inner).unwrap_or(inner.len());
        for part in split_top_level(&inner[..end]) {
            out.extend(use_paths(part.trim()));
        }
        return out;
    }
    let mut chars = s.char_indices().peekable();
    let mut segs: Vec<String> = Vec::new();
    let mut cur = String::new();
    while let Some((i, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            cur.push(c);
        } else if c == ':' && s[i..].starts_with("::") {
            chars.next();
            if !cur.is_empty() {
                segs.push(std::mem::take(&mut cur));
            }
            if s[i + 2..].starts_with('{') {
                let inner = &s[i + 3..];
                let end = matching_brace(inner).unwrap_or(inner.len());
                for part in split_top_level(&inner[..end]) {
                    for mut p in use_paths(part.trim()) {
                        let mut full = segs.clone();
                        full.append(&mut p);
                        out.push(full);
                    }
                }
                return out;
            }
        } else {
            break;
        }
    }
    if !cur.is_empty() {
        segs.push(cur);
    }
    if !segs.is_empty() {
        out.push(segs);
    }
    out
}

fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn longest_module(segs: &[String], known: &BTreeSet<&str>) -> Option<String> {
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|p| known.contains(p.as_str()))
}

/// `text` with comments, string and character literals blanked (newlines kept, so line
/// numbers stay), so a path in a doc comment or a message is no import.
fn strip_comments_and_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &str| {
        for c in s.chars() {
            out.push(if c == '\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
            blank(&mut out, &rest[..end]);
            i += end;
        } else if let Some(len) = raw_string_len(rest) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest.starts_with('"') {
            let mut j = 1;
            let rb = rest.as_bytes();
            while j < rb.len() && rb[j] != b'"' {
                j += if rb[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with('\'') {
            // A character literal ('a', '\n', '\''), not a lifetime ('a).
            let len = char_literal_len(rest);
            blank(&mut out, &rest[..len]);
            i += len.max(1);
            if len == 0 {
                out.push('\'');
            }
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `code` (comments and literals already blanked) with every `#[cfg(test)] mod name { ... }`
/// blanked too: a module's unit tests may import from any layer, they are not part of it.
fn strip_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(i) = out[from..].find("#[cfg(test)]") {
        let at = from + i;
        let after = &out[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let Some(open) = trimmed
            .strip_prefix("mod ")
            .and_then(|rest| rest.find('{'))
            .map(|o| at + "#[cfg(test)]".len() + (after.len() - trimmed.len()) + 4 + o)
        else {
            from = at + 1;
            continue;
        };
        let end = matching_brace(&out[open + 1..]).map_or(out.len(), |e| open + 1 + e + 1);
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
        from = end;
    }
    out
}

fn raw_string_len(s: &str) -> Option<usize> {
    let s2 = s.strip_prefix('b').unwrap_or(s);
    let prefix = s.len() - s2.len();
    let after_r = s2.strip_prefix('r')?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = &after_r[hashes..];
    if !body.starts_with('"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body[1..].find(&close)? + 1 + close.len();
    Some(prefix + 1 + hashes + end)
}

fn char_literal_len(s: &str) -> usize {
    let b = s.as_bytes();
    if b.len() >= 4 && b[1] == b'\\' {
        // '\n', '\'', '\u{..}'
        return s[2..].find('\'').map_or(0, |e| e + 3);
    }
    let mut it = s[1..].char_indices();
    if let (Some((_, _)), Some((j, '\''))) = (it.next(), it.next()) {
        return j + 2;
    }
    0
}

/// The import loops of `edges`, each as the modules of one strongly connected component
/// (sorted).
fn cycles(edges: &BTreeMap<&str, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm over module paths.
    let mut nodes: BTreeSet<String> = edges.keys().map(|k| k.to_string()).collect();
    for targets in edges.values() {
        nodes.extend(targets.iter().cloned());
    }
    let nodes: Vec<String> = nodes.into_iter().collect();
    let index_of: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            edges
                .get(n.as_str())
                .map(|t| t.iter().map(|x| index_of[x.as_str()]).collect())
                .unwrap_or_default()
        })
        .collect();
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, succ: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &succ[v] {
            match s.index[w] {
                None => {
                    visit(w, succ, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let n = nodes.len();
    let mut s = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(v, &succ, &mut s);
        }
    }
    s.out
        .into_iter()
        .map(|comp| {
            let mut names: Vec<String> =
                comp.iter().map(|&i| show(&nodes[i]).to_string()).collect();
            names.sort();
            names
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(path: &str, text: &str) -> Module {
        Module {
            path: path.to_string(),
            file: format!("src/{}.rs", path.replace("::", "/")),
            text: text.to_string(),
        }
    }

    fn layers(spec: &str) -> Vec<Vec<String>> {
        parse_layers(&format!("text\n```layers\n{spec}\n```\nmore")).unwrap()
    }

    #[test]
    fn use_trees_and_inline_paths_are_read() {
        let known: BTreeSet<&str> = ["a", "b", "b::c", "d", "x::y", "x::z"]
            .into_iter()
            .collect();
        let text =
            "use crate::{a::Thing, b::{c::f, g}};\nfn f() -> crate::d::T { super::z::q() }\n";
        let found: Vec<String> = imports("x::y", text, &known)
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        assert_eq!(found, ["a", "b::c", "b", "d", "x::z"]);
    }

    #[test]
    fn comments_and_strings_are_no_imports() {
        let known: BTreeSet<&str> = ["a", "b"].into_iter().collect();
        let text = "// crate::a::x\nlet s = \"crate::a::y\"; let r = r#\"crate::a\"#;\nlet c = '\"'; use crate::b::Z;\nfn f<'a>(x: &'a str) {}\n";
        let found: Vec<(usize, String)> = imports("top", text, &known);
        assert_eq!(found, [(3, "b".to_string())]);
    }

    #[test]
    fn a_planted_upward_import_is_refused() {
        let spec = layers("cli\npipeline\ngraph\nerror");
        let good = [
            m("cli", "use crate::pipeline::run;"),
            m(
                "pipeline",
                "use crate::graph::Action; use crate::error::Error;",
            ),
            m("graph", "use crate::error::Error;"),
            m("error", ""),
        ];
        assert!(check(&good, &spec).is_empty(), "{:?}", check(&good, &spec));
        let planted = [
            m("cli", "use crate::pipeline::run;"),
            m("pipeline", "use crate::graph::Action;"),
            m("graph", "fn f() -> crate::pipeline::Outcome { todo() }"),
            m("error", ""),
        ];
        let problems = check(&planted, &spec);
        assert!(
            problems[0]
                .starts_with("src/graph.rs:1: `graph` imports `pipeline` from a higher layer"),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p == "import loop among: graph, pipeline"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_loop_within_one_layer_is_refused_and_a_module_outside_every_layer_is_named() {
        let spec = layers("a b");
        let modules = [
            m("a", "use crate::b::X;"),
            m("b", "use crate::a::Y;"),
            m("c", ""),
        ];
        let problems = check(&modules, &spec);
        assert!(
            problems.iter().any(|p| p == "import loop among: a, b"),
            "{problems:?}"
        );
        assert!(problems
            .iter()
            .any(|p| p.starts_with("src/c.rs (module `c`) is in no layer")));
    }

    #[test]
    fn a_folder_entry_covers_its_modules_and_the_longest_entry_decides() {
        let spec = layers("rules\nrules::cuda::probe\nerror");
        let modules = [
            m("rules", "use crate::rules::cuda::probe::f;"),
            m("rules::cuda::probe", "use crate::error::E;"),
            m("rules::cuda", "use crate::rules::cuda::probe::g;"),
            m("error", ""),
        ];
        assert!(
            check(&modules, &spec).is_empty(),
            "{:?}",
            check(&modules, &spec)
        );
        let upward = [
            m("rules", ""),
            m("rules::cuda::probe", "use super::Cuda;"),
            m("rules::cuda", ""),
            m("error", ""),
        ];
        let problems = check(&upward, &spec);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("`rules::cuda::probe` imports `rules::cuda`"));
    }
}
