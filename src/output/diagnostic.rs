//! Device compiler diagnostics read from their output lines (`cargo mcpp build
//! --message-format json`): the file, line and column of a warning or error in the spellings
//! of the compilers the rules run, so an editor can place it as it places rustc's.
//!
//! - gcc, clang, nvcc's host pass, slangc: `file:line:col: warning: text` (`error:`, `note:`;
//!   the column may be absent: `file:line: error: text`);
//! - nvcc's front end (cudafe++, cicc) and slangc: `file(line): warning #177-D: text`,
//!   `file(line): error: text`, `file(line): error 30015: text`;
//! - glslangValidator: `ERROR: file:line: text`, `WARNING: file:line: text` (no column);
//! - slangc 2026 (two lines, rustc's shape): `error[E30015]: text` then ` --> file:line:col`
//!   ([`parse_all`] only: the place is on the next line).
//!
//! A line may carry a prefix (the action's description, `nvcc kernels/k.cu: ...`, as
//! [`crate::engine::graph::warning_lines`] writes it): [`parse`] tries every position after a `": "`,
//! and [`parse_all`] gives each diagnostic's compiler text with that prefix taken off.

use serde::{Deserialize, Serialize};

/// One diagnostic of a device compiler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// `error`, `warning` or `note` (rustc's level names).
    pub level: String,
    /// The text after the level.
    pub message: String,
    /// The file as the compiler named it.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column; 1 when the compiler gives none.
    pub column: u32,
}

/// The diagnostic in `line`, if it has one (see the module docs for the one-line shapes).
pub fn parse(line: &str) -> Option<Diagnostic> {
    parse_located(line.trim()).map(|(d, _)| d)
}

/// The positions of `line` a compiler's text may start at: 0, and after each `": "`.
fn starts(line: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(line.match_indices(": ").map(|(i, _)| i + 2))
}

/// The diagnostic in `line` and where the compiler's text starts in it.
fn parse_located(line: &str) -> Option<(Diagnostic, usize)> {
    starts(line).find_map(|start| parse_at(&line[start..]).map(|d| (d, start)))
}

/// Every diagnostic in `lines` (a compiler's output, each line maybe prefixed, see the module
/// docs), in order, each with its rendered text: the compiler's own line(s), the prefix taken
/// off (two lines for slangc's `error[E...]: ...` / ` --> file:line:col`).
pub fn parse_all<S: AsRef<str>>(lines: &[S]) -> Vec<(Diagnostic, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].as_ref().trim_end();
        if let Some((d, start)) = parse_located(line.trim_start()) {
            out.push((d, line.trim_start()[start..].to_string()));
        } else if let Some((d, rendered)) = lines.get(i + 1).and_then(|next| parse_two_lines(line, next.as_ref().trim_end())) {
            out.push((d, rendered));
            i += 1;
        }
        i += 1;
    }
    out
}

/// slangc 2026's `level[CODE]: text` (at a start of `header`) with `--> file:line:col` on `next`.
fn parse_two_lines(header: &str, next: &str) -> Option<(Diagnostic, String)> {
    let (start, level, message) = starts(header).find_map(|start| {
        let text = &header[start..];
        let (head, _) = text.split_once(':')?;
        if !head.contains('[') || head.contains(' ') {
            return None;
        }
        let (level, message) = level_and_message(text)?;
        Some((start, level, message))
    })?;
    let arrow = next.find("--> ")?;
    let place = next[arrow + 4..].trim();
    let mut parts = place.rsplitn(3, ':');
    let (column, line, file) = (parts.next()?.parse::<u32>().ok()?, parts.next()?.parse::<u32>().ok()?, parts.next()?);
    if file.is_empty() {
        return None;
    }
    // The location line carries the same prefix as the header (the action's description).
    let located = if start > 0 && next.starts_with(&header[..start]) { &next[start..] } else { &next[arrow..] };
    let rendered = format!("{}\n{}", &header[start..], located);
    Some((Diagnostic { level: level.into(), message, file: file.to_string(), line, column }, rendered))
}

fn level_of(word: &str) -> Option<&'static str> {
    match word.to_ascii_lowercase().as_str() {
        "error" | "fatal error" => Some("error"),
        "warning" => Some("warning"),
        "note" => Some("note"),
        _ => None,
    }
}

/// `level[ code]: message` -> (level, message).
fn level_and_message(rest: &str) -> Option<(&'static str, String)> {
    let (head, message) = rest.split_once(':')?;
    let head = head.trim();
    let word = head.split([' ', '#', '[']).next().unwrap_or(head);
    let level = level_of(head).or_else(|| level_of(word))?;
    Some((level, message.trim().to_string()))
}

