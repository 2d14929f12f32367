//! The generated surface: one generator, reused by every lane that embeds payloads.
//! From a list of payload files, each
//! with its kind ([`Payload`], [`PayloadKind`]: 32-bit words, bytes or text), it writes, under
//! OUT_DIR:
//!
//! - `mcpp_shaders.rs`: a Rust module tree, one accessor per payload returning a value of its
//!   kind's type (words: `Payload { code: &'static [u32], size_bytes, source }`; bytes:
//!   `BytesPayload { bytes: &'static [u8], source }`, 16-byte aligned; text:
//!   `TextPayload { text: &'static str, c_str: &'static CStr, source }`), included with
//!   `mod shaders { include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs")); }`. `all()` lists the
//!   words payloads (`[Payload; N]`, as before kinds existed, so adding a payload of another
//!   kind never changes its type), `all_bytes()` and `all_text()` the others; a kind's type,
//!   helpers and list appear with its first payload, so a SPIR-V-only surface is unchanged.
//!   Header storage includes the bytes (`include_bytes!` in a 16-byte aligned static); a words
//!   payload's `code` is that static read as `&'static [u32]` in place on little-endian targets
//!   (no copy, no compile-time conversion, any size), and a const-evaluated conversion on
//!   big-endian targets only (rustc refuses one past a few MiB there: use object storage). The
//!   accessors are safe functions; the few `unsafe` blocks inside the generated code (header
//!   words, object and sidecar storage) carry `#[allow(unsafe_code)]`, so a crate with
//!   `#![deny(unsafe_code)]` compiles the surface, but one with `#![forbid(unsafe_code)]` cannot
//!   include it (forbid cannot be allowed again: include it from a crate that does not forbid);
//! - `mcpp/<module>.cppm` (or `mcpp/<module>.h` under `modules = false`): a std-free C++
//!   interface, the PODs `payload` (`const unsigned int* code`), `bytes_payload`
//!   (`const unsigned char* data`) and `text_payload` (`const char* text`, NUL-terminated),
//!   each with `size_bytes`, and one accessor per payload;
//! - `mcpp/<module>.impl.cpp` and `mcpp/data/**.h`: the implementation unit and the bytes
//!   (header storage: the bytes are compiled in).
//!
//! - `mcpp/payloads/**.spv` (`.bin`, `.txt`): a copy of each payload, the file
//!   `mcpp_shaders.rs` includes (a text's copy has one NUL after it): the device phase writes it
//!   from bytes it verified against the hash its compiler run left (never a file of the device
//!   cache that anything could overwrite after the build script), after checking them against
//!   the kind (a words payload that is no whole number of words, a text that is not UTF-8 or
//!   holds a NUL, is refused naming the file and the rule).
//!
//! Every file is written only when its content changes, atomically. Values that land in a
//! comment (file names, the package name) go through [`crate::text::comment`], so no newline
//! or control character ends a comment or adds a line; string literals are Rust-escaped
//! (`{:?}`); identifiers are made by [`names`].
//!
//! [`Payload`]: ../../templates/payload.rs

pub mod island;

pub(crate) mod cuda;
pub mod kind;
pub mod names;
pub mod storage;

pub use kind::{Payload, PayloadKind};
pub use storage::{ObjectFormat, Storage};

use crate::error::{Error, ErrorKind, Result};
use crate::engine::fingerprint::write_if_changed;
use crate::text::comment;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One payload to expose, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadItem {
    /// The device source, package-relative (`shaders/a/scale.comp`).
    pub source: String,
    /// Namespace segments below the base directory (already identifiers).
    pub namespace: Vec<String>,
    /// The accessor's identifier (`scale_comp`).
    pub identifier: String,
    /// The payload file (a bare `.spv`, ...), absolute; empty for a placeholder with no bytes
    /// ([`Payload::empty`]).
    pub payload: PathBuf,
    /// What its bytes are.
    pub kind: PayloadKind,
    /// The rule that made it (`spirv`), named when its bytes are refused.
    pub rule: String,
    /// Where its bytes live when not where the surface's are ([`SurfaceOptions::storage`]): a
    /// rule's, a `sources` entry's or an `embed` entry's own `storage`, already effective
    /// ([`storage::effective`]). `None`: the surface's.
    pub storage: Option<Storage>,
    /// The accessor's doc sentence ([`Payload::doc`]).
    pub doc: Option<String>,
    /// What a CUDA image is built for ([`Payload::cuda`]).
    pub cuda: Option<String>,
    /// The kernels its rule read from the source ([`Payload::kernels`]).
    pub kernels: Vec<String>,
}

impl PayloadItem {
    /// Where its bytes live in a surface whose storage is `surface`.
    pub fn storage_in(&self, surface: Storage) -> Storage {
        self.storage.unwrap_or(surface)
    }
}

/// A lookup table `key -> bytes` over a group of bytes payloads (tools-embed's `tables`,
/// [`crate::sources::embed`]): in the namespace `namespace` (the table's name) the surface adds, beside
/// the files' own accessors, Rust `get(key) -> Option<&'static [u8]>` and `entries() ->
/// [(&'static str, &'static [u8]); N]` (each in a `Result` under sidecar storage), C++
/// `get(key)`, `count()`, `key(i)`, `at(i)` (a `bytes_payload`, null and size 0 when absent)
/// and the C functions `mcpp_table_<len-prefixed segments>_{get,count,key,at}` they call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupTable {
    /// The table's namespace below the module (`["messages"]`), already identifiers.
    pub namespace: Vec<String>,
    /// Each entry: its key, the namespace and identifier of its payload (a bytes payload among
    /// the items given to [`generate_with_tables`]), in key order as listed.
    pub entries: Vec<(String, Vec<String>, String)>,
}

impl LookupTable {
    /// The functions a table adds to its namespace, which no file of it may be named.
    pub const FUNCTIONS: &'static [&'static str] = &["get", "entries", "count", "key", "at"];

    /// The C symbol base of the table's functions: `mcpp_table_` then every module and
    /// namespace segment prefixed by its length.
    pub fn c_base(&self, module: &[String]) -> String {
        let mut s = String::from("mcpp_table_");
        for seg in module.iter().chain(&self.namespace) {
            s.push_str(&format!("{}{seg}", seg.len()));
        }
        s
    }
}

/// The Rust templates of the surface, every one of them (which are included depends on the
/// payloads' kinds and storage forms; a name is reserved whether or not its template is used,
/// so adding a payload of another kind never turns a good name into a clash).
const RUST_TEMPLATES: &[&str] = &[
    include_str!("../../templates/payload.rs"),
    include_str!("../../templates/payload_bytes.rs"),
    include_str!("../../templates/payload_text.rs"),
    storage::OBJECT_RUST,
    storage::SIDECAR_RUST,
    include_str!("../../templates/payload_cuda.rs"),
];

/// The C++ templates of the surface (their structs are names in the module's namespace).
const CPP_TEMPLATES: &[&str] = &[include_str!("../../templates/payload.hpp"), include_str!("../../templates/payload_bytes.hpp"), include_str!("../../templates/payload_text.hpp"), include_str!("../../templates/payload_cuda.hpp")];

/// The lists the Rust surface adds at its top level ([`rust_surface`]).
const LIST_FUNCTIONS: [&str; 3] = ["all", "all_bytes", "all_text"];

