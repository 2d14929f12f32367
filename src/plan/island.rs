//! The island of a package (`[package.metadata.mcpp.island]`), prepared before the rules plan:
//! its lists expanded, its marker and header includes checked, its files scanned, its header
//! and C++ module emitted into the device cache (`<cache>/island/`, [`DeviceCache::island_dir`]),
//! both halves checked to define every entry point ([`check_island_halves`]); then, after the
//! actions ran, mirrored into OUT_DIR with its Rust bindings ([`publish_island`]).

use crate::error::{Error, ErrorKind, Result};
use crate::surface::island::{emit, Entry};
use crate::engine::layout::{DeviceCache, OutDir};
use crate::config::manifest::{IslandOptions, Manifest};
use crate::rules::Rule;
use crate::sources::{self, expand_globs, Collected};
use std::path::{Path, PathBuf};

/// The manifest table of the island.
const KEY: &str = "package.metadata.mcpp.island";

/// The island of a package, scanned and emitted.
#[derive(Debug, Clone)]
pub struct IslandState {
    /// What the device rules need (header, device half).
    pub boundary: crate::surface::island::Boundary,
    /// The entry points.
    pub entries: Vec<Entry>,
    /// The emitted header and module (in the device cache, `<cache>/island/`).
    pub emitted: emit::Emitted,
    /// Every scanned file.
    pub scanned: Vec<PathBuf>,
    /// Directories whose globs may gain files.
    pub watch_dirs: Vec<PathBuf>,
    /// The host fallback files to compile in this build (empty when the device half compiles).
    pub fallback: Vec<(PathBuf, String)>,
}

impl IslandState {
    /// What the host C++ lane needs of it ([`crate::rules::cxx::plan_host`]).
    pub fn cxx_units(&self) -> crate::rules::cxx::IslandUnits<'_> {
        crate::rules::cxx::IslandUnits { scanned: &self.scanned, fallback: &self.fallback, emitted: &self.emitted }
    }
}

/// Scan and emit the island declared in `[package.metadata.mcpp.island]`, if any. The header
/// and module are written into the device cache (`<cache>/island/`, shared by `cargo mcpp
/// build` and build.rs, so both plan one argv) and mirrored into OUT_DIR by [`publish_island`].
///
/// # Errors
/// As [`crate::surface::island::scan`] and [`crate::surface::island::emit::emit`]; a glob matching nothing; an
/// island without sources, a marker that is no identifier, a header include that cannot be
/// written (`check_island_options`); a signature using a standard type no header declares
/// (`check_std_types`); an entry point one half lacks ([`check_island_halves`]).
pub fn prepare_island(manifest: &Manifest, collected: &Collected, registry: &[Box<dyn Rule>], cache: &DeviceCache) -> Result<Option<IslandState>> {
    let Some(opts) = &manifest.mcpp.island else { return Ok(None) };
    if opts.sources.is_empty() {
        return Err(Error::new(ErrorKind::Manifest, "the island lists no sources to scan")
            .file(&manifest.path)
            .key(format!("{KEY}.sources"))
            .help("list the device half and its host fallback, e.g. sources = [\"kernels/saxpy.cu\", \"host/saxpy.cpp\"]"));
    }
    let (scanned, mut watch_dirs) = expand_globs(manifest, &format!("{KEY}.sources"), &opts.sources)?;
    let (fallback, w2) = expand_globs(manifest, &format!("{KEY}.fallback"), &opts.fallback)?;
    watch_dirs.extend(w2);
    let marker = check_island_options(manifest, opts)?;
    let files: Vec<PathBuf> = scanned.iter().map(|(p, _)| p.clone()).collect();
    let scanned_entries = crate::surface::island::scan_marked(&files, &marker).map_err(|e| if e.key.is_none() { e.key(format!("{KEY}.sources")) } else { e })?;
    let entries = crate::surface::island::merge_listed(scanned_entries, &opts.entries, &manifest.path, &format!("{KEY}.entries"))?;
    if entries.is_empty() {
        return Err(crate::surface::island::no_entries(&files, &marker)
            .key(format!("{KEY}.sources"))
            .help(format!("or list the entry points the scan cannot see in {KEY}.entries")));
    }
    if opts.header_includes.is_empty() {
        check_std_types(manifest, &entries)?;
    }
    let module_name = opts.module_name.clone().unwrap_or_else(|| format!("{}.kernels", crate::surface::names::module_root(&manifest.package_name)));
    let produced_by = format!("the package `{}`", manifest.package_name);
    let module = opts.emit_module.unwrap_or(true);
    let emitted = emit::emit(&entries, &module_name, &marker, &opts.header_includes, module, &cache.island_dir(), &produced_by, &format!("{KEY}.module-name")).map_err(|e| e.file(&manifest.path))?;
    let device_sources: Vec<PathBuf> = files.iter().filter(|f| sources::extension(f).is_some_and(|ext| registry.iter().any(|r| r.claims(&ext)))).cloned().collect();
    let device_compiled = collected.sources.iter().any(|s| s.selected && device_sources.contains(&s.path));
    check_island_halves(manifest, &entries, &files, &fallback, &device_sources, device_compiled)?;
    let fallback = if device_compiled { Vec::new() } else { fallback };
    Ok(Some(IslandState { boundary: crate::surface::island::Boundary { header: emitted.header.clone(), device_sources }, entries, emitted, scanned: files, watch_dirs, fallback }))
}

