//! Device compiler diagnostics read from their output lines (issue 14, `cargo mcpp build
//! --message-format json`): the file, line and column of a warning or error in the spellings
//! of the compilers the rules run, so an editor can place it as it places rustc's.
//!
//! - gcc, clang, nvcc's host pass, slangc: `file:line:col: warning: text` (`error:`, `note:`;
//!   the column may be absent: `file:line: error: text`);
//! - nvcc's front end (cudafe++, cicc) and slangc: `file(line): warning #177-D: text`,
//!   `file(line): error: text`, `file(line): error 30015: text`;
//! - glslangValidator: `ERROR: file:line: text`, `WARNING: file:line: text` (no column).
//!
//! A line may carry a prefix (the action's description, `nvcc kernels/k.cu: ...`, as
//! [`crate::graph::warning_lines`] writes it): [`parse`] tries every position after a `": "`.

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

/// The diagnostic in `line`, if it has one (see the module docs for the shapes).
pub fn parse(line: &str) -> Option<Diagnostic> {
    let line = line.trim();
    std::iter::once(0).chain(line.match_indices(": ").map(|(i, _)| i + 2)).find_map(|start| parse_at(&line[start..]))
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
    let word = head.split([' ', '#']).next().unwrap_or(head);
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
}
