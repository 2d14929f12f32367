//! The AppImage writer (the layout of dist-appimage).
//!
//! The AppDir: `AppRun` (a relocatable `sh` launcher: resolves its own directory and execs
//! `usr/bin/<program>` with the arguments), `<program>.desktop`, the icon `<program>.png|svg`
//! and `.DirIcon` (a copy), `usr/bin/<program>`, `usr/lib/` (the shared libraries the build
//! links), and the sidecars and extra files below `usr/bin/` (where the program finds them
//! beside itself).
//!
//! When the package carries shared libraries, the packed copy of the program has its RUNPATH
//! set to `$ORIGIN/../lib` by `patchelf` (resolved by the one resolver: `pack.appimage.patchelf`,
//! `PATCHELF`, `MCPP_TOOL_PATCHELF`, PATH; `cargo mcpp why tool patchelf --release`), so the
//! program finds them however it is started (AppRun, the extracted tree, `usr/bin/` directly),
//! with no `LD_LIBRARY_PATH` that its own children would inherit. The built executable is
//! not changed.
//!
//! The squashfs image is written in process with `backhand` (gzip, the compression the runtime
//! reads; block size 128 KiB; every entry owned by root, dated `SOURCE_DATE_EPOCH` or 0, so
//! the same inputs give the same bytes) and appended to the type-2 runtime: the
//! `appimage-runtime` toolchain package (installed by `cargo mcpp fetch`, its pinned sha256
//! checked here), or `--runtime-file` / `pack.appimage.runtime-file`. Nothing is downloaded.

use super::{Entry, Origin, PackageFacts, Plan};
use crate::config::env::Env;
use crate::engine::layout::DeviceCache;
use crate::error::{Error, ErrorKind, Result};
use crate::toolchain_package::{Catalog, Home, APPIMAGE_RUNTIME, CATALOG_FILE};
use std::path::{Path, PathBuf};

/// The file of the runtime inside the `appimage-runtime` toolchain package's root.
pub const RUNTIME_FILE: &str = "runtime-x86_64";

/// The RUNPATH of the packed program when the package carries shared libraries: `usr/lib`
/// seen from `usr/bin`.
pub const RPATH: &str = "$ORIGIN/../lib";

/// `patchelf` (Debian's `patchelf`), for the one resolver.
pub const PATCHELF: crate::tool::ToolSpec = crate::tool::ToolSpec {
    name: "patchelf",
    programs: &["patchelf"],
    env_vars: &["PATCHELF"],
    version_args: &["--version"],
    install_hint: "apt install patchelf",
    toolchain_package: None,
    toolkit: None,
};

/// `ldd` (the C library's), for the one resolver: lists the shared libraries a program loads
/// and where this system has them.
pub const LDD: crate::tool::ToolSpec = crate::tool::ToolSpec {
    name: "ldd",
    programs: &["ldd"],
    env_vars: &["LDD"],
    version_args: &["--version"],
    install_hint: "ldd comes with the C library (Debian: libc-bin)",
    toolchain_package: None,
    toolkit: None,
};

/// The libraries every desktop Linux system has, which an AppImage never carries: the active
/// entries of the AppImage project's exclude list (`excludelist` of
/// <https://github.com/AppImageCommunity/pkg2appimage>, the list linuxdeploy and
/// linuxdeployqt use: the C library, the C++ runtime, OpenGL/EGL and the display server's
/// client libraries, ALSA, fontconfig, freetype, zlib, ...), plus the NVIDIA driver's
/// `libcuda.so.1`, which must match the kernel driver installed where the program runs.
pub const EXCLUDED_LIBRARIES: &[&str] = &[
    // The GNU C library.
    "ld-linux.so.2",
    "ld-linux-x86-64.so.2",
    "libanl.so.1",
    "libBrokenLocale.so.1",
    "libcidn.so.1",
    "libc.so.6",
    "libdl.so.2",
    "libm.so.6",
    "libmvec.so.1",
    "libnss_compat.so.2",
    "libnss_dns.so.2",
    "libnss_files.so.2",
    "libnss_hesiod.so.2",
    "libnss_nisplus.so.2",
    "libnss_nis.so.2",
    "libpthread.so.0",
    "libresolv.so.2",
    "librt.so.1",
    "libthread_db.so.1",
    "libutil.so.1",
    // The C++ runtime.
    "libstdc++.so.6",
    // Graphics drivers and the display server.
    "libGL.so.1",
    "libEGL.so.1",
    "libGLdispatch.so.0",
    "libGLX.so.0",
    "libOpenGL.so.0",
    "libdrm.so.2",
    "libglapi.so.0",
    "libgbm.so.1",
    "libxcb.so.1",
    "libX11.so.6",
    "libX11-xcb.so.1",
    "libwayland-client.so.0",
    "libxcb-dri3.so.0",
    "libxcb-dri2.so.0",
    // Sound, fonts and text.
    "libasound.so.2",
    "libfontconfig.so.1",
    "libfreetype.so.6",
    "libharfbuzz.so.0",
    "libfribidi.so.0",
    "libjack.so.0",
    "libpipewire-0.3.so.0",
    // The base system.
    "libcom_err.so.2",
    "libexpat.so.1",
    "libgcc_s.so.1",
    "libgpg-error.so.0",
    "libICE.so.6",
    "libSM.so.6",
    "libusb-1.0.so.0",
    "libuuid.so.1",
    "libz.so.1",
    "libgmp.so.10",
    // cargo-mcpp's addition: the CUDA driver library.
    "libcuda.so.1",
];

