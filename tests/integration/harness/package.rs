//! [`Package`]: a package written into a temp dir, built through the library API exactly as
//! build.rs would (explicit manifest/out/work dirs, an environment view, no process-env
//! mutation), with the compilers behind counting [`Shim`] wrappers so tests can assert how many
//! compiler processes a build started.

use super::{real_tool, Shim};
use cargo_mcpp::pipeline::Outcome;
use cargo_mcpp::Build;
use std::path::PathBuf;

/// A package in a temp dir: the package at `<dir>/pkg`, its counting wrappers in `tools`.
pub struct Package {
    /// The temp dir holding the package, its out/work dirs and `MCPP_HOME`.
    pub dir: tempfile::TempDir,
    /// Where the counting wrappers live.
    pub tools: PathBuf,
}

/// The real slangc: `MCPP_SLANGC` (which `scripts/setup-toolchains.sh` names in its env.sh),
/// else where that script installs it (tests fail, not skip, when it is missing).
pub fn real_slangc() -> PathBuf {
    let p = std::env::var_os("MCPP_SLANGC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mcpp-toolchains/slang/bin/slangc"));
    assert!(
        p.is_file(),
        "no slangc at {}: run scripts/setup-toolchains.sh (the slang component)",
        p.display()
    );
    p
}

impl Package {
    /// `cargo mcpp build <args>` of this package as a user runs it: its manifest, its own
    /// target directory and `MCPP_HOME`, this repository's engine named (`CARGO_MCPP`), no
    /// accelerator choice from the environment. Callers add the tools' variables (or override
    /// `CARGO_MCPP`) before running it.
    pub fn cargo_mcpp_build(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"));
        cmd.args(["mcpp", "build", "--manifest-path"])
            .arg(self.path("Cargo.toml"))
            .arg("--target-dir")
            .arg(self.dir.path().join("target"))
            .args(args)
            .env("MCPP_HOME", self.dir.path().join("mcpp-home"))
            .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
            .env_remove("MCPP_ACCEL")
            .env_remove("MCPP_NO_ACCEL");
        cmd
    }
    /// Write `files` (path, content) under a new temp dir.
    pub fn new(files: &[(&str, &str)]) -> Package {
        // The random part follows a letter: a directory name token starting with a digit
        // (`-0u1x...`) is a malformed number to a GLSL preprocessor when a test puts the path
        // into a `-D` value (spirv_real's shell-looking define failed 1 run in ~30 so).
        let dir = tempfile::Builder::new()
            .prefix("mcpp-test-p")
            .tempdir()
            .expect("tempdir");
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        let p = Package { dir, tools };
        for (path, text) in files {
            p.write(path, text);
        }
        p
    }
    /// The path of `rel` in the package.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join("pkg").join(rel)
    }
    /// Write `text` to `rel` in the package (creating its directory).
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    /// Where the first line of the manifest starting with `key` is, as a refusal names it:
    /// `Cargo.toml:<line>:1`.
    pub fn manifest_at(&self, key: &str) -> String {
        let line = self
            .read("Cargo.toml")
            .lines()
            .position(|l| l.starts_with(key))
            .expect("the key is in the manifest");
        format!("Cargo.toml:{}:1", line + 1)
    }
    /// The text of `rel` in the package.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }
    /// The build's `OUT_DIR`.
    pub fn out_dir(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    /// The build's work dir (the device cache).
    pub fn work_dir(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    /// A wrapper (a [`Shim`]) for the real `program` that records each start; made once.
    pub fn counting_tool(&self, program: &str) -> PathBuf {
        self.counting_wrapper_of(program, &real_tool(program))
    }
    /// A wrapper (a [`Shim`]) named `program` for the program at `real`, recording each start
    /// ([`Package::starts`], [`Package::compiles`]); made once.
    pub fn counting_wrapper_of(&self, program: &str, real: &std::path::Path) -> PathBuf {
        // Builders made on several threads at once install each wrapper once, whole (the
        // program and its settings) before any of them runs it.
        static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        let wrapper = self.tools.join(program);
        if !wrapper.exists() {
            Shim::wrap(&self.tools, program, real);
        }
        wrapper
    }
    /// How many times the counting wrapper of `program` was started.
    pub fn starts(&self, program: &str) -> usize {
        Shim::at(&self.tools.join(program)).starts()
    }
    /// The argument lines (`echo "$*"`) of each start of `program`'s wrapper but its
    /// `--version`/`--help` probes.
    pub fn compiles(&self, program: &str) -> Vec<String> {
        Shim::at(&self.tools.join(program))
            .calls()
            .iter()
            .map(|r| r.line())
            .collect()
    }
    /// A builder for this package with both GLSL compilers wrapped by counters.
    pub fn build(&self) -> Build {
        let mut b = Build::new();
        b.manifest_dir(self.path(""))
            .out_dir(self.out_dir())
            .work_dir(self.work_dir())
            .env("CARGO_PKG_NAME", "test-package")
            .env("MCPP_HOME", self.dir.path().join("mcpp-home"))
            .env_remove("MCPP_ACCEL")
            .env_remove("MCPP_NO_ACCEL")
            .env_remove("GLSLANG_VALIDATOR")
            .env_remove("GLSLC")
            .env_remove("MCPP_GLSLANG")
            .env_remove("MCPP_GLSLC")
            .tool("glslangValidator", self.counting_tool("glslangValidator"))
            .tool("glslc", self.counting_tool("glslc"))
            .jobs(2);
        b
    }
    /// Build and return the outcome, panicking with the error text on failure.
    pub fn compile(&self, b: &Build) -> Outcome {
        b.try_compile()
            .unwrap_or_else(|e| panic!("build failed:\nerror: {e}"))
    }
    /// Build and return the error text.
    pub fn refuse(&self, b: &Build) -> String {
        match b.try_compile() {
            Ok(_) => panic!("the build was expected to be refused"),
            Err(e) => e.to_string(),
        }
    }
    /// The generated Rust surface.
    pub fn rust_surface(&self) -> String {
        std::fs::read_to_string(self.out_dir().join("mcpp_shaders.rs")).expect("mcpp_shaders.rs")
    }
    /// The bytes embedded for accessor `ident` (found through the Rust surface's include_bytes!).
    pub fn embedded_bytes(&self, source: &str) -> Vec<u8> {
        let rust = self.rust_surface();
        let at = rust
            .find(&format!("source: {source:?}"))
            .unwrap_or_else(|| panic!("{source} is not in the surface:\n{rust}"));
        let before = &rust[..at];
        let inc = before.rfind("include_bytes!(").expect("include_bytes");
        let lit = &before[inc + "include_bytes!(".len()..];
        let lit = &lit[..lit.find(')').unwrap()];
        let path: String = serde_json::from_str(lit).expect("a string literal");
        std::fs::read(path).expect("payload file")
    }
}

/// A manifest with `[package.metadata.mcpp]` body `mcpp` (and more tables after it).
pub fn manifest(name: &str, mcpp: &str) -> String {
    format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package.metadata.mcpp]\n{mcpp}\n")
}

