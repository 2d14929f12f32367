//! The island boundary: a device island (a `.cu`
//! file) and its host fallback (a `.cpp` file) implement one `extern "C"` boundary, and exactly
//! one of them is in any link. Each entry point is marked where it is defined:
//!
//! ```c
//! MCPP_EXPORT_C int saxpy_run(float a, const float* x, float* y, unsigned n) { ... }
//! ```
//!
//! [`scan`] reads both halves in every build (so the generated boundary is byte-identical with
//! and without an accelerator), copies each marked signature verbatim from the marker to its
//! matching `)` (comments dropped, macros untouched; `#if` is not evaluated, so a marked
//! definition under `#if 0` is still an entry), and merges entries by name; [`emit`] writes the `extern "C"` header and the
//! C++ module; [`bindings`] writes the Rust bindings with bindgen.

pub mod bindings;
pub mod emit;

use crate::error::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// The default marker.
pub const DEFAULT_MARKER: &str = "MCPP_EXPORT_C";

/// What a device rule needs to know of the island: the header to force-include, and the
/// device sources (absolute) that get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Boundary {
    /// The generated `extern "C"` header.
    pub header: PathBuf,
    /// The island's device half (files some rule claims), absolute.
    pub device_sources: Vec<PathBuf>,
}

/// One exported entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The declaration as written after the marker, whitespace runs collapsed to one space,
    /// e.g. `int saxpy_run(float a, const float* x, float* y, unsigned n)`.
    pub decl: String,
    /// The entry point's name (the identifier before the first `(`).
    pub name: String,
    /// The file it was first found in.
    pub origin: PathBuf,
    /// The 1-based line of its marker in `origin`.
    pub line: usize,
    /// Every file that defines it (the device half and the fallback, in scan order); empty for
    /// an entry listed in the manifest (`entries`) that no scan saw.
    pub files: Vec<PathBuf>,
}

impl Entry {
    /// Where it was declared, for a message: `file:line`, or the manifest of a listed entry.
    pub fn place(&self) -> String {
        if self.files.is_empty() {
            format!("{}, [package.metadata.mcpp.island] entries", self.origin.display())
        } else {
            format!("{}:{}", self.origin.display(), self.line)
        }
    }
}

/// Scan `files` (in order) for definitions marked with `marker`, merged by name and sorted by
/// name.
///
/// # Errors
/// [`ErrorKind::Sources`], each naming `file:line`: a marker whose
/// parameter list does not close; a marked declaration without a body (the marker goes on the
/// definition); a declaration without a name or with the marker after its return type; one
/// name declared twice in one file; two files declaring one name differently (naming both
/// files and both signatures); no entry point at all. [`ErrorKind::Io`] for an unreadable file.
pub fn scan(files: &[PathBuf], marker: &str) -> Result<Vec<Entry>> {
    let entries = scan_marked(files, marker)?;
    if entries.is_empty() {
        return Err(no_entries(files, marker));
    }
    Ok(entries)
}

/// The refusal of an island with no entry point: none marked in `files`, none listed.
pub fn no_entries(files: &[PathBuf], marker: &str) -> Error {
    let list = files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ");
    Error::new(ErrorKind::Sources, format!("no entry point marked `{marker}` under {list}"))
        .detail("A source that yields nothing is a misspelled path or a marker that never arrived,")
        .detail("and an empty module fails later and less clearly.")
        .help(format!("mark the host-callable definitions: `{marker} int my_entry(...) {{ ... }}`"))
}

