//! Embedded data files: any data file of the package (fonts, weights,
//! tables, text) handed to the same surface generator as the compiled payloads
//! ([`crate::surface`]), so every payload kind and every storage form applies to it.
//!
//! `[package.metadata.mcpp.embed]` ([`crate::config::manifest::EmbedOptions`]; a list, `embed =
//! ["assets/*"]`, is the shorthand of `files`):
//!
//! - `files`: globs, or `{ glob, element = "bytes" | "words", nul = true, namespace = "a.b" }`.
//!   Each file is one payload: [`PayloadKind::Bytes`] (default), [`PayloadKind::Words32`]
//!   (`element = "words"`: its size must be a multiple of 4) or [`PayloadKind::Text`]
//!   (`nul = true`: UTF-8 without NUL, handed out NUL-terminated too). Its identifier is the
//!   file name ([`names::identifier`]: `message.txt` -> `message_txt`, `3d-font.ttf` ->
//!   `_3d_font_ttf`, `é.txt` -> `x__txt`: `__` starts a name C++ reserves), its namespace the entry's `namespace` then the
//!   directories below the glob's fixed prefix (the components before the first one with a
//!   wildcard; for a glob without one, the file's own directory).
//! - `tables`: `{ name, glob, key = "name" | "stem" | "path" }`. Each file is a bytes payload
//!   in the namespace `name` (and its directories below the fixed prefix); the surface adds
//!   the lookup `key -> bytes` in that namespace ([`crate::surface::LookupTable`]).
//!
//! `storage` in `[package.metadata.mcpp.embed]` and in each entry (the entry's wins) sets where
//! the files' bytes live, over the package's ([`PayloadItem::storage`]).
//!
//! Every refusal names the manifest's `file:line:col` of the entry and the key: a bad or empty
//! glob, a `words` file whose size is no multiple of 4 (the file and its size), a `nul` file
//! that is not UTF-8 text without NUL, an unknown `element`/`key`, a namespace or table name
//! that is no identifier, two files with one name (both named, also against the compiled
//! payloads: [`merge`]), two files with one key in a table (both named).

use crate::error::{Error, ErrorKind, Result};
use crate::config::manifest::Manifest;
use crate::surface::{names, storage, LookupTable, PayloadItem, PayloadKind};
use std::path::PathBuf;

/// The rule name embedded payloads carry ([`PayloadItem::rule`]).
pub const RULE: &str = "embed";

/// One embedded file, named, with the manifest entry that listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedItem {
    /// The payload, named (its `payload` is the package's file itself).
    pub item: PayloadItem,
    /// The dotted key of the entry (`package.metadata.mcpp.embed.files[0]`).
    pub key: String,
    /// The entry's `file:line:col` in the manifest.
    pub at: String,
}

/// What `[package.metadata.mcpp.embed]` declares, expanded and checked.
#[derive(Debug, Clone, Default)]
pub struct Embedded {
    /// Every embedded file, in entry order then path order.
    pub items: Vec<EmbeddedItem>,
    /// The lookup tables.
    pub tables: Vec<LookupTable>,
    /// The directories watched for added files (each glob's fixed prefix, existing only).
    pub watch_dirs: Vec<PathBuf>,
    /// Warnings: a glob with a wildcard at the package root (cargo cannot watch the root).
    pub warnings: Vec<String>,
}

impl Embedded {
    /// The files to watch: every embedded file (absolute).
    pub fn files(&self) -> impl Iterator<Item = &PathBuf> {
        self.items.iter().map(|i| &i.item.payload)
    }
}

/// One file a glob of an entry matched.
struct Match {
    /// Absolute.
    path: PathBuf,
    /// Package-relative, `/`-separated.
    rel: String,
    /// The directories below the glob's fixed prefix.
    dirs: Vec<String>,
    /// The file name.
    file: String,
}

