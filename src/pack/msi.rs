//! The MSI writer (the WiX source of dist-wix).
//!
//! Two routes, chosen by the tool ([`Route`]): a WiX v3 source rendered from
//! `templates/pack-wixl.wxs` built by `wixl -a x64` (Debian's msitools `wixl` 0.101 reads WiX
//! v3 only; the default on non-Windows hosts), or a WiX v4+ source rendered from
//! `templates/pack-wix4.wxs` built by `wix build -arch x64` (the default on Windows hosts, or
//! whenever `pack.msi.tool` names a program called `wix`/`wix.exe`). Either way: one component
//! per file under `ProgramFiles64Folder\<app name>` (the program, the DLLs the build links,
//! the sidecars, the extra files), `MajorUpgrade` with a downgrade message. The tool is
//! resolved by the one resolver ([`crate::tool`]: `pack.msi.tool`, `WIXL`/`MCPP_TOOL_WIXL` or
//! `MCPP_TOOL_WIX`, PATH; `cargo mcpp why tool wixl|wix --release --target <triple>` shows
//! the decision).
//!
//! - UpgradeCode: `pack.msi.upgrade-code`, else derived from the package's identity
//!   ([`identity`]: the name, then the repository URL, else the first author) by
//!   [`derived_guid`]: the first 16 bytes of sha256(`cargo-mcpp msi upgrade-code\0<identity>`),
//!   marked as an RFC 9562 version-8 UUID. Stable across versions and machines.
//! - ProductCode: derived the same way from the UpgradeCode and the MSI version, so each
//!   version has its own (a major upgrade) and a rebuild of one version the same.
//! - Component GUIDs: derived from the UpgradeCode and the file's place (stable per file).
//! - Version: [`msi_version`].

use super::{Entry, Origin, PackageFacts, Plan};
use crate::config::env::Env;
use crate::engine::layout::DeviceCache;
use crate::error::{Error, ErrorKind, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The WiX v3 template (`templates/pack-wixl.wxs`), for wixl.
pub const TEMPLATE: &str = include_str!("../../templates/pack-wixl.wxs");

/// The WiX v4+ template (`templates/pack-wix4.wxs`), for `wix build`.
pub const TEMPLATE_V4: &str = include_str!("../../templates/pack-wix4.wxs");

/// The XML namespace of a WiX v4+ source (the root `<Wix>` of [`TEMPLATE_V4`]).
pub const WIX4_NAMESPACE: &str = "http://wixtoolset.org/schemas/v4/wxs";

/// WiX v4+'s `wix` (the .NET tool), for the one resolver.
pub const WIX: crate::tool::ToolSpec = crate::tool::ToolSpec {
    name: "wix",
    programs: &["wix"],
    env_vars: &[],
    version_args: &["--version"],
    install_hint: "dotnet tool install --global wix (WiX v4 or later; Windows)",
    toolchain_package: None,
    toolkit: None,
};

/// How the MSI is written: the tool and its source schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `wixl -a x64 -o <msi> <wxs>` of a WiX v3 source ([`TEMPLATE`]).
    Wixl,
    /// `wix build -arch x64 -o <msi> <wxs>` of a WiX v4+ source ([`TEMPLATE_V4`]).
    Wix,
}

impl Route {
    /// The route of a tool named `pack.msi.tool = path`: `wix` for a program called `wix` or
    /// `wix.exe` (any case), `wixl` for any other; without one, `wix` on a Windows host and
    /// `wixl` elsewhere.
    pub fn of(tool: Option<&Path>) -> Route {
        match tool {
            Some(p) => match p
                .file_name()
                .map(|f| f.to_string_lossy().to_ascii_lowercase())
            {
                Some(f) if f == "wix" || f == "wix.exe" => Route::Wix,
                _ => Route::Wixl,
            },
            None if cfg!(windows) => Route::Wix,
            None => Route::Wixl,
        }
    }
    /// The tool's name (`wixl`, `wix`).
    pub fn program(&self) -> &'static str {
        self.spec().name
    }
    /// The tool, for the resolver.
    pub fn spec(&self) -> &'static crate::tool::ToolSpec {
        match self {
            Route::Wixl => &WIXL,
            Route::Wix => &WIX,
        }
    }
    /// The arguments before the output and the source (`-a x64` / `build -arch x64`).
    pub fn args(&self) -> &'static [&'static str] {
        match self {
            Route::Wixl => &["-a", "x64"],
            Route::Wix => &["build", "-arch", "x64"],
        }
    }
}

