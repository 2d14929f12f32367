//! Static archives, written in process (LLVM's archive writer as ported to Rust by the
//! rust-lang project, `ar_archive_writer`, the one rustc uses): the archive of a lane's objects
//! with its symbol index, deterministic (member times, owners and modes zeroed, like `ar D`).
//!
//! Why not the `ar` the `cc` crate would choose: GNU ar loads every linker plugin under
//! `bfd-plugins` (LLVMgold for each installed LLVM) to index an archive: 56-60 ms per run warm,
//! ~210 ms cold, on a machine with clang installed (measured with 32 CUDA objects), after the
//! last compile of every build that changes an object, plus a `--version` probe; the bytes
//! written here are the same kind of archive every linker reads, and no tool has to be found.

use crate::error::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The archive format a target's linker reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArchiveFormat {
    /// System V / GNU `ar` with a GNU symbol table (Linux, the BSDs, most ELF targets).
    Gnu,
    /// BSD `ar` with a Darwin symbol table (Apple targets).
    Darwin,
    /// COFF import/static library layout (MSVC targets).
    Coff,
}

impl ArchiveFormat {
    /// The format for a target triple: `*-apple-*` Darwin, `*-msvc` COFF, otherwise GNU.
    pub fn for_target(target: &str) -> ArchiveFormat {
        if target.contains("apple") {
            ArchiveFormat::Darwin
        } else if target.ends_with("msvc") {
            ArchiveFormat::Coff
        } else {
            ArchiveFormat::Gnu
        }
    }
    fn kind(self) -> ar_archive_writer::ArchiveKind {
        match self {
            ArchiveFormat::Gnu => ar_archive_writer::ArchiveKind::Gnu,
            ArchiveFormat::Darwin => ar_archive_writer::ArchiveKind::Darwin,
            ArchiveFormat::Coff => ar_archive_writer::ArchiveKind::Coff,
        }
    }
}

/// What enters the fingerprint of an archive action in place of a tool's path and version.
pub fn writer_identity(format: ArchiveFormat) -> String {
    format!("cargo-mcpp {} archive writer (ar_archive_writer 0.5), {format:?}", env!("CARGO_PKG_VERSION"))
}

/// Write the archive of `members` (in order; each named by its file name) to `output`,
/// atomically and only if its bytes change.
///
/// # Errors
/// [`ErrorKind::ToolFailed`] when a member cannot be read or the archive cannot be written,
/// naming the file.
pub fn write(format: ArchiveFormat, members: &[PathBuf], output: &Path) -> Result<()> {
    let mut contents = Vec::with_capacity(members.len());
    for m in members {
        let bytes = std::fs::read(m).map_err(|e| Error::new(ErrorKind::ToolFailed, format!("cannot read the archive member `{}`: {e}", m.display())))?;
        let name = m.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        contents.push((name, bytes));
    }
    let new_members: Vec<ar_archive_writer::NewArchiveMember<'_>> =
        contents.iter().map(|(name, bytes)| ar_archive_writer::NewArchiveMember::new(bytes.as_slice(), &ar_archive_writer::DEFAULT_OBJECT_READER, name.clone())).collect();
    let mut out = std::io::Cursor::new(Vec::new());
    ar_archive_writer::write_archive_to_stream(&mut out, &new_members, format.kind(), false, None)
        .map_err(|e| Error::new(ErrorKind::ToolFailed, format!("cannot write the archive `{}`: {e}", output.display())))?;
    crate::engine::fingerprint::write_if_changed(output, &out.into_inner())?;
    Ok(())
}
