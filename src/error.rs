//! The one error type of cargo-mcpp, its kinds and the documented exit codes.
//!
//! Every refusal names what was wrong (the file and, for manifests, the key), why it is
//! refused, and the way out (`help`). Rendering follows nextest: one `error:` headline, the
//! detail lines, then `help:` lines.

use std::fmt;
use std::path::PathBuf;

/// What kind of failure an [`Error`] is; decides the exit code of `cargo mcpp`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The manifest (`[package.metadata.mcpp]`) is malformed or names an unknown key.
    Manifest,
    /// The accelerator string does not parse (see [`crate::config::accel`]).
    Accel,
    /// A source list problem: unclaimed device source, unknown extension, glob matching
    /// nothing, a constraint the build does not cover, two payloads with one name.
    Sources,
    /// A tool (compiler) could not be found or does not run.
    ToolNotFound,
    /// A device compiler ran and failed.
    ToolFailed,
    /// Reading or writing a file failed.
    Io,
    /// The command line of `cargo mcpp` is not understood (beyond what clap checks, e.g. a
    /// malformed `-p` glob): exit code 2, as clap's own usage errors.
    Usage,
}

/// A refusal or failure, with the file and manifest key it is about and the way out.
#[derive(Debug, Clone)]
pub struct Error {
    /// The kind, which decides the exit code.
    pub kind: ErrorKind,
    /// The headline, one line, no trailing period.
    pub message: String,
    /// Further lines (file lists, signatures, compiler output), printed indented.
    pub detail: Vec<String>,
    /// The file the error is about, when there is one.
    pub file: Option<PathBuf>,
    /// The manifest key (dotted, e.g. `package.metadata.mcpp.spirv.compiler`), when there is one.
    pub key: Option<String>,
    /// How to get out of it.
    pub help: Vec<String>,
    /// Further problems found in the same check (the validated plan reports every problem, not
    /// the first), printed after this one, each as an `error:`.
    pub also: Vec<Error>,
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind` with a one-line headline.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), detail: Vec::new(), file: None, key: None, help: Vec::new(), also: Vec::new() }
    }
    /// One error for all of `problems` (in order): the first, with the others in
    /// [`Error::also`]; `Ok(())` when there are none.
    ///
    /// # Errors
    /// The first problem, carrying the rest.
    pub fn all(mut problems: Vec<Error>) -> Result<()> {
        if problems.is_empty() {
            return Ok(());
        }
        let mut first = problems.remove(0);
        first.also.extend(problems);
        Err(first)
    }
    /// Every problem this error carries: itself and [`Error::also`] (flattened).
    pub fn problems(&self) -> usize {
        1 + self.also.iter().map(Error::problems).sum::<usize>()
    }
    /// Attach the file the error is about.
    pub fn file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }
    /// Attach the manifest key the error is about.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
    /// Add a detail line.
    pub fn detail(mut self, line: impl Into<String>) -> Self {
        self.detail.push(line.into());
        self
    }
    /// Add a help line (the way out).
    pub fn help(mut self, line: impl Into<String>) -> Self {
        self.help.push(line.into());
        self
    }
    /// An I/O failure on `path`.
    pub fn io(what: &str, path: &std::path::Path, err: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("{what} `{}`: {err}", path.display())).file(path)
    }
    /// The exit code `cargo mcpp` uses for this error (see [`exit_code`]).
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::ToolFailed => exit_code::BUILD_FAILED,
            ErrorKind::Io => exit_code::IO,
            ErrorKind::Usage => exit_code::USAGE,
            _ => exit_code::REFUSED,
        }
    }
}

/// A dotted manifest key as shown: each segment cut as [`crate::text::echo`] cuts a value (a
/// junk key of any length is a segment).
fn shown_key(key: &str) -> String {
    key.split('.').map(crate::text::echo).collect::<Vec<_>>().join(".")
}

/// Control characters other than the line breaks the layout itself uses are shown escaped,
/// whatever part of the error carries them: no user value reaches the terminal raw (an ESC
/// sequence, a carriage return overwriting the line). Long values are cut where they are
/// quoted, by [`crate::text::echo`].
fn shown(s: &str) -> String {
    s.split('\n').map(crate::text::escape_control).collect::<Vec<_>>().join("\n")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", shown(&self.message))?;
        match (&self.file, &self.key) {
            (Some(file), Some(key)) => write!(f, "\n  --> {} (key `{}`)", shown(&file.display().to_string()), shown_key(key))?,
            (Some(file), None) => write!(f, "\n  --> {}", shown(&file.display().to_string()))?,
            (None, Some(key)) => write!(f, "\n  --> key `{}`", shown_key(key))?,
            (None, None) => {}
        }
        for line in &self.detail {
            if line.is_empty() {
                writeln!(f)?;
            } else {
                write!(f, "\n  {}", shown(line))?;
            }
        }
        for line in &self.help {
            write!(f, "\nhelp: {}", shown(line))?;
        }
        for other in &self.also {
            write!(f, "\n\nerror: {other}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// The exit codes of `cargo mcpp`, documented in the guide ("Troubleshooting").
pub mod exit_code {
    /// Everything built.
    pub const SUCCESS: i32 = 0;
    /// A device compiler failed (its output and command line are printed).
    pub const BUILD_FAILED: i32 = 1;
    /// The command line was not understood (clap's own usage errors).
    pub const USAGE: i32 = 2;
    /// The input was refused before anything compiled: manifest, accelerator string,
    /// sources, a missing tool.
    pub const REFUSED: i32 = 3;
    /// Reading or writing a file failed.
    pub const IO: i32 = 4;
    /// The device phase succeeded and `cargo build` then failed (its own output says why),
    /// whatever code cargo exited with (cargo's own convention for a failed build).
    pub const CARGO_FAILED: i32 = 101;
}