/// What one glob of an entry matched, refused when it matches nothing.
fn expand(manifest: &Manifest, key: &str, at: &str, glob: &str) -> Result<Vec<Match>> {
    let subject = format!("`{}`", crate::text::echo(glob));
    let matched = crate::sources::walk::expand(manifest.dir(), glob, crate::sources::walk::Asker { manifest: std::path::Path::new(at), key, subject: &subject })?;
    if matched.is_empty() {
        return Err(Error::new(ErrorKind::Manifest, format!("{subject} matches no file"))
            .file(at)
            .key(key)
            .help(format!("check the pattern against the files under {}; globs are relative to the package root", manifest.dir().display())));
    }
    let comps: Vec<&str> = names::components(glob);
    let wild = comps.iter().position(|c| c.contains(['*', '?', '[']));
    let fixed = wild.unwrap_or(comps.len().saturating_sub(1));
    Ok(matched
        .into_iter()
        .map(|m| {
            let parts = names::components(&m.rel);
            let file = parts.last().map(|s| s.to_string()).unwrap_or_default();
            let dirs = parts[fixed.min(parts.len().saturating_sub(1))..parts.len().saturating_sub(1)].iter().map(|s| s.to_string()).collect();
            Match { path: m.path, rel: m.rel, dirs, file }
        })
        .collect())
}

/// Watch the fixed prefix of `glob` for added files (an existing directory, once); a glob
/// with a wildcard at the package root is warned instead, as for `sources`: the root holds
/// `target/`, which changes on every build.
fn watch(out: &mut Embedded, manifest: &Manifest, glob: &str) {
    let comps = names::components(glob);
    let fixed: Vec<&str> = comps.iter().take_while(|c| !c.contains(['*', '?', '['])).copied().collect();
    if fixed.len() == comps.len() {
        return;
    }
    if fixed.is_empty() {
        out.warnings.push(format!(
            "the embed glob `{}` matches files at the package root; cargo cannot watch the root for new files (it holds target/), so a new one is embedded only after Cargo.toml changes; keep embedded files in a directory",
            crate::text::echo(glob)
        ));
        return;
    }
    let dir = manifest.dir().join(fixed.join("/"));
    if dir.is_dir() && !out.watch_dirs.contains(&dir) {
        out.watch_dirs.push(dir);
    }
}

