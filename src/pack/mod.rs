//! `cargo mcpp pack --format appimage|msi` (after the dist-appimage and dist-wix tools), the packaging half: what goes into a package and how each format is
//! written. The command itself (locating the package, the release build in a child process,
//! `--dry-run`'s printing, progress) is `crate::cli::pack`.
//!
//! From the build's cargo JSON messages ([`read_messages`]) this module takes the package's
//! executables from `compiler-artifact` messages (never a guessed path) and the shared runtime
//! libraries its build scripts link ([`shared_libraries`]: `cargo::rustc-link-lib=dylib=...`
//! found in their `rustc-link-search` directories outside the system's) and the sidecars they
//! list in `OUT_DIR/mcpp-sidecars.json` ([`sidecars`]), adds the extra files of
//! `[package.metadata.mcpp.pack]` ([`extra_files`]), and writes the package with the format's
//! writer ([`appimage`], [`msi`]). Every check that does not need the build (format and
//! target, icon, runtime, tool, version, upgrade code) is [`Prepared::prepare`], run before it;
//! the decisions it makes (the AppImage runtime, patchelf, wixl or wix) are recorded in the
//! package's device cache ([`crate::engine::layout::DeviceCache`]) for `cargo mcpp why tool`. A
//! `--dry-run` plan is made without the build ([`Origin::BuiltAtPack`], `built` = `None`).

pub mod appimage;
pub mod msi;

use crate::config::env::Env;
use crate::config::manifest::{Manifest, PackOptions};
use crate::engine::layout::DeviceCache;
use crate::error::{Error, ErrorKind, Result};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The package formats `cargo mcpp pack` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Linux AppImage: the type-2 runtime followed by a squashfs image of the AppDir.
    Appimage,
    /// A Windows Installer package, written by wixl from a WiX v3 source or by `wix build`
    /// from a WiX v4+ source.
    // (The route: `msi::Route`. Outside the doc comment, which `--help` prints.)
    Msi,
}

/// Where a file of the package comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A file on disk (an executable cargo named, a library, an icon, an extra file, a sidecar).
    File(PathBuf),
    /// Bytes written by cargo-mcpp (`AppRun`, the `.desktop` file, the built-in icon), named
    /// for the plan.
    Generated(&'static str, Vec<u8>),
    /// The executable of this binary target, built by cargo at pack time: a `--dry-run` plan
    /// names the target (from `cargo metadata`), never a guessed path. It has no bytes.
    BuiltAtPack(String),
    /// A copy of an executable cargo named (`source`) with its RUNPATH set to `rpath` by
    /// `patchelf` when the package is written ([`appimage::write`]); the file on disk is not
    /// changed.
    Patched {
        /// The executable cargo named.
        source: PathBuf,
        /// The RUNPATH of the copy (`$ORIGIN/../lib`).
        rpath: String,
    },
}

impl Origin {
    /// How the plan shows the source.
    pub fn shown(&self) -> String {
        match self {
            Origin::File(p) => p.display().to_string(),
            Origin::Generated(what, b) => format!("(generated: {what}, {} bytes)", b.len()),
            Origin::BuiltAtPack(target) => format!("(built by cargo at pack time: the binary target `{target}`; its path is the one cargo's compiler-artifact message names, not guessed here)"),
            Origin::Patched { source, rpath } => format!("{} (a copy, RUNPATH set to {rpath} by patchelf)", source.display()),
        }
    }
}

/// One file of the package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its place in the package, relative and `/`-separated (`usr/bin/app`, `share/x.txt`).
    pub dest: String,
    /// Where its bytes come from.
    pub origin: Origin,
    /// Whether it is executable (mode 0755 in an AppImage; 0644 otherwise).
    pub executable: bool,
}

impl Entry {
    /// The bytes of the entry.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] naming the source file when it cannot be read.
    /// [`ErrorKind::Manifest`] for an entry whose bytes do not exist yet (a `--dry-run`
    /// program, a copy the writer patches first).
    pub fn bytes(&self) -> Result<Vec<u8>> {
        match &self.origin {
            Origin::File(p) => std::fs::read(p).map_err(|e| Error::io("cannot read", p, e)),
            Origin::Generated(_, b) => Ok(b.clone()),
            Origin::BuiltAtPack(_) | Origin::Patched { .. } => Err(Error::new(
                ErrorKind::Manifest,
                format!("`{}` has no bytes yet: {}", self.dest, self.origin.shown()),
            )),
        }
    }
}

/// What `cargo mcpp pack` will write: the package file, its entries, and the tool.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The format.
    pub format: Format,
    /// The package file to write.
    pub output: PathBuf,
    /// Every file going in, in package order (sorted by `dest`).
    pub entries: Vec<Entry>,
    /// The tool that writes it, as shown (`backhand (in process) + runtime <path>`, `wixl <path>`).
    pub tool: String,
    /// Lines the plan adds after the files (what a `--dry-run` cannot know before the build).
    pub notes: Vec<String>,
}