/// The RUNPATH of a system library the package carries: `usr/lib` itself, so the bundled
/// libraries find each other.
pub const LIB_RPATH: &str = "$ORIGIN";

/// What the AppImage needs that is checked before the build.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The type-2 runtime file.
    pub runtime: PathBuf,
    /// Where it came from, for the plan.
    pub runtime_from: String,
    /// The icon's extension (`png`/`svg`) and bytes.
    pub icon: (&'static str, Origin),
    /// The time every entry and the image carry (seconds since the epoch).
    pub epoch: u32,
    /// `patchelf` with the resolver's PATH warning (shown only when it is used), or the
    /// resolver's refusal, which refuses the package only when it carries shared libraries
    /// (known after the build).
    pub patchelf: std::result::Result<(crate::tool::Tool, Option<String>), Error>,
    /// `ldd`, or why not: without it the system libraries the program loads are not examined
    /// (a note of the plan says so).
    pub ldd: std::result::Result<crate::tool::Tool, Error>,
}

/// Check the target (Linux, x86_64), the icon, the runtime (its decision recorded in the
/// device cache `cache` for `cargo mcpp why tool appimage-runtime`) and `SOURCE_DATE_EPOCH`.
///
/// # Errors
/// [`ErrorKind::Manifest`] with the way out: a non-Linux target, an architecture without a
/// declared runtime (aarch64 named), a bad icon, a runtime that is not installed, damaged or
/// not a type-2 runtime, a `SOURCE_DATE_EPOCH` that is not a number of seconds.
pub fn prepare(
    facts: &PackageFacts,
    runtime_arg: Option<&Path>,
    env: &Env,
    cache: &DeviceCache,
) -> Result<Prepared> {
    if !super::is_linux(&facts.target) {
        return Err(Error::new(ErrorKind::Manifest, format!("an AppImage is a Linux format, and this build targets `{}`", crate::text::echo(&facts.target)))
            .help("use --format msi for a Windows target, or build for a Linux target (--target x86_64-unknown-linux-gnu)"));
    }
    match super::arch_of(&facts.target) {
        "x86_64" => {}
        // A runtime named explicitly may be one for aarch64; the declared toolchain package is not.
        "aarch64" if runtime_arg.is_some() || facts.options().appimage.and_then(|a| a.runtime_file).is_some() => {}
        "aarch64" => {
            return Err(Error::new(ErrorKind::Manifest, format!("no AppImage runtime for aarch64 is declared (target `{}`)", facts.target))
                .detail("the one runtime cargo-mcpp declares, the `appimage-runtime` toolchain package, is for x86_64")
                .help("pass a type-2 runtime for aarch64 with --runtime-file PATH (or [package.metadata.mcpp.pack.appimage] runtime-file)"))
        }
        other => {
            return Err(Error::new(ErrorKind::Manifest, format!("no AppImage runtime is declared for the architecture `{}`", crate::text::echo(other)))
                .help("pack for x86_64, or pass a type-2 runtime for this architecture with --runtime-file PATH"))
        }
    }
    let icon = super::icon(facts)?;
    // The runtime's decision is recorded like a tool's: `cargo mcpp why tool appimage-runtime`.
    std::fs::create_dir_all(cache.dir()).map_err(|e| Error::io("cannot create", cache.dir(), e))?;
    let (runtime, source, runtime_from) = match runtime(facts, runtime_arg, env) {
        Ok(r) => r,
        Err(e) => {
            let _ = crate::tool::record_decision(
                cache,
                decision(None, "none", "nothing answered", Some(e.to_string())),
            );
            return Err(e);
        }
    };
    crate::tool::record_decision(cache, decision(Some(&runtime), source, &runtime_from, None))?;
    let epoch = match env.get_nonempty("SOURCE_DATE_EPOCH") {
        None => 0,
        Some(v) => v.trim().parse::<u32>().map_err(|_| {
            Error::new(ErrorKind::Usage, format!("SOURCE_DATE_EPOCH=`{}` is not a number of seconds since 1970 (0 to 4294967295)", crate::text::echo(&v))).help("set it to e.g. $(git log -1 --format=%ct), or unset it (every entry is then dated 0)")
        })?,
    };
    let patchelf = resolve_patchelf(facts, env, cache);
    let ldd = crate::tool::resolve(&LDD, &crate::tool::ToolChoices::default(), env, cache)
        .map(|(t, _)| t);
    Ok(Prepared {
        runtime,
        runtime_from,
        icon,
        epoch,
        patchelf,
        ldd,
    })
}

