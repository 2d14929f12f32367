//! Where a payload's bytes live: `storage = "header" | "object" | "sidecar"` in `[package.metadata.mcpp]`. The
//! accessors are functions in every form, so a consumer does not change with the storage (but
//! for the sidecar's Rust accessors, which return a `Result`: the file may be missing at run
//! time).
//!
//! - header (default): the bytes compiled into one translation unit (`data/*.h`) and, on the
//!   Rust side, `include_bytes!` statics.
//! - object: one generated assembly file (`<module>.payloads.S`, [`assembly`]): per payload a
//!   section (`.rodata.mcpp.<sym>` on ELF, `__TEXT,__const` with the `_` prefix on Mach-O,
//!   `.rdata` on COFF), `.balign 16`, `<sym>_begin`/`<sym>_end` around `.incbin "<payload>"`;
//!   assembled by the host C++ lane with every payload a declared input of the action (GNU `as`
//!   lists `.incbin` files in its depfile, clang's integrated assembler does not: never rely on
//!   the tool) and linked. Under an MSVC target it falls back to header storage, said once.
//! - sidecar: the payload is a file beside the final artifact
//!   (`<target/profile>/mcpp-data/<package>/<namespace>/<identifier>.<ext>`), read once at run
//!   time relative to the executable's directory, or to `MCPP_SIDECAR_DIR` when set (a relocated
//!   install); a missing file is a run-time error naming the path tried. The build writes
//!   `OUT_DIR/mcpp-sidecars.json` (`{"version":1,"sidecars":[{"source","relative"}]}`), the
//!   contract `cargo mcpp pack` reads.

use super::{PayloadItem, PayloadKind};
use crate::error::{Error, ErrorKind};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The run-time environment variable naming the directory sidecar payloads are read from,
/// instead of the executable's directory (a relocated install).
pub const SIDECAR_DIR_ENV: &str = "MCPP_SIDECAR_DIR";

/// The directory below the artifact directory holding the sidecar payloads of every package.
pub const SIDECAR_ROOT: &str = "mcpp-data";

/// Where the bytes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Storage {
    /// Compiled in from generated source (C/C++ arrays, Rust `include_bytes!`).
    #[default]
    Header,
    /// A generated assembly file with `.incbin`, assembled and linked.
    Object,
    /// A file beside the final artifact, read at run time.
    Sidecar,
}

impl Storage {
    /// The manifest spelling.
    pub fn name(self) -> &'static str {
        match self {
            Storage::Header => "header",
            Storage::Object => "object",
            Storage::Sidecar => "sidecar",
        }
    }
}

/// The storage `[package.metadata.mcpp] storage` names (header when absent).
///
/// # Errors
/// [`ErrorKind::Manifest`] at the key's `file:line:col` for any other value, listing the forms.
pub fn from_manifest(manifest: &crate::config::manifest::Manifest) -> crate::error::Result<Storage> {
    let Some(raw) = &manifest.mcpp.storage else { return Ok(Storage::Header) };
    match raw.as_str() {
        "header" => Ok(Storage::Header),
        "object" => Ok(Storage::Object),
        "sidecar" => Ok(Storage::Sidecar),
        other => Err(Error::new(ErrorKind::Manifest, format!("`storage = \"{}\"` is not a storage form", crate::text::echo(other)))
            .file(manifest.at_col("storage"))
            .key("package.metadata.mcpp.storage")
            .detail("header: compiled in (the default); object: an assembly file with .incbin, assembled and linked; sidecar: a file beside the executable, read at run time")
            .help("write storage = \"header\", \"object\" or \"sidecar\", or remove the key for header storage")),
    }
}