impl Plan {
    /// The plan as `--dry-run` prints it: the output, the tool, then one line per entry
    /// (`dest  <-  source`).
    pub fn render(&self) -> String {
        let mut out = format!(
            "package: {}\ntool:    {}\nfiles:\n",
            self.output.display(),
            self.tool
        );
        for e in &self.entries {
            out.push_str(&format!(
                "  {}{}  <-  {}\n",
                e.dest,
                if e.executable { " (executable)" } else { "" },
                crate::text::escape_control(&e.origin.shown())
            ));
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        out
    }
}

/// The facts of the package being packed, from `cargo metadata` and its manifest.
#[derive(Debug, Clone)]
pub struct PackageFacts {
    /// `[package] name`.
    pub name: String,
    /// `[package] version` (or `pack.version`).
    pub version: String,
    /// `[package] description`.
    pub description: Option<String>,
    /// `[package] authors`.
    pub authors: Vec<String>,
    /// `[package] repository`.
    pub repository: Option<String>,
    /// The manifest, with `[package.metadata.mcpp.pack]`.
    pub manifest: Manifest,
    /// The binary targets' names.
    pub bins: Vec<String>,
    /// The target triple packed for.
    pub target: String,
    /// cargo's target directory (`cargo metadata`'s `target_directory`): `pack.files` globs
    /// never take files from it.
    pub target_dir: PathBuf,
}

impl PackageFacts {
    /// `[package.metadata.mcpp.pack]`, default when absent.
    pub fn options(&self) -> PackOptions {
        self.manifest.mcpp.pack.clone().unwrap_or_default()
    }
    /// The application's name: `pack.app-name`, else the program's.
    pub fn app_name(&self, program: &str) -> String {
        self.options()
            .app_name
            .unwrap_or_else(|| program.to_string())
    }
    /// `path:line:col` of a key of `[package.metadata.mcpp]` (`pack.icon`), or the path.
    pub fn at(&self, key: &str) -> String {
        self.manifest.at_col(key)
    }
}

/// The host's target triple, as rustc spells it for the common hosts.
pub fn host_triple() -> String {
    match (std::env::consts::ARCH, std::env::consts::OS) {
        (arch, "linux") => format!("{arch}-unknown-linux-gnu"),
        (arch, "windows") => format!("{arch}-pc-windows-msvc"),
        (arch, "macos") => format!("{arch}-apple-darwin"),
        (arch, os) => format!("{arch}-unknown-{os}"),
    }
}

/// The 1x1 transparent PNG used when `pack.icon` is not set (a valid image, so desktop tools
/// accept the AppDir; decoded whole by the `png` crate in the tests: an earlier copy had a
/// wrong IDAT length that only a real decoder noticed).
pub const DEFAULT_ICON_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x60, 0x00, 0x02, 0x00,
    0x00, 0x05, 0x00, 0x01, 0xe9, 0xfa, 0xdc, 0xd8, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44,
    0xae, 0x42, 0x60, 0x82,
];

/// The most bytes an icon file (`pack.icon`) may have: 4 MiB.
pub const ICON_MAX_BYTES: u64 = 4 << 20;

/// The most pixels a PNG icon may have on each side: 1024 (the largest size of the
/// freedesktop.org icon theme).
pub const ICON_MAX_PIXELS: u32 = 1024;

/// The most bytes an AppImage runtime file (`--runtime-file`, `pack.appimage.runtime-file`)
/// may have: 16 MiB (a type-2 runtime is about 1 MB).
pub const RUNTIME_MAX_BYTES: u64 = 16 << 20;

/// A byte count as a refusal shows a limit (`4 MiB`).
fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

/// The bytes of `path`, checked before a byte is read: it must be a regular file (followed
/// through symbolic links: a FIFO would block forever, `/dev/zero` never ends) of at most
/// `limit` bytes; the read itself stops after `limit` bytes, so a file that grows meanwhile
/// is refused too. `Err` is the reason, one line, naming the limit.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read: {e}"))?;
    if let Some(kind) = crate::sources::walk::not_regular(&meta) {
        return Err(format!("is {kind}, not a regular file"));
    }
    let too_big = |n: u64| {
        format!(
            "is {n} bytes, more than the {} this file may have",
            mib(limit)
        )
    };
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot be read: {e}"))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The width and height a PNG's header (`IHDR`, right after the signature) claims, read
/// without decoding anything; `None` when the bytes do not start that way.
pub(crate) fn png_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.get(..8)? != b"\x89PNG\r\n\x1a\n" || bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    };
    Some((word(16)?, word(20)?))
}

/// The icon: `pack.icon` checked, or the built-in PNG. Returns the extension (`png`/`svg`)
/// and the origin. A `.png` is decoded whole by the `png` crate (signature, header, every
/// chunk's CRC, the image data: a corrupt or truncated file is refused); an `.svg` is parsed
/// as XML by `roxmltree` and must have an `<svg>` root element.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `file:line:col` and `pack.icon` for another format, a file
/// that is not a valid one (with the decoder's or parser's reason), or a missing file.
pub fn icon(facts: &PackageFacts) -> Result<(&'static str, Origin)> {
    let Some(rel) = facts.options().icon else {
        return Ok((
            "png",
            Origin::Generated("built-in 1x1 icon", DEFAULT_ICON_PNG.to_vec()),
        ));
    };
    let path = facts.manifest.dir().join(&rel);
    let shown = crate::text::echo(&rel.display().to_string());
    let refuse = |what: String| {
        Error::new(ErrorKind::Manifest, what)
            .file(facts.at("pack.icon"))
            .key("package.metadata.mcpp.pack.icon")
    };
    let ext = rel
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let ext: &'static str = match ext.as_str() {
        "png" => "png",
        "svg" => "svg",
        _ => return Err(refuse(format!("the icon `{shown}` is neither a PNG nor an SVG file")).help("an AppImage icon is a `.png` or `.svg` file; convert it (e.g. to a 256x256 PNG) and name that")),
    };
    let bytes = read_bounded(&path, ICON_MAX_BYTES).map_err(|reason| {
        refuse(format!("the icon `{shown}` {reason}")).help(format!(
            "name a regular image file of at most {} and {ICON_MAX_PIXELS}x{ICON_MAX_PIXELS} pixels; the path is relative to the package root, {}",
            mib(ICON_MAX_BYTES),
            facts.manifest.dir().display()
        ))
    })?;
    // The size the header claims decides before anything is decoded (a 20000x20000 PNG of a
    // few bytes would otherwise take gigabytes).
    if let Some((w, h)) = (ext == "png").then(|| png_dimensions(&bytes)).flatten() {
        if w > ICON_MAX_PIXELS || h > ICON_MAX_PIXELS {
            return Err(refuse(format!("the icon `{shown}` is {w}x{h} pixels, more than the {ICON_MAX_PIXELS}x{ICON_MAX_PIXELS} an icon may have"))
                .help(format!("scale it down to at most {ICON_MAX_PIXELS}x{ICON_MAX_PIXELS} pixels (256x256 is the usual size)")));
        }
    }
    let problem = match ext {
        "png" => png_problem(&bytes),
        _ => svg_problem(&bytes),
    };
    if let Some(reason) = problem {
        return Err(refuse(format!(
            "the icon `{shown}` is named .{ext} but is not a valid {} image",
            ext.to_ascii_uppercase()
        ))
        .detail(crate::text::escape_control(&reason))
        .help("name a real PNG or SVG file (re-export it from the image editor)"));
    }
    Ok((ext, Origin::File(path)))
}