/// patchelf through the one resolver (`pack.appimage.patchelf` as the manifest's choice), its
/// decision recorded in `cache`; a PATH answer's warning names `pack.appimage.patchelf`.
fn resolve_patchelf(
    facts: &PackageFacts,
    env: &Env,
    cache: &DeviceCache,
) -> Result<(crate::tool::Tool, Option<String>)> {
    let mut choices = crate::tool::ToolChoices {
        manifest_path: facts.manifest.path.clone(),
        ..Default::default()
    };
    if let Some(t) = facts.options().appimage.and_then(|a| a.patchelf) {
        choices.manifest.insert(
            PATCHELF.name.to_string(),
            if t.is_absolute() {
                t
            } else {
                facts.manifest.dir().join(t)
            },
        );
        if let Some(l) = facts.manifest.line("pack.appimage.patchelf") {
            choices.manifest_lines.insert(PATCHELF.name.to_string(), l);
        }
    }
    crate::tool::resolve(&PATCHELF, &choices, env, cache)
        .map(|(tool, warning)| {
            (
                tool,
                warning.map(|w| super::pack_tool_text(&w, PATCHELF.name, "appimage", "patchelf")),
            )
        })
        .map_err(|e| super::pack_tool_error(e, facts, PATCHELF.name, "appimage", "patchelf"))
}

/// The recorded decision for the runtime (`tool` = [`APPIMAGE_RUNTIME`]).
fn decision(
    answer: Option<&Path>,
    source: &str,
    origin: &str,
    refusal: Option<String>,
) -> crate::tool::Decision {
    crate::tool::Decision {
        tool: APPIMAGE_RUNTIME.to_string(),
        answer: answer.map(Path::to_path_buf),
        version: None,
        source: source.to_string(),
        origin: origin.to_string(),
        considered: Vec::new(),
        warning: None,
        refusal,
        toolkit: None,
        toolkit_origin: None,
        reason: None,
    }
}

/// The runtime: `--runtime-file`, else `pack.appimage.runtime-file`, else the installed
/// `appimage-runtime` toolchain package with its pinned sha256. Returns the file, the
/// decision's source (`choice`, `toolchain-package`: [`crate::tool::Decision::source`]) and
/// what decided it.
fn runtime(
    facts: &PackageFacts,
    arg: Option<&Path>,
    env: &Env,
) -> Result<(PathBuf, &'static str, String)> {
    if let Some(p) = arg {
        check_runtime_file(p, super::arch_of(&facts.target)).map_err(|m| Error::new(ErrorKind::Manifest, format!("--runtime-file {}: {m}", p.display())).help(format!("name a type-2 AppImage runtime for the target's architecture (a regular ELF file of at most {} with `AI\\x02` at offset 8)", super::mib(super::RUNTIME_MAX_BYTES))))?;
        return Ok((p.to_path_buf(), "choice", "--runtime-file".into()));
    }
    if let Some(rel) = facts.options().appimage.and_then(|a| a.runtime_file) {
        let p = facts.manifest.dir().join(&rel);
        check_runtime_file(&p, super::arch_of(&facts.target)).map_err(|m| {
            Error::new(ErrorKind::Manifest, format!("runtime-file `{}`: {m}", crate::text::echo(&rel.display().to_string())))
                .file(facts.at("pack.appimage.runtime-file"))
                .key("package.metadata.mcpp.pack.appimage.runtime-file")
                .help(format!("name a type-2 AppImage runtime (a regular file of at most {}, relative to the package root), or remove the key to use the `appimage-runtime` toolchain package", super::mib(super::RUNTIME_MAX_BYTES)))
        })?;
        return Ok((
            p,
            "choice",
            format!(
                "{} [package.metadata.mcpp.pack.appimage] runtime-file",
                facts.at("pack.appimage.runtime-file")
            ),
        ));
    }
    let catalog = Catalog::builtin()?;
    let desc = catalog.get(APPIMAGE_RUNTIME)?;
    let home = Home::from_env(env)?;
    let fetch = format!(
        "cargo mcpp fetch --manifest-path {}",
        facts.manifest.path.display()
    );
    let Some(inst) = home.installed(&catalog, APPIMAGE_RUNTIME, &desc.default) else {
        return Err(Error::new(ErrorKind::Manifest, format!("the AppImage runtime (toolchain package `{APPIMAGE_RUNTIME}` {}) is not installed in {}", desc.default, home.root.display()))
            .detail("`cargo mcpp pack` never downloads: the runtime is a declared, hash-pinned toolchain package")
            .help(format!("run `{fetch}` once (a package with [package.metadata.mcpp.pack] fetches it), or `cargo mcpp fetch {APPIMAGE_RUNTIME}`"))
            .help("or pass a type-2 runtime with --runtime-file PATH"));
    };
    let file = inst.root.join(RUNTIME_FILE);
    let want = desc.sha256.get(RUNTIME_FILE).cloned().unwrap_or_default();
    let found = crate::engine::fingerprint::hash_file(&file);
    if found.as_deref() != Some(want.as_str()) {
        return Err(Error::new(
            ErrorKind::Manifest,
            format!(
                "the installed AppImage runtime {} does not have the bytes {CATALOG_FILE} pins",
                file.display()
            ),
        )
        .file(&file)
        .detail(format!("pinned: {want}"))
        .detail(format!(
            "found:  {}",
            found.as_deref().unwrap_or("(no such file)")
        ))
        .help(format!("run `{fetch}`: a damaged install is reinstalled")));
    }
    Ok((
        file,
        "toolchain-package",
        format!("toolchain package {APPIMAGE_RUNTIME} {}", desc.default),
    ))
}

/// The ELF `e_machine` of an architecture (the first part of a target triple), when known.
pub fn elf_machine(arch: &str) -> Option<u16> {
    Some(match arch {
        "x86_64" => 62,
        "aarch64" => 183,
        "i686" | "i586" | "i386" => 3,
        a if a.starts_with("arm") || a.starts_with("thumb") => 40,
        "riscv64gc" | "riscv64" => 243,
        "powerpc64le" | "powerpc64" => 21,
        "s390x" => 22,
        "loongarch64" => 258,
        _ => return None,
    })
}

