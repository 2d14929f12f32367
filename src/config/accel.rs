//! The accelerator set: `"cuda12.9+{sm_80,sm_90} ptx>=90, vulkan1.2"` parsed into one typed value.
//!
//! Grammar: a comma-separated SET of entries;
//! commas inside `{}` do not split; inside one entry a space separates modifiers.
//!
//! ```text
//! set      := ""  |  entry ("," entry)*
//! entry    := backend [version] ["+" "{" arch ("," arch)* "}"] (" "+ modifier)*
//! backend  := "cuda" | "hip" | "sycl" | "vulkan" | "ascend" | name of a registered rule's backend
//! version  := digit (digit | ".")*
//! arch     := (alnum | "_" | "-" | ".")+          e.g. sm_90, sm_90f, gfx942, dav-c220, native
//! modifier := ("ptx" | "floor") ">=" (alnum | "." | "_")+
//! ```
//!
//! The parser is pure (no I/O) and total: any input gives `Ok` or an [`AccelError`] carrying
//! the byte position and what was expected; it never panics (a proptest in this file shows it).
//! Every rule reads its own entry with [`AccelSet::entry`].

use crate::error::{Error, ErrorKind};
use std::fmt;

/// A backend an accelerator entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Backend {
    /// NVIDIA CUDA (`.cu`), compute capabilities `sm_XX`.
    Cuda,
    /// HIP (`.hip`); borrows its device from a `cuda` entry or names AMD `gfx` targets.
    Hip,
    /// SYCL (`.sycl`); borrows its device from a `cuda`/`hip` entry.
    Sycl,
    /// Vulkan: SPIR-V shaders (GLSL, HLSL, Slang); the version picks the SPIR-V target environment.
    Vulkan,
    /// Huawei Ascend C (`.asc`), Da Vinci architectures `dav-cXXX`.
    Ascend,
    /// A backend no built-in rule serves (`metal`): lowercase ASCII letters, parsed for a rule
    /// a build script registers ([`crate::rules::external`]); validation refuses it when no
    /// rule of the build serves it.
    Other(&'static str),
}

impl Backend {
    /// Every backend, in the order the cfg values are declared.
    pub const ALL: [Backend; 5] = [Backend::Cuda, Backend::Hip, Backend::Sycl, Backend::Vulkan, Backend::Ascend];

    /// The spelling in the accelerator string and in `cfg(mcpp_accel = "...")`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cuda => "cuda",
            Backend::Hip => "hip",
            Backend::Sycl => "sycl",
            Backend::Vulkan => "vulkan",
            Backend::Ascend => "ascend",
            Backend::Other(name) => name,
        }
    }

    /// The backend spelt `name`: a built-in one, else [`Backend::Other`] when `name` is a
    /// backend's shape (lowercase ASCII letters); `None` otherwise.
    pub fn named(name: &str) -> Option<Backend> {
        if let Some(b) = Backend::ALL.into_iter().find(|b| b.name() == name) {
            return Some(b);
        }
        let shaped = !name.is_empty() && name.bytes().all(|c| c.is_ascii_lowercase());
        shaped.then(|| Backend::Other(intern(name)))
    }

    /// Whether a built-in rule serves it.
    pub fn is_builtin(self) -> bool {
        !matches!(self, Backend::Other(_))
    }
}

/// `name` as a `&'static str`, kept once per distinct name for the process (a backend's name
/// is short, and a process names few).
fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<std::collections::BTreeSet<&'static str>> = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which word a portable-form floor was written with (`ptx>=` is CUDA's, `floor>=` is neutral).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorWord {
    /// `ptx>=N`
    Ptx,
    /// `floor>=N`
    Floor,
}

