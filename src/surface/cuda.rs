//! The CUDA part of the surface: per CUDA source compiled to payloads (PTX, cubins, a fat
//! binary; the items whose [`PayloadItem::cuda`] says what they are built for), a selection
//! function and the names of its kernels.
//!
//! - Rust: `<stem>_select(major, minor) -> Result<CudaImage, NoCudaImage>` beside the source's
//!   accessors (the rule: [`SELECTION`]), and a module `<stem>_entries` with one `&str` constant
//!   per kernel (`AFFINE`, ...) and `ALL`;
//! - C: `<base>_select(major, minor, &data, &size, &arch)` returning the kind (0 none, 1 cubin,
//!   2 PTX, 3 fat binary) and `<base>_entry(i)` (null past the last); C++: `<stem>_select()`
//!   returning a `cuda_image`, and a namespace `<stem>_entries` of `const char*` constants.
//!
//! Kernel names are read from the built images, so a C++ kernel's mangled name is the one the
//! driver looks up: PTX `.entry` lines, and the symbols of a cubin (ELF) marked as entries
//! (`st_other` 0x10, what `cuobjdump` lists as functions with `STO_CUDA_ENTRY`), also those of
//! the uncompressed cubins inside a fat binary (nvcc compresses them by default: then no name
//! is read from a fat binary, and its `<stem>_entries` is empty, said in its doc).

use super::{accessor_base, PayloadItem, PayloadKind, Storage};
use std::fmt::Write as _;

/// How a selection function chooses, in its doc comment.
pub const SELECTION: &str = "a fat binary holding an image that fits, else the cubin of exactly that architecture, else the cubin of the same major architecture with the highest lower minor (the driver runs it), else the PTX of the highest virtual architecture not above it (the driver JIT-compiles it, if it knows the PTX ISA version in its `.version` line), else the error naming what was built";

/// What an image is, from the item's kind and architecture.
fn image_kind(item: &PayloadItem, arch: &str) -> u8 {
    if item.kind == PayloadKind::Text {
        2
    } else if arch.starts_with("sm_") && !arch.contains(',') {
        1
    } else {
        3
    }
}

/// The images of one CUDA source, in item order, and the kernel names read from them.
pub(crate) struct Group {
    /// The source, package-relative.
    pub source: String,
    /// Its namespace (its accessors').
    pub namespace: Vec<String>,
    /// The identifier its functions are named after (`affine` for `kernels/affine.cu`).
    pub stem: String,
    /// (item index, architecture) of each image.
    pub images: Vec<(usize, String)>,
    /// The kernel names, sorted, each once.
    pub entries: Vec<String>,
    /// Whether some image had bytes, none of which named a kernel (a compressed fat binary).
    pub unreadable: bool,
}

/// The groups of `items` (one per source with CUDA images), `bytes[i]` the payload of item i
/// (empty for a placeholder or an alias). Returned with the index of each group's last item,
/// where the surface writes its functions.
pub(crate) fn groups(items: &[PayloadItem], bytes: &[Vec<u8>]) -> Vec<(usize, Group)> {
    let mut out: Vec<(usize, Group)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(arch) = &item.cuda else { continue };
        let at = match out.iter().position(|(_, g)| g.source == item.source) {
            Some(at) => at,
            None => {
                let file = item.source.rsplit('/').next().unwrap_or(&item.source);
                let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
                out.push((i, Group { source: item.source.clone(), namespace: item.namespace.clone(), stem: super::names::identifier(stem, "kernels"), images: Vec::new(), entries: Vec::new(), unreadable: false }));
                out.len() - 1
            }
        };
        let (last, group) = &mut out[at];
        *last = i;
        group.images.push((i, arch.clone()));
        if !bytes[i].is_empty() {
            let names = if item.kind == PayloadKind::Text { ptx_entries(&String::from_utf8_lossy(&bytes[i])) } else { binary_entries(&bytes[i]) };
            group.unreadable |= names.is_empty();
            group.entries.extend(names);
        }
    }
    // A source with no built image (a build without CUDA): the names its rule read from it.
    for (_, g) in &mut out {
        if g.images.iter().all(|(i, _)| bytes[*i].is_empty()) {
            g.entries = g.images.iter().flat_map(|(i, _)| items[*i].kernels.clone()).collect();
        }
    }
    for (_, g) in &mut out {
        g.entries.sort();
        g.entries.dedup();
        g.unreadable &= g.entries.is_empty();
    }
    out
}