/// Why `bytes` is not a whole PNG image (`None` when the `png` crate decodes it to the end);
/// the decoder's text with its chunk type written as the four letters (`IHDR`), not as the
/// crate's debug form.
fn png_problem(bytes: &[u8]) -> Option<String> {
    png_problem_raw(bytes).map(
        |text| match (text.find("ChunkType { type: "), text.find(" }")) {
            (Some(a), Some(b)) if b > a => {
                let name = text[a + "ChunkType { type: ".len()..]
                    .split(',')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                format!("{}{name}{}", &text[..a], &text[b + 2..])
            }
            _ => text,
        },
    )
}

/// [`png_problem`] in the `png` crate's words.
fn png_problem_raw(bytes: &[u8]) -> Option<String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    // An icon is small: refuse to allocate for a header claiming a huge image.
    decoder.set_limits(png::Limits { bytes: 64 << 20 });
    let mut reader = match decoder.read_info() {
        Ok(r) => r,
        Err(e) => return Some(format!("png: {e}")),
    };
    let mut frame = vec![0; reader.output_buffer_size()];
    match reader.next_frame(&mut frame) {
        Ok(_) => None,
        Err(e) => Some(format!("png: {e}")),
    }
}

/// Why `bytes` is not an SVG document (`None` when it is XML with an `<svg>` root element).
fn svg_problem(bytes: &[u8]) -> Option<String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return Some(format!("not UTF-8 text: {e}")),
    };
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    match roxmltree::Document::parse_with_options(text, options) {
        Err(e) => Some(format!("XML: {e}")),
        Ok(doc) if doc.root_element().tag_name().name() != "svg" => Some(format!(
            "the root element is <{}>, not <svg>",
            doc.root_element().tag_name().name()
        )),
        Ok(_) => None,
    }
}

/// The extra files of `pack.files`: each glob expanded by the one glob expander (inside the
/// package only), each file placed at `<dest>/<its path below the glob's fixed prefix>`.
/// Files inside cargo's target directory ([`PackageFacts::target_dir`]), the pack output
/// directory `out_dir` or a `.git` directory are never taken (a `**` glob would otherwise
/// pack the build, earlier packages or the repository).
///
/// # Errors
/// A glob's refusals ([`crate::sources::expand_globs`]: matching nothing, leaving the package);
/// [`ErrorKind::Manifest`] for a `dest` that is absolute or contains `..`, or a glob whose
/// every match is in an excluded directory.
pub fn extra_files(facts: &PackageFacts, out_dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let excluded_dirs = [real(&facts.target_dir), real(out_dir)];
    let excluded = |path: &Path, rel: &str| {
        rel.split('/').any(|c| c == ".git")
            || excluded_dirs.iter().any(|d| real(path).starts_with(d))
    };
    let mut out = Vec::new();
    for (i, f) in facts.options().files.iter().enumerate() {
        let key = format!("pack.files[{i}]");
        let dest = f.dest.trim_matches('/');
        if f.dest.starts_with('/')
            || dest.split('/').any(|c| c == ".." || c == ".")
            || f.dest.contains('\\')
        {
            return Err(Error::new(
                ErrorKind::Manifest,
                format!(
                    "`dest = \"{}\"` is not a relative `/`-separated directory inside the package",
                    crate::text::echo(&f.dest)
                ),
            )
            .file(facts.at(&key))
            .key(format!("package.metadata.mcpp.{key}.dest"))
            .help("write e.g. dest = \"share/app\", or \"\" for the program's own directory"));
        }
        let (files, _) = crate::sources::expand_globs(
            &facts.manifest,
            &format!("package.metadata.mcpp.{key}.glob"),
            std::slice::from_ref(&f.glob),
        )?;
        let fixed: Vec<&str> = f
            .glob
            .split('/')
            .take_while(|c| !c.contains(['*', '?', '[', '{']))
            .collect();
        let fixed = if fixed.len() == f.glob.split('/').count() {
            &fixed[..fixed.len().saturating_sub(1)]
        } else {
            &fixed[..]
        };
        let prefix = fixed.join("/");
        let files: Vec<(PathBuf, String)> = files
            .into_iter()
            .filter(|(path, rel)| !excluded(path, rel))
            .collect();
        if files.is_empty() {
            return Err(Error::new(ErrorKind::Manifest, format!("`{}` matches only files in cargo's target directory, the pack output directory or `.git`, which are never packed", crate::text::echo(&f.glob)))
                .file(facts.at(&format!("{key}.glob")))
                .key(format!("package.metadata.mcpp.{key}.glob"))
                .help("point the glob at the files to ship (e.g. \"assets/**/*\"), outside target/ and .git/"));
        }
        for (path, rel) in files {
            let below = rel
                .strip_prefix(&prefix)
                .map(|r| r.trim_start_matches('/'))
                .unwrap_or(&rel);
            let place = if dest.is_empty() {
                below.to_string()
            } else {
                format!("{dest}/{below}")
            };
            out.push((place, path));
        }
    }
    Ok(out)
}

