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

/// The hex sha256 of the file at `path`, read in pieces (a payload or a package of gigabytes
/// is never held whole), not remembered.
///
/// # Errors
/// The read's.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The hex sha256 of the file at `path`, or `None` if it cannot be read.
///
/// The criterion is the content; the file's stat data (size, mtime, ctime, inode) only lets an
/// unchanged file skip being read again: any write to a file changes its ctime, which no tool
/// can set back. Hashes are remembered for the life of the process and, through
/// [`load_hash_cache`]/[`save_hash_cache`], between runs (a no-op build reads no header).
///
/// A remembered hash is trusted only when the file's mtime is older than the moment the hash
/// was taken by more than [`RACY_WINDOW_NS`] (git's "racily clean" rule): on a file system
/// with coarse timestamps (1 s, 2 s on FAT), a same-size edit in the same tick as the read
/// leaves size, mtime, ctime and inode as they were, so such an entry is hashed again.
pub fn hash_file(path: &Path) -> Option<String> {
    let key = stat_key(path);
    if let Some(k) = &key {
        if let Some(entry) = hash_cache().lock().ok()?.get(path) {
            if entry.key == *k && !is_racy(k, entry.hashed_at) {
                return Some(entry.hash.clone());
            }
        }
    }
    let hashed_at = now_ns();
    let hash = sha256_file(path).ok()?;
    if let (Some(k), Ok(mut cache)) = (key, hash_cache().lock()) {
        // Only a key taken after the read may be cached: a write during the read changes it.
        if stat_key(path).as_ref() == Some(&k) {
            cache.insert(path.to_path_buf(), CacheEntry { key: k, hash: hash.clone(), hashed_at });
        }
    }
    Some(hash)
}

/// How much older than the moment its hash was taken a file's mtime must be for the hash to
/// be trusted without reading the file again: 2 s in nanoseconds, the coarsest timestamp
/// granularity of a file system in use (FAT; ext3, HFS+ and many network mounts have 1 s).
pub const RACY_WINDOW_NS: i64 = 2_000_000_000;

/// Whether a hash taken at `hashed_at` (ns since the epoch) may predate a write that left the
/// stat data `key` (see [`hash_file`]).
fn is_racy(key: &StatKey, hashed_at: i64) -> bool {
    key.1 >= hashed_at.saturating_sub(RACY_WINDOW_NS)
}

/// The wall clock in ns since the epoch (0 if it is before the epoch: every entry is racy).
fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)).unwrap_or(0)
}

/// (size, mtime ns, ctime ns, inode) on Unix; `None` elsewhere (every hash reads the file).
/// Also the key of the resolver's version cache ([`crate::tool`]).
pub(crate) type StatKey = (u64, i64, i64, u64);

pub(crate) fn stat_key(path: &Path) -> Option<StatKey> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        if !m.is_file() {
            return None;
        }
        Some((m.len(), m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec()), m.ctime().saturating_mul(1_000_000_000).saturating_add(m.ctime_nsec()), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// One remembered hash: the stat data it was taken under, the hash, and when it was taken
/// (wall clock, ns since the epoch, read before the file was).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct CacheEntry {
    key: StatKey,
    hash: String,
    hashed_at: i64,
}

type HashCache = std::collections::HashMap<PathBuf, CacheEntry>;

fn hash_cache() -> &'static std::sync::Mutex<HashCache> {
    static CACHE: std::sync::OnceLock<std::sync::Mutex<HashCache>> = std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Merge the hash cache saved in `file` (see [`hash_file`]) into this process's (an entry
/// this process already has wins). A file of another format is ignored: every file is read.
pub fn load_hash_cache(file: &Path) {
    let Some(saved) = std::fs::read(file).ok().and_then(|b| serde_json::from_slice::<Vec<(PathBuf, CacheEntry)>>(&b).ok()) else { return };
    if let Ok(mut cache) = hash_cache().lock() {
        for (p, e) in saved {
            cache.entry(p).or_insert(e);
        }
    }
}

/// Forget every hash this process remembers (the next [`hash_file`] of each file reads it;
/// a later [`load_hash_cache`] fills the cache again). For long-lived processes and tests.
pub fn clear_hash_cache() {
    if let Ok(mut cache) = hash_cache().lock() {
        cache.clear();
    }
}

