//! User values shown back to the user or written into generated text: escaped so that
//! nothing a user wrote can break a message, a generated file or a command line.
//!
//! - [`echo`] is the one way error text quotes a value the user wrote (a glob, an architecture,
//!   an accelerator string, a file name): control characters are shown escaped (`\n`, `\u{1b}`),
//!   so nothing the user typed reaches the terminal raw, and a long value is cut to
//!   [`ECHO_MAX`] characters with the number of characters left out.
//! - [`echo_window`] does the same around a position (the column of an accelerator error), and
//!   returns where the caret goes in the shown text.
//! - [`comment`] makes a value safe inside a `//` comment of generated Rust, C or C++: no
//!   character that ends the comment or adds a line.

/// The most characters [`echo`] shows of one value.
pub const ECHO_MAX: usize = 80;

/// Escape one character for display: control characters (C0, DEL, C1) and the line/paragraph
/// separators as Rust escapes, others as they are.
fn push_shown(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        c => out.push(c),
    }
}

/// `s` with every control character escaped (no length limit).
pub fn escape_control(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_shown(&mut out, c);
    }
    out
}

/// `s` as error text quotes it: control characters escaped, and at most [`ECHO_MAX`]
/// characters of it (the first ones, then `... (N more characters)`). Linear in `s`'s length up
/// to the cut.
pub fn echo(s: &str) -> String {
    echo_max(s, ECHO_MAX)
}

/// The most characters [`echo_path`] shows of one path.
pub const ECHO_PATH_MAX: usize = 400;

/// A path (of a tool, a toolkit root, an install) as messages show it: as [`echo`], cut at
/// [`ECHO_PATH_MAX`] characters rather than [`ECHO_MAX`], since a real path is often longer
/// than a typed value and is shown to be copied.
pub fn echo_path(p: &std::path::Path) -> String {
    echo_max(&p.display().to_string(), ECHO_PATH_MAX)
}

/// [`echo`] with `max` characters at most.
fn echo_max(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    for c in chars.by_ref().take(max) {
        push_shown(&mut out, c);
    }
    let rest = chars.count();
    if rest > 0 {
        out.push_str(&format!("... ({rest} more characters)"));
    }
    out
}

/// A file name that may not be UTF-8, as error text quotes it: as [`echo`], with each byte that
/// is not part of UTF-8 shown as `\xNN` (`bad\xff.slang`).
pub fn echo_os(s: &std::ffi::OsStr) -> String {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(s).to_vec();
    #[cfg(not(unix))]
    let bytes = s.to_string_lossy().into_owned().into_bytes();
    let mut text = String::new();
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        for b in chunk.invalid() {
            text.push_str(&format!("\\x{b:02x}"));
        }
    }
    echo(&text)
}

/// `s` with every backtick-quoted part (`` `...` ``) cut as [`echo`] cuts a value: for a
/// message that quotes user values among its own words (serde's `unknown field `...``).
pub fn echo_quoted(s: &str) -> String {
    s.split('`').enumerate().map(|(i, part)| if i % 2 == 1 { echo(part) } else { part.to_string() }).collect::<Vec<_>>().join("`")
}

/// [`echo_quoted`] for both quote marks serde uses: every `` `...` `` and `"..."` part of
/// `s` cut and escaped as [`echo`] does (serde's `invalid type: string "...", expected ...`).
pub fn echo_serde(s: &str) -> String {
    echo_quoted(&s.split('"').enumerate().map(|(i, part)| if i % 2 == 1 { echo(part) } else { part.to_string() }).collect::<Vec<_>>().join("\""))
}

/// A window of at most [`ECHO_MAX`] characters of `s` around the character index `at`
/// (40 before, the rest after), control characters escaped, `...` where it is cut; and the
/// caret's column (0-based, in characters of the shown text) under the character `at`.
pub fn echo_window(s: &str, at: usize) -> (String, usize) {
    let chars: Vec<char> = s.chars().collect();
    let at = at.min(chars.len());
    let (from, to) = if chars.len() <= ECHO_MAX { (0, chars.len()) } else {
        let from = at.saturating_sub(40);
        (from, (from + ECHO_MAX).min(chars.len()))
    };
    let mut out = String::new();
    if from > 0 {
        out.push_str("...");
    }
    let mut caret = out.chars().count();
    for (i, c) in chars[from..to].iter().enumerate() {
        if from + i == at {
            caret = out.chars().count();
        }
        push_shown(&mut out, *c);
    }
    if at >= to {
        caret = out.chars().count();
    }
    if to < chars.len() {
        out.push_str("...");
    }
    (out, caret)
}