/// The shared libraries the build links that the package must carry: for each build script's
/// `rustc-link-lib` of kind `dylib` (the default), the files of that library (`lib<name>.so`,
/// `lib<name>.so.*`; `<name>.dll` for Windows; the name itself with `+verbatim`) in its
/// `rustc-link-search` directories, leaving out the system's (`/usr`, `/lib`, `/lib64`), which
/// the target system provides.
pub fn shared_libraries(
    links: &[(Vec<String>, Vec<PathBuf>)],
    windows: bool,
) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for (libs, paths) in links {
        let dirs: Vec<&PathBuf> = paths
            .iter()
            .filter(|p| {
                !(p.starts_with("/usr") || p.starts_with("/lib") || p.starts_with("/lib64"))
            })
            .collect();
        for lib in libs {
            let (kind, name) = lib.split_once('=').unwrap_or(("dylib", lib.as_str()));
            let (kind, modifiers) = kind.split_once(':').unwrap_or((kind, ""));
            if kind != "dylib" {
                continue;
            }
            let verbatim = modifiers.split(',').any(|m| m == "+verbatim");
            for dir in &dirs {
                let Ok(rd) = std::fs::read_dir(dir) else {
                    continue;
                };
                let mut found: Vec<(String, PathBuf)> = rd
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().map(|n| (n.to_string(), e.path())))
                    .filter(|(n, _)| {
                        if verbatim {
                            n == name
                        } else if windows {
                            n.eq_ignore_ascii_case(&format!("{name}.dll"))
                        } else {
                            n == &format!("lib{name}.so")
                                || n.starts_with(&format!("lib{name}.so."))
                        }
                    })
                    .collect();
                found.sort();
                for f in found {
                    if !out.iter().any(|(n, _)| *n == f.0) {
                        out.push(f);
                    }
                }
            }
        }
    }
    out
}

/// What the build gave: the package's executables by binary name, and each build script's
/// linked libraries with their search directories.
#[derive(Debug, Clone, Default)]
pub struct Built {
    /// `(binary target name, executable path)` from `compiler-artifact` messages.
    pub executables: Vec<(String, PathBuf)>,
    /// `(linked libraries, search directories)` of every `build-script-executed` message.
    pub links: Vec<(Vec<String>, Vec<PathBuf>)>,
    /// The `OUT_DIR` of every `build-script-executed` message (every package whose build
    /// script ran or was fresh), where a build script lists its sidecars ([`SIDECARS_FILE`]).
    pub out_dirs: Vec<PathBuf>,
    /// The lines of the build's standard output that are for the user: text that is no JSON
    /// message (neither cargo's nor the device phase's `mcpp-device-*`, which `cargo mcpp
    /// build` prints only when asked for JSON), in order. `cargo mcpp pack` prints them.
    pub text: Vec<String>,
}

/// The file a build script writes into its `OUT_DIR` to list the sidecars its package's
/// program needs beside it: `{"version":1,"sidecars":[{"source":"<absolute path>",
/// "relative":"<path relative to the executable's directory, / separated>"}]}`.
pub const SIDECARS_FILE: &str = "mcpp-sidecars.json";

/// The one version of [`SIDECARS_FILE`] this cargo-mcpp reads.
pub const SIDECARS_VERSION: u64 = 1;

/// [`SIDECARS_FILE`]'s shape (other keys are ignored, so a later producer may add some).
#[derive(Debug, serde::Deserialize)]
struct SidecarsFile {
    version: u64,
    #[serde(default)]
    sidecars: Vec<Sidecar>,
}

/// One entry of [`SIDECARS_FILE`].
#[derive(Debug, serde::Deserialize)]
struct Sidecar {
    source: PathBuf,
    relative: String,
}

/// The sidecars the build's scripts list: for each `OUT_DIR` of [`Built::out_dirs`] (from
/// cargo's messages, never guessed), its [`SIDECARS_FILE`] when present, each entry as
/// `(relative place below the program's directory, source file)`.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the file: not JSON of that shape, a `version` other than
/// [`SIDECARS_VERSION`], a `source` that is not an absolute path of an existing file, a
/// `relative` that is empty, absolute, holds `\\`, `.` or `..` components.
pub fn sidecars(built: &Built) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut seen: Vec<&PathBuf> = Vec::new();
    for dir in &built.out_dirs {
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir);
        let file = dir.join(SIDECARS_FILE);
        let text = match std::fs::read(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("cannot read the sidecar list", &file, e)),
        };
        let refuse = |what: String| {
            Error::new(ErrorKind::Manifest, what)
                .file(&file)
                .help(format!("the build script writes this file: fix it to `{{\"version\":{SIDECARS_VERSION},\"sidecars\":[{{\"source\":\"<absolute path>\",\"relative\":\"<path beside the program>\"}}]}}`, or update cargo-mcpp and the crate writing it together"))
        };
        let list: SidecarsFile = serde_json::from_slice(&text).map_err(|e| {
            refuse(format!(
                "the sidecar list is not `{{\"version\", \"sidecars\"}}` JSON: {e}"
            ))
        })?;
        if list.version != SIDECARS_VERSION {
            return Err(refuse(format!("the sidecar list has version {}, and this cargo-mcpp reads version {SIDECARS_VERSION}", list.version)));
        }
        for (i, s) in list.sidecars.into_iter().enumerate() {
            let rel = &s.relative;
            if rel.is_empty()
                || rel.starts_with('/')
                || rel.contains('\\')
                || rel
                    .split('/')
                    .any(|c| c.is_empty() || c == "." || c == "..")
                || Path::new(rel).is_absolute()
            {
                return Err(refuse(format!("sidecars[{i}].relative `{}` is not a relative `/`-separated path below the program's directory (no `..`, `.` or empty parts)", crate::text::echo(rel))));
            }
            if crate::text::has_control(rel) {
                return Err(refuse(format!("sidecars[{i}].relative `{}` holds a control character (a newline), which a file name in a package cannot carry", crate::text::echo(rel))));
            }
            if !s.source.is_absolute() {
                return Err(refuse(format!(
                    "sidecars[{i}].source `{}` is not an absolute path",
                    crate::text::echo_path(&s.source)
                )));
            }
            if !s.source.is_file() {
                return Err(refuse(format!(
                    "sidecars[{i}].source `{}` does not exist (or is not a file)",
                    crate::text::echo_path(&s.source)
                )));
            }
            out.push((rel.clone(), s.source));
        }
    }
    Ok(out)
}