/// The island's own options: the marker (default [`crate::surface::island::DEFAULT_MARKER`]) is an
/// identifier, each header include can be written into an `#include` line. Returns the marker.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `marker` or `header-includes[i]`.
fn check_island_options(manifest: &Manifest, opts: &IslandOptions) -> Result<String> {
    let marker = opts.marker.clone().unwrap_or_else(|| crate::surface::island::DEFAULT_MARKER.to_string());
    if marker.is_empty() || !marker.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || marker.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(Error::new(ErrorKind::Manifest, format!("the island marker `{marker}` is not an identifier"))
            .file(&manifest.path)
            .key(format!("{KEY}.marker"))
            .help("the marker is a macro name, e.g. MCPP_EXPORT_C"));
    }
    for (i, inc) in opts.header_includes.iter().enumerate() {
        if let Err(why) = emit::check_header_include(inc) {
            return Err(Error::new(ErrorKind::Manifest, format!("the header-includes entry `{}` cannot be written into an #include line: {why}", crate::text::echo(inc)))
                .file(&manifest.path)
                .key(format!("{KEY}.header-includes[{i}]"))
                .help("write `<name.h>`, `\"name.h\"` or a bare `name.h` (included as `<name.h>`)"));
        }
    }
    Ok(marker)
}

/// Without `header-includes` the generated header includes nothing, so a standard typedef in a
/// signature (`uint32_t`, `size_t`) would fail later, in the generated module or in bindgen,
/// less clearly: refused here.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the entry point, its line and the type.
fn check_std_types(manifest: &Manifest, entries: &[Entry]) -> Result<()> {
    const STD_TYPES: &[&str] = &["int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t"];
    for e in entries {
        let used = e.decl.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).find(|w| STD_TYPES.contains(w));
        if let Some(t) = used {
            return Err(Error::new(ErrorKind::Manifest, format!("the entry point `{}` ({}) uses `{t}`, and the generated header includes no header that declares it", e.name, e.place()))
                .file(&manifest.path)
                .key(format!("{KEY}.header-includes"))
                .detail(format!("  {}", e.decl))
                .help("name the headers the signatures need: header-includes = [\"<stdint.h>\"] (or <stddef.h> for size_t)"));
        }
    }
    Ok(())
}

