//! Test harness: a package written into a temp dir, built through the library API exactly as
//! build.rs would (explicit manifest/out/work dirs, an environment view, no process-env
//! mutation), with the compilers wrapped by a counting script so tests can assert how many
//! compiler processes a build started.
#![allow(dead_code)]

use cargo_mcpp::pipeline::Outcome;
use cargo_mcpp::Build;
use std::path::PathBuf;

/// A package in a temp dir.
pub struct Package {
    pub dir: tempfile::TempDir,
    pub tools: PathBuf,
}

/// The real program `name` on PATH (tests fail, not skip, when it is missing: CI installs it).
pub fn real_tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed; run scripts/setup-toolchains.sh"))
}

/// The real slangc: `MCPP_SLANGC` (which `scripts/setup-toolchains.sh` names in its env.sh),
/// else where that script installs it (tests fail, not skip, when it is missing).
pub fn real_slangc() -> PathBuf {
    let p = std::env::var_os("MCPP_SLANGC").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/opt/mcpp-toolchains/slang/bin/slangc"));
    assert!(p.is_file(), "no slangc at {}: run scripts/setup-toolchains.sh (the slang component)", p.display());
    p
}

impl Package {
    /// Write `files` (path, content) under a new temp dir.
    pub fn new(files: &[(&str, &str)]) -> Package {
        let dir = tempfile::Builder::new().prefix("mcpp-test-").tempdir().expect("tempdir");
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        let p = Package { dir, tools };
        for (path, text) in files {
            p.write(path, text);
        }
        p
    }
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join("pkg").join(rel)
    }
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }
    pub fn out_dir(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    pub fn work_dir(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    /// A wrapper for the real `program` that logs each start to `<tools>/<program>.log`.
    pub fn counting_tool(&self, program: &str) -> PathBuf {
        self.counting_wrapper_of(program, &real_tool(program))
    }
    /// A wrapper named `program` for the program at `real`, logging each start's argv to
    /// `<tools>/<program>.log` (one line a start; [`Package::starts`] counts them).
    pub fn counting_wrapper_of(&self, program: &str, real: &std::path::Path) -> PathBuf {
        let wrapper = self.tools.join(program);
        let log = self.tools.join(format!("{program}.log"));
        if wrapper.exists() {
            return wrapper;
        }
        std::fs::write(&wrapper, format!("#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n", log.display(), real.display())).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        wrapper
    }
    /// How many times the counting wrapper of `program` was started.
    pub fn starts(&self, program: &str) -> usize {
        std::fs::read_to_string(self.tools.join(format!("{program}.log"))).map(|t| t.lines().count()).unwrap_or(0)
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
        b.try_compile().unwrap_or_else(|e| panic!("build failed:\nerror: {e}"))
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
        let at = rust.find(&format!("source: {source:?}")).unwrap_or_else(|| panic!("{source} is not in the surface:\n{rust}"));
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

pub const COMMON_GLSL: &str = "const float SCALE = 3.0;\nfloat transform(float x) { return x * SCALE; }\n";
pub const SCALE_COMP: &str = "#version 450\n#extension GL_GOOGLE_include_directive : require\n#include \"common.glsl\"\nlayout(local_size_x = WORKGROUP) in;\nlayout(std430, binding = 0) buffer Data { float data[]; };\nvoid main() { uint i = gl_GlobalInvocationID.x; data[i] = transform(data[i]); }\n";
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
