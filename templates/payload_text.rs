/// A text payload (PTX, any UTF-8 text) compiled into the binary once, with a NUL after it.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextPayload {
    /// The text, without the NUL.
    pub text: &'static str,
    /// The same bytes, NUL-terminated, e.g. the PTX image for `cuModuleLoadData`.
    pub c_str: &'static core::ffi::CStr,
    /// The file it was made from, relative to the package root.
    pub source: &'static str,
}

#[allow(dead_code)]
impl TextPayload {
    /// Whether it has no text: a payload this build's accelerator set left out (its accessor's
    /// doc says so), or an empty file.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// The text and its NUL-terminated form from one copy (the text and one NUL), without reading
/// the text: the build checked it (UTF-8, no NUL but the last) before it wrote the copy, and a
/// header accessor checks the copy's length and last byte at compile time, so a multi-megabyte
/// payload costs rustc what `include_bytes!` costs.
#[allow(dead_code, unsafe_code)]
fn text_payload(with_nul: &'static [u8], source: &'static str) -> TextPayload {
    assert!(with_nul.last() == Some(&0), "cargo-mcpp: a text payload's copy is not its text and one NUL");
    let text = &with_nul[..with_nul.len() - 1];
    // SAFETY: the build wrote the copy from bytes it checked to be UTF-8 without NUL, and put one
    // NUL after them (checked above); the bytes are read-only and alive for the program.
    unsafe { TextPayload { text: core::str::from_utf8_unchecked(text), c_str: core::ffi::CStr::from_bytes_with_nul_unchecked(with_nul), source } }
}
