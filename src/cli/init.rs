//! `cargo mcpp init` and `cargo mcpp new NAME`: add to a crate (or create one with) the
//! `[package.metadata.mcpp]` table, the `mcpp-build` build dependency (with its `engine`
//! feature for a library, `new --lib`; see `Form`), `build.rs`, one
//! example device source of the chosen lane and the Rust code that calls it, from the files
//! under `templates/init/` (for `--lane cuda`, the island form, or with `--payload` the kernel
//! embedded as cubins and PTX and loaded with cudarc). Nothing is overwritten: every file is checked before anything is
//! written, an existing build script (`build.rs` or `[package] build`) that does not call the
//! device phase outside comments is refused naming the one line to add, and a manifest that
//! already has `[package.metadata.mcpp]`, has no `[package]` or an inline `metadata = { }`, is
//! refused, and so are a `build` key that names no script and an existing `ash`/`mcpp-build`
//! dependency whose version the generated code does not build with. `new` refuses the names
//! `cargo new` refuses and joins an enclosing workspace's `members` (globs matched as cargo does).

use crate::config::accel::Backend;
use crate::error::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// The lanes `init` knows an example for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lane {
    /// A GLSL compute shader compiled to SPIR-V (accelerator `vulkan1.2`), run with ash.
    Spirv,
    /// A CUDA kernel behind an island boundary with its CPU fallback (accelerator `cuda13.0+{sm_80}`).
    Cuda,
    /// A HIP kernel behind an island boundary with its CPU fallback (accelerator `hip+{gfx90a}`).
    Hip,
    /// A Slang compute shader compiled to SPIR-V by slangc (accelerator `vulkan1.2`), run with ash.
    Slang,
}

impl Lane {
    /// The lane's name on the command line.
    fn name(self) -> &'static str {
        match self {
            Lane::Spirv => "spirv",
            Lane::Cuda => "cuda",
            Lane::Hip => "hip",
            Lane::Slang => "slang",
        }
    }
    /// The accelerator set written when `--accel` is not given.
    fn default_accel(self) -> &'static str {
        match self {
            Lane::Spirv | Lane::Slang => "vulkan1.2",
            Lane::Cuda => "cuda13.0+{sm_80}",
            Lane::Hip => "hip+{gfx90a}",
        }
    }
    /// The backend an accelerator set must name for the lane's example to be compiled.
    fn backend(self) -> Backend {
        match self {
            Lane::Spirv | Lane::Slang => Backend::Vulkan,
            Lane::Cuda => Backend::Cuda,
            Lane::Hip => Backend::Hip,
        }
    }
    /// Whether the lane's example is an island (a kernel with host entry points and a CPU fallback).
    fn is_island(self) -> bool {
        matches!(self, Lane::Cuda | Lane::Hip)
    }
}

/// `cargo mcpp init` / `new` options.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The lane of the example device source (default: `spirv`, or `cuda` with `--island`).
    #[arg(long, value_enum)]
    pub lane: Option<Lane>,
    /// An island: a kernel whose marked (`MCPP_EXPORT_C`) entry points Rust calls through bindgen
    /// bindings, with a C++ CPU fallback. The form of the `cuda` (the default with it) and `hip` lanes.
    #[arg(long)]
    pub island: bool,
    /// The CUDA payload form (`--lane cuda`): the kernel compiled to a cubin and PTX per
    /// architecture, embedded, and loaded at run time with cudarc through the generated
    /// selection function and kernel-name constant.
    #[arg(long, conflicts_with = "island")]
    pub payload: bool,
    /// The accelerator set written into the manifest (default: the lane's, `vulkan1.2`,
    /// `cuda13.0+{sm_80}` or `hip+{gfx90a}`); it must name the lane's backend.
    #[arg(long, value_name = "SPEC")]
    pub accel: Option<String>,
    /// The `mcpp-build` build dependency as a path (a checkout's `mcpp-build/`, relative to the
    /// current directory or absolute; written absolute). Default: the `mcpp-build/` of the source
    /// this cargo-mcpp was built from while it exists, else its crates.io version.
    #[arg(long, value_name = "DIR")]
    pub mcpp_build_path: Option<PathBuf>,
}

/// One file to create: its path below the package and its text.
type NewFile = (PathBuf, String);

/// The `ash` dependency the Vulkan lanes' program uses to dispatch the shader.
const ASH: &str = "0.38";

/// Where a package's build script runs its device phase, which decides the build dependency
/// written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// An application (or a package with a `src/main.rs`): `mcpp-build` with no features, a
    /// client of the installed `cargo-mcpp` with no dependencies (the fastest no-op build), and
    /// a `mcpp-engine` feature turning the engine on, which docs.rs builds with
    /// (`[package.metadata.docs.rs]`): docs.rs has no installed engine.
    Client,
    /// A library (`src/lib.rs` and no `src/main.rs`): `mcpp-build` with its `engine` feature
    /// (and `bindgen` for an island), so its dependents build it with nothing installed.
    InProcess,
}

/// The feature of the client form that turns the engine on (docs.rs builds with it).
const ENGINE_FEATURE: &str = "mcpp-engine";

impl Form {
    /// The form of the package at `dir`.
    fn of(dir: &Path) -> Form {
        if dir.join("src/lib.rs").exists() && !dir.join("src/main.rs").exists() {
            Form::InProcess
        } else {
            Form::Client
        }
    }
    /// The `mcpp-build` features of the build dependency.
    fn features(self, lane: Lane) -> Vec<&'static str> {
        match (self, lane.is_island()) {
            (Form::Client, _) => vec![],
            (Form::InProcess, false) => vec!["engine"],
            (Form::InProcess, true) => vec!["engine", "bindgen"],
        }
    }
}

/// The `cudarc` dependency of the CUDA payload form's program, for the CUDA version of the
/// accelerator set's entry (`cuda13.0` -> the feature `cuda-13000`): the driver API loaded at
/// run time (`dynamic-loading`), so the crate builds and links without a CUDA driver.
fn cudarc_line(accel: &str) -> String {
    let version = crate::config::accel::AccelSet::parse(accel)
        .ok()
        .and_then(|s| s.entry(Backend::Cuda).and_then(|e| e.version.clone()))
        .unwrap_or_else(|| "13.0".to_string());
    let (major, minor) = version.split_once('.').unwrap_or((version.as_str(), "0"));
    let feature = format!("cuda-{major}{:02}0", minor.parse::<u32>().unwrap_or(0));
    format!("cudarc = {{ version = \"0.19\", default-features = false, features = [\"std\", \"driver\", \"nvrtc\", \"dynamic-loading\", \"{feature}\"] }}")
}