/// Parse a `storage` value written at `rel_key` (below `[package.metadata.mcpp]`: a rule's
/// table, a `sources` or `embed` entry; [`crate::plan::storage`]).
///
/// # Errors
/// [`ErrorKind::Manifest`] at the key's `file:line:col` for any other value, listing the forms.
pub fn parse(manifest: &crate::config::manifest::Manifest, rel_key: &str, raw: &str) -> crate::error::Result<Storage> {
    match raw {
        "header" => Ok(Storage::Header),
        "object" => Ok(Storage::Object),
        "sidecar" => Ok(Storage::Sidecar),
        other => Err(Error::new(ErrorKind::Manifest, format!("`storage = \"{}\"` is not a storage form", crate::text::echo(other)))
            .file(manifest.at_col(rel_key))
            .key(format!("{}.{rel_key}", crate::config::manifest::MCPP_TABLE))
            .detail("header: compiled in (the default); object: an assembly file with .incbin, assembled and linked; sidecar: a file beside the executable, read at run time")
            .help("write storage = \"header\", \"object\" or \"sidecar\", or remove the key")),
    }
}

/// The object format of the target, which decides the assembly's section and symbol spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectFormat {
    /// ELF (Linux, the BSDs, Android): `.section .rodata.<name>,"a"`.
    Elf,
    /// Mach-O (Apple): `.section __TEXT,__const`, C symbols with a leading `_`.
    MachO,
    /// COFF through GNU `as` (`*-windows-gnu`): `.section .rdata,"dr"`.
    Coff,
}

impl ObjectFormat {
    /// The format of cargo's target triple; `None` for an MSVC target (no GNU assembler: object
    /// storage falls back to header storage there).
    pub fn of_target(target: &str) -> Option<ObjectFormat> {
        if target.contains("msvc") {
            None
        } else if target.contains("apple") {
            Some(ObjectFormat::MachO)
        } else if target.contains("windows") {
            Some(ObjectFormat::Coff)
        } else {
            Some(ObjectFormat::Elf)
        }
    }
}

/// The storage a build uses: `object` under an MSVC target is header storage, with the warning
/// to say once.
pub fn effective(storage: Storage, target: &str) -> (Storage, Option<String>) {
    if storage == Storage::Object && ObjectFormat::of_target(target).is_none() {
        return (Storage::Header, Some(format!("storage = \"object\" needs a GNU-style assembler, which the MSVC target `{target}` has not: the payloads are stored as headers (storage = \"header\")")));
    }
    (storage, None)
}

