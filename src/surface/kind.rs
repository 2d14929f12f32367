//! What a rule hands the surface: a payload file with its kind. The kind decides how the bytes are checked and handed out, in every language of
//! the surface (the producer makes a bare payload, the surface does the rest):
//!
//! | kind | checked | Rust | C / C++ (`<id>_data()`, `<id>_size()` in bytes) |
//! |---|---|---|---|
//! | [`PayloadKind::Words32`] (SPIR-V) | size a multiple of 4 | `&'static [u32]`, 4-byte aligned | `const unsigned int*` |
//! | [`PayloadKind::Bytes`] (cubin, fatbin, data) | nothing | `&'static [u8]`, 16-byte aligned | `const unsigned char*`, 16-byte aligned |
//! | [`PayloadKind::Text`] (PTX, any text) | UTF-8, no NUL inside | `&'static str` + `&'static CStr` | `const char*`, NUL-terminated (the size leaves the NUL out) |

use std::path::PathBuf;

/// The alignment, in bytes, of a [`PayloadKind::Bytes`] payload in every surface: 16, the
/// alignment of `max_align_t` on the 64-bit targets (a fatbin wants 8), at no run-time cost.
pub const BYTES_ALIGN: usize = 16;

/// What a payload's bytes are, which decides how the surface checks them and hands them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PayloadKind {
    /// 32-bit little-endian words (SPIR-V): the size must be a multiple of 4 bytes; handed out
    /// 4-byte aligned as words with the size in bytes (`VkShaderModuleCreateInfo::pCode` and
    /// `codeSize`).
    Words32,
    /// Bytes as they are (a cubin, a fatbin, any data), any size; handed out
    /// [`BYTES_ALIGN`]-aligned with the size in bytes.
    Bytes,
    /// UTF-8 text (PTX, JSON, ...): it must be UTF-8 and hold no NUL; handed out as text and,
    /// from the same bytes, NUL-terminated (`cuModuleLoadData` takes PTX that way); the size in
    /// bytes leaves the NUL out.
    Text,
}

impl PayloadKind {
    /// What the kind is, in messages and generated comments (`32-bit words (SPIR-V)`).
    pub fn describe(self) -> &'static str {
        match self {
            PayloadKind::Words32 => "32-bit words (SPIR-V)",
            PayloadKind::Bytes => "bytes",
            PayloadKind::Text => "UTF-8 text",
        }
    }

    /// Check a payload's `bytes` against the kind.
    ///
    /// # Errors
    /// What is wrong, as the end of a sentence about the payload ("is 7 bytes, not a whole
    /// number of 32-bit words"): a [`PayloadKind::Words32`] size that is no multiple of 4, a
    /// [`PayloadKind::Text`] that is not UTF-8 (the offset of the first bad byte) or has a NUL
    /// (its offset: the NUL-terminated form would end there).
    pub fn check(self, bytes: &[u8]) -> std::result::Result<(), String> {
        match self {
            PayloadKind::Words32 if !bytes.len().is_multiple_of(4) => Err(format!("is {} bytes, not a whole number of 32-bit words", bytes.len())),
            PayloadKind::Text => match std::str::from_utf8(bytes) {
                Err(e) => Err(format!("is not UTF-8 text: the byte at offset {} (0x{:02x}) starts no UTF-8 character", e.valid_up_to(), bytes[e.valid_up_to()])),
                Ok(text) => match text.find('\0') {
                    Some(at) => Err(format!("has a NUL byte at offset {at}, where its NUL-terminated form would end")),
                    None => Ok(()),
                },
            },
            PayloadKind::Words32 | PayloadKind::Bytes => Ok(()),
        }
    }

    /// The extension of the payload's copy under `OUT_DIR/mcpp/payloads/`: `spv`, `bin`, `txt`.
    pub fn copy_extension(self) -> &'static str {
        match self {
            PayloadKind::Words32 => "spv",
            PayloadKind::Bytes => "bin",
            PayloadKind::Text => "txt",
        }
    }

    /// The bytes of that copy, the file the Rust surface includes: the payload's bytes, and for
    /// [`PayloadKind::Text`] one NUL after them (the text and its C form are one copy).
    /// Borrowed (no second copy in memory) for every kind but text.
    pub fn copy_bytes(self, bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
        if self != PayloadKind::Text {
            return std::borrow::Cow::Borrowed(bytes);
        }
        let mut out = bytes.to_vec();
        out.push(0);
        std::borrow::Cow::Owned(out)
    }
}