/// [`scan`] without its refusal of an island with no entry point: the marked entries, merged by
/// name and sorted by name, possibly none (the manifest may list them: [`merge_listed`]).
///
/// # Errors
/// As [`scan`], but never for an empty result.
pub fn scan_marked(files: &[PathBuf], marker: &str) -> Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| Error::io("cannot read the island source", file, e))?;
        let mut in_file: Vec<String> = Vec::new();
        for Marked { decl, line, has_body, trailing } in scan_text(&text, marker, file)? {
            let at = format!("{}:{line}", file.display());
            let name = entry_name(&decl).ok_or_else(|| {
                Error::new(ErrorKind::Sources, format!("cannot find an entry point name in `{decl}` ({at})"))
                    .file(file)
                    .help(format!("write `{marker} <return type> <name>(<parameters>)` before the definition"))
            })?;
            if decl.trim_start().starts_with(&format!("{name}(")) || decl.trim_start().starts_with(&format!("{name} (")) {
                return Err(Error::new(ErrorKind::Sources, format!("`{name}` carries `{marker}` after its return type ({at})"))
                    .file(file)
                    .detail(format!("read: `{decl}`"))
                    .detail("The generator copies the declaration from the marker on, so it would lose the return type.")
                    .help(format!("put the marker first: `{marker} int {name}(...)`")));
            }
            if !has_body {
                return Err(Error::new(ErrorKind::Sources, format!("`{name}` is marked `{marker}` at {at} without a body"))
                    .file(file)
                    .detail(format!("read: `{decl};`"))
                    .detail("The marker goes on the definition: the generated header declares what this half defines,")
                    .detail("and a marked prototype would export a name this half may never define.")
                    .help(format!("move the marker to the definition of `{name}`, or remove it from the prototype")));
            }
            if trailing.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == "noexcept" || w == "throw") {
                return Err(Error::new(ErrorKind::Sources, format!("`{name}` at {at} has `{trailing}` after its parameter list"))
                    .file(file)
                    .detail(format!("read: `{decl} {trailing}`"))
                    .detail("The boundary declaration is copied up to the `)`, so the generated header would declare it without")
                    .detail("the exception specification and the compiler would refuse the definition as a redeclaration.")
                    .help("drop it from the marked definition (an extern \"C\" entry point must not throw across the boundary anyway)"));
            }
            if in_file.contains(&name) {
                return Err(Error::new(ErrorKind::Sources, format!("`{name}` is declared twice in `{}` (again at line {line})", file.display()))
                    .file(file)
                    .detail("C language linkage does not mangle, so these are one symbol and an overload")
                    .detail("or a namespace would not separate them.")
                    .help("give one of them another name, or unmark it"));
            }
            in_file.push(name.clone());
            if let Some(first) = entries.iter_mut().find(|e| e.name == name) {
                // Spacing around punctuation is no difference (`const float *x` is `const float* x`).
                if signature_key(&first.decl) != signature_key(&decl) {
                    return Err(Error::new(ErrorKind::Sources, format!("two definitions of `{name}` declare it differently"))
                        .file(file)
                        .detail(format!("{}:{}", first.origin.display(), first.line))
                        .detail(format!("  {}", first.decl))
                        .detail(at.clone())
                        .detail(format!("  {decl}"))
                        .detail("C language linkage does not mangle, so these never meet at the link:")
                        .detail("whichever one is in the artifact reads its arguments by its own signature.")
                        .help("make the two signatures identical (the device half and the host fallback implement one boundary)"));
                }
                first.files.push(file.clone());
                continue;
            }
            entries.push(Entry { decl, name, origin: file.clone(), line, files: vec![file.clone()] });
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// Check one declaration listed in the manifest (`entries`): a C declaration of a function,
/// `<return type> <name>(<parameters>)`, without the trailing `;`. Returns it
/// whitespace-collapsed, with its name; or what is wrong with it.
pub fn check_listed(decl: &str) -> std::result::Result<(String, String), String> {
    // A tab is spacing; any other control character (a newline) is refused.
    if crate::text::has_control(&decl.replace('\t', " ")) {
        return Err("it has a control character (a newline would add a line to the generated header)".into());
    }
    if decl.contains(';') {
        return Err("it has a `;` (write one declaration, without the trailing `;`: the generator adds it)".into());
    }
    for bad in ["{", "}", "#", "//", "/*", "*/", "\\"] {
        if decl.contains(bad) {
            return Err(format!("it has `{bad}` (a declaration has no body, comment or preprocessor line)"));
        }
    }
    let decl = tidy(&collapse(decl));
    if !decl.contains('(') {
        return Err("it has no parameter list (a function declaration has parentheses, `(void)` for none)".into());
    }
    let mut depth = 0usize;
    for (i, c) in decl.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Err("a `)` closes nothing".into()),
            ')' => {
                depth -= 1;
                if depth == 0 && i + 1 != decl.len() {
                    return Err(format!("`{}` follows its parameter list (the declaration ends at the `)`)", &decl[i + 1..].trim()));
                }
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("its parameter list does not close".into());
    }
    let name = entry_name(&decl).filter(|n| !decl.starts_with(&format!("{n}(")) && !decl.starts_with(&format!("{n} (")));
    let Some(name) = name else {
        return Err("it has no name, or no return type before its name (write `<return type> <name>(<parameters>)`)".into());
    };
    Ok((decl, name))
}