/// The names the generated surface itself defines at its top level, which no payload's
/// top-level name (its first namespace segment, or its identifier when it has none) may take:
/// the lists (`all`, `all_bytes`, `all_text`) and every item a template defines at column 0
/// (`Payload`, `AlignedBytes`, `SidecarError`, `words`, `sidecar_read`, the C++ structs
/// `payload`, `bytes_payload`, ...), read from the templates themselves, so the list follows
/// the generator. Sorted, each once.
pub fn reserved_names() -> Vec<String> {
    let mut out: Vec<String> = LIST_FUNCTIONS.iter().map(|s| s.to_string()).collect();
    for line in RUST_TEMPLATES.iter().chain(CPP_TEMPLATES).flat_map(|t| t.lines()) {
        let mut rest = line;
        for prefix in ["pub ", "const ", "unsafe ", "extern \"C\" "] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some((word, tail)) = rest.split_once(' ') else { continue };
        if !["fn", "struct", "enum", "union", "type", "static", "const", "mod", "trait", "macro_rules!"].contains(&word) {
            continue;
        }
        let name: String = tail.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A C string literal of `s`: printable ASCII as is, every other byte, `"`, `\` and `?` as an
/// octal escape (three digits: never read on into the next character).
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        if (0x20..0x7f).contains(&b) && !matches!(b, b'"' | b'\\' | b'?') {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\{b:03o}"));
        }
    }
    out.push('"');
    out
}

/// The base directory of the surface's names and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseDir {
    /// `[package.metadata.mcpp] base-dir`: the directory components, package-relative.
    Pinned(Vec<String>),
    /// Derived: the shallowest directory every payload shares ([`names::common_base_dir`]).
    Derived(Vec<String>),
}

impl BaseDir {
    /// The directory components (empty: the package root).
    pub fn dirs(&self) -> &[String] {
        match self {
            BaseDir::Pinned(d) | BaseDir::Derived(d) => d,
        }
    }
    /// The directory as written in a manifest: components joined by `/`, `.` for the root.
    pub fn display(&self) -> String {
        show_dir(self.dirs())
    }
}

fn show_dir(dirs: &[String]) -> String {
    if dirs.is_empty() {
        ".".to_string()
    } else {
        dirs.join("/")
    }
}

/// The base directory for payloads whose package-relative sources are `sources`: the manifest's
/// `base-dir` when set, else derived.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `Cargo.toml:line` and the key `package.metadata.mcpp.base-dir`:
/// an empty, absolute or `..`-containing value, one that is not a directory of the package, or
/// a payload source outside it (naming the source).
pub fn resolve_base<'a>(manifest: &crate::config::manifest::Manifest, sources: impl IntoIterator<Item = &'a str>) -> Result<BaseDir> {
    let Some(raw) = &manifest.mcpp.base_dir else {
        return Ok(BaseDir::Derived(names::common_base_dir(sources)));
    };
    let key = "package.metadata.mcpp.base-dir";
    let refuse = |what: String, help: &str| Err(Error::new(ErrorKind::Manifest, what).file(manifest.at("base-dir")).key(key).help(help.to_string()));
    if raw.trim().is_empty() {
        return refuse("`base-dir` is empty".into(), "name a directory relative to the package root, e.g. base-dir = \"shaders\" (or \".\" for the root itself), or remove the key to derive it");
    }
    if std::path::Path::new(raw).is_absolute() || raw.starts_with(['/', '\\']) || raw.split(['/', '\\']).any(|c| c == "..") {
        let why = if raw.split(['/', '\\']).any(|c| c == "..") { "contains `..`" } else { "is absolute" };
        return refuse(format!("`base-dir = \"{raw}\"` {why}: it must be a directory of the package, written from its root"), "write it relative to the package root, without `..`, e.g. base-dir = \"shaders\"");
    }
    if !manifest.dir().join(raw).is_dir() {
        return refuse(format!("`base-dir = \"{raw}\"` is not a directory of the package"), "name an existing directory relative to the package root (the one holding the device sources), or remove the key to derive it");
    }
    let base: Vec<String> = names::components(raw).into_iter().map(str::to_string).collect();
    let sources: Vec<&str> = sources.into_iter().collect();
    for source in &sources {
        let comps = names::components(source);
        let parent = &comps[..comps.len().saturating_sub(1)];
        if parent.len() < base.len() || parent.iter().zip(&base).any(|(a, b)| a != b) {
            let fits = show_dir(&names::common_base_dir(sources.iter().copied()));
            return Err(Error::new(ErrorKind::Manifest, format!("the device source `{source}` is outside `base-dir = \"{raw}\"`"))
                .file(manifest.at("base-dir"))
                .key(key)
                .detail("Payload names are the directories below the base directory, so every payload must be under it.")
                .help(format!("set base-dir to a directory holding every device source (base-dir = \"{fits}\" does), or move `{source}` under `{raw}`")));
        }
    }
    Ok(BaseDir::Pinned(base))
}

/// Name payloads from `(rule, payload)` pairs: namespace = the source's directories below
/// `base`; identifier sanitised ([`names::identifier`]); one name space for every kind.
///
/// # Errors
/// [`ErrorKind::Sources`] when two sources map to one name (namespace and identifier), naming
/// both: the first two detail lines are the two sources, first listed then second (the pipeline
/// points the refusal at the `sources` entry of the second).
pub fn name_payloads(entries: &[(&str, Payload)], base: &[String]) -> Result<Vec<PayloadItem>> {
    let mut items: Vec<PayloadItem> = Vec::new();
    for (rule, payload) in entries {
        let item = PayloadItem {
            source: payload.source.clone(),
            namespace: names::namespace_of(&payload.source, base),
            identifier: names::identifier(&payload.identifier, "payload"),
            payload: payload.path.clone(),
            kind: payload.kind,
            rule: rule.to_string(),
            storage: None,
            doc: payload.doc.clone(),
            cuda: payload.cuda.clone(),
            kernels: payload.kernels.clone(),
        };
        if let Some(first) = items.iter().find(|i| i.namespace == item.namespace && i.identifier == item.identifier) {
            let key = item_path(&item);
            let parent = |s: &str| s.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default();
            let why = if parent(&first.source) == parent(&item.source) {
                format!(
                    "The directory below `{}` is part of the name, so this is two sources with one name in one directory rather than two directories sharing a stem.",
                    if base.is_empty() { "the package root".to_string() } else { base.join("/") }
                )
            } else {
                "Their directories differ only where a name becomes an identifier (a keyword gets a trailing `_`, other characters become `_`).".to_string()
            };
            return Err(Error::new(ErrorKind::Sources, "two device sources map to one payload name")
                .detail(first.source.clone())
                .detail(item.source.clone())
                .detail(format!("both would be `{key}`."))
                .detail(why)
                .help("rename one of them, or compile only one"));
        }
        items.push(item);
    }
    items.sort_by(|a, b| (&a.namespace, &a.identifier).cmp(&(&b.namespace, &b.identifier)));
    Ok(items)
}

/// `a::b::x_comp` for an item (its Rust and C++ path below the module).
fn item_path(item: &PayloadItem) -> String {
    item.namespace.iter().chain(std::iter::once(&item.identifier)).cloned().collect::<Vec<_>>().join("::")
}

/// Compare the base directory of this build with the one recorded in `record` (the variant's
/// `surface-base`, [`crate::engine::layout::Variant::surface_base`]) by the last build that generated a
/// surface, and record this one (only when it changed, atomically).
/// Returns the warning when a derived base moved, which renames accessors with no change to the
/// user's code: the old and new base, what moved (`` `one_comp()` is now `a::one_comp()` ``,
/// up to three) and the `base-dir` line that pins it. Nothing when the base is pinned, nothing
/// was recorded yet, or there is no payload.
///
/// # Errors
/// [`ErrorKind::Io`] when the record cannot be written.
pub fn note_base(record: &Path, base: &BaseDir, items: &[PayloadItem]) -> Result<Option<String>> {
    if items.is_empty() {
        return Ok(None);
    }
    let now = format!("{}\n", base.display());
    let before = std::fs::read_to_string(record).ok();
    write_if_changed(record, now.as_bytes())?;
    let (Some(before), BaseDir::Derived(_)) = (before, base) else { return Ok(None) };
    let old: Vec<String> = names::components(before.trim()).into_iter().map(str::to_string).collect();
    if old == base.dirs() {
        return Ok(None);
    }
    let under = |source: &str, b: &[String]| {
        let comps = names::components(source);
        comps.len() > b.len() && comps.iter().zip(b).all(|(a, b)| a == b)
    };
    let mut moved = Vec::new();
    for item in items.iter().filter(|i| under(&i.source, &old)) {
        let was = PayloadItem { namespace: names::namespace_of(&item.source, &old), ..item.clone() };
        if was.namespace != item.namespace {
            moved.push(format!("`{}()` is now `{}()`", item_path(&was), item_path(item)));
        }
    }
    if moved.is_empty() {
        return Ok(None);
    }
    let more = if moved.len() > 3 { format!(" (and {} more)", moved.len() - 3) } else { String::new() };
    moved.truncate(3);
    let (old_text, new_text) = (show_dir(&old), base.display());
    let mut text = format!(
        "the surface's base directory moved from `{old_text}` to `{new_text}` (derived: the shallowest directory all payloads share), so accessors were renamed: {}{more}\n",
        moved.join(", ")
    );
    let all_under_old = items.iter().all(|i| under(&i.source, &old));
    if all_under_old {
        text.push_str(&format!("pin it in [package.metadata.mcpp]: base-dir = \"{old_text}\" brings the old names back (base-dir = \"{new_text}\" keeps the new ones)"));
    } else {
        let outside = items.iter().find(|i| !under(&i.source, &old)).map(|i| i.source.as_str()).unwrap_or_default();
        text.push_str(&format!(
            "pin it in [package.metadata.mcpp]: base-dir = \"{new_text}\" keeps these names from now on (base-dir = \"{old_text}\" would keep the old ones if every payload were under it; `{outside}` is not)"
        ));
    }
    Ok(Some(text))
}