/// Save the entries of this process's hash cache for `paths` into `file` (written only when
/// its content changes), as JSON: `[[path, {key: [size, mtime ns, ctime ns, inode], hash,
/// hashed_at}], ...]`.
pub fn save_hash_cache(file: &Path, paths: &[PathBuf]) -> Result<()> {
    let entries: Vec<(PathBuf, CacheEntry)> = match hash_cache().lock() {
        Ok(cache) => {
            let mut v: Vec<_> = paths.iter().filter_map(|p| cache.get(p).map(|e| (p.clone(), e.clone()))).collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v.dedup_by(|a, b| a.0 == b.0);
            v
        }
        Err(_) => return Ok(()),
    };
    let json = serde_json::to_vec(&entries).map_err(|e| Error::new(crate::error::ErrorKind::Io, e.to_string()))?;
    write_if_changed(file, &json).map(|_| ())
}

/// Write `bytes` to `path` only if the file's content differs (keeping its mtime otherwise),
/// atomically (a temp file in the same directory, then rename). Returns whether it wrote.
///
/// The file gets the mode a plain write gives it: an existing file keeps its mode, a new one
/// gets `0666 & !umask` (0644 usually; the temporary file's own 0600 is not kept). A symbolic
/// link at `path` (`compile_commands.json -> build/cc.json`) is written through: its target is
/// replaced, the link stays.
///
/// # Errors
/// [`crate::ErrorKind::Io`] naming the path.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    let resolved = through_links(path);
    let path = resolved.as_path();
    if same_content(path, bytes) {
        return Ok(false);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create directory", dir, e))?;
    let mut builder = tempfile::Builder::new();
    let existing = std::fs::metadata(path).ok().map(|m| m.permissions());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Created with 0666, the umask applied by the kernel, as `std::fs::write` creates.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(|e| Error::io("cannot create a temporary file in", dir, e))?;
    if let Some(perms) = existing {
        tmp.as_file().set_permissions(perms).map_err(|e| Error::io("cannot set the mode of", tmp.path(), e))?;
    }
    tmp.write_all(bytes).map_err(|e| Error::io("cannot write", tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io("cannot replace", path, e.error))?;
    Ok(true)
}

/// Whether the file at `path` holds exactly `bytes`: its size first, then its content read in
/// pieces (an old copy of a large payload is never held whole beside the new one).
fn same_content(path: &Path, bytes: &[u8]) -> bool {
    use std::io::Read;
    if std::fs::metadata(path).map(|m| m.len() != bytes.len() as u64).unwrap_or(true) {
        return false;
    }
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0;
    loop {
        match file.read(&mut buf) {
            Ok(0) => return at == bytes.len(),
            Ok(n) if at + n <= bytes.len() && buf[..n] == bytes[at..at + n] => at += n,
            Ok(_) | Err(_) => return false,
        }
    }
}

/// `path` with every symbolic link at its end followed (a relative target read from the link's
/// directory), at most 40 deep as the kernel does; `path` itself when it is no link.
fn through_links(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(target) => p = p.parent().unwrap_or(Path::new(".")).join(target),
            Err(_) => break,
        }
    }
    p
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
    // Each search directory once (the list holds one entry per includer): without this the
    // work is found x search x search stats, ~40 ms per CUDA compile with the toolkit headers.
    let mut seen = std::collections::HashSet::new();
    let search: Vec<&PathBuf> = search.iter().filter(|d| seen.insert(*d)).collect();
    let found_set: std::collections::HashSet<&PathBuf> = found.iter().collect();
    let mut tried = std::collections::HashSet::new();
    let mut out = Vec::new();
    for f in found {
        for dir in &search {
            let Ok(rel) = f.strip_prefix(dir) else { continue };
            for other in &search {
                let candidate = normalize(&other.join(rel));
                if !found_set.contains(&candidate) && tried.insert(candidate.clone()) && !candidate.exists() {
                    out.push(candidate);
                }
            }
        }
    }
    out
}

/// Whether the files `paths` look as if they live on a file system with 1-second timestamps
/// (FAT, ext3, some network mounts): every one that exists has a modification time of whole
/// seconds. On a file system with finer times a file has one by chance once in a billion, so
/// two or more (the manifest and a source) are taken for the file system's doing.
pub(crate) fn whole_second_times(paths: &[&Path]) -> bool {
    let mut seen = 0;
    for p in paths {
        let Some(t) = std::fs::metadata(p).ok().and_then(|m| m.modified().ok()) else { continue };
        match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) if d.subsec_nanos() == 0 => seen += 1,
            _ => return false,
        }
    }
    seen >= 2
}