/// Read and check `[package.metadata.mcpp.embed]`: every glob expanded, every file named and
/// checked against its element, every table's keys made. Empty when the table is absent.
///
/// # Errors
/// [`ErrorKind::Manifest`] at the entry's `file:line:col` (see the module docs).
pub fn collect(manifest: &Manifest) -> Result<Embedded> {
    let mut out = Embedded::default();
    let Some(embed) = &manifest.mcpp.embed else { return Ok(out) };
    let table = crate::config::manifest::MCPP_TABLE;
    let embed_storage = embed.storage.as_deref().map(|raw| storage::parse(manifest, "embed.storage", raw)).transpose()?;
    if embed_storage.is_some() && embed.files.is_empty() && embed.tables.is_empty() {
        return Err(Error::new(ErrorKind::Manifest, "`storage` in [package.metadata.mcpp.embed] applies to no payload: the table has no `files` and no `tables`")
            .file(manifest.at_col("embed.storage"))
            .key(format!("{table}.embed.storage"))
            .help("remove the key, or list the files to embed (`files = [\"assets/**/*\"]`)"));
    }
    for (index, entry) in embed.files.iter().enumerate() {
        let rel_key = if embed.list { format!("embed[{index}]") } else { format!("embed.files[{index}]") };
        let key = format!("{table}.{rel_key}");
        let at = manifest.at_col(&rel_key);
        let opts = entry.options();
        let refuse = |sub: &str, message: String, help: &str| {
            let (k, a) = if manifest.spans.position(&format!("{key}.{sub}")).is_some() { (format!("{key}.{sub}"), manifest.at_col(&format!("{rel_key}.{sub}"))) } else { (key.clone(), at.clone()) };
            Error::new(ErrorKind::Manifest, message).file(a).key(k).help(help.to_string())
        };
        let kind = match (opts.element.as_deref(), opts.nul) {
            (None | Some("bytes"), Some(true)) => PayloadKind::Text,
            (None | Some("bytes"), _) => PayloadKind::Bytes,
            (Some("words"), Some(true)) => {
                return Err(refuse("nul", "`nul = true` makes the files text, which `element = \"words\"` is not".into(), "remove `nul` to embed 32-bit words, or `element` to embed NUL-terminated text"));
            }
            (Some("words"), _) => PayloadKind::Words32,
            (Some(other), _) => {
                return Err(refuse("element", format!("`element = \"{}\"` is not an element of embedded files", crate::text::echo(other)), "write element = \"bytes\" (the default) or \"words\" (32-bit words)"));
            }
        };
        let form = opts.storage.as_deref().map(|raw| storage::parse(manifest, &format!("{rel_key}.storage"), raw)).transpose()?.or(embed_storage);
        let namespace = match &opts.namespace {
            None => Vec::new(),
            Some(ns) => names::module_segments(ns).map_err(|(seg, fix)| {
                refuse("namespace", format!("`namespace = \"{}\"` is not usable: the segment `{}` is not an identifier", crate::text::echo(ns), crate::text::echo(&seg)), &format!("`{fix}` would work (segments are separated by `.`)"))
            })?,
        };
        for Match { path, rel, dirs, file } in expand(manifest, &key, &at, &opts.glob)? {
            match kind {
                PayloadKind::Words32 => {
                    let size = std::fs::metadata(&path).map_err(|e| Error::io("cannot read the embedded file", &path, e))?.len();
                    if size % 4 != 0 {
                        return Err(Error::new(ErrorKind::Manifest, format!("`{rel}` is {size} bytes, not a whole number of 32-bit words (element = \"words\")"))
                            .file(&at)
                            .key(&key)
                            .help("embed it as bytes (remove `element`), or pad the file to a multiple of 4 bytes"));
                    }
                }
                PayloadKind::Text => {
                    let bytes = std::fs::read(&path).map_err(|e| Error::io("cannot read the embedded file", &path, e))?;
                    if let Err(problem) = kind.check(&bytes) {
                        return Err(Error::new(ErrorKind::Manifest, format!("`{rel}` {problem} (nul = true embeds UTF-8 text)")).file(&at).key(&key).help("embed it as bytes (remove `nul`)"));
                    }
                }
                PayloadKind::Bytes => {}
            }
            let ns = namespace.iter().cloned().chain(dirs.iter().map(|d| names::identifier(d, "dir"))).collect();
            let item = PayloadItem { source: rel, namespace: ns, identifier: names::identifier(&file, "file"), payload: path, kind, rule: RULE.into(), storage: form, doc: None, cuda: None, kernels: Vec::new() };
            add(&mut out.items, EmbeddedItem { item, key: key.clone(), at: at.clone() })?;
        }
        watch(&mut out, manifest, &opts.glob);
    }
    for (index, t) in embed.tables.iter().enumerate() {
        let rel_key = format!("embed.tables[{index}]");
        let key = format!("{table}.{rel_key}");
        let at = manifest.at_col(&rel_key);
        if names::identifier(&t.name, "") != t.name {
            return Err(Error::new(ErrorKind::Manifest, format!("the table name `{}` is not an identifier", crate::text::echo(&t.name)))
                .file(manifest.at_col(&format!("{rel_key}.name")))
                .key(format!("{key}.name"))
                .detail("It becomes a Rust module and a C++ namespace.")
                .help(format!("`{}` would work", names::identifier(&t.name, "table"))));
        }
        let form = t.storage.as_deref().map(|raw| storage::parse(manifest, &format!("{rel_key}.storage"), raw)).transpose()?.or(embed_storage);
        let mode = t.key.as_deref().unwrap_or("name");
        if !["name", "stem", "path"].contains(&mode) {
            return Err(Error::new(ErrorKind::Manifest, format!("`key = \"{}\"` is not a key of a lookup table", crate::text::echo(mode)))
                .file(manifest.at_col(&format!("{rel_key}.key")))
                .key(format!("{key}.key"))
                .help("write key = \"name\" (the file name, the default), \"stem\" (the name without its last extension) or \"path\" (the path below the glob's fixed prefix)"));
        }
        let mut lookup = LookupTable { namespace: vec![t.name.clone()], entries: Vec::new() };
        let mut sources: Vec<String> = Vec::new();
        for Match { path, rel, dirs, file } in expand(manifest, &key, &at, &t.glob)? {
            let entry_key = match mode {
                "stem" => file.rsplit_once('.').map(|(s, _)| s).filter(|s| !s.is_empty()).unwrap_or(&file).to_string(),
                "path" => dirs.iter().cloned().chain(std::iter::once(file.clone())).collect::<Vec<_>>().join("/"),
                _ => file.clone(),
            };
            if let Some(first) = lookup.entries.iter().position(|(k, _, _)| *k == entry_key) {
                return Err(Error::new(ErrorKind::Manifest, format!("two files of the table `{}` have the key `{}`", t.name, crate::text::echo(&entry_key)))
                    .file(&at)
                    .key(&key)
                    .detail(sources[first].clone())
                    .detail(rel)
                    .help(format!("key them by a longer part of their name (key = \"{}\"), or rename one", if mode == "path" { "path" } else if mode == "stem" { "name" } else { "path" })));
            }
            let ns: Vec<String> = std::iter::once(t.name.clone()).chain(dirs.iter().map(|d| names::identifier(d, "dir"))).collect();
            let identifier = names::identifier(&file, "file");
            if ns.len() == 1 && LookupTable::FUNCTIONS.contains(&identifier.as_str()) {
                return Err(Error::new(ErrorKind::Manifest, format!("the file `{rel}` of the table `{}` would be `{}::{identifier}`, the table's own lookup function", t.name, t.name))
                    .file(&at)
                    .key(&key)
                    .help("rename the file (an extension is part of the name: `get.bin` is `get_bin`)"));
            }
            let item = PayloadItem { source: rel.clone(), namespace: ns.clone(), identifier: identifier.clone(), payload: path, kind: PayloadKind::Bytes, rule: RULE.into(), storage: form, doc: None, cuda: None, kernels: Vec::new() };
            add(&mut out.items, EmbeddedItem { item, key: key.clone(), at: at.clone() })?;
            sources.push(rel);
            lookup.entries.push((entry_key, ns, identifier));
        }
        out.tables.push(lookup);
        watch(&mut out, manifest, &t.glob);
    }
    Ok(out)
}