/// How to generate.
#[derive(Debug, Clone)]
pub struct SurfaceOptions {
    /// The package name (for comments).
    pub package_name: String,
    /// Dotted module name, e.g. `vulkan_compute.shaders`; every segment an identifier.
    pub module_name: String,
    /// `true`: C++20 module interface; `false`: a header usable from C and C++.
    pub modules: bool,
    /// Directory for the C++ files (`OUT_DIR/mcpp`).
    pub cpp_dir: PathBuf,
    /// The Rust file (`OUT_DIR/mcpp_shaders.rs`).
    pub rust_file: PathBuf,
    /// Directory of the payload copies the Rust surface includes (`OUT_DIR/mcpp/payloads`).
    pub payload_dir: PathBuf,
    /// The sha256 each payload file was verified to have by the device phase
    /// ([`crate::engine::graph::RunReport::outputs`]); a payload whose bytes read now differ is
    /// refused. A payload not in the map is copied as read.
    pub verified: std::collections::BTreeMap<PathBuf, String>,
    /// A second directory receiving the same C++ files as `cpp_dir` (the variant's
    /// `surface/`, [`crate::engine::layout::Variant::surface_cpp_dir`]): what the host C++ lane
    /// compiles. `None`: OUT_DIR only.
    pub cpp_mirror: Option<PathBuf>,
    /// Where the bytes live ([`storage`]); the effective one ([`storage::effective`]).
    pub storage: Storage,
    /// The target's object format (object storage's assembly).
    pub object_format: ObjectFormat,
    /// The directory of the final artifacts (sidecar storage writes its files below it,
    /// [`crate::engine::layout::OutDir::artifact_dir`]).
    pub artifact_dir: PathBuf,
    /// Whether a C/C++ unit of the package compiles the implementation unit (the host C++ lane
    /// has `cxx-sources` or an island's fallback to compile, `rules::cxx::has_units`).
    /// `false`: header storage writes no `data/**.h` (C arrays several times the payload's
    /// size, which nothing would read), and the implementation unit says so in their place.
    pub cxx: bool,
}

/// What [`generate`] wrote (or found up to date).
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// The Rust surface.
    pub rust_file: PathBuf,
    /// The C++ module interface (`.cppm`) or header (`.h`).
    pub interface_file: PathBuf,
    /// The C++ implementation unit.
    pub impl_file: PathBuf,
    /// Files whose content changed in this run.
    pub written: Vec<PathBuf>,
    /// Object storage: the assembly the host C++ lane assembles (in the mirror when there is
    /// one) and the payload files it `.incbin`s (its declared inputs).
    pub assembly: Option<(PathBuf, Vec<PathBuf>)>,
    /// Sidecar storage: each sidecar file written (absolute) and its path relative to the
    /// executable's directory.
    pub sidecars: Vec<(PathBuf, String)>,
}

/// The `extern "C"` accessor base: `mcpp_embed_` then every module segment, namespace segment
/// and the identifier, each prefixed by its length (`mcpp_embed_6my_app7shaders1a10scale_comp`).
/// Length prefixes keep `a_b/c` and `a/b_c` apart, which a plain `_` join would merge into one
/// C symbol (upstream's join has that collision).
pub fn accessor_base(module: &[String], item: &PayloadItem) -> String {
    let mut s = String::from("mcpp_embed_");
    for seg in module.iter().chain(&item.namespace).chain(std::iter::once(&item.identifier)) {
        s.push_str(&format!("{}{seg}", seg.len()));
    }
    s
}

/// Check a module name before anything compiles: every segment an identifier, and not `std`
/// (a namespace the C++ standard reserves).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the key and a spelling that would work.
pub fn check_module_name(name: &str) -> Result<Vec<String>> {
    let key = "package.metadata.mcpp.module-name";
    match names::module_segments(name) {
        Err((seg, fix)) => Err(Error::new(ErrorKind::Manifest, format!("`{}` is not a usable module name: the segment `{}` is not an identifier", crate::text::echo(name), crate::text::echo(&seg)))
            .key(key)
            .detail("Each segment becomes a C++ namespace and a part of the Rust path, so it has to be an identifier of both.")
            .help(format!("`{fix}` would work"))),
        Ok(segs) if segs[0] == "std" => Err(Error::new(ErrorKind::Manifest, format!("`{}` is not a usable module name: `std` is the C++ standard library's namespace", crate::text::echo(name)))
            .key(key)
            .help("name it after the package, e.g. `my_app.shaders`")),
        Ok(segs) => Ok(segs),
    }
}

/// Write the Rust, C++ interface, C++ implementation and data files for `items`.
///
/// # Errors
/// [`ErrorKind::Manifest`] when the module name is not usable; [`ErrorKind::ToolFailed`] when
/// a payload's bytes are not of its kind ([`PayloadKind::check`]: naming the file and the rule),
/// or are not those the device phase verified (changed by another writer since);
/// [`ErrorKind::Io`] for reads and writes.
pub fn generate(items: &[PayloadItem], opts: &SurfaceOptions) -> Result<Generated> {
    generate_with_tables(items, &[], opts)
}