/// An included GLSL file (no stage) with one function.
pub const COMMON_GLSL: &str =
    "const float SCALE = 3.0;\nfloat transform(float x) { return x * SCALE; }\n";
/// A compute shader including `common.glsl`, its workgroup size from the define `WORKGROUP`.
pub const SCALE_COMP: &str = "#version 450\n#extension GL_GOOGLE_include_directive : require\n#include \"common.glsl\"\nlayout(local_size_x = WORKGROUP) in;\nlayout(std430, binding = 0) buffer Data { float data[]; };\nvoid main() { uint i = gl_GlobalInvocationID.x; data[i] = transform(data[i]); }\n";
/// A compute shader squaring its buffer, its workgroup size from the define `WORKGROUP`.
pub const SQUARE_COMP: &str = "#version 450\nlayout(local_size_x = WORKGROUP) in;\nlayout(std430, binding = 0) buffer Data { float data[]; };\nvoid main() { uint i = gl_GlobalInvocationID.x; data[i] = data[i] * data[i]; }\n";

/// The example-like package: two shaders sharing a stem in two directories, one including a
/// `.glsl` from `shaders/include`, a define, the given compiler.
pub fn shader_package(compiler: &str) -> Package {
    Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "{}\n[package.metadata.mcpp.spirv]\ncompiler = \"{compiler}\"\nincludes = [\"shaders/include\"]\ndefines = {{ WORKGROUP = \"64\" }}\n",
                manifest("shader-pkg", "accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\"]")
            ),
        ),
        ("shaders/include/common.glsl", COMMON_GLSL),
        ("shaders/a/scale.comp", SCALE_COMP),
        ("shaders/b/scale.comp", SQUARE_COMP),
    ])
}

