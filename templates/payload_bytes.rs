/// A payload of bytes (a cubin, a fatbin, any data) compiled into the binary, 16-byte aligned.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytesPayload {
    /// The bytes, 16-byte aligned, e.g. the image for `cuModuleLoadData`.
    pub bytes: &'static [u8],
    /// The file it was made from, relative to the package root.
    pub source: &'static str,
}
