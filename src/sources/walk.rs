//! The one glob expander and the one containment check: nothing
//! outside the package is read. Every manifest glob (`sources`,
//! `cxx-sources`, the island's `sources` and `fallback`) is expanded by [`expand`], and every
//! include directory is checked by [`package_dir`].
//!
//! Containment is decided on the resolved path, never on the pattern's spelling: every
//! directory the walk enters and every file it matches is canonicalised (symlinks followed,
//! `..` resolved) and must lie under the canonical package root. So `.[.]/x/*.comp`, `.*/..`
//! spellings and a symlink to a file or directory outside the package are refused, naming the
//! glob, the path and where it leads; `shaders/../shaders/x.comp` is fine.
//!
//! Symlinks inside the package are followed. A directory is walked once per pattern position
//! (keyed by its canonical path), so a loop (`shaders/loop -> .`) is walked once and a file
//! reached through several paths is matched once (the first path in sorted order names it). A
//! symlink the glob matches whose target does not exist is refused by name. A matched file whose
//! package-relative name has a control character (a newline) is refused: the name is written
//! into generated Rust/C/C++ and cargo directives, which cannot carry one. So is a name that is
//! not UTF-8 which the glob matches (read with U+FFFD for its odd bytes), shown escaped
//! (`bad\xff.slang`), and a directory with such a name that a `**` would walk.
//!
//! Build output and repositories are never walked ([`is_excluded_dir`]): a `.git` directory and
//! cargo's target directory, whatever its name or place (`target/`, or a `CARGO_TARGET_DIR`
//! inside the package), known by the `CACHEDIR.TAG` cargo writes at its root. So
//! `files = ["**/*.txt"]` never embeds `target/junk.txt` nor a payload copy in `OUT_DIR`, and
//! `pack.files` never packs the build. The same test serves the build script and `cargo mcpp
//! build`'s validation before cargo starts (one computation, no `cargo metadata` needed).
//!
//! Pattern syntax is the `glob` crate's (`*`, `?`, `[...]`, `**` as a whole component), matched
//! one path component at a time with its default options (`*` matches a leading `.`).

use crate::error::{Error, ErrorKind, Result};
use crate::text::echo;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// One file a glob matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The path as walked, lexically normalised, absolute (`<root>/shaders/a/x.comp`).
    pub path: PathBuf,
    /// Package-relative, `/`-separated (`shaders/a/x.comp`).
    pub rel: String,
    /// The canonical path (symlinks resolved): the identity used to match a file once.
    pub real: PathBuf,
}

/// Who asks, for the refusal text: the manifest, the key (`package.metadata.mcpp.sources[0]`)
/// and how the glob is named in a headline (`sources entry 'shaders/*.comp'`).
#[derive(Debug, Clone, Copy)]
pub struct Asker<'a> {
    /// Where a refusal points: the manifest's `path:line:col` of the glob (or its path alone).
    pub manifest: &'a Path,
    /// The dotted key of the glob.
    pub key: &'a str,
    /// The headline's subject, e.g. ``sources entry 'x/*.comp'``.
    pub subject: &'a str,
}

impl Asker<'_> {
    fn refuse(&self, message: String) -> Error {
        Error::new(ErrorKind::Manifest, message).file(self.manifest).key(self.key)
    }
}

enum Comp {
    Literal(String),
    AnyDirs,
    Pattern(glob::Pattern),
}

/// Expand `pattern` under `root`; files only, sorted by walked path, each canonical file once.
/// An empty result is the caller's to refuse (it knows the key's wording).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `asker`'s key: an absolute pattern; an invalid glob; a
/// directory walked or file matched that resolves outside the package root (the path and its
/// target named); a matched symlink whose target does not exist; a matched file whose name has
/// a control character, or one that is not UTF-8 (and a directory named so under a `**`).
/// [`ErrorKind::Io`] when the root cannot be resolved.
pub fn expand(root: &Path, pattern: &str, asker: Asker) -> Result<Vec<Matched>> {
    if Path::new(pattern).is_absolute() || pattern.starts_with(['/', '\\']) {
        return Err(asker.refuse(format!("{} leaves the package: it is an absolute path", asker.subject)).help("write globs relative to the package root"));
    }
    glob::Pattern::new(pattern).map_err(|e| asker.refuse(format!("{} is not a valid glob: {}", asker.subject, e.msg)))?;
    let mut comps = Vec::new();
    for c in pattern.split(['/', '\\']).filter(|c| !c.is_empty()) {
        comps.push(if c == "**" {
            Comp::AnyDirs
        } else if c.contains(['*', '?', '[']) {
            Comp::Pattern(glob::Pattern::new(c).map_err(|e| asker.refuse(format!("{} is not a valid glob: {}", asker.subject, e.msg)))?)
        } else {
            Comp::Literal(c.to_string())
        });
    }
    let real_root = std::fs::canonicalize(root).map_err(|e| Error::io("cannot resolve the package root", root, e))?;
    let mut w = Walker { asker, given_root: root.to_path_buf(), root: real_root, comps, visited: HashSet::new(), seen: HashSet::new(), out: Vec::new() };
    if !w.comps.is_empty() {
        w.walk(root.to_path_buf(), Vec::new(), 0)?;
    }
    w.out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(w.out)
}