/// Merge the declarations listed in the manifest (`listed`, each checked by [`check_listed`])
/// with the `scanned` entries, sorted by name. A listed entry has no files (the scan does not
/// see it) and its origin is `manifest`. The same declaration listed or scanned twice is one
/// entry (spacing around punctuation aside, as between two halves).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `manifest` and `<key>[i]`: a declaration [`check_listed`]
/// refuses; a name declared differently by the list and the scan (both shown) or twice
/// differently in the list.
pub fn merge_listed(mut scanned: Vec<Entry>, listed: &[String], manifest: &Path, key: &str) -> Result<Vec<Entry>> {
    for (i, raw) in listed.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let (decl, name) = check_listed(raw).map_err(|why| {
            Error::new(ErrorKind::Manifest, format!("the island entry `{}` is not a C function declaration: {why}", crate::text::echo(raw)))
                .file(manifest)
                .key(at.clone())
                .help("write one C declaration per entry, without the trailing `;`: entries = [\"int scale_run(float* y, unsigned n)\"]")
                .help("or mark the definition in an island source instead, when the scan can see it")
        })?;
        if let Some(first) = scanned.iter_mut().find(|e| e.name == name) {
            if signature_key(&first.decl) != signature_key(&decl) {
                let place = if first.files.is_empty() { format!("{} (an earlier {key} entry)", manifest.display()) } else { format!("{}:{}", first.origin.display(), first.line) };
                return Err(Error::new(ErrorKind::Manifest, format!("`{name}` is listed in {at} with another declaration than it has elsewhere"))
                    .file(manifest)
                    .key(at.clone())
                    .detail(place)
                    .detail(format!("  {}", first.decl))
                    .detail(format!("{} ({at})", manifest.display()))
                    .detail(format!("  {decl}"))
                    .detail("C language linkage does not mangle, so the two cannot both be right.")
                    .help(format!("make the two declarations identical, or remove `{name}` from {key} (the scan already sees it)")));
            }
            continue;
        }
        scanned.push(Entry { decl, name, origin: manifest.to_path_buf(), line: 0, files: Vec::new() });
    }
    scanned.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(scanned)
}