/// `Err(reason)` unless `path` is a readable ELF file with the type-2 magic `AI\x02` at offset 8
/// whose `e_machine` (offset 18, in the header's byte order) is the architecture `arch`'s.
fn check_runtime_file(path: &Path, arch: &str) -> std::result::Result<(), String> {
    let bytes = super::read_bounded(path, super::RUNTIME_MAX_BYTES)?;
    if !bytes.starts_with(b"\x7fELF") || bytes.get(8..11) != Some(b"AI\x02".as_slice()) {
        return Err(
            "is not a type-2 AppImage runtime (no ELF header with `AI\\x02` at offset 8)".into(),
        );
    }
    let Some(m) = bytes.get(18..20) else {
        return Err("is not a type-2 AppImage runtime (its ELF header is cut short)".into());
    };
    let machine = if bytes[5] == 2 {
        u16::from_be_bytes([m[0], m[1]])
    } else {
        u16::from_le_bytes([m[0], m[1]])
    };
    match elf_machine(arch) {
        Some(want) if want != machine => Err(format!("is a runtime for another architecture (ELF e_machine {machine}), and the target's architecture `{}` has e_machine {want}", crate::text::echo(arch))),
        _ => Ok(()),
    }
}

/// A desktop-entry string value: `\`, newline, tab and carriage return escaped as the
/// Desktop Entry Specification says; other control characters dropped.
pub fn desktop_value(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The freedesktop.org registered main categories (Desktop Menu Specification 1.1, appendix A).
pub const MAIN_CATEGORIES: &[&str] = &[
    "AudioVideo",
    "Audio",
    "Video",
    "Development",
    "Education",
    "Game",
    "Graphics",
    "Network",
    "Office",
    "Science",
    "Settings",
    "System",
    "Utility",
];

/// The freedesktop.org registered additional categories (Desktop Menu Specification 1.1,
/// appendix A; the reserved ones, which need `OnlyShowIn=`, are left out).
pub const ADDITIONAL_CATEGORIES: &[&str] = &[
    "Building",
    "Debugger",
    "IDE",
    "GUIDesigner",
    "Profiling",
    "RevisionControl",
    "Translation",
    "Calendar",
    "ContactManagement",
    "Database",
    "Dictionary",
    "Chart",
    "Email",
    "Finance",
    "FlowChart",
    "PDA",
    "ProjectManagement",
    "Presentation",
    "Spreadsheet",
    "WordProcessor",
    "2DGraphics",
    "VectorGraphics",
    "RasterGraphics",
    "3DGraphics",
    "Scanning",
    "OCR",
    "Photography",
    "Publishing",
    "Viewer",
    "TextTools",
    "DesktopSettings",
    "HardwareSettings",
    "Printing",
    "PackageManager",
    "Dialup",
    "InstantMessaging",
    "Chat",
    "IRCClient",
    "Feed",
    "FileTransfer",
    "HamRadio",
    "News",
    "P2P",
    "RemoteAccess",
    "Telephony",
    "TelephonyTools",
    "VideoConference",
    "WebBrowser",
    "WebDevelopment",
    "Midi",
    "Mixer",
    "Sequencer",
    "Tuner",
    "TV",
    "AudioVideoEditing",
    "Player",
    "Recorder",
    "DiscBurning",
    "ActionGame",
    "AdventureGame",
    "ArcadeGame",
    "BoardGame",
    "BlocksGame",
    "CardGame",
    "KidsGame",
    "LogicGame",
    "RolePlaying",
    "Shooter",
    "Simulation",
    "SportsGame",
    "StrategyGame",
    "Art",
    "Construction",
    "Music",
    "Languages",
    "ArtificialIntelligence",
    "Astronomy",
    "Biology",
    "Chemistry",
    "ComputerScience",
    "DataVisualization",
    "Economy",
    "Electricity",
    "Geography",
    "Geology",
    "Geoscience",
    "History",
    "Humanities",
    "ImageProcessing",
    "Literature",
    "Maps",
    "Math",
    "NumericalAnalysis",
    "MedicalSoftware",
    "Physics",
    "Robotics",
    "Spirituality",
    "Sports",
    "ParallelComputing",
    "Amusement",
    "Archiving",
    "Compression",
    "Electronics",
    "Emulator",
    "Engineering",
    "FileTools",
    "FileManager",
    "TerminalEmulator",
    "Filesystem",
    "Monitor",
    "Security",
    "Accessibility",
    "Calculator",
    "Clock",
    "TextEditor",
    "Documentation",
    "Adult",
    "Core",
    "KDE",
    "GNOME",
    "XFCE",
    "DDE",
    "GTK",
    "Qt",
    "Motif",
    "Java",
    "ConsoleOnly",
];

/// The `.desktop` file (`Exec=` and `Icon=` are the program's name).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming `pack.categories` for an empty list, a name that is not a
/// registered main or additional category ([`MAIN_CATEGORIES`], [`ADDITIONAL_CATEGORIES`]), or
/// a list without a main category (desktop-file-validate wants one).
pub fn desktop_entry(facts: &PackageFacts, program: &str) -> Result<String> {
    let options = facts.options();
    let categories = options
        .categories
        .clone()
        .unwrap_or_else(|| vec!["Utility".into()]);
    let refuse = |what: String| {
        Error::new(ErrorKind::Manifest, what)
            .file(facts.at("pack.categories"))
            .key("package.metadata.mcpp.pack.categories")
            .help(format!("name at least one main category ({}), then any additional ones (https://specifications.freedesktop.org/menu-spec/latest/category-registry.html)", MAIN_CATEGORIES.join(", ")))
    };
    if let Some(bad) = categories.iter().find(|c| {
        !MAIN_CATEGORIES.contains(&c.as_str()) && !ADDITIONAL_CATEGORIES.contains(&c.as_str())
    }) {
        return Err(refuse(format!(
            "the category `{}` is not a registered freedesktop.org main or additional category",
            crate::text::echo(bad)
        )));
    }
    if !categories
        .iter()
        .any(|c| MAIN_CATEGORIES.contains(&c.as_str()))
    {
        return Err(refuse(if categories.is_empty() {
            "`categories` is empty".to_string()
        } else {
            format!(
                "`categories` ({}) names no main category",
                categories.join(", ")
            )
        }));
    }
    let mut text = String::from("[Desktop Entry]\nType=Application\n");
    text.push_str(&format!(
        "Name={}\n",
        desktop_value(&facts.app_name(program))
    ));
    if let Some(c) = options
        .comment
        .clone()
        .or_else(|| facts.description.clone())
        .filter(|c| !c.trim().is_empty())
    {
        text.push_str(&format!(
            "Comment={}\n",
            desktop_value(c.lines().next().unwrap_or_default())
        ));
    }
    text.push_str(&format!(
        "Exec={program}\nIcon={program}\nCategories={};\nTerminal={}\n",
        categories.join(";"),
        options.terminal.unwrap_or(true)
    ));
    text.push_str(&format!(
        "X-AppImage-Version={}\n",
        desktop_value(&facts.version)
    ));
    Ok(text)
}

/// `AppRun`: resolves its own directory, execs `usr/bin/<program>` with the arguments (the
/// program finds `usr/lib` through its own RUNPATH, [`RPATH`]).
pub fn app_run(program: &str) -> String {
    format!("#!/bin/sh\n# Written by cargo mcpp pack: runs the program with the arguments, wherever the AppDir is.\nAPPDIR=\"$(dirname \"$(readlink -f \"$0\")\")\"\nexport APPDIR\nexec \"$APPDIR/usr/bin/{program}\" \"$@\"\n")
}

/// The system libraries a program loads that a package carries, `(name, path)` each, and the
/// names `ldd` did not find.
pub type SystemLibraries = (Vec<(String, PathBuf)>, Vec<String>);

/// The shared libraries `program` loads from this system that the package carries, as `ldd`
/// answers (run with the build's own library directories `search` in `LD_LIBRARY_PATH`, so
/// the build's libraries resolve): every one but those of [`EXCLUDED_LIBRARIES`] and those
/// named in `carried` (the build's, packed already); and the names `ldd` did not find.
///
/// # Errors
/// [`ErrorKind::ToolFailed`] when `ldd` cannot run or fails on the program.
pub fn system_libraries(
    program: &Path,
    ldd: &crate::tool::Tool,
    search: &[PathBuf],
    carried: &[String],
    env: &Env,
) -> Result<SystemLibraries> {
    #[allow(clippy::disallowed_methods)] // pack runs the system's ldd (argv)
    let mut cmd = std::process::Command::new(&ldd.path);
    cmd.arg(program);
    crate::config::env::apply_to(&mut cmd, env);
    ldd.apply_env(&mut cmd);
    if !search.is_empty() {
        cmd.env(
            "LD_LIBRARY_PATH",
            std::env::join_paths(search).unwrap_or_default(),
        );
    }
    let out = cmd.output().map_err(|e| {
        Error::new(
            ErrorKind::ToolFailed,
            format!("cannot run {}: {e}", ldd.path.display()),
        )
    })?;
    if !out.status.success() {
        return Err(Error::new(ErrorKind::ToolFailed, format!("{} failed ({}) on {}", ldd.path.display(), out.status, program.display()))
            .detail(crate::text::escape_control(String::from_utf8_lossy(&out.stderr).trim()))
            .help("the program must be a dynamically linked ELF executable of this machine's architecture"));
    }
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout), carried))
}