/// `[build-dependencies] mcpp-build = { path = "<this repository>/mcpp-build" }`: the
/// dependency-free build.rs client, for packages built by real cargo with this engine.
pub fn client_dependency() -> String {
    format!(
        "[build-dependencies]\nmcpp-build = {{ path = {:?} }}\n",
        super::repo().join("mcpp-build").display().to_string()
    )
}

/// The example-like SPIR-V package (two `scale.comp` in `shaders/a` and `shaders/b`, one
/// including `shaders/include/common.glsl`, glslang with a define) whose build.rs is
/// `mcpp_build::build()`: named `name`, `extra_mcpp` appended to `[package.metadata.mcpp]`,
/// `main_rs` its program (which includes the surface as `mod shaders`).
pub fn client_package(name: &str, extra_mcpp: &str, main_rs: &str) -> Package {
    Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\"]\n{extra_mcpp}\n[package.metadata.mcpp.spirv]\ncompiler = \"glslang\"\nincludes = [\"shaders/include\"]\ndefines = {{ WORKGROUP = \"64\" }}\n\n[workspace]\n",
                client_dependency()
            ),
        ),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        ("src/main.rs", main_rs),
        ("shaders/include/common.glsl", COMMON_GLSL),
        ("shaders/a/scale.comp", SCALE_COMP),
        ("shaders/b/scale.comp", SQUARE_COMP),
    ])
}

/// The rustc arguments (`-L native=DIR`, `-l LIB`, `-C link-arg=ARG`) of the link directives a
/// device phase printed (`cargo::rustc-link-search=native=`, `cargo::rustc-link-lib=`,
/// `cargo::rustc-link-arg=`), in their order: what cargo passes when it links the crate.
pub fn rustc_link_args(outcome: &Outcome) -> Vec<String> {
    let mut args = Vec::new();
    for l in outcome.cargo.lines() {
        if let Some(dir) = l.strip_prefix("cargo::rustc-link-search=native=") {
            args.extend(["-L".to_string(), format!("native={dir}")]);
        }
        if let Some(lib) = l.strip_prefix("cargo::rustc-link-lib=") {
            args.extend(["-l".to_string(), lib.to_string()]);
        }
        if let Some(arg) = l.strip_prefix("cargo::rustc-link-arg=") {
            args.push(format!("-Clink-arg={arg}"));
        }
    }
    args
}

/// Compile `main_rs` (a program using `mod shaders`, the generated Rust surface of `pkg`) with
/// rustc into `exe`, linking what the outcome's directives link (the lane's archive: object
/// storage's symbols), and run it with `env` set; panics when rustc fails.
pub fn run_rust_surface_program(
    pkg: &Package,
    outcome: &Outcome,
    main_rs: &str,
    exe: &std::path::Path,
    env: &[(&str, &std::path::Path)],
) -> std::process::Output {
    run_rust_surface_program_with(pkg, outcome, main_rs, exe, env, &[])
}

/// [`run_rust_surface_program`] with more rustc arguments (`-D unsafe_code`: the crate-level
/// lint a user's `#![deny(unsafe_code)]` sets).
pub fn run_rust_surface_program_with(
    pkg: &Package,
    outcome: &Outcome,
    main_rs: &str,
    exe: &std::path::Path,
    env: &[(&str, &std::path::Path)],
    rustc_args: &[&str],
) -> std::process::Output {
    use std::process::Command;
    let main = pkg.dir.path().join("main.rs");
    std::fs::write(
        &main,
        format!(
            "mod shaders {{ include!({:?}); }}\n{main_rs}",
            pkg.out_dir().join("mcpp_shaders.rs").display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    let mut rustc = Command::new("rustc");
    rustc
        .args(["--edition", "2021", "-D", "warnings"])
        .args(rustc_args)
        .arg("-o")
        .arg(exe)
        .arg(&main)
        .args(rustc_link_args(outcome));
    let out = rustc.output().unwrap();
    assert!(out.status.success(), "rustc failed: {}", super::text(&out));
    let mut cmd = Command::new(exe);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}
