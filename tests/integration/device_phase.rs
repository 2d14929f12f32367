//! One device phase, run where cargo's facts are (issue "One device phase"): `cargo mcpp build`
//! validates, fetches and runs `cargo build`; the device work happens only in the build scripts.
//! Real packages through real cargo, their build.rs `mcpp_build::build()` with this
//! repository's `cargo-mcpp` as the engine (`CARGO_MCPP`, set for both commands as an installed
//! engine would be found by both), the real glslangValidator/glslc behind counting wrappers.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn engine() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cargo-mcpp"))
}

fn client_dep() -> String {
    harness::client_dependency()
}

const BAD_COMP: &str =
    "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { this does not compile; }\n";
const GOOD_COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer D { float d[]; };\nvoid main() { d[gl_GlobalInvocationID.x] *= 2.0; }\n";

/// A member package `name` of a workspace, with one shader.
fn member(name: &str, shader: &str) -> Vec<(String, String)> {
    vec![
        (
            format!("{name}/Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\"]\n", client_dep()),
        ),
        (format!("{name}/build.rs"), "fn main() { mcpp_build::build(); }\n".to_string()),
        (format!("{name}/src/lib.rs"), "pub mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\n".to_string()),
        (format!("{name}/shaders/s.comp"), shader.to_string()),
    ]
}