/// One entry of the set: `cuda12.9+{sm_80,sm_90} ptx>=90`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccelEntry {
    /// The backend, e.g. [`Backend::Cuda`].
    pub backend: Backend,
    /// The version as written (`"12.9"`, `"1.2"`), `None` when bare (`vulkan`, `sycl`).
    pub version: Option<String>,
    /// The architectures inside `+{...}`, in the order written; empty when there is no `+{}`.
    pub archs: Vec<String>,
    /// The portable-form floor (`ptx>=90` / `floor>=1.4`), as written after `>=`.
    pub floor: Option<String>,
    /// Which word the floor was written with.
    pub floor_word: Option<FloorWord>,
}

impl AccelEntry {
    /// The version split into numbers (`"12.9"` -> `[12, 9]`); empty when bare.
    pub fn version_numbers(&self) -> Vec<u64> {
        self.version.as_deref().map(version_numbers).unwrap_or_default()
    }

    /// Whether this build entry covers the constraint entry `want` (same backend, version at
    /// least `want`'s, every architecture of `want` covered): an architecture is covered when
    /// named, when a family target (`sm_90f`) of the same major and an equal-or-lower minor is
    /// named, or when the portable floor is at or below it; an architecture with no number
    /// compares by equality.
    pub fn covers(&self, want: &AccelEntry) -> bool {
        if self.backend != want.backend {
            return false;
        }
        if want.version.is_some() && self.version.is_some() && self.version_numbers() < want.version_numbers() {
            return false;
        }
        want.archs.iter().all(|a| self.covers_arch(a))
    }

    fn covers_arch(&self, arch: &str) -> bool {
        if self.archs.iter().any(|a| a == arch) {
            return true;
        }
        let Some(n) = arch_number(arch) else { return false };
        let family = self.archs.iter().filter_map(|a| a.strip_suffix('f')).filter_map(arch_number);
        for f in family {
            if f / 10 == n / 10 && f <= n {
                return true;
            }
        }
        matches!(self.floor.as_deref().and_then(arch_number), Some(floor) if floor <= n)
    }
}

/// The digits of an architecture as a number (`sm_89` -> 89, `gfx942` -> 942); `None` if none.
pub fn arch_number(arch: &str) -> Option<u64> {
    let digits: String = arch.chars().filter(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    digits.parse().ok()
}

fn version_numbers(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

impl fmt::Display for AccelEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.backend)?;
        if let Some(v) = &self.version {
            write!(f, "{v}")?;
        }
        if !self.archs.is_empty() {
            write!(f, "+{{{}}}", self.archs.join(","))?;
        }
        if let (Some(floor), Some(word)) = (&self.floor, self.floor_word) {
            let w = if word == FloorWord::Ptx { "ptx" } else { "floor" };
            write!(f, " {w}>={floor}")?;
        }
        Ok(())
    }
}

/// The accelerator set of one build; empty means "no accelerator" (`--no-accel`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccelSet {
    /// The entries in the order written; at most one per backend.
    pub entries: Vec<AccelEntry>,
}

impl AccelSet {
    /// Parse an accelerator string; see the module docs for the grammar.
    ///
    /// # Errors
    /// [`AccelError`] with the byte position and what was expected there.
    pub fn parse(text: &str) -> Result<AccelSet, AccelError> {
        Parser { text, pos: 0 }.set()
    }
    /// The empty set.
    pub fn none() -> AccelSet {
        AccelSet::default()
    }
    /// Whether the set names no backend.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// The entry for `backend`, when the set names it.
    pub fn entry(&self, backend: Backend) -> Option<&AccelEntry> {
        self.entries.iter().find(|e| e.backend == backend)
    }
    /// Whether every entry of `constraint` is covered by an entry of this set.
    pub fn covers(&self, constraint: &AccelSet) -> bool {
        constraint.entries.iter().all(|w| self.entry(w.backend).is_some_and(|e| e.covers(w)))
    }
    /// Whether the set names every backend of `constraint` (coverage aside).
    pub fn names_backends_of(&self, constraint: &AccelSet) -> bool {
        constraint.entries.iter().all(|w| self.entry(w.backend).is_some())
    }
}