/// An include directory of the manifest, absolute. A relative one must resolve (symlinks
/// followed) inside the package root, as globs must; an absolute one is an explicit choice of a
/// directory outside the package (a system or toolkit include) and is taken as written.
///
/// `manifest` is where a refusal points: the manifest, or its `path:line:col` of the entry.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `key`: the directory does not exist, or a relative one
/// resolves outside the package.
pub fn package_dir(root: &Path, manifest: &Path, key: &str, given: &Path) -> Result<PathBuf> {
    let abs = if given.is_absolute() { given.to_path_buf() } else { root.join(given) };
    let shown = echo(&given.display().to_string());
    if crate::text::has_control(&abs.to_string_lossy()) {
        return Err(Error::new(ErrorKind::Manifest, format!("include directory `{shown}` has a control character in its path"))
            .file(manifest)
            .key(key)
            .detail("The path is written into cargo's directives and depfiles, which cannot carry a newline or control character.")
            .help("rename the directory"));
    }
    if !abs.is_dir() {
        return Err(Error::new(ErrorKind::Manifest, format!("include directory `{shown}` does not exist"))
            .file(manifest)
            .key(key)
            .help("include directories are relative to the package root; fix the path or remove the entry"));
    }
    if !given.is_absolute() {
        let real = std::fs::canonicalize(&abs).map_err(|e| Error::io("cannot resolve", &abs, e))?;
        let real_root = std::fs::canonicalize(root).map_err(|e| Error::io("cannot resolve the package root", root, e))?;
        if !real.starts_with(&real_root) {
            return Err(Error::new(ErrorKind::Manifest, format!("include directory `{shown}` leaves the package: it resolves to {}", real.display()))
                .file(manifest)
                .key(key)
                .detail(format!("package root: {}", real_root.display()))
                .help("a relative include directory is one of the package (symlinks are followed); a dependency's headers come through its `export-includes` (with `links`) and this package's `include-from`; write an absolute path to name a directory outside it on purpose"));
        }
    }
    Ok(abs)
}

struct Walker<'a> {
    asker: Asker<'a>,
    /// The package root as given (paths are built on it).
    given_root: PathBuf,
    /// The canonical package root (containment is checked against it).
    root: PathBuf,
    comps: Vec<Comp>,
    /// (canonical directory, pattern position) already walked: a loop or a second path to one
    /// directory is walked once, and two `**` cannot make the walk exponential.
    visited: HashSet<(PathBuf, usize)>,
    /// Canonical files already matched.
    seen: HashSet<PathBuf>,
    out: Vec<Matched>,
}