/// The lane chosen by `--lane` and `--island`, and the accelerator set to write, checked: an
/// island of a shader lane, an accelerator string that does not parse, or one that does not
/// name the lane's backend, refused with the way out.
fn choose(args: &InitArgs) -> Result<(Lane, String)> {
    let lane = args.lane.unwrap_or(if args.island || args.payload {
        Lane::Cuda
    } else {
        Lane::Spirv
    });
    if args.payload && lane != Lane::Cuda {
        return Err(Error::new(ErrorKind::Manifest, format!("--payload with --lane {}: the payload form is the CUDA lane's", lane.name()))
            .help("use `--lane cuda --payload` (a kernel embedded as cubins and PTX, loaded with cudarc), or leave `--payload` out"));
    }
    if args.island && !lane.is_island() {
        return Err(Error::new(ErrorKind::Manifest, format!("--island with --lane {}: a shader has no entry points the host calls", lane.name()))
            .help("an island is a CUDA or HIP kernel with its CPU fallback: use `--island` (CUDA) or `--lane hip`; or leave `--island` out for a shader"));
    }
    let Some(accel) = args.accel.as_deref() else {
        return Ok((lane, lane.default_accel().to_string()));
    };
    let set = crate::config::accel::AccelSet::parse(accel).map_err(|e| {
        Error::new(
            ErrorKind::Manifest,
            format!("--accel `{}`: {e}", crate::text::echo(accel)),
        )
        .help(format!(
            "write an accelerator set such as `{}` (cargo-mcpp guide, \"The accelerator set\")",
            lane.default_accel()
        ))
    })?;
    if set.entry(lane.backend()).is_none() {
        return Err(Error::new(ErrorKind::Manifest, format!("--accel `{}` names no `{}` entry, so the {} lane's example would never be compiled", crate::text::echo(accel), lane.backend(), lane.name()))
            .help(format!("add a `{}` entry (the lane's default is `{}`), or choose the lane of that set with `--lane`", lane.backend(), lane.default_accel())));
    }
    // The rules' own checks of the set, as the build runs them: each entry's (`check_entry`),
    // and for the HIP example the HIP rule's platform choice (`which = "auto"`, as written).
    let mut problems =
        crate::plan::accel::check_entries(&set, None, &crate::rules::registry(), false);
    // What the shader rules refuse at build time without asking a compiler: a Vulkan version no
    // Vulkan has (init writes no `target-env` or `profile` that would override it).
    if let Some(e) = set
        .entry(Backend::Vulkan)
        .and_then(|v| crate::rules::spirv::unknown_vulkan(v.version.as_deref()))
    {
        problems.push(e.help(format!(
            "write a known version (the lane's default is `{}`)",
            lane.default_accel()
        )));
    }
    if lane == Lane::Hip {
        if let Some(hip) = set.entry(Backend::Hip) {
            if let Err(e) = crate::rules::hip::platform(
                crate::rules::hip::HipWhich::Auto,
                hip,
                set.entry(Backend::Cuda),
            ) {
                problems.push(e);
            }
        }
    }
    let problems = problems.into_iter().map(|e| {
        let mut refusal = Error::new(
            ErrorKind::Manifest,
            format!("--accel `{}`: {}", crate::text::echo(accel), e.message),
        );
        refusal.detail = e.detail;
        refusal.help = e.help;
        refusal
    });
    Error::all(problems.collect())?;
    Ok((lane, accel.to_string()))
}

/// What the lane adds: the manifest's table (TOML text), the device files and the Rust program;
/// `fallback` is the command that runs the program's CPU fallback (an island's message names it).
fn lane_files(
    lane: Lane,
    accel: &str,
    fallback: &str,
    payload: bool,
) -> (String, Vec<NewFile>, String) {
    let accel = toml_string(accel);
    let vulkan = |source: &str, shader: &str| {
        include_str!("../../templates/init/vulkan/main.rs")
            .replace("__LANE__", lane.name())
            .replace("__SOURCE__", source)
            .replace("__FILE__", source.rsplit('/').next().unwrap_or(source))
            .replace("__SHADER__", shader)
    };
    let island = |device: &str, source: &str| {
        include_str!("../../templates/init/island/main.rs")
            .replace("__LANE__", lane.name())
            .replace("__DEVICE__", device)
            .replace("__SOURCE__", source)
            .replace("__FALLBACK__", fallback)
    };
    let island_table = |source: &str| {
        format!("\n[package.metadata.mcpp.island]\nsources = [\"{source}\", \"host/scale.cpp\"]\nfallback = [\"host/scale.cpp\"]\n")
    };
    match lane {
        Lane::Cuda if payload => (
            format!("accel = {accel}\nsources = [{{ glob = \"kernels/*.cu\", output = \"cubin+ptx\" }}]\n"),
            vec![(PathBuf::from("kernels/scale.cu"), include_str!("../../templates/init/cuda-payload/scale.cu").to_string())],
            include_str!("../../templates/init/cuda-payload/main.rs").to_string(),
        ),
        Lane::Spirv => (
            format!("accel = {accel}\nsources = [\"shaders/*.comp\"]\n"),
            vec![(
                PathBuf::from("shaders/double.comp"),
                include_str!("../../templates/init/spirv/double.comp").to_string(),
            )],
            vulkan("shaders/double.comp", "double_comp"),
        ),
        Lane::Slang => (
            format!("accel = {accel}\nsources = [\"shaders/*.slang\"]\n"),
            vec![(
                PathBuf::from("shaders/double.slang"),
                include_str!("../../templates/init/slang/double.slang").to_string(),
            )],
            vulkan("shaders/double.slang", "double_comp"),
        ),
        Lane::Cuda => (
            format!(
                "accel = {accel}\nsources = [\"kernels/*.cu\"]\n{}",
                island_table("kernels/scale.cu")
            ),
            vec![
                (
                    PathBuf::from("kernels/scale.cu"),
                    include_str!("../../templates/init/cuda/scale.cu").to_string(),
                ),
                (
                    PathBuf::from("host/scale.cpp"),
                    include_str!("../../templates/init/cuda/scale.cpp").to_string(),
                ),
            ],
            island("CUDA", "kernels/scale.cu"),
        ),
        Lane::Hip => (
            format!(
                "accel = {accel}\nsources = [\"kernels/*.hip\"]\n{}",
                island_table("kernels/scale.hip")
            ),
            vec![
                (
                    PathBuf::from("kernels/scale.hip"),
                    include_str!("../../templates/init/hip/scale.hip").to_string(),
                ),
                (
                    PathBuf::from("host/scale.cpp"),
                    include_str!("../../templates/init/hip/scale.cpp").to_string(),
                ),
            ],
            island("HIP", "kernels/scale.hip"),
        ),
    }
}

fn toml_string(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_string()
}

