
/// The bytes between two symbols of the generated assembly (object storage), and `extra` more
/// (a text's NUL, which lies after its end symbol).
#[allow(dead_code, unsafe_code)]
fn object_bytes(begin: *const u8, end: *const u8, extra: usize) -> &'static [u8] {
    // SAFETY: `begin` and `end` bracket one payload's bytes in a read-only section of the
    // generated assembly (`.incbin`, followed by the NUL of a text), alive for the whole program.
    unsafe { core::slice::from_raw_parts(begin, end.offset_from(begin) as usize + extra) }
}

/// A words payload's bytes as 32-bit words (little-endian targets: the SPIR-V byte order).
#[allow(dead_code, unsafe_code)]
fn object_words(bytes: &'static [u8]) -> &'static [u32] {
    assert!(bytes.as_ptr() as usize % 4 == 0 && bytes.len() % 4 == 0, "cargo-mcpp: a words payload is not aligned whole words");
    // SAFETY: aligned (`.balign 16`, or the sidecar reader's 16-byte allocation) and a whole
    // number of words (checked above and by the build), read-only and alive for the program.
    unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<u32>(), bytes.len() / 4) }
}
