//! The one resolver : each of the five sources answers when the ones above
//! it are absent, every decision is recorded and `cargo mcpp why tool` prints it, PATH warns,
//! and the refusal lists every way. Then the two gates before a byte is fetched.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::config::accel::{AccelSet, Backend};
use cargo_mcpp::config::env::Env;
use cargo_mcpp::config::manifest::Manifest;
use cargo_mcpp::rules::{self, DeviceSource, Rule, RuleContext, RulePlan, ToolchainPackageReq};
use cargo_mcpp::tool::{self, RootChoice, ToolChoices, ToolSpec, ToolkitSpec};
use cargo_mcpp::toolchain_package::{Availability, Installed};
use harness::text;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_cargo-mcpp");

const FAKE: ToolSpec = ToolSpec {
    name: "fakecc",
    programs: &["fakecc"],
    env_vars: &["FAKECC", "MCPP_FAKECC"],
    version_args: &["--version"],
    install_hint: "none",
    toolchain_package: Some("glslang"),
    toolkit: None,
};

/// An executable script printing `fakecc <label>` (run by the kernel from its `#!` line).
fn fake(dir: &Path, label: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("fakecc");
    std::fs::write(&p, format!("#!/bin/sh\necho \"fakecc {label}\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    manifest: Manifest,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::write(root.join("lib.rs"), "").unwrap();
        let text = "[package]\nname = \"resolver-fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n\n[workspace]\n\n[package.metadata.mcpp]\n\n[package.metadata.mcpp.tools]\nfakecc = \"manifest/fakecc\"\n";
        std::fs::write(root.join("Cargo.toml"), text).unwrap();
        let manifest = Manifest::read(&root.join("Cargo.toml")).unwrap();
        Setup {
            _tmp: tmp,
            root,
            manifest,
        }
    }
    /// The device cache `cargo mcpp why tool` reads for this fixture (the dev profile).
    fn cache(&self) -> cargo_mcpp::engine::layout::DeviceCache {
        cargo_mcpp::engine::layout::DeviceCache::in_profile(
            &self.root.join("target/debug"),
            "resolver-fixture",
        )
    }
    fn why(&self) -> String {
        self.why_tool("fakecc")
    }
    fn why_tool(&self, name: &str) -> String {
        let o = Command::new(BIN)
            .args(["mcpp", "why", "tool", name, "--manifest-path"])
            .arg(self.root.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(self.root.join("target"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        text(&o)
    }
    fn package(&self) -> Availability {
        let dir = self.root.join("package");
        fake(&dir.join("bin"), "package");
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        Availability::Ready {
            installed: Installed {
                name: "glslang".into(),
                version: "13.1.1".into(),
                dir: dir.clone(),
                root: dir.clone(),
                bin_dirs: vec![dir.join("bin")],
                lib_dirs: vec![dir.join("lib")],
                archives: Vec::new(),
                files: Vec::new(),
            },
            lib_dirs: vec![dir.join("lib")],
            why: "the test's default".into(),
        }
    }
}

#[test]
fn each_source_answers_when_those_above_it_are_absent_and_why_names_it() {
    let s = Setup::new();
    fake(&s.root.join("builder"), "builder");
    fake(&s.root.join("manifest"), "manifest");
    fake(&s.root.join("env"), "env");
    fake(&s.root.join("override"), "override");
    fake(&s.root.join("pathdir"), "path");
    let mut choices = ToolChoices {
        builder: [("fakecc".to_string(), s.root.join("builder/fakecc"))].into(),
        builder_lines: [("fakecc".to_string(), "build.rs:7".to_string())].into(),
        manifest: [("fakecc".to_string(), s.root.join("manifest/fakecc"))].into(),
        manifest_lines: [(
            "fakecc".to_string(),
            s.manifest.line("tools.fakecc").unwrap(),
        )]
        .into(),
        manifest_path: s.manifest.path.clone(),
        toolchain_packages: [("glslang".to_string(), s.package())].into(),
        fetch_command: "cargo mcpp fetch --manifest-path X".into(),
    };
    let mut env = Env::empty();
    env.set("FAKECC", s.root.join("env/fakecc"));
    env.set("MCPP_TOOL_FAKECC", s.root.join("override/fakecc"));
    env.set("PATH", s.root.join("pathdir"));

    let check = |choices: &ToolChoices,
                 env: &Env,
                 class: &str,
                 label: &str,
                 origin: &str|
     -> Option<String> {
        let (t, warning) = tool::resolve(&FAKE, choices, env, &s.cache())
            .unwrap_or_else(|e| panic!("{class}: {e}"));
        assert_eq!(t.source.class(), class);
        assert_eq!(t.version, format!("fakecc {label}"));
        let d = &tool::read_decisions(&s.cache())["fakecc"];
        assert_eq!(d.source, class);
        assert!(d.origin.contains(origin), "{class}: {}", d.origin);
        let why = s.why();
        assert!(
            why.contains(&format!("source:  {class}"))
                && why.contains(origin)
                && why.contains(&format!("answer:  {}", t.path.display())),
            "{why}"
        );
        warning
    };
    // 1. The explicit choice: the builder, then the manifest line.
    assert!(check(
        &choices,
        &env,
        "choice",
        "builder",
        "build.rs:7 Build::tool(\"fakecc\""
    )
    .is_none());
    choices.builder.clear();
    let line = s.manifest.line("tools.fakecc").unwrap();
    assert_eq!(line, 14, "the line of `fakecc = ...`");
    check(
        &choices,
        &env,
        "choice",
        "manifest",
        &format!("Cargo.toml:{line} [package.metadata.mcpp.tools] fakecc"),
    );
    // 2. The rule's variables.
    choices.manifest.clear();
    check(
        &choices,
        &env,
        "env",
        "env",
        "the environment variable FAKECC=",
    );
    // 3. The global override.
    env.remove("FAKECC");
    check(
        &choices,
        &env,
        "override",
        "override",
        "the environment variable MCPP_TOOL_FAKECC=",
    );
    // 4. The declared toolchain package; its library directory goes on LD_LIBRARY_PATH and into the identity.
    env.remove("MCPP_TOOL_FAKECC");
    check(
        &choices,
        &env,
        "toolchain-package",
        "package",
        "toolchain package glslang 13.1.1 (the test's default)",
    );
    let (t, _) = tool::resolve(&FAKE, &choices, &env, &s.cache()).unwrap();
    assert_eq!(
        t.env,
        [(
            "LD_LIBRARY_PATH".to_string(),
            s.root.join("package/lib").into_os_string()
        )]
    );
    assert!(t.identity().contains("LD_LIBRARY_PATH="));
    // 5. PATH, with a warning saying how to declare it.
    choices.toolchain_packages.clear();
    let w = check(&choices, &env, "path", "path", "PATH (").expect("a PATH answer warns");
    assert!(
        w.contains("fakecc was found on PATH")
            && w.contains("declare it instead: [package.metadata.mcpp.tools] fakecc = ")
            && w.contains("cargo mcpp fetch"),
        "{w}"
    );
    assert!(s.why().contains("warning: fakecc was found on PATH"));
    // Nothing: one refusal listing every way, in order; recorded too.
    env.set("PATH", s.root.join("empty"));
    let e = tool::resolve(&FAKE, &choices, &env, &s.cache())
        .unwrap_err()
        .to_string();
    let ways = [
        "1. in build.rs: mcpp_build::Build::new().tool(\"fakecc\", \"/path/to/fakecc\")",
        "or in Cargo.toml: [package.metadata.mcpp.tools] fakecc = \"/path/to/fakecc\"",
        "2. the environment: FAKECC=/path/to/fakecc or MCPP_FAKECC=/path/to/fakecc",
        "3. the global override: MCPP_TOOL_FAKECC=/path/to/fakecc",
        "4. the toolchain package glslang: `cargo mcpp fetch --manifest-path X` installs it (pin a version with [package.metadata.mcpp.toolchain-packages] glslang = \"...\")",
        "5. on PATH as fakecc",
    ];
    let mut at = 0;
    for w in ways {
        let i = e[at..]
            .find(w)
            .unwrap_or_else(|| panic!("missing or out of order `{w}` in:\n{e}"));
        at += i + w.len();
    }
    assert!(
        e.contains("toolchain package glslang (not used by this build)"),
        "the consulted list: {e}"
    );
    let why = s.why();
    assert!(
        why.contains("source:  none")
            && why.contains("refused:")
            && why.contains("5. on PATH as fakecc"),
        "{why}"
    );
    // A stated choice that does not exist is refused, not replaced by a later source.
    env.set("PATH", s.root.join("pathdir"));
    choices
        .manifest
        .insert("fakecc".into(), s.root.join("nope/fakecc"));
    let e = tool::resolve(&FAKE, &choices, &env, &s.cache())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("which does not exist") && e.contains(&format!("Cargo.toml:{line}")),
        "{e}"
    );
}

/// A CUDA rule that plans nothing and declares the CUDA toolchain package, to test the gates with both backends.
struct FakeCuda;
const NVCC: ToolSpec = ToolSpec {
    name: "nvcc",
    programs: &["nvcc"],
    env_vars: &["NVCC"],
    version_args: &["--version"],
    install_hint: "none",
    toolchain_package: Some("cuda-nvcc"),
    toolkit: None,
};
impl Rule for FakeCuda {
    fn tools(&self) -> &'static [ToolSpec] {
        &[NVCC]
    }
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn backend(&self) -> Backend {
        Backend::Cuda
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["cu"]
    }
    fn plan(&self, _: &RuleContext, _: &[&DeviceSource]) -> cargo_mcpp::Result<RulePlan> {
        Ok(RulePlan::default())
    }
    fn toolchain_packages(
        &self,
        _: &cargo_mcpp::rules::options::RuleOptionsBox,
    ) -> cargo_mcpp::Result<Vec<ToolchainPackageReq>> {
        Ok(vec![ToolchainPackageReq {
            package: "cuda-nvcc",
            version: "13.0.88",
            tool: NVCC,
            named_by_env: &[],
        }])
    }
}

#[test]
fn two_gates_a_vulkan_only_or_no_accel_build_needs_no_cuda_and_a_choice_needs_no_toolchain_package()
{
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("k")).unwrap();
    std::fs::write(
        root.join("k/x.comp"),
        "#version 450\nlayout(local_size_x=1) in;\nvoid main(){}\n",
    )
    .unwrap();
    std::fs::write(root.join("k/y.cu"), "__global__ void k(){}\n").unwrap();
    let m = Manifest::parse(&root.join("Cargo.toml"), "[package]\nname = \"g\"\nversion = \"0.1.0\"\n[package.metadata.mcpp]\nsources = [\"k/*\"]\n").unwrap();
    let registry: Vec<Box<dyn Rule>> = vec![Box::new(rules::spirv::SpirvRule), Box::new(FakeCuda)];
    let options: Vec<_> = registry.iter().map(|r| r.read_options(&m).0).collect();
    let env = Env::empty();
    let needed = |accel: &str, env: &Env| -> Vec<String> {
        let a = AccelSet::parse(accel).unwrap();
        let c =
            cargo_mcpp::sources::collect(&m, &a, &registry, &cargo_mcpp::config::env::Env::empty())
                .unwrap();
        cargo_mcpp::plan::toolchain_packages::requirements(
            &m,
            &a,
            &c,
            &registry,
            &options,
            env,
            &BTreeMap::new(),
        )
        .unwrap()
        .into_iter()
        .map(|r| format!("{} {}", r.package, r.req.unwrap()))
        .collect()
    };
    assert_eq!(needed("vulkan1.2", &env), ["glslang >=11.0"]);
    assert_eq!(needed("", &env), Vec::<String>::new());
    assert_eq!(
        needed("vulkan1.2, cuda12.9+{sm_90}", &env),
        ["glslang >=11.0", "cuda-nvcc 13.0.88"],
        "both gates open: the control"
    );
    assert_eq!(needed("cuda12.9+{sm_90}", &env), ["cuda-nvcc 13.0.88"]);
    // A choice never causes the toolchain package to be fetched.
    let mut chosen = Env::empty();
    chosen.set("NVCC", "/opt/nvcc");
    chosen.set("MCPP_TOOL_GLSLANGVALIDATOR", "/opt/glslangValidator");
    assert_eq!(
        needed("vulkan1.2, cuda12.9+{sm_90}", &chosen),
        Vec::<String>::new()
    );
    // The CUDA rule's toolkit root variables name its toolkit: they are choices too.
    let cuda: Vec<Box<dyn Rule>> = vec![
        Box::new(rules::spirv::SpirvRule),
        Box::new(rules::cuda::CudaRule),
    ];
    let a = AccelSet::parse("cuda13.0+{sm_90}").unwrap();
    let c = cargo_mcpp::sources::collect(&m, &a, &cuda, &Env::empty()).unwrap();
    let cuda_options: Vec<_> = cuda.iter().map(|r| r.read_options(&m).0).collect();
    let cuda_needed = |env: &Env| {
        cargo_mcpp::plan::toolchain_packages::requirements(
            &m,
            &a,
            &c,
            &cuda,
            &cuda_options,
            env,
            &BTreeMap::new(),
        )
        .unwrap()
        .len()
    };
    assert_eq!(cuda_needed(&env), 1, "the control");
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        let mut named = Env::empty();
        named.set(var, "/opt/cuda");
        assert_eq!(cuda_needed(&named), 0, "{var}");
    }
}