/// `wixl`, for the one resolver.
pub const WIXL: crate::tool::ToolSpec = crate::tool::ToolSpec {
    name: "wixl",
    programs: &["wixl"],
    env_vars: &["WIXL"],
    version_args: &["--version"],
    install_hint: "apt install wixl (Debian: a package of its own, apart from msitools)",
    toolchain_package: None,
    toolkit: None,
};

/// What the MSI needs that is checked before the build.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The route: which tool, which source schema.
    pub route: Route,
    /// wixl or wix.
    pub tool: crate::tool::Tool,
    /// `{GUID}`, upper case.
    pub upgrade_code: String,
    /// `{GUID}`, upper case.
    pub product_code: String,
    /// `major.minor.patch`.
    pub version: String,
    /// The Manufacturer.
    pub manufacturer: String,
    /// The product icon (`pack.icon`, a PNG wrapped as an ICO image: [`ico`]) with the file it
    /// came from; `None` without `pack.icon` (or with an SVG one, warned).
    pub icon: Option<(PathBuf, Vec<u8>)>,
}

/// The name of the product icon in the MSI's Icon table, which `ARPPRODUCTICON` names
/// (Windows takes the type from the extension).
pub const ICON_ID: &str = "ProductIcon.ico";

/// The most pixels an MSI's icon may have on each side: 256, the most an ICO image entry
/// describes.
pub const ICON_MAX_PIXELS: u32 = 256;

/// An ICO file of one image, the PNG `png` of `width` x `height` pixels (each 1 to 256)
/// stored whole, as Windows Vista and later read it: the 6-byte directory (type 1, one
/// image), one 16-byte entry (a side of 256 written as 0, 32 bits per pixel, the PNG's size
/// and its offset, 22), then the PNG.
pub fn ico(png: &[u8], width: u32, height: u32) -> Vec<u8> {
    let side = |n: u32| if n >= 256 { 0 } else { n as u8 };
    let mut out = Vec::with_capacity(22 + png.len());
    out.extend_from_slice(&[0, 0, 1, 0, 1, 0]);
    out.extend_from_slice(&[side(width), side(height), 0, 0]);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&32u16.to_le_bytes());
    out.extend_from_slice(&(png.len() as u32).to_le_bytes());
    out.extend_from_slice(&22u32.to_le_bytes());
    out.extend_from_slice(png);
    out
}

/// The product icon of `pack.icon` ([`super::icon`]'s checks first): a PNG of at most
/// [`ICON_MAX_PIXELS`] on each side as an ICO image; an SVG is warned about and left out
/// (Windows Installer shows ICO images, and an SVG would need a renderer).
///
/// # Errors
/// [`super::icon`]'s refusals; [`ErrorKind::Manifest`] naming `pack.icon` for a PNG larger
/// than [`ICON_MAX_PIXELS`].
fn product_icon(facts: &PackageFacts) -> Result<Option<(PathBuf, Vec<u8>)>> {
    if facts.options().icon.is_none() {
        return Ok(None);
    }
    let (ext, origin) = super::icon(facts)?;
    let Origin::File(path) = origin else {
        return Ok(None);
    };
    if ext != "png" {
        eprintln!("warning: the MSI carries no product icon: pack.icon `{}` is an SVG image, and Windows Installer shows ICO images; name a PNG of at most {ICON_MAX_PIXELS}x{ICON_MAX_PIXELS} pixels to give the MSI its icon", path.display());
        return Ok(None);
    }
    let png = super::read_bounded(&path, super::ICON_MAX_BYTES).map_err(|reason| {
        Error::new(
            ErrorKind::Io,
            format!("the icon {} {reason}", path.display()),
        )
        .file(&path)
    })?;
    let (w, h) = super::png_dimensions(&png).unwrap_or((0, 0));
    if w > ICON_MAX_PIXELS || h > ICON_MAX_PIXELS {
        return Err(Error::new(ErrorKind::Manifest, format!("the icon is {w}x{h} pixels, and an MSI's product icon (an ICO image) has at most {ICON_MAX_PIXELS}x{ICON_MAX_PIXELS}"))
            .file(facts.at("pack.icon"))
            .key("package.metadata.mcpp.pack.icon")
            .help(format!("scale the PNG to {ICON_MAX_PIXELS}x{ICON_MAX_PIXELS} pixels or less")));
    }
    Ok(Some((path, ico(&png, w, h))))
}

