//! `cargo mcpp init` and `cargo mcpp new NAME` (issue 14): add to a crate (or create one with)
//! the `[package.metadata.mcpp]` table, the `mcpp-build` build dependency, `build.rs`, one
//! example device source of the chosen lane and the Rust code that calls it, from the files
//! under `templates/init/`. Nothing is overwritten: every file is checked before anything is
//! written, an existing `build.rs` is refused naming the one line to add, and a manifest that
//! already has `[package.metadata.mcpp]` is refused.

use crate::error::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// The lanes `init` knows an example for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lane {
    /// A GLSL compute shader compiled to SPIR-V (accelerator `vulkan1.2`).
    Spirv,
    /// A CUDA kernel behind an island boundary with its CPU fallback (accelerator `cuda13.0+{sm_80}`).
    Cuda,
}

/// `cargo mcpp init` / `new` options.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The lane of the example device source.
    #[arg(long, value_enum, default_value = "spirv")]
    pub lane: Lane,
    /// The accelerator set written into the manifest (default: the lane's, `vulkan1.2` or `cuda13.0+{sm_80}`).
    #[arg(long, value_name = "SPEC")]
    pub accel: Option<String>,
    /// The `mcpp-build` build dependency as a path (a checkout's `mcpp-build/`) instead of its crates.io version.
    #[arg(long, value_name = "DIR")]
    pub mcpp_build_path: Option<PathBuf>,
}

/// One file to create: its path below the package and its text.
type NewFile = (PathBuf, String);

/// What the lane adds: the manifest's table (TOML text), the device files and the Rust program.
fn lane_files(lane: Lane, accel: Option<&str>) -> (String, Vec<NewFile>, &'static str) {
    match lane {
        Lane::Spirv => (
            format!("accel = {}\nsources = [\"shaders/*.comp\"]\n", toml_string(accel.unwrap_or("vulkan1.2"))),
            vec![(PathBuf::from("shaders/double.comp"), include_str!("../../templates/init/spirv/double.comp").to_string())],
            include_str!("../../templates/init/spirv/main.rs"),
        ),
        Lane::Cuda => (
            format!(
                "accel = {}\nsources = [\"kernels/*.cu\"]\n\n[package.metadata.mcpp.island]\nsources = [\"kernels/scale.cu\", \"host/scale.cpp\"]\nfallback = [\"host/scale.cpp\"]\n",
                toml_string(accel.unwrap_or("cuda13.0+{sm_80}"))
            ),
            vec![
                (PathBuf::from("kernels/scale.cu"), include_str!("../../templates/init/cuda/scale.cu").to_string()),
                (PathBuf::from("host/scale.cpp"), include_str!("../../templates/init/cuda/scale.cpp").to_string()),
            ],
            include_str!("../../templates/init/cuda/main.rs"),
        ),
    }
}

fn toml_string(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_string()
}

/// The build dependency line.
fn build_dependency(path: Option<&Path>) -> String {
    match path {
        Some(p) => format!("mcpp-build = {{ path = {} }}", toml_string(&p.display().to_string())),
        None => format!("mcpp-build = {}", toml_string(mcpp_build::VERSION)),
    }
}

/// `cargo mcpp new NAME`: a new package directory `NAME` (refused when it exists) with a
/// `Cargo.toml`, then [`init`] in it.
///
/// # Errors
/// [`ErrorKind::Manifest`] when `NAME` exists or is no package name; [`ErrorKind::Io`] when a
/// file cannot be written.
pub fn new(name: &str, args: &InitArgs) -> Result<i32> {
    let dir = PathBuf::from(name);
    let package = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if package.is_empty() || !package.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') || package.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(Error::new(ErrorKind::Manifest, format!("`{}` is not a package name", crate::text::echo(name))).help("use letters, digits, `-` and `_`, starting with a letter"));
    }
    if dir.exists() {
        return Err(Error::new(ErrorKind::Manifest, format!("`{}` already exists", crate::text::echo_path(&dir))).help("choose another name, or run `cargo mcpp init` inside the existing package"));
    }
    std::fs::create_dir_all(dir.join("src")).map_err(|e| Error::io("cannot create", &dir, e))?;
    let manifest = format!("[package]\nname = \"{package}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n");
    crate::fingerprint::write_if_changed(&dir.join("Cargo.toml"), manifest.as_bytes())?;
    init_in(&dir, args)
}

/// `cargo mcpp init` in the current directory's package.
///
/// # Errors
/// As [`init_in`].
pub fn init(args: &InitArgs) -> Result<i32> {
    let dir = std::env::current_dir().map_err(|e| Error::new(ErrorKind::Io, format!("cannot read the current directory: {e}")))?;
    init_in(&dir, args)
}

