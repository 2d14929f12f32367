/// A payload of bytes (a cubin, a fatbin, any data) compiled into the binary, 16-byte aligned.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytesPayload {
    /// The bytes, 16-byte aligned, e.g. the image for `cuModuleLoadData`.
    pub bytes: &'static [u8],
    /// The file it was made from, relative to the package root.
    pub source: &'static str,
}

#[allow(dead_code)]
impl BytesPayload {
    /// Whether it has no bytes: a payload this build's accelerator set left out (its
    /// accessor's doc says so), or an empty file.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}
