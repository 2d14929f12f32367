//! `[package.metadata.mcpp]` read from `Cargo.toml` with `toml` + serde, every table
//! `deny_unknown_fields` so an unknown key is refused naming the key, the file, its line and
//! the keys valid there (the cargo-dist `parse_metadata_table` pattern; design/style.md 7).
//!
//! build.rs reads `$CARGO_MANIFEST_DIR/Cargo.toml` itself (no `cargo metadata` from inside a
//! build); the CLI finds the manifest with cargo_metadata and then reads it the same way.

use crate::error::{Error, ErrorKind, Result};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The whole of `[package.metadata.mcpp]`: the keys every package has, typed here, and the
/// tables of the rules (`[package.metadata.mcpp.<rule>]`), kept raw in [`McppMetadata::rule_tables`]
/// for each rule to read with its own options type ([`Manifest::rule_options`]). Any other key
/// is refused by [`Manifest::check_keys`], naming it, its `file:line:col`, the keys valid here
/// and the rules (a rule is one file: a new rule's table needs no change here).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", expecting = "a table of cargo-mcpp keys ([package.metadata.mcpp])")]
pub struct McppMetadata {
    /// The accelerator set, e.g. `"vulkan1.2"`; see [`crate::config::accel`]. Absent = no accelerator.
    pub accel: Option<String>,
    /// Device sources: globs relative to the package root, plain or constrained.
    #[serde(default)]
    pub sources: Vec<SourceEntry>,
    /// The module name of the generated surface; default `<package identifier>.shaders`.
    pub module_name: Option<String>,
    /// `true` (default): the C++ surface is a C++20 module interface (`.cppm`); `false`: a header.
    pub modules: Option<bool>,
    /// Where the payloads' bytes live: `header` (default), `object` or `sidecar`
    /// ([`crate::surface::storage`]); checked by [`crate::surface::storage::from_manifest`].
    pub storage: Option<String>,
    /// The base directory of the surface's names, relative to the package
    /// root, `/`-separated (`"shaders"`): the directories of a payload below it become its
    /// modules/namespaces. Default: derived, the shallowest directory all payloads share (which
    /// moves when a payload is added or removed elsewhere). Checked by
    /// [`crate::surface::resolve_base`].
    pub base_dir: Option<String>,
    /// Explicit tool paths by program name (`glslangValidator = "/opt/bin/glslangValidator"`).
    #[serde(default)]
    pub tools: BTreeMap<String, PathBuf>,
    /// `[package.metadata.mcpp.island]`: the `extern "C"` boundary between a device island and
    /// its host fallback (header, Rust bindings, C++ module).
    pub island: Option<IslandOptions>,
    /// The crate's own C++ host sources (globs relative to the package root): `.cpp`/`.cc`/`.cxx`
    /// units and `.cppm`/`.ixx` C++20 module interfaces, compiled with the `cc` crate's compiler
    /// choice, interfaces before their importers, and linked into the crate.
    #[serde(default)]
    pub cxx_sources: Vec<String>,
    /// `[package.metadata.mcpp.cxx]`: options of the host C++ sources.
    pub cxx: Option<CxxOptions>,
    /// `[package.metadata.mcpp.host-toolchain]`: the declared host C++ compiler that the `cc`
    /// crate and every rule's host compiler use ([`crate::rules::host::declared`]).
    pub host_toolchain: Option<HostToolchainDecl>,
    /// `[package.metadata.mcpp.toolchain-packages]`: the project's version of a toolchain
    /// package, by name (`glslang = "13.1.1"`, a choice; `glslang = ">=13.1"`, a requirement);
    /// see [`crate::toolchain_package`] and the guide, "Declared toolchains". The earlier key
    /// `payloads` is refused naming this one ([`RENAMED_KEYS`]).
    #[serde(default)]
    pub toolchain_packages: BTreeMap<String, String>,
    /// `[package.metadata.mcpp.pack]`: what `cargo mcpp pack` puts into an AppImage or an MSI
    /// (cargo-mcpp guide, "Packaging"); not read by a build.
    pub pack: Option<PackOptions>,
    /// `[package.metadata.mcpp.embed]`: data files (fonts, weights, tables, text) embedded
    /// through the payload surface (tools-embed; [`crate::sources::embed`]).
    pub embed: Option<EmbedOptions>,
    /// The compiler launcher put before every compiler it can handle: `"sccache"`,
    /// `"ccache"` (looked up on PATH, never guessed) or a path (relative to the package root or
    /// absolute); `"none"`: no launcher. `MCPP_LAUNCHER` overrides it; a rule's own `launcher`
    /// key (taken out of its table into [`McppMetadata::rule_launchers`]) wins for that rule.
    /// Resolved by [`crate::rules::launcher::Launchers::resolve`].
    pub launcher: Option<String>,
    /// Where a copy of the device phase's `compile_commands.json` goes (a directory relative to
    /// the package root, `"."` for the package root); the database itself is always written
    /// into the device cache ([`crate::engine::compile_db`], which says who writes it). `--compile-commands DIR` overrides it.
    pub compile_commands: Option<String>,
    /// Include directories this package exports to the packages depending on it (relative to
    /// the package root, inside it): printed as `cargo::metadata=MCPP_INCLUDE=<dirs>`, which
    /// cargo hands to the build scripts of its direct dependents as `DEP_<LINKS>_MCPP_INCLUDE`.
    /// Needs `[package] links`. Checked and printed by [`crate::plan::exports`].
    #[serde(default)]
    pub export_includes: Vec<PathBuf>,
    /// The `links` names of dependencies whose exported include directories
    /// (`DEP_<LINKS>_MCPP_INCLUDE`) are appended to every rule's include directories.
    #[serde(default)]
    pub include_from: Vec<String>,
    /// The directories [`McppMetadata::include_from`] names, resolved by the build script from
    /// `DEP_<LINKS>_MCPP_INCLUDE` ([`crate::plan::exports::dependency_includes`]) before the
    /// rules plan; empty where no build script runs (`cargo mcpp build`'s checks).
    #[serde(skip)]
    pub dependency_includes: Vec<PathBuf>,
    /// The `launcher` key of each rule's table, by rule name, as written (string values only;
    /// another type is refused by [`Manifest::parse`] at its `file:line:col`): taken out of the
    /// table before the rule reads it, so a rule's own options type never sees it (every rule,
    /// new ones too, has the key without declaring it).
    #[serde(skip)]
    pub rule_launchers: BTreeMap<String, String>,
    /// The `storage` key of each rule's table, by rule name, as written (string values only;
    /// another type is refused by [`Manifest::parse`]): taken out of the table as `launcher`
    /// is, so every rule has it; where the rule makes no payload it is refused
    /// ([`crate::plan::storage`]).
    #[serde(skip)]
    pub rule_storage: BTreeMap<String, String>,
    /// Every other key, by name: a rule's options table (`spirv`, `cuda`, ...) when the name is
    /// a rule's, else an unknown key ([`Manifest::check_keys`] refuses it).
    #[serde(flatten)]
    pub rule_tables: BTreeMap<String, toml::Value>,
}

/// One documented key of a manifest table: its name as written, its default and its meaning in
/// one line. The package keys ([`PACKAGE_KEYS`], [`ISLAND_KEYS`], [`CXX_KEYS`]) and each rule's
/// options ([`crate::rules::Rule::option_keys`]) are lists of these, the one list that
/// `cargo xtask codegen` writes into the guide's "Manifest reference" ([`crate::reference`])
/// and that tests hold equal to the keys serde accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    /// The key as written in the manifest (`module-name`).
    pub key: &'static str,
    /// Its default, as the reference shows it (markdown).
    pub default: &'static str,
    /// What it means (markdown, one line).
    pub meaning: &'static str,
}

/// The keys of `[package.metadata.mcpp]` that are not rule tables, as written in the manifest.
pub const PACKAGE_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "accel", default: "none (no accelerator)", meaning: "the accelerator set (see \"The accelerator set\")" },
    KeyDoc { key: "sources", default: "`[]`", meaning: "device sources: glob strings, `\"!pattern\"` strings (files left out of every entry, as in `.gitignore`), or `{ glob = \"...\", accel = \"...\", output = \"...\", storage = \"...\", target-env = \"...\", exclude = [\"...\"] }` tables (`accel` constrains the files to an accelerator entry; `output` chooses what their rule makes of them, e.g. `\"ptx\"` for `.cu`; `storage` where their payloads' bytes live, over the rule's and the package's; `target-env` their target environment, over the rule's: GLSL's `--target-env` (`\"vulkan1.0\"`, `\"spirv1.4\"`), Slang's profile (`\"spirv_1_3\"`); `exclude` globs of files the entry leaves out; all optional), relative to the package root" },
    KeyDoc { key: "module-name", default: "`<package>.shaders` (dashes become `_`)", meaning: "the C++ module / namespace of the surface" },
    KeyDoc { key: "modules", default: "`true`", meaning: "C++ surface as a module interface (`.cppm`); `false`: a header usable from C and C++" },
    KeyDoc { key: "storage", default: "`\"header\"`", meaning: "where the payloads' bytes live: `\"header\"` (compiled in), `\"object\"` (an assembly file with `.incbin`, assembled and linked) or `\"sidecar\"` (a file beside the executable, read at run time; the Rust accessors return a `Result`); a rule's table, a `sources` entry and an `embed` entry take a `storage` of their own, the most specific wins; see \"Storage\"" },
    KeyDoc { key: "base-dir", default: "derived", meaning: "the base directory of the surface's names, relative to the package root (`\"shaders\"`); every payload must be under it (see \"The generated surface\")" },
    KeyDoc { key: "tools", default: "`{}`", meaning: "explicit tool paths by tool name (`{ glslc = \"/opt/bin/glslc\" }`); the names are the rules' tools below, another name is refused" },
    KeyDoc { key: "island", default: "none", meaning: "the `extern \"C\"` boundary between a device island and its host fallback: the table `island.*` below" },
    KeyDoc { key: "cxx-sources", default: "`[]`", meaning: "the crate's own C++ host sources (globs): `.cpp`/`.cc`/`.cxx` units and `.cppm`/`.ixx` C++20 module interfaces, compiled with the `cc` crate's compiler, interfaces first, linked into the crate" },
    KeyDoc { key: "cxx", default: "none", meaning: "options of the host C++ sources and the island fallback: the table `cxx.*` below" },
    KeyDoc { key: "host-toolchain", default: "none (the `cc` crate's choice)", meaning: "the declared host C++ compiler: the table `host-toolchain.*` below" },
    KeyDoc { key: "toolchain-packages", default: "`{}`", meaning: "the project's version of a toolchain package by name: `glslang = \"13.1.1\"` (a choice) or `\">=13.1\"` (a requirement); see \"Declared toolchains\" (formerly `payloads`, now refused)" },
    KeyDoc { key: "pack", default: "none", meaning: "what `cargo mcpp pack` puts into a package: the tables `pack.*`, `pack.appimage.*`, `pack.msi.*` below (see \"Packaging\")" },
    KeyDoc { key: "embed", default: "none", meaning: "data files embedded through the same surface as the payloads (fonts, weights, text, lookup tables): the table `embed.*` below, or its shorthand, a list of `files` entries (`embed = [\"assets/*.txt\"]`; see \"Embedding data files\")" },
    KeyDoc { key: "launcher", default: "none", meaning: "the compiler launcher before every compiler it handles: `\"sccache\"`, `\"ccache\"` (on PATH) or a path; `\"none\"`: none. `MCPP_LAUNCHER` overrides it; every rule's table takes a `launcher` key of its own (see \"Compiler launcher\")" },
    KeyDoc { key: "compile-commands", default: "none (only the device cache's)", meaning: "a directory (relative to the package root; `\".\"`: the root; outside the package allowed) that gets a copy of `compile_commands.json`, merged over the packages naming it by `cargo mcpp build`; `--compile-commands DIR` overrides it (see \"compile_commands.json\")" },
    KeyDoc { key: "export-includes", default: "`[]`", meaning: "include directories (relative to the package root, inside it) this package exports to the packages depending on it: cargo passes them to their build scripts as `DEP_<LINKS>_MCPP_INCLUDE`; needs `[package] links` (see \"A dependency's includes\")" },
    KeyDoc { key: "include-from", default: "`[]`", meaning: "the `links` names of dependencies whose `export-includes` every rule of this package searches, after its own `includes` (`[\"shaderlib\"]`); each must be a direct dependency" },
];