/// The MSI ProductVersion of a package version: `major.minor.patch` of semver, each within
/// the MSI ranges (major and minor 0-255, patch 0-65535; out of range is refused, since
/// clamping would make two releases equal). Build metadata (`+...`) is left out. A
/// pre-release (`1.2.3-beta.1`) is refused: Windows Installer compares only three fields,
/// so it would equal its release or another pre-release.
///
/// # Errors
/// The reason, one line.
pub fn msi_version(version: &str) -> std::result::Result<String, String> {
    let core = version.split_once('+').map_or(version, |(c, _)| c);
    if let Some((_, pre)) = core.split_once('-') {
        return Err(format!(
            "`{version}` is a pre-release (`-{pre}`): an MSI's version has three numbers that Windows Installer compares, so it would install as equal to its release or to another pre-release"
        ));
    }
    let parts: Vec<&str> = core.split('.').collect();
    let numbers: Vec<u64> = parts
        .iter()
        .filter_map(|p| {
            if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.len() <= 10 {
                p.parse().ok()
            } else {
                None
            }
        })
        .collect();
    if parts.len() != 3 || numbers.len() != 3 {
        return Err(format!(
            "`{version}` is not a `major.minor.patch` version of three numbers"
        ));
    }
    let limits = [("major", 255), ("minor", 255), ("patch", 65535)];
    for ((what, max), n) in limits.iter().zip(&numbers) {
        if n > max {
            return Err(format!("`{version}`: the {what} number {n} is above {max}, the most an MSI version holds there"));
        }
    }
    Ok(format!("{}.{}.{}", numbers[0], numbers[1], numbers[2]))
}

/// The identity the UpgradeCode is derived from: `<name>` and, on the next line, the
/// repository URL, else the first author, else nothing.
pub fn identity(facts: &PackageFacts) -> String {
    let second = facts
        .repository
        .clone()
        .or_else(|| facts.authors.first().cloned())
        .unwrap_or_default();
    format!("{}\n{second}", facts.name)
}

/// A GUID derived from `kind` and `input`: the first 16 bytes of
/// sha256(`cargo-mcpp msi <kind>\0<input>`) with the RFC 9562 version (8) and variant bits
/// set, as `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` in upper case.
pub fn derived_guid(kind: &str, input: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("cargo-mcpp msi {kind}\0{input}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02X}")).collect();
    format!(
        "{{{}-{}-{}-{}-{}}}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// `text` as a GUID `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` (braces optional, any case), or `None`.
pub fn parse_guid(text: &str) -> Option<String> {
    let t = text.trim();
    let t = t
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(t);
    let groups: Vec<&str> = t.split('-').collect();
    let ok = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    ok.then(|| format!("{{{}}}", t.to_ascii_uppercase()))
}

/// The Manufacturer: `pack.msi.manufacturer`, else the first author without its `<email>`,
/// else the package name.
pub fn manufacturer(facts: &PackageFacts) -> String {
    if let Some(m) = facts.options().msi.and_then(|m| m.manufacturer) {
        return m;
    }
    facts
        .authors
        .first()
        .map(|a| a.split('<').next().unwrap_or(a).trim().to_string())
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| facts.name.clone())
}