/// This engine's version: `mcpp-build`'s too (they are released together, and a client runs
/// only its own version of the engine).
const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `mcpp-build` crate of the source this cargo-mcpp was built from (a checkout's
/// `mcpp-build/`): the default build dependency while it is there (`cargo install --path`).
const BUILT_FROM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/mcpp-build");

/// Whether `dir/Cargo.toml` is the manifest of the `mcpp-build` crate.
fn is_mcpp_build(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .ok()
        .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
        .is_some_and(|d| {
            d.get("package")
                .and_then(|p| p.get("name"))
                .and_then(toml_edit::Item::as_str)
                == Some("mcpp-build")
        })
}

/// The build dependency line: `--mcpp-build-path` made absolute (cargo reads a relative path
/// from the new manifest, not from where the command ran); without it, the `mcpp-build/` of
/// the source this cargo-mcpp was built from when it is still there ([`BUILT_FROM`]), else
/// the crates.io version, which is the engine's own; with `features` (`engine`, `bindgen`:
/// the [`Form::InProcess`] of a library) when there are any.
///
/// # Errors
/// [`ErrorKind::Manifest`] when `--mcpp-build-path` does not exist or is not the
/// `mcpp-build` crate (its `Cargo.toml` names another package, or there is none).
fn build_dependency(path: Option<&Path>, features: &[&str]) -> Result<String> {
    let features = match features {
        [] => String::new(),
        f => format!(
            ", features = [{}]",
            f.iter()
                .map(|f| toml_string(f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let Some(p) = path else {
        return Ok(if is_mcpp_build(Path::new(BUILT_FROM)) {
            format!(
                "mcpp-build = {{ path = {}{features} }}",
                toml_string(BUILT_FROM)
            )
        } else if features.is_empty() {
            format!("mcpp-build = {}", toml_string(ENGINE_VERSION))
        } else {
            format!(
                "mcpp-build = {{ version = {}{features} }}",
                toml_string(ENGINE_VERSION)
            )
        });
    };
    let help = "give the `mcpp-build/` directory (or its Cargo.toml) of a cargo-mcpp checkout (relative to the current directory, or absolute), or leave `--mcpp-build-path` out";
    let mut abs = std::fs::canonicalize(p).map_err(|e| {
        Error::new(
            ErrorKind::Manifest,
            format!("--mcpp-build-path `{}`: {e}", crate::text::echo_path(p)),
        )
        .help(help)
    })?;
    // The crate's Cargo.toml itself names its directory.
    if abs.is_file() && abs.file_name().is_some_and(|n| n == "Cargo.toml") {
        if let Some(parent) = abs.parent() {
            abs = parent.to_path_buf();
        }
    }
    if !is_mcpp_build(&abs) {
        return Err(Error::new(ErrorKind::Manifest, format!("--mcpp-build-path `{}` is not the mcpp-build crate (its Cargo.toml does not name the package `mcpp-build`)", crate::text::echo_path(p)))
            .file(if abs.is_dir() { abs.join("Cargo.toml") } else { abs.clone() })
            .help(help));
    }
    Ok(format!(
        "mcpp-build = {{ path = {}{features} }}",
        toml_string(&abs.display().to_string())
    ))
}

/// Add `line` (`key = value`) to the manifest's table `table` (created when missing) unless
/// the table has one of `present` already; whether it was added.
///
/// # Errors
/// [`ErrorKind::Manifest`] when `table` is not a table, or `line` is not `key = value`.
fn add_dependency(
    doc: &mut toml_edit::DocumentMut,
    table: &str,
    present: &[&str],
    line: &str,
) -> Result<bool> {
    let not_table = || {
        Error::new(
            ErrorKind::Manifest,
            format!("`{table}` in the manifest is not a table"),
        )
        .key(table)
        .help("write it as a [table]")
    };
    if !doc.contains_key(table) {
        doc.insert(table, toml_edit::Item::Table(toml_edit::Table::new()));
    }
    let t = doc
        .get_mut(table)
        .and_then(|t| t.as_table_like_mut())
        .ok_or_else(not_table)?;
    if present.iter().any(|k| t.contains_key(k)) {
        return Ok(false);
    }
    let (key, value) = line
        .split_once(" = ")
        .ok_or_else(|| Error::new(ErrorKind::Manifest, format!("cannot write `{line}`")))?;
    let value: toml_edit::Value = value
        .parse()
        .map_err(|_| Error::new(ErrorKind::Manifest, format!("cannot write `{line}`")))?;
    t.insert(key, toml_edit::value(value));
    Ok(true)
}

/// The refusal of the manifest's `[table] key` when its version requirement does not take
/// `wanted`, the version the template's code is written for (`line` is what it would write);
/// `None` when there is no such dependency, it has no version (a path or git one), or it
/// takes `wanted`.
fn stale_dependency(
    doc: &toml_edit::DocumentMut,
    text: &str,
    manifest_path: &Path,
    table: &str,
    key: &str,
    wanted: &cargo_metadata::semver::Version,
    line: &str,
) -> Option<Error> {
    let item = doc.get(table)?.get(key)?;
    let version = item.as_str().or_else(|| {
        item.as_table_like()
            .and_then(|t| t.get("version"))
            .and_then(toml_edit::Item::as_str)
    })?;
    let req = cargo_metadata::semver::VersionReq::parse(version).ok()?;
    // ash's 0.38 is any 0.38.x (a `0.38.2` requirement is fine); mcpp-build's is the engine's.
    let newest_patch = cargo_metadata::semver::Version::new(wanted.major, wanted.minor, u64::MAX);
    if req.matches(wanted) || (key == "ash" && req.matches(&newest_patch)) {
        return None;
    }
    Some(
        Error::new(ErrorKind::Manifest, format!("[{table}] {key} = {}: the code cargo mcpp init writes needs {key} {wanted}, which that requirement does not take", toml_string(version)))
            .file(key_position(text, manifest_path, &[table, key]))
            .key(format!("{table}.{key}"))
            .help(format!("change it to `{line}` (or remove it, and init adds it), then run `cargo mcpp init` again")),
    )
}

/// The refusal of an existing `[dependencies] ash` with `default-features = false` and without
/// its `loaded` feature: the program init writes loads the Vulkan loader with
/// `ash::Entry::load`, which only that feature has (it would not compile).
fn ash_without_loader(
    doc: &toml_edit::DocumentMut,
    text: &str,
    manifest_path: &Path,
    table: &str,
) -> Option<Error> {
    let ash = doc.get(table)?.get("ash")?.as_table_like()?;
    let no_defaults = ["default-features", "default_features"]
        .iter()
        .any(|k| ash.get(k).and_then(toml_edit::Item::as_bool) == Some(false));
    let loaded = ash
        .get("features")
        .and_then(toml_edit::Item::as_array)
        .is_some_and(|a| a.iter().any(|f| f.as_str() == Some("loaded")));
    (no_defaults && !loaded).then(|| {
        Error::new(ErrorKind::Manifest, format!("[{table}] ash has default-features = false without the `loaded` feature: the program cargo mcpp init writes loads Vulkan with ash::Entry::load, which needs it"))
            .file(key_position(text, manifest_path, &[table, "ash"]))
            .key(format!("{table}.ash"))
            .help("add `features = [\"loaded\"]` to it (or remove default-features = false), then run `cargo mcpp init` again")
    })
}

/// The package's build script, relative to its root: `build.rs`, or the path of `[package]
/// build = "..."` (Cargo's key).
///
/// # Errors
/// [`ErrorKind::Manifest`] at the key's `file:line:col` for `build = false` (no build script
/// runs, so no device phase would), naming the key to remove.
fn build_script(doc: &toml_edit::DocumentMut, text: &str, manifest_path: &Path) -> Result<PathBuf> {
    match doc.get("package").and_then(|p| p.get("build")).and_then(toml_edit::Item::as_value) {
        Some(toml_edit::Value::String(s)) if s.value().is_empty() => Err(Error::new(ErrorKind::Manifest, "[package] build = \"\": an empty build script path")
            .file(key_position(text, manifest_path, &["package", "build"]))
            .key("package.build")
            .help("name the build script (`build = \"build.rs\"`), or remove the `build` key to use build.rs")),
        Some(toml_edit::Value::String(s)) => Ok(PathBuf::from(s.value())),
        Some(v @ (toml_edit::Value::Integer(_) | toml_edit::Value::Float(_) | toml_edit::Value::Datetime(_) | toml_edit::Value::Array(_) | toml_edit::Value::InlineTable(_))) => {
            Err(Error::new(ErrorKind::Manifest, format!("[package] build = {}: cargo takes a path or a boolean", v.to_string().trim()))
                .file(key_position(text, manifest_path, &["package", "build"]))
                .key("package.build")
                .help("write `build = \"build.rs\"` (the path of the build script), or remove the `build` key to use build.rs"))
        }
        Some(toml_edit::Value::Boolean(b)) if !*b.value() => Err(Error::new(ErrorKind::Manifest, "[package] build = false: the package has no build script, and the device phase runs in one")
            .file(key_position(text, manifest_path, &["package", "build"]))
            .key("package.build")
            .help("remove `build = false` from [package], then run `cargo mcpp init` again")),
        _ => Ok(PathBuf::from("build.rs")),
    }
}

/// `path:line:col` of the key `keys` (a path of table keys, such as `package.build`) in the
/// manifest's `text` (the path alone when it cannot be found).
fn key_position(text: &str, manifest_path: &Path, keys: &[&str]) -> String {
    let span = text
        .parse::<toml_edit::ImDocument<String>>()
        .ok()
        .and_then(|d| {
            let (last, parents) = keys.split_last()?;
            let mut table: &dyn toml_edit::TableLike = d.as_table();
            for k in parents {
                table = table.get(k)?.as_table_like()?;
            }
            table.get_key_value(last).and_then(|(k, _)| k.span())
        });
    match span {
        Some(r) => {
            let before = &text[..r.start];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{}:{line}:{col}", manifest_path.display())
        }
        None => manifest_path.display().to_string(),
    }
}

/// Whether the Rust source of a build script calls the device phase (`mcpp_build::build(`,
/// `mcpp_build::Build`, `cargo_mcpp::build(`, `cargo_mcpp::Build`) outside comments, strings and
/// character literals ([`rust_tokens`]; whitespace between tokens ignored: `mcpp_build :: build
/// ()`), also through a name a `use` or `extern crate` gives them: `use mcpp_build as mb;` then
/// `mb::build()`, `use mcpp_build::build;` then `build()`, `use mcpp_build::{Build as B};` then
/// `B::new()`, `use mcpp_build::*;`. Not a type checker: a call in a function never called
/// counts.
fn calls_device_phase(source: &str) -> bool {
    let tokens = rust_tokens(source);
    let mut names = DeviceNames {
        crates: vec!["mcpp_build".into(), "cargo_mcpp".into()],
        functions: Vec::new(),
        types: Vec::new(),
    };
    collect_use_names(&tokens, &mut names);
    let is = |i: usize, t: &Tok| tokens.get(i) == Some(t);
    let ident = |i: usize| match tokens.get(i) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    (0..tokens.len()).any(|i| {
        let Some(name) = ident(i) else { return false };
        let after_path = i > 0 && is(i - 1, &Tok::PathSep);
        if names.crates.iter().any(|c| c == name) && is(i + 1, &Tok::PathSep) {
            return (ident(i + 2) == Some("build") && is(i + 3, &Tok::Punct('(')))
                || ident(i + 2) == Some("Build");
        }
        // A bare name a `use` brought in: a call `build(` (not a definition `fn build(`, a
        // method `.build(` or another path's `x::build(`), or `Build::...`.
        let defined_or_method =
            i > 0 && (is(i - 1, &Tok::Ident("fn".into())) || is(i - 1, &Tok::Punct('.')));
        (!after_path
            && !defined_or_method
            && names.functions.iter().any(|f| f == name)
            && is(i + 1, &Tok::Punct('(')))
            || (!after_path && names.types.iter().any(|t| t == name) && is(i + 1, &Tok::PathSep))
    })
}

/// The names under which a build script reaches the device phase.
struct DeviceNames {
    /// The crates (`mcpp_build`, `cargo_mcpp`) and their aliases (`use mcpp_build as mb;`).
    crates: Vec<String>,
    /// `build` brought into scope (`use mcpp_build::build [as f];`).
    functions: Vec<String>,
    /// `Build` brought into scope (`use mcpp_build::Build [as B];`).
    types: Vec<String>,
}

/// Read every `use` and `extern crate` item of `tokens` into `names` (items are order-free in
/// Rust, so a later `use` counts for an earlier call).
fn collect_use_names(tokens: &[Tok], names: &mut DeviceNames) {
    let word = |t: Option<&Tok>, w: &str| matches!(t, Some(Tok::Ident(s)) if s == w);
    let mut i = 0;
    while i < tokens.len() {
        if word(tokens.get(i), "extern") && word(tokens.get(i + 1), "crate") {
            if let (Some(Tok::Ident(c)), true, Some(Tok::Ident(alias))) = (
                tokens.get(i + 2),
                word(tokens.get(i + 3), "as"),
                tokens.get(i + 4),
            ) {
                if names.crates.iter().any(|k| k == c) && !names.crates.contains(alias) {
                    names.crates.push(alias.clone());
                }
            }
        } else if word(tokens.get(i), "use") {
            let mut at = i + 1;
            use_tree(tokens, &mut at, Vec::new(), names);
            i = at;
            continue;
        }
        i += 1;
    }
}

/// One use tree at `*at` (`a::b`, `a::b as c`, `a::*`, `a::{tree, ...}`), its leaves under
/// `prefix` recorded in `names` when they name a device crate, its `build` or its `Build`;
/// `*at` ends after the tree.
fn use_tree(tokens: &[Tok], at: &mut usize, mut prefix: Vec<String>, names: &mut DeviceNames) {
    if tokens.get(*at) == Some(&Tok::PathSep) {
        *at += 1;
    }
    loop {
        match tokens.get(*at) {
            Some(Tok::Ident(s)) if s != "as" => {
                prefix.push(s.clone());
                *at += 1;
                if tokens.get(*at) == Some(&Tok::PathSep) {
                    *at += 1;
                    continue;
                }
                let alias = match (tokens.get(*at), tokens.get(*at + 1)) {
                    (Some(Tok::Ident(a)), Some(Tok::Ident(b))) if a == "as" => {
                        *at += 2;
                        Some(b.clone())
                    }
                    _ => None,
                };
                record_use(&prefix, alias, names);
                return;
            }
            Some(Tok::Punct('*')) => {
                *at += 1;
                if prefix.len() == 1 && names.crates.contains(&prefix[0]) {
                    names.functions.push("build".into());
                    names.types.push("Build".into());
                }
                return;
            }
            Some(Tok::Punct('{')) => {
                *at += 1;
                while !matches!(tokens.get(*at), None | Some(Tok::Punct('}' | ';'))) {
                    let before = *at;
                    use_tree(tokens, at, prefix.clone(), names);
                    // Past the `,`, or past a token the tree did not take (always progress).
                    if tokens.get(*at) == Some(&Tok::Punct(',')) || *at == before {
                        *at += 1;
                    }
                }
                if tokens.get(*at) == Some(&Tok::Punct('}')) {
                    *at += 1;
                }
                return;
            }
            _ => return,
        }
    }
}

/// Record the use of `path` (as `alias`): a device crate (`mcpp_build`, `mcpp_build::self`) or its
/// `build` / `Build`.
fn record_use(path: &[String], alias: Option<String>, names: &mut DeviceNames) {
    let path: Vec<&str> = path
        .iter()
        .map(String::as_str)
        .filter(|s| *s != "self")
        .collect();
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if !names.crates.iter().any(|c| c == first) {
        return;
    }
    match rest {
        [] => names
            .crates
            .push(alias.unwrap_or_else(|| (*first).to_string())),
        ["build"] => names
            .functions
            .push(alias.unwrap_or_else(|| "build".into())),
        ["Build"] => names.types.push(alias.unwrap_or_else(|| "Build".into())),
        _ => {}
    }
}

/// A token of Rust source, as far as [`calls_device_phase`] needs: literals, comments and
/// lifetimes leave none.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// An identifier or keyword (a raw identifier `r#x` without its `r#`).
    Ident(String),
    /// `::`.
    PathSep,
    /// Any other punctuation character.
    Punct(char),
}

/// The tokens of Rust source `source` (the Rust Reference's lexical structure, to the depth the
/// scan needs): `//` and nested `/* */` comments, string literals (`"..."` with escapes, `b"`,
/// `c"`), raw strings (`r"..."`, `r#"..."#`, `br#`, `cr#`), character and byte literals (`'"'`,
/// `'\''`, `'\u{22}'`, `b'"'`) leave nothing; a lifetime or label (`'a`) is no literal, its name
/// an identifier; numbers are skipped. Total: any input gives tokens, never a panic.
fn rust_tokens(source: &str) -> Vec<Tok> {
    let chars: Vec<char> = source.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut tokens = Vec::new();
    let mut i = 0;
    // The end of a string literal starting at the quote `q` (escapes honoured).
    let string_end = |mut j: usize| {
        j += 1;
        while let Some(c) = at(j) {
            match c {
                '\\' => j += 2,
                '"' => return j + 1,
                _ => j += 1,
            }
        }
        chars.len()
    };
    // The end of a raw string whose `#`s start at `j` (`r` already read).
    let raw_end = |mut j: usize| {
        let mut hashes = 0;
        while at(j) == Some('#') {
            hashes += 1;
            j += 1;
        }
        if at(j) != Some('"') {
            return None;
        }
        j += 1;
        while j < chars.len() {
            if chars[j] == '"' && (1..=hashes).all(|k| at(j + k) == Some('#')) {
                return Some(j + 1 + hashes);
            }
            j += 1;
        }
        Some(chars.len())
    };
    // A character literal at the quote `j`: its end, or `None` for a lifetime or label.
    let char_end = |j: usize| match at(j + 1) {
        Some('\\') => {
            let mut k = j + 3;
            while let Some(c) = at(k) {
                if c == '\'' {
                    return Some(k + 1);
                }
                if c == '\n' {
                    break;
                }
                k += 1;
            }
            Some(k)
        }
        Some(_) if at(j + 2) == Some('\'') => Some(j + 3),
        _ => None,
    };
    while let Some(c) = at(i) {
        match c {
            '/' if at(i + 1) == Some('/') => {
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
            }
            '/' if at(i + 1) == Some('*') => {
                let mut depth = 0usize;
                while i < chars.len() {
                    if at(i) == Some('/') && at(i + 1) == Some('*') {
                        depth += 1;
                        i += 2;
                    } else if at(i) == Some('*') && at(i + 1) == Some('/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            '"' => i = string_end(i),
            '\'' => i = char_end(i).unwrap_or(i + 1),
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while at(i).is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                match (word.as_str(), at(i)) {
                    ("b" | "c", Some('"')) => i = string_end(i),
                    ("b", Some('\'')) => i = char_end(i).unwrap_or(i + 1),
                    ("r" | "br" | "cr", Some('"' | '#')) => match raw_end(i) {
                        Some(end) => i = end,
                        // `r#ident`: a raw identifier.
                        None if word == "r" => {
                            let s = i + 1;
                            i = s;
                            while at(i).is_some_and(|c| c.is_alphanumeric() || c == '_') {
                                i += 1;
                            }
                            tokens.push(Tok::Ident(chars[s..i].iter().collect()));
                        }
                        None => tokens.push(Tok::Ident(word)),
                    },
                    _ => tokens.push(Tok::Ident(word)),
                }
            }
            c if c.is_ascii_digit() => {
                while at(i).is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    i += 1;
                }
            }
            ':' if at(i + 1) == Some(':') => {
                tokens.push(Tok::PathSep);
                i += 2;
            }
            c if c.is_whitespace() => i += 1,
            c => {
                tokens.push(Tok::Punct(c));
                i += 1;
            }
        }
    }
    tokens
}

/// Why `name` is no package name by `cargo new`'s rules: empty, a first character that is not
/// a letter (Unicode alphabetic, as cargo's XID start) or `_`, or a later one that is not
/// alphanumeric, `-` or `_`; `None` when it is one.
fn invalid_name(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_alphabetic() || first == '_') {
        return Some(format!(
            "the first character `{}` must be a letter or `_`",
            first.escape_debug()
        ));
    }
    chars
        .find(|c| !(c.is_alphanumeric() || *c == '-' || *c == '_'))
        .map(|c| {
            format!(
                "the character `{}` is not a letter, a digit, `-` or `_`",
                c.escape_debug()
            )
        })
}

/// Why cargo refuses `name` for a new package with a binary (`cargo new`'s checks): a Rust
/// keyword, Rust's `test` library or another standard library crate, or a name of cargo's
/// build directory; `None` when it takes it.
fn reserved_name(name: &str) -> Option<&'static str> {
    if crate::surface::names::RUST_KEYWORDS.contains(&name) {
        Some("it is a Rust keyword")
    } else if ["test", "core", "std", "alloc", "proc_macro", "proc-macro"].contains(&name) {
        Some("it is a crate of Rust's standard library")
    } else if ["deps", "examples", "build", "incremental"].contains(&name) {
        Some("it conflicts with cargo's build directory names")
    } else {
        None
    }
}

/// How cargo matches `workspace.members` globs: `*` does not cross a `/`.
const SEPARATOR_LITERAL: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// The workspace whose root manifest is the nearest above `dir` with a `[workspace]` table
/// (cargo's search), when `dir` is not yet one of its members and not excluded: the manifest's
/// path, its text with `dir` added to `workspace.members`, as `cargo new` does, and the entry added.
///
/// # Errors
/// [`ErrorKind::Manifest`] when that manifest's `workspace.members` is not an array of strings.
fn workspace_to_join(dir: &Path) -> Result<Option<(PathBuf, String, String)>> {
    for root in dir.ancestors().skip(1) {
        let manifest = root.join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let Ok(mut doc) = text.parse::<toml_edit::DocumentMut>() else {
            return Ok(None);
        };
        let Some(ws) = doc
            .get_mut("workspace")
            .and_then(toml_edit::Item::as_table_like_mut)
        else {
            continue;
        };
        let Ok(rel) = dir.strip_prefix(root) else {
            return Ok(None);
        };
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let listed = |key: &str, ws: &dyn toml_edit::TableLike| {
            ws.get(key)
                .and_then(toml_edit::Item::as_array)
                .is_some_and(|a| {
                    a.iter().filter_map(toml_edit::Value::as_str).any(|p| {
                        p.trim_end_matches('/') == rel
                            || glob::Pattern::new(p)
                                .is_ok_and(|g| g.matches_with(&rel, SEPARATOR_LITERAL))
                            || (key == "exclude"
                                && rel.starts_with(&format!("{}/", p.trim_end_matches('/'))))
                    })
                })
        };
        if listed("members", &*ws) || listed("exclude", &*ws) {
            return Ok(None);
        }
        let not_array = || {
            Error::new(
                ErrorKind::Manifest,
                "`workspace.members` is not an array of paths",
            )
            .file(&manifest)
            .key("workspace.members")
            .help(format!("add \"{rel}\" to `members` by hand"))
        };
        let members = ws
            .entry("members")
            .or_insert(toml_edit::value(toml_edit::Array::new()))
            .as_array_mut()
            .ok_or_else(not_array)?;
        members.push(rel.as_str());
        return Ok(Some((manifest, doc.to_string(), rel)));
    }
    Ok(None)
}

/// `cargo mcpp new NAME`: a new package directory `NAME` (refused when it exists) with a
/// `Cargo.toml`, then [`init`] in it; inside a workspace that does not cover it yet, the
/// package is added to the root manifest's `workspace.members` last.
///
/// # Errors
/// [`ErrorKind::Manifest`] (nothing written) when `NAME` exists, is no package name or one
/// cargo refuses, the options are refused, or the enclosing workspace's `members` is no array;
/// [`ErrorKind::Io`] when a file cannot be written.
pub fn new(name: &str, lib: bool, args: &InitArgs) -> Result<i32> {
    let dir = PathBuf::from(name);
    let package = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if package.is_empty() {
        return Err(Error::new(
            ErrorKind::Manifest,
            format!(
                "`{}` is not a package name: it names no directory",
                crate::text::echo(name)
            ),
        )
        .help("give the new package's directory, such as `my-app` or `crates/my-app`"));
    }
    if let Some(why) = invalid_name(&package) {
        return Err(Error::new(
            ErrorKind::Manifest,
            format!("`{}` is not a package name: {why}", crate::text::echo(name)),
        )
        .help(
            "use letters, digits, `-` and `_`, starting with a letter or `_` (cargo new's rules)",
        ));
    }
    if let Some(why) = reserved_name(&package) {
        return Err(Error::new(
            ErrorKind::Manifest,
            format!("the name `{package}` cannot be used as a package name: {why}"),
        )
        .help("choose another name (cargo new refuses it too)"));
    }
    // The options refused before the directory exists, so a refusal leaves nothing behind.
    let (lane, _) = choose(args)?;
    build_dependency(args.mcpp_build_path.as_deref(), &[])?;
    if dir.exists() {
        return Err(Error::new(
            ErrorKind::Manifest,
            format!("`{}` already exists", crate::text::echo_path(&dir)),
        )
        .help("choose another name, or run `cargo mcpp init` inside the existing package"));
    }
    let cwd = std::env::current_dir().map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot read the current directory: {e}"),
        )
    })?;
    let abs = cwd.join(&dir);
    // The parent as the file system resolves it (links too); where it does not exist yet
    // (`crates/../w` without `crates`), `.` and `..` resolved by the path's text.
    let abs = match abs.parent().and_then(|p| std::fs::canonicalize(p).ok()) {
        Some(parent) => parent.join(&package),
        None => abs.components().fold(PathBuf::new(), |mut p, c| {
            match c {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    p.pop();
                }
                c => p.push(c),
            }
            p
        }),
    };
    let workspace = workspace_to_join(&abs)?;
    std::fs::create_dir_all(dir.join("src")).map_err(|e| Error::io("cannot create", &dir, e))?;
    let manifest = format!("[package]\nname = \"{package}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n");
    crate::engine::fingerprint::write_if_changed(&dir.join("Cargo.toml"), manifest.as_bytes())?;
    if lib {
        crate::engine::fingerprint::write_if_changed(
            &dir.join("src/lib.rs"),
            library_root(lane).as_bytes(),
        )?;
        println!("     Created src/lib.rs");
    }
    let code = init_in(&dir, args)?;
    if let Some((root, text, member)) = workspace {
        crate::engine::fingerprint::write_if_changed(&root, text.as_bytes())?;
        println!(
            "     Added `{}` to the members of the workspace {}",
            crate::text::echo(&member),
            root.display()
        );
    }
    Ok(code)
}