/// [`generate`] with the lookup tables of tools-embed ([`LookupTable`]) over some of `items`.
///
/// # Errors
/// As [`generate`].
pub fn generate_with_tables(items: &[PayloadItem], tables: &[LookupTable], opts: &SurfaceOptions) -> Result<Generated> {
    let module = check_module_name(&opts.module_name)?;
    let mut written = Vec::new();
    let mut write = |path: &Path, text: &[u8]| -> Result<()> {
        if write_if_changed(path, text)? {
            written.push(path.to_path_buf());
        }
        Ok(())
    };
    let cpp_dirs: &[&Path] = &match &opts.cpp_mirror {
        Some(m) => vec![opts.cpp_dir.as_path(), m.as_path()],
        None => vec![opts.cpp_dir.as_path()],
    };
    let mut data_headers = Vec::new();
    let mut incbins: Vec<(&PayloadItem, String, PathBuf)> = Vec::new();
    let mut sidecars: Vec<(PathBuf, String)> = Vec::new();
    let mut sizes: Vec<usize> = Vec::with_capacity(items.len());
    // The bytes of each CUDA image (empty for other payloads), read for its kernel names.
    let mut image_bytes: Vec<Vec<u8>> = Vec::with_capacity(items.len());
    let alias = aliases(items);
    for (index, item) in items.iter().enumerate() {
        if let Some(first) = alias[index] {
            // The same file as an earlier accessor: its bytes are that accessor's, stored once.
            sizes.push(sizes[first]);
            image_bytes.push(if item.cuda.is_some() { image_bytes[first].clone() } else { Vec::new() });
            continue;
        }
        // An empty path is a placeholder (a source this build leaves out): no bytes.
        let bytes = if item.payload.as_os_str().is_empty() { Vec::new() } else { std::fs::read(&item.payload).map_err(|e| Error::io("cannot read the payload", &item.payload, e))? };
        if let Err(problem) = item.kind.check(&bytes) {
            return Err(Error::new(ErrorKind::ToolFailed, format!("the payload of {} from the {} rule {problem}", item.source, item.rule))
                .file(&item.payload)
                .detail(format!("The {} rule hands this payload to the surface as {}, which these bytes are not.", item.rule, item.kind.describe()))
                .help(format!("the compiler that wrote it is not doing what the {} rule expects: see what ran with `cargo mcpp why tool <name>`, then build again", item.rule)));
        }
        if let Some(want) = opts.verified.get(&item.payload) {
            if crate::engine::fingerprint::sha256_hex(&bytes) != *want {
                return Err(Error::new(ErrorKind::ToolFailed, format!("the payload of {} changed after its compiler wrote it; it is not embedded", item.source))
                    .file(&item.payload)
                    .detail("something outside this build wrote into the device cache while the build ran")
                    .help("build again: the device phase compiles it anew"));
            }
        }
        write(&payload_copy(opts, item), &item.kind.copy_bytes(&bytes))?;
        sizes.push(bytes.len());
        let aliased_by_image = items.iter().zip(&alias).any(|(i, a)| *a == Some(index) && i.cuda.is_some());
        image_bytes.push(if item.cuda.is_some() || aliased_by_image { bytes.clone() } else { Vec::new() });
        let base = accessor_base(&module, item);
        match item.storage_in(opts.storage) {
            Storage::Header if !opts.cxx => {}
            Storage::Header => {
                let rel = format!("data/{}", item.namespace.iter().map(|s| format!("{s}/")).collect::<String>()) + &item.identifier + ".h";
                let (sym, text) = data_header(item, &base, &bytes, opts);
                for dir in cpp_dirs {
                    write(&dir.join(&rel), text.as_bytes())?;
                }
                data_headers.push((rel, sym));
            }
            Storage::Object => {
                // The file `.incbin` reads: the payload's bytes (a text's NUL is the assembly's).
                let file = if bytes.is_empty() {
                    PathBuf::new()
                } else {
                    let mut f = opts.cpp_mirror.clone().unwrap_or_else(|| opts.cpp_dir.clone()).join("payloads");
                    f.extend(&item.namespace);
                    let f = f.join(format!("{}.{}.raw", item.identifier, item.kind.copy_extension()));
                    write(&f, &bytes)?;
                    f
                };
                incbins.push((item, base, file));
            }
            Storage::Sidecar => {
                let relative = storage::sidecar_relative(&opts.package_name, item);
                let file = relative.split('/').fold(opts.artifact_dir.clone(), |p, c| p.join(c));
                write(&file, &bytes)?;
                sidecars.push((file, relative));
            }
        }
    }
    for dir in cpp_dirs {
        remove_stale_data(&dir.join("data"), &data_headers.iter().map(|(rel, _)| dir.join(rel)).collect::<Vec<_>>());
    }
    // The copies and `.incbin` files in use (one directory without a mirror); a renamed or
    // deleted source's sidecar and `.incbin` file, and every one after a switch to another
    // storage form, are removed: nothing stale stays beside the program for `cargo mcpp pack`
    // to collect (the stale-bytes matrix's storage axis).
    let in_use: Vec<PathBuf> = items.iter().map(|i| payload_copy(opts, i)).chain(incbins.iter().map(|(_, _, f)| f.clone())).collect();
    remove_stale_data(&opts.payload_dir, &in_use);
    remove_stale_data(&opts.cpp_mirror.clone().unwrap_or_else(|| opts.cpp_dir.clone()).join("payloads"), &in_use);
    remove_stale_data(&opts.artifact_dir.join(storage::SIDECAR_ROOT).join(&opts.package_name), &sidecars.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>());
    if sidecars.is_empty() {
        // No sidecar (any more): the package's directory and, when no other package has one,
        // `mcpp-data/` go too (a directory that is not empty stays).
        let _ = std::fs::remove_dir(opts.artifact_dir.join(storage::SIDECAR_ROOT).join(&opts.package_name));
        let _ = std::fs::remove_dir(opts.artifact_dir.join(storage::SIDECAR_ROOT));
    }
    let groups = cuda::groups(items, &image_bytes);
    let rust = rust_surface(items, &sizes, &alias, &groups, tables, opts);
    write(&opts.rust_file, rust.as_bytes())?;
    let (interface_file, interface) = if opts.modules {
        (opts.cpp_dir.join(format!("{}.cppm", opts.module_name)), cpp_interface(items, &groups, tables, &module, opts, true))
    } else {
        (opts.cpp_dir.join(format!("{}.h", opts.module_name)), cpp_interface(items, &groups, tables, &module, opts, false))
    };
    for dir in &cpp_dirs[1..] {
        write(&dir.join(interface_file.file_name().unwrap_or_default()), interface.as_bytes())?;
    }
    write(&interface_file, interface.as_bytes())?;
    // The other form's interface (a switch of `modules`) is removed from every directory, so an
    // incremental build cannot find what a clean one would not generate.
    let other_form = opts.cpp_dir.join(format!("{}.{}", opts.module_name, if opts.modules { "h" } else { "cppm" }));
    for dir in cpp_dirs {
        remove_if_present(&dir.join(other_form.file_name().unwrap_or_default()))?;
    }
    let impl_file = opts.cpp_dir.join(format!("{}.impl.cpp", opts.module_name));
    let own = || items.iter().zip(&alias).filter(|(_, a)| a.is_none()).map(|(i, _)| i);
    let stored = |st: Storage| own().filter(move |i| i.storage_in(opts.storage) == st);
    let forms: Vec<&str> = [Storage::Header, Storage::Object, Storage::Sidecar].into_iter().filter(|st| stored(*st).next().is_some()).map(Storage::name).collect();
    let form = if forms.len() > 1 { format!("{} storage", forms.join(" + ")) } else { format!("{} storage", forms.first().copied().unwrap_or(opts.storage.name())) };
    let mut body = format!("// Generated by cargo-mcpp for the package `{}`: the bytes of `{}` ({form}). Do not edit.\n", comment(&opts.package_name), comment(&opts.module_name));
    for (rel, _) in &data_headers {
        let _ = writeln!(body, "#include \"{rel}\"");
    }
    if !opts.cxx && stored(Storage::Header).next().is_some() {
        body.push_str("// The header-stored payloads have no C arrays here: no C/C++ unit of the package compiles\n// this file (no `cxx-sources`, no island fallback). Rust reads their bytes from mcpp/payloads/.\n");
    }
    let assembly = if !incbins.is_empty() {
        let text = storage::assembly(&incbins, opts.object_format, &opts.package_name);
        let name = format!("{}.payloads.S", opts.module_name);
        for dir in cpp_dirs {
            write(&dir.join(&name), text.as_bytes())?;
        }
        Some((cpp_dirs[cpp_dirs.len() - 1].join(&name), incbins.iter().filter(|(_, _, f)| !f.as_os_str().is_empty()).map(|(_, _, f)| f.clone()).collect()))
    } else {
        // No payload under object storage (any more): no assembly either.
        for dir in cpp_dirs {
            remove_if_present(&dir.join(format!("{}.payloads.S", opts.module_name)))?;
        }
        None
    };
    if stored(Storage::Sidecar).next().is_some() {
        body.push_str(storage::SIDECAR_LOADER_CPP);
    }
    if stored(Storage::Header).any(|i| i.kind == PayloadKind::Words32) {
        body.push_str("\nstatic_assert(sizeof(unsigned int) == 4, \"cargo-mcpp: SPIR-V words assume a 32-bit `unsigned int`\");\n\n");
    } else if stored(Storage::Header).next().is_some() || items.is_empty() {
        body.push('\n');
    }
    for (item, (_, sym)) in stored(Storage::Header).zip(&data_headers) {
        let base = accessor_base(&module, item);
        let (data, size) = match item.kind {
            PayloadKind::Words32 => (sym.clone(), format!("sizeof {sym}")),
            PayloadKind::Bytes => (sym.clone(), format!("{sym}_size")),
            PayloadKind::Text => (format!("reinterpret_cast<const char*>({sym})"), format!("{sym}_size")),
        };
        let _ = writeln!(body, "extern \"C\" const {}* {base}_data() {{ return {data}; }}", c_type(item.kind));
        let _ = writeln!(body, "extern \"C\" unsigned long {base}_size() {{ return {size}; }}");
    }
    for item in own().filter(|i| i.storage_in(opts.storage) != Storage::Header) {
        let base = accessor_base(&module, item);
        let def = match item.storage_in(opts.storage) {
            Storage::Object => storage::object_impl(&base, c_type(item.kind)),
            _ => storage::sidecar_impl(&base, c_type(item.kind), &storage::sidecar_relative(&opts.package_name, item)),
        };
        let _ = write!(body, "\n{def}");
    }
    for (item, first) in items.iter().zip(&alias).filter_map(|(i, a)| a.map(|f| (i, &items[f]))) {
        let (base, of) = (accessor_base(&module, item), accessor_base(&module, first));
        let _ = write!(body, "\nextern \"C\" const {t}* {base}_data() {{ return {of}_data(); }}\nextern \"C\" unsigned long {base}_size() {{ return {of}_size(); }}\n", t = c_type(item.kind));
    }
    if !groups.is_empty() {
        body.push_str(cuda::SELECT_CPP);
    }
    for (_, group) in &groups {
        body.push_str(&cuda::c_impl(&module, group, items));
    }
    for table in tables {
        body.push_str(&table_impl(table, &module));
    }
    for dir in &cpp_dirs[1..] {
        write(&dir.join(impl_file.file_name().unwrap_or_default()), body.as_bytes())?;
    }
    write(&impl_file, body.as_bytes())?;
    Ok(Generated { rust_file: opts.rust_file.clone(), interface_file, impl_file, written, assembly, sidecars })
}

/// A payload's doc sentence as one comment line, whole: control characters escaped (no line
/// can end the comment), a trailing `\` spaced off.
fn doc_text(s: &str) -> String {
    let mut out = crate::text::escape_control(s);
    if out.ends_with('\\') {
        out.push(' ');
    }
    out
}

/// For each item, the index of the earlier item with the same payload file, if any (a CUDA
/// source's unsuffixed accessor and its architecture's suffixed one): such an accessor hands
/// out that item's bytes, stored once. Only an item of the same kind and storage is one (two
/// embed entries may take one file as bytes and as text). A placeholder (no file) is never an
/// alias.
fn aliases(items: &[PayloadItem]) -> Vec<Option<usize>> {
    items.iter().enumerate().map(|(i, item)| if item.payload.as_os_str().is_empty() { None } else { items[..i].iter().position(|f| f.payload == item.payload && f.kind == item.kind && f.storage == item.storage) }).collect()
}

/// The element type a payload's `_data()` points to in C and C++, by kind.
fn c_type(kind: PayloadKind) -> &'static str {
    match kind {
        PayloadKind::Words32 => "unsigned int",
        PayloadKind::Bytes => "unsigned char",
        PayloadKind::Text => "char",
    }
}