/// Check the target (Windows, x86_64), the version, the UpgradeCode, and resolve the tool of
/// the [`Route`] (recording the decision in the device cache `cache`).
///
/// # Errors
/// [`ErrorKind::Manifest`] with the way out for a non-Windows target, another architecture,
/// a version an MSI cannot carry, an UpgradeCode that is not a GUID;
/// [`ErrorKind::ToolNotFound`] when wixl is not found.
pub fn prepare(facts: &PackageFacts, env: &Env, cache: &DeviceCache) -> Result<Prepared> {
    if !super::is_windows(&facts.target) {
        return Err(Error::new(
            ErrorKind::Manifest,
            format!(
                "an MSI is a Windows format, and this build targets `{}`",
                crate::text::echo(&facts.target)
            ),
        )
        .help("build for a Windows target: --target x86_64-pc-windows-gnu (or -msvc)")
        .help("or pack for Linux with --format appimage"));
    }
    if super::arch_of(&facts.target) != "x86_64" {
        return Err(Error::new(
            ErrorKind::Manifest,
            format!(
                "wixl writes x64 MSIs only, and this build targets `{}`",
                crate::text::echo(&facts.target)
            ),
        )
        .help("pack for x86_64-pc-windows-gnu or x86_64-pc-windows-msvc"));
    }
    let options = facts.options();
    let version = msi_version(&facts.version).map_err(|m| {
        let (at, key) = if options.version.is_some() { (facts.at("pack.version"), "package.metadata.mcpp.pack.version".to_string()) } else { (match facts.manifest.spans.position("package.version") {
            Some((l, c)) => format!("{}:{l}:{c}", facts.manifest.path.display()),
            None => facts.manifest.path.display().to_string(),
        }, "package.version".to_string()) };
        Error::new(ErrorKind::Manifest, m)
            .file(at)
            .key(key)
            .help("give the MSI a version of three numbers in [package.metadata.mcpp.pack] version = \"1.2.4\" (major, minor <= 255, patch <= 65535), later than the last release's")
    })?;
    let upgrade_code = match options.msi.as_ref().and_then(|m| m.upgrade_code.clone()) {
        Some(text) => parse_guid(&text).ok_or_else(|| {
            Error::new(ErrorKind::Manifest, format!("upgrade-code `{}` is not a GUID", crate::text::echo(&text)))
                .file(facts.at("pack.msi.upgrade-code"))
                .key("package.metadata.mcpp.pack.msi.upgrade-code")
                .help("write it as {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX} (hexadecimal), the one your earlier installers used; or remove the key to derive one from the package")
        })?,
        None => derived_guid("upgrade-code", &identity(facts)),
    };
    let product_code = derived_guid("product-code", &format!("{upgrade_code}\n{version}"));
    let named = facts.options().msi.and_then(|m| m.tool);
    let route = Route::of(named.as_deref());
    let tool = resolve_tool(facts, route, env, cache)?;
    let icon = product_icon(facts)?;
    Ok(Prepared {
        route,
        tool,
        upgrade_code,
        product_code,
        version,
        manufacturer: manufacturer(facts),
        icon,
    })
}

/// The route's tool through the one resolver (`pack.msi.tool` as the manifest's choice), its
/// decision recorded in `cache`; a PATH answer's warning names `pack.msi.tool` as the way to
/// declare it.
fn resolve_tool(
    facts: &PackageFacts,
    route: Route,
    env: &Env,
    cache: &DeviceCache,
) -> Result<crate::tool::Tool> {
    std::fs::create_dir_all(cache.dir()).map_err(|e| Error::io("cannot create", cache.dir(), e))?;
    let spec = route.spec();
    let mut choices = crate::tool::ToolChoices {
        manifest_path: facts.manifest.path.clone(),
        ..Default::default()
    };
    if let Some(t) = facts.options().msi.and_then(|m| m.tool) {
        choices.manifest.insert(
            spec.name.to_string(),
            if t.is_absolute() {
                t
            } else {
                facts.manifest.dir().join(t)
            },
        );
        if let Some(l) = facts.manifest.line("pack.msi.tool") {
            choices.manifest_lines.insert(spec.name.to_string(), l);
        }
    }
    // The way to declare it for pack is its own key, not a rule's `tools` entry.
    let (tool, warning) = crate::tool::resolve(spec, &choices, env, cache)
        .map_err(|e| super::pack_tool_error(e, facts, spec.name, "msi", "tool"))?;
    if let Some(w) = warning {
        eprintln!(
            "warning: {}",
            super::pack_tool_text(&w, spec.name, "msi", "tool")
        );
    }
    Ok(tool)
}