/// Run `cargo <args>` (or `cargo-mcpp mcpp <args>` when `mcpp`) in `dir` with the engine
/// named and the GLSL compilers behind the package's counting wrappers.
fn run_in(
    pkg: &harness::Package,
    dir: &Path,
    mcpp: bool,
    args: &[&str],
    extra_env: &[(&str, &str)],
) -> Output {
    let mut cmd = if mcpp {
        let mut c = Command::new(engine());
        c.arg("mcpp");
        c
    } else {
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
    };
    cmd.current_dir(dir).args(args);
    cmd.env("CARGO_TARGET_DIR", pkg.dir.path().join("target"))
        .env("CARGO_MCPP", engine())
        .env("GLSLANG_VALIDATOR", pkg.counting_tool("glslangValidator"))
        .env("GLSLC", pkg.counting_tool("glslc"))
        .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .env_remove("DOCS_RS");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn cargo_mcpp_build_works_on_the_packages_cargo_builds() {
    let mut files: Vec<(String, String)> = vec![(
        "Cargo.toml".into(),
        "[workspace]\nmembers = [\"a\", \"b\"]\nresolver = \"2\"\n".into(),
    )];
    files.extend(member("a", GOOD_COMP));
    files.extend(member("b", BAD_COMP));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let pkg = harness::Package::new(&refs);
    let root = pkg.path("");

    // -p a: b is neither validated nor compiled; `cargo build -p a` agrees.
    let out = run_in(&pkg, &root, true, &["build", "-p", "a"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Device a [vulkan1.2]: 1 compiled, 0 fresh"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("Device b"), "{}", text(&out));
    assert_eq!(pkg.compiles("glslangValidator").len(), 1);
    let out = run_in(&pkg, &root, false, &["build", "-p", "a"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !text(&out).contains("Compiling a "),
        "plain cargo after cargo mcpp must rerun nothing: {}",
        text(&out)
    );
    assert_eq!(pkg.compiles("glslangValidator").len(), 1);

    // The package of the current directory in a virtual workspace.
    let out = run_in(&pkg, &root.join("a"), true, &["build"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Device a: fresh"), "{}", text(&out));

    // --workspace --exclude b.
    let out = run_in(
        &pkg,
        &root,
        true,
        &["build", "--workspace", "--exclude", "b"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));

    // Everything (a virtual manifest without default-members): b's shader fails, named by package,
    // with the exit code of a failed device compiler.
    let out = run_in(&pkg, &root, true, &["build"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("Device b failed: "), "{}", text(&out));
    assert!(text(&out).contains("shaders/s.comp"), "{}", text(&out));

    // default-members = ["a"] is what a bare build builds.
    pkg.write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"a\", \"b\"]\ndefault-members = [\"a\"]\nresolver = \"2\"\n",
    );
    let out = run_in(&pkg, &root, true, &["build"], &[]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn cargo_and_cargo_mcpp_agree_on_every_profile_and_the_opt_level_decides_optimisation() {
    let manifest = format!(
        "[package]\nname = \"prof\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\"]\n\n[package.metadata.mcpp.spirv]\ncompiler = \"glslc\"\n\n[profile.small]\ninherits = \"release\"\nopt-level = \"s\"\n\n[profile.release-noopt]\ninherits = \"release\"\nopt-level = 0\n\n[workspace]\n",
        client_dep()
    );
    let pkg = harness::Package::new(&[
        ("Cargo.toml", &manifest),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        (
            "src/lib.rs",
            "pub mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\n",
        ),
        ("shaders/s.comp", GOOD_COMP),
    ]);
    let dir = pkg.path("");
    // (profile arguments, the optimisation flag glslc must get)
    let cases: &[(&[&str], &str)] = &[
        (&[], "-O0"),
        (&["--release"], "-O"),
        (&["--profile", "small"], "-Os"),
        (&["--profile", "release-noopt"], "-O0"),
    ];
    for (i, (profile, flag)) in cases.iter().enumerate() {
        // Alternate which command goes first: the second reruns nothing either way.
        let (first, second) = if i % 2 == 0 {
            (true, false)
        } else {
            (false, true)
        };
        let args: Vec<&str> = std::iter::once("build")
            .chain(profile.iter().copied())
            .collect();
        let before = pkg.compiles("glslc").len();
        let out = run_in(&pkg, &dir, first, &args, &[]);
        assert!(out.status.success(), "{profile:?}: {}", text(&out));
        let all = pkg.compiles("glslc");
        assert_eq!(all.len(), before + 1, "{profile:?}: one compile: {all:?}");
        let argv: Vec<&str> = all.last().unwrap().split(' ').collect();
        assert!(
            argv.contains(flag),
            "{profile:?} must give glslc {flag}: {argv:?}"
        );
        assert!(
            !["-O0", "-O", "-Os"]
                .iter()
                .any(|f| f != flag && argv.contains(f)),
            "{profile:?}: {argv:?}"
        );
        let out = run_in(&pkg, &dir, second, &args, &[]);
        assert!(out.status.success(), "{profile:?}: {}", text(&out));
        assert!(
            !text(&out).contains("Compiling prof "),
            "{profile:?}: the second command must rerun nothing: {}",
            text(&out)
        );
        assert_eq!(pkg.compiles("glslc").len(), before + 1, "{profile:?}");
    }
}

/// A CUDA island crate with a C++ fallback; `src/lib.rs` documents the generated binding.
fn island_package() -> harness::Package {
    let manifest = format!(
        "[package]\nname = \"isl\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\naccel = \"cuda13.0+{{sm_90}}\"\nsources = [\"kernels/*.cu\"]\n\n[package.metadata.mcpp.island]\nsources = [\"kernels/k.cu\", \"host/k.cpp\"]\nfallback = [\"host/k.cpp\"]\n\n[workspace]\n",
        client_dep()
    );
    harness::Package::new(&[
        ("Cargo.toml", &manifest),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        ("src/lib.rs", "//! Kernels.\n/// The boundary.\npub mod kernels { #![allow(non_camel_case_types, dead_code)] include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_kernels.rs\")); }\n"),
        ("kernels/k.cu", "__global__ void k(int* x) { *x += 1; }\nMCPP_EXPORT_C int add_one(int x) { return x + 1; }\n"),
        ("host/k.cpp", "#include \"isl.kernels.h\"\nMCPP_EXPORT_C int add_one(int x) { return x + 1; }\n"),
    ])
}

/// PATH with cargo's directory and the system's, but no CUDA toolkit.
fn path_without_cuda() -> String {
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let cargo_dir = cargo
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    format!("{cargo_dir}:/usr/local/bin:/usr/bin:/bin")
}

#[test]
fn docs_rs_documents_an_island_crate_without_a_toolkit_and_every_refusal_names_a_way_that_works() {
    let pkg = island_package();
    let dir = pkg.path("");
    let path = path_without_cuda();
    let no_cuda: &[(&str, &str)] = &[("PATH", &path), ("CUDA_PATH", ""), ("CUDA_HOME", "")];
    let mut env: Vec<(&str, &str)> = no_cuda.to_vec();
    env.push(("DOCS_RS", "1"));
    let out = run_in(&pkg, &dir, false, &["doc", "--no-deps"], &env);
    assert!(out.status.success(), "{}", text(&out));
    let doc = std::fs::read_to_string(
        pkg.dir
            .path()
            .join("target/doc/isl/kernels/fn.add_one.html"),
    )
    .unwrap_or_default();
    assert!(
        doc.contains("add_one"),
        "the binding is documented: {}",
        text(&out)
    );

    // Plain cargo without a toolkit: the way out is the variable, which plain cargo understands.
    let out = run_in(&pkg, &dir, false, &["build"], no_cuda);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("MCPP_NO_ACCEL=1 cargo build"),
        "{}",
        text(&out)
    );
    assert!(
        !text(&out).contains("build with `--no-accel`"),
        "{}",
        text(&out)
    );
    // Under cargo mcpp the refusal names its flags, and its exit code is the refusal's (the
    // toolkit named, so nothing is fetched; `{native}` on a machine without an NVIDIA GPU).
    let cuda = harness::cuda13();
    let named: &[(&str, &str)] = &[
        ("PATH", &path),
        ("CUDA_PATH", cuda.to_str().unwrap()),
        ("CUDA_HOME", ""),
    ];
    let out = run_in(&pkg, &dir, true, &["build", "--accel", "cuda13.0"], named);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("Device isl failed: "), "{}", text(&out));
    assert!(
        text(&out).contains("`cargo mcpp build --no-accel`")
            && text(&out).contains("`cargo mcpp build --accel \"cuda13.0+{sm_80,sm_90}\"`"),
        "{}",
        text(&out)
    );
    // And that way works.
    let out = run_in(
        &pkg,
        &dir,
        false,
        &["build"],
        &[
            ("PATH", &path),
            ("CUDA_PATH", ""),
            ("CUDA_HOME", ""),
            ("MCPP_NO_ACCEL", "1"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_toolchain_package_installed_after_a_plain_cargo_build_reruns_its_build_script() {
    // Plain cargo first, with the glslang toolchain package not installed: the build falls back
    // to PATH (warned). `cargo mcpp build` then installs the package and writes mcpp.lock; the
    // next build must use the package, whichever command runs it.
    let pkg = harness::Package::new(&[
        ("Cargo.toml", format!("[package]\nname = \"late\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\"]\n\n[workspace]\n", client_dep()).as_str()),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        ("src/lib.rs", "pub mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\n"),
        ("shaders/s.comp", GOOD_COMP),
    ]);
    let dir = pkg.path("");
    let cmd = |mcpp: bool, args: &[&str]| {
        let mut c = if mcpp {
            let mut c = Command::new(engine());
            c.arg("mcpp");
            c
        } else {
            Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        };
        c.current_dir(&dir)
            .args(args)
            .env("CARGO_TARGET_DIR", pkg.dir.path().join("target"))
            .env("CARGO_MCPP", engine())
            .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"));
        for v in [
            "GLSLANG_VALIDATOR",
            "MCPP_GLSLANG",
            "MCPP_TOOL_GLSLANGVALIDATOR",
            "MCPP_ACCEL",
            "MCPP_NO_ACCEL",
            "CARGO_NET_OFFLINE",
            "DOCS_RS",
        ] {
            c.env_remove(v);
        }
        c.output().unwrap()
    };
    let out = cmd(false, &["build"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("found on PATH"), "{}", text(&out));
    let out = cmd(true, &["build"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Installed toolchain package glslang"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("Device late [vulkan1.2]: 1 compiled"),
        "the build script reran with the toolchain package: {}",
        text(&out)
    );
    let why = cmd(true, &["why", "tool", "glslangValidator"]);
    assert!(
        text(&why).contains("source:  toolchain-package"),
        "{}",
        text(&why)
    );
    // And now the two agree: nothing reruns.
    let out = cmd(false, &["build"]);
    assert!(
        out.status.success() && !text(&out).contains("Compiling late "),
        "{}",
        text(&out)
    );
}