/// [`system_libraries`]' reading of `ldd`'s output: `name => /path (0x...)` lines kept unless
/// excluded or carried, `name => not found` lines as missing; the vDSO and the loader (no
/// `=>`) left out.
fn parse_ldd(text: &str, carried: &[String]) -> SystemLibraries {
    let (mut found, mut missing) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let Some((name, rest)) = line.trim().split_once(" => ") else {
            continue;
        };
        if EXCLUDED_LIBRARIES.contains(&name) || carried.iter().any(|c| c == name) {
            continue;
        }
        let path = rest.rsplit_once(" (").map_or(rest, |(p, _)| p).trim();
        if path == "not found" {
            missing.push(name.to_string());
        } else if path.starts_with('/') && !found.iter().any(|(n, _): &(String, PathBuf)| n == name)
        {
            found.push((name.to_string(), PathBuf::from(path)));
        }
    }
    (found, missing)
}

/// The AppImage's plan: the AppDir's files and `<out>/<app>-<version>-<target arch>.AppImage`.
/// With `built` (a real pack), the shared libraries the build links go to `usr/lib/`, the
/// program's copy then gets the RUNPATH [`RPATH`] ([`Origin::Patched`]), and the sidecars the
/// build scripts list go below `usr/bin/`; a `--dry-run` (`None`) notes what it cannot know.
///
/// # Errors
/// The refusals of [`desktop_entry`], [`super::extra_files`], [`super::sidecars`] and
/// [`super::finish_entries`]; the resolver's refusal of patchelf when shared libraries are
/// carried.
pub fn plan(
    facts: &PackageFacts,
    prepared: &Prepared,
    program: &super::Program,
    built: Option<&super::Built>,
    out_dir: &Path,
) -> Result<Plan> {
    let name = &program.name;
    let libs = built
        .map(|b| super::shared_libraries(&b.links, false))
        .unwrap_or_default();
    let sidecars = built.map(super::sidecars).transpose()?.unwrap_or_default();
    let sidecar_sources: Vec<PathBuf> = sidecars.iter().map(|(_, p)| p.clone()).collect();
    let mut notes = Vec::new();
    // The system's libraries the program loads beyond the exclude list, found by ldd on this
    // machine (so only for a program of its architecture).
    let mut system: Vec<(String, PathBuf)> = Vec::new();
    if let (Some(_), Origin::File(exe)) = (built, &program.origin) {
        let carried: Vec<String> = libs.iter().map(|(n, _)| n.clone()).collect();
        let search: Vec<PathBuf> = libs
            .iter()
            .filter_map(|(_, p)| p.parent().map(Path::to_path_buf))
            .collect();
        match &prepared.ldd {
            _ if super::arch_of(&facts.target) != std::env::consts::ARCH => notes.push(format!("the system libraries the program loads are not examined: it is built for {}, and ldd reads programs of this machine ({})", super::arch_of(&facts.target), std::env::consts::ARCH)),
            Err(e) => notes.push(format!("the system libraries the program loads are not examined, since ldd is not available: {}", e.message)),
            Ok(ldd) => {
                let (found, missing) = system_libraries(exe, ldd, &search, &carried, &Env::process())?;
                if !found.is_empty() {
                    notes.push(format!("bundled from this system into usr/lib/ (libraries not every desktop has; the exclude list is the AppImage project's): {}", found.iter().map(|(n, p)| format!("{n} ({})", p.display())).collect::<Vec<_>>().join(", ")));
                }
                if !missing.is_empty() {
                    notes.push(format!("ldd did not find {}: the program needs them where it runs", missing.join(", ")));
                }
                system = found;
            }
        }
    }
    let exe = match &program.origin {
        Origin::File(source) if !libs.is_empty() || !system.is_empty() => {
            let all: Vec<&str> = libs
                .iter()
                .chain(&system)
                .map(|(n, _)| n.as_str())
                .collect();
            let (tool, _) = prepared.patchelf.clone().map_err(|e| e.detail(format!("the package carries shared libraries ({}), so the program's copy needs the RUNPATH {RPATH}", all.join(", "))))?;
            notes.push(format!(
                "the program's RUNPATH: {RPATH}, set on the packed copy by {} ({})",
                tool.path.display(),
                tool.version_line()
            ));
            Origin::Patched {
                source: source.clone(),
                rpath: RPATH.to_string(),
            }
        }
        other => other.clone(),
    };
    if built.is_none() {
        notes.push(super::DRY_RUN_NOTE.to_string());
        notes.push(format!("when the build links shared libraries, they go to usr/lib/ and the program's copy gets the RUNPATH {RPATH} (patchelf)"));
    }
    let mut entries = vec![
        Entry {
            dest: "AppRun".into(),
            origin: Origin::Generated("launcher", app_run(name).into_bytes()),
            executable: true,
        },
        Entry {
            dest: format!("{name}.desktop"),
            origin: Origin::Generated("desktop entry", desktop_entry(facts, name)?.into_bytes()),
            executable: false,
        },
        Entry {
            dest: format!("{name}.{}", prepared.icon.0),
            origin: prepared.icon.1.clone(),
            executable: false,
        },
        Entry {
            dest: ".DirIcon".into(),
            origin: prepared.icon.1.clone(),
            executable: false,
        },
        Entry {
            dest: format!("usr/bin/{name}"),
            origin: exe,
            executable: true,
        },
    ];
    for (lib, path) in libs {
        entries.push(Entry {
            dest: format!("usr/lib/{lib}"),
            origin: Origin::File(path),
            executable: false,
        });
    }
    for (lib, path) in system {
        entries.push(Entry {
            dest: format!("usr/lib/{lib}"),
            origin: Origin::Patched {
                source: path,
                rpath: LIB_RPATH.to_string(),
            },
            executable: false,
        });
    }
    // Sidecars and extra files keep their executable bit (a helper script, a tool).
    for (place, path) in sidecars
        .into_iter()
        .chain(super::extra_files(facts, out_dir)?)
    {
        entries.push(Entry {
            dest: format!("usr/bin/{place}"),
            executable: super::is_executable(&path),
            origin: Origin::File(path),
        });
    }
    let entries = super::finish_entries(entries, &facts.manifest.path, &sidecar_sources)?;
    let output = out_dir.join(format!(
        "{}-{}-{}.AppImage",
        super::file_part(&facts.app_name(name)),
        super::file_part(&facts.version),
        super::file_part(super::arch_of(&facts.target))
    ));
    Ok(Plan {
        format: super::Format::Appimage,
        output,
        entries,
        tool: format!(
            "backhand (squashfs, gzip, in process) + type-2 runtime {} ({})",
            prepared.runtime.display(),
            prepared.runtime_from
        ),
        notes,
    })
}