/// Which bytes of `text` are code (not inside a comment, string or character literal, and
/// not on a preprocessor line).
fn code_mask(text: &[u8]) -> Vec<bool> {
    let mut mask = vec![true; text.len()];
    let mut i = 0;
    let mut line_start = true;
    while i < text.len() {
        let c = text[i];
        if line_start && c == b'#' {
            // A preprocessor line (with `\` continuations): `#define MCPP_EXPORT_C` is not an entry.
            while i < text.len() && !(text[i] == b'\n' && (i == 0 || text[i - 1] != b'\\')) {
                mask[i] = false;
                i += 1;
            }
            continue;
        }
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if !c.is_ascii_whitespace() {
            line_start = false;
        }
        if c == b'/' && text.get(i + 1) == Some(&b'/') {
            while i < text.len() && text[i] != b'\n' {
                mask[i] = false;
                i += 1;
            }
        } else if c == b'/' && text.get(i + 1) == Some(&b'*') {
            let start = i;
            i += 2;
            while i < text.len() && !(text[i] == b'*' && text.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            let end = (i + 2).min(text.len());
            mask[start..end].iter_mut().for_each(|m| *m = false);
            i = end;
        } else if c == b'"' || c == b'\'' {
            let start = i;
            i += 1;
            while i < text.len() && text[i] != c && text[i] != b'\n' {
                if text[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            let end = (i + 1).min(text.len());
            mask[start..end].iter_mut().for_each(|m| *m = false);
            i = end;
        } else {
            i += 1;
        }
    }
    mask
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// One marked declaration found by [`scan_text`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marked {
    /// The declaration, whitespace-collapsed, from after the marker to its closing `)`.
    pub decl: String,
    /// The 1-based line of the marker.
    pub line: usize,
    /// Whether a body (`{`) follows before any `;` (a definition, not a prototype).
    pub has_body: bool,
    /// What stands between the `)` and the body or `;` (`noexcept`, attributes), collapsed.
    pub trailing: String,
}

/// The declarations marked in `text`, in order, whitespace-collapsed:
/// from the end of each marker, `(` opens and `)` closes (nesting-aware, across lines); a `;`
/// or `{` before the first `(` abandons the occurrence.
///
/// # Errors
/// [`ErrorKind::Sources`] when a parameter list opened after a marker never closes.
pub fn scan_text(text: &str, marker: &str, file: &Path) -> Result<Vec<Marked>> {
    let bytes = text.as_bytes();
    let mask = code_mask(bytes);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find(marker).map(|p| p + from) {
        let end = pos + marker.len();
        from = end;
        let bounded = (pos == 0 || !is_ident(bytes[pos - 1])) && bytes.get(end).is_none_or(|&c| !is_ident(c));
        if !bounded || !mask[pos] {
            continue;
        }
        let mut depth = 0usize;
        let mut opened = false;
        let mut close = None;
        for (i, &c) in bytes.iter().enumerate().skip(end) {
            if !mask[i] {
                continue;
            }
            match c {
                b'(' => {
                    depth += 1;
                    opened = true;
                }
                b')' if opened => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                b';' | b'{' if !opened => break,
                _ => {}
            }
        }
        let line = 1 + bytes[..pos].iter().filter(|&&b| b == b'\n').count();
        match close {
            Some(c) => {
                // After the `)`: `noexcept`, attributes (their parentheses skipped), then `{` or `;`.
                let mut depth = 0usize;
                let found = bytes.iter().enumerate().skip(c + 1).filter(|&(i, _)| mask[i]).find_map(|(i, &b)| match b {
                    b'(' => {
                        depth += 1;
                        None
                    }
                    b')' => {
                        depth = depth.saturating_sub(1);
                        None
                    }
                    b'{' if depth == 0 => Some((true, i)),
                    b';' if depth == 0 => Some((false, i)),
                    _ => None,
                });
                // Comments are not part of the declaration: a `//` comment would swallow the
                // rest of the collapsed line in the header, and two halves may comment differently.
                let code = |from: usize, to: usize| -> String {
                    let kept: Vec<u8> = (from..to).map(|i| if mask[i] { bytes[i] } else { b' ' }).collect();
                    collapse(&String::from_utf8_lossy(&kept))
                };
                let trailing = found.map(|(_, at)| code(c + 1, at)).unwrap_or_default();
                out.push(Marked { decl: tidy(&code(end, c + 1)), line, has_body: found.is_some_and(|(body, _)| body), trailing });
                from = c + 1;
            }
            None if opened => {
                return Err(Error::new(ErrorKind::Sources, format!("{}:{line} carries `{marker}` whose parameter list does not close", file.display()))
                    .file(file)
                    .detail("A marked entry point is one declaration, and the generator copies it verbatim.")
                    .help("close the parameter list, or remove the marker"));
            }
            None => {}
        }
    }
    Ok(out)
}

/// Refuse a marked entry point outside the declared island, before anything compiles: of the
/// `candidates` (absolute path, package-relative name: the `.cu` files of `sources` and the
/// files of `cxx-sources`), one whose text has a definition marked with the island's marker
/// (`MCPP_EXPORT_C` when no island is declared) while it is not among
/// `[package.metadata.mcpp.island] sources` (`island_sources`, absolute; `None` when there is no
/// island). Its marker would be undefined (the generated header is given only to the island's
/// files) and nothing would declare the entry point to Rust. Each candidate file is read once;
/// island sources are skipped (the island scan has read them).
///
/// # Errors
/// [`ErrorKind::Sources`] naming `file:line` of the first marked definition, the key, and the
/// `[package.metadata.mcpp.island]` lines that declare it; [`ErrorKind::Io`] for an unreadable
/// file.
pub fn refuse_marked_outside(manifest: &crate::config::manifest::Manifest, candidates: impl IntoIterator<Item = (PathBuf, String)>, island_sources: Option<&[PathBuf]>) -> Result<()> {
    let opts = manifest.mcpp.island.as_ref();
    let marker = opts.and_then(|o| o.marker.clone()).unwrap_or_else(|| DEFAULT_MARKER.to_string());
    for (path, rel) in candidates {
        if island_sources.is_some_and(|s| s.contains(&path)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io("cannot read", &path, e))?;
        if !text.contains(marker.as_str()) {
            continue;
        }
        let marked = scan_text(&text, &marker, &path)?;
        let Some(first) = marked.iter().find(|m| m.has_body) else { continue };
        let name = entry_name(&first.decl).unwrap_or_else(|| first.decl.clone());
        let device = path.extension().is_some_and(|e| e == "cu" || e == "hip");
        let quoted = |list: &[String], add: &str| -> String {
            let mut all: Vec<String> = list.iter().map(|g| format!("{g:?}")).collect();
            all.push(format!("{add:?}"));
            format!("[{}]", all.join(", "))
        };
        let key = "package.metadata.mcpp.island";
        let mut err = Error::new(
            ErrorKind::Sources,
            format!(
                "`{rel}` marks `{name}` with `{marker}` (line {}), and it is not among the island's sources{}",
                first.line,
                if opts.is_none() { " (no [package.metadata.mcpp.island] is declared)" } else { "" }
            ),
        )
        .file(format!("{}:{}", path.display(), first.line))
        .key(if opts.is_some() { format!("{key}.sources") } else { key.to_string() })
        .detail(format!("read: `{}`", first.decl))
        .detail("Only the island's sources get the generated boundary header (where the marker is defined) and are scanned")
        .detail("for its entry points, so this file would fail to compile and Rust would never see the entry point.");
        err = match (opts, device) {
            (Some(o), true) => err.help(format!("add it to the island in Cargo.toml: [package.metadata.mcpp.island] sources = {}", quoted(&o.sources, &rel))),
            (Some(o), false) => err.help(format!(
                "add it to the island in Cargo.toml: [package.metadata.mcpp.island] sources = {} and fallback = {}",
                quoted(&o.sources, &rel),
                quoted(&o.fallback, &rel)
            )),
            (None, true) => err
                .help("declare the island in Cargo.toml, with the host fallback that defines the same entry points for builds without the accelerator:")
                .help("  [package.metadata.mcpp.island]")
                .help(format!("  sources = [{rel:?}, \"host/<fallback>.cpp\"]"))
                .help("  fallback = [\"host/<fallback>.cpp\"]"),
            (None, false) => err
                .help("declare the island in Cargo.toml (this file is then its host fallback):")
                .help("  [package.metadata.mcpp.island]")
                .help(format!("  sources = [{rel:?}]"))
                .help(format!("  fallback = [{rel:?}]")),
        };
        return Err(err.help(format!("or remove `{marker}` from `{name}` if it is not an entry point of the boundary")));
    }
    Ok(())
}

/// A declaration with the spaces next to punctuation removed: what two halves must agree on.
pub fn signature_key(decl: &str) -> String {
    let mut out = String::new();
    let punct = |c: char| "*&(),[]<>".contains(c);
    let chars: Vec<char> = collapse(decl).chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' && (chars.get(i + 1).is_some_and(|&n| punct(n)) || i.checked_sub(1).and_then(|p| chars.get(p)).is_some_and(|&p| punct(p))) {
            continue;
        }
        out.push(c);
    }
    out
}

/// `collapse`d, without the spaces a dropped comment leaves inside parentheses (`( int`,
/// `n )`, `a ,`).
fn tidy(decl: &str) -> String {
    decl.replace("( ", "(").replace(" )", ")").replace(" ,", ",")
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The identifier immediately before the first `(` of `decl`.
pub fn entry_name(decl: &str) -> Option<String> {
    let before = decl.split('(').next()?.trim_end();
    let name: String = before.chars().rev().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<Vec<_>>().into_iter().rev().collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        None
    } else {
        Some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_one(text: &str) -> Result<Vec<String>> {
        scan_text(text, DEFAULT_MARKER, Path::new("k.cu")).map(|v| v.into_iter().map(|m| m.decl).collect())
    }

    #[test]
    fn copies_multiline_nested_signatures_verbatim() {
        let t = "#define MCPP_EXPORT_C\n// MCPP_EXPORT_C in a comment (no)\nstatic int helper(int);\nMCPP_EXPORT_C int run(float a,\n   void (*cb)(int),\n   const float* __restrict__ x) {\n  return 0;\n}\nconst char* s = \"MCPP_EXPORT_C int no(\";\nMCPP_EXPORT_C\nvoid two(DIM(3) y) { }\n";
        let d = scan_one(t).unwrap();
        assert_eq!(d, ["int run(float a, void (*cb)(int), const float* __restrict__ x)", "void two(DIM(3) y)"]);
        assert_eq!(entry_name(&d[0]).as_deref(), Some("run"));
    }

    #[test]
    fn comments_inside_a_signature_are_dropped() {
        let d = scan_one("MCPP_EXPORT_C int f(int a, // the count\n  const int v[4] /* (x) */, unsigned n) { return 0; }\n").unwrap();
        assert_eq!(d, ["int f(int a, const int v[4], unsigned n)"]);
        assert_eq!(signature_key(&d[0]), signature_key("int f(int a, const int v[4], unsigned n)"));
    }

    #[test]
    fn unclosed_parameter_list_is_refused() {
        let e = scan_one("MCPP_EXPORT_C int f(int a,\n").unwrap_err();
        assert!(e.to_string().contains("whose parameter list does not close"), "{e}");
    }

    #[test]
    fn merges_identical_and_refuses_different_halves() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.cu");
        let b = dir.path().join("b.cpp");
        std::fs::write(&a, "MCPP_EXPORT_C int f(int  n) {}\nMCPP_EXPORT_C void g() {}").unwrap();
        std::fs::write(&b, "MCPP_EXPORT_C int f(int n)\n{ return n; }").unwrap();
        let e = scan(&[a.clone(), b.clone()], DEFAULT_MARKER).unwrap();
        assert_eq!(e.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["f", "g"]);
        std::fs::write(&b, "MCPP_EXPORT_C int f(unsigned n) { return 0; }").unwrap();
        let err = scan(&[a.clone(), b.clone()], DEFAULT_MARKER).unwrap_err().to_string();
        assert!(err.contains("two definitions of `f` declare it differently"), "{err}");
        assert!(err.contains(&format!("{}:1", a.display())) && err.contains(&format!("{}:1", b.display())), "both places with lines: {err}");
        assert!(err.contains("int f(int n)") && err.contains("int f(unsigned n)"), "{err}");
        assert!(err.contains("never meet at the link"), "{err}");
    }

    #[test]
    fn listed_entries_are_checked_and_merged_with_the_scanned_ones() {
        assert_eq!(check_listed(" int  listed_run( float *y,\tunsigned n ) ").unwrap(), ("int listed_run(float *y, unsigned n)".to_string(), "listed_run".to_string()));
        for (bad, why) in [
            ("int f(int n);", "has a `;`"),
            ("int f(int n)\n#define X", "control character"),
            ("int f", "no parameter list"),
            ("int (int n)", "no name"),
            ("f(int n)", "no return type"),
            ("int f(int n", "does not close"),
            ("int f(int n) noexcept", "`noexcept` follows its parameter list"),
            ("int f(int n) { }", "has `{`"),
            ("int f(int n /* x */)", "has `/*`"),
            ("int f(int n))", "`)` follows its parameter list"),
            ("int f)(int n)", "closes nothing"),
        ] {
            let e = check_listed(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.cpp");
        std::fs::write(&a, "MCPP_EXPORT_C int f(int n) { return n; }\n").unwrap();
        let scanned = scan_marked(std::slice::from_ref(&a), DEFAULT_MARKER).unwrap();
        let m = Path::new("/p/Cargo.toml");
        let key = "package.metadata.mcpp.island.entries";
        let listed = ["int g(float* y)".to_string(), "int f(int  n)".to_string(), "int g(float *y)".to_string()];
        let e = merge_listed(scanned.clone(), &listed, m, key).unwrap();
        assert_eq!(e.iter().map(|e| (e.name.as_str(), e.decl.as_str(), e.files.len())).collect::<Vec<_>>(), [("f", "int f(int n)", 1), ("g", "int g(float* y)", 0)]);
        assert_eq!(e[1].place(), "/p/Cargo.toml, [package.metadata.mcpp.island] entries");
        let err = merge_listed(scanned.clone(), &["int f(unsigned n)".to_string()], m, key).unwrap_err();
        let t = err.to_string();
        assert!(t.contains("`f` is listed in package.metadata.mcpp.island.entries[0] with another declaration"), "{t}");
        let full = format!("{err:?}");
        assert!(full.contains(&format!("{}:1", a.display())) && full.contains("int f(int n)") && full.contains("int f(unsigned n)"), "both declarations and places: {full}");
        let err = merge_listed(Vec::new(), &["int h(void)".to_string(), "int h(int)".to_string()], m, key).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("package.metadata.mcpp.island.entries[1]"));
        let err = merge_listed(Vec::new(), &["int h;".to_string()], m, key).unwrap_err();
        assert!(err.to_string().starts_with("the island entry `int h;` is not a C function declaration: it has a `;`"), "{err}");
        assert_eq!(err.file.as_deref(), Some(m));
    }

    #[test]
    fn marker_after_return_type_and_twice_in_one_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.cu");
        std::fs::write(&a, "int MCPP_EXPORT_C f(int n) {}").unwrap();
        assert!(scan(std::slice::from_ref(&a), DEFAULT_MARKER).unwrap_err().to_string().contains("after its return type"));
        std::fs::write(&a, "MCPP_EXPORT_C int f(int n) {}\nMCPP_EXPORT_C int f(int n) {}").unwrap();
        assert!(scan(std::slice::from_ref(&a), DEFAULT_MARKER).unwrap_err().to_string().contains("declared twice"));
        std::fs::write(&a, "int f(int n) {}").unwrap();
        assert!(scan(std::slice::from_ref(&a), DEFAULT_MARKER).unwrap_err().to_string().contains("no entry point marked `MCPP_EXPORT_C`"));
        std::fs::write(&a, "// the boundary\n\nMCPP_EXPORT_C int f(int n) noexcept;\nint f(int n) noexcept { return n; }\n").unwrap();
        let e = scan(std::slice::from_ref(&a), DEFAULT_MARKER).unwrap_err().to_string();
        assert!(e.contains(&format!("`f` is marked `MCPP_EXPORT_C` at {}:3 without a body", a.display())), "{e}");
        std::fs::write(&a, "MCPP_EXPORT_C int f(int n)\n  noexcept\n{ return n; }\n").unwrap();
        let e = scan(std::slice::from_ref(&a), DEFAULT_MARKER).unwrap_err().to_string();
        assert!(e.contains(&format!("`f` at {}:1 has `noexcept` after its parameter list", a.display())), "{e}");
        std::fs::write(&a, "MCPP_EXPORT_C int f(int n) __attribute__((noinline)) { return n; }\n").unwrap();
        assert_eq!(scan(&[a], DEFAULT_MARKER).unwrap()[0].line, 1, "an attribute between ) and the body is still a definition");
    }
}