/// Add `new` unless its name is taken: two files with one name are refused naming both.
fn add(items: &mut Vec<EmbeddedItem>, new: EmbeddedItem) -> Result<()> {
    if let Some(first) = items.iter().find(|i| i.item.namespace == new.item.namespace && i.item.identifier == new.item.identifier) {
        return Err(collision(&first.item.source, &new.item.source, &new.item, &new.at, &new.key));
    }
    items.push(new);
    Ok(())
}

/// The refusal of two files named alike, at the second one's entry.
fn collision(first: &str, second: &str, item: &PayloadItem, at: &str, key: &str) -> Error {
    let name = item.namespace.iter().chain(std::iter::once(&item.identifier)).cloned().collect::<Vec<_>>().join("::");
    Error::new(ErrorKind::Manifest, "two files map to one payload name")
        .file(at)
        .key(key)
        .detail(first.to_string())
        .detail(second.to_string())
        .detail(format!("both would be `{name}`."))
        .help("rename one of them, or give one entry its own `namespace = \"...\"`")
}

/// The surface's items: the compiled payloads (`compiled`, named) and the embedded files, in
/// name order.
///
/// # Errors
/// [`ErrorKind::Manifest`] at the embedded file's entry when it has the name of a compiled
/// payload (both named), or when a name is both an accessor and a namespace at one level
/// (`a_txt()` beside a directory `a_txt/`: a C++ namespace and a function cannot share it),
/// or when a top-level name is one the surface defines itself
/// ([`crate::surface::reserved_names`]: `all`, `words`, `AlignedBytes`, ...), naming the file.
pub fn merge(compiled: Vec<PayloadItem>, embedded: &Embedded) -> Result<Vec<PayloadItem>> {
    let mut all = compiled.clone();
    for e in &embedded.items {
        if let Some(first) = compiled.iter().find(|c| c.namespace == e.item.namespace && c.identifier == e.item.identifier) {
            return Err(collision(&first.source, &e.item.source, &e.item, &e.at, &e.key));
        }
        all.push(e.item.clone());
    }
    let reserved = crate::surface::reserved_names();
    for item in &all {
        let top = item.namespace.first().unwrap_or(&item.identifier);
        if reserved.contains(top) {
            let what = if item.namespace.is_empty() { "the accessor" } else { "the namespace" };
            let mut err = Error::new(ErrorKind::Manifest, format!("`{}` would make {what} `{top}`, a name the generated surface defines itself", item.source))
                .detail(format!("Reserved at the surface's top level: {}.", reserved.join(", ")))
                .help(if item.namespace.is_empty() { "rename the file (an extension is part of the name: `all.bin` is `all_bin`), or give its entry a `namespace = \"...\"`" } else { "rename the directory or the table" });
            if let Some(e) = embedded.items.iter().find(|e| e.item == *item) {
                err = err.file(&e.at).key(&e.key);
            }
            return Err(err);
        }
    }
    for item in &all {
        for other in &all {
            let clash = other.namespace.len() > item.namespace.len() && other.namespace[..item.namespace.len()] == item.namespace[..] && other.namespace[item.namespace.len()] == item.identifier;
            if clash {
                let at = embedded.items.iter().find(|e| e.item == *item || e.item == *other);
                let name = item.namespace.iter().chain(std::iter::once(&item.identifier)).cloned().collect::<Vec<_>>().join("::");
                let mut err = Error::new(ErrorKind::Manifest, format!("`{name}` would be both an accessor and a namespace"))
                    .detail(item.source.clone())
                    .detail(other.source.clone())
                    .help("rename the file or the directory");
                if let Some(e) = at {
                    err = err.file(&e.at).key(&e.key);
                }
                return Err(err);
            }
        }
    }
    all.sort_by(|a, b| (&a.namespace, &a.identifier).cmp(&(&b.namespace, &b.identifier)));
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(manifest_body: &str, files: &[(&str, &[u8])]) -> (tempfile::TempDir, Manifest) {
        let dir = tempfile::tempdir().unwrap();
        for (rel, bytes) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        let text = format!("[package]\nname = \"e\"\n[package.metadata.mcpp.embed]\n{manifest_body}\n");
        let path = dir.path().join("Cargo.toml");
        std::fs::write(&path, &text).unwrap();
        let m = Manifest::parse(&path, &text).unwrap();
        (dir, m)
    }

    #[test]
    fn files_are_named_from_their_name_and_directories_below_the_fixed_prefix() {
        let (_d, m) = package(
            "files = [\"assets/**/*\", { glob = \"w/*.bin\", element = \"words\", namespace = \"nn.w\" }, { glob = \"t/x.txt\", nul = true }]",
            &[("assets/message.txt", b"hi"), ("assets/fonts/3d-font.ttf", b"f"), ("assets/type/é.txt", b"e"), ("w/a.bin", &[1, 2, 3, 4]), ("t/x.txt", b"text")],
        );
        let e = collect(&m).unwrap();
        let got: Vec<(String, String, PayloadKind)> = e.items.iter().map(|i| (i.item.namespace.join("::"), i.item.identifier.clone(), i.item.kind)).collect();
        assert_eq!(got, [
            ("fonts".into(), "_3d_font_ttf".into(), PayloadKind::Bytes),
            ("".into(), "message_txt".into(), PayloadKind::Bytes),
            ("type_".into(), "x__txt".into(), PayloadKind::Bytes),
            ("nn::w".into(), "a_bin".into(), PayloadKind::Words32),
            ("".into(), "x_txt".into(), PayloadKind::Text),
        ]);
        assert_eq!(e.watch_dirs.len(), 2, "{:?}", e.watch_dirs);
        assert!(e.warnings.is_empty());
        let (_d, m) = package("files = [\"q/*\"]\ntables = [{ name = \"t\", glob = \"r/*\" }]", &[("q/back\\slash.txt", b"1"), ("r/a\\b.txt", b"2")]);
        let e = collect(&m).unwrap();
        let got: Vec<(String, String)> = e.items.iter().map(|i| (i.item.namespace.join("::"), i.item.identifier.clone())).collect();
        assert_eq!(got, [("".to_string(), "back_slash_txt".to_string()), ("t".to_string(), "a_b_txt".to_string())]);
        assert_eq!(e.tables[0].entries[0].0, "a\\b.txt");
        let (_d, m) = package("files = [\"*.bin\"]", &[("a.bin", b"1")]);
        let e = collect(&m).unwrap();
        assert!(e.watch_dirs.is_empty() && e.warnings[0].contains("matches files at the package root"), "{:?}", e.warnings);
    }

    #[test]
    fn tables_key_by_name_stem_or_path_and_refuse_a_duplicate_key() {
        let files: &[(&str, &[u8])] = &[("m/en.txt", b"hello"), ("m/de.txt", b"hallo"), ("m/sub/en.txt", b"hi")];
        for (mode, keys) in [("stem", vec!["de", "en"]), ("path", vec!["de.txt", "en.txt", "sub/en.txt"])] {
            let glob = if mode == "stem" { "m/*.txt" } else { "m/**/*.txt" };
            let (_d, m) = package(&format!("tables = [{{ name = \"msgs\", glob = \"{glob}\", key = \"{mode}\" }}]"), files);
            let e = collect(&m).unwrap();
            let mut got: Vec<&str> = e.tables[0].entries.iter().map(|(k, _, _)| k.as_str()).collect();
            got.sort();
            assert_eq!(got, keys, "{mode}");
        }
        let (_d, m) = package("tables = [{ name = \"msgs\", glob = \"m/**/*.txt\" }]", files);
        let err = collect(&m).unwrap_err();
        assert!(err.message.contains("the key `en.txt`") && err.detail == ["m/en.txt", "m/sub/en.txt"], "{err}");
        assert!(err.file.as_ref().unwrap().display().to_string().ends_with("Cargo.toml:4:11"), "{err}");
    }

    #[test]
    fn a_list_is_the_shorthand_of_files_and_its_refusals_name_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("t")).unwrap();
        std::fs::write(dir.path().join("t/x.txt"), "x").unwrap();
        let text = "[package]\nname = \"e\"\n[package.metadata.mcpp]\nembed = [\"t/x.txt\", { glob = \"t/none*\" }]\n";
        let path = dir.path().join("Cargo.toml");
        std::fs::write(&path, text).unwrap();
        let m = Manifest::parse(&path, text).unwrap();
        let err = collect(&m).unwrap_err();
        assert_eq!((err.message.as_str(), err.key.as_deref()), ("`t/none*` matches no file", Some("package.metadata.mcpp.embed[1]")), "{err}");
        assert!(err.file.as_ref().unwrap().display().to_string().ends_with("Cargo.toml:4:21"), "{err}");
        let text = text.replace(", { glob = \"t/none*\" }", "");
        let m = Manifest::parse(&path, &text).unwrap();
        let e = collect(&m).unwrap();
        assert_eq!(e.items.len(), 1);
        assert_eq!(e.items[0].item.identifier, "x_txt");
    }

    #[test]
    fn an_embed_storage_with_nothing_to_embed_is_refused() {
        let (_d, m) = package("storage = \"object\"", &[]);
        let err = collect(&m).unwrap_err();
        assert!(err.message.contains("applies to no payload"), "{err}");
        assert!(err.file.as_ref().unwrap().display().to_string().ends_with("Cargo.toml:4:1"), "{err}");
    }

    #[test]
    fn words_of_a_bad_size_and_collisions_are_refused_naming_the_files() {
        let (_d, m) = package("files = [{ glob = \"w/*.bin\", element = \"words\" }]", &[("w/a.bin", &[1, 2, 3, 4, 5, 6, 7])]);
        assert_eq!(collect(&m).unwrap_err().message, "`w/a.bin` is 7 bytes, not a whole number of 32-bit words (element = \"words\")");
        let (_d, m) = package("files = [\"a/*.txt\", \"b/*.txt\"]", &[("a/x.txt", b"1"), ("b/x.txt", b"2")]);
        let err = collect(&m).unwrap_err();
        assert_eq!((err.message.as_str(), err.detail[..2].to_vec()), ("two files map to one payload name", vec!["a/x.txt".to_string(), "b/x.txt".to_string()]));
        let (_d, m) = package("files = [\"a/*\"]", &[("a/x-y", b"1"), ("a/x_y", b"2")]);
        assert!(collect(&m).unwrap_err().detail.contains(&"both would be `x_y`.".to_string()));
    }

    #[test]
    fn a_compiled_payload_and_a_file_of_one_name_are_refused_naming_both() {
        let (_d, m) = package("files = [\"d/*\"]", &[("d/x_comp", b"1")]);
        let e = collect(&m).unwrap();
        let shader = PayloadItem { source: "shaders/x.comp".into(), namespace: vec![], identifier: "x_comp".into(), payload: PathBuf::from("/x.spv"), kind: PayloadKind::Words32, rule: "spirv".into(), storage: None, doc: None, cuda: None, kernels: Vec::new() };
        let err = merge(vec![shader.clone()], &e).unwrap_err();
        assert_eq!(err.detail[..2], ["shaders/x.comp".to_string(), "d/x_comp".to_string()]);
        let (_d, m) = package("files = [\"d/**/*\"]", &[("d/x_comp/y", b"1")]);
        let err = merge(vec![shader], &collect(&m).unwrap()).unwrap_err();
        assert!(err.message.contains("both an accessor and a namespace"), "{err}");
    }

    #[test]
    fn a_file_named_as_the_surfaces_own_items_is_refused_naming_it() {
        let reserved = crate::surface::reserved_names();
        for name in ["words", "all", "all_bytes", "all_text", "AlignedBytes", "SidecarError", "Payload", "sidecar_read", "bytes_payload"] {
            assert!(reserved.contains(&name.to_string()), "{name}: {reserved:?}");
            let (_d, m) = package("files = [\"d/*\"]", &[(&format!("d/{name}"), b"1234")]);
            let err = merge(vec![], &collect(&m).unwrap()).unwrap_err();
            assert_eq!(err.message, format!("`d/{name}` would make the accessor `{name}`, a name the generated surface defines itself"));
            assert!(err.file.as_ref().unwrap().display().to_string().ends_with("Cargo.toml:4:10"), "{err}");
        }
        let (_d, m) = package("files = [\"d/**/*\"]", &[("d/Payload/x.bin", b"1")]);
        assert!(merge(vec![], &collect(&m).unwrap()).unwrap_err().message.contains("the namespace `Payload`"));
        let (_d, m) = package("files = [\"d/*\"]", &[("d/all.bin", b"1")]);
        assert!(merge(vec![], &collect(&m).unwrap()).is_ok());
    }
}