/// The C++ struct an accessor of the kind returns (`templates/payload*.hpp`).
fn cpp_struct(kind: PayloadKind) -> &'static str {
    match kind {
        PayloadKind::Words32 => "payload",
        PayloadKind::Bytes => "bytes_payload",
        PayloadKind::Text => "text_payload",
    }
}

/// The data header of one payload (header storage): its array symbol and text. Words: one
/// `unsigned int` array (little-endian words, 8 a line, `sizeof` is the size); bytes: an
/// `alignas(16)` `unsigned char` array and a `<sym>_size` (an empty payload keeps one unused
/// byte: C++ has no empty array); text: the bytes and one NUL, and `<sym>_size` without it.
/// Numeric literals only, never a string literal (no escaping, any byte).
fn data_header(item: &PayloadItem, base: &str, bytes: &[u8], opts: &SurfaceOptions) -> (String, String) {
    let mut text = format!("// Generated by cargo-mcpp from {} for the package `{}`. Do not edit.\n", comment(&item.source), comment(&opts.package_name));
    let sym = match item.kind {
        PayloadKind::Words32 => {
            let sym = format!("{base}_words");
            let _ = writeln!(text, "static const unsigned int {sym}[] = {{");
            for chunk in bytes.chunks(4 * 8) {
                text.push_str("   ");
                for w in chunk.chunks(4) {
                    let _ = write!(text, " 0x{:08x}u,", u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
                }
                text.push('\n');
            }
            text.push_str("};\n");
            return (sym, text);
        }
        PayloadKind::Bytes => {
            let sym = format!("{base}_bytes");
            let _ = writeln!(text, "alignas({}) static const unsigned char {sym}[] = {{", kind::BYTES_ALIGN);
            sym
        }
        PayloadKind::Text => {
            let sym = format!("{base}_text");
            let _ = writeln!(text, "static const unsigned char {sym}[] = {{");
            sym
        }
    };
    let stored = match item.kind {
        PayloadKind::Bytes if bytes.is_empty() => std::borrow::Cow::Owned(vec![0]),
        kind => kind.copy_bytes(bytes),
    };
    for chunk in stored.chunks(16) {
        text.push_str("   ");
        for b in chunk {
            let _ = write!(text, " 0x{b:02x},");
        }
        text.push('\n');
    }
    let _ = write!(text, "}};\nstatic const unsigned long {sym}_size = {};\n", bytes.len());
    (sym, text)
}

/// The copy of `item`'s payload the Rust surface includes:
/// `<payload_dir>/<namespace>/<identifier>.<spv|bin|txt>` ([`PayloadKind::copy_extension`]).
fn payload_copy(opts: &SurfaceOptions, item: &PayloadItem) -> PathBuf {
    let mut p = opts.payload_dir.clone();
    p.extend(&item.namespace);
    p.join(format!("{}.{}", item.identifier, item.kind.copy_extension()))
}

/// Remove `path` when it exists (a generated file the current surface does not generate).
///
/// # Errors
/// [`ErrorKind::Io`] when it exists and cannot be removed.
fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("cannot remove the stale generated file", path, e)),
        _ => Ok(()),
    }
}