fn parse_at(text: &str) -> Option<Diagnostic> {
    // glslangValidator: `ERROR: file:line: text`.
    for (prefix, level) in [("ERROR: ", "error"), ("WARNING: ", "warning")] {
        if let Some(rest) = text.strip_prefix(prefix) {
            let mut parts = rest.splitn(3, ':');
            let (file, line, message) = (parts.next()?, parts.next()?, parts.next()?);
            let line: u32 = line.trim().parse().ok()?;
            return Some(Diagnostic { level: level.into(), message: message.trim().to_string(), file: file.trim().to_string(), line, column: 1 });
        }
    }
    // nvcc front end: `file(line): level...: text`.
    if let Some(open) = text.find('(') {
        if let Some(close_rel) = text[open..].find("): ") {
            let close = open + close_rel;
            if let Ok(line) = text[open + 1..close].parse::<u32>() {
                let file = &text[..open];
                if !file.is_empty() && !file.contains(' ') {
                    let (level, message) = level_and_message(&text[close + 3..])?;
                    return Some(Diagnostic { level: level.into(), message, file: file.to_string(), line, column: 1 });
                }
            }
        }
    }
    // gcc/clang: `file:line[:col]: level: text`.
    let mut parts = text.splitn(4, ':');
    let file = parts.next()?;
    if file.is_empty() || file.contains(' ') {
        return None;
    }
    let line: u32 = parts.next()?.trim().parse().ok()?;
    let third = parts.next()?;
    let (column, rest) = match third.trim().parse::<u32>() {
        Ok(c) => (c, parts.next()?.to_string()),
        Err(_) => (1, format!("{third}:{}", parts.next().unwrap_or_default())),
    };
    let (level, message) = level_and_message(rest.trim())?;
    Some(Diagnostic { level: level.into(), message, file: file.to_string(), line, column })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(level: &str, file: &str, line: u32, column: u32, message: &str) -> Option<Diagnostic> {
        Some(Diagnostic { level: level.into(), message: message.into(), file: file.into(), line, column })
    }

    #[test]
    fn the_compilers_spellings_are_read() {
        assert_eq!(parse("/p/k.cu:12:7: warning: unused variable 'x' [-Wunused-variable]"), d("warning", "/p/k.cu", 12, 7, "unused variable 'x' [-Wunused-variable]"));
        assert_eq!(parse("nvcc kernels/k.cu: /p/k.cu(3): warning #177-D: variable \"y\" was declared but never referenced"), d("warning", "/p/k.cu", 3, 1, "variable \"y\" was declared but never referenced"));
        assert_eq!(parse("/p/k.cu(9): error: identifier \"z\" is undefined"), d("error", "/p/k.cu", 9, 1, "identifier \"z\" is undefined"));
        assert_eq!(parse("glslangValidator shaders/x.comp: ERROR: /p/x.comp:4: 'y' : undeclared identifier"), d("error", "/p/x.comp", 4, 1, "'y' : undeclared identifier"));
        assert_eq!(parse("WARNING: /p/x.comp:2: extension not supported"), d("warning", "/p/x.comp", 2, 1, "extension not supported"));
        assert_eq!(parse("/p/a.cpp:5: error: expected ';'"), d("error", "/p/a.cpp", 5, 1, "expected ';'"));
        assert_eq!(parse("/p/s.slang(7): error 30015: undefined identifier 'q'."), d("error", "/p/s.slang", 7, 1, "undefined identifier 'q'."));
        assert_eq!(parse("/p/a.cpp:5:3: fatal error: x.h: No such file or directory"), d("error", "/p/a.cpp", 5, 3, "x.h: No such file or directory"));
        assert_eq!(parse("1 error generated."), None);
        assert_eq!(parse("command: /usr/bin/nvcc -c a.cu"), None);
        assert_eq!(parse("In file included from /p/a.cpp:3:"), None);
    }

    #[test]
    fn slangcs_two_line_form_is_read_and_the_prefix_is_not_rendered() {
        // What slangc 2026.x prints (tests/slang.rs checks the installed one prints this).
        let lines = [
            "slangc shaders/s.slang: error[E30015]: undefined identifier",
            "slangc shaders/s.slang:  --> /p/s.slang:5:14",
            "slangc shaders/s.slang:   |",
            "slangc shaders/s.slang: 5 | b[i.x] = q;",
            "nvcc k.cu: /p/k.cu:12:7: warning: unused variable 'x'",
        ];
        let all = parse_all(&lines);
        assert_eq!(all.len(), 2, "{all:?}");
        assert_eq!(Some(all[0].0.clone()), d("error", "/p/s.slang", 5, 14, "undefined identifier"));
        assert_eq!(all[0].1, "error[E30015]: undefined identifier\n --> /p/s.slang:5:14");
        assert_eq!(all[1].1, "/p/k.cu:12:7: warning: unused variable 'x'");
        assert_eq!(parse_all(&["warning[E39019]: x", " --> s.slang:1:2"])[0].0, d("warning", "s.slang", 1, 2, "x").unwrap());
        assert!(parse_all(&["error[E1]: no place", "next line"]).is_empty());
    }
}