impl fmt::Display for AccelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// A malformed accelerator string: where and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccelError {
    /// The string as given.
    pub text: String,
    /// Byte offset of the problem (0-based); equal to `text.len()` at end of input.
    pub position: usize,
    /// What the parser expected there, e.g. "`}` closing the architecture list".
    pub expected: String,
    /// What was found there when it is more than the character at `position` (a number too
    /// large: "`99999999`, a number too large"), already escaped and cut; `None` shows that
    /// character (or the end of the string).
    pub found: Option<String>,
}

impl fmt::Display for AccelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let column = self.text[..self.position.min(self.text.len())].chars().count() + 1;
        let found = match (&self.found, self.text[self.position.min(self.text.len())..].chars().next()) {
            (Some(found), _) => found.clone(),
            (None, Some(c)) => format!("`{c}`"),
            (None, None) => "the end of the string".to_string(),
        };
        // Long inputs are shown as a window of at most `text::ECHO_MAX` characters around the
        // position, control characters escaped (one helper for every echo of user input).
        let (shown, caret) = crate::text::echo_window(&self.text, column - 1);
        let found = crate::text::echo(&found);
        write!(f, "malformed accelerator `{shown}`: expected {} at column {column}, found {found}", self.expected)?;
        write!(f, "\n    {shown}\n    {}^", " ".repeat(caret))
    }
}

impl std::error::Error for AccelError {}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

const BACKENDS_EXPECTED: &str = "a backend (`cuda`, `hip`, `sycl`, `vulkan`, `ascend`, or a registered rule's: lowercase letters)";