/// Remove data headers of payloads that are gone (a deleted source), so no stale bytes stay
/// in OUT_DIR for a hand-written include to pick up.
fn remove_stale_data(dir: &Path, keep: &[PathBuf]) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            remove_stale_data(&p, keep);
            let _ = std::fs::remove_dir(&p);
        } else if !keep.contains(&p) {
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// The C definitions of a table's functions (in the implementation unit, after the accessors'
/// definitions): the keys, `count`, `key`, `at` and `get` (a byte-wise comparison, no library).
fn table_impl(table: &LookupTable, module: &[String]) -> String {
    let t = table.c_base(module);
    let n = table.entries.len();
    let mut out = format!("\nstatic const char* const {t}_keys[] = {{\n");
    for (key, _, _) in &table.entries {
        let _ = writeln!(out, "    {},", c_string(key));
    }
    let _ = write!(
        out,
        "}};\nextern \"C\" unsigned long {t}_count() {{ return {n}; }}\n\
         extern \"C\" const char* {t}_key(unsigned long i) {{ return i < {n} ? {t}_keys[i] : nullptr; }}\n\
         extern \"C\" const unsigned char* {t}_at(unsigned long i, unsigned long* size) {{\n    const unsigned char* d = nullptr;\n    unsigned long n = 0;\n    switch (i) {{\n"
    );
    for (i, (_, ns, id)) in table.entries.iter().enumerate() {
        let item = PayloadItem { source: String::new(), namespace: ns.clone(), identifier: id.clone(), payload: PathBuf::new(), kind: PayloadKind::Bytes, rule: String::new(), storage: None, doc: None, cuda: None, kernels: Vec::new() };
        let base = accessor_base(module, &item);
        let _ = writeln!(out, "    case {i}: d = {base}_data(); n = {base}_size(); break;");
    }
    let _ = write!(
        out,
        "    default: break;\n    }}\n    if (size != nullptr) *size = n;\n    return d;\n}}\n\
         extern \"C\" const unsigned char* {t}_get(const char* key, unsigned long* size) {{\n\
         \x20   for (unsigned long i = 0; key != nullptr && i < {n}; ++i) {{\n\
         \x20       const char* a = {t}_keys[i];\n        const char* b = key;\n\
         \x20       while (*a != 0 && *a == *b) {{ ++a; ++b; }}\n\
         \x20       if (*a == *b) return {t}_at(i, size);\n    }}\n\
         \x20   if (size != nullptr) *size = 0;\n    return nullptr;\n}}\n"
    );
    out
}

/// The Rust functions of `table` inside its module (`open` is its namespace): `get` and
/// `entries` over the accessors of its files (with `?` under sidecar storage).
fn rust_table(out: &mut String, table: &LookupTable, is_sidecar: &dyn Fn(&[String], &str) -> bool) {
    let sidecar = table.entries.iter().any(|(_, ns, id)| is_sidecar(ns, id));
    let depth = table.namespace.len();
    let ind = "    ".repeat(depth);
    let sup = "super::".repeat(depth);
    let call = |ns: &[String], id: &str| {
        let path: Vec<&str> = ns[depth..].iter().map(String::as_str).chain(std::iter::once(id)).collect();
        format!("{}(){}.bytes", path.join("::"), if is_sidecar(ns, id) { "?" } else { "" })
    };
    let (wrap_open, wrap_close) = if sidecar { ("Ok(", ")") } else { ("", "") };
    let result = |ty: &str| if sidecar { format!("Result<{ty}, {sup}SidecarError>") } else { ty.to_string() };
    let name = table.namespace.join("::");
    let _ = write!(out, "\n{ind}/// The bytes of the file of the table `{name}` whose key is `key`; `None` for a key it has not.\n{ind}#[allow(dead_code)]\n{ind}pub fn get(key: &str) -> {} {{\n{ind}    {wrap_open}match key {{\n", result("Option<&'static [u8]>"));
    for (key, ns, id) in &table.entries {
        let _ = writeln!(out, "{ind}        {key:?} => Some({}),", call(ns, id));
    }
    let _ = write!(out, "{ind}        _ => None,\n{ind}    }}{wrap_close}\n{ind}}}\n");
    let n = table.entries.len();
    let _ = write!(out, "\n{ind}/// Every `(key, bytes)` of the table `{name}`, in the order of its files.\n{ind}#[allow(dead_code)]\n{ind}pub fn entries() -> {} {{\n{ind}    {wrap_open}[\n", result(&format!("[(&'static str, &'static [u8]); {n}]")));
    for (key, ns, id) in &table.entries {
        let _ = writeln!(out, "{ind}        ({key:?}, {}),", call(ns, id));
    }
    let _ = write!(out, "{ind}    ]{wrap_close}\n{ind}}}\n");
}

/// The C++ functions of `table` inside its namespace, over its C functions.
fn cpp_table(out: &mut String, table: &LookupTable, module: &[String]) {
    let t = table.c_base(module);
    let _ = write!(
        out,
        "inline bytes_payload get(const char* key) {{ unsigned long n = 0; const unsigned char* d = {t}_get(key, &n); return {{ d, n }}; }}\n\
         inline unsigned long count() {{ return {t}_count(); }}\n\
         inline const char* key(unsigned long i) {{ return {t}_key(i); }}\n\
         inline bytes_payload at(unsigned long i) {{ unsigned long n = 0; const unsigned char* d = {t}_at(i, &n); return {{ d, n }}; }}\n"
    );
}

/// The Rust surface; `sizes[i]` is the size in bytes of `items[i]`'s payload (a text's without
/// its NUL), `alias[i]` the item whose bytes it hands out ([`aliases`]).
fn rust_surface(items: &[PayloadItem], sizes: &[usize], alias: &[Option<usize>], groups: &[(usize, cuda::Group)], tables: &[LookupTable], opts: &SurfaceOptions) -> String {
    let mut out = format!(
        "// Generated by cargo-mcpp for the package `{}` (module `{}`). Do not edit.\n\
         // Include it in a module: mod shaders {{ include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }}\n\n",
        comment(&opts.package_name), comment(&opts.module_name)
    );
    let of = |kind: PayloadKind| items.iter().filter(move |i| i.kind == kind);
    let (has_bytes, has_text) = (of(PayloadKind::Bytes).next().is_some(), of(PayloadKind::Text).next().is_some());
    out.push_str(include_str!("../../templates/payload.rs"));
    if has_bytes {
        out.push('\n');
        out.push_str(include_str!("../../templates/payload_bytes.rs"));
    }
    if has_text {
        out.push('\n');
        out.push_str(include_str!("../../templates/payload_text.rs"));
    }
    let st = |item: &PayloadItem| item.storage_in(opts.storage);
    if items.iter().any(|i| st(i) != Storage::Header) {
        out.push_str(storage::OBJECT_RUST);
    }
    if items.iter().any(|i| st(i) == Storage::Sidecar) {
        out.push_str(storage::SIDECAR_RUST);
    }
    if !groups.is_empty() {
        out.push('\n');
        out.push_str(include_str!("../../templates/payload_cuda.rs"));
    }
    let module = names::module_segments(&opts.module_name).unwrap_or_default();
    let path = |item: &PayloadItem| item.namespace.iter().map(String::as_str).chain(std::iter::once(item.identifier.as_str())).collect::<Vec<_>>().join("::");
    let others: Vec<&str> = [(has_bytes, "`all_bytes()`"), (has_text, "`all_text()`")].into_iter().filter(|(has, _)| *has).map(|(_, f)| f).collect();
    let doc = if others.is_empty() {
        "Every payload of this surface, in name order.".to_string()
    } else {
        format!("Every 32-bit-word (SPIR-V) payload of this surface, in name order; {} list the others.", others.join(" and "))
    };
    let lists = [(PayloadKind::Words32, "all", "Payload", doc), (PayloadKind::Bytes, "all_bytes", "BytesPayload", "Every bytes payload of this surface, in name order.".into()), (PayloadKind::Text, "all_text", "TextPayload", "Every text payload of this surface, in name order.".into())];
    for (kind, name, ty, doc) in lists {
        if kind != PayloadKind::Words32 && of(kind).next().is_none() {
            continue;
        }
        if of(kind).any(|i| st(i) == Storage::Sidecar) {
            let _ = writeln!(out, "\n/// {doc} Sidecar storage: the first file that cannot be read is the error.\n#[allow(dead_code)]\npub fn {name}() -> Result<[{ty}; {}], SidecarError> {{\n    Ok([", of(kind).count());
            for item in of(kind) {
                let _ = writeln!(out, "        {}(){},", path(item), if st(item) == Storage::Sidecar { "?" } else { "" });
            }
            out.push_str("    ])\n}\n");
            continue;
        }
        let _ = writeln!(out, "\n/// {doc}\n#[allow(dead_code)]\npub fn {name}() -> [{ty}; {}] {{\n    [", of(kind).count());
        for item in of(kind) {
            let _ = writeln!(out, "        {}(),", path(item));
        }
        out.push_str("    ]\n}\n");
    }
    let mut open: Vec<String> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let common = open.iter().zip(&item.namespace).take_while(|(a, b)| a == b).count();
        while open.len() > common {
            if let Some(t) = tables.iter().find(|t| t.namespace == open) {
                rust_table(&mut out, t, &|ns, id| items.iter().any(|i| i.namespace == ns && i.identifier == id && st(i) == Storage::Sidecar));
            }
            open.pop();
            let _ = writeln!(out, "{}}}", "    ".repeat(open.len()));
        }
        while open.len() < item.namespace.len() {
            let seg = &item.namespace[open.len()];
            let _ = writeln!(out, "\n{}#[allow(non_snake_case, dead_code)]\n{0}pub mod {seg} {{", "    ".repeat(open.len()));
            open.push(seg.clone());
        }
        let ind = "    ".repeat(open.len());
        let sup = "super::".repeat(open.len());
        let payload = format!("{:?}", payload_copy(opts, item).to_string_lossy());
        let (doc, id) = (comment(&item.source), &item.identifier);
        let mark = out.len();
        if let Some(first) = alias[index].map(|f| &items[f]) {
            let ty = match item.kind {
                PayloadKind::Words32 => "Payload",
                PayloadKind::Bytes => "BytesPayload",
                PayloadKind::Text => "TextPayload",
            };
            let ret = if st(first) == Storage::Sidecar { format!("Result<{sup}{ty}, {sup}SidecarError>") } else { format!("{sup}{ty}") };
            let _ = write!(out, "\n{ind}/// `{doc}`: the payload `{}()` hands out.\n{ind}#[allow(non_snake_case, dead_code)]\n{ind}pub fn {id}() -> {ret} {{\n{ind}    {sup}{}()\n{ind}}}\n", path(first), path(first));
        } else if st(item) != Storage::Header {
            let _ = write!(out, "\n{ind}/// `{doc}` ({} storage).\n", st(item).name());
            out.push_str(&match st(item) {
                Storage::Object => storage::object_rust(item, &accessor_base(&module, item), &sup, &ind),
                _ => storage::sidecar_rust(item, &storage::sidecar_relative(&opts.package_name, item), &sup, &ind),
            });
        } else {
            header_rust(&mut out, item, sizes[index], &payload, &sup, &ind);
        }
        // The item's own sentence, after the first doc line.
        if let Some(note) = &item.doc {
            let at = mark + 1 + out[mark + 1..].find('\n').unwrap_or(0);
            out.insert_str(at, &format!("\n{ind}///\n{ind}/// {}", doc_text(note)));
        }
        for (_, group) in groups.iter().filter(|(last, _)| *last == index) {
            out.push_str(&cuda::rust(group, items, &st, &sup, &ind));
        }
    }
    while !open.is_empty() {
        if let Some(t) = tables.iter().find(|t| t.namespace == open) {
            rust_table(&mut out, t, &|ns, id| items.iter().any(|i| i.namespace == ns && i.identifier == id && st(i) == Storage::Sidecar));
        }
        open.pop();
        let _ = writeln!(out, "{}}}", "    ".repeat(open.len()));
    }
    out
}

/// The Rust accessor of `item` under header storage (`size`: its bytes, a text's without the
/// NUL; `payload`: the copy's path as a Rust string literal).
fn header_rust(out: &mut String, item: &PayloadItem, size: usize, payload: &str, sup: &str, ind: &str) {
    let (src, doc, id) = (&item.source, comment(&item.source), &item.identifier);
    {
        let _ = match item.kind {
            PayloadKind::Words32 => write!(
                out,
                "\n{ind}/// `{doc}`, compiled to SPIR-V.\n{ind}#[allow(non_snake_case, dead_code)]\n{ind}pub fn {id}() -> {sup}Payload {{\n\
                 {ind}    #[cfg(target_endian = \"little\")]\n\
                 {ind}    let payload = {{\n\
                 {ind}        static BYTES: &{sup}AlignedBytes<[u8]> = &{sup}AlignedBytes {{ bytes: *include_bytes!({payload}) }};\n\
                 {ind}        {sup}Payload {{ code: {sup}header_words(BYTES), size_bytes: BYTES.bytes.len(), source: {src:?} }}\n\
                 {ind}    }};\n\
                 {ind}    #[cfg(not(target_endian = \"little\"))]\n\
                 {ind}    let payload = {{\n\
                 {ind}        const BYTES: &[u8] = include_bytes!({payload});\n\
                 {ind}        static WORDS: [u32; BYTES.len() / 4] = {sup}words(BYTES);\n\
                 {ind}        {sup}Payload {{ code: &WORDS, size_bytes: BYTES.len(), source: {src:?} }}\n\
                 {ind}    }};\n\
                 {ind}    payload\n{ind}}}\n",
            ),
            PayloadKind::Bytes => write!(
                out,
                "\n{ind}/// `{doc}`: its bytes, 16-byte aligned.\n{ind}#[allow(non_snake_case, dead_code)]\n{ind}pub fn {id}() -> {sup}BytesPayload {{\n\
                 {ind}    static BYTES: &{sup}AlignedBytes<[u8]> = &{sup}AlignedBytes {{ bytes: *include_bytes!({payload}) }};\n\
                 {ind}    {sup}BytesPayload {{ bytes: &BYTES.bytes, source: {src:?} }}\n{ind}}}\n",
            ),
            // The copy's length (the text and its NUL) is the type of the included array, so a
            // copy that is not the one generated fails to compile; its last byte is checked in
            // const (one read): no const evaluation reads the text.
            PayloadKind::Text => write!(
                out,
                "\n{ind}/// `{doc}`: its text, and the same bytes NUL-terminated.\n{ind}#[allow(non_snake_case, dead_code)]\n{ind}pub fn {id}() -> {sup}TextPayload {{\n\
                 {ind}    const BYTES: &[u8; {n}] = include_bytes!({payload});\n\
                 {ind}    const _: () = assert!(BYTES[{last}] == 0, \"cargo-mcpp: a text payload's copy is not its text and one NUL\");\n\
                 {ind}    {sup}text_payload(BYTES, {src:?})\n{ind}}}\n",
                n = size + 1,
                last = size,
            ),
        };
    }
}