/// Read cargo's JSON messages (`--message-format=json-render-diagnostics`) from `reader`:
/// the executables of the package `package_id`'s binary targets and every build script's
/// link lines. Other lines that are text, not a JSON message, are kept in [`Built::text`].
pub fn read_messages(reader: impl BufRead, package_id: &str) -> Built {
    let mut built = Built::default();
    for message in cargo_metadata::Message::parse_stream(reader).map_while(std::result::Result::ok)
    {
        match message {
            cargo_metadata::Message::CompilerArtifact(a)
                if a.package_id.repr == package_id && a.target.is_bin() =>
            {
                if let Some(exe) = a.executable {
                    built
                        .executables
                        .push((a.target.name.clone(), exe.into_std_path_buf()));
                }
            }
            cargo_metadata::Message::BuildScriptExecuted(b) => {
                built.out_dirs.push(b.out_dir.clone().into_std_path_buf());
                built.links.push((
                    b.linked_libs.iter().map(|l| l.to_string()).collect(),
                    b.linked_paths
                        .iter()
                        .map(|p| {
                            PathBuf::from(
                                p.as_str()
                                    .split_once('=')
                                    .map(|(_, d)| d)
                                    .unwrap_or(p.as_str()),
                            )
                        })
                        .collect(),
                ));
            }
            // A JSON message cargo_metadata does not know (the device phase's
            // `mcpp-device-artifact`, ...) is a message too, not text for the user.
            cargo_metadata::Message::TextLine(t)
                if !t.trim().is_empty()
                    && serde_json::from_str::<serde_json::Value>(&t)
                        .map_or(true, |v| v.get("reason").is_none()) =>
            {
                built.text.push(t)
            }
            _ => {}
        }
    }
    built
}

/// The program a plan packs: its binary target's name and where its bytes come from (the
/// executable cargo named, or [`Origin::BuiltAtPack`] in a `--dry-run`).
#[derive(Debug, Clone)]
pub struct Program {
    /// The binary target's name (from `cargo metadata`).
    pub name: String,
    /// The executable.
    pub origin: Origin,
}