/// `s` safe in a `//` comment of generated Rust, C or C++: control characters (a newline would
/// end the comment and start a line of code), line/paragraph separators and a trailing `\`
/// (a C line splice) escaped; at most [`ECHO_MAX`] characters as [`echo`].
pub fn comment(s: &str) -> String {
    let mut out = echo(s);
    if out.ends_with('\\') {
        out.push(' ');
    }
    out
}

/// Whether `s` has a character that [`escape_control`] would escape: a value with one cannot be
/// written as it is into a file name, a cargo directive or a line of generated text.
pub fn has_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}')
}

/// The 1-based line and column (in characters) of byte `offset` in `text`, as TOML parsers'
/// spans give it: the position every `file:line:col` of a manifest or `mcpp.lock` refusal names.
/// An offset past the end is the end.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {

    #[cfg(unix)]
    #[test]
    fn a_name_that_is_not_utf8_is_shown_with_its_odd_bytes_escaped() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(super::echo_os(std::ffi::OsStr::from_bytes(b"bad\xff.slang")), "bad\\xff.slang");
        assert_eq!(super::echo_os(std::ffi::OsStr::from_bytes(b"a\nb\xc3")), "a\\nb\\xc3");
    }

    #[test]
    fn serde_messages_quote_values_cut_in_both_quote_marks() {
        let long = "x".repeat(100_000);
        let m = echo_serde(&format!("invalid type: string \"{long}\", expected a boolean"));
        assert!(m.len() < 300 && m.starts_with("invalid type: string \"") && m.ends_with("\", expected a boolean"), "{m}");
        let m = echo_serde(&format!("unknown variant `{long}`, expected `glslang` or `glslc`"));
        assert!(m.len() < 300 && m.ends_with("expected `glslang` or `glslc`"), "{m}");
    }

    use super::*;

    #[test]
    fn line_col_counts_characters_from_one() {
        let t = "a = 1\nbé = 2\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, t.find("= 2").unwrap()), (2, 4));
        assert_eq!(line_col(t, 10_000), (3, 1));
    }

    #[test]
    fn echo_escapes_control_characters_and_cuts_long_values() {
        assert_eq!(echo("sm_90"), "sm_90");
        assert_eq!(echo("a\nb\u{1b}[31mc\td"), "a\\nb\\u{1b}[31mc\\td");
        let long = "x".repeat(100_000);
        let e = echo(&long);
        assert_eq!(e, format!("{}... (99920 more characters)", "x".repeat(80)));
        assert!(e.len() < 120);
        assert_eq!(echo(&"é".repeat(81)), format!("{}... (1 more characters)", "é".repeat(80)));
    }

    #[test]
    fn the_window_keeps_the_caret_under_the_position() {
        let (w, c) = echo_window("cuda12.9+{sm_90", 15);
        assert_eq!((w.as_str(), c), ("cuda12.9+{sm_90", 15));
        let text = format!("cuda13.0+{{{}}}", "s".repeat(100_000));
        let (w, c) = echo_window(&text, 50_000);
        assert!(w.starts_with("...") && w.ends_with("...") && w.chars().count() == ECHO_MAX + 6, "{w}");
        assert_eq!(c, 3 + 40);
        let (w, c) = echo_window("a\u{1b}b", 2);
        assert_eq!((w.as_str(), c), ("a\\u{1b}b", 7));
    }

    #[test]
    fn comments_cannot_gain_a_line() {
        let c = comment("x\n#include <evil>\r\u{2028}\\");
        assert!(!c.contains('\n') && !c.contains('\r') && !c.contains('\u{2028}'), "{c}");
        assert!(!c.ends_with('\\'));
        assert!(has_control("a\nb") && has_control("\u{7f}") && !has_control("shaders/a b.comp"));
    }
}