/// A copy of `source` in the directory `tmp` (named `<index>-<file name>`) with the RUNPATH
/// `rpath`, edited by `patchelf --set-rpath` (argv); returns the copy's path. `source` is not
/// changed, and the copy is made file to file (never held in memory).
///
/// # Errors
/// [`ErrorKind::Io`] for the copy; [`ErrorKind::ToolFailed`] with patchelf's output.
pub fn patched(
    source: &Path,
    rpath: &str,
    patchelf: &crate::tool::Tool,
    env: &Env,
    tmp: &Path,
    index: usize,
) -> Result<PathBuf> {
    let copy = tmp.join(format!(
        "{index}-{}",
        source
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| "program".to_string())
    ));
    std::fs::copy(source, &copy).map_err(|e| Error::io("cannot copy", source, e))?;
    #[cfg(unix)]
    {
        // A library copied from a read-only system file must be writable for patchelf.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io("cannot make writable", &copy, e))?;
    }
    #[allow(clippy::disallowed_methods)] // pack runs the package's tool (argv)
    let mut cmd = std::process::Command::new(&patchelf.path);
    cmd.arg("--set-rpath").arg(rpath).arg(&copy);
    crate::config::env::apply_to(&mut cmd, env);
    patchelf.apply_env(&mut cmd);
    let out = cmd.output().map_err(|e| {
        Error::new(
            ErrorKind::ToolNotFound,
            format!("cannot run {}: {e}", patchelf.path.display()),
        )
    })?;
    if !out.status.success() {
        let mut e = Error::new(
            ErrorKind::ToolFailed,
            format!(
                "patchelf failed ({}) setting the RUNPATH of a copy of {}",
                out.status,
                source.display()
            ),
        )
        .file(source);
        for line in String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(20)
        {
            e = e.detail(crate::text::escape_control(line));
        }
        return Err(e.help("the program must be a dynamically linked ELF executable; name another patchelf with [package.metadata.mcpp.pack.appimage] patchelf"));
    }
    Ok(copy)
}