/// One payload a rule hands the surface ([`crate::rules::RulePlan::payloads`]): named by the
/// surface ([`super::name_payloads`]) and written, checked against its kind, into every
/// language ([`super::generate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// The device source (or data file) it comes from, package-relative (`shaders/a/scale.comp`).
    pub source: String,
    /// The raw identifier (`scale_comp`); sanitised by the surface ([`super::names::identifier`]).
    pub identifier: String,
    /// The payload file, absolute: an output of the rule's actions (whose bytes the device phase
    /// verifies) or a file of the package; empty for a payload with no bytes
    /// ([`Payload::empty`]).
    pub path: PathBuf,
    /// What its bytes are.
    pub kind: PayloadKind,
    /// A sentence for the accessor's doc comment in every language (what it is for, e.g. the
    /// architecture a CUDA image is built for and where it loads); `None`: none.
    pub doc: Option<String>,
    /// What a CUDA image is built for: `sm_90` (a cubin), `compute_80` (PTX), or a fat binary's
    /// images (`sm_80,sm_90,compute_90`); `None` for any other payload. The surface groups the
    /// images of one source into its selection function and entry-name constants
    /// (`surface::cuda`).
    pub cuda: Option<String>,
    /// The kernels a CUDA source defines, as its rule read them without compiling (for a
    /// placeholder, whose image has no names to read): the surface's entry-name constants then
    /// exist in a build without CUDA too. Empty: none, or read from the built image.
    pub kernels: Vec<String>,
}

impl Payload {
    /// The payload with the kernel names `kernels` ([`Payload::kernels`]).
    pub fn with_kernels(self, kernels: Vec<String>) -> Payload {
        Payload { kernels, ..self }
    }
    /// The payload as a CUDA image built for `arch` ([`Payload::cuda`]).
    pub fn with_cuda(self, arch: impl Into<String>) -> Payload {
        Payload { cuda: Some(arch.into()), ..self }
    }
    /// The payload with `doc` as its accessor's doc sentence ([`Payload::doc`]).
    pub fn with_doc(self, doc: impl Into<String>) -> Payload {
        Payload { doc: Some(doc.into()), ..self }
    }
    /// A [`PayloadKind::Words32`] payload (SPIR-V).
    pub fn words(source: impl Into<String>, identifier: impl Into<String>, path: impl Into<PathBuf>) -> Payload {
        Payload { source: source.into(), identifier: identifier.into(), path: path.into(), kind: PayloadKind::Words32, doc: None, cuda: None, kernels: Vec::new() }
    }
    /// A [`PayloadKind::Bytes`] payload.
    pub fn bytes(source: impl Into<String>, identifier: impl Into<String>, path: impl Into<PathBuf>) -> Payload {
        Payload { source: source.into(), identifier: identifier.into(), path: path.into(), kind: PayloadKind::Bytes, doc: None, cuda: None, kernels: Vec::new() }
    }
    /// A payload of `kind` with no bytes (an empty path): the placeholder of a source this
    /// build does not compile ([`crate::rules::Rule::placeholders`]), so its accessor exists
    /// and hands out an empty payload (a text's `c_str` is then `""`).
    pub fn empty(source: impl Into<String>, identifier: impl Into<String>, kind: PayloadKind) -> Payload {
        Payload { source: source.into(), identifier: identifier.into(), path: PathBuf::new(), kind, doc: None, cuda: None, kernels: Vec::new() }
    }
    /// Whether this payload has no file: the placeholder of [`Payload::empty`].
    pub fn is_placeholder(&self) -> bool {
        self.path.as_os_str().is_empty()
    }
    /// A [`PayloadKind::Text`] payload.
    pub fn text(source: impl Into<String>, identifier: impl Into<String>, path: impl Into<PathBuf>) -> Payload {
        Payload { source: source.into(), identifier: identifier.into(), path: path.into(), kind: PayloadKind::Text, doc: None, cuda: None, kernels: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_refuses_what_it_cannot_hand_out() {
        assert_eq!(PayloadKind::Words32.check(&[3, 2, 0x23, 7]), Ok(()));
        assert_eq!(PayloadKind::Words32.check(&[1, 2, 3, 4, 5, 6, 7]), Err("is 7 bytes, not a whole number of 32-bit words".into()));
        assert_eq!(PayloadKind::Bytes.check(&[0, 0xff, 7]), Ok(()));
        assert_eq!(PayloadKind::Bytes.check(&[]), Ok(()));
        assert_eq!(PayloadKind::Text.check("ptx ∑\n".as_bytes()), Ok(()));
        assert_eq!(PayloadKind::Text.check(b"ab\xffc"), Err("is not UTF-8 text: the byte at offset 2 (0xff) starts no UTF-8 character".into()));
        assert_eq!(PayloadKind::Text.check(b"ab\0c"), Err("has a NUL byte at offset 2, where its NUL-terminated form would end".into()));
    }

    #[test]
    fn a_text_copy_carries_one_nul_and_the_others_are_the_bytes() {
        assert_eq!(&*PayloadKind::Text.copy_bytes(b"x"), b"x\0");
        assert_eq!(&*PayloadKind::Bytes.copy_bytes(b"x\0"), b"x\0");
        assert_eq!(&*PayloadKind::Words32.copy_bytes(&[1, 2, 3, 4]), [1, 2, 3, 4]);
        assert_eq!([PayloadKind::Words32, PayloadKind::Bytes, PayloadKind::Text].map(PayloadKind::copy_extension), ["spv", "bin", "txt"]);
    }
}
