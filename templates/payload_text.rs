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

/// The text and its NUL-terminated form from one included copy (the text and one NUL), at
/// compile time: a copy that is not that fails the build, never the program.
#[allow(dead_code)]
const fn text_payload(with_nul: &'static [u8], source: &'static str) -> TextPayload {
    let c_str = match core::ffi::CStr::from_bytes_with_nul(with_nul) {
        Ok(c_str) => c_str,
        Err(_) => panic!("cargo-mcpp: a text payload's copy is not its text and one NUL"),
    };
    let text = match with_nul.split_last() {
        Some((_, bytes)) => match core::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => panic!("cargo-mcpp: a text payload is not UTF-8"),
        },
        None => panic!("cargo-mcpp: a text payload's copy is empty"),
    };
    TextPayload { text, c_str, source }
}