/// The squashfs image of `entries` as bytes ([`squashfs_to`] into memory; for tests).
///
/// # Errors
/// [`squashfs_to`]'s.
pub fn squashfs(entries: &[Entry], epoch: u32) -> Result<Vec<u8>> {
    let mut out = std::io::Cursor::new(Vec::new());
    squashfs_to(entries, epoch, &mut out, 0)?;
    Ok(out.into_inner())
}

/// Write the squashfs image of `entries` (gzip, root-owned, every entry dated `epoch`,
/// directories created for every parent) into `w` at `offset` (after the runtime), streaming:
/// a file entry is opened and read when its turn comes, never held whole.
///
/// # Errors
/// [`ErrorKind::Io`] when a source cannot be read or backhand refuses the tree.
pub fn squashfs_to<W: std::io::Write + std::io::Seek>(
    entries: &[Entry],
    epoch: u32,
    w: W,
    offset: u64,
) -> Result<()> {
    // Some of backhand's errors display as nothing: the debug form then says which.
    let cause = |e: &backhand::BackhandError| {
        if e.to_string().trim().is_empty() {
            format!("{e:?}")
        } else {
            e.to_string()
        }
    };
    let fail = |e: backhand::BackhandError| {
        Error::new(
            ErrorKind::Io,
            format!("cannot write the squashfs image: {}", cause(&e)),
        )
    };
    let mut fs = backhand::FilesystemWriter::default();
    fs.set_time(epoch);
    fs.set_only_root_id();
    fs.set_root_mode(0o755);
    fs.set_compressor(
        backhand::FilesystemCompressor::new(backhand::compression::Compressor::Gzip, None)
            .map_err(fail)?,
    );
    let dir = backhand::NodeHeader::new(0o755, 0, 0, epoch);
    let mut dirs: Vec<String> = Vec::new();
    for e in entries {
        let parts: Vec<&str> = e.dest.split('/').collect();
        for i in 1..parts.len() {
            let d = parts[..i].join("/");
            if !dirs.contains(&d) {
                fs.push_dir(&d, dir).map_err(|e| {
                    Error::new(
                        ErrorKind::Io,
                        format!(
                            "cannot write the squashfs image: the directory `{d}`: {}",
                            cause(&e)
                        ),
                    )
                })?;
                dirs.push(d);
            }
        }
        let header =
            backhand::NodeHeader::new(if e.executable { 0o755 } else { 0o644 }, 0, 0, epoch);
        let pushed = match &e.origin {
            Origin::File(p) => fs.push_file_from_path(p, &e.dest, header),
            Origin::Generated(_, b) => {
                fs.push_file(std::io::Cursor::new(b.as_slice()), &e.dest, header)
            }
            Origin::BuiltAtPack(_) | Origin::Patched { .. } => {
                return Err(Error::new(
                    ErrorKind::Manifest,
                    format!("`{}` has no bytes yet: {}", e.dest, e.origin.shown()),
                ))
            }
        };
        pushed.map_err(|err| {
            Error::new(
                ErrorKind::Io,
                format!(
                    "cannot write the squashfs image: the file `{}`: {}",
                    e.dest,
                    cause(&err)
                ),
            )
        })?;
    }
    fs.write_with_offset(w, offset).map_err(fail)?;
    Ok(())
}