impl Parser<'_> {
    fn err<T>(&self, expected: impl Into<String>) -> Result<T, AccelError> {
        Err(AccelError { text: self.text.to_string(), position: self.pos, expected: expected.into(), found: None })
    }
    /// [`Parser::err`] for the number of `len` digits at the position, which is too large.
    fn too_large<T>(&self, expected: impl Into<String>, len: usize) -> Result<T, AccelError> {
        let digits = &self.text[self.pos..self.pos + len];
        Err(AccelError { text: self.text.to_string(), position: self.pos, expected: expected.into(), found: Some(format!("`{}`, a number too large", crate::text::echo(digits))) })
    }
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.bump();
        }
    }
    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(&f) {
            self.bump();
        }
        &self.text[start..self.pos]
    }

    /// `digits ["." digits]`, each part at most 6 digits (`12.9`, `1.2`, `90`, `2020`).
    fn number(&mut self, what: &str, allow_minor: bool) -> Result<String, AccelError> {
        let start = self.pos;
        let major = self.take_while(|c| c.is_ascii_digit()).len();
        if major > 6 {
            self.pos = start;
            return self.too_large(format!("{what} as a number of at most 6 digits"), major);
        }
        if allow_minor && self.peek() == Some('.') {
            self.bump();
            let minor_start = self.pos;
            let minor = self.take_while(|c| c.is_ascii_digit()).len();
            self.pos = minor_start;
            if minor == 0 {
                return self.err(format!("a digit in {what} (`major.minor`)"));
            }
            if minor > 6 {
                return self.too_large(format!("the minor part of {what} as a number of at most 6 digits"), minor);
            }
            self.pos = minor_start + minor;
            if self.peek() == Some('.') {
                return self.err(format!("the end of {what}: it is `major.minor`, e.g. `12.9` or `1.2`"));
            }
        }
        Ok(self.text[start..self.pos].to_string())
    }

    fn set(mut self) -> Result<AccelSet, AccelError> {
        let mut set = AccelSet::default();
        self.skip_blanks();
        if self.peek().is_none() {
            return Ok(set);
        }
        loop {
            self.skip_blanks();
            let at = self.pos;
            let entry = self.entry()?;
            if set.entry(entry.backend).is_some() {
                self.pos = at;
                return self.err(format!("each backend once (`{}` is already in the set)", entry.backend));
            }
            set.entries.push(entry);
            self.skip_blanks();
            match self.peek() {
                None => return Ok(set),
                Some(',') => {
                    self.bump();
                }
                Some(_) => return self.err("`,` between entries or a modifier (`ptx>=N`, `floor>=N`) after a space"),
            }
        }
    }

    fn entry(&mut self) -> Result<AccelEntry, AccelError> {
        let start = self.pos;
        let word = self.take_while(|c| c.is_ascii_alphabetic()).to_string();
        // A word that starts with a built-in backend's name but goes on is a typo of it
        // (`vulkanx`), not another backend.
        let typo = Backend::ALL.iter().any(|b| word.starts_with(b.name()) && word != b.name());
        // A letter outside ASCII goes on the word too (`vülkan`): no backend.
        let goes_on = self.peek().is_some_and(|c| c.is_alphabetic());
        let backend = if typo || goes_on { None } else { Backend::named(&word) };
        let Some(backend) = backend else {
            // Point at the first character that stops the word from being a backend:
            // `vulkanx` -> the `x`, `vülkan` -> the `ü`, `Vulkan` -> the `V`.
            if let Some(b) = Backend::ALL.iter().find(|b| word.starts_with(b.name())) {
                self.pos = start + b.name().len();
                return self.err(format!("a version, `+{{...}}`, a modifier or `,` after `{b}`"));
            }
            let common = |b: &Backend| b.name().bytes().zip(word.bytes()).take_while(|(x, y)| x == y).count();
            self.pos = start + Backend::ALL.iter().map(common).max().unwrap_or(0);
            return self.err(BACKENDS_EXPECTED);
        };
        let version = match self.peek() {
            Some(c) if c.is_ascii_digit() => Some(self.number("the version", true)?),
            _ => None,
        };
        let mut archs = Vec::new();
        if self.peek() == Some('+') {
            self.bump();
            if self.peek() != Some('{') {
                return self.err("`{` opening the architecture list after `+`");
            }
            self.bump();
            // Seen names in a hash set: the duplicate check is linear in the list's length
            // (a `Vec::contains` per name was quadratic: 60,000 names took 17 s).
            let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
            loop {
                self.skip_blanks();
                let start = self.pos;
                let text = self.text;
                let len = self.take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')).len();
                let arch = &text[start..start + len];
                if arch.is_empty() {
                    return self.err("an architecture name (e.g. `sm_90`, `gfx942`, `dav-c220`, `native`)");
                }
                if !seen.insert(arch) {
                    self.pos = start;
                    return self.err(format!("each architecture once (`{}` is already listed)", crate::text::echo(arch)));
                }
                archs.push(arch.to_string());
                self.skip_blanks();
                match self.peek() {
                    Some(',') => {
                        self.bump();
                    }
                    Some('}') => {
                        self.bump();
                        break;
                    }
                    _ => return self.err("`,` or `}` closing the architecture list"),
                }
            }
        }
        let (mut floor, mut floor_word) = (None, None);
        loop {
            let before = self.pos;
            self.skip_blanks();
            if self.pos == before || !self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                break;
            }
            let mstart = self.pos;
            let word = self.take_while(|c| c.is_ascii_alphabetic()).to_string();
            let which = match word.as_str() {
                "ptx" => FloorWord::Ptx,
                "floor" => FloorWord::Floor,
                _ => {
                    self.pos = mstart;
                    return self.err("a modifier `ptx>=N` or `floor>=N`, or `,` before the next entry");
                }
            };
            if !self.text[self.pos..].starts_with(">=") {
                return self.err(format!("`>=` after `{word}`"));
            }
            if which == FloorWord::Ptx && backend != Backend::Cuda {
                self.pos = mstart;
                return self.err(format!("`floor>=N` (`ptx>=` is CUDA's word; this entry is `{backend}`)"));
            }
            if floor.is_some() {
                self.pos = mstart;
                return self.err("a single floor: `ptx>=` and `floor>=` are two spellings of one portable-form floor, given once per entry");
            }
            self.pos += 2;
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return self.err(format!("a number after `{word}>=` (e.g. `{word}>=90`)"));
            }
            let value = self.number(&format!("the `{word}>=` value"), true)?;
            floor = Some(value);
            floor_word = Some(which);
        }
        Ok(AccelEntry { backend, version, archs, floor, floor_word })
    }
}