/// The binary target to pack, from `cargo metadata`'s targets: `--bin`, else the only one.
///
/// # Errors
/// [`ErrorKind::Manifest`] when `--bin` names no binary target of the package or there is
/// none; [`ErrorKind::Usage`] when there are several and no `--bin`.
pub fn program_name(facts: &PackageFacts, bin: Option<&str>) -> Result<String> {
    let names = || {
        facts
            .bins
            .iter()
            .map(|b| format!("`{b}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Ok(match bin {
        Some(b) if !facts.bins.iter().any(|x| x == b) => {
            return Err(Error::new(
                ErrorKind::Manifest,
                format!(
                    "--bin `{}`: the package {} has no such binary target",
                    crate::text::echo(b),
                    facts.name
                ),
            )
            .file(&facts.manifest.path)
            .help(if facts.bins.is_empty() {
                "the package has no binary target: add src/main.rs or a [[bin]]".to_string()
            } else {
                format!("its binary targets are {}", names())
            }));
        }
        Some(b) => b.to_string(),
        None => match facts.bins.as_slice() {
            [one] => one.clone(),
            [] => {
                return Err(Error::new(
                    ErrorKind::Manifest,
                    format!(
                        "the package {} has no binary target, so there is no executable to pack",
                        facts.name
                    ),
                )
                .file(&facts.manifest.path)
                .help("add src/main.rs or a [[bin]] target"))
            }
            _ => {
                return Err(Error::new(
                    ErrorKind::Usage,
                    format!(
                        "the package {} has several binary targets; say which to pack",
                        facts.name
                    ),
                )
                .help(format!("pass --bin NAME, one of {}", names())))
            }
        },
    })
}

/// The program to pack among the built executables: [`program_name`]'s target, with the
/// executable cargo's `compiler-artifact` message named for it.
///
/// # Errors
/// [`program_name`]'s; [`ErrorKind::Manifest`] when cargo reported no executable for it.
pub fn choose_program(facts: &PackageFacts, bin: Option<&str>, built: &Built) -> Result<Program> {
    let wanted = program_name(facts, bin)?;
    built.executables.iter().find(|(n, _)| *n == wanted).map(|(n, p)| Program { name: n.clone(), origin: Origin::File(p.clone()) }).ok_or_else(|| {
        Error::new(ErrorKind::Manifest, format!("cargo reported no executable for the binary target `{wanted}` of {}", facts.name))
            .detail(format!("executables cargo reported: {}", if built.executables.is_empty() { "none".to_string() } else { built.executables.iter().map(|(n, p)| format!("{n} ({})", p.display())).collect::<Vec<_>>().join(", ") }))
            .help("check the cargo arguments (a --features the target requires, `required-features`), and that the build succeeded")
    })
}

/// A format's checked inputs, prepared before the build.
#[derive(Debug, Clone)]
pub enum Prepared {
    /// The AppImage's runtime, icon and date.
    Appimage(appimage::Prepared),
    /// The MSI's wixl, codes, version and manufacturer.
    Msi(msi::Prepared),
}

impl Prepared {
    /// Everything `format` needs that is checked before the build ([`appimage::prepare`],
    /// [`msi::prepare`]); the decisions (the AppImage runtime from `runtime_file` or the
    /// manifest or its toolchain package, wixl) are recorded in `cache`.
    ///
    /// # Errors
    /// The format's refusals, each with its way out.
    pub fn prepare(
        format: Format,
        facts: &PackageFacts,
        runtime_file: Option<&Path>,
        env: &Env,
        cache: &DeviceCache,
    ) -> Result<Prepared> {
        check_app_name(facts)?;
        Ok(match format {
            Format::Appimage => {
                Prepared::Appimage(appimage::prepare(facts, runtime_file, env, cache)?)
            }
            Format::Msi => Prepared::Msi(msi::prepare(facts, env, cache)?),
        })
    }

    /// The plan of the package of `program` written into `out_dir`; `built` is what the build
    /// gave (the shared libraries and sidecars), `None` for a `--dry-run`, whose plan says in
    /// its notes what it cannot know.
    ///
    /// # Errors
    /// The refusals of [`extra_files`], [`sidecars`], [`finish_entries`] and the format's plan.
    pub fn plan(
        &self,
        facts: &PackageFacts,
        program: &Program,
        built: Option<&Built>,
        out_dir: &Path,
    ) -> Result<Plan> {
        match self {
            Prepared::Appimage(p) => appimage::plan(facts, p, program, built, out_dir),
            Prepared::Msi(p) => msi::plan(facts, p, program, built, out_dir),
        }
    }

    /// What writing does, for a progress line (`writing X`, `running wixl for X`).
    pub fn writing(&self, plan: &Plan) -> String {
        match self {
            Prepared::Appimage(_) => format!("writing {}", plan.output.display()),
            Prepared::Msi(p) => format!(
                "running {} for {}",
                p.route.program(),
                plan.output.display()
            ),
        }
    }

    /// Write the package `plan` names (the directory holding it must exist).
    ///
    /// # Errors
    /// The format writer's: [`appimage::write`], [`msi::write`].
    pub fn write(&self, facts: &PackageFacts, program: &str, plan: &Plan, env: &Env) -> Result<()> {
        match self {
            Prepared::Appimage(p) => appimage::write(plan, p, env),
            Prepared::Msi(p) => msi::write(facts, program, plan, p, env),
        }
    }
}

/// Check `pack.app-name` (it names the package file, the MSI's install folder and Start-menu
/// entry): not empty, no `/` or `\\`, no `..`, none of `<>:"|?*` or control characters
/// (illegal in Windows file names), not starting with `.`.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `file:line:col` and `pack.app-name`.
pub fn check_app_name(facts: &PackageFacts) -> Result<()> {
    let Some(name) = facts.options().app_name else {
        return Ok(());
    };
    let problem = if name.trim().is_empty() {
        Some("is empty".to_string())
    } else if let Some(c) = name.chars().find(|c| {
        matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*') || c.is_control()
    }) {
        Some(format!("contains `{}`, which cannot be part of a file name on Windows (or is a path separator)", c.escape_default()))
    } else if name.contains("..") {
        Some("contains `..`".to_string())
    } else if name.starts_with('.') {
        Some("starts with `.` (a hidden file name)".to_string())
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(Error::new(ErrorKind::Manifest, format!("app-name `{}` {p}", crate::text::echo(&name)))
            .file(facts.at("pack.app-name"))
            .key("package.metadata.mcpp.pack.app-name")
            .help("the application's name names the package file and its install folder: write a plain name such as \"My App\"")),
    }
}

/// The package's file name part: `[A-Za-z0-9._-]` kept, others `_` (names are shown in paths).
pub fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A tool resolver's refusal or warning text for a tool that pack names with its own key
/// (`pack.msi.tool`, `pack.appimage.patchelf`): every `[package.metadata.mcpp.tools] <tool>`
/// written as `[package.metadata.mcpp.pack.<table>] <key>`.
pub fn pack_tool_text(text: &str, tool: &str, table: &str, key: &str) -> String {
    text.replace(
        &format!("[package.metadata.mcpp.tools] {tool}"),
        &format!("[package.metadata.mcpp.pack.{table}] {key}"),
    )
    .replace(
        "[package.metadata.mcpp.tools]",
        &format!("[package.metadata.mcpp.pack.{table}] {key}"),
    )
}

/// [`pack_tool_text`] over a refusal (its message, details, help and chained errors); when the
/// manifest sets the key, the refusal points at its `file:line:col` and names it.
pub fn pack_tool_error(
    mut e: Error,
    facts: &PackageFacts,
    tool: &str,
    table: &str,
    key: &str,
) -> Error {
    let fix = |t: &mut String| *t = pack_tool_text(t, tool, table, key);
    fix(&mut e.message);
    e.detail.iter_mut().for_each(fix);
    e.help.iter_mut().for_each(fix);
    e.also = e
        .also
        .into_iter()
        .map(|a| pack_tool_error(a, facts, tool, table, key))
        .collect();
    if facts
        .manifest
        .line(&format!("pack.{table}.{key}"))
        .is_some()
    {
        e.file = Some(PathBuf::from(facts.at(&format!("pack.{table}.{key}"))));
        e.key = Some(format!("package.metadata.mcpp.pack.{table}.{key}"));
    }
    e
}

/// Whether the file at `path` has an executable bit (any of `0o111`; never on other hosts).
pub fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Whether the triple names a Windows target.
pub fn is_windows(triple: &str) -> bool {
    triple.contains("-windows")
}

/// Whether the triple names a Linux target.
pub fn is_linux(triple: &str) -> bool {
    triple.contains("-linux")
}

/// The architecture part of a triple (`x86_64`).
pub fn arch_of(triple: &str) -> &str {
    triple.split('-').next().unwrap_or(triple)
}

/// The note of a `--dry-run` plan: what only the build's messages tell.
pub const DRY_RUN_NOTE: &str = "a dry run builds nothing, so the program is named by its binary target (from `cargo metadata`), and the shared runtime libraries the build links and the sidecars its build scripts list (`OUT_DIR/mcpp-sidecars.json`) are not known: a real pack adds them from cargo's build-script-executed messages";

/// Files sorted by destination, each once: a later entry for the same place is refused, and
/// so is an entry whose place runs through another file's (`usr/bin/hello` and
/// `usr/bin/hello/greet.txt`: one cannot be both a file and a directory). `sidecars` are the
/// source files that came from a build script's [`SIDECARS_FILE`], so a refusal names the
/// list to fix.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming both sources of one destination.
pub fn finish_entries(
    mut entries: Vec<Entry>,
    manifest: &Path,
    sidecars: &[PathBuf],
) -> Result<Vec<Entry>> {
    entries.sort_by(|a, b| a.dest.cmp(&b.dest));
    let by_dest: std::collections::HashMap<&str, &Entry> =
        entries.iter().map(|e| (e.dest.as_str(), e)).collect();
    let mut clash: Option<(&Entry, &Entry, bool)> = None;
    for w in entries.windows(2) {
        if w[0].dest == w[1].dest {
            clash = Some((&w[0], &w[1], false));
            break;
        }
    }
    if clash.is_none() {
        'outer: for e in &entries {
            let mut at = e.dest.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                if let Some(file) = by_dest.get(parent) {
                    clash = Some((file, e, true));
                    break 'outer;
                }
                at = parent;
            }
        }
    }
    let Some((a, b, through)) = clash else {
        return Ok(entries);
    };
    let is_sidecar = |e: &Entry| matches!(&e.origin, Origin::File(p) if sidecars.contains(p));
    let what = if through {
        format!(
            "`{}` would be a file and also the directory holding `{}` in the package: {} and {}",
            crate::text::echo(&a.dest),
            crate::text::echo(&b.dest),
            a.origin.shown(),
            b.origin.shown()
        )
    } else {
        format!(
            "two files would be `{}` in the package: {} and {}",
            crate::text::echo(&a.dest),
            a.origin.shown(),
            b.origin.shown()
        )
    };
    let mut err = Error::new(ErrorKind::Manifest, what).file(manifest);
    if is_sidecar(a) || is_sidecar(b) {
        err = err.key(format!("`relative` in {SIDECARS_FILE}")).help(format!("a sidecar's place is its `relative` in the build script's `OUT_DIR/{SIDECARS_FILE}`: change it there, or give the extra file another `dest` in [package.metadata.mcpp.pack] files"));
    } else {
        err = err
            .key("package.metadata.mcpp.pack.files")
            .help("give one of them another `dest` in [package.metadata.mcpp.pack] files");
    }
    Err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_libraries_are_found_by_link_kind_outside_the_system() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "libcudart.so.13",
            "libfoo.so",
            "libfoo.so.1",
            "libbar.a",
            "x.dll",
        ] {
            std::fs::write(d.path().join(f), b"x").unwrap();
        }
        let links = vec![(
            vec![
                "dylib:+verbatim=libcudart.so.13".to_string(),
                "foo".into(),
                "static=bar".into(),
            ],
            vec![d.path().to_path_buf(), PathBuf::from("/usr/lib")],
        )];
        let names: Vec<String> = shared_libraries(&links, false)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["libcudart.so.13", "libfoo.so", "libfoo.so.1"]);
        let links = vec![(vec!["dylib=x".to_string()], vec![d.path().to_path_buf()])];
        assert_eq!(shared_libraries(&links, true).len(), 1);
        assert!(shared_libraries(&links, false).is_empty());
    }

    #[test]
    fn messages_give_the_packages_executables_and_link_lines() {
        let text = r#"{"reason":"compiler-artifact","package_id":"path+file:///p#app@0.1.0","manifest_path":"/p/Cargo.toml","target":{"kind":["bin"],"crate_types":["bin"],"name":"app","src_path":"/p/src/main.rs","edition":"2021","doc":true,"doctest":false,"test":true},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":[],"filenames":["/p/target/release/app"],"executable":"/p/target/release/app","fresh":false}
{"reason":"compiler-artifact","package_id":"other#dep@1.0.0","manifest_path":"/d/Cargo.toml","target":{"kind":["bin"],"crate_types":["bin"],"name":"dep","src_path":"/d/src/main.rs","edition":"2021","doc":true,"doctest":false,"test":true},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":[],"filenames":["/d/dep"],"executable":"/d/dep","fresh":false}
{"reason":"build-script-executed","package_id":"path+file:///p#app@0.1.0","linked_libs":["dylib=cudart"],"linked_paths":["native=/opt/cuda/lib"],"cfgs":[],"env":[],"out_dir":"/p/target/release/build/app-1/out"}
{"reason":"build-finished","success":true}
"#;
        let built = read_messages(std::io::Cursor::new(text), "path+file:///p#app@0.1.0");
        assert_eq!(
            built.executables,
            [("app".to_string(), PathBuf::from("/p/target/release/app"))]
        );
        assert_eq!(
            built.links,
            [(
                vec!["dylib=cudart".to_string()],
                vec![PathBuf::from("/opt/cuda/lib")]
            )]
        );
        assert_eq!(
            built.out_dirs,
            [PathBuf::from("/p/target/release/build/app-1/out")]
        );
    }

    #[test]
    fn the_device_phases_json_lines_are_not_shown_and_text_is() {
        let text = r#"{"reason":"mcpp-device-artifact","package":"app","path":"/p/x.spv","sha256":"00"}
{"reason":"mcpp-device-finished","package":"app","success":true,"accel":"vulkan1.2","compiled":1,"fresh":0,"warnings":0}
a line of text
{"reason":"build-finished","success":true}
"#;
        let built = read_messages(std::io::Cursor::new(text), "path+file:///p#app@0.1.0");
        assert_eq!(built.text, ["a line of text"]);
    }

    /// `Built` with one `OUT_DIR` holding `list` as its sidecar list (when `Some`).
    fn out_dir_with(list: Option<&str>) -> (tempfile::TempDir, Built) {
        let d = tempfile::tempdir().unwrap();
        if let Some(l) = list {
            crate::engine::fingerprint::write_if_changed(
                &d.path().join(SIDECARS_FILE),
                l.as_bytes(),
            )
            .unwrap();
        }
        let built = Built {
            out_dirs: vec![d.path().to_path_buf(), d.path().to_path_buf()],
            ..Default::default()
        };
        (d, built)
    }

    #[test]
    fn sidecars_are_read_from_each_out_dir_and_bad_lists_refused_naming_the_file() {
        let (_d, built) = out_dir_with(None);
        assert!(sidecars(&built).unwrap().is_empty(), "no list, no sidecars");
        let src = tempfile::NamedTempFile::new().unwrap();
        let s = src.path().display().to_string();
        let (_d, built) = out_dir_with(Some(&format!(
            r#"{{"version":1,"sidecars":[{{"source":"{s}","relative":"kernels/k.bin"}}]}}"#
        )));
        assert_eq!(
            sidecars(&built).unwrap(),
            [("kernels/k.bin".to_string(), src.path().to_path_buf())],
            "read once per OUT_DIR"
        );
        for (list, says) in [
            (
                r#"{"version":2,"sidecars":[]}"#.to_string(),
                "has version 2, and this cargo-mcpp reads version 1",
            ),
            (r#"{"sidecars":[]}"#.to_string(), "missing field `version`"),
            (
                format!(
                    r#"{{"version":1,"sidecars":[{{"source":"{s}/missing","relative":"k.bin"}}]}}"#
                ),
                "does not exist",
            ),
            (
                r#"{"version":1,"sidecars":[{"source":"rel/k.bin","relative":"k.bin"}]}"#
                    .to_string(),
                "is not an absolute path",
            ),
            (
                format!(
                    r#"{{"version":1,"sidecars":[{{"source":"{s}","relative":"/abs/k.bin"}}]}}"#
                ),
                "relative `/abs/k.bin` is not a relative",
            ),
            (
                format!(r#"{{"version":1,"sidecars":[{{"source":"{s}","relative":"../k.bin"}}]}}"#),
                "relative `../k.bin` is not a relative",
            ),
            (
                format!(r#"{{"version":1,"sidecars":[{{"source":"{s}","relative":"a\\k.bin"}}]}}"#),
                "is not a relative",
            ),
            (
                format!(r#"{{"version":1,"sidecars":[{{"source":"{s}","relative":"a\nb"}}]}}"#),
                "relative `a\\nb` holds a control character",
            ),
        ] {
            let (d, built) = out_dir_with(Some(&list));
            let e = sidecars(&built).unwrap_err().to_string();
            assert!(
                e.contains(says)
                    && e.contains(&d.path().join(SIDECARS_FILE).display().to_string())
                    && e.contains("the build script writes this file"),
                "{list}: {e}"
            );
        }
    }

    #[test]
    fn icons_are_decoded_whole() {
        assert_eq!(png_problem(DEFAULT_ICON_PNG), None);
        let truncated = &DEFAULT_ICON_PNG[..DEFAULT_ICON_PNG.len() - 20];
        assert!(png_problem(truncated).is_some(), "a truncated PNG passed");
        let mut bad_crc = DEFAULT_ICON_PNG.to_vec();
        bad_crc[29] ^= 0xff; // the IHDR chunk's CRC
        assert!(
            png_problem(&bad_crc)
                .unwrap()
                .ends_with("while decoding IHDR chunk."),
            "{:?}",
            png_problem(&bad_crc)
        );
        assert!(png_problem(b"\x89PNG\r\n\x1a\n").is_some());
        assert_eq!(
            svg_problem(b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>"),
            None
        );
        assert!(svg_problem(b"<svg><g></svg>").unwrap().starts_with("XML: "));
        assert_eq!(
            svg_problem(b"<html><svg/></html>").unwrap(),
            "the root element is <html>, not <svg>"
        );
    }

    #[test]
    fn a_pack_tools_refusal_names_its_own_key() {
        let t = pack_tool_text("patchelf was found on PATH; declare it instead: [package.metadata.mcpp.tools] patchelf = \"/usr/bin/patchelf\"", "patchelf", "appimage", "patchelf");
        assert_eq!(t, "patchelf was found on PATH; declare it instead: [package.metadata.mcpp.pack.appimage] patchelf = \"/usr/bin/patchelf\"");
        assert!(!pack_tool_text(
            "name a program ([package.metadata.mcpp.tools] wixl, or X)",
            "wixl",
            "msi",
            "tool"
        )
        .contains(".tools]"));
    }

    #[test]
    fn two_files_for_one_place_are_refused() {
        let e = |d: &str, p: &str| Entry {
            dest: d.into(),
            origin: Origin::File(p.into()),
            executable: false,
        };
        let err = finish_entries(
            vec![e("b", "/x/b"), e("a", "/x/a1"), e("a", "/x/a2")],
            Path::new("/p/Cargo.toml"),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("two files would be `a`")
                && err.contains("/x/a1")
                && err.contains("/x/a2"),
            "{err}"
        );
        assert_eq!(
            finish_entries(vec![e("b", "/x/b"), e("a", "/x/a")], Path::new("/p"), &[]).unwrap()[0]
                .dest,
            "a"
        );
        // A file whose place runs through another file's, not adjacent once sorted.
        let err = finish_entries(
            vec![
                e("usr/bin/hello", "/x/h"),
                e("usr/bin/hello-x", "/x/hx"),
                e("usr/bin/hello/greet.txt", "/x/g"),
            ],
            Path::new("/p"),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`usr/bin/hello` would be a file and also the directory holding `usr/bin/hello/greet.txt`") && err.contains("/x/g"), "{err}");
        // A sidecar's clash names the sidecar list.
        let err = finish_entries(
            vec![e("usr/bin/k", "/s/k"), e("usr/bin/k", "/x/k")],
            Path::new("/p"),
            &[PathBuf::from("/s/k")],
        )
        .unwrap_err();
        let text = format!("{err:?} {err}");
        assert!(text.contains("mcpp-sidecars.json"), "{text}");
    }
}
