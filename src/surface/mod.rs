//! The generated surface: one generator, reused by every lane that embeds payloads (seed 000
//! "Naming", seed 003 section 4, upstream-facts section 4). From a list of payload files it
//! writes, under OUT_DIR:
//!
//! - `mcpp_shaders.rs`: a Rust module tree, one accessor per payload returning [`Payload`]-shaped
//!   values (`code: &'static [u32]`, `size_bytes`), included with
//!   `mod shaders { include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs")); }`;
//! - `mcpp/<module>.cppm` (or `mcpp/<module>.h` under `modules = false`): a std-free C++
//!   interface, a POD `payload` and one accessor per payload;
//! - `mcpp/<module>.impl.cpp` and `mcpp/data/**.h`: the implementation unit and the bytes
//!   (header storage: the bytes are compiled in).
//!
//! - `mcpp/payloads/**.spv`: a copy of each payload, the file `mcpp_shaders.rs` includes: the
//!   device phase writes it from bytes it verified against the hash its compiler run left
//!   (never a file of the device cache that anything could overwrite after the build script).
//!
//! Every file is written only when its content changes, atomically.
//!
//! [`Payload`]: ../../templates/payload.rs

pub mod names;

use crate::error::{Error, ErrorKind, Result};
use crate::fingerprint::write_if_changed;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One payload to expose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadItem {
    /// The device source, package-relative (`shaders/a/scale.comp`).
    pub source: String,
    /// Namespace segments below the base directory (already identifiers).
    pub namespace: Vec<String>,
    /// The accessor's identifier (`scale_comp`).
    pub identifier: String,
    /// The payload file (a bare `.spv`), absolute.
    pub payload: PathBuf,
}