/// The manifest key of the accelerator set.
pub const ACCEL_KEY: &str = "package.metadata.mcpp.accel";

/// Where the text of an accelerator set came from, for its refusals: `--accel` (or the
/// builder), the environment variable `cargo mcpp build` sets, or the manifest's `accel` key.
/// Computed once per build ([`crate::plan::accel::resolve_accel_with_origin`]) and carried with the set: a rule's
/// refusal of its entry is keyed with it where the rule makes it ([`AccelOrigin::key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccelOrigin {
    /// How a headline names it: `--accel`, `the environment variable MCPP_ACCEL`, or the
    /// manifest's path.
    pub named: String,
    /// `path:line:col` of the manifest's `accel` key, when the set came from it.
    pub file: Option<String>,
    /// The key (`package.metadata.mcpp.accel`), when the set came from the manifest.
    pub key: Option<&'static str>,
    /// How a rule's refusal names the origin when it is not the manifest: `--accel "<set>"`,
    /// or `MCPP_ACCEL="<set>"` (set by `cargo mcpp build --accel`); `None` for the manifest.
    pub elsewhere: Option<String>,
}

impl AccelOrigin {
    /// A refusal of the set from this origin: "malformed accelerator set from `<origin>`", the
    /// `detail` lines, the origin's file and key when it is the manifest, and `help`.
    pub fn refusal(&self, detail: impl Into<String>) -> Error {
        let mut err = Error::new(ErrorKind::Accel, format!("malformed accelerator set from {}", self.named)).detail(detail);
        if let Some(f) = &self.file {
            err = err.file(f);
        }
        if let Some(k) = self.key {
            err = err.key(k);
        }
        err
    }