impl Walker<'_> {
    /// Walk directory `dir` (reached by the components `rel`) at pattern position `i`.
    fn walk(&mut self, dir: PathBuf, rel: Vec<String>, i: usize) -> Result<()> {
        if rel.last().is_some_and(|name| name != "..") && is_excluded_dir(&dir) {
            return Ok(());
        }
        let real = self.inside(&dir, &rel)?;
        if !self.visited.insert((real, i)) {
            return Ok(());
        }
        let last = i + 1 == self.comps.len();
        match &self.comps[i] {
            Comp::AnyDirs => {
                if last {
                    // A trailing `**` matches directories only, hence no file.
                    return Ok(());
                }
                self.walk(dir.clone(), rel.clone(), i + 1)?;
                // `**` walks every directory: one whose name is not UTF-8 cannot be matched.
                if let Some(odd) = self.odd_names(&dir).into_iter().find(|n| dir.join(n).is_dir()) {
                    return Err(self.not_utf8(&rel, &odd));
                }
                for name in self.entries(&dir) {
                    let p = dir.join(&name);
                    if p.is_dir() {
                        self.walk(p, with(&rel, &name), i)?;
                    }
                }
            }
            Comp::Literal(name) => {
                let name = name.clone();
                self.candidate(&dir, &rel, name, i, last)?;
            }
            Comp::Pattern(pat) => {
                let pat = pat.clone();
                let mut names: Vec<String> = self.entries(&dir).into_iter().filter(|n| pat.matches(n)).collect();
                // A name that is not UTF-8 the pattern would match (read with U+FFFD for the
                // bytes that are not): refused by name rather than silently left out.
                let wanted = |p: &Path| if last { p.is_file() } else { p.is_dir() };
                if let Some(odd) = self.odd_names(&dir).into_iter().find(|n| pat.matches(&n.to_string_lossy()) && wanted(&dir.join(n))) {
                    return Err(self.not_utf8(&rel, &odd));
                }
                // `read_dir` never lists `..`, but a shell and the `glob` crate let `.[.]`, `.?`
                // and `.*` match it; it is a candidate like any other, and containment decides.
                if pat.matches("..") {
                    names.push("..".to_string());
                }
                for name in names {
                    self.candidate(&dir, &rel, name, i, last)?;
                }
            }
        }
        Ok(())
    }

    fn candidate(&mut self, dir: &Path, rel: &[String], name: String, i: usize, last: bool) -> Result<()> {
        let p = dir.join(&name);
        let rel = with(rel, &name);
        if !last {
            if p.is_dir() {
                self.walk(p, rel, i + 1)?;
            }
            return Ok(());
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else { return Ok(()) };
        if meta.file_type().is_symlink() && std::fs::metadata(&p).is_err() {
            let target = std::fs::read_link(&p).map(|t| t.display().to_string()).unwrap_or_default();
            return Err(self
                .asker
                .refuse(format!("{} matches `{}`, a symbolic link to `{}`, which does not exist", self.asker.subject, echo(&normal(&rel)), echo(&target)))
                .help("remove the link or fix its target, or narrow the glob so it does not match it"));
        }
        // Followed through symbolic links: a FIFO, a socket or a device (a link to /dev/zero)
        // would hang or never end when read, so it is refused by name rather than left out.
        if let Some(kind) = std::fs::metadata(&p).ok().and_then(|m| not_regular(&m)) {
            if kind != "a directory" {
                let what = match std::fs::read_link(&p) {
                    Ok(target) => format!("a symbolic link to `{}`, {kind}", echo(&target.display().to_string())),
                    Err(_) => kind.to_string(),
                };
                return Err(self
                    .asker
                    .refuse(format!("{} matches `{}`, which is {what}, not a regular file", self.asker.subject, echo(&normal(&rel))))
                    .detail("Reading it could block forever or never end, so nothing is read from it.")
                    .help("remove it from the directory, or narrow the glob so it does not match it"));
            }
        }
        if !p.is_file() {
            return Ok(());
        }
        let real = self.inside(&p, &rel)?;
        if !self.seen.insert(real.clone()) {
            return Ok(());
        }
        let rel = normal(&rel);
        if crate::text::has_control(&rel) {
            return Err(self
                .asker
                .refuse(format!("{} matches `{}`, a file name with a control character", self.asker.subject, echo(&rel)))
                .detail("The name is written into the generated Rust, C and C++ surface and into cargo's directives, which cannot carry a newline or control character.")
                .help("rename the file"));
        }
        if name.len() > MAX_NAME_BYTES {
            return Err(self
                .asker
                .refuse(format!("{} matches `{}`, a file name of {} bytes", self.asker.subject, echo(&rel), name.len()))
                .detail(format!("cargo-mcpp names its outputs after the file (`<name>.spv`, `<name>.spv.d`, a payload's copy), and a file system allows 255 bytes in one name: {MAX_NAME_BYTES} leaves room for the suffixes."))
                .help(format!("rename the file to at most {MAX_NAME_BYTES} bytes")));
        }
        let path = self.given_root.join(&rel);
        self.out.push(Matched { path, rel, real });
        Ok(())
    }

    /// The canonical path of `p`, refused when it is outside the package root.
    fn inside(&self, p: &Path, rel: &[String]) -> Result<PathBuf> {
        let real = std::fs::canonicalize(p).map_err(|e| Error::io("cannot resolve", p, e))?;
        if real.starts_with(&self.root) {
            return Ok(real);
        }
        let walked = if rel.is_empty() { ".".to_string() } else { rel.join("/") };
        Err(self
            .asker
            .refuse(format!("{} leaves the package: `{}` resolves to {}", self.asker.subject, echo(&walked), real.display()))
            .detail(format!("package root: {}", self.root.display()))
            .detail("Containment is decided on the resolved path of every directory walked and file matched (symlinks followed, `..` resolved).")
            .help("write globs that match files inside the package root, without `..`; copy a file from outside into the package instead of linking to it"))
    }

    /// The names in `dir` that are not UTF-8 (which [`Walker::entries`] leaves out), sorted.
    fn odd_names(&self, dir: &Path) -> Vec<std::ffi::OsString> {
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.file_name()).filter(|n| n.to_str().is_none()).collect()).unwrap_or_default();
        names.sort();
        names
    }

    /// The refusal of `name` (not UTF-8) in the directory reached by `rel`, which the glob matches.
    fn not_utf8(&self, rel: &[String], name: &std::ffi::OsStr) -> Error {
        let dir = normal(rel);
        let shown = if dir.is_empty() { crate::text::echo_os(name) } else { format!("{}/{}", echo(&dir), crate::text::echo_os(name)) };
        self.asker
            .refuse(format!("{} matches `{shown}`, a file name that is not UTF-8", self.asker.subject))
            .detail("The name is written into the generated Rust, C and C++ surface and into cargo's directives, which are UTF-8 text.")
            .help("rename the file (or directory) to a UTF-8 name, or narrow the glob so it does not match it")
    }

    /// The names in `dir`, sorted; UTF-8 names only (a glob is text; [`Walker::odd_names`]
    /// are the others).
    fn entries(&self, dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).map(|rd| rd.flatten().filter_map(|e| e.file_name().into_string().ok()).collect()).unwrap_or_default();
        names.sort();
        names
    }
}