#[test]
fn vulkan_only_and_no_accel_cargo_mcpp_builds_leave_the_cuda_cache_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("pkg");
    std::fs::create_dir_all(root.join("k")).unwrap();
    std::fs::write(
        root.join("k/x.comp"),
        "#version 450\nlayout(local_size_x=1) in;\nvoid main(){}\n",
    )
    .unwrap();
    std::fs::write(root.join("lib.rs"), "").unwrap();
    // Without a build script the package is refused: the device phase runs only there.
    let manifest = "[package]\nname = \"gates\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[lib]\npath = \"lib.rs\"\n[workspace]\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"k/*.comp\"]\n";
    std::fs::write(root.join("Cargo.toml"), manifest).unwrap();
    let refused = Command::new(BIN)
        .args(["mcpp", "build", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", tmp.path().join("target"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    assert!(
        text(&refused).contains(
            "the package `gates` declares [package.metadata.mcpp] but has no build script"
        ),
        "{}",
        text(&refused)
    );
    let client = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcpp-build");
    std::fs::write(
        root.join("build.rs"),
        "fn main() { mcpp_build::build(); }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            "{manifest}[build-dependencies]\nmcpp-build = {{ path = {:?} }}\n",
            client.display().to_string()
        ),
    )
    .unwrap();
    let home = tmp.path().join("home");
    let run = |args: &[&str]| -> Output {
        let mut c = Command::new(BIN);
        c.arg("mcpp")
            .args(args)
            .arg("--manifest-path")
            .arg(root.join("Cargo.toml"))
            .env("MCPP_HOME", &home)
            .env("CARGO_TARGET_DIR", tmp.path().join("target"));
        for v in [
            "MCPP_ACCEL",
            "MCPP_NO_ACCEL",
            "GLSLANG_VALIDATOR",
            "MCPP_GLSLANG",
            "MCPP_TOOL_GLSLANGVALIDATOR",
            "CARGO_NET_OFFLINE",
        ] {
            c.env_remove(v);
        }
        c.output().unwrap()
    };
    let o = run(&["build", "--no-accel"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !home.exists(),
        "a --no-accel build touches no cache: {:?}",
        std::fs::read_dir(&home).map(|r| r.count())
    );
    let o = run(&["fetch", "--no-accel"]);
    assert!(
        o.status.success() && text(&o).contains("Nothing to fetch for gates"),
        "{}",
        text(&o)
    );
    assert!(!home.exists());
    let o = run(&["build"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("Installed toolchain package glslang")
            && t.contains("Device gates [vulkan1.2]: 1 compiled"),
        "{t}"
    );
    let names = |d: &str| -> Vec<String> {
        std::fs::read_dir(home.join(d))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let mut packages = names("packages");
    packages.sort();
    assert_eq!(packages, ["glslang", "spirv-tools"]);
    assert!(
        names("archives").iter().all(|a| !a.starts_with("nvidia")),
        "{:?}",
        names("archives")
    );
    // The build script's device phase used the toolchain package, and recorded it.
    let why = Command::new(BIN)
        .args(["mcpp", "why", "tool", "glslangValidator", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(tmp.path().join("target"))
        .output()
        .unwrap();
    assert!(
        text(&why).contains("source:  toolchain-package"),
        "{}",
        text(&why)
    );
}

/// A fake toolkit root at `dir`: `bin/<program>` printing `<program> <label>` and the marker file.
fn fake_kit(dir: &Path, program: &str, marker: &str, label: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let m = dir.join(marker);
    std::fs::create_dir_all(m.parent().unwrap()).unwrap();
    std::fs::write(&m, "").unwrap();
    let p = dir.join("bin").join(program);
    std::fs::write(&p, format!("#!/bin/sh\necho \"{program} {label}\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The toolkit steps of the one resolver, with the CUDA rule's own declaration
/// (`rules::cuda_toolkit::NVCC`): the root key, the root a named nvcc sits in (a wrapper outside any
/// keeps running), `CUDA_PATH` then `CUDA_HOME` (one naming no toolkit is refused, not skipped),
/// the toolchain package's root, PATH (warned); `why tool nvcc` names the source and the root.
#[test]
fn toolkit_roots_answer_in_one_order_and_why_tool_names_the_root_and_its_source() {
    let s = Setup::new();
    let nvcc = rules::cuda_toolkit::NVCC;
    let kit = |name: &str, label: &str| {
        fake_kit(&s.root.join(name), "nvcc", "include/cuda_runtime.h", label)
    };
    let (by_var, by_home, by_key, sits_in) = (
        kit("var-kit", "var"),
        kit("home-kit", "home"),
        kit("key-kit", "key"),
        kit("named-kit", "named"),
    );
    let var_root = s.root.join("var-kit");
    let wrapper = fake(&s.root.join("wrapper"), "wrapper");
    let choices = ToolChoices {
        manifest_path: s.manifest.path.clone(),
        fetch_command: "cargo mcpp fetch --manifest-path X".into(),
        ..Default::default()
    };
    let mut env = Env::empty();
    env.set("PATH", s.root.join("empty"));
    env.set("CUDA_PATH", &var_root);
    env.set("CUDA_HOME", s.root.join("home-kit"));

    // CUDA_PATH: the program inside the root; the record names the variable and the root.
    let r = tool::resolve_toolkit(&nvcc, &choices, None, &env, &s.cache()).unwrap();
    assert_eq!(
        (
            r.tool.path.as_path(),
            r.tool.version.as_str(),
            r.tool.source.class()
        ),
        (by_var.as_path(), "nvcc var", "root")
    );
    let root = r.toolkit.unwrap();
    assert_eq!(
        (root.root.as_path(), root.found_by.as_str()),
        (var_root.as_path(), "CUDA_PATH")
    );
    let why = s.why_tool("nvcc");
    for line in [
        format!("answer:  {}", by_var.display()),
        "source:  root".to_string(),
        format!(
            "from:    the environment variable CUDA_PATH={}",
            var_root.display()
        ),
        format!("toolkit: {}", var_root.display()),
        format!(
            "from:  the environment variable CUDA_PATH={}",
            var_root.display()
        ),
    ] {
        assert!(why.contains(&line), "`{line}` missing from:\n{why}");
    }
    // CUDA_HOME when CUDA_PATH is unset.
    env.remove("CUDA_PATH");
    let r = tool::resolve_toolkit(&nvcc, &choices, None, &env, &s.cache()).unwrap();
    assert_eq!(
        (r.tool.path.as_path(), r.toolkit.unwrap().found_by.as_str()),
        (by_home.as_path(), "CUDA_HOME")
    );
    assert!(s.why_tool("nvcc").contains("CUDA_PATH (unset)"));
    // A named nvcc inside a toolkit brings its toolkit; a wrapper outside any runs, with the
    // root from the next ways.
    env.set("CUDA_PATH", &var_root);
    env.set("NVCC", &sits_in);
    let r = tool::resolve_toolkit(&nvcc, &choices, None, &env, &s.cache()).unwrap();
    assert_eq!(
        (
            r.tool.path.as_path(),
            r.tool.source.class(),
            r.toolkit.unwrap().root
        ),
        (
            sits_in.as_path(),
            "env",
            s.root.join("named-kit").canonicalize().unwrap()
        )
    );
    env.set("NVCC", &wrapper);
    let r = tool::resolve_toolkit(&nvcc, &choices, None, &env, &s.cache()).unwrap();
    assert_eq!(
        (
            r.tool.path.as_path(),
            r.tool.version.as_str(),
            r.toolkit.unwrap().root
        ),
        (wrapper.as_path(), "fakecc wrapper", var_root.clone())
    );
    let why = s.why_tool("nvcc");
    assert!(
        why.contains("source:  env")
            && why.contains(&format!("toolkit: {}", var_root.display()))
            && why.contains("is not inside a CUDA toolkit root; the root comes from the next ways"),
        "{why}"
    );
    // The root key comes first for the root; the named program still runs.
    let key = RootChoice {
        root: s.root.join("key-kit"),
        manifest: s.manifest.path.clone(),
        line: Some(3),
        key: "package.metadata.mcpp.cuda.toolkit".into(),
    };
    let r = tool::resolve_toolkit(&nvcc, &choices, Some(&key), &env, &s.cache()).unwrap();
    assert_eq!(
        (
            r.tool.path.as_path(),
            r.toolkit.as_ref().unwrap().root.as_path()
        ),
        (wrapper.as_path(), key.root.as_path())
    );
    env.remove("NVCC");
    let r = tool::resolve_toolkit(&nvcc, &choices, Some(&key), &env, &s.cache()).unwrap();
    assert_eq!(
        (r.tool.path.as_path(), r.tool.source.class()),
        (by_key.as_path(), "choice")
    );
    assert!(s.why_tool("nvcc").contains(&format!(
        "from:    {}:3 [package.metadata.mcpp.cuda] toolkit",
        s.manifest.path.display()
    )));
    let bad_key = RootChoice {
        root: s.root.join("nope"),
        ..key.clone()
    };
    let e = tool::resolve_toolkit(&nvcc, &choices, Some(&bad_key), &env, &s.cache()).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("package.metadata.mcpp.cuda.toolkit"));
    assert!(
        e.to_string().contains(&format!(
            "[package.metadata.mcpp.cuda] toolkit names `{}`, which has no include/cuda_runtime.h",
            s.root.join("nope").display()
        )),
        "{e}"
    );
    // A set root variable that names no toolkit is refused (naming it), not replaced by PATH.
    env.set("CUDA_PATH", s.root.join("nope"));
    env.set("PATH", s.root.join("var-kit/bin"));
    let e = tool::resolve_toolkit(&nvcc, &choices, None, &env, &s.cache()).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("CUDA_PATH"));
    assert!(
        e.to_string().contains(&format!(
            "CUDA_PATH=`{}` has no include/cuda_runtime.h",
            s.root.join("nope").display()
        )),
        "{e}"
    );
    assert!(s.why_tool("nvcc").contains("source:  none"));
    // The toolchain package's root is the toolkit root.
    env.remove("CUDA_PATH");
    env.remove("CUDA_HOME");
    let package_root = s.root.join("package-kit");
    fake_kit(&package_root, "nvcc", "include/cuda_runtime.h", "package");
    let mut with_package = choices.clone();
    let Availability::Ready {
        mut installed,
        lib_dirs,
        why,
    } = s.package()
    else {
        unreachable!()
    };
    installed.root = package_root.clone();
    with_package.toolchain_packages.insert(
        "cuda-nvcc".into(),
        Availability::Ready {
            installed,
            lib_dirs,
            why,
        },
    );
    let r = tool::resolve_toolkit(&nvcc, &with_package, None, &env, &s.cache()).unwrap();
    assert_eq!(
        (
            r.tool.version.as_str(),
            r.tool.source.class(),
            r.toolkit.unwrap().root
        ),
        ("nvcc package", "toolchain-package", package_root)
    );
    // PATH: the toolkit around the nvcc found there, warned with the ways to declare it.
    let r = tool::resolve_toolkit(&nvcc, &choices, None, &env, &s.cache()).unwrap();
    assert_eq!(
        (r.tool.source.class(), r.toolkit.unwrap().root),
        ("path", var_root.canonicalize().unwrap())
    );
    let w = r.warning.unwrap();
    assert!(
        w.contains("the CUDA toolkit was found through nvcc on PATH")
            && w.contains("[package.metadata.mcpp.cuda] toolkit = \"")
            && w.contains("CUDA_PATH="),
        "{w}"
    );
}

/// The toolkit step is declared, not written: a ROCm-like toolkit (`HIP_PATH`, then
/// `ROCM_PATH`, `bin/hipcc`, `include/hip/hip_runtime.h`) resolves with no code of its own, and
/// its refusal lists its ways, numbered without gaps.
#[test]
fn another_lane_declares_a_toolkit_and_gets_the_same_order_and_refusal() {
    const ROCM: ToolkitSpec = ToolkitSpec {
        root_vars: &["HIP_PATH", "ROCM_PATH"],
        marker_files: &["include/hip/hip_runtime.h"],
        ..ToolkitSpec::new("ROCm", "bin/hipcc")
    };
    const HIPCC: ToolSpec = ToolSpec {
        name: "hipcc",
        programs: &["hipcc"],
        env_vars: &["HIPCC"],
        version_args: &["--version"],
        install_hint: "apt install rocm-hip-sdk",
        toolchain_package: None,
        toolkit: Some(&ROCM),
    };
    let s = Setup::new();
    let hipcc = fake_kit(
        &s.root.join("rocm"),
        "hipcc",
        "include/hip/hip_runtime.h",
        "6.2",
    );
    let choices = ToolChoices {
        manifest_path: s.manifest.path.clone(),
        ..Default::default()
    };
    let mut env = Env::empty();
    env.set("PATH", s.root.join("empty"));
    env.set("ROCM_PATH", s.root.join("rocm"));
    let r = tool::resolve_toolkit(&HIPCC, &choices, None, &env, &s.cache()).unwrap();
    assert_eq!(
        (
            r.tool.path.as_path(),
            r.tool.version.as_str(),
            r.toolkit.unwrap().found_by.as_str()
        ),
        (hipcc.as_path(), "hipcc 6.2", "ROCM_PATH")
    );
    assert!(s
        .why_tool("hipcc")
        .contains("considered before it:\n    build.rs Build::tool(\"hipcc\", ..) (not called)"));
    env.remove("ROCM_PATH");
    let e = tool::resolve_toolkit(&HIPCC, &choices, None, &env, &s.cache())
        .unwrap_err()
        .to_string();
    let ways = [
        "no ROCm found (for hipcc)",
        "1. in build.rs: mcpp_build::Build::new().tool(\"hipcc\", \"/path/to/hipcc\")",
        "2. the environment: HIPCC=/path/to/hipcc",
        "3. the global override: MCPP_TOOL_HIPCC=/path/to/hipcc",
        "4. the ROCm root: HIP_PATH=/path/to/root or ROCM_PATH=/path/to/root (a root holds bin/hipcc and include/hip/hip_runtime.h)",
        "5. on PATH as hipcc, inside a ROCm root",
        "HIP_PATH (unset)",
        "ROCM_PATH (unset)",
    ];
    let mut at = 0;
    for w in ways {
        let i = e[at..]
            .find(w)
            .unwrap_or_else(|| panic!("missing or out of order `{w}` in:\n{e}"));
        at += i + w.len();
    }
    assert!(
        !e.contains("6. ") && !e.contains("toolkit = "),
        "five ways, no root key: {e}"
    );
}

/// The version cache is keyed like the hash cache (size, mtime, ctime, inode): a tool replaced
/// in place by `cp -p` with a program of the same size and mtime is asked its version again.
#[test]
fn a_tool_replaced_in_place_with_cp_p_is_asked_its_version_again() {
    use std::os::unix::fs::MetadataExt;
    let s = Setup::new();
    let tool_path = fake(&s.root.join("in-place"), "AAAA");
    let other = fake(&s.root.join("other"), "BBBB");
    // The same mtime on both, so `cp -p` leaves size and mtime of the replaced file as they were.
    let mtime = std::fs::metadata(&tool_path).unwrap().modified().unwrap();
    std::fs::File::options()
        .write(true)
        .open(&other)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let choices = ToolChoices {
        manifest_path: s.manifest.path.clone(),
        ..Default::default()
    };
    let mut env = Env::empty();
    env.set("FAKECC", &tool_path);
    let (t, _) = tool::resolve(&FAKE, &choices, &env, &s.cache()).unwrap();
    assert_eq!(t.version, "fakecc AAAA");
    let before = std::fs::metadata(&tool_path).unwrap();
    let cp = Command::new("cp")
        .arg("-p")
        .arg(&other)
        .arg(&tool_path)
        .output()
        .unwrap();
    assert!(cp.status.success(), "{}", text(&cp));
    let after = std::fs::metadata(&tool_path).unwrap();
    assert_eq!(
        (after.len(), after.mtime(), after.mtime_nsec(), after.ino()),
        (
            before.len(),
            before.mtime(),
            before.mtime_nsec(),
            before.ino()
        ),
        "cp -p kept size, mtime and inode"
    );
    assert_eq!(
        std::fs::read_to_string(&tool_path).unwrap(),
        "#!/bin/sh\necho \"fakecc BBBB\"\n"
    );
    let (t, _) = tool::resolve(&FAKE, &choices, &env, &s.cache()).unwrap();
    assert_eq!(
        t.version, "fakecc BBBB",
        "the replaced program was asked again"
    );
    assert!(s.why().contains("version: fakecc BBBB"));
}

/// `Build::tool` with a name no rule's tool answers to is refused like the manifest's `tools`
/// key, naming the build.rs line and the known names; it was ignored, and the resolver picked
/// another program.
#[test]
fn a_builder_tool_of_no_rule_is_refused_naming_its_line_and_the_known_tools() {
    let line = line!() + 5;
    let text = harness::package_refusal(
        "accel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\"]",
        &[("shaders/a.comp", harness::SQUARE_COMP)],
        |b| {
            b.tool("glslangvalidator", "/nonexistent/glslangValidator");
        },
    );
    assert!(
        text.contains(&format!(
            "unknown tool `glslangvalidator` named by Build::tool ({}:{line})",
            file!()
        )),
        "{text}"
    );
    for known in [
        "glslangValidator",
        "glslc",
        "slangc",
        "nvcc",
        "clang++",
        "ccbin",
        "hipcc",
        "icpx",
        "bisheng",
    ] {
        assert!(
            text.contains(known),
            "{known} missing from the known tools: {text}"
        );
    }
}