/// The keys of `[package.metadata.mcpp.embed]` ([`EmbedOptions`]).
pub const EMBED_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "files", default: "`[]`", meaning: "data files, each one accessor: glob strings, or `{ glob = \"...\", element = \"bytes\" | \"words\", nul = true, namespace = \"a.b\" }` tables (`words`: 32-bit words, the size must be a multiple of 4; `nul`: UTF-8 text handed out NUL-terminated too; `namespace`: the Rust module / C++ namespace they go under; `storage`: where their bytes live); named from the file name (`message.txt` -> `message_txt`), in the namespaces of their directories below the glob's fixed prefix" },
    KeyDoc { key: "tables", default: "`[]`", meaning: "lookup tables `key -> bytes`: `{ name = \"...\", glob = \"...\", key = \"name\" | \"stem\" | \"path\" }` (`key`: the file name, default; its stem; or its path below the glob's fixed prefix); the files are accessors under the namespace `name`, which also has `get(key)` and `entries()`; a `storage` of its own" },
    KeyDoc { key: "storage", default: "the package's `storage`", meaning: "where the embedded files' bytes live (`\"header\"`, `\"object\"`, `\"sidecar\"`); an entry of `files` or `tables` takes a `storage` of its own, which wins" },
];

/// The keys of one `embed.files` table entry ([`EmbedFiles`]).
pub const EMBED_FILE_KEYS: &[&str] = &["glob", "element", "nul", "namespace", "storage"];

/// The keys of one `embed.tables` entry ([`EmbedTable`]).
pub const EMBED_TABLE_KEYS: &[&str] = &["name", "glob", "key", "storage"];

/// `[package.metadata.mcpp.embed]`: data files embedded through the payload surface. The
/// table, or its shorthand, a list of `files` entries (`embed = ["assets/*.txt"]`, [`Self::list`]).
#[derive(Debug, Clone, Default)]
pub struct EmbedOptions {
    /// The files, each one accessor.
    pub files: Vec<EmbedEntry>,
    /// The lookup tables.
    pub tables: Vec<EmbedTable>,
    /// Where the embedded files' bytes live, over the package's `storage` (an entry's own
    /// `storage` wins).
    pub storage: Option<String>,
    /// Written as the list shorthand: the entries' keys are `embed[i]`, not `embed.files[i]`.
    pub list: bool,
}

/// The table form of `[package.metadata.mcpp.embed]` (its keys: [`EMBED_KEYS`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct EmbedTableForm {
    #[serde(default)]
    files: Vec<EmbedEntry>,
    #[serde(default)]
    tables: Vec<EmbedTable>,
    storage: Option<String>,
}

impl<'de> Deserialize<'de> for EmbedOptions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = EmbedOptions;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table `{ files = [...], tables = [...], storage = \"...\" }` or a list of `files` entries (globs)")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> std::result::Result<EmbedOptions, A::Error> {
                let files = Vec::<EmbedEntry>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(EmbedOptions { files, list: true, ..Default::default() })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<EmbedOptions, A::Error> {
                let t = EmbedTableForm::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(EmbedOptions { files: t.files, tables: t.tables, storage: t.storage, list: false })
            }
        }
        d.deserialize_any(V)
    }
}

/// One entry of `embed.files`: `"assets/**/*.txt"` or `{ glob = "...", element = "words", nul = true, namespace = "..." }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedEntry {
    /// A plain glob: bytes, namespaces from the directories.
    Glob(String),
    /// A glob with options.
    Options(EmbedFiles),
}

impl EmbedEntry {
    /// The entry as a table (a plain glob is a table with only `glob`).
    pub fn options(&self) -> EmbedFiles {
        match self {
            EmbedEntry::Glob(g) => EmbedFiles { glob: g.clone(), element: None, nul: None, namespace: None, storage: None },
            EmbedEntry::Options(o) => o.clone(),
        }
    }
}

/// `{ glob = "...", element = "bytes" | "words", nul = true, namespace = "a.b" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table `{ glob = \"...\", element = \"bytes\" | \"words\", nul = true, namespace = \"...\" }`")]
pub struct EmbedFiles {
    /// The files (a glob relative to the package root).
    pub glob: String,
    /// `"bytes"` (default) or `"words"` (32-bit words: the size must be a multiple of 4).
    #[serde(default)]
    pub element: Option<String>,
    /// `true`: the files are UTF-8 text, handed out as text and NUL-terminated.
    #[serde(default)]
    pub nul: Option<bool>,
    /// The namespace the files go under, dotted (`fonts` or `assets.fonts`), each segment an
    /// identifier; default none (the directories below the glob's fixed prefix only).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Where these files' bytes live, over `embed.storage` and the package's `storage`.
    #[serde(default)]
    pub storage: Option<String>,
}

/// `{ name = "...", glob = "...", key = "name" | "stem" | "path" }`: a lookup table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table `{ name = \"...\", glob = \"...\", key = \"name\" | \"stem\" | \"path\" }`")]
pub struct EmbedTable {
    /// The table's name: the namespace of its files and lookup functions (an identifier).
    pub name: String,
    /// The files (a glob relative to the package root).
    pub glob: String,
    /// What a file's key is: `"name"` (default: `a.txt`), `"stem"` (`a`) or `"path"` (below
    /// the glob's fixed prefix, `/`-separated: `sub/a.txt`).
    #[serde(default)]
    pub key: Option<String>,
    /// Where these files' bytes live, over `embed.storage` and the package's `storage`.
    #[serde(default)]
    pub storage: Option<String>,
}

impl<'de> Deserialize<'de> for EmbedEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = EmbedEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a glob string or a table `{ glob = \"...\", element = \"bytes\" | \"words\", nul = true, namespace = \"...\" }`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<EmbedEntry, E> {
                Ok(EmbedEntry::Glob(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<EmbedEntry, A::Error> {
                EmbedFiles::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(EmbedEntry::Options)
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys of `[package.metadata.mcpp.pack]` ([`PackOptions`]).
pub const PACK_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "app-name", default: "the program's name", meaning: "the application's name (`Name=` of the .desktop file, the MSI's ProductName and install folder)" },
    KeyDoc { key: "comment", default: "`[package] description`", meaning: "one line describing it (`Comment=`)" },
    KeyDoc { key: "categories", default: "`[\"Utility\"]`", meaning: "registered freedesktop.org main and additional categories (`Categories=`), at least one main category" },
    KeyDoc { key: "icon", default: "a built-in 1x1 PNG", meaning: "the icon, a `.png` or `.svg` file relative to the package root (other formats are refused)" },
    KeyDoc { key: "terminal", default: "`true`", meaning: "whether the program runs in a terminal (`Terminal=`)" },
    KeyDoc { key: "version", default: "`[package] version`", meaning: "the package's version (an MSI needs `major.minor.patch`, see \"Packaging\")" },
    KeyDoc { key: "files", default: "`[]`", meaning: "extra files: `{ glob = \"assets/**/*\", dest = \"share/app\" }`, globs relative to the package root, placed below `dest` (relative to the program's directory, where it finds them beside itself) with their path below the glob's fixed prefix; files in cargo's target directory, the pack output directory or a `.git` directory are never taken" },
    KeyDoc { key: "appimage", default: "none", meaning: "the AppImage's own options: the table `pack.appimage.*`" },
    KeyDoc { key: "msi", default: "none", meaning: "the MSI's own options: the table `pack.msi.*`" },
];

/// The keys of `[package.metadata.mcpp.pack.appimage]` ([`AppImageOptions`]).
pub const PACK_APPIMAGE_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "runtime-file", default: "the `appimage-runtime` toolchain package", meaning: "a type-2 runtime file to use instead (relative to the package root); `--runtime-file` wins" },
    KeyDoc { key: "patchelf", default: "`PATCHELF`, `MCPP_TOOL_PATCHELF`, then PATH (with a warning)", meaning: "the `patchelf` program that sets the packed program's RUNPATH to `$ORIGIN/../lib` when the package carries shared libraries (`usr/lib/`)" },
];

/// The keys of `[package.metadata.mcpp.pack.msi]` ([`MsiOptions`]).
pub const PACK_MSI_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "manufacturer", default: "the first of `[package] authors` (without `<email>`), else the package name", meaning: "the MSI's Manufacturer" },
    KeyDoc { key: "upgrade-code", default: "derived from the package's identity (see \"Packaging\")", meaning: "the MSI UpgradeCode, a GUID; keep it for the product's whole life" },
    KeyDoc { key: "tool", default: "resolved: `wixl` (`WIXL`, `MCPP_TOOL_WIXL`, PATH), on a Windows host `wix` (`MCPP_TOOL_WIX`, PATH)", meaning: "the MSI tool, relative to the package root or absolute: a program named `wix`/`wix.exe` is WiX v4+ (`wix build` of a v4 source), any other name is `wixl` (a v3 source)" },
];