/// The `src/lib.rs` of `cargo mcpp new --lib`: the generated surface of the lane, public.
fn library_root(lane: Lane) -> String {
    if lane.is_island() {
        "//! Device code built by cargo-mcpp: the island's entry points, callable from Rust.\n\n/// The Rust bindings of the island's marked entry points (generated by the build script).\n#[allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]\npub mod kernels {\n    include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_kernels.rs\"));\n}\n".to_string()
    } else {
        "//! Device code built by cargo-mcpp: compiled shaders, embedded as SPIR-V.\n\n/// The compiled shaders (generated by the build script): one function per shader, returning\n/// its SPIR-V words.\npub mod shaders {\n    include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\"));\n}\n".to_string()
    }
}

/// `cargo mcpp init` in the current directory's package.
///
/// # Errors
/// As [`init_in`].
pub fn init(args: &InitArgs) -> Result<i32> {
    let dir = std::env::current_dir().map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot read the current directory: {e}"),
        )
    })?;
    init_in(&dir, args)
}

/// Add the lane's files to the package at `dir` (see the module docs); prints what it wrote
/// and how to build and run it.
///
/// # Errors
/// [`ErrorKind::Manifest`] (nothing written): no `Cargo.toml`, one that is not TOML, has no
/// `[package]` (a virtual workspace root) or has `[package.metadata.mcpp]` already, a `build.rs` that does not run the device phase, or any
/// file of the example that exists. [`ErrorKind::Io`] when a file cannot be written.
pub fn init_in(dir: &Path, args: &InitArgs) -> Result<i32> {
    let manifest_path = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest_path).map_err(|e| {
        Error::io("cannot read the manifest", &manifest_path, e)
            .help("run `cargo mcpp init` in a package's directory, or `cargo mcpp new NAME`")
    })?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        Error::new(
            ErrorKind::Manifest,
            format!("the manifest is not TOML: {}", e.message()),
        )
        .file(&manifest_path)
    })?;
    if !doc
        .get("package")
        .is_some_and(toml_edit::Item::is_table_like)
    {
        let (what, help) = if doc.contains_key("workspace") {
            ("a virtual workspace manifest (a [workspace] and no [package]): not a package", "run it in a member: `cd <member> && cargo mcpp init`, or `cargo mcpp new NAME` for a new member")
        } else {
            (
                "a manifest without [package]: not a package",
                "run it in a package's directory, or `cargo mcpp new NAME`",
            )
        };
        return Err(Error::new(
            ErrorKind::Manifest,
            format!("`cargo mcpp init` here: {what}"),
        )
        .file(&manifest_path)
        .key("package")
        .help(help));
    }
    if doc
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("mcpp"))
        .is_some()
    {
        return Err(Error::new(ErrorKind::Manifest, "the manifest has [package.metadata.mcpp] already")
            .file(&manifest_path)
            .key("package.metadata.mcpp")
            .help("`cargo mcpp init` starts a package's device code; edit the table by hand to add sources (cargo-mcpp guide, \"Manifest reference\")"));
    }
    // A dotted key cannot extend an inline table: `[package.metadata.mcpp]` appended after
    // `metadata = { ... }` (or `package = { ... }`) would not parse.
    for keys in [&["package"][..], &["package", "metadata"][..]] {
        let mut item = doc.as_item();
        for k in keys {
            item = item.get(k).unwrap_or(&toml_edit::Item::None);
        }
        if item.is_inline_table() || (item.is_value() && !item.is_table_like()) {
            let key = keys.join(".");
            return Err(Error::new(ErrorKind::Manifest, format!("`{key}` is written inline (`{} = ...`), and [package.metadata.mcpp] cannot be added to an inline table", keys[keys.len() - 1]))
                .file(key_position(&text, &manifest_path, keys))
                .key(key.as_str())
                .help(format!("write it as a table, `[{key}]` with its keys below it (an inline `docs = {{ ... }}` becomes `[{key}.docs...]`), then run `cargo mcpp init` again")));
        }
    }
    let (lane, accel) = choose(args)?;
    let form = Form::of(dir);
    let dependency = build_dependency(args.mcpp_build_path.as_deref(), &form.features(lane))?;
    // An existing dependency the template's code needs, of a version it does not build with.
    let mut problems = Vec::new();
    let engine = cargo_metadata::semver::Version::parse(ENGINE_VERSION).ok();
    if let Some(engine) = &engine {
        problems.extend(stale_dependency(
            &doc,
            &text,
            &manifest_path,
            "build-dependencies",
            "mcpp-build",
            engine,
            &format!("mcpp-build = {}", toml_string(ENGINE_VERSION)),
        ));
    }
    // The program's ash: a library's program is an example, so ash is a dev-dependency (its
    // dependents do not build it).
    let ash_table = match form {
        Form::Client => "dependencies",
        Form::InProcess => "dev-dependencies",
    };
    if matches!(lane, Lane::Spirv | Lane::Slang) {
        problems.extend(stale_dependency(
            &doc,
            &text,
            &manifest_path,
            ash_table,
            "ash",
            &cargo_metadata::semver::Version::new(0, 38, 0),
            &format!("ash = {}", toml_string(ASH)),
        ));
        problems.extend(ash_without_loader(&doc, &text, &manifest_path, ash_table));
    }
    // The program: src/main.rs when the crate has none, else an example target beside it.
    let (program_path, run) = if dir.join("src/main.rs").exists() || form == Form::InProcess {
        let name = format!("mcpp_{}", lane.name());
        (
            PathBuf::from(format!("examples/{name}.rs")),
            format!("cargo run --example {name}"),
        )
    } else {
        (PathBuf::from("src/main.rs"), "cargo run".to_string())
    };
    // The CPU fallback: `cargo run` runs the build script again with the environment it is
    // given (MCPP_NO_ACCEL is declared with rerun-if-env-changed), so `cargo mcpp build
    // --no-accel` before a plain `cargo run` would not last: the variable goes with the run.
    let fallback = format!("MCPP_NO_ACCEL=1 {run}");
    let (table, mut files, program) = lane_files(lane, &accel, &fallback, args.payload);
    files.push((program_path, program));
    match build_script(&doc, &text, &manifest_path) {
        Err(e) => problems.push(e),
        Ok(rel) => {
            let script = dir.join(&rel);
            if script.exists() {
                let existing = std::fs::read_to_string(&script).unwrap_or_default();
                if !calls_device_phase(&existing) {
                    problems.push(
                        Error::new(ErrorKind::Manifest, format!("{} exists and does not run the device phase; cargo mcpp init does not change it", rel.display()))
                            .file(&script)
                            .help("add this line to its `fn main`: `mcpp_build::build();`"),
                    );
                }
            } else if rel == Path::new("build.rs") {
                files.push((
                    rel,
                    "fn main() {\n    mcpp_build::build();\n}\n".to_string(),
                ));
            } else {
                problems.push(
                    Error::new(ErrorKind::Manifest, format!("[package] build = {} names a build script that does not exist", toml_string(&rel.display().to_string())))
                        .file(key_position(&text, &manifest_path, &["package", "build"]))
                        .key("package.build")
                        .help(format!("create {} with `fn main() {{ mcpp_build::build(); }}`, or remove the `build` key to use build.rs", rel.display())),
                );
            }
        }
    }
    for (rel, _) in &files {
        if dir.join(rel).exists() {
            problems.push(
                Error::new(
                    ErrorKind::Manifest,
                    format!(
                        "`{}` exists; cargo mcpp init never overwrites a file",
                        rel.display()
                    ),
                )
                .file(dir.join(rel))
                .help("move it away, or add the device source by hand"),
            );
        }
    }
    Error::all(problems)?;

    // The manifest: the build dependency and, for the Vulkan lanes, ash (each unless there is
    // one), then the table, appended.
    let mut added = Vec::new();
    if add_dependency(
        &mut doc,
        "build-dependencies",
        &["mcpp-build", "cargo-mcpp"],
        &dependency,
    )? {
        added.push("the mcpp-build build dependency");
    }
    if matches!(lane, Lane::Spirv | Lane::Slang)
        && add_dependency(
            &mut doc,
            ash_table,
            &["ash"],
            &format!("ash = {}", toml_string(ASH)),
        )?
    {
        added.push("the ash dependency");
    }
    let has_docs_rs = doc
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("docs"))
        .and_then(|d| d.get("rs"))
        .is_some();
    if form == Form::Client {
        let engine = if lane.is_island() {
            "[\"mcpp-build/engine\", \"mcpp-build/bindgen\"]"
        } else {
            "[\"mcpp-build/engine\"]"
        };
        if add_dependency(
            &mut doc,
            "features",
            &[ENGINE_FEATURE],
            &format!("{ENGINE_FEATURE} = {engine}"),
        )? {
            added.push("the mcpp-engine feature (docs.rs builds with it)");
        }
    }
    if lane == Lane::Cuda
        && args.payload
        && add_dependency(&mut doc, "dependencies", &["cudarc"], &cudarc_line(&accel))?
    {
        added.push("the cudarc dependency");
    }
    let mut text = doc.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("\n[package.metadata.mcpp]\n{table}"));
    if form == Form::Client && !has_docs_rs {
        text.push_str(&format!("\n# docs.rs has no installed cargo-mcpp: it runs the device phase in the build script\n# (no compiler runs there; the surface is still generated).\n[package.metadata.docs.rs]\nfeatures = [\"{ENGINE_FEATURE}\"]\n"));
    }
    for (rel, content) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("cannot create", parent, e))?;
        }
        crate::engine::fingerprint::write_if_changed(&path, content.as_bytes())?;
    }
    crate::engine::fingerprint::write_if_changed(&manifest_path, text.as_bytes())?;
    added.insert(0, "[package.metadata.mcpp]");
    println!(
        "     Added {} to {}",
        added.join(", "),
        manifest_path.display()
    );
    for (rel, _) in &files {
        println!("     Created {}", rel.display());
    }
    // `cargo mcpp build` names this engine to the build scripts when `mcpp_build` would not
    // find it ($CARGO_HOME/bin); a plain `cargo run` reruns the build script without that, so
    // the user must export it (the one computation of `cargo mcpp build`: `engine_to_name`).
    let export = super::build::engine_to_name()
        .filter(|_| form == Form::Client)
        .map(|me| {
            format!(
                "export {}={} && ",
                super::ENGINE_ENV,
                shell_word(&me.to_string_lossy())
            )
        })
        .unwrap_or_default();
    println!("Next: {export}cargo mcpp build && {run}");
    let toolkit = match lane {
        // The payload form has no CPU fallback: without CUDA its payloads are empty.
        Lane::Cuda if args.payload => None,
        Lane::Cuda => Some("a CUDA toolkit"),
        Lane::Hip => Some("a ROCm"),
        Lane::Spirv | Lane::Slang => None,
    };
    if let Some(toolkit) = toolkit {
        println!("      without {toolkit}, the CPU fallback: {fallback}");
    }
    if form == Form::Client && has_docs_rs {
        println!("      docs.rs: add \"{ENGINE_FEATURE}\" to the features of [package.metadata.docs.rs] (docs.rs has no installed cargo-mcpp)");
    }
    Ok(crate::error::exit_code::SUCCESS)
}

