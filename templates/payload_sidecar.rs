
/// A sidecar payload that could not be read: the path tried and why. Sidecar payloads are files
/// beside the executable (`mcpp-data/<package>/...`), or below `MCPP_SIDECAR_DIR` when set.
#[allow(dead_code)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SidecarError {
    /// The path that was tried.
    pub path: std::path::PathBuf,
    /// Why it could not be read.
    pub message: String,
}

impl core::fmt::Display for SidecarError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "cannot read the sidecar payload {}: {} (it is read beside the executable, or below MCPP_SIDECAR_DIR when set)", self.path.display(), self.message)
    }
}

impl std::error::Error for SidecarError {}

/// A bytes sidecar: any bytes are its bytes.
#[allow(dead_code)]
fn sidecar_bytes(_bytes: &[u8]) -> Result<(), String> {
    Ok(())
}

/// A words sidecar: a whole number of 32-bit words, else the error (a file changed after the build).
#[allow(dead_code)]
fn sidecar_words(bytes: &[u8]) -> Result<(), String> {
    match bytes.len() % 4 {
        0 => Ok(()),
        _ => Err(format!("it is {} bytes, not a whole number of 32-bit words (the file was changed after the build; `cargo build` writes it again)", bytes.len())),
    }
}

/// A text sidecar: UTF-8 without NUL, else the error (a file changed after the build).
#[allow(dead_code)]
fn sidecar_text(bytes: &[u8]) -> Result<(), String> {
    match core::str::from_utf8(bytes) {
        Err(e) => Err(format!("it is not UTF-8 text ({e}; the file was changed after the build; `cargo build` writes it again)")),
        Ok(text) if text.contains('\0') => Err("it holds a NUL, which a text payload cannot (the file was changed after the build; `cargo build` writes it again)".to_string()),
        Ok(_) => Ok(()),
    }
}

/// Read the sidecar file `relative` (below the executable's directory, or `MCPP_SIDECAR_DIR`)
/// once into 16-byte aligned memory kept for the program's life, with one NUL after its bytes;
/// `check` (`sidecar_bytes`, `sidecar_words`, `sidecar_text`: the payload's kind) refuses
/// bytes that are not of the kind, as an error naming the file, never a panic.
#[allow(dead_code, unsafe_code)]
fn sidecar_read(relative: &str, check: fn(&[u8]) -> Result<(), String>) -> Result<&'static [u8], SidecarError> {
    let dir = match std::env::var_os("MCPP_SIDECAR_DIR").filter(|d| !d.is_empty()) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::current_exe().ok().and_then(|e| e.parent().map(std::path::Path::to_path_buf)).unwrap_or_default(),
    };
    let path = relative.split('/').fold(dir, |p, c| p.join(c));
    let bytes = std::fs::read(&path).map_err(|e| SidecarError { path: path.clone(), message: e.to_string() })?;
    check(&bytes).map_err(|message| SidecarError { path: path.clone(), message })?;
    let mut blocks = vec![0u128; bytes.len() / 16 + 1];
    // SAFETY: `blocks` holds at least `bytes.len() + 1` bytes; u8 has no alignment or validity needs.
    let store: &'static mut [u8] = unsafe { core::slice::from_raw_parts_mut(Box::leak(blocks.drain(..).collect::<Box<[u128]>>()).as_mut_ptr().cast::<u8>(), bytes.len() + 1) };
    store[..bytes.len()].copy_from_slice(&bytes);
    store[bytes.len()] = 0;
    Ok(store)
}