/// Name payloads from `(source, raw identifier)` pairs: base directory = the shallowest
/// directory all sources share; namespace = directories below it; identifier sanitised.
///
/// # Errors
/// [`ErrorKind::Sources`] when two sources in one directory map to one identifier, naming both.
pub fn name_payloads(entries: &[(String, String, PathBuf)], produced_by: &str) -> Result<Vec<PayloadItem>> {
    let base = names::common_base_dir(entries.iter().map(|(s, _, _)| s.as_str()));
    let mut items: Vec<PayloadItem> = Vec::new();
    for (source, raw, payload) in entries {
        let item = PayloadItem {
            source: source.clone(),
            namespace: names::namespace_of(source, &base),
            identifier: names::identifier(raw, "payload"),
            payload: payload.clone(),
        };
        if let Some(first) = items.iter().find(|i| i.namespace == item.namespace && i.identifier == item.identifier) {
            let key = item.namespace.iter().chain(std::iter::once(&item.identifier)).cloned().collect::<Vec<_>>().join("::");
            let parent = |s: &str| s.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default();
            let why = if parent(&first.source) == parent(&item.source) {
                format!(
                    "The directory below `{}` is part of the name, so this is two sources with one name in one directory rather than two directories sharing a stem.",
                    if base.is_empty() { "the package root".to_string() } else { base.join("/") }
                )
            } else {
                "Their directories differ only where a name becomes an identifier (a keyword gets a trailing `_`, other characters become `_`).".to_string()
            };
            return Err(Error::new(ErrorKind::Sources, format!("{produced_by}: two device sources map to one payload name"))
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
    /// ([`crate::graph::RunReport::outputs`]); a payload whose bytes read now differ is
    /// refused. A payload not in the map is copied as read.
    pub verified: std::collections::BTreeMap<PathBuf, String>,
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
        Err((seg, fix)) => Err(Error::new(ErrorKind::Manifest, format!("`{name}` is not a usable module name: the segment `{seg}` is not an identifier"))
            .key(key)
            .detail("Each segment becomes a C++ namespace and a part of the Rust path, so it has to be an identifier of both.")
            .help(format!("`{fix}` would work"))),
        Ok(segs) if segs[0] == "std" => Err(Error::new(ErrorKind::Manifest, format!("`{name}` is not a usable module name: `std` is the C++ standard library's namespace"))
            .key(key)
            .help("name it after the package, e.g. `my_app.shaders`")),
        Ok(segs) => Ok(segs),
    }
}

/// Write the Rust, C++ interface, C++ implementation and data files for `items`.
///
/// # Errors
/// [`ErrorKind::Manifest`] when the module name is not usable; [`ErrorKind::ToolFailed`] when
/// a payload is not a whole number of 32-bit words, or its bytes are not those the device
/// phase verified (changed by another writer since); [`ErrorKind::Io`] for writes.
pub fn generate(items: &[PayloadItem], opts: &SurfaceOptions) -> Result<Generated> {
    let module = check_module_name(&opts.module_name)?;
    let mut written = Vec::new();
    let mut write = |path: &Path, text: &[u8]| -> Result<()> {
        if write_if_changed(path, text)? {
            written.push(path.to_path_buf());
        }
        Ok(())
    };
    let mut data_headers = Vec::new();
    for item in items {
        let bytes = std::fs::read(&item.payload).map_err(|e| Error::io("cannot read the payload", &item.payload, e))?;
        if bytes.len() % 4 != 0 {
            return Err(Error::new(ErrorKind::ToolFailed, format!("the payload of {} is {} bytes, not a whole number of 32-bit words", item.source, bytes.len())).file(&item.payload));
        }
        if let Some(want) = opts.verified.get(&item.payload) {
            if crate::fingerprint::sha256_hex(&bytes) != *want {
                return Err(Error::new(ErrorKind::ToolFailed, format!("the payload of {} changed after its compiler wrote it; it is not embedded", item.source))
                    .file(&item.payload)
                    .detail("something outside this build wrote into the device cache while the build ran")
                    .help("build again: the device phase compiles it anew"));
            }
        }
        write(&payload_copy(opts, item), &bytes)?;
        let rel = format!("data/{}", item.namespace.iter().map(|s| format!("{s}/")).collect::<String>()) + &item.identifier + ".h";
        let sym = format!("{}_words", accessor_base(&module, item));
        let mut text = format!("// Generated by cargo-mcpp from {} for the package `{}`. Do not edit.\n", item.source, opts.package_name);
        let _ = writeln!(text, "static const unsigned int {sym}[] = {{");
        for chunk in bytes.chunks(4 * 8) {
            text.push_str("   ");
            for w in chunk.chunks(4) {
                let _ = write!(text, " 0x{:08x}u,", u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            }
            text.push('\n');
        }
        text.push_str("};\n");
        write(&opts.cpp_dir.join(&rel), text.as_bytes())?;
        data_headers.push((rel, sym));
    }
    remove_stale_data(&opts.cpp_dir.join("data"), &data_headers.iter().map(|(rel, _)| opts.cpp_dir.join(rel)).collect::<Vec<_>>());
    remove_stale_data(&opts.payload_dir, &items.iter().map(|i| payload_copy(opts, i)).collect::<Vec<_>>());
    let rust = rust_surface(items, opts);
    write(&opts.rust_file, rust.as_bytes())?;
    let (interface_file, interface) = if opts.modules {
        (opts.cpp_dir.join(format!("{}.cppm", opts.module_name)), cpp_interface(items, &module, opts, true))
    } else {
        (opts.cpp_dir.join(format!("{}.h", opts.module_name)), cpp_interface(items, &module, opts, false))
    };
    write(&interface_file, interface.as_bytes())?;
    let impl_file = opts.cpp_dir.join(format!("{}.impl.cpp", opts.module_name));
    let mut body = format!("// Generated by cargo-mcpp for the package `{}`: the bytes of `{}` (header storage). Do not edit.\n", opts.package_name, opts.module_name);
    for (rel, _) in &data_headers {
        let _ = writeln!(body, "#include \"{rel}\"");
    }
    body.push_str("\nstatic_assert(sizeof(unsigned int) == 4, \"cargo-mcpp: SPIR-V words assume a 32-bit `unsigned int`\");\n\n");
    for (item, (_, sym)) in items.iter().zip(&data_headers) {
        let base = accessor_base(&module, item);
        let _ = writeln!(body, "extern \"C\" const unsigned int* {base}_data() {{ return {sym}; }}");
        let _ = writeln!(body, "extern \"C\" unsigned long {base}_size() {{ return sizeof {sym}; }}");
    }
    write(&impl_file, body.as_bytes())?;
    Ok(Generated { rust_file: opts.rust_file.clone(), interface_file, impl_file, written })
}

/// The copy of `item`'s payload the Rust surface includes: `<payload_dir>/<namespace>/<identifier>.spv`.
fn payload_copy(opts: &SurfaceOptions, item: &PayloadItem) -> PathBuf {
    let mut p = opts.payload_dir.clone();
    p.extend(&item.namespace);
    p.join(format!("{}.spv", item.identifier))
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

fn rust_surface(items: &[PayloadItem], opts: &SurfaceOptions) -> String {
    let mut out = format!(
        "// Generated by cargo-mcpp for the package `{}` (module `{}`). Do not edit.\n\
         // Include it in a module: mod shaders {{ include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }}\n\n",
        opts.package_name, opts.module_name
    );
    out.push_str(include_str!("../../templates/payload.rs"));
    let _ = writeln!(out, "\n/// Every payload of this surface, in name order.\n#[allow(dead_code)]\npub fn all() -> [Payload; {}] {{\n    [", items.len());
    for item in items {
        let path: Vec<&str> = item.namespace.iter().map(String::as_str).chain(std::iter::once(item.identifier.as_str())).collect();
        let _ = writeln!(out, "        {}(),", path.join("::"));
    }
    out.push_str("    ]\n}\n");
    let mut open: Vec<String> = Vec::new();
    for item in items {
        let common = open.iter().zip(&item.namespace).take_while(|(a, b)| a == b).count();
        while open.len() > common {
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
        let _ = write!(
            out,
            "\n{ind}/// `{src}`, compiled to SPIR-V.\n{ind}#[allow(dead_code)]\n{ind}pub fn {id}() -> {sup}Payload {{\n\
             {ind}    const BYTES: &[u8] = include_bytes!({payload});\n\
             {ind}    static WORDS: [u32; BYTES.len() / 4] = {sup}words(BYTES);\n\
             {ind}    {sup}Payload {{ code: &WORDS, size_bytes: BYTES.len(), source: {src:?} }}\n{ind}}}\n",
            src = item.source,
            id = item.identifier,
        );
    }
    while open.pop().is_some() {
        let _ = writeln!(out, "{}}}", "    ".repeat(open.len()));
    }
    out
}

fn cpp_interface(items: &[PayloadItem], module: &[String], opts: &SurfaceOptions, as_module: bool) -> String {
    let mut out = format!("// Generated by cargo-mcpp for the package `{}`. Do not edit.\n", opts.package_name);
    if as_module {
        let _ = writeln!(out, "export module {};\n\nextern \"C\" {{", opts.module_name);
    } else {
        out.push_str("#pragma once\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    }
    let void = if as_module { "" } else { "void" };
    for item in items {
        let base = accessor_base(module, item);
        let _ = writeln!(out, "const unsigned int* {base}_data({void});\nunsigned long {base}_size({void});");
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
    let mut open: Vec<String> = Vec::new();
    for item in items {
        let common = open.iter().zip(&item.namespace).take_while(|(a, b)| a == b).count();
        while open.len() > common {
            let seg = open.pop().unwrap_or_default();
            let _ = writeln!(out, "}} // namespace {seg}");
        }
        while open.len() < item.namespace.len() {
            let seg = &item.namespace[open.len()];
            let _ = writeln!(out, "namespace {seg} {{");
            open.push(seg.clone());
        }
        let base = accessor_base(module, item);
        let _ = writeln!(out, "inline payload {}() {{ return {{ {base}_data(), {base}_size() }}; }}", item.identifier);
    }
    while let Some(seg) = open.pop() {
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
