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

#[allow(dead_code)]
impl Payload {
    /// Whether it has no words: a shader this build's accelerator set left out (its accessor's
    /// doc says so).
    pub fn is_empty(&self) -> bool {
        self.size_bytes == 0
    }
}

/// Included bytes on a 16-byte boundary, at no run-time cost: the bytes of a header words or
/// bytes payload (unused under object and sidecar storage).
#[allow(dead_code)]
#[repr(C, align(16))]
struct AlignedBytes<T: ?Sized> {
    bytes: T,
}

/// A header words payload's included bytes read as 32-bit words in place, with no copy and no
/// compile-time conversion (little-endian targets: SPIR-V's byte order is the target's).
#[cfg(target_endian = "little")]
#[allow(dead_code, unsafe_code)]
fn header_words(aligned: &'static AlignedBytes<[u8]>) -> &'static [u32] {
    let bytes = &aligned.bytes;
    // SAFETY: `AlignedBytes` puts the bytes on a 16-byte boundary (so 4-aligned), the length is
    // rounded down to whole words (the build refuses a words payload that is not whole words),
    // every bit pattern is a valid u32, and the static is read-only and alive for the program.
    unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<u32>(), bytes.len() / 4) }
}

/// Little-endian bytes to words at compile time, for big-endian targets only (the words must be
/// swapped there, so they are a converted copy; const evaluation of a large payload is slow and
/// rustc stops it past a few MiB: use object storage for large words payloads on such targets).
#[cfg(not(target_endian = "little"))]
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
