//! Content fingerprints, depfiles and atomic write-if-changed: what makes "no stale bytes" hold.
//!
//! An action's key is the sha256 of its tool identity (path + version text), its argv, its
//! working directory, and the content of every declared input. After a successful run, the
//! files its depfile lists (e.g. an `#include`d `.glsl`) are hashed and recorded with the
//! outputs' hashes. The action is fresh only when the key matches, every recorded dependency
//! still has its hash, and every output still has the bytes it was left with.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hex sha256 of the file at `path`, or `None` if it cannot be read.
pub fn hash_file(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| sha256_hex(&b))
}

/// Write `bytes` to `path` only if the file's content differs (keeping its mtime otherwise),
/// atomically (a temp file in the same directory, then rename). Returns whether it wrote.
///
/// # Errors
/// [`crate::ErrorKind::Io`] naming the path.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if std::fs::read(path).map(|old| old == bytes).unwrap_or(false) {
        return Ok(false);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create directory", dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io("cannot create a temporary file in", dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io("cannot write", tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io("cannot replace", path, e.error))?;
    Ok(true)
}

/// The state recorded for one action after it ran successfully.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ActionState {
    /// The key (see module docs).
    pub key: String,
    /// Files the depfile listed beyond the declared inputs, with their hashes.
    pub discovered: Vec<(PathBuf, String)>,
    /// Outputs with their hashes.
    pub outputs: Vec<(PathBuf, String)>,
    /// Paths that did not exist when the action ran and that would change what an include
    /// resolves to if created (the same relative include under an earlier search directory).
    #[serde(default)]
    pub absent: Vec<PathBuf>,
}

impl ActionState {
    /// Load the recorded state from `file`; `None` if absent or unreadable (= stale).
    pub fn load(file: &Path) -> Option<ActionState> {
        serde_json::from_slice(&std::fs::read(file).ok()?).ok()
    }
    /// Whether the recorded state says the action is fresh under `key`.
    pub fn is_fresh(&self, key: &str) -> bool {
        self.key == key
            && self.discovered.iter().all(|(p, h)| hash_file(p).as_deref().unwrap_or("missing") == h)
            && self.outputs.iter().all(|(p, h)| hash_file(p).as_deref() == Some(h))
            && self.absent.iter().all(|p| !p.exists())
    }
}

/// The paths that would shadow an included file if created: for each file `found` an action
/// read through its include search path, the same relative include name under every search
/// directory, minus `found` itself, that does not exist now. `search` is the search path (the
/// includer directories and the `-I` directories, in any order: over-approximating only ever
/// costs a rebuild, never a stale byte).
pub fn shadow_candidates(found: &[PathBuf], search: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for f in found {
        for dir in search {
            let Ok(rel) = f.strip_prefix(dir) else { continue };
            for other in search {
                let candidate = normalize(&other.join(rel));
                if &candidate != f && !candidate.exists() && !out.contains(&candidate) {
                    out.push(candidate);
                }
            }
        }
    }
    out
}

/// The files a Makefile-style depfile lists as prerequisites (all rules, all targets),
/// relative paths resolved against `cwd`. Understands `\` line continuations, `\ ` escaped
/// spaces and `$$`.
pub fn parse_depfile(text: &str, cwd: &Path) -> Vec<PathBuf> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out: Vec<PathBuf> = Vec::new();
    for line in joined.lines() {
        let Some(colon) = find_rule_colon(line) else { continue };
        let mut word = String::new();
        let mut chars = line[colon + 1..].chars().peekable();
        let mut words = Vec::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' if matches!(chars.peek(), Some(' ' | '#' | '\\')) => word.push(chars.next().unwrap_or(' ')),
                '$' if chars.peek() == Some(&'$') => {
                    chars.next();
                    word.push('$');
                }
                ' ' | '\t' => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                _ => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        for w in words {
            let p = PathBuf::from(&w);
            let p = if p.is_absolute() { p } else { cwd.join(p) };
            let p = normalize(&p);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The `:` that separates targets from prerequisites (skipping a Windows drive letter `C:`).
fn find_rule_colon(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    (0..bytes.len()).find(|&i| {
        bytes[i] == b':'
            && !(i == 1 && bytes[0].is_ascii_alphabetic())
            && !(i >= 2 && bytes[i - 1].is_ascii_alphabetic() && matches!(bytes[i - 2], b' ' | b'\t') && matches!(bytes.get(i + 1), Some(b'/' | b'\\')))
    })
}

/// `a/./b/../c` -> `a/c`, lexically.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depfiles_of_both_glsl_compilers_parse() {
        let cwd = Path::new("/pkg");
        assert_eq!(
            parse_depfile("out.spv: scale.comp ./common.glsl\n", cwd),
            [PathBuf::from("/pkg/scale.comp"), PathBuf::from("/pkg/common.glsl")]
        );
        assert_eq!(
            parse_depfile("/o/x.spv: /a/b\\ c.comp \\\n  /inc/d.glsl\n/inc/d.glsl:\n", cwd),
            [PathBuf::from("/a/b c.comp"), PathBuf::from("/inc/d.glsl")]
        );
    }

    #[test]
    fn write_if_changed_keeps_identical_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a/b.txt");
        assert!(write_if_changed(&f, b"x").unwrap());
        assert!(!write_if_changed(&f, b"x").unwrap());
        assert!(write_if_changed(&f, b"y").unwrap());
        assert_eq!(std::fs::read(&f).unwrap(), b"y");
    }
}