/// The kernels of PTX text: the name after `.entry` on each line declaring one.
pub(crate) fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| *w == ".entry")?;
            let name = words.get(at + 1)?;
            let name = name.split('(').next().unwrap_or(name);
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// The kernels of a cubin (64-bit little-endian ELF): the function symbols marked as entries
/// (`st_other` 0x10); of a fat binary, those of every uncompressed ELF inside it.
pub(crate) fn binary_entries(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(off) = bytes[at..].windows(4).position(|w| w == b"\x7fELF") {
        out.extend(elf_entries(&bytes[at + off..]).unwrap_or_default());
        at += off + 4;
    }
    out
}

/// The entry symbols of one ELF64 (little-endian) image at the start of `elf`; `None` if it is
/// not one that reads whole.
fn elf_entries(elf: &[u8]) -> Option<Vec<String>> {
    let u16_at = |o: usize| elf.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| elf.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let u64_at = |o: usize| elf.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return None;
    }
    let shoff = usize::try_from(u64_at(0x28)?).ok()?;
    let (shentsize, shnum) = (usize::from(u16_at(0x3a)?), usize::from(u16_at(0x3c)?));
    let section = |i: usize| -> Option<(u32, usize, usize, usize, usize)> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        Some((u32_at(h + 4)?, usize::try_from(u64_at(h + 0x18)?).ok()?, usize::try_from(u64_at(h + 0x20)?).ok()?, u32_at(h + 0x28)? as usize, usize::try_from(u64_at(h + 0x38)?).ok()?))
    };
    let mut out = Vec::new();
    for i in 0..shnum {
        let (kind, offset, size, link, entsize) = section(i)?;
        if kind != 2 || entsize != 24 {
            continue; // SHT_SYMTAB only
        }
        let (_, str_off, str_size, _, _) = section(link)?;
        let strings = elf.get(str_off..str_off.checked_add(str_size)?)?;
        for s in (offset..offset.checked_add(size)?).step_by(24) {
            let (name, info, other) = (u32_at(s)? as usize, *elf.get(s + 4)?, *elf.get(s + 5)?);
            if info & 0xf == 2 && other & 0x10 != 0 {
                let tail = strings.get(name..)?;
                let end = tail.iter().position(|&b| b == 0)?;
                out.push(String::from_utf8_lossy(&tail[..end]).into_owned());
            }
        }
    }
    Some(out)
}

/// A Rust constant name for each kernel name: its identifier (a mangled C++ name's last
/// component, `_Z6affinePfj` -> `affine`) in upper case, numbered when two meet (`SCALE`,
/// `SCALE_2`).
pub(crate) fn constant_names(entries: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in entries {
        let base = super::names::identifier(&demangled_name(e), "kernel").trim_end_matches('_').to_ascii_uppercase();
        let base = if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) { format!("K_{base}") } else { base };
        let mut name = base.clone();
        let mut n = 1;
        while out.contains(&name) || name == "ALL" {
            n += 1;
            name = format!("{base}_{n}");
        }
        out.push(name);
    }
    out
}

/// The last name component of an Itanium-mangled name (`_Z6affinePfj` -> `affine`,
/// `_ZN2ns4axpyEv` -> `axpy`); the name itself when it is not mangled.
fn demangled_name(name: &str) -> String {
    let Some(mut rest) = name.strip_prefix("_Z") else { return name.to_string() };
    rest = rest.strip_prefix('N').unwrap_or(rest);
    let mut last = None;
    loop {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(len) = digits.parse::<usize>() else { break };
        let Some(part) = rest.get(digits.len()..digits.len() + len) else { break };
        last = Some(part.to_string());
        rest = &rest[digits.len() + len..];
    }
    last.unwrap_or_else(|| name.to_string())
}