/// The warning for [`whole_second_times`], said once per device cache: `marker` records that it
/// was (written when the warning is returned).
pub(crate) fn whole_second_warning(paths: &[&Path], marker: &Path) -> Option<String> {
    if marker.exists() || !whole_second_times(paths) {
        return None;
    }
    let _ = write_if_changed(marker, b"warned: the package's files have whole-second modification times\n");
    Some("this package's files have whole-second modification times, as on a file system with 1-second timestamps (FAT, ext3, some network mounts): cargo decides whether to rerun the build script by comparing them with the time it last ran, so an edit made in the same second as a build is not seen and the old bytes stay embedded; after such an edit, `touch` the file (or edit it again) before building, or keep the package on a file system with finer timestamps (ext4, btrfs, xfs, tmpfs). Said once for this package and profile.".to_string())
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
    fn shadow_candidates_name_each_absent_path_once_and_never_a_found_file() {
        let dir = tempfile::tempdir().unwrap();
        let (inc, src) = (dir.path().join("inc"), dir.path().join("src"));
        std::fs::create_dir_all(inc.join("sub")).unwrap();
        std::fs::create_dir_all(&src).unwrap();
        let (a, b) = (inc.join("sub/a.h"), src.join("b.h"));
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        // One search entry per includer, as the graph builds it: duplicates, out of order.
        let search = vec![src.clone(), inc.clone(), src.clone(), inc.join("sub"), src.clone()];
        let got = shadow_candidates(&[a.clone(), b.clone()], &search);
        // a.h is `sub/a.h` under inc and `a.h` under inc/sub; b.h is `b.h` under src.
        let mut want = vec![src.join("sub/a.h"), inc.join("sub/sub/a.h"), src.join("a.h"), inc.join("a.h"), inc.join("b.h"), inc.join("sub/b.h")];
        let mut sorted = got.clone();
        sorted.sort();
        want.sort();
        assert_eq!(sorted, want);
        std::fs::write(src.join("a.h"), "").unwrap();
        assert!(!shadow_candidates(&[a, b], &search).contains(&src.join("a.h")), "an existing file is not absent");
    }

    /// A coarse file system, simulated: the saved entry has the stat data the file has now
    /// (a same-size edit in the same tick leaves size, mtime, ctime and inode unchanged there)
    /// and the hash of the bytes before the edit.
    #[test]
    fn a_hash_taken_in_the_same_tick_as_the_mtime_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("racy.glsl");
        std::fs::write(&f, "const int A = 1;").unwrap();
        let recorded = std::fs::metadata(&f).unwrap().modified().unwrap();
        let old_hash = sha256_hex(b"const int A = 1;");
        std::fs::write(&f, "const int A = 2;").unwrap();
        std::fs::File::options().write(true).open(&f).unwrap().set_modified(recorded).unwrap();
        let key = stat_key(&f).unwrap();
        let save = |hashed_at: i64| {
            let file = dir.path().join(format!("hashes-{hashed_at}.json"));
            std::fs::write(&file, serde_json::to_vec(&vec![(f.clone(), CacheEntry { key, hash: old_hash.clone(), hashed_at })]).unwrap()).unwrap();
            clear_hash_cache();
            load_hash_cache(&file);
        };
        // Hashed 0.5 s after the mtime, i.e. in the same 1 s tick: racy, so the file is read.
        save(key.1 + 500_000_000);
        assert_eq!(hash_file(&f).unwrap(), sha256_hex(b"const int A = 2;"));
        // A re-read entry is remembered with the time it was taken, still racy now.
        assert!(is_racy(&key, hash_cache().lock().unwrap()[&f].hashed_at));
        // Hashed 3 s after the mtime: a later write would have a later mtime, so the entry is
        // trusted without reading (here it is a fabricated one, which shows it was not read).
        save(key.1 + 3_000_000_000);
        assert_eq!(hash_file(&f).unwrap(), old_hash);
        clear_hash_cache();
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

    #[cfg(unix)]
    #[test]
    fn written_files_get_a_plain_writes_mode_and_links_are_written_through() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // What a plain write gives a new file here (0666 & !umask).
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let new = dir.path().join("new.json");
        assert!(write_if_changed(&new, b"1").unwrap());
        assert_eq!(mode(&new), mode(&plain), "not tempfile's 0600");
        // An existing file keeps its mode.
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(write_if_changed(&new, b"2").unwrap());
        assert_eq!(mode(&new), 0o640);
        // A link (relative, to a file not there yet) is written through and stays a link.
        std::fs::create_dir(dir.path().join("build")).unwrap();
        let link = dir.path().join("compile_commands.json");
        std::os::unix::fs::symlink("build/cc.json", &link).unwrap();
        assert!(write_if_changed(&link, b"[]").unwrap());
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(dir.path().join("build/cc.json")).unwrap(), b"[]");
        assert!(!write_if_changed(&link, b"[]").unwrap(), "unchanged through the link");
    }
}