fn cpp_interface(items: &[PayloadItem], groups: &[(usize, cuda::Group)], tables: &[LookupTable], module: &[String], opts: &SurfaceOptions, as_module: bool) -> String {
    let mut out = format!("// Generated by cargo-mcpp for the package `{}`. Do not edit.\n", comment(&opts.package_name));
    if as_module {
        let _ = writeln!(out, "export module {};\n\nextern \"C\" {{", opts.module_name);
    } else {
        out.push_str("#pragma once\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    }
    let void = if as_module { "" } else { "void" };
    for item in items {
        let base = accessor_base(module, item);
        let _ = writeln!(out, "const {}* {base}_data({void});\nunsigned long {base}_size({void});", c_type(item.kind));
    }
    for (_, group) in groups {
        out.push_str(&cuda::c_declarations(module, group, void));
    }
    for table in tables {
        let t = table.c_base(module);
        let _ = writeln!(out, "const unsigned char* {t}_get(const char* key, unsigned long* size);\nunsigned long {t}_count({void});\nconst char* {t}_key(unsigned long i);\nconst unsigned char* {t}_at(unsigned long i, unsigned long* size);");
    }
    if as_module {
        out.push_str("}\n\n");
    } else {
        out.push_str("#ifdef __cplusplus\n}\n\n");
    }
    for (i, seg) in module.iter().enumerate() {
        let export = if as_module && i == 0 { "export " } else { "" };
        let _ = writeln!(out, "{export}namespace {seg} {{");
    }
    out.push('\n');
    out.push_str(include_str!("../../templates/payload.hpp"));
    if items.iter().any(|i| i.kind == PayloadKind::Bytes) {
        out.push('\n');
        out.push_str(include_str!("../../templates/payload_bytes.hpp"));
    }
    if items.iter().any(|i| i.kind == PayloadKind::Text) {
        out.push('\n');
        out.push_str(include_str!("../../templates/payload_text.hpp"));
    }
    if !groups.is_empty() {
        out.push('\n');
        out.push_str(include_str!("../../templates/payload_cuda.hpp"));
    }
    let mut open: Vec<String> = Vec::new();
    for item in items {
        let common = open.iter().zip(&item.namespace).take_while(|(a, b)| a == b).count();
        while open.len() > common {
            if let Some(t) = tables.iter().find(|t| t.namespace == open) {
                cpp_table(&mut out, t, module);
            }
            let seg = open.pop().unwrap_or_default();
            let _ = writeln!(out, "}} // namespace {seg}");
        }
        while open.len() < item.namespace.len() {
            let seg = &item.namespace[open.len()];
            let _ = writeln!(out, "namespace {seg} {{");
            open.push(seg.clone());
        }
        let base = accessor_base(module, item);
        if let Some(note) = &item.doc {
            let _ = writeln!(out, "// {}", doc_text(note));
        }
        let _ = writeln!(out, "inline {} {}() {{ return {{ {base}_data(), {base}_size() }}; }}", cpp_struct(item.kind), item.identifier);
        if let Some((_, group)) = groups.iter().find(|(last, _)| std::ptr::eq(&items[*last], item)) {
            out.push_str(&cuda::cpp_inline(module, group));
        }
    }
    while !open.is_empty() {
        if let Some(t) = tables.iter().find(|t| t.namespace == open) {
            cpp_table(&mut out, t, module);
        }
        let seg = open.pop().unwrap_or_default();
        let _ = writeln!(out, "}} // namespace {seg}");
    }
    out.push('\n');
    for seg in module.iter().rev() {
        let _ = writeln!(out, "}} // namespace {seg}");
    }
    if !as_module {
        out.push_str("#endif\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source name or package name with a newline stays inside its comment in every generated
    /// file; the Rust string literal is Rust-escaped.
    #[test]
    fn values_in_comments_cannot_add_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let payload = dir.path().join("x.spv");
        std::fs::write(&payload, [3u8, 2, 0x23, 7]).unwrap();
        let item = PayloadItem { source: "s/x\n#error injected\n.comp".into(), namespace: vec![], identifier: "x_comp".into(), payload, kind: PayloadKind::Words32, rule: "spirv".into(), storage: None, doc: None, cuda: None, kernels: Vec::new() };
        let opts = SurfaceOptions {
            package_name: "p\n#error pkg".into(),
            module_name: "p.shaders".into(),
            modules: false,
            cpp_dir: dir.path().join("mcpp"),
            rust_file: dir.path().join("mcpp_shaders.rs"),
            payload_dir: dir.path().join("mcpp/payloads"),
            verified: [(item.payload.clone(), crate::engine::fingerprint::hash_file(&item.payload).unwrap())].into(),
            cpp_mirror: None,
            storage: Storage::Header,
            object_format: ObjectFormat::Elf,
            artifact_dir: dir.path().join("artifacts"),
            cxx: true,
        };
        let g = generate(std::slice::from_ref(&item), &opts).unwrap();
        for f in [g.rust_file, g.interface_file, g.impl_file, dir.path().join("mcpp/data/x_comp.h")] {
            let text = std::fs::read_to_string(&f).unwrap();
            for line in text.lines() {
                assert!(!line.starts_with("#error"), "{}: a value added the line `{line}`:\n{text}", f.display());
            }
        }
        let rust = std::fs::read_to_string(dir.path().join("mcpp_shaders.rs")).unwrap();
        assert!(rust.contains("/// `s/x\\n#error injected\\n.comp`, compiled to SPIR-V."), "{rust}");
        assert!(rust.contains("source: \"s/x\\n#error injected\\n.comp\""), "{rust}");
    }

    /// What the current surface does not generate is removed: the other form's interface after a
    /// switch of `modules` (in OUT_DIR and the mirror), the assembly after object -> header, the
    /// package's sidecar directory after sidecar -> header.
    #[test]
    fn a_switch_removes_what_the_surface_no_longer_generates() {
        let dir = tempfile::tempdir().unwrap();
        let items = mixed(dir.path());
        let mirror = dir.path().join("mirror");
        let opts = |modules: bool, storage: Storage| SurfaceOptions { cpp_mirror: Some(mirror.clone()), storage, ..options_in(dir.path(), modules) };
        generate(&items, &opts(true, Storage::Object)).unwrap();
        for d in [dir.path().join("mcpp"), mirror.clone()] {
            assert!(d.join("kinds.shaders.cppm").is_file() && d.join("kinds.shaders.payloads.S").is_file(), "{}", d.display());
        }
        generate(&items, &opts(false, Storage::Sidecar)).unwrap();
        for d in [dir.path().join("mcpp"), mirror.clone()] {
            assert!(d.join("kinds.shaders.h").is_file(), "{}", d.display());
            assert!(!d.join("kinds.shaders.cppm").exists() && !d.join("kinds.shaders.payloads.S").exists(), "{}: stale interface or assembly", d.display());
        }
        assert!(dir.path().join("artifacts/mcpp-data/kinds").is_dir());
        generate(&items, &opts(true, Storage::Header)).unwrap();
        for d in [dir.path().join("mcpp"), mirror.clone()] {
            assert!(d.join("kinds.shaders.cppm").is_file() && !d.join("kinds.shaders.h").exists(), "{}: stale header", d.display());
        }
        assert!(!dir.path().join("artifacts/mcpp-data").exists(), "an empty sidecar directory stayed");
    }

    /// Options writing into `dir`, nothing verified.
    fn options_in(dir: &Path, modules: bool) -> SurfaceOptions {
        SurfaceOptions {
            package_name: "kinds".into(),
            module_name: "kinds.shaders".into(),
            modules,
            cpp_dir: dir.join("mcpp"),
            rust_file: dir.join("mcpp_shaders.rs"),
            payload_dir: dir.join("mcpp/payloads"),
            verified: Default::default(),
            cpp_mirror: None,
            storage: Storage::Header,
            object_format: ObjectFormat::Elf,
            artifact_dir: dir.join("artifacts"),
            cxx: true,
        }
    }

    /// One payload of each kind (and an empty bytes payload), named as the pipeline names them.
    fn mixed(dir: &Path) -> Vec<PayloadItem> {
        let files: [(&str, &[u8]); 4] = [("scale.spv", &[3, 2, 0x23, 7, 0, 0, 1, 0]), ("w.bin", &[0, 0xff, 0x10]), ("empty.bin", &[]), ("k.ptx", "// PTX ∑\n.version 8.0\n".as_bytes())];
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        let payloads = [
            ("spirv", Payload::words("s/scale.comp", "scale_comp", dir.join("scale.spv"))),
            ("data", Payload::bytes("s/nn/w.bin", "w_bin", dir.join("w.bin"))),
            ("data", Payload::bytes("s/nn/empty.bin", "empty_bin", dir.join("empty.bin"))),
            ("cuda", Payload::text("s/k.cu", "k_ptx", dir.join("k.ptx"))),
        ];
        name_payloads(&payloads, &["s".to_string()]).unwrap()
    }

    /// Every generated file of `dir` (payload copies as bytes), `dir` shown as `[DIR]`.
    fn generated_text(dir: &Path) -> String {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.starts_with(dir.join("mcpp")) || p.ends_with("mcpp_shaders.rs") {
                    files.push(p);
                }
            }
        }
        files.sort();
        let mut out = String::new();
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            let text = if f.starts_with(dir.join("mcpp/payloads")) { format!("{bytes:?}") } else { String::from_utf8(bytes).unwrap() };
            let _ = writeln!(out, "===== {}\n{}", f.strip_prefix(dir).unwrap().display(), text.replace(&dir.display().to_string(), "[DIR]"));
        }
        out
    }

    /// The generated text of each kind, in Rust, the C++ module, the C header, the impl unit and
    /// the data headers (words exactly as before kinds existed: tests/integration/snapshots/integration__surface__*.snap).
    #[test]
    fn each_kind_has_its_accessors_in_every_language() {
        let dir = tempfile::tempdir().unwrap();
        let items = mixed(dir.path());
        assert_eq!(items.iter().map(|i| (i.identifier.as_str(), i.kind, i.rule.as_str())).collect::<Vec<_>>(), [
            ("k_ptx", PayloadKind::Text, "cuda"),
            ("scale_comp", PayloadKind::Words32, "spirv"),
            ("empty_bin", PayloadKind::Bytes, "data"),
            ("w_bin", PayloadKind::Bytes, "data"),
        ]);
        generate(&items, &options_in(dir.path(), true)).unwrap();
        insta::assert_snapshot!("kinds_module", generated_text(dir.path()));
        let header = tempfile::tempdir().unwrap();
        generate(&mixed(header.path()), &options_in(header.path(), false)).unwrap();
        insta::assert_snapshot!("kinds_header", std::fs::read_to_string(header.path().join("mcpp/kinds.shaders.h")).unwrap());
    }

    /// A surface without words payloads still has `all()` (empty), and its own lists; a
    /// words-only surface has no type, helper or list of the other kinds.
    #[test]
    fn a_kinds_type_and_list_come_with_its_first_payload() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.txt"), "x").unwrap();
        let items = name_payloads(&[("data", Payload::text("t.txt", "t_txt", dir.path().join("t.txt")))], &[]).unwrap();
        generate(&items, &options_in(dir.path(), true)).unwrap();
        let rust = std::fs::read_to_string(dir.path().join("mcpp_shaders.rs")).unwrap();
        assert!(rust.contains("pub fn all() -> [Payload; 0] {\n    [\n    ]\n}") && rust.contains("pub fn all_text() -> [TextPayload; 1] {\n    [\n        t_txt(),\n    ]\n}"), "{rust}");
        assert!(!rust.contains("BytesPayload") && !rust.contains("all_bytes"), "{rust}");
        let body = std::fs::read_to_string(dir.path().join("mcpp/kinds.shaders.impl.cpp")).unwrap();
        assert!(!body.contains("static_assert"), "no words, no word-size assertion: {body}");
        assert_eq!(std::fs::read(dir.path().join("mcpp/payloads/t_txt.txt")).unwrap(), b"x\0");

        let words = tempfile::tempdir().unwrap();
        std::fs::write(words.path().join("x.spv"), [3u8, 2, 0x23, 7]).unwrap();
        let items = name_payloads(&[("spirv", Payload::words("x.comp", "x_comp", words.path().join("x.spv")))], &[]).unwrap();
        generate(&items, &options_in(words.path(), true)).unwrap();
        let rust = std::fs::read_to_string(words.path().join("mcpp_shaders.rs")).unwrap();
        assert!(!rust.contains("BytesPayload") && !rust.contains("TextPayload") && rust.contains("header_words(BYTES)") && rust.contains("/// Every payload of this surface, in name order."), "{rust}");
        let module = std::fs::read_to_string(words.path().join("mcpp/kinds.shaders.cppm")).unwrap();
        assert!(!module.contains("bytes_payload") && !module.contains("text_payload"), "{module}");
    }

    /// A payload that is not of its kind is refused naming the file and the rule, and nothing
    /// of the surface is written.
    #[test]
    fn a_payload_not_of_its_kind_is_refused_with_its_path_and_rule() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(Payload, &[u8], &str); 3] = [
            (Payload::words("s/x.comp", "x_comp", dir.path().join("x.spv")), &[1, 2, 3, 4, 5, 6, 7], "the payload of s/x.comp from the spirv rule is 7 bytes, not a whole number of 32-bit words"),
            (Payload::text("s/k.cu", "k_ptx", dir.path().join("k.ptx")), b"ok\xc3(", "the payload of s/k.cu from the spirv rule is not UTF-8 text: the byte at offset 2 (0xc3) starts no UTF-8 character"),
            (Payload::text("s/k.cu", "k_ptx", dir.path().join("k.ptx")), b"a\0b", "the payload of s/k.cu from the spirv rule has a NUL byte at offset 1, where its NUL-terminated form would end"),
        ];
        for (payload, bytes, message) in cases {
            std::fs::write(&payload.path, bytes).unwrap();
            let out = tempfile::tempdir().unwrap();
            let items = name_payloads(&[("spirv", payload.clone())], &[]).unwrap();
            let e = generate(&items, &options_in(out.path(), true)).unwrap_err();
            assert_eq!((e.kind, e.message.as_str(), e.file.as_deref()), (ErrorKind::ToolFailed, message, Some(payload.path.as_path())));
            assert!(e.to_string().contains(&format!("The spirv rule hands this payload to the surface as {}", payload.kind.describe())), "{e}");
            assert!(!out.path().join("mcpp_shaders.rs").exists());
        }
    }

    /// Two accessors of one file of one kind hand out one stored copy (the second calls the
    /// first, in Rust and in C); the same file as another kind is its own payload.
    #[test]
    fn two_accessors_of_one_file_store_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.ptx");
        std::fs::write(&file, ".version 9.0\n").unwrap();
        let payloads = [("cuda", Payload::text("a.cu", "a_ptx", &file)), ("cuda", Payload::text("a.cu", "a_ptx_compute_80", &file)), ("data", Payload::bytes("a.ptx", "a_bin", &file))];
        let items = name_payloads(&payloads, &[]).unwrap();
        generate(&items, &options_in(dir.path(), true)).unwrap();
        let rust = std::fs::read_to_string(dir.path().join("mcpp_shaders.rs")).unwrap();
        assert!(rust.contains("pub fn a_ptx_compute_80() -> TextPayload {\n    a_ptx()\n}"), "{rust}");
        let body = std::fs::read_to_string(dir.path().join("mcpp/kinds.shaders.impl.cpp")).unwrap();
        assert!(body.contains("extern \"C\" const char* mcpp_embed_5kinds7shaders16a_ptx_compute_80_data() { return mcpp_embed_5kinds7shaders5a_ptx_data(); }"), "{body}");
        let copies = dir.path().join("mcpp/payloads");
        assert!(copies.join("a_ptx.txt").is_file() && copies.join("a_bin.bin").is_file() && !copies.join("a_ptx_compute_80.txt").exists());
    }

    /// The bytes of every kind are checked against the hash the device phase verified.
    #[test]
    fn a_payload_of_any_kind_changed_after_its_compiler_is_refused() {
        for kind in [PayloadKind::Words32, PayloadKind::Bytes, PayloadKind::Text] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("p");
            std::fs::write(&path, b"abcd").unwrap();
            let items = name_payloads(&[("r", Payload { source: "p.x".into(), identifier: "p".into(), path: path.clone(), kind, doc: None, cuda: None, kernels: Vec::new() })], &[]).unwrap();
            let mut opts = options_in(dir.path(), true);
            opts.verified.insert(path.clone(), crate::engine::fingerprint::sha256_hex(b"abce"));
            let e = generate(&items, &opts).unwrap_err();
            assert!(e.message.contains("changed after its compiler wrote it"), "{kind:?}: {e}");
            opts.verified.insert(path.clone(), crate::engine::fingerprint::sha256_hex(b"abcd"));
            generate(&items, &opts).unwrap();
            let copy = dir.path().join("mcpp/payloads").join(format!("p.{}", kind.copy_extension()));
            assert_eq!(std::fs::read(copy).unwrap(), &*kind.copy_bytes(b"abcd"));
        }
    }
}