/// An `.incbin` path as a GNU assembler string literal (`\` and `"` escaped).
fn asm_string(path: &Path) -> String {
    let mut out = String::from("\"");
    for c in path.to_string_lossy().chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The assembly of object storage: for each `(item, symbol base, payload file)`, a section,
/// `.balign 16`, `<base>_begin`, `.incbin` of the file (nothing for an empty placeholder), a
/// NUL after a text payload, `<base>_end` (before that NUL: the size is the text's). The
/// symbols are global, in the read-only data of `format`.
pub fn assembly(entries: &[(&PayloadItem, String, PathBuf)], format: ObjectFormat, package: &str) -> String {
    let mut out = format!("/* Generated by cargo-mcpp for the package `{}`: object storage. Do not edit. */\n", super::comment(package).replace("*/", "* /"));
    let prefix = if format == ObjectFormat::MachO { "_" } else { "" };
    for (item, base, file) in entries {
        let section = match format {
            ObjectFormat::Elf => format!(".section .rodata.mcpp.{base},\"a\""),
            ObjectFormat::MachO => ".section __TEXT,__const".to_string(),
            ObjectFormat::Coff => ".section .rdata,\"dr\"".to_string(),
        };
        let _ = writeln!(out, "\n    {section}\n    .balign 16\n    .globl {prefix}{base}_begin\n{prefix}{base}_begin:");
        if !file.as_os_str().is_empty() {
            let _ = writeln!(out, "    .incbin {}", asm_string(file));
        }
        let _ = writeln!(out, "    .globl {prefix}{base}_end\n{prefix}{base}_end:");
        if item.kind == PayloadKind::Text {
            out.push_str("    .byte 0\n");
        }
    }
    if format == ObjectFormat::Elf {
        out.push_str("\n    .section .note.GNU-stack,\"\",@progbits\n");
    }
    out
}

/// The C++ definitions of one payload's accessors under object storage: the bytes between the
/// assembly's begin and end symbols.
pub fn object_impl(base: &str, c_type: &str) -> String {
    format!(
        "extern \"C\" const unsigned char {base}_begin[];\nextern \"C\" const unsigned char {base}_end[];\n\
         extern \"C\" const {c_type}* {base}_data() {{ return reinterpret_cast<const {c_type}*>({base}_begin); }}\n\
         extern \"C\" unsigned long {base}_size() {{ return static_cast<unsigned long>({base}_end - {base}_begin); }}\n"
    )
}

/// The loader the C++ definitions of sidecar storage share (the implementation unit may use the
/// standard library; the interface never does): the executable's directory (Linux
/// `/proc/self/exe`, Apple `_NSGetExecutablePath`, Windows `GetModuleFileNameA`) or
/// `MCPP_SIDECAR_DIR`, the file read whole into 16-byte aligned memory with one NUL after it,
/// kept for the program's life; a missing file prints one line naming the path tried and gives
/// null and size 0.
pub const SIDECAR_LOADER_CPP: &str = r#"#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#if defined(_WIN32)
#include <windows.h>
#elif defined(__APPLE__)
#include <mach-o/dyld.h>
#else
#include <unistd.h>
#endif

namespace {
struct mcpp_sidecar_blob {
    const unsigned char* data;
    unsigned long size;
};

std::string mcpp_sidecar_dir() {
    const char* over = std::getenv("MCPP_SIDECAR_DIR");
    if (over != nullptr && *over != '\0') return over;
    std::string exe;
#if defined(_WIN32)
    char buf[32768];
    DWORD n = GetModuleFileNameA(nullptr, buf, sizeof buf);
    exe.assign(buf, n);
#elif defined(__APPLE__)
    char buf[4096];
    uint32_t n = sizeof buf;
    if (_NSGetExecutablePath(buf, &n) == 0) exe = buf;
#else
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) exe.assign(buf, static_cast<size_t>(n));
#endif
    std::string::size_type slash = exe.find_last_of("/\\");
    return slash == std::string::npos ? std::string(".") : exe.substr(0, slash);
}

mcpp_sidecar_blob mcpp_sidecar_load(const char* relative) {
    std::string path = mcpp_sidecar_dir() + "/" + relative;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
        std::fprintf(stderr, "cargo-mcpp: the sidecar payload %s is missing (it is read beside the executable, or below MCPP_SIDECAR_DIR when set)\n", path.c_str());
        return {nullptr, 0};
    }
    std::string bytes;
    char chunk[65536];
    size_t got;
    while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.append(chunk, got);
    std::fclose(f);
    unsigned char* data = static_cast<unsigned char*>(::operator new(bytes.size() + 1, std::align_val_t(16)));
    for (size_t i = 0; i < bytes.size(); ++i) data[i] = static_cast<unsigned char>(bytes[i]);
    data[bytes.size()] = 0;
    return {data, static_cast<unsigned long>(bytes.size())};
}
} // namespace
"#;

/// The C++ definitions of one payload's accessors under sidecar storage: loaded once (a
/// function-local static) from `relative`.
pub fn sidecar_impl(base: &str, c_type: &str, relative: &str) -> String {
    format!(
        "static const mcpp_sidecar_blob& {base}_blob() {{ static const mcpp_sidecar_blob b = mcpp_sidecar_load({relative:?}); return b; }}\n\
         extern \"C\" const {c_type}* {base}_data() {{ return reinterpret_cast<const {c_type}*>({base}_blob().data); }}\n\
         extern \"C\" unsigned long {base}_size() {{ return {base}_blob().size; }}\n"
    )
}