/// Keys of `[package.metadata.mcpp]` renamed while cargo-mcpp is at 0.1: (old, new). A manifest
/// with an old key is refused by [`Manifest::parse`], naming `file:line:col`, the key and the
/// new name, rather than read as an unknown key (`payloads` named the fetched compiler
/// packages; "payload" now means only the bytes a build embeds).
pub const RENAMED_KEYS: &[(&str, &str)] = &[("payloads", "toolchain-packages")];

/// The keys of `[package.metadata.mcpp.island]` ([`IslandOptions`]).
pub const ISLAND_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "sources", default: "required", meaning: "the files scanned for marked entry points (globs): the device half and its host fallback, scanned in every build" },
    KeyDoc { key: "fallback", default: "`[]`", meaning: "the host fallback (C++ globs, among `sources`), compiled when the build leaves the device half out" },
    KeyDoc { key: "marker", default: "`MCPP_EXPORT_C`", meaning: "the marker before each exported definition" },
    KeyDoc { key: "module-name", default: "`<package>.kernels`", meaning: "the module (and header) name of the boundary" },
    KeyDoc { key: "header-includes", default: "`[]`", meaning: "headers the generated header includes for the signatures' types, e.g. `[\"<stdint.h>\"]` (`<x>`, `\"x\"` or `x`)" },
    KeyDoc { key: "entries", default: "`[]`", meaning: "entry points the scan cannot see (defined through a macro, or generated), as C declarations without the `;`, e.g. `[\"int scale_run(float* y, unsigned n)\"]`; merged with the marked ones" },
    KeyDoc { key: "emit-module", default: "`true`", meaning: "whether the C++ module `<module>.cppm` is written beside the header; `false` writes the header alone, for a hand-written C++ seam that includes it" },
];

/// The keys of `[package.metadata.mcpp.cxx]` ([`CxxOptions`]).
pub const CXX_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "std", default: "`c++20`", meaning: "`-std=`: `c++NN` or `gnu++NN` with NN 11-26 or 2a/2b/2c; C++20 or later when a unit declares or imports a module" },
    KeyDoc { key: "includes", default: "`[]`", meaning: "include directories (`-I`), relative to the package root (inside it) or absolute" },
    KeyDoc { key: "defines", default: "`{}`", meaning: "`NAME = \"value\"` (`-DNAME=value`)" },
    KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments, appended last, passed unexamined" },
    KeyDoc { key: "launcher", default: "the package's `launcher`", meaning: "the compiler launcher of the host C++ lane (before the `cc` crate's compiler): `\"sccache\"`, `\"ccache\"`, a path, or `\"none\"`; over the package's `launcher`, under `MCPP_LAUNCHER`" },
];

/// The fields a serde `Deserialize` struct `T` accepts, as it spells them (renames applied),
/// asked of its derived code with a deserializer that only records them; `None` for a type
/// that is not a plain struct (a `flatten`ed one reads a map). What tests hold the documented
/// key lists ([`KeyDoc`]) equal to, and how [`crate::rules::options::parse_all`] tells a rule's own
/// keys from unknown ones.
pub fn serde_fields<T: serde::de::DeserializeOwned>() -> Option<&'static [&'static str]> {
    struct Probe<'a>(&'a mut Option<&'static [&'static str]>);
    impl<'de> serde::Deserializer<'de> for Probe<'_> {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(self, _: &'static str, fields: &'static [&'static str], _: V) -> std::result::Result<V::Value, Self::Error> {
            *self.0 = Some(fields);
            Err(serde::de::Error::custom("fields recorded"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields = None;
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// One entry of `sources`: `"shaders/**/*.comp"` or `{ glob = "...", accel = "vulkan1.2", output = "..." }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceEntry {
    /// A plain glob: its files are device sources of every build that names their rule's backend.
    Glob(String),
    /// A glob constrained to an accelerator entry compiled when the build
    /// covers it, left out when the build does not name its backend, refused otherwise.
    Constrained(ConstrainedGlob),
}

impl SourceEntry {
    /// The glob pattern (of an exclusion `"!pattern"`, the pattern after the `!`).
    pub fn glob(&self) -> &str {
        match self {
            SourceEntry::Glob(g) => g.strip_prefix('!').unwrap_or(g),
            SourceEntry::Constrained(c) => &c.glob,
        }
    }
    /// Whether the entry is an exclusion, `"!pattern"` (gitignore's form): the files it matches
    /// are left out of every other entry.
    pub fn is_exclusion(&self) -> bool {
        matches!(self, SourceEntry::Glob(g) if g.starts_with('!'))
    }
}

/// `{ glob = "...", accel = "...", output = "..." }`: `accel` constrains the files to an
/// accelerator entry, `output` chooses what their rule makes of them (CUDA: `"ptx"`, ...);
/// either may be left out (a table with neither is a plain glob).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table `{ glob = \"...\", accel = \"...\", output = \"...\", target-env = \"...\", exclude = [...] }`")]
pub struct ConstrainedGlob {
    /// The pattern (`*`, `**`, `?`, `[...]`), relative to the package root.
    pub glob: String,
    /// The accelerator entry the files need, e.g. `"vulkan1.2"` or `"cuda12.9+{sm_90}"`; none:
    /// the files are compiled whenever the build names their rule's backend.
    #[serde(default)]
    pub accel: Option<String>,
    /// What the files' rule makes of them, overriding the rule's own `output` key (offered by
    /// the CUDA rule: `"object"`, `"ptx"`, `"cubin"`, `"fatbin"`; [`crate::rules::Rule::outputs`]).
    #[serde(default)]
    pub output: Option<String>,
    /// Where the bytes of the files' payloads live (`"header"`, `"object"`, `"sidecar"`),
    /// over the rule table's and the package's `storage` ([`crate::plan::storage`]); refused
    /// when the files make no payload.
    #[serde(default)]
    pub storage: Option<String>,
    /// The target environment of the files, over the rule's (`target-env`): the SPIR-V rule's
    /// `--target-env` (`"vulkan1.0"`, `"spirv1.4"`), the Slang rule's `-profile`
    /// (`"spirv_1_3"`); refused for a rule that has none ([`crate::rules::Rule::takes_target_env`]).
    #[serde(default, rename = "target-env")]
    pub target_env: Option<String>,
    /// Globs (relative to the package root) of files the entry leaves out, as Cargo's
    /// `exclude`: a `.glsl` include under a `**` glob, a directory of drafts.
    #[serde(default)]
    pub exclude: Vec<String>,
}

impl<'de> Deserialize<'de> for SourceEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = SourceEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a glob string or a table `{ glob = \"...\", accel = \"...\", output = \"...\" }`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<SourceEntry, E> {
                Ok(SourceEntry::Glob(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<SourceEntry, A::Error> {
                ConstrainedGlob::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(SourceEntry::Constrained)
            }
        }
        d.deserialize_any(V)
    }
}

/// `[package.metadata.mcpp.island]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct IslandOptions {
    /// The files scanned for marked entry points: the device half (e.g. `kernels/saxpy.cu`)
    /// and its host fallback, as globs relative to the package root. Both halves are scanned
    /// in every build, so the generated boundary is the same with and without an accelerator.
    pub sources: Vec<String>,
    /// The host fallback: C++ files (globs) compiled with the `cc` crate's compiler in builds
    /// whose accelerator set leaves the island's device half out (e.g. `--no-accel`).
    #[serde(default)]
    pub fallback: Vec<String>,
    /// The marker preceding each exported definition; default `MCPP_EXPORT_C`.
    pub marker: Option<String>,
    /// The module (and header) name; default `<package identifier>.kernels`.
    pub module_name: Option<String>,
    /// Headers the generated header includes before the declarations, for the types the
    /// signatures use, e.g. `["<stddef.h>", "<stdint.h>"]`.
    #[serde(default)]
    pub header_includes: Vec<String>,
    /// Entry points the scan cannot see (defined through a macro, or generated code), as C
    /// declarations without the trailing `;`, e.g. `int scale_run(float* y, unsigned n)`;
    /// merged with the marked ones.
    #[serde(default)]
    pub entries: Vec<String>,
    /// Whether the C++ module interface `<module>.cppm` is written beside the header; default
    /// `true`. `false` writes the header alone, for a hand-written C++ seam that includes it.
    pub emit_module: Option<bool>,
}

/// `[package.metadata.mcpp.host-toolchain]`: the host C++ compiler, declared rather than
/// discovered. Every key is optional; they combine: a toolchain root (`layout`), a cross prefix
/// (`prefix`), the compiler's name or path (`cxx`), the environment a setup script makes
/// (`env-script`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostToolchainDecl {
    /// A toolchain root whose `bin/` holds the compiler (`/opt/llvm-19`), relative to the
    /// package root or absolute.
    pub layout: Option<PathBuf>,
    /// The cross prefix of the programs (`aarch64-linux-gnu-`: `aarch64-linux-gnu-g++`).
    pub prefix: Option<String>,
    /// The C++ compiler: a name (looked up in `layout`'s `bin/`, else on the build's PATH) or a
    /// path (relative to the package root or absolute).
    pub cxx: Option<String>,
    /// A setup script whose environment the host compiler runs in ([`crate::tool::env_script`]).
    pub env_script: Option<PathBuf>,
    /// The arguments `env-script` is sourced with.
    pub env_script_args: Option<Vec<String>>,
    /// A toolchain package that provides a host C++ compiler (`zig`): `cargo mcpp fetch`
    /// installs it, the build uses the installed one ([`Manifest::parse`] refuses an unknown
    /// package, one without a compiler, and this key beside `layout`, `prefix` or `cxx`).
    pub managed: Option<String>,
}

/// The keys of `[package.metadata.mcpp.host-toolchain]` ([`HostToolchainDecl`]).
pub const HOST_TOOLCHAIN_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "layout", default: "none", meaning: "a toolchain root whose `bin/` holds the compiler (`\"/opt/llvm-19\"`), relative to the package root or absolute; without `cxx`, the first of `clang++`, `g++`, `c++` there (each with `prefix`)" },
    KeyDoc { key: "prefix", default: "none", meaning: "the cross prefix of the compiler's name (`\"aarch64-linux-gnu-\"`); without `layout`, the prefixed compiler is looked up on the build's PATH" },
    KeyDoc { key: "cxx", default: "`clang++`, `g++`, `c++`", meaning: "the C++ compiler: a name (in `layout`'s `bin/`, else on the build's PATH) or a path (relative to the package root or absolute); over `CXX`" },
    KeyDoc {
        key: "env-script",
        default: "none",
        meaning: "a shell script that sets up the host toolchain, relative to the package root or absolute; sourced as a rule's `env-script` is; the variables it set go on the host C++ compiler (the `cc` crate's probe, the host C++ lane, nvcc's `-ccbin`), and its `PATH` is where a compiler name is looked up",
    },
    ENV_SCRIPT_ARGS_DOC,
    KeyDoc {
        key: "managed",
        default: "none",
        meaning: "a toolchain package that provides the host C++ compiler (`\"zig\"`: `zig c++`); `cargo mcpp fetch` installs it, a build uses the installed one; its version follows `toolchain-packages`; not with `layout`, `prefix` or `cxx`; see \"Declared toolchains\"",
    },
];