    /// `e`, a rule's refusal of its entry of the set (made whole: message, details, help),
    /// keyed where the set came from: the manifest's `accel` key (and `file`, when given), or,
    /// for a set from `--accel` or `MCPP_ACCEL`, no file or key and a line naming that origin.
    /// `None` (a caller without an origin): the manifest's.
    pub fn key(origin: Option<&AccelOrigin>, e: Error, file: Option<&std::path::Path>) -> Error {
        match origin.and_then(|o| o.elsewhere.as_deref()) {
            Some(elsewhere) => e.detail(format!("(the accelerator set came from {elsewhere})")),
            None => match file {
                Some(f) => e.file(f).key(ACCEL_KEY),
                None => e.key(ACCEL_KEY),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> AccelSet {
        AccelSet::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn the_documented_forms_parse() {
        assert!(ok("").is_empty());
        assert!(ok("  ").is_empty());
        let v = ok("vulkan");
        assert_eq!(v.entry(Backend::Vulkan).unwrap().version, None);
        assert_eq!(ok("vulkan1.2").entry(Backend::Vulkan).unwrap().version.as_deref(), Some("1.2"));
        let c = ok("cuda12.9+{sm_80,sm_90}");
        let e = c.entry(Backend::Cuda).unwrap();
        assert_eq!(e.version.as_deref(), Some("12.9"));
        assert_eq!(e.archs, ["sm_80", "sm_90"]);
        let h = ok("hip, cuda12.9+{sm_89}");
        assert!(h.entry(Backend::Hip).is_some());
        assert_eq!(h.entry(Backend::Cuda).unwrap().archs, ["sm_89"]);
        assert!(ok("sycl").entry(Backend::Sycl).is_some());
        assert_eq!(ok("ascend8.5+{dav-c220}").entry(Backend::Ascend).unwrap().archs, ["dav-c220"]);
        let p = ok("cuda12.9+{sm_89} ptx>=89");
        assert_eq!(p.entries[0].floor.as_deref(), Some("89"));
        let f = ok("vulkan1.3+{spirv1.6} floor>=1.4, cuda12.8+{sm_80,sm_90f} ptx>=90");
        assert_eq!(f.entries.len(), 2);
        assert_eq!(f.entry(Backend::Vulkan).unwrap().archs, ["spirv1.6"]);
        assert_eq!(ok("cuda12.9 ptx>=89").entries[0].version.as_deref(), Some("12.9"));
        assert_eq!(ok("sycl2020+{spir64,nvptx64-sm_89}").entries[0].archs, ["spir64", "nvptx64-sm_89"]);
    }

    #[test]
    fn display_round_trips() {
        for s in ["cuda12.9+{sm_80,sm_90} ptx>=90", "hip, cuda12.9+{sm_89}", "vulkan1.2", "ascend8.5+{dav-c220}"] {
            assert_eq!(ok(s).to_string(), s);
        }
    }

    #[test]
    fn a_backend_no_builtin_rule_serves_parses_for_a_registered_rule() {
        let set = AccelSet::parse("vulkan1.2, metal3+{apple9}").unwrap();
        let metal = set.entries.iter().find(|e| e.backend.name() == "metal").expect("the metal entry");
        assert_eq!(metal.backend, Backend::Other("metal"));
        assert!(!metal.backend.is_builtin() && Backend::Vulkan.is_builtin());
        assert_eq!(metal.version.as_deref(), Some("3"));
        assert_eq!(Backend::named("vulkan"), Some(Backend::Vulkan));
        assert_eq!(Backend::named("Metal"), None);
    }

    #[test]
    fn malformed_strings_name_position_and_expectation() {
        let cases = [
            ("cuda12.9+{sm_90", 15, "`,` or `}`"),
            ("Vulkan1.2", 0, "a backend"),
            ("vulkanx", 6, "a version, `+{...}`"),
            ("vulkan1.2.3", 9, "the end of the version"),
            ("vulkan99999999999", 6, "at most 6 digits"),
            ("vulkan99.99999999999999999999", 9, "the minor part of the version as a number of at most 6 digits"),
            ("cuda12.9 ptx>=abc", 14, "a number after `ptx>=`"),
            ("vulkan ptx>=89", 7, "`floor>=N` (`ptx>=` is CUDA's word"),
            ("cuda12.9+{sm_80} ptx>=80 floor>=70", 25, "a single floor"),
            ("open-cl", 4, "`,` between entries"),
            ("cuda12.9+sm_90", 9, "`{` opening"),
            ("cuda12.9+{}", 10, "an architecture name"),
            ("cuda, cuda12.9", 6, "each backend once"),
            ("vulkan1.2,", 10, "a backend"),
            ("cuda12.9+{sm_90} ptx89", 20, "`>=` after `ptx`"),
            ("cuda12.9+{sm_90} fast", 17, "a modifier"),
            ("vulkan1..2", 8, "a digit"),
            ("v\u{fc}lkan", 1, "a backend"),
            ("cuda12.9+{sm_90}x", 16, "`,` between entries"),
        ];
        for (text, pos, expected) in cases {
            let e = AccelSet::parse(text).expect_err(text);
            assert_eq!(e.position, pos, "{text}: {e}");
            assert!(e.expected.contains(expected), "{text}: {e}");
        }
        let shown = AccelSet::parse("cuda12.9+{sm_90").unwrap_err().to_string();
        assert!(shown.contains("column 16"), "{shown}");
        assert!(shown.contains("found the end of the string"), "{shown}");
    }

    #[test]
    fn long_architecture_lists_and_names_are_checked_linearly_and_echoed_short() {
        // 60,000 distinct names: the duplicate check is a hash-set insert per name (a quadratic
        // scan took 17 s here); a duplicate at the end is found at its own position.
        let names: Vec<String> = (0..60_000).map(|i| format!("sm_{i}")).collect();
        let text = format!("cuda13.0+{{{}}}", names.join(","));
        assert_eq!(ok(&text).entries[0].archs.len(), 60_000);
        let dup = format!("cuda13.0+{{{},sm_7}}", names.join(","));
        let e = AccelSet::parse(&dup).unwrap_err();
        assert_eq!(e.position, dup.len() - "sm_7}".len());
        // A 100,000-character name is echoed cut, with the column kept.
        let long = format!("cuda13.0+{{{0},{0}}}", "s".repeat(100_000));
        let shown = AccelSet::parse(&long).unwrap_err().to_string();
        assert!(shown.len() < 600, "{} bytes", shown.len());
        assert!(shown.contains("column 100012") && shown.contains("more characters"), "{shown}");
        let shown = AccelSet::parse("cuda13.0+{sm_90\u{1b}[2J}").unwrap_err().to_string();
        assert!(shown.contains("found `\\u{1b}`") && !shown.contains('\u{1b}'), "{shown}");
    }

    #[test]
    fn coverage_follows_named_family_and_floor() {
        let build = ok("cuda12.9+{sm_80,sm_90f} ptx>=100");
        assert!(build.covers(&ok("cuda12.9+{sm_80}")));
        assert!(build.covers(&ok("cuda12.9+{sm_90}")));
        assert!(build.covers(&ok("cuda12.9+{sm_92}")));
        assert!(build.covers(&ok("cuda12.9+{sm_120}")));
        assert!(!build.covers(&ok("cuda12.9+{sm_86}")));
        assert!(!build.covers(&ok("cuda13.0+{sm_80}")));
        assert!(ok("vulkan1.3").covers(&ok("vulkan1.2")));
        assert!(!ok("vulkan1.1").covers(&ok("vulkan1.2")));
        assert!(!ok("vulkan1.2").covers(&ok("cuda12.9+{sm_90}")));
        assert!(ok("hip+{gfx942}").covers(&ok("hip+{gfx942}")));
        assert!(!ok("hip+{gfx942}").covers(&ok("hip+{gfx90a}")));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn parser_never_panics_on_any_string(s in "\\PC*") {
            let _ = AccelSet::parse(&s).map_err(|e| e.to_string());
        }

        #[test]
        fn parser_never_panics_on_grammar_shaped_strings(s in "[cudahipsyclvknaoret ,{}+_0-9.>=fx\u{e9}-]{0,40}") {
            if let Err(e) = AccelSet::parse(&s) {
                let _ = e.to_string();
                proptest::prop_assert!(e.position <= s.len());
            }
        }

        #[test]
        fn what_parses_displays_and_reparses_to_itself(s in "(cuda|vulkan|hip)[0-9]{0,2}(\\.[0-9])?(\\+\\{sm_[0-9]{2}(,gfx[0-9]{3})?\\})?( ptx>=[0-9]{2})?") {
            if let Ok(set) = AccelSet::parse(&s) {
                proptest::prop_assert_eq!(AccelSet::parse(&set.to_string()).unwrap(), set);
            }
        }
    }

    #[test]
    fn a_number_too_large_is_called_too_large_not_a_missing_digit() {
        let e = AccelSet::parse("vulkan99.99999999999999999999").unwrap_err().to_string();
        assert!(e.contains("expected the minor part of the version as a number of at most 6 digits at column 10, found `99999999999999999999`, a number too large"), "{e}");
        assert!(!e.contains("expected a digit"), "{e}");
        let e = AccelSet::parse("cuda1234567.0").unwrap_err().to_string();
        assert!(e.contains("found `1234567`, a number too large"), "{e}");
    }
}