/// `word` as one POSIX shell word: as it is when every character is plain (letters, digits,
/// `/._-+,:@%=`), else in single quotes (a `'` written `'\''`); control characters escaped
/// ([`crate::text::echo_path`]'s rule is for messages, this is for a line to paste).
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c))
    {
        return word.to_string();
    }
    let escaped: String = word
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else if c == '\'' {
                "'\\''".to_string()
            } else {
                c.to_string()
            }
        })
        .collect();
    format!("'{escaped}'")
}

#[cfg(test)]
mod tests {
    use super::{calls_device_phase, shell_word};

    #[test]
    fn shell_words_paste_as_one_word() {
        assert_eq!(
            shell_word("/home/me/.local/bin/cargo-mcpp"),
            "/home/me/.local/bin/cargo-mcpp"
        );
        assert_eq!(
            shell_word("/opt/my tools/cargo-mcpp"),
            "'/opt/my tools/cargo-mcpp'"
        );
        assert_eq!(shell_word("/o'k/$x"), "'/o'\\''k/$x'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_call_in_a_comment_is_no_call() {
        assert!(calls_device_phase(
            "fn main() {\n    mcpp_build::build();\n}\n"
        ));
        assert!(calls_device_phase(
            "fn main() { mcpp_build :: Build::new().accel(\"vulkan1.3\").compile(); }"
        ));
        assert!(calls_device_phase(
            "fn main() { let _ = \"http://x\"; cargo_mcpp::build().unwrap(); }"
        ));
        assert!(!calls_device_phase(
            "fn main() {\n    // mcpp_build::build();\n}\n"
        ));
        assert!(!calls_device_phase("fn main() {\n    /* mcpp_build::build(); /* nested */ still a comment: cargo_mcpp::build() */\n}\n"));
        assert!(!calls_device_phase(
            "/// mcpp_build::build();\nfn main() {}\n"
        ));
        assert!(!calls_device_phase("fn main() { println!(\"building\"); }"));
    }

    #[test]
    fn quote_characters_in_literals_open_no_string() {
        // `'"'` would open a string for a scanner without char literals, hiding the call.
        assert!(calls_device_phase(
            "fn main() { let q = '\"'; mcpp_build::build(); let r = '\"'; }"
        ));
        assert!(calls_device_phase(
            "fn main() { let q = '\\''; let e = '\\u{22}'; mcpp_build::build(); }"
        ));
        assert!(calls_device_phase(
            "fn main() { let q = b'\"'; mcpp_build::build(); let s = b\"\\\"\"; }"
        ));
        // ... and a call inside a string is none.
        assert!(!calls_device_phase(
            "fn main() { let q = '\"'; let s = \"mcpp_build::build()\"; }"
        ));
        assert!(!calls_device_phase(
            "fn main() { let s = b\"mcpp_build::build()\"; let c = c\"cargo_mcpp::build()\"; }"
        ));
    }

    #[test]
    fn raw_strings_end_at_their_own_hashes() {
        // The `"` inside r#"..."# does not end it; the call after it counts, one inside it not.
        assert!(calls_device_phase(
            "fn main() { let s = r#\"a \" b\"#; mcpp_build::build(); }"
        ));
        assert!(!calls_device_phase(
            "fn main() { let s = r#\"a \" mcpp_build::build() \"#; }"
        ));
        assert!(!calls_device_phase(
            "fn main() { let s = r##\"a \"# mcpp_build::build() \"##; }"
        ));
        assert!(!calls_device_phase(
            "fn main() { let s = br\"mcpp_build::build()\"; let t = r\"x\"; }"
        ));
        assert!(
            calls_device_phase("fn main() { let s = r\"\\\"; mcpp_build::build(); }"),
            "no escapes in a raw string"
        );
        assert!(
            calls_device_phase("fn main() { let r#type = 1; mcpp_build::build(); }"),
            "a raw identifier"
        );
    }

    #[test]
    fn lifetimes_are_not_characters() {
        // `'a` opens no literal: a scanner taking `'a, '` as one would swallow the call.
        assert!(calls_device_phase("fn f<'a>(x: &'a str) -> &'a str { x }\nfn main() { 'outer: loop { mcpp_build::build(); break 'outer; } }"));
        assert!(calls_device_phase(
            "struct S<'a, 'b>(&'a u8, &'b u8);\nfn main() { cargo_mcpp::build(); }"
        ));
        assert!(!calls_device_phase(
            "fn f<'a>(x: &'a str) {}\nfn main() { let c = 'm'; /* mcpp_build::build() */ }"
        ));
    }

    #[test]
    fn names_given_by_use_and_extern_crate_count() {
        assert!(calls_device_phase(
            "use mcpp_build as mb;\nfn main() { mb::build(); }"
        ));
        assert!(
            calls_device_phase("fn main() { mb::Build::new().compile(); }\nuse mcpp_build as mb;"),
            "a later use counts"
        );
        assert!(calls_device_phase(
            "extern crate cargo_mcpp as cm;\nfn main() { cm::build(); }"
        ));
        assert!(calls_device_phase(
            "use mcpp_build::build;\nfn main() { build(); }"
        ));
        assert!(calls_device_phase(
            "use mcpp_build::build as device;\nfn main() { device(); }"
        ));
        assert!(calls_device_phase(
            "use ::mcpp_build::{self as m, Build as B};\nfn main() { B::new().compile(); }"
        ));
        assert!(calls_device_phase(
            "use mcpp_build::{self as m};\nfn main() { m::build(); }"
        ));
        assert!(calls_device_phase(
            "use mcpp_build::*;\nfn main() { build(); }"
        ));
        // An alias that is never called, another crate's `build`, a definition or a method: none.
        assert!(!calls_device_phase("use mcpp_build as mb;\nfn main() {}"));
        assert!(!calls_device_phase(
            "use cc::build;\nfn main() { build(); }"
        ));
        assert!(!calls_device_phase(
            "use mcpp_build::build;\nfn build() {}\nfn main() { x.build(); y::build(); }"
        ));
        assert!(!calls_device_phase(
            "use other as mb;\nfn main() { mb::build(); }"
        ));
    }

    #[test]
    fn the_tokenizer_is_total() {
        for s in [
            "'",
            "\"",
            "r#",
            "r#\"",
            "b'",
            "/*",
            "/* /* */",
            "'\\",
            "use",
            "use {",
            "use mcpp_build::{",
            "extern crate",
            "1.0e5",
            "'\\u{",
            "ö::ä",
        ] {
            let _ = calls_device_phase(s);
        }
    }
}