/// The MSI's plan: the program as `<name>.exe`, the DLLs the build links and the sidecars
/// the build scripts list beside it (with `built`; a `--dry-run`, `None`, notes what it cannot
/// know), the extra files below the install folder, and `<out>/<app>-<version>-x64.msi`.
///
/// # Errors
/// The refusals of [`super::extra_files`], [`super::sidecars`] and [`super::finish_entries`].
pub fn plan(
    facts: &PackageFacts,
    prepared: &Prepared,
    program: &super::Program,
    built: Option<&super::Built>,
    out_dir: &Path,
) -> Result<Plan> {
    let name = &program.name;
    let mut entries = vec![Entry {
        dest: format!("{name}.exe"),
        origin: program.origin.clone(),
        executable: true,
    }];
    for (lib, path) in built
        .map(|b| super::shared_libraries(&b.links, true))
        .unwrap_or_default()
    {
        entries.push(Entry {
            dest: lib,
            origin: Origin::File(path),
            executable: false,
        });
    }
    let sidecars = built.map(super::sidecars).transpose()?.unwrap_or_default();
    let sidecar_sources: Vec<PathBuf> = sidecars.iter().map(|(_, p)| p.clone()).collect();
    for (place, path) in sidecars {
        entries.push(Entry {
            dest: place,
            origin: Origin::File(path),
            executable: false,
        });
    }
    for (place, path) in super::extra_files(facts, out_dir)? {
        entries.push(Entry {
            dest: place,
            origin: Origin::File(path),
            executable: false,
        });
    }
    let entries = super::finish_entries(entries, &facts.manifest.path, &sidecar_sources)?;
    check_windows_names(&entries, &facts.manifest.path, &sidecar_sources)?;
    let output = out_dir.join(format!(
        "{}-{}-x64.msi",
        super::file_part(&facts.app_name(name)),
        prepared.version
    ));
    let wxs = output.with_extension("wxs");
    Ok(Plan {
        format: super::Format::Msi,
        output: output.clone(),
        entries,
        tool: format!(
            "{} ({}) {} -o {} {} (WiX {} source; UpgradeCode {}, ProductCode {}, version {})",
            prepared.tool.path.display(),
            prepared.tool.version_line(),
            prepared.route.args().join(" "),
            output.display(),
            wxs.display(),
            if prepared.route == Route::Wix {
                "v4"
            } else {
                "v3"
            },
            prepared.upgrade_code,
            prepared.product_code,
            prepared.version
        ),
        notes: prepared
            .icon
            .iter()
            .map(|(p, _)| format!("the product icon (Icon table `{ICON_ID}`, ARPPRODUCTICON): {}, as an ICO image written beside the package", p.display()))
            .chain(built.is_none().then(|| super::DRY_RUN_NOTE.to_string()))
            .collect(),
    })
}

/// Refuse what Windows cannot install: a name holding a character illegal in a Windows file
/// name (`<>:"|?*`, `\\`, a control character) or ending in `.` or a space, and two places that
/// are one on a case-insensitive file system (`app.exe` and `App.EXE`, `data/a` and
/// `Data/b` with a file `data`), each named with both sources.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the entry (or both entries) and `pack.files`.
pub fn check_windows_names(entries: &[Entry], manifest: &Path, sidecars: &[PathBuf]) -> Result<()> {
    for e in entries {
        if let Some(part) = e.dest.split('/').find(|p| {
            p.chars().any(|c| {
                matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*' | '\\') || c.is_control()
            }) || p.ends_with('.')
                || p.ends_with(' ')
        }) {
            return Err(Error::new(ErrorKind::Manifest, format!("`{}` ({}) cannot be installed on Windows: its name `{}` holds a character Windows file names cannot have (`<>:\"|?*\\`, a control character) or ends in `.` or a space", crate::text::echo(&e.dest), e.origin.shown(), crate::text::echo(part)))
                .file(manifest)
                .key("package.metadata.mcpp.pack.files")
                .help("rename the file, or leave it out of the glob"));
        }
    }
    // The same checks as the package's own, on the names as Windows compares them.
    let folded: Vec<Entry> = entries
        .iter()
        .map(|e| Entry {
            dest: e.dest.to_lowercase(),
            ..e.clone()
        })
        .collect();
    super::finish_entries(folded, manifest, sidecars).map(|_| ()).map_err(|e| e.detail("Windows compares file names without regard to case, so these are one place in the install folder"))
}

