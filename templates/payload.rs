/// A device payload as the device API wants it: the SPIR-V words, 4-byte aligned and
/// compiled into the binary, with their size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload {
    /// The SPIR-V words, e.g. for `vk::ShaderModuleCreateInfo::code`.
    pub code: &'static [u32],
    /// The size in bytes (`code.len() * 4`), e.g. `VkShaderModuleCreateInfo::codeSize`.
    pub size_bytes: usize,
    /// The device source it was compiled from, relative to the package root.
    pub source: &'static str,
}

/// Little-endian bytes to words at compile time: safe, aligned, no copy at run time.
#[allow(dead_code)]
const fn words<const N: usize>(bytes: &[u8]) -> [u32; N] {
    let mut out = [0u32; N];
    let mut i = 0;
    while i < N {
        out[i] = u32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
        i += 1;
    }
    out
}