/// The rule name of embedded data files (`crate::sources::embed::RULE`, which sits above this module).
const EMBED_RULE: &str = "embed";

/// The sidecar file of `item`, relative to the executable's directory:
/// `mcpp-data/<package>/<namespace>/<identifier>.<ext>`, `/`-separated. The extension is the
/// kind's ([`PayloadKind::copy_extension`]: `spv` for a compiled words payload, which is
/// SPIR-V), except for an embedded data file of words, which is no SPIR-V: `bin`.
pub fn sidecar_relative(package: &str, item: &PayloadItem) -> String {
    let mut parts = vec![SIDECAR_ROOT.to_string(), package.to_string()];
    parts.extend(item.namespace.iter().cloned());
    let ext = if item.rule == EMBED_RULE && item.kind == PayloadKind::Words32 { "bin" } else { item.kind.copy_extension() };
    parts.push(format!("{}.{ext}", item.identifier));
    parts.join("/")
}

/// `OUT_DIR/mcpp-sidecars.json`: `{"version":1,"sidecars":[{"source":<absolute file>,
/// "relative":<path below the executable's directory>}]}`, in name order.
pub fn sidecars_json(sidecars: &[(PathBuf, String)]) -> String {
    let list: Vec<serde_json::Value> = sidecars.iter().map(|(source, relative)| serde_json::json!({ "source": source.to_string_lossy(), "relative": relative })).collect();
    let mut text = serde_json::to_string_pretty(&serde_json::json!({ "version": 1, "sidecars": list })).unwrap_or_default();
    text.push('\n');
    text
}

/// The Rust accessor of `item` under object storage (the symbols' `link_name`; Rust adds the
/// Mach-O `_` itself): the bytes between the begin and end symbols, as the kind's type.
pub fn object_rust(item: &PayloadItem, base: &str, sup: &str, ind: &str) -> String {
    let end_len = if item.kind == PayloadKind::Text { " + 1" } else { "" };
    let value = match item.kind {
        PayloadKind::Words32 => format!("{sup}Payload {{ code: {sup}object_words(bytes), size_bytes: bytes.len(), source: {:?} }}", item.source),
        PayloadKind::Bytes => format!("{sup}BytesPayload {{ bytes, source: {:?} }}", item.source),
        PayloadKind::Text => format!("{sup}text_payload(bytes, {:?})", item.source),
    };
    let ty = match item.kind {
        PayloadKind::Words32 => "Payload",
        PayloadKind::Bytes => "BytesPayload",
        PayloadKind::Text => "TextPayload",
    };
    format!(
        "{ind}#[allow(non_snake_case, dead_code, unsafe_code)]\n{ind}pub fn {id}() -> {sup}{ty} {{\n\
         {ind}    extern \"C\" {{\n\
         {ind}        #[link_name = \"{base}_begin\"]\n{ind}        static BEGIN: u8;\n\
         {ind}        #[link_name = \"{base}_end\"]\n{ind}        static END: u8;\n\
         {ind}    }}\n\
         {ind}    #[allow(unused_unsafe)]\n\
         {ind}    let (begin, end) = unsafe {{ (core::ptr::addr_of!(BEGIN), core::ptr::addr_of!(END)) }};\n\
         {ind}    let bytes = {sup}object_bytes(begin, end, {n});\n\
         {ind}    {value}\n{ind}}}\n",
        id = item.identifier,
        n = if end_len.is_empty() { 0 } else { 1 },
    )
}