/// The documentation of an `env-script-args` key (a rule's, the host toolchain's).
pub const ENV_SCRIPT_ARGS_DOC: KeyDoc = KeyDoc { key: "env-script-args", default: "`[]`", meaning: "the arguments `env-script` is sourced with (e.g. `[\"--force\"]`), each one word" };

/// `[package.metadata.mcpp.cxx]`: options of the host C++ sources (and the island fallback).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CxxOptions {
    /// The C++ standard (`-std=`); default `c++20` (modules need it).
    pub std: Option<String>,
    /// Include directories, relative to the package root (or absolute).
    #[serde(default)]
    pub includes: Vec<PathBuf>,
    /// Preprocessor definitions `NAME = "value"`.
    #[serde(default)]
    pub defines: BTreeMap<String, String>,
    /// Extra arguments appended last, passed unexamined.
    #[serde(default)]
    pub flags: Vec<String>,
    /// The host C++ lane's own compiler launcher (as the package's `launcher`, for this lane
    /// only); moved into [`McppMetadata::rule_launchers`] under `cxx` when the manifest is read,
    /// so it is `None` after [`Manifest::parse`].
    pub launcher: Option<String>,
}

/// `[package.metadata.mcpp.pack]`: what `cargo mcpp pack` puts into a package (the
/// guide's "Packaging"; the options follow dist-appimage's and dist-wix's).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PackOptions {
    /// The application's name; default the program's (binary target's) name.
    pub app_name: Option<String>,
    /// One line describing it; default `[package] description`.
    pub comment: Option<String>,
    /// freedesktop.org categories; default `["Utility"]`.
    pub categories: Option<Vec<String>>,
    /// The icon: a PNG or SVG file relative to the package root.
    pub icon: Option<PathBuf>,
    /// Whether the program runs in a terminal; default `true`.
    pub terminal: Option<bool>,
    /// The package's version; default `[package] version`.
    pub version: Option<String>,
    /// Extra files, by glob, with their destination.
    #[serde(default)]
    pub files: Vec<PackFiles>,
    /// `[package.metadata.mcpp.pack.appimage]`.
    pub appimage: Option<AppImageOptions>,
    /// `[package.metadata.mcpp.pack.msi]`.
    pub msi: Option<MsiOptions>,
}

/// One entry of `pack.files`: `{ glob = "assets/**/*", dest = "share/app" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table `{ glob = \"...\", dest = \"...\" }`")]
pub struct PackFiles {
    /// The files (a glob relative to the package root; only files inside the package).
    pub glob: String,
    /// The directory they go to, relative and `/`-separated (`share/app`); `""` for the top.
    pub dest: String,
}

/// `[package.metadata.mcpp.pack.appimage]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AppImageOptions {
    /// A type-2 runtime file used instead of the `appimage-runtime` toolchain package.
    pub runtime_file: Option<PathBuf>,
    /// The `patchelf` program (sets the packed program's RUNPATH when the package carries
    /// shared libraries).
    pub patchelf: Option<PathBuf>,
}

/// `[package.metadata.mcpp.pack.msi]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MsiOptions {
    /// The Manufacturer; default the first author (name only), else the package name.
    pub manufacturer: Option<String>,
    /// The UpgradeCode (a GUID); default derived from the package's identity.
    pub upgrade_code: Option<String>,
    /// The MSI tool: `wixl` (a WiX v3 source) or WiX v4+'s `wix` (`wix build`), chosen by
    /// its file name.
    pub tool: Option<PathBuf>,
}

/// The dotted name of cargo-mcpp's table.
pub const MCPP_TABLE: &str = "package.metadata.mcpp";

/// What a `Cargo.toml` holds that cargo-mcpp reads.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest file.
    pub path: PathBuf,
    /// `[package] name`.
    pub package_name: String,
    /// `[package] links`: the name cargo passes this package's build script metadata under
    /// (`DEP_<LINKS>_<KEY>` in its dependents' build scripts).
    pub links: Option<String>,
    /// `[package.metadata.mcpp]`, default when absent.
    pub mcpp: McppMetadata,
    /// Whether `[package.metadata.mcpp]` was present with a key of the device phase (a table
    /// holding only `pack` configures `cargo mcpp pack`, not a build: such a package needs no
    /// build script).
    pub has_mcpp_table: bool,
    /// Where each key of the manifest is: the one span map every refusal and decision takes its
    /// `file:line:col` from ([`SpanMap`]).
    pub spans: SpanMap,
    /// The keys build.rs set ([`BuilderSetting`]), by dotted path below `[package.metadata.mcpp]`
    /// (`spirv.compiler`, `spirv.includes[2]`, `storage`): where a refusal of one points, in
    /// place of a `Cargo.toml` line (`set by build.rs:7: Build::option("spirv", "compiler", ..)`).
    pub origins: BTreeMap<String, String>,
}

/// A value of a manifest key set in build.rs (`mcpp_build::Value`), as TOML would write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingValue {
    /// A string.
    String(String),
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A list of strings.
    List(Vec<String>),
}

impl SettingValue {
    fn toml(&self) -> toml::Value {
        match self {
            SettingValue::String(s) => toml::Value::String(s.clone()),
            SettingValue::Bool(b) => toml::Value::Boolean(*b),
            SettingValue::Int(i) => toml::Value::Integer(*i),
            SettingValue::List(l) => toml::Value::Array(l.iter().cloned().map(toml::Value::String).collect()),
        }
    }
}

/// What one call of `mcpp_build::Build` sets in `[package.metadata.mcpp]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingKind {
    /// `Build::include(rule, dir)`: appended to `<rule>.includes`.
    Include {
        /// The rule's table.
        rule: String,
        /// The directory, as written.
        dir: String,
    },
    /// `Build::define(rule, name, value)`: `<rule>.defines.<name>`, over the manifest's.
    Define {
        /// The rule's table.
        rule: String,
        /// The name.
        name: String,
        /// Its value.
        value: String,
    },
    /// `Build::flag(rule, flag)`: appended to `<rule>.flags`.
    Flag {
        /// The rule's table.
        rule: String,
        /// The argument.
        flag: String,
    },
    /// `Build::option(rule, key, value)`: `<rule>.<key>`, over the manifest's.
    Option {
        /// The rule's table.
        rule: String,
        /// The key.
        key: String,
        /// Its value.
        value: SettingValue,
    },
    /// `Build::storage(value)`: the package's `storage`.
    Storage(String),
    /// `Build::module_name(value)`: the package's `module-name`.
    ModuleName(String),
}

/// A manifest value set in build.rs through `mcpp_build::Build` (the build script's request),
/// merged into `[package.metadata.mcpp]` before anything reads it ([`Manifest::parse_with`]):
/// lists (`includes`, `flags`) after the manifest's entries, other keys over the manifest's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuilderSetting {
    /// What it sets.
    pub kind: SettingKind,
    /// The build.rs line that set it (`build.rs:12`); empty when unknown.
    pub at: String,
}

impl BuilderSetting {
    /// The call as a refusal names it: `Build::option("spirv", "compilr", ..)`.
    fn call(&self) -> String {
        let q = |s: &str| format!("{:?}", crate::text::echo(s));
        match &self.kind {
            SettingKind::Include { rule, dir } => format!("Build::include({}, {})", q(rule), q(dir)),
            SettingKind::Define { rule, name, .. } => format!("Build::define({}, {}, ..)", q(rule), q(name)),
            SettingKind::Flag { rule, flag } => format!("Build::flag({}, {})", q(rule), q(flag)),
            SettingKind::Option { rule, key, .. } => format!("Build::option({}, {}, ..)", q(rule), q(key)),
            SettingKind::Storage(v) => format!("Build::storage({})", q(v)),
            SettingKind::ModuleName(v) => format!("Build::module_name({})", q(v)),
        }
    }
    /// Where a refusal of this value points: `set by build.rs:12: Build::option(...)`.
    pub fn origin(&self) -> String {
        let at = if self.at.is_empty() { "build.rs" } else { &self.at };
        format!("set by {at}: {}", self.call())
    }
}