/// The longest file name a glob may match, in bytes: the outputs named after it add a suffix
/// (`.spv.d`, `.<hash>.json`) within the 255 bytes of one name.
pub(crate) const MAX_NAME_BYTES: usize = 200;

/// What the file of `meta` (followed through symbolic links) is when it is not a regular
/// file: `a directory`, `a FIFO`, `a socket`, `a character device` (`/dev/zero`), `a block
/// device`; `None` for a regular file. The one test of "a file that can be read to its end"
/// (globs here, `cargo mcpp pack`'s icon and runtime file).
pub(crate) fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    Some("a special file")
}

/// Whether the walk leaves directory `dir` out: a `.git` directory, or a cargo target
/// directory, known by the `CACHEDIR.TAG` file cargo writes at its root (any tool's cache
/// directory tagged so is build output too). Source: cargo's `Layout` (the tag is written
/// with the target directory, `CARGO_TARGET_DIR` or `<workspace>/target`), the Cache Directory
/// Tagging Specification.
pub fn is_excluded_dir(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == ".git") || dir.join("CACHEDIR.TAG").is_file()
}

fn with(rel: &[String], name: &str) -> Vec<String> {
    let mut v = rel.to_vec();
    v.push(name.to_string());
    v
}

/// The components joined by `/`, `.` dropped and `..` applied lexically.
fn normal(rel: &[String]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in rel {
        match c.as_str() {
            "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_applies_dot_and_dot_dot() {
        let v = |s: &str| s.split('/').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(normal(&v("shaders/./a/../x.comp")), "shaders/x.comp");
        assert_eq!(normal(&v("a/b")), "a/b");
    }

    #[test]
    fn cargo_target_directories_and_git_are_never_walked() {
        let dir = tempfile::tempdir().unwrap();
        for (rel, bytes) in [("a/x.txt", "1"), ("target/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55"), ("target/junk.txt", "2"), ("target/debug/build/p/out/y.txt", "3"), ("elsewhere/CACHEDIR.TAG", "t"), ("elsewhere/z.txt", "4"), (".git/w.txt", "5"), ("y.txt", "6")] {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        let asker = Asker { manifest: Path::new("Cargo.toml"), key: "k", subject: "s" };
        let rels = |pattern: &str| expand(dir.path(), pattern, asker).unwrap().into_iter().map(|m| m.rel).collect::<Vec<_>>();
        assert_eq!(rels("**/*.txt"), ["a/x.txt", "y.txt"]);
        assert!(rels("t*/*.txt").is_empty());
        assert!(rels("target/junk.txt").is_empty());
    }
}