/// The Rust accessor of `item` under sidecar storage: `Result<kind's type, SidecarError>`, the
/// file read once and checked against the kind (a words file of a size that is no multiple of
/// 4, a text file that is not UTF-8 without NUL: an `Err` naming the file, never a panic).
pub fn sidecar_rust(item: &PayloadItem, relative: &str, sup: &str, ind: &str) -> String {
    let (ty, value) = match item.kind {
        PayloadKind::Words32 => ("Payload", format!("{sup}Payload {{ code: {sup}object_words(bytes), size_bytes: bytes.len(), source: {:?} }}", item.source)),
        PayloadKind::Bytes => ("BytesPayload", format!("{sup}BytesPayload {{ bytes, source: {:?} }}", item.source)),
        PayloadKind::Text => ("TextPayload", format!("{sup}text_payload(with_nul, {:?})", item.source)),
    };
    let bind = if item.kind == PayloadKind::Text { "let with_nul = &all[..bytes.len() + 1];\n" } else { "" };
    let check = match item.kind {
        PayloadKind::Words32 => "sidecar_words",
        PayloadKind::Bytes => "sidecar_bytes",
        PayloadKind::Text => "sidecar_text",
    };
    format!(
        "{ind}#[allow(non_snake_case, dead_code)]\n{ind}pub fn {id}() -> Result<{sup}{ty}, {sup}SidecarError> {{\n\
         {ind}    static CELL: std::sync::OnceLock<Result<&'static [u8], {sup}SidecarError>> = std::sync::OnceLock::new();\n\
         {ind}    let all = CELL.get_or_init(|| {sup}sidecar_read({relative:?}, {sup}{check})).clone()?;\n\
         {ind}    let bytes = &all[..all.len() - 1];\n\
         {ind}    {bind}{ind}    Ok({value})\n{ind}}}\n",
        id = item.identifier,
    )
}

/// The Rust helpers of object storage (a template: `templates/payload_object.rs`).
pub const OBJECT_RUST: &str = include_str!("../../templates/payload_object.rs");

/// The Rust helpers of sidecar storage (a template: `templates/payload_sidecar.rs`).
pub const SIDECAR_RUST: &str = include_str!("../../templates/payload_sidecar.rs");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_decides_the_object_format_and_msvc_falls_back_to_header() {
        assert_eq!(ObjectFormat::of_target("x86_64-unknown-linux-gnu"), Some(ObjectFormat::Elf));
        assert_eq!(ObjectFormat::of_target("aarch64-apple-darwin"), Some(ObjectFormat::MachO));
        assert_eq!(ObjectFormat::of_target("x86_64-pc-windows-gnu"), Some(ObjectFormat::Coff));
        let (s, w) = effective(Storage::Object, "x86_64-pc-windows-msvc");
        assert_eq!(s, Storage::Header);
        assert!(w.unwrap().contains("x86_64-pc-windows-msvc"));
        assert_eq!(effective(Storage::Sidecar, "x86_64-pc-windows-msvc"), (Storage::Sidecar, None));
    }

    #[test]
    fn the_assembly_brackets_each_payload_with_its_symbols_in_its_section() {
        let item = PayloadItem { source: "s/t.txt".into(), namespace: vec![], identifier: "t_txt".into(), payload: PathBuf::from("/p/t.txt"), kind: PayloadKind::Text, rule: "embed".into(), storage: None, doc: None, cuda: None, kernels: Vec::new() };
        let elf = assembly(&[(&item, "mcpp_embed_1p5t_txt".into(), PathBuf::from("/o/a \"b\".txt"))], ObjectFormat::Elf, "p");
        assert!(elf.contains(".section .rodata.mcpp.mcpp_embed_1p5t_txt,\"a\"\n    .balign 16\n    .globl mcpp_embed_1p5t_txt_begin\nmcpp_embed_1p5t_txt_begin:\n    .incbin \"/o/a \\\"b\\\".txt\"\n    .globl mcpp_embed_1p5t_txt_end\nmcpp_embed_1p5t_txt_end:\n    .byte 0\n"), "{elf}");
        let macho = assembly(&[(&item, "s".into(), PathBuf::from("/o/x"))], ObjectFormat::MachO, "p");
        assert!(macho.contains("__TEXT,__const") && macho.contains("_s_begin:") && !macho.contains("GNU-stack"), "{macho}");
    }
}