/// Write the AppImage: the runtime followed by the squashfs image, atomically, mode 0755;
/// an [`Origin::Patched`] entry is made by [`patched`] first.
///
/// # Errors
/// [`ErrorKind::Io`] for reading the runtime or the sources, or writing the package;
/// [`patched`]'s.
pub fn write(plan: &Plan, prepared: &Prepared, env: &Env) -> Result<()> {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-pack-")
        .tempdir()
        .map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("cannot create a temporary directory: {e}"),
            )
        })?;
    let mut entries = plan.entries.clone();
    let mut warned = false;
    for (i, e) in entries.iter_mut().enumerate() {
        if let Origin::Patched { source, rpath } = &e.origin {
            let (tool, warning) = prepared.patchelf.as_ref().map_err(Clone::clone)?;
            if let Some(w) = warning.as_ref().filter(|_| !warned) {
                eprintln!("warning: {w}");
                warned = true;
            }
            e.origin = Origin::File(patched(source, rpath, tool, env, tmp.path(), i)?);
        }
    }
    let runtime =
        super::read_bounded(&prepared.runtime, super::RUNTIME_MAX_BYTES).map_err(|reason| {
            Error::new(
                ErrorKind::Io,
                format!(
                    "the AppImage runtime {} {reason}",
                    prepared.runtime.display()
                ),
            )
            .file(&prepared.runtime)
        })?;
    // Written into a temporary file beside the package and renamed over it (atomic), unless
    // the package already has these bytes (then left as it is).
    let dir = plan.output.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| Error::io("cannot create a temporary file in", dir, e))?;
    {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(file.as_file_mut());
        w.write_all(&runtime)
            .map_err(|e| Error::io("cannot write", &plan.output, e))?;
        squashfs_to(&entries, prepared.epoch, &mut w, runtime.len() as u64)?;
        w.flush()
            .map_err(|e| Error::io("cannot write", &plan.output, e))?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io("cannot make executable", file.path(), e))?;
    }
    let same = |a: &Path, b: &Path| {
        std::fs::metadata(a).ok().map(|m| m.len()) == std::fs::metadata(b).ok().map(|m| m.len())
            && crate::engine::fingerprint::sha256_file(a).ok()
                == crate::engine::fingerprint::sha256_file(b).ok()
    };
    if plan.output.is_file() && same(file.path(), &plan.output) {
        return Ok(());
    }
    file.persist(&plan.output)
        .map_err(|e| Error::io("cannot write", &plan.output, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_is_the_same_bytes_for_the_same_inputs_and_dated_by_the_epoch() {
        let entries = vec![
            Entry {
                dest: "AppRun".into(),
                origin: Origin::Generated("launcher", app_run("app").into_bytes()),
                executable: true,
            },
            Entry {
                dest: "usr/bin/app".into(),
                origin: Origin::Generated("x", b"\x7fELF...".to_vec()),
                executable: true,
            },
        ];
        let a = squashfs(&entries, 1_700_000_000).unwrap();
        assert_eq!(a, squashfs(&entries, 1_700_000_000).unwrap());
        assert_ne!(a, squashfs(&entries, 1).unwrap());
        assert_eq!(&a[..4], b"hsqs");
    }

    #[test]
    fn an_entry_through_another_files_place_is_refused_by_the_image_with_its_cause() {
        let f = |d: &str| Entry {
            dest: d.into(),
            origin: Origin::Generated("x", b"x".to_vec()),
            executable: false,
        };
        let e = squashfs(&[f("usr/bin/hello"), f("usr/bin/hello/greet.txt")], 0)
            .unwrap_err()
            .to_string();
        assert!(
            !e.trim_end().ends_with("image:") && e.contains("usr/bin/hello"),
            "{e}"
        );
    }

    #[test]
    fn ldd_lines_give_the_libraries_beyond_the_exclude_list() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibpng16.so.16 => /lib/x86_64-linux-gnu/libpng16.so.16 (0x00007f10)\n\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x00007f20)\n\tlibgreet.so.1 => /tmp/g/libgreet.so.1 (0x00007f30)\n\tlibgone.so.2 => not found\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f40)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f50)\n";
        let (found, missing) = parse_ldd(text, &["libgreet.so.1".to_string()]);
        assert_eq!(
            found,
            [(
                "libpng16.so.16".to_string(),
                PathBuf::from("/lib/x86_64-linux-gnu/libpng16.so.16")
            )]
        );
        assert_eq!(missing, ["libgone.so.2"]);
    }

    #[test]
    fn desktop_values_cannot_add_a_line() {
        assert_eq!(
            desktop_value("a\nExec=evil\\\t\u{1b}"),
            "a\\nExec=evil\\\\\\t"
        );
        assert!(
            app_run("app").ends_with("exec \"$APPDIR/usr/bin/app\" \"$@\"\n")
                && !app_run("app").contains("LD_LIBRARY_PATH")
        );
    }
}