/// The Rust selection function and entry module of `group`, inside its namespace (`sup` leads
/// to the surface's root, `ind` indents), `storage` the storage of each item.
pub(crate) fn rust(group: &Group, items: &[PayloadItem], storage: &dyn Fn(&PayloadItem) -> Storage, sup: &str, ind: &str) -> String {
    let (stem, src) = (&group.stem, &group.source);
    let archs: Vec<&str> = group.images.iter().map(|(_, a)| a.as_str()).filter(|a| !a.is_empty()).collect();
    let mut out = format!(
        "\n{ind}/// The best image of `{}` for a GPU of compute capability `major.minor` (from the images\n{ind}/// {}): {SELECTION}.\n\
         {ind}#[allow(non_snake_case, dead_code)]\n{ind}pub fn {stem}_select(major: u32, minor: u32) -> Result<{sup}CudaImage, {sup}NoCudaImage> {{\n\
         {ind}    {sup}cuda_select({src:?}, major, minor, &[\n",
        super::doc_text(src),
        if archs.is_empty() { "this source is compiled to".to_string() } else { format!("declared: {}", archs.join(", ")) },
    );
    for (i, arch) in &group.images {
        let item = &items[*i];
        let id = &item.identifier;
        let kind = ["", "Cubin", "Ptx", "Fatbin"][usize::from(image_kind(item, arch))];
        let sidecar = storage(item) == Storage::Sidecar;
        let bytes = match (item.kind, sidecar) {
            (PayloadKind::Text, false) => format!("{{ let t = {id}(); if t.text.is_empty() {{ &[] }} else {{ t.c_str.to_bytes_with_nul() }} }}"),
            (PayloadKind::Text, true) => format!("{id}().map(|t| if t.text.is_empty() {{ &[][..] }} else {{ t.c_str.to_bytes_with_nul() }}).unwrap_or(&[])"),
            (_, false) => format!("{id}().bytes"),
            (_, true) => format!("{id}().map(|b| b.bytes).unwrap_or(&[])"),
        };
        let _ = writeln!(out, "{ind}        {sup}CudaImage {{ kind: {sup}CudaImageKind::{kind}, arch: {arch:?}, bytes: {bytes} }},");
    }
    let _ = write!(out, "{ind}    ])\n{ind}}}\n");
    let names = constant_names(&group.entries);
    let from = if group.unreadable { "none could be read: the fat binary's images are compressed (nvcc's default); compile PTX or cubins to have them" } else { "read from the built images, so a C++ kernel's name is its mangled one" };
    let _ = write!(out, "\n{ind}/// The kernels of `{}`, as the driver looks them up ({from}).\n{ind}#[allow(dead_code)]\n{ind}pub mod {stem}_entries {{\n", super::doc_text(src));
    for (name, entry) in names.iter().zip(&group.entries) {
        let _ = writeln!(out, "{ind}    /// `{}`", super::doc_text(entry));
        let _ = writeln!(out, "{ind}    pub const {name}: &str = {entry:?};");
    }
    let _ = writeln!(out, "{ind}    /// Every kernel, in name order.\n{ind}    pub const ALL: [&str; {}] = [{}];\n{ind}}}", names.len(), names.join(", "));
    out
}

/// The C symbol base of a group's functions (`<accessor base of <stem>_select>`).
fn c_base(module: &[String], group: &Group) -> String {
    let item = PayloadItem { source: String::new(), namespace: group.namespace.clone(), identifier: format!("{}_select", group.stem), payload: Default::default(), kind: PayloadKind::Bytes, rule: String::new(), storage: None, doc: None, cuda: None, kernels: Vec::new() };
    accessor_base(module, &item)
}

/// The C declarations of a group (inside the interface's `extern "C"` block).
pub(crate) fn c_declarations(module: &[String], group: &Group, void: &str) -> String {
    let b = c_base(module, group);
    format!("int {b}(unsigned major, unsigned minor, const unsigned char** data, unsigned long* size, const char** arch);\nconst char* {b}_entry(unsigned long i);\nunsigned long {b}_entry_count({void});\n")
}

/// The C++ functions of a group, inside its namespace.
pub(crate) fn cpp_inline(module: &[String], group: &Group) -> String {
    let b = c_base(module, group);
    let stem = &group.stem;
    let mut out = format!(
        "// The best image of {} for a GPU of compute capability major.minor: {SELECTION}.\n\
         inline cuda_image {stem}_select(unsigned major, unsigned minor) {{ cuda_image i = {{ 0, nullptr, nullptr, 0 }}; i.kind = {b}(major, minor, &i.data, &i.size_bytes, &i.arch); return i; }}\n\
         // The kernels of {}, as the driver looks them up.\nnamespace {stem}_entries {{\n",
        super::doc_text(&group.source),
        super::doc_text(&group.source),
    );
    for (name, entry) in constant_names(&group.entries).iter().zip(&group.entries) {
        let _ = writeln!(out, "inline constexpr const char* {name} = {};", super::c_string(entry));
    }
    out.push_str("} // namespace\n");
    out
}