/// Add the lane's files to the package at `dir` (see the module docs); prints what it wrote
/// and how to build and run it.
///
/// # Errors
/// [`ErrorKind::Manifest`] (nothing written): no `Cargo.toml`, one that is not TOML or has
/// `[package.metadata.mcpp]` already, a `build.rs` that does not run the device phase, or any
/// file of the example that exists. [`ErrorKind::Io`] when a file cannot be written.
pub fn init_in(dir: &Path, args: &InitArgs) -> Result<i32> {
    let manifest_path = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest_path).map_err(|e| Error::io("cannot read the manifest", &manifest_path, e).help("run `cargo mcpp init` in a package's directory, or `cargo mcpp new NAME`"))?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| Error::new(ErrorKind::Manifest, format!("the manifest is not TOML: {}", e.message())).file(&manifest_path))?;
    if doc.get("package").and_then(|p| p.get("metadata")).and_then(|m| m.get("mcpp")).is_some() {
        return Err(Error::new(ErrorKind::Manifest, "the manifest has [package.metadata.mcpp] already")
            .file(&manifest_path)
            .key("package.metadata.mcpp")
            .help("`cargo mcpp init` starts a package's device code; edit the table by hand to add sources (README.md \"Manifest reference\")"));
    }
    let (table, mut files, program) = lane_files(args.lane, args.accel.as_deref());
    // The program: src/main.rs when the crate has none, else an example target beside it.
    let run = if dir.join("src/main.rs").exists() {
        let name = format!("mcpp_{}", match args.lane { Lane::Spirv => "spirv", Lane::Cuda => "cuda" });
        files.push((PathBuf::from(format!("examples/{name}.rs")), program.to_string()));
        format!("cargo run --example {name}")
    } else {
        files.push((PathBuf::from("src/main.rs"), program.to_string()));
        "cargo run".to_string()
    };
    let build_rs = dir.join("build.rs");
    let mut problems = Vec::new();
    if build_rs.exists() {
        let existing = std::fs::read_to_string(&build_rs).unwrap_or_default();
        if !existing.contains("mcpp_build::build") && !existing.contains("cargo_mcpp::build") {
            problems.push(
                Error::new(ErrorKind::Manifest, "build.rs exists and does not run the device phase; cargo mcpp init does not change it")
                    .file(&build_rs)
                    .help("add this line to its `fn main`: `mcpp_build::build();`"),
            );
        }
    } else {
        files.push((PathBuf::from("build.rs"), "fn main() {\n    mcpp_build::build();\n}\n".to_string()));
    }
    for (rel, _) in &files {
        if dir.join(rel).exists() {
            problems.push(Error::new(ErrorKind::Manifest, format!("`{}` exists; cargo mcpp init never overwrites a file", rel.display())).file(dir.join(rel)).help("move it away, or add the device source by hand"));
        }
    }
    Error::all(problems)?;

    // The manifest: the build dependency (unless there is one) and the table, appended.
    let has_dependency = doc.get("build-dependencies").and_then(|t| t.as_table_like()).is_some_and(|t| t.contains_key("mcpp-build") || t.contains_key("cargo-mcpp"));
    let mut text = doc.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if !has_dependency {
        match doc.get_mut("build-dependencies").and_then(|t| t.as_table_mut()) {
            Some(t) => {
                let line = build_dependency(args.mcpp_build_path.as_deref());
                let (key, value) = line.split_once(" = ").unwrap_or(("mcpp-build", "\"0.1.0\""));
                let value: toml_edit::Value = value.parse().map_err(|_| Error::new(ErrorKind::Manifest, "cannot write the build dependency"))?;
                t.insert(key, toml_edit::value(value));
                text = doc.to_string();
            }
            None => text.push_str(&format!("\n[build-dependencies]\n{}\n", build_dependency(args.mcpp_build_path.as_deref()))),
        }
    }
    text.push_str(&format!("\n[package.metadata.mcpp]\n{table}"));
    for (rel, content) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("cannot create", parent, e))?;
        }
        crate::fingerprint::write_if_changed(&path, content.as_bytes())?;
    }
    crate::fingerprint::write_if_changed(&manifest_path, text.as_bytes())?;
    println!("     Added [package.metadata.mcpp] and the mcpp-build build dependency to {}", manifest_path.display());
    for (rel, _) in &files {
        println!("     Created {}", rel.display());
    }
    let no_accel = if args.lane == Lane::Cuda { " (--no-accel: the CPU fallback, without a CUDA toolkit)" } else { "" };
    println!("Next: cargo mcpp build{no_accel} && {run}");
    Ok(crate::error::exit_code::SUCCESS)
}