/// Merge `settings` into `mcpp` (the raw `[package.metadata.mcpp]` table), in order, recording
/// the origin of every key they set. A rule's key holding a value of the wrong type is left as
/// the manifest wrote it (the typed read refuses it at its own line).
///
/// # Errors
/// [`ErrorKind::Manifest`], naming the build.rs call: a package key used as a rule's table,
/// `Build::option` on a list key that has its own method.
fn merge_settings(mcpp: &mut toml::Table, settings: &[BuilderSetting]) -> Result<BTreeMap<String, String>> {
    let mut origins = BTreeMap::new();
    for setting in settings {
        let origin = setting.origin();
        let refuse = |message: String, help: &str| Error::new(ErrorKind::Manifest, message).file(&origin).help(help.to_string());
        let rule = match &setting.kind {
            SettingKind::Storage(v) => {
                mcpp.insert("storage".into(), toml::Value::String(v.clone()));
                origins.insert("storage".into(), origin);
                continue;
            }
            SettingKind::ModuleName(v) => {
                mcpp.insert("module-name".into(), toml::Value::String(v.clone()));
                origins.insert("module-name".into(), origin);
                continue;
            }
            SettingKind::Include { rule, .. } | SettingKind::Define { rule, .. } | SettingKind::Flag { rule, .. } | SettingKind::Option { rule, .. } => rule,
        };
        if rule != "cxx" && PACKAGE_KEYS.iter().any(|k| k.key == rule) {
            return Err(refuse(
                format!("invalid build script setting: `{}` is a key of [{MCPP_TABLE}], not a rule's table", crate::text::echo(rule)),
                "the first argument names a rule (`spirv`, `slang`, `wgsl`, `cuda`, `hip`, `sycl`, `ascend`) or `cxx`; the package's `storage` and `module-name` have Build::storage and Build::module_name",
            ));
        }
        if let SettingKind::Option { key, .. } = &setting.kind {
            let own = match key.as_str() {
                "includes" => Some("Build::include"),
                "defines" => Some("Build::define"),
                "flags" => Some("Build::flag"),
                _ => None,
            };
            if let Some(own) = own {
                return Err(refuse(
                    format!("invalid build script setting: `{key}` is a list with a method of its own"),
                    &format!("call {own} once per entry: it adds to the manifest's `{key}`"),
                ));
            }
        }
        if !mcpp.contains_key(rule.as_str()) {
            mcpp.insert(rule.clone(), toml::Value::Table(toml::Table::new()));
            origins.insert(rule.clone(), origin.clone());
        }
        let Some(table) = mcpp.get_mut(rule.as_str()).and_then(toml::Value::as_table_mut) else { continue };
        let mut append = |table: &mut toml::Table, key: &str, value: &str| {
            let list = table.entry(key.to_string()).or_insert_with(|| toml::Value::Array(Vec::new()));
            if let Some(list) = list.as_array_mut() {
                origins.insert(format!("{rule}.{key}[{}]", list.len()), origin.clone());
                list.push(toml::Value::String(value.to_string()));
            }
        };
        match &setting.kind {
            SettingKind::Include { dir, .. } => append(table, "includes", dir),
            SettingKind::Flag { flag, .. } => append(table, "flags", flag),
            SettingKind::Define { name, value, .. } => {
                let defines = table.entry("defines").or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if let Some(defines) = defines.as_table_mut() {
                    defines.insert(name.clone(), toml::Value::String(value.clone()));
                    origins.insert(format!("{rule}.defines.{name}"), origin.clone());
                }
            }
            SettingKind::Option { key, value, .. } => {
                table.insert(key.clone(), value.toml());
                if let SettingValue::List(l) = value {
                    for i in 0..l.len() {
                        origins.insert(format!("{rule}.{key}[{i}]"), origin.clone());
                    }
                }
                origins.insert(format!("{rule}.{key}"), origin.clone());
            }
            SettingKind::Storage(_) | SettingKind::ModuleName(_) => {}
        }
    }
    Ok(origins)
}

/// The position (1-based line and column) of every key of a TOML document, by dotted path
/// (`package.metadata.mcpp.spirv.compiler`, `package.metadata.mcpp.sources[1]` for an array
/// element), read once with toml_edit, which keeps the spans of the parsed text.
#[derive(Debug, Clone, Default)]
pub struct SpanMap {
    positions: BTreeMap<String, (usize, usize)>,
}

impl SpanMap {
    /// The positions of `text` (empty when it is not TOML: the typed parse reports that).
    pub fn parse(text: &str) -> SpanMap {
        let mut positions = BTreeMap::new();
        if let Ok(doc) = toml_edit::ImDocument::parse(text) {
            walk_table(doc.as_table(), "", text, &mut positions);
        }
        SpanMap { positions }
    }
    /// The line and column of the dotted `key`, if it is in the document.
    pub fn position(&self, key: &str) -> Option<(usize, usize)> {
        self.positions.get(key).copied()
    }
}

fn walk_table(table: &dyn toml_edit::TableLike, prefix: &str, text: &str, out: &mut BTreeMap<String, (usize, usize)>) {
    for (k, item) in table.iter() {
        let path = if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
        let span = table.get_key_value(k).and_then(|(key, _)| key.span()).or_else(|| item.span());
        if let Some(span) = span {
            out.insert(path.clone(), crate::text::line_col(text, span.start));
        }
        walk_item(item, &path, text, out);
    }
}

fn walk_item(item: &toml_edit::Item, path: &str, text: &str, out: &mut BTreeMap<String, (usize, usize)>) {
    match item {
        toml_edit::Item::Table(t) => walk_table(t, path, text, out),
        toml_edit::Item::ArrayOfTables(a) => {
            for (i, t) in a.iter().enumerate() {
                walk_table(t, &format!("{path}[{i}]"), text, out);
            }
        }
        toml_edit::Item::Value(v) => walk_value(v, path, text, out),
        toml_edit::Item::None => {}
    }
}

fn walk_value(value: &toml_edit::Value, path: &str, text: &str, out: &mut BTreeMap<String, (usize, usize)>) {
    match value {
        toml_edit::Value::InlineTable(t) => walk_table(t, path, text, out),
        toml_edit::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                let p = format!("{path}[{i}]");
                if let Some(span) = v.span() {
                    out.insert(p.clone(), crate::text::line_col(text, span.start));
                }
                walk_value(v, &p, text, out);
            }
        }
        _ => {}
    }
}

#[derive(Deserialize)]
struct CargoToml {
    package: Option<PackageTable>,
}
#[derive(Deserialize)]
struct PackageTable {
    name: Option<String>,
    links: Option<String>,
    metadata: Option<MetadataTable>,
}
#[derive(Deserialize)]
struct MetadataTable {
    mcpp: Option<McppMetadata>,
}