/// The helper the C definitions of every group share (in the implementation unit).
pub(crate) const SELECT_CPP: &str = r#"
namespace {
struct mcpp_cuda_candidate {
    int kind;
    const char* arch;
    const unsigned char* data;
    unsigned long size;
};

unsigned mcpp_cuda_number(const char* a, const char* end) {
    unsigned n = 0;
    for (const char* p = a; p != end; ++p) {
        if (*p >= '0' && *p <= '9') n = n * 10 + static_cast<unsigned>(*p - '0');
    }
    return n;
}

bool mcpp_cuda_fits(const char* a, const char* end, unsigned major, unsigned cc) {
    unsigned n = mcpp_cuda_number(a, end);
    bool suffixed = end > a && end[-1] >= 'a' && end[-1] <= 'z';
    if (a[0] == 'c') return n <= cc && (!suffixed || n == cc);
    return n == cc || (!suffixed && n / 10 == major && n <= cc);
}

int mcpp_cuda_select(unsigned major, unsigned minor, const mcpp_cuda_candidate* c, unsigned long n, const unsigned char** data, unsigned long* size, const char** arch) {
    unsigned cc = major * 10 + minor;
    const mcpp_cuda_candidate* best = nullptr;
    static const int order[] = {3, 1, 2};
    for (int kind : order) {
        unsigned best_n = 0;
        for (unsigned long i = 0; i < n; ++i) {
            if (c[i].kind != kind || c[i].size == 0) continue;
            const char* a = c[i].arch;
            bool fits = false;
            while (*a != 0 && !fits) {
                const char* e = a;
                while (*e != 0 && *e != ',') ++e;
                fits = mcpp_cuda_fits(a, e, major, cc);
                a = *e != 0 ? e + 1 : e;
            }
            const char* end = c[i].arch;
            while (*end != 0) ++end;
            unsigned number = mcpp_cuda_number(c[i].arch, end);
            if (fits && (best == nullptr || best->kind != kind || number > best_n)) {
                best = &c[i];
                best_n = number;
            }
        }
        if (best != nullptr) break;
    }
    if (data != nullptr) *data = best != nullptr ? best->data : nullptr;
    if (size != nullptr) *size = best != nullptr ? best->size : 0;
    if (arch != nullptr) *arch = best != nullptr ? best->arch : nullptr;
    return best != nullptr ? best->kind : 0;
}
} // namespace
"#;

/// The C definitions of a group (in the implementation unit, after the accessors').
pub(crate) fn c_impl(module: &[String], group: &Group, items: &[PayloadItem]) -> String {
    let b = c_base(module, group);
    let mut out = format!("\nextern \"C\" int {b}(unsigned major, unsigned minor, const unsigned char** data, unsigned long* size, const char** arch) {{\n    const mcpp_cuda_candidate c[] = {{\n");
    for (i, arch) in &group.images {
        let item = &items[*i];
        let a = accessor_base(module, item);
        let nul = if item.kind == PayloadKind::Text { format!("({a}_size() > 0 ? {a}_size() + 1 : 0)") } else { format!("{a}_size()") };
        let _ = writeln!(out, "        {{ {}, {}, reinterpret_cast<const unsigned char*>({a}_data()), {nul} }},", image_kind(item, arch), super::c_string(arch));
    }
    let n = group.entries.len();
    let _ = write!(out, "    }};\n    return mcpp_cuda_select(major, minor, c, {}, data, size, arch);\n}}\n", group.images.len());
    let _ = write!(out, "extern \"C\" unsigned long {b}_entry_count() {{ return {n}; }}\nextern \"C\" const char* {b}_entry(unsigned long i) {{\n");
    if n == 0 {
        out.push_str("    (void)i;\n    return nullptr;\n}\n");
    } else {
        let list: Vec<String> = group.entries.iter().map(|e| super::c_string(e)).collect();
        let _ = write!(out, "    static const char* const names[] = {{ {} }};\n    return i < {n} ? names[i] : nullptr;\n}}\n", list.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_read_from_ptx_lines_and_mangled_names_get_constants() {
        let ptx = "//\n.version 9.0\n.visible .entry affine(\n\t.param .u64 p\n)\n.visible .entry _Z5scalePfj(\n.entry _ZN2ns5scaleEv()\n.func helper(\n";
        let e = ptx_entries(ptx);
        assert_eq!(e, ["affine", "_Z5scalePfj", "_ZN2ns5scaleEv"]);
        assert_eq!(constant_names(&e), ["AFFINE", "SCALE", "SCALE_2"]);
        assert_eq!(demangled_name("_Z2tkIfEvPT_"), "tk");
    }
}