/// `s` escaped for an XML attribute value.
pub fn xml(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The `.wxs` text for `plan`: the route's template ([`TEMPLATE`] or [`TEMPLATE_V4`]) with
/// every value escaped; a v3 component is `Win64="yes"` with its `Source` relative to `/`
/// (where wixl runs), a v4 one `Bitness="always64"` with its absolute `Source`.
///
/// # Errors
/// [`ErrorKind::Manifest`] for an entry that is not a file on disk (an MSI carries files only).
pub fn render(
    facts: &PackageFacts,
    program: &str,
    plan: &Plan,
    prepared: &Prepared,
) -> Result<String> {
    // Directory tree: "" is INSTALLFOLDER.
    let mut dirs: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for e in &plan.entries {
        let parent = e
            .dest
            .rsplit_once('/')
            .map(|(d, _)| d.to_string())
            .unwrap_or_default();
        let mut d = parent.clone();
        loop {
            dirs.entry(d.clone()).or_default();
            match d.rsplit_once('/') {
                Some((up, _)) => d = up.to_string(),
                None if !d.is_empty() => d = String::new(),
                None => break,
            }
        }
        dirs.entry(parent).or_default().push(e);
    }
    let short = |s: &str| {
        derived_guid("id", &format!("{}\n{s}", prepared.upgrade_code)).replace(['{', '}', '-'], "")
            [..16]
            .to_string()
    };
    let mut refs = String::new();
    fn emit(
        dir: &str,
        depth: usize,
        dirs: &BTreeMap<String, Vec<&Entry>>,
        prepared: &Prepared,
        short: &dyn Fn(&str) -> String,
        out: &mut String,
        refs: &mut String,
    ) -> Result<()> {
        let pad = "  ".repeat(depth + if prepared.route == Route::Wix { 4 } else { 5 });
        for e in &dirs[dir] {
            let Origin::File(source) = &e.origin else {
                return Err(Error::new(
                    ErrorKind::Manifest,
                    format!(
                        "`{}` is not a file on disk ({}), and an MSI carries files only",
                        e.dest,
                        e.origin.shown()
                    ),
                ));
            };
            let (bitness, source) = match prepared.route {
                // wixl refuses an absolute Source: relative to `/`, where it runs.
                Route::Wixl => (
                    "Win64=\"yes\"",
                    source
                        .display()
                        .to_string()
                        .trim_start_matches('/')
                        .to_string(),
                ),
                Route::Wix => ("Bitness=\"always64\"", source.display().to_string()),
            };
            let leaf = e.dest.rsplit('/').next().unwrap_or(&e.dest);
            let id = short(&e.dest);
            let guid = derived_guid(
                "component",
                &format!("{}\n{}", prepared.upgrade_code, e.dest),
            );
            out.push_str(&format!(
                "{pad}<Component Id=\"C_{id}\" Guid=\"{guid}\" {bitness}>\n{pad}  <File Id=\"F_{id}\" Name=\"{}\" Source=\"{}\" KeyPath=\"yes\" />\n{pad}</Component>\n",
                xml(leaf),
                xml(&source)
            ));
            refs.push_str(&format!("      <ComponentRef Id=\"C_{id}\" />\n"));
        }
        let children: Vec<&String> = dirs
            .keys()
            .filter(|k| {
                !k.is_empty()
                    && k.rsplit_once('/').map(|(p, _)| p).unwrap_or("") == dir
                    && k.as_str() != dir
            })
            .collect();
        for child in children {
            let leaf = child.rsplit('/').next().unwrap_or(child);
            out.push_str(&format!(
                "{pad}<Directory Id=\"D_{}\" Name=\"{}\">\n",
                short(&format!("dir:{child}")),
                xml(leaf)
            ));
            emit(child, depth + 1, dirs, prepared, short, out, refs)?;
            out.push_str(&format!("{pad}</Directory>\n"));
        }
        Ok(())
    }
    let mut directories = String::new();
    emit("", 0, &dirs, prepared, &short, &mut directories, &mut refs)?;
    let description = facts
        .options()
        .comment
        .or_else(|| facts.description.clone())
        .unwrap_or_else(|| facts.app_name(program));
    let template = if prepared.route == Route::Wix {
        TEMPLATE_V4
    } else {
        TEMPLATE
    };
    let icon = match &prepared.icon {
        Some(_) => {
            let file = icon_file(&plan.output);
            // wixl takes a SourceFile relative to `/`, where it runs; wix an absolute one.
            let source = match prepared.route {
                Route::Wixl => file
                    .display()
                    .to_string()
                    .trim_start_matches('/')
                    .to_string(),
                Route::Wix => file.display().to_string(),
            };
            format!("    <Icon Id=\"{ICON_ID}\" SourceFile=\"{}\" />\n    <Property Id=\"ARPPRODUCTICON\" Value=\"{ICON_ID}\" />\n", xml(&source))
        }
        None => String::new(),
    };
    Ok(template
        .replace("{{PRODUCT_CODE}}", &prepared.product_code)
        .replace("{{UPGRADE_CODE}}", &prepared.upgrade_code)
        .replace("{{VERSION}}", &prepared.version)
        .replace("{{MANUFACTURER}}", &xml(&prepared.manufacturer))
        .replace(
            "{{DESCRIPTION}}",
            &xml(description.lines().next().unwrap_or_default()),
        )
        .replace("{{NAME}}", &xml(&facts.app_name(program)))
        .replace("{{ICON}}", &icon)
        .replace("{{DIRECTORIES}}\n", &directories)
        .replace("{{COMPONENT_REFS}}\n", &refs))
}

/// The ICO file of the product icon, written beside the package and its `.wxs`.
fn icon_file(output: &Path) -> PathBuf {
    output.with_extension("ico")
}

/// Write the `.wxs` beside the package and run the route's tool (argv) on it: `wixl -a x64 -o
/// <msi> <wxs>` in `/` (wixl takes a `Source` relative to its directory only, so the sources
/// are written relative to `/`), or `wix build -arch x64 -o <msi> <wxs>`.
///
/// # Errors
/// [`ErrorKind::ToolFailed`] with the tool's output when it fails or writes nothing;
/// [`ErrorKind::Io`] for the `.wxs`.
pub fn write(
    facts: &PackageFacts,
    program: &str,
    plan: &Plan,
    prepared: &Prepared,
    env: &Env,
) -> Result<()> {
    let wxs = plan.output.with_extension("wxs");
    if let Some((_, bytes)) = &prepared.icon {
        crate::engine::fingerprint::write_if_changed(&icon_file(&plan.output), bytes)?;
    }
    crate::engine::fingerprint::write_if_changed(
        &wxs,
        render(facts, program, plan, prepared)?.as_bytes(),
    )?;
    let _ = std::fs::remove_file(&plan.output);
    #[allow(clippy::disallowed_methods)] // pack runs the package's tool (argv)
    let mut cmd = std::process::Command::new(&prepared.tool.path);
    cmd.args(prepared.route.args())
        .arg("-o")
        .arg(&plan.output)
        .arg(&wxs)
        .current_dir("/");
    crate::config::env::apply_to(&mut cmd, env);
    prepared.tool.apply_env(&mut cmd);
    let out = cmd.output().map_err(|e| {
        Error::new(
            ErrorKind::ToolNotFound,
            format!("cannot run {}: {e}", prepared.tool.path.display()),
        )
    })?;
    if !out.status.success() || !plan.output.is_file() {
        let mut e = Error::new(
            ErrorKind::ToolFailed,
            format!(
                "{} failed ({}) on {}",
                prepared.route.program(),
                out.status,
                wxs.display()
            ),
        )
        .file(&wxs);
        for line in String::from_utf8_lossy(&out.stderr)
            .lines()
            .chain(String::from_utf8_lossy(&out.stdout).lines())
            .filter(|l| !l.trim().is_empty())
            .take(30)
        {
            e = e.detail(crate::text::escape_control(line));
        }
        return Err(e.help(format!("the .wxs above is what {} read; a defect of cargo-mcpp's template if the input files exist", prepared.route.program())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_windows_cannot_install_are_refused_naming_both_files() {
        let e = |d: &str, p: &str| Entry {
            dest: d.into(),
            origin: Origin::File(p.into()),
            executable: false,
        };
        let m = Path::new("/p/Cargo.toml");
        let err = check_windows_names(
            &[e("app.exe", "/t/app.exe"), e("App.EXE", "/p/App.EXE")],
            m,
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("/t/app.exe")
                && err.contains("/p/App.EXE")
                && err.contains("without regard to case"),
            "{err}"
        );
        let err = check_windows_names(
            &[e("data", "/p/data"), e("Data/a.txt", "/p/Data/a.txt")],
            m,
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("/p/data") && err.contains("/p/Data/a.txt"),
            "{err}"
        );
        for bad in ["a:b.txt", "d/what?.txt", "x.", "tab\there"] {
            let err = check_windows_names(&[e(bad, "/p/f")], m, &[])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("cannot be installed on Windows"),
                "{bad}: {err}"
            );
        }
        assert!(check_windows_names(
            &[
                e("app.exe", "/t/app.exe"),
                e("data/a.txt", "/p/a"),
                e("data/b.txt", "/p/b")
            ],
            m,
            &[]
        )
        .is_ok());
    }

    #[test]
    fn versions_map_to_three_fields_and_pre_releases_are_refused() {
        assert_eq!(msi_version("1.2.3").unwrap(), "1.2.3");
        assert_eq!(msi_version("1.2.3+build.7").unwrap(), "1.2.3");
        assert_eq!(msi_version("255.255.65535").unwrap(), "255.255.65535");
        assert!(msi_version("1.2.3-beta.1")
            .unwrap_err()
            .contains("pre-release"));
        assert!(msi_version("256.0.0")
            .unwrap_err()
            .contains("major number 256 is above 255"));
        assert!(msi_version("1.0.65536").unwrap_err().contains("patch"));
        assert!(
            msi_version("1.2").is_err()
                && msi_version("1.2.x").is_err()
                && msi_version("1.2.3.4").is_err()
        );
    }

    #[test]
    fn guids_are_stable_and_well_formed() {
        let a = derived_guid("upgrade-code", "app\nhttps://example.org/app");
        assert_eq!(
            a,
            derived_guid("upgrade-code", "app\nhttps://example.org/app")
        );
        assert_ne!(
            a,
            derived_guid("upgrade-code", "app\nhttps://example.org/other")
        );
        assert_eq!(parse_guid(&a), Some(a.clone()));
        assert_eq!(a.len(), 38);
        assert_eq!(&a[15..16], "8");
        assert_eq!(
            parse_guid("12345678-9abc-def0-1234-56789abcdef0").as_deref(),
            Some("{12345678-9ABC-DEF0-1234-56789ABCDEF0}")
        );
        assert_eq!(parse_guid("{1234}"), None);
    }

    #[test]
    fn an_ico_holds_the_png_whole_and_256_is_written_as_0() {
        let png = super::super::DEFAULT_ICON_PNG;
        let i = ico(png, 1, 1);
        assert_eq!(&i[..8], &[0, 0, 1, 0, 1, 0, 1, 1]);
        assert_eq!(&i[22..], png);
        assert_eq!(u32::from_le_bytes(i[18..22].try_into().unwrap()), 22);
        assert_eq!(&ico(png, 256, 48)[6..8], &[0, 48]);
    }

    #[test]
    fn xml_values_cannot_close_their_attribute() {
        assert_eq!(xml("a\"b<c>&'\n"), "a&quot;b&lt;c&gt;&amp;&apos;");
    }
}