impl Manifest {
    /// Read and validate the `Cargo.toml` at `path`.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when the file cannot be read; [`ErrorKind::Manifest`] when it is not
    /// TOML, has no `[package]`, or `[package.metadata.mcpp]` has an unknown key or a wrong type
    /// (the error names the file, line:column, the dotted key and the keys valid there).
    pub fn read(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("cannot read the manifest", path, e))?;
        Manifest::parse(path, &text)
    }

    /// Read the `Cargo.toml` at `path` with the values build.rs set merged in
    /// ([`Manifest::parse_with`]).
    ///
    /// # Errors
    /// As [`Manifest::read`], and a setting refused by [`Manifest::parse_with`].
    pub fn read_with(path: &Path, settings: &[BuilderSetting]) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("cannot read the manifest", path, e))?;
        Manifest::parse_with(path, &text, settings)
    }

    /// Parse manifest `text` as if read from `path`.
    ///
    /// # Errors
    /// As [`Manifest::read`].
    pub fn parse(path: &Path, text: &str) -> Result<Manifest> {
        Manifest::parse_with(path, text, &[])
    }

    /// Parse manifest `text` as if read from `path`, with `settings` (the values build.rs set
    /// through `mcpp_build::Build`) merged into `[package.metadata.mcpp]` first: every check
    /// then reads them as manifest keys, and a refusal of one names its build.rs call
    /// ([`Manifest::origins`]) where a manifest key's names its line.
    ///
    /// # Errors
    /// As [`Manifest::read`]; a package key used as a rule's table; `Build::option` on
    /// `includes`, `defines` or `flags`.
    pub fn parse_with(path: &Path, text: &str, settings: &[BuilderSetting]) -> Result<Manifest> {
        let spans = SpanMap::parse(text);
        let refusal = |key: String, message: &str, location: String| {
            // A field or value serde quotes can be any length: quoted parts are cut.
            let message = crate::text::echo_serde(message);
            let table = key.rsplit_once('.').map(|(t, _)| t.to_string()).unwrap_or_default();
            let mut err = Error::new(ErrorKind::Manifest, format!("invalid manifest: {message}")).file(location).key(key.clone());
            let valid = message.split_once("expected one of ").or_else(|| message.split_once(", expected ")).map(|(_, v)| v.to_string());
            if let (true, Some(valid)) = (message.starts_with("unknown field"), valid) {
                err = err.help(format!("the keys valid in [{table}] are {valid}; see the cargo-mcpp guide, \"Manifest reference\""));
            } else if message.starts_with("unknown variant") {
                err = err.help(format!("`{key}` takes one of the values listed above"));
            }
            err
        };
        let (parsed, origins): (CargoToml, _) = if settings.is_empty() {
            let de = toml::Deserializer::new(text);
            let parsed = serde_path_to_error::deserialize(de).map_err(|e| {
                let key = e.path().to_string();
                let inner = e.into_inner();
                let location = inner.span().map(|s| crate::text::line_col(text, s.start)).map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default();
                refusal(key, inner.message(), format!("{}{location}", path.display()))
            })?;
            (parsed, BTreeMap::new())
        } else {
            let mut doc: toml::Table = toml::from_str(text).map_err(|e| {
                let location = e.span().map(|s| crate::text::line_col(text, s.start)).map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default();
                refusal(String::new(), e.message(), format!("{}{location}", path.display()))
            })?;
            let origins = match doc.get_mut("package").and_then(toml::Value::as_table_mut) {
                Some(package) => {
                    let metadata = package.entry("metadata").or_insert_with(|| toml::Value::Table(toml::Table::new()));
                    match metadata.as_table_mut().map(|m| m.entry("mcpp").or_insert_with(|| toml::Value::Table(toml::Table::new()))).and_then(toml::Value::as_table_mut) {
                        Some(mcpp) => merge_settings(mcpp, settings)?,
                        // Not a table: the typed read below refuses it.
                        None => BTreeMap::new(),
                    }
                }
                // No [package]: refused below.
                None => BTreeMap::new(),
            };
            let parsed = serde_path_to_error::deserialize(toml::Value::Table(doc)).map_err(|e| {
                let key = e.path().to_string();
                let in_mcpp = key.strip_prefix(&format!("{MCPP_TABLE}.")).unwrap_or(&key);
                // An unknown key is the last segment of the path, set by build.rs or written.
                let location = origins.get(in_mcpp).cloned().or_else(|| spans.position(&key).map(|(l, c)| format!("{}:{l}:{c}", path.display()))).unwrap_or_else(|| path.display().to_string());
                refusal(key.clone(), &e.into_inner().to_string(), location)
            })?;
            (parsed, origins)
        };
        let package = parsed.package.ok_or_else(|| {
            Error::new(ErrorKind::Manifest, "the manifest has no [package] table")
                .file(path)
                .help("cargo-mcpp works on a package; point --manifest-path at a package's Cargo.toml")
        })?;
        let name = package.name.ok_or_else(|| Error::new(ErrorKind::Manifest, "[package] has no `name`").file(path).key("package.name"))?;
        let mcpp = package.metadata.and_then(|m| m.mcpp);
        let has_mcpp_table = mcpp.as_ref().is_some_and(|m| {
            let only_pack = m.accel.is_none() && m.host_toolchain.is_none() && m.sources.is_empty() && m.module_name.is_none() && m.modules.is_none() && m.base_dir.is_none() && m.tools.is_empty() && m.island.is_none() && m.cxx_sources.is_empty() && m.cxx.is_none() && m.toolchain_packages.is_empty() && m.rule_tables.is_empty() && m.launcher.is_none() && m.compile_commands.is_none() && m.storage.is_none() && m.embed.is_none() && m.export_includes.is_empty() && m.include_from.is_empty();
            !(only_pack && m.pack.is_some())
        });
        let mut manifest = Manifest { path: path.to_path_buf(), package_name: name, links: package.links, has_mcpp_table, mcpp: mcpp.unwrap_or_default(), spans, origins };
        manifest.refuse_renamed_keys()?;
        manifest.take_rule_launchers()?;
        manifest.take_rule_storage()?;
        manifest.check_managed_host()?;
        Ok(manifest)
    }

    /// `[package.metadata.mcpp.host-toolchain] managed`: a toolchain package of the catalog that
    /// provides a host C++ compiler, and no other key naming the compiler beside it.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] at the key's `file:line:col`: an unknown package or one without a
    /// host C++ compiler (listing those with one), `managed` with `layout`, `prefix` or `cxx`.
    fn check_managed_host(&self) -> Result<()> {
        let Some(decl) = &self.mcpp.host_toolchain else { return Ok(()) };
        let Some(name) = &decl.managed else { return Ok(()) };
        const TABLE: &str = "host-toolchain";
        let refuse = |key: &str, headline: String| Error::new(ErrorKind::Manifest, headline).file(self.at_col(&format!("{TABLE}.{key}"))).key(format!("{MCPP_TABLE}.{TABLE}.{key}"));
        for (key, set) in [("layout", decl.layout.is_some()), ("prefix", decl.prefix.is_some()), ("cxx", decl.cxx.is_some())] {
            if set {
                return Err(refuse(key, format!("the host toolchain sets both `managed` and `{key}`"))
                    .help(format!("`managed` names a toolchain package that cargo-mcpp installs; `{key}` names a compiler of your own: keep one")));
            }
        }
        let catalog = crate::toolchain_package::Catalog::builtin()?;
        let providers = catalog.host_cxx_names().join(", ");
        match catalog.packages.get(name) {
            None => Err(refuse("managed", format!("`{}` is not a toolchain package cargo-mcpp knows", crate::text::echo(name)))
                .help(format!("the toolchain packages that provide a host C++ compiler are: {providers}"))),
            Some(d) if d.host_cxx.is_empty() => Err(refuse("managed", format!("the toolchain package `{name}` provides no host C++ compiler"))
                .help(format!("name one that does: {providers}; or name your own compiler with `cxx` or `layout`"))),
            Some(_) => Ok(()),
        }
    }

    /// Take the `storage` key out of every rule table into [`McppMetadata::rule_storage`] (the
    /// per-rule storage form, [`crate::plan::storage`]); a value that is not a string is refused.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming `file:line:col` and `<table>.<rule>.storage`.
    fn take_rule_storage(&mut self) -> Result<()> {
        let mut taken = BTreeMap::new();
        let mut tables = std::mem::take(&mut self.mcpp.rule_tables);
        for (rule, value) in &mut tables {
            let Some(table) = value.as_table_mut() else { continue };
            match table.remove("storage") {
                None => {}
                Some(toml::Value::String(s)) => {
                    taken.insert(rule.clone(), s);
                }
                Some(other) => {
                    return Err(Error::new(ErrorKind::Manifest, format!("invalid manifest: `storage` is a string, not a {}", other.type_str()))
                        .file(self.at_col(&format!("{rule}.storage")))
                        .key(format!("{MCPP_TABLE}.{rule}.storage"))
                        .help("write storage = \"header\", \"object\" or \"sidecar\""));
                }
            }
        }
        self.mcpp.rule_tables = tables;
        self.mcpp.rule_storage = taken;
        Ok(())
    }

    /// Take the `launcher` key out of every rule table into [`McppMetadata::rule_launchers`]
    /// (the key every rule has, [`crate::rules::launcher`]); a value that is not a string is refused.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming `file:line:col` and `<table>.<rule>.launcher`.
    fn take_rule_launchers(&mut self) -> Result<()> {
        let mut taken = BTreeMap::new();
        let mut tables = std::mem::take(&mut self.mcpp.rule_tables);
        for (rule, value) in &mut tables {
            let Some(table) = value.as_table_mut() else { continue };
            match table.remove("launcher") {
                None => {}
                Some(toml::Value::String(s)) => {
                    taken.insert(rule.clone(), s);
                }
                Some(other) => {
                    return Err(Error::new(ErrorKind::Manifest, format!("invalid manifest: `launcher` is a string, not a {}", other.type_str()))
                        .file(self.at_col(&format!("{rule}.launcher")))
                        .key(format!("{MCPP_TABLE}.{rule}.launcher"))
                        .help("write `launcher = \"sccache\"`, `\"ccache\"`, a path, or `\"none\"`"));
                }
            }
        }
        self.mcpp.rule_tables = tables;
        // The host C++ lane's table is typed (`CxxOptions`); its launcher joins the rules' under
        // the lane's name, `cxx` ([`crate::rules::launcher::Launchers::for_rule`]).
        if let Some(l) = self.mcpp.cxx.as_mut().and_then(|c| c.launcher.take()) {
            taken.insert("cxx".to_string(), l);
        }
        self.mcpp.rule_launchers = taken;
        Ok(())
    }

    /// Refuse a key of [`RENAMED_KEYS`] (it lands among the rule tables, being no typed key):
    /// its `file:line:col`, the key, and the new name.
    fn refuse_renamed_keys(&self) -> Result<()> {
        for (old, new) in RENAMED_KEYS {
            if self.mcpp.rule_tables.contains_key(*old) {
                return Err(Error::new(ErrorKind::Manifest, format!("invalid manifest: `{old}` is a key of an earlier cargo-mcpp 0.1, renamed to `{new}`"))
                    .file(self.at_col(old))
                    .key(format!("{MCPP_TABLE}.{old}"))
                    .detail("\"payload\" now means only the bytes a build embeds; the compiler packages a rule drives are toolchain packages")
                    .help(format!("renamed to `{new}`: write [{MCPP_TABLE}.{new}] with the same entries (cargo-mcpp guide, \"Declared toolchains\")")));
            }
        }
        Ok(())
    }

    /// `path:line` of a key of `[package.metadata.mcpp]` (`tools.glslc`, `toolchain-packages.glslang`,
    /// `base-dir`), or the path alone.
    pub fn at(&self, key: &str) -> String {
        if let Some(origin) = self.origins.get(key) {
            return origin.clone();
        }
        match self.line(key) {
            Some(l) => format!("{}:{l}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }

    /// The line of a key of `[package.metadata.mcpp]` (`tools.glslc`), from the span map.
    pub fn line(&self, key: &str) -> Option<usize> {
        self.spans.position(&format!("{MCPP_TABLE}.{key}")).map(|(l, _)| l)
    }

    /// `path:line:col` of a key of `[package.metadata.mcpp]`, or the path alone.
    pub fn at_col(&self, key: &str) -> String {
        if let Some(origin) = self.origins.get(key) {
            return origin.clone();
        }
        match self.spans.position(&format!("{MCPP_TABLE}.{key}")) {
            Some((l, c)) => format!("{}:{l}:{c}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }

    /// Refuse every key of `[package.metadata.mcpp]` that is neither a package key
    /// ([`PACKAGE_KEYS`]) nor the table of one of `rules` (the registry's names), and a rule's
    /// entry that is not a table: one error per key, each naming `file:line:col`, the key, the
    /// valid keys and the rules.
    pub fn check_keys(&self, rules: &[&str]) -> Vec<Error> {
        let mut out = Vec::new();
        for (name, value) in &self.mcpp.rule_tables {
            let key = format!("{MCPP_TABLE}.{name}");
            if !rules.contains(&name.as_str()) {
                out.push(
                    Error::new(ErrorKind::Manifest, format!("invalid manifest: unknown field `{}`", crate::text::echo(name)))
                        .file(self.at_col(name))
                        .key(key)
                        .help(format!(
                            "the keys valid in [{MCPP_TABLE}] are {}, and the tables of the rules: {} (and of a rule that build.rs registers with `mcpp_build::Build::rule`); see the cargo-mcpp guide, \"Manifest reference\"",
                            PACKAGE_KEYS.iter().map(|k| format!("`{}`", k.key)).collect::<Vec<_>>().join(", "),
                            rules.iter().map(|r| format!("[{MCPP_TABLE}.{r}]")).collect::<Vec<_>>().join(", ")
                        )),
                );
            } else if !value.is_table() {
                out.push(
                    Error::new(ErrorKind::Manifest, format!("invalid manifest: `{name}` is the table of the {name} rule, not a {}", value.type_str()))
                        .file(self.at_col(name))
                        .key(key)
                        .help(format!("write its options as a table: [{MCPP_TABLE}.{name}] followed by `key = value` lines")),
                );
            }
        }
        out
    }

    /// The options of the rule `rule`: its table `[package.metadata.mcpp.<rule>]` read into the
    /// rule's own type `T` (which has its own `deny_unknown_fields`), or `T::default()` when the
    /// table is absent. A rule whose options share the common shapes reads them with
    /// [`crate::rules::options::read_all`], which splits the table and then reads each part here.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming `file:line:col` of the offending key, the dotted key and,
    /// for an unknown key, the keys valid in the table.
    pub fn rule_options<T: serde::de::DeserializeOwned + Default>(&self, rule: &str) -> Result<T> {
        match self.rule_table(rule) {
            Some(table) => self.read_rule_table(rule, table.clone()),
            None => Ok(T::default()),
        }
    }

    /// The raw table `[package.metadata.mcpp.<rule>]`, when present and a table (an entry that
    /// is not a table is refused once, by [`Manifest::check_keys`], and nothing of it is read).
    pub fn rule_table(&self, rule: &str) -> Option<&toml::Table> {
        self.mcpp.rule_tables.get(rule).and_then(toml::Value::as_table)
    }

    /// Read `table`, keys of `[package.metadata.mcpp.<rule>]` (the whole table or part of it),
    /// into `T`.
    ///
    /// # Errors
    /// As [`Manifest::rule_options`]: the first problem serde meets, at its key's position.
    pub fn read_rule_table<T: serde::de::DeserializeOwned>(&self, rule: &str, table: toml::Table) -> Result<T> {
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let inner_path = e.path().to_string();
            self.rule_table_error(rule, &inner_path, &e.into_inner().to_string())
        })
    }

    /// The refusal of `key` in `[package.metadata.mcpp.<rule>]`, which is none of `valid`: in
    /// serde's words ("unknown field ..., expected one of ..."), at the key's position, with the
    /// valid keys in the help, as [`Manifest::rule_options`] refuses an unknown key.
    pub fn unknown_rule_key(&self, rule: &str, key: &str, valid: &[&str]) -> Error {
        let quoted: Vec<String> = valid.iter().map(|k| format!("`{k}`")).collect();
        let expected = match quoted.as_slice() {
            [] => "there are no fields".to_string(),
            [one] => format!("expected {one}"),
            [a, b] => format!("expected {a} or {b}"),
            more => format!("expected one of {}", more.join(", ")),
        };
        self.rule_table_error(rule, key, &format!("unknown field `{key}`, {expected}"))
    }

    /// A serde `message` about `inner_path` (`compiler`, `flags[1]`; empty for the table
    /// itself) of the table of `rule`, as a refusal.
    pub(crate) fn rule_table_error(&self, rule: &str, inner_path: &str, message: &str) -> Error {
        let key = if inner_path.is_empty() || inner_path == "." { format!("{MCPP_TABLE}.{rule}") } else { format!("{MCPP_TABLE}.{rule}.{inner_path}") };
        // One line, and every value serde quotes cut and escaped (a 70 KB string in a wrong
        // place must not come back whole).
        let message = crate::text::echo_serde(message.lines().next().unwrap_or_default());
        // The unknown key itself is not in the error's path: find its name in the message.
        let unknown = message.strip_prefix("unknown field `").and_then(|r| r.split_once('`')).map(|(k, _)| k.to_string());
        // serde_path_to_error names an unknown key as the last segment of the path already.
        let located = match &unknown {
            Some(k) if !key.ends_with(&format!(".{k}")) => format!("{key}.{k}"),
            _ => key.clone(),
        };
        let in_mcpp = |k: &str| k.strip_prefix(&format!("{MCPP_TABLE}.")).map(str::to_string).unwrap_or_default();
        let origin = self.origins.get(&in_mcpp(&located)).or_else(|| self.origins.get(&in_mcpp(&key)).filter(|_| self.spans.position(&located).is_none()));
        let position = self.spans.position(&located).or_else(|| self.spans.position(&key));
        let file = match (origin, position) {
            (Some(origin), _) => origin.clone(),
            (None, Some((l, c))) => format!("{}:{l}:{c}", self.path.display()),
            (None, None) => self.path.display().to_string(),
        };
        let mut err = Error::new(ErrorKind::Manifest, format!("invalid manifest: {message}")).file(file).key(located);
        let valid = message.split_once("expected one of ").or_else(|| message.split_once(", expected ")).map(|(_, v)| v.to_string());
        if let (true, Some(valid)) = (unknown.is_some(), valid) {
            err = err.help(format!("the keys valid in [{MCPP_TABLE}.{rule}] are {valid}; see the cargo-mcpp guide, \"Manifest reference\""));
        } else if message.starts_with("unknown variant") {
            err = err.help(format!("`{key}` takes one of the values listed above"));
        }
        err
    }

    /// The project's toolchain package versions from
    /// `[package.metadata.mcpp.toolchain-packages]`, each checked against the names of
    /// `catalog` and parsed as a version rule.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming the file:line, the key and the valid toolchain package
    /// names or the two valid spellings.
    pub fn toolchain_package_pins(&self, catalog: &crate::toolchain_package::Catalog) -> Result<BTreeMap<String, crate::toolchain_package::ProjectPin>> {
        let mut out = BTreeMap::new();
        for (name, text) in &self.mcpp.toolchain_packages {
            let key = format!("{MCPP_TABLE}.toolchain-packages.{name}");
            let at = self.at(&format!("toolchain-packages.{name}"));
            if !catalog.packages.contains_key(name) {
                return Err(Error::new(ErrorKind::Manifest, format!("unknown toolchain package `{name}`"))
                    .file(&at)
                    .key(key)
                    .help(format!("the toolchain packages cargo-mcpp knows are {}; see the cargo-mcpp guide, \"Declared toolchains\"", catalog.names().join(", "))));
            }
            let req = crate::toolchain_package::VersionReq::parse(text).map_err(|m| Error::new(ErrorKind::Manifest, m).file(&at).key(key.clone()).help("e.g. glslang = \"13.1.1\" or glslang = \">=13.1\""))?;
            out.insert(name.clone(), crate::toolchain_package::ProjectPin { req, at });
        }
        Ok(out)
    }

    /// The package root (the manifest's directory).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

#[cfg(test)]
mod key_docs {
    use super::*;

    fn names(docs: &[KeyDoc]) -> Vec<&'static str> {
        docs.iter().map(|d| d.key).collect()
    }

    #[test]
    fn the_documented_tables_are_the_keys_serde_accepts() {
        assert_eq!(serde_fields::<IslandOptions>().map(<[_]>::to_vec), Some(names(ISLAND_KEYS)));
        assert_eq!(serde_fields::<CxxOptions>().map(<[_]>::to_vec), Some(names(CXX_KEYS)));
        assert_eq!(serde_fields::<HostToolchainDecl>().map(<[_]>::to_vec), Some(names(HOST_TOOLCHAIN_KEYS)));
        // [package.metadata.mcpp] itself reads a map (its rule tables are flattened): each
        // documented key is taken by the typed struct, so none lands among the rule tables.
        let manifest = Manifest::parse(
            Path::new("Cargo.toml"),
            "[package]\nname = \"p\"\n[package.metadata.mcpp]\naccel = \"vulkan\"\nsources = []\nmodule-name = \"m\"\nmodules = true\nbase-dir = \"s\"\ntools = {}\ncxx-sources = []\ntoolchain-packages = {}\nlauncher = \"sccache\"\ncompile-commands = \".\"\n[package.metadata.mcpp.island]\nsources = []\n[package.metadata.mcpp.cxx]\n[package.metadata.mcpp.host-toolchain]\n",
        )
        .unwrap();
        assert!(manifest.mcpp.rule_tables.is_empty(), "{:?}", manifest.mcpp.rule_tables);
        assert!(manifest.check_keys(&[]).is_empty());
        assert_eq!(names(PACKAGE_KEYS), ["accel", "sources", "module-name", "modules", "storage", "base-dir", "tools", "island", "cxx-sources", "cxx", "host-toolchain", "toolchain-packages", "pack", "embed", "launcher", "compile-commands", "export-includes", "include-from"]);
        assert_eq!(serde_fields::<EmbedTableForm>().map(<[_]>::to_vec), Some(names(EMBED_KEYS)));
        assert_eq!(serde_fields::<EmbedFiles>(), Some(EMBED_FILE_KEYS));
        assert_eq!(serde_fields::<EmbedTable>(), Some(EMBED_TABLE_KEYS));
        assert_eq!(serde_fields::<PackOptions>().map(<[_]>::to_vec), Some(names(PACK_KEYS)));
        assert_eq!(serde_fields::<AppImageOptions>().map(<[_]>::to_vec), Some(names(PACK_APPIMAGE_KEYS)));
        assert_eq!(serde_fields::<MsiOptions>().map(<[_]>::to_vec), Some(names(PACK_MSI_KEYS)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> Result<Manifest> {
        Manifest::parse(Path::new("/p/Cargo.toml"), &format!("[package]\nname = \"demo-app\"\nversion = \"0.1.0\"\n\n{extra}"))
    }

    #[test]
    fn reads_every_key() {
        let m = parse(
            r#"[package.metadata.mcpp]
accel = "vulkan1.2"
sources = ["shaders/**/*.comp", { glob = "k/*.frag", accel = "vulkan1.2" }]
modules = false
module-name = "x.shaders"
base-dir = "shaders"
tools = { glslangValidator = "/opt/glslangValidator" }
[package.metadata.mcpp.spirv]
compiler = "glslc"
includes = ["shaders/include"]
defines = { WORKGROUP = "64" }
target-env = "vulkan1.3"
optimize = true
flags = ["-g"]
"#,
        )
        .unwrap();
        assert_eq!(m.package_name, "demo-app");
        assert_eq!((m.mcpp.base_dir.as_deref(), m.at("base-dir")), (Some("shaders"), "/p/Cargo.toml:10".to_string()));
        assert_eq!(m.mcpp.sources[1], SourceEntry::Constrained(ConstrainedGlob { glob: "k/*.frag".into(), accel: Some("vulkan1.2".into()), output: None, storage: None, target_env: None, exclude: Vec::new() }));
        let (s, problems): (crate::rules::spirv::SpirvOptions, _) = crate::rules::options::parse_all(&m, "spirv");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(s.compiler, Some(crate::rules::spirv::SpirvCompilerName::Glslc));
        assert_eq!(s.common.defines["WORKGROUP"], "64");
    }

    #[test]
    fn unknown_key_names_key_file_line_and_valid_keys() {
        let e = crate::rules::options::read::<crate::rules::spirv::SpirvOptions>(&parse("[package.metadata.mcpp.spirv]\ncompilr = \"glslc\"\n").unwrap(), "spirv").unwrap_err();
        let text = e.to_string();
        assert_eq!(e.kind, ErrorKind::Manifest);
        assert!(text.contains("unknown field `compilr`"), "{text}");
        assert!(text.contains("/p/Cargo.toml:6:1"), "{text}");
        assert!(text.contains("package.metadata.mcpp.spirv.compilr"), "{text}");
        assert!(text.contains("`compiler`") && text.contains("`includes`"), "{text}");
    }

    #[test]
    fn unknown_key_in_constrained_glob_is_refused() {
        let e = parse("[package.metadata.mcpp]\nsources = [{ glob = \"a/*.comp\", acel = \"vulkan\" }]\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `acel`"), "{e}");
    }

    #[test]
    fn tool_and_toolchain_package_keys_have_lines_and_pins_are_checked() {
        let m = parse("[package.metadata.mcpp]\ntools = { glslc = \"/x/glslc\" }\n[package.metadata.mcpp.toolchain-packages]\nglslang = \"13.1.1\"\nspirv-tools = \">=2025.1\"\n").unwrap();
        assert_eq!(m.at("tools.glslc"), "/p/Cargo.toml:6");
        assert_eq!(m.at("toolchain-packages.glslang"), "/p/Cargo.toml:8");
        let c = crate::toolchain_package::Catalog::builtin().unwrap();
        let pins = m.toolchain_package_pins(&c).unwrap();
        assert_eq!(pins["spirv-tools"].req, crate::toolchain_package::VersionReq::AtLeast("2025.1".into()));
        assert_eq!(pins["glslang"].at, "/p/Cargo.toml:8");
        let e = parse("[package.metadata.mcpp.toolchain-packages]\nglslangg = \"1\"\n").unwrap().toolchain_package_pins(&c).unwrap_err().to_string();
        assert!(e.contains("unknown toolchain package `glslangg`") && e.contains("Cargo.toml:6") && e.contains("appimage-runtime, cuda-nvcc, glslang, slang, spirv-tools, zig"), "{e}");
        let e = parse("[package.metadata.mcpp.toolchain-packages]\nglslang = \"~1\"\n").unwrap().toolchain_package_pins(&c).unwrap_err().to_string();
        assert!(e.contains("is not a version rule") && e.contains("package.metadata.mcpp.toolchain-packages.glslang"), "{e}");
    }

    #[test]
    fn a_managed_host_toolchain_names_a_package_with_a_host_compiler_and_nothing_beside_it() {
        let m = parse("[package.metadata.mcpp.host-toolchain]\nmanaged = \"zig\"\n").unwrap();
        assert_eq!(m.mcpp.host_toolchain.unwrap().managed.as_deref(), Some("zig"));
        let e = parse("[package.metadata.mcpp.host-toolchain]\nmanaged = \"zug\"\n").unwrap_err().to_string();
        assert!(e.contains("`zug` is not a toolchain package cargo-mcpp knows") && e.contains("/p/Cargo.toml:6:1") && e.contains("package.metadata.mcpp.host-toolchain.managed") && e.contains("provide a host C++ compiler are: zig"), "{e}");
        let e = parse("[package.metadata.mcpp.host-toolchain]\nmanaged = \"glslang\"\n").unwrap_err().to_string();
        assert!(e.contains("the toolchain package `glslang` provides no host C++ compiler") && e.contains("/p/Cargo.toml:6:1") && e.contains("name one that does: zig"), "{e}");
        for (key, value) in [("layout", "\"/opt/llvm\""), ("prefix", "\"aarch64-linux-gnu-\""), ("cxx", "\"clang++\"")] {
            let e = parse(&format!("[package.metadata.mcpp.host-toolchain]\nmanaged = \"zig\"\n{key} = {value}\n")).unwrap_err().to_string();
            assert!(e.contains(&format!("sets both `managed` and `{key}`")) && e.contains("/p/Cargo.toml:7:1") && e.contains(&format!("package.metadata.mcpp.host-toolchain.{key}")) && e.contains("keep one"), "{e}");
        }
    }

    #[test]
    fn the_old_key_payloads_is_refused_naming_its_new_name() {
        // As a table of its own, and as an inline table in [package.metadata.mcpp].
        let e = parse("[package.metadata.mcpp]\naccel = \"vulkan\"\n\n[package.metadata.mcpp.payloads]\nglslang = \"13.1.1\"\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Manifest);
        assert_eq!(e.file.as_deref(), Some(Path::new("/p/Cargo.toml:8:24")), "{e}");
        assert_eq!(e.key.as_deref(), Some("package.metadata.mcpp.payloads"));
        let t = e.to_string();
        assert!(t.contains("`payloads` is a key of an earlier cargo-mcpp 0.1, renamed to `toolchain-packages`"), "{t}");
        assert!(t.contains("help: renamed to `toolchain-packages`: write [package.metadata.mcpp.toolchain-packages]"), "{t}");
        let e = parse("[package.metadata.mcpp]\npayloads = { glslang = \"13.1.1\" }\n").unwrap_err();
        assert_eq!(e.file.as_deref(), Some(Path::new("/p/Cargo.toml:6:1")), "{e}");
        assert!(e.to_string().contains("renamed to `toolchain-packages`"), "{e}");
        // Whatever its value, the old key is not read as something else.
        assert!(parse("[package.metadata.mcpp]\npayloads = 3\n").unwrap_err().to_string().contains("renamed to `toolchain-packages`"));
    }

    #[test]
    fn a_pack_table_alone_is_no_device_phase_and_its_unknown_keys_are_refused() {
        let m = parse("[package.metadata.mcpp.pack]\napp-name = \"Demo\"\n[package.metadata.mcpp.pack.msi]\nmanufacturer = \"Me\"\n").unwrap();
        assert!(!m.has_mcpp_table);
        assert_eq!(m.mcpp.pack.as_ref().and_then(|p| p.msi.as_ref()).and_then(|p| p.manufacturer.as_deref()), Some("Me"));
        assert!(parse("[package.metadata.mcpp]\naccel = \"vulkan\"\n[package.metadata.mcpp.pack]\n").unwrap().has_mcpp_table);
        let e = parse("[package.metadata.mcpp.pack.appimage]\nruntime = \"x\"\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `runtime`") && e.contains("/p/Cargo.toml:6:1") && e.contains("package.metadata.mcpp.pack.appimage.runtime") && e.contains("`runtime-file`"), "{e}");
    }

    fn set(kind: SettingKind) -> BuilderSetting {
        BuilderSetting { kind, at: "build.rs:9".into() }
    }

    #[test]
    fn build_script_values_join_the_manifests_lists_override_its_scalars_and_name_their_call() {
        let text = "[package]\nname = \"p\"\n[package.metadata.mcpp]\nstorage = \"header\"\n[package.metadata.mcpp.spirv]\ncompiler = \"glslangValidator\"\nincludes = [\"a\"]\nflags = [\"-g\"]\ndefines = { A = \"1\", B = \"2\" }\n";
        let settings = [
            set(SettingKind::Include { rule: "spirv".into(), dir: "b".into() }),
            set(SettingKind::Flag { rule: "spirv".into(), flag: "-O0".into() }),
            set(SettingKind::Define { rule: "spirv".into(), name: "B".into(), value: "3".into() }),
            set(SettingKind::Option { rule: "spirv".into(), key: "compiler".into(), value: SettingValue::String("glslc".into()) }),
            set(SettingKind::Flag { rule: "slang".into(), flag: "-x".into() }),
            set(SettingKind::Storage("object".into())),
            set(SettingKind::ModuleName("m.n".into())),
        ];
        let m = Manifest::parse_with(Path::new("/p/Cargo.toml"), text, &settings).unwrap();
        let (s, problems): (crate::rules::spirv::SpirvOptions, _) = crate::rules::options::parse_all(&m, "spirv");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(s.compiler, Some(crate::rules::spirv::SpirvCompilerName::Glslc));
        assert_eq!(s.common.includes, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(s.common.flags, ["-g", "-O0"]);
        assert_eq!(s.common.defines, BTreeMap::from([("A".to_string(), "1".to_string()), ("B".to_string(), "3".to_string())]));
        assert_eq!((m.mcpp.storage.as_deref(), m.mcpp.module_name.as_deref()), (Some("object"), Some("m.n")));
        // The manifest's keys keep their lines; build.rs's name their call.
        assert_eq!(m.at_col("spirv.includes[0]"), "/p/Cargo.toml:7:13");
        assert_eq!(m.at_col("spirv.includes[1]"), "set by build.rs:9: Build::include(\"spirv\", \"b\")");
        assert_eq!(m.at_col("spirv.flags[1]"), "set by build.rs:9: Build::flag(\"spirv\", \"-O0\")");
        assert_eq!(m.at_col("slang"), "set by build.rs:9: Build::flag(\"slang\", \"-x\")");
        assert_eq!(m.at("storage"), "set by build.rs:9: Build::storage(\"object\")");
        assert!(m.has_mcpp_table);
        // Without a table in the manifest, build.rs makes one.
        let m = Manifest::parse_with(Path::new("/p/Cargo.toml"), "[package]\nname = \"p\"\n", &settings[4..5]).unwrap();
        assert_eq!(m.rule_table("slang").and_then(|t| t.get("flags")).map(ToString::to_string).as_deref(), Some("[\"-x\"]"));
    }

    #[test]
    fn a_misspelt_build_script_key_is_refused_naming_the_call_and_the_valid_keys() {
        let text = "[package]\nname = \"p\"\n[package.metadata.mcpp.spirv]\ncompiler = \"glslc\"\n";
        let typo = set(SettingKind::Option { rule: "spirv".into(), key: "compilr".into(), value: SettingValue::String("glslc".into()) });
        let m = Manifest::parse_with(Path::new("/p/Cargo.toml"), text, std::slice::from_ref(&typo)).unwrap();
        let e = crate::rules::options::read::<crate::rules::spirv::SpirvOptions>(&m, "spirv").unwrap_err().to_string();
        assert!(e.contains("unknown field `compilr`"), "{e}");
        assert!(e.contains("--> set by build.rs:9: Build::option(\"spirv\", \"compilr\", ..) (key `package.metadata.mcpp.spirv.compilr`)"), "{e}");
        assert!(e.contains("`compiler`") && e.contains("`includes`") && !e.contains("Cargo.toml"), "{e}");
        // A wrong type, an unknown rule, a typed table (cxx), a package key, a list through option.
        let wrong = set(SettingKind::Option { rule: "spirv".into(), key: "optimize".into(), value: SettingValue::String("yes".into()) });
        let m = Manifest::parse_with(Path::new("/p/Cargo.toml"), text, &[wrong]).unwrap();
        let e = crate::rules::options::read::<crate::rules::spirv::SpirvOptions>(&m, "spirv").unwrap_err().to_string();
        assert!(e.contains("set by build.rs:9: Build::option(\"spirv\", \"optimize\", ..)") && e.contains("invalid type"), "{e}");
        let m = Manifest::parse_with(Path::new("/p/Cargo.toml"), text, &[set(SettingKind::Flag { rule: "spirb".into(), flag: "-g".into() })]).unwrap();
        let e = m.check_keys(&["spirv"]).remove(0).to_string();
        assert!(e.contains("unknown field `spirb`") && e.contains("set by build.rs:9: Build::flag(\"spirb\", \"-g\")"), "{e}");
        let e = Manifest::parse_with(Path::new("/p/Cargo.toml"), text, &[set(SettingKind::Option { rule: "cxx".into(), key: "std2".into(), value: SettingValue::Bool(true) })]).unwrap_err().to_string();
        assert!(e.contains("unknown field `std2`") && e.contains("set by build.rs:9: Build::option(\"cxx\", \"std2\", ..)") && e.contains("the keys valid in [package.metadata.mcpp.cxx]"), "{e}");
        let e = Manifest::parse_with(Path::new("/p/Cargo.toml"), text, &[set(SettingKind::Flag { rule: "sources".into(), flag: "-g".into() })]).unwrap_err().to_string();
        assert!(e.contains("`sources` is a key of [package.metadata.mcpp], not a rule's table") && e.contains("--> set by build.rs:9"), "{e}");
        let e = Manifest::parse_with(Path::new("/p/Cargo.toml"), text, &[set(SettingKind::Option { rule: "spirv".into(), key: "flags".into(), value: SettingValue::List(vec!["-g".into()]) })]).unwrap_err().to_string();
        assert!(e.contains("call Build::flag once per entry"), "{e}");
    }

    #[test]
    fn no_table_is_fine() {
        let m = parse("").unwrap();
        assert!(!m.has_mcpp_table);
    }
}