/// Every entry point must be defined by both halves: by a device source (when the island has
/// one) and by the fallback (when it has one), and a build that compiles no device half needs a
/// fallback at all; otherwise the bindings name a symbol nothing defines and the link fails.
///
/// # Errors
/// [`ErrorKind::Manifest`] for a fallback file the island does not scan; [`ErrorKind::Sources`]
/// for an entry point a half lacks, or no half in this build.
pub fn check_island_halves(manifest: &Manifest, entries: &[Entry], scanned: &[PathBuf], fallback: &[(PathBuf, String)], device: &[PathBuf], device_compiled: bool) -> Result<()> {
    let rel = |p: &Path| p.strip_prefix(manifest.dir()).unwrap_or(p).display().to_string();
    for (path, r) in fallback {
        if !scanned.contains(path) {
            return Err(Error::new(ErrorKind::Manifest, format!("the island fallback {r} is not among the island's sources"))
                .file(&manifest.path)
                .key(format!("{KEY}.fallback"))
                .detail("It would be compiled but never scanned, so its entry points could differ from the boundary unseen.")
                .help(format!("add it to {KEY}.sources too")));
        }
    }
    let host: Vec<&PathBuf> = fallback.iter().map(|(p, _)| p).collect();
    // A listed entry (`entries`) has no files: the scan cannot see where it is defined, so the
    // link is the only check.
    for e in entries.iter().filter(|e| !e.files.is_empty()) {
        let in_device = e.files.iter().any(|f| device.contains(f));
        let in_host = e.files.iter().any(|f| host.contains(&f));
        let lacking = if !device.is_empty() && !in_device {
            Some(("the device half", device.iter().map(|p| rel(p)).collect::<Vec<_>>(), "a build with the accelerator"))
        } else if !host.is_empty() && !in_host {
            Some(("the host fallback", host.iter().map(|p| rel(p)).collect::<Vec<_>>(), "a build without it (`--no-accel`)"))
        } else {
            None
        };
        if let Some((half, files, build)) = lacking {
            return Err(Error::new(ErrorKind::Sources, format!("the entry point `{}` is not defined by {half}", e.name))
                .file(&e.origin)
                .detail(format!("marked at {}:{} (defined in: {})", rel(&e.origin), e.line, e.files.iter().map(|p| rel(p)).collect::<Vec<_>>().join(", ")))
                .detail(format!("{half}: {}", files.join(", ")))
                .detail(format!("The boundary (header, bindings, module) declares it in every build, so {build} would fail to link."))
                .help(format!("define `{}` with the same signature in {half}, or unmark it", e.decl)));
        }
    }
    if host.is_empty() && !device_compiled {
        if let Some(e) = entries.first() {
            return Err(Error::new(ErrorKind::Sources, format!("this build compiles no device half of the island, and the island has no fallback, so nothing defines `{}`", e.name))
                .file(&manifest.path)
                .key(format!("{KEY}.fallback"))
                .help(format!("add a host fallback ({KEY}.fallback), or build with an accelerator set that names the island's backend")));
        }
    }
    Ok(())
}

/// The extensions of the device sources that can be an island's device half (their rules force
/// the boundary header into the compile): CUDA, HIP, SYCL, Ascend C and CCE C.
pub const ISLAND_DEVICE_EXTENSIONS: &[&str] = &["cu", "hip", "sycl", "asc", "cce"];

/// Refuse a marked entry point outside the island ([`crate::surface::island::refuse_marked_outside`])
/// among the device sources of `sources` that can be a device half ([`ISLAND_DEVICE_EXTENSIONS`])
/// and the files of `cxx-sources`.
///
/// # Errors
/// As [`crate::surface::island::refuse_marked_outside`]; a `cxx-sources` glob matching nothing.
pub fn refuse_marked_outside(manifest: &Manifest, collected: &Collected, island: Option<&IslandState>) -> Result<()> {
    let cu = collected.sources.iter().filter(|s| ISLAND_DEVICE_EXTENSIONS.contains(&s.ext.as_str())).map(|s| (s.path.clone(), s.rel.clone()));
    let (cxx, _) = expand_globs(manifest, "package.metadata.mcpp.cxx-sources", &manifest.mcpp.cxx_sources)?;
    crate::surface::island::refuse_marked_outside(manifest, cu.chain(cxx), island.map(|i| i.scanned.as_slice()))
}

/// Mirror the island's header and module into `OUT_DIR/mcpp/` and write its Rust bindings to
/// `OUT_DIR/mcpp_kernels.rs` (for `include!`); the bindings are generated beside the header in
/// the device cache first.
///
/// # Errors
/// As [`crate::surface::island::bindings::generate`]; [`ErrorKind::Io`] for writes.
pub fn publish_island(island: &IslandState, out: &OutDir) -> Result<()> {
    for f in std::iter::once(&island.emitted.header).chain(&island.emitted.interface) {
        let bytes = std::fs::read(f).map_err(|e| Error::io("cannot read", f, e))?;
        let name = f.file_name().unwrap_or_default();
        crate::engine::fingerprint::write_if_changed(&out.cpp_dir().join(name), &bytes)?;
    }
    // Under `emit-module = false` no module is written: a copy an earlier build left is removed,
    // so OUT_DIR holds only what this build generated.
    if island.emitted.interface.is_none() {
        emit::remove_stale(&out.cpp_dir().join(format!("{}.cppm", island.emitted.module_name)))?;
    }
    let bindings = island.emitted.dir.join(format!("{}.rs", island.emitted.module_name));
    crate::surface::island::bindings::generate(&island.emitted.header, &island.entries, &bindings)?;
    let bytes = std::fs::read(&bindings).map_err(|e| Error::io("cannot read", &bindings, e))?;
    crate::engine::fingerprint::write_if_changed(&out.island_bindings(), &bytes)?;
    Ok(())
}
