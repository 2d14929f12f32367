//! The compiler launcher: sccache, ccache or a program of the user's put before the
//! compilers it can handle, so the shared caches and distributed compilation people already run
//! serve the device phase too. Declared, never guessed: the package key `launcher`, a rule's own
//! `launcher` key ([`crate::config::manifest::McppMetadata::rule_launchers`]) or `MCPP_LAUNCHER`;
//! nothing looks at `RUSTC_WRAPPER` or for an installed sccache by itself.
//!
//! The launcher is a property of the planned action's tool ([`crate::tool::Tool::launcher`]):
//! [`crate::engine::graph`] starts `<launcher> <compiler> <args>`, while the fingerprint keys the real
//! compiler only ([`crate::tool::Tool::identity`] leaves the launcher out), so switching it on or
//! off rebuilds nothing that is fresh. Which actions get it is decided per rule by
//! [`crate::rules::Rule::launcher_ok`] (default [`Launcher::handles`]), applied once to every
//! planned action by [`crate::plan::lanes`]: a new rule gets it with no change here.

use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::config::manifest::{Manifest, MCPP_TABLE};
use crate::tool::Tool;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable that chooses the launcher of every rule, over the manifest: a name
/// or path as the manifest key takes it; `none` or empty: no launcher at all.
pub const LAUNCHER_ENV: &str = "MCPP_LAUNCHER";

/// What kind of launcher a program is, from its file name: what it can handle differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LauncherKind {
    /// sccache: gcc, clang, nvcc, nvc++ (and clang's CUDA and HIP modes).
    Sccache,
    /// ccache: gcc, clang, nvcc.
    Ccache,
    /// Another program (a wrapper of the user's): trusted with every C, C++ and CUDA compiler,
    /// never with a shader compiler.
    Other,
}

/// A launcher, resolved to a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// The program started in the compiler's place, absolute.
    pub program: PathBuf,
    /// Its kind.
    pub kind: LauncherKind,
    /// Where it was chosen, for messages (`MCPP_LAUNCHER`, `[package.metadata.mcpp] launcher`).
    pub origin: String,
}

pub use crate::tool::launch::compiler_name;
use crate::tool::launch::C_FAMILY;

/// The shader compilers, by program file name: no launcher takes them, and none is one.
const SHADER_COMPILERS: &[&str] = &["glslangValidator", "glslang", "glslc", "slangc"];

impl Launcher {
    /// Whether this launcher can run `tool` (by the compiler's name, [`compiler_name`]): sccache
    /// and a user's program take the C, C++ and CUDA compilers; ccache takes gcc, clang and nvcc;
    /// none takes a shader compiler (glslangValidator, glslc, slangc), whose output they do not
    /// cache.
    pub fn handles(&self, tool: &Tool) -> bool {
        let name = compiler_name(&tool.path);
        match self.kind {
            LauncherKind::Sccache | LauncherKind::Other => C_FAMILY.contains(&name.as_str()),
            LauncherKind::Ccache => ["cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc"].contains(&name.as_str()),
        }
    }

    /// The name shown in messages (`sccache`).
    pub fn name(&self) -> String {
        self.program.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// The launchers of one build: the default one and each rule's own choice.
#[derive(Debug, Clone, Default)]
pub struct Launchers {
    /// The launcher of every rule without its own key (the package key or `MCPP_LAUNCHER`).
    pub default: Option<Launcher>,
    /// A rule's own `launcher` key, resolved (`None`: `"none"`, no launcher for the rule).
    pub per_rule: BTreeMap<String, Option<Launcher>>,
}

impl Launchers {
    /// Resolve the launchers: `MCPP_LAUNCHER` when set (for every rule; `none` or empty: none),
    /// else each rule's `launcher` key, else the package's `launcher`. Run by
    /// [`crate::pipeline::validate`], so `cargo mcpp build` refuses a bad launcher before cargo
    /// starts, and again where the lanes are planned.
    ///
    /// # Errors
    /// Every problem at once ([`Error::all`]): [`ErrorKind::Manifest`] naming `file:line:col` and
    /// the key, or [`ErrorKind::ToolNotFound`] naming `MCPP_LAUNCHER`, when the program does not
    /// exist (a bare name not on PATH, a path that is no file), is not executable, or (in the
    /// manifest) the value is empty.
    ///
    /// Under docs.rs (`DOCS_RS` set) no compiler runs, so no launcher is resolved or refused:
    /// `launcher = "sccache"` documents where sccache is absent.
    pub fn resolve(manifest: &Manifest, env: &Env) -> Result<Launchers> {
        if env.docs_rs() {
            return Ok(Launchers::default());
        }
        if let Some(value) = env.get_os(LAUNCHER_ENV) {
            let value = value.to_string_lossy().into_owned();
            // Empty in the environment is "unset" as shell users write it (`MCPP_LAUNCHER= cargo ...`).
            let value = if value.trim().is_empty() { "none".to_string() } else { value };
            let default = resolve_one(&value, manifest, env, LAUNCHER_ENV).map_err(|e| {
                let e = e.help(format!("set {LAUNCHER_ENV} to `sccache`, `ccache`, the path of an executable, or `none`"));
                Error { kind: ErrorKind::ToolNotFound, ..e }
            })?;
            return Ok(Launchers { default, per_rule: BTreeMap::new() });
        }
        let at = |key: &str| (manifest.at_col(key), format!("{MCPP_TABLE}.{key}"));
        let refuse = |e: Error, key: &str| {
            let (file, key) = at(key);
            e.file(file).key(key).help("write `sccache`, `ccache` (found on PATH), the path of an executable (relative to the package root or absolute), or `none`")
        };
        let mut problems = Vec::new();
        let default = match &manifest.mcpp.launcher {
            Some(v) => resolve_one(v, manifest, env, &format!("`launcher` in {}", manifest.path.display())).map_err(|e| problems.push(refuse(e, "launcher"))).ok().flatten(),
            None => None,
        };
        let mut per_rule = BTreeMap::new();
        for (rule, v) in &manifest.mcpp.rule_launchers {
            let key = format!("{rule}.launcher");
            match resolve_one(v, manifest, env, &format!("`{rule}.launcher` in {}", manifest.path.display())) {
                Ok(l) => {
                    per_rule.insert(rule.clone(), l);
                }
                Err(e) => problems.push(refuse(e, &key)),
            }
        }
        Error::all(problems)?;
        Ok(Launchers { default, per_rule })
    }

    /// The launcher of rule `rule` (`cxx` for the host C++ lane).
    pub fn for_rule(&self, rule: &str) -> Option<&Launcher> {
        match self.per_rule.get(rule) {
            Some(choice) => choice.as_ref(),
            None => self.default.as_ref(),
        }
    }
}

/// One launcher value: `none` -> none; empty -> refused (write `none`); a bare name -> looked
/// up on PATH; anything with a `/` -> a path, relative to the package root, that must be an
/// executable file.
fn resolve_one(value: &str, manifest: &Manifest, env: &Env, origin: &str) -> Result<Option<Launcher>> {
    let value = value.trim();
    if value == "none" {
        return Ok(None);
    }
    if value.is_empty() {
        return Err(Error::new(ErrorKind::Manifest, "the launcher is an empty string").detail(format!("chosen by {origin}; write `none` for no launcher, or leave the key out")));
    }
    let program = if value.contains('/') || value.contains('\\') {
        let p = PathBuf::from(value);
        let p = if p.is_absolute() { p } else { manifest.path.parent().unwrap_or(Path::new(".")).join(p) };
        if !p.is_file() {
            return Err(Error::new(ErrorKind::Manifest, format!("the launcher `{}` is not a file", crate::text::echo_path(&p))).detail(format!("chosen by {origin}")));
        }
        if !crate::tool::is_executable(&p) {
            return Err(Error::new(ErrorKind::Manifest, format!("the launcher `{}` is not executable", crate::text::echo_path(&p))).detail(format!("chosen by {origin}; make it executable (`chmod +x`) or name another program")));
        }
        p
    } else {
        crate::tool::find_on_path(value, env).ok_or_else(|| {
            Error::new(ErrorKind::Manifest, format!("the launcher `{}` is not on PATH", crate::text::echo(value)))
                .detail(format!("chosen by {origin}; cargo-mcpp looks it up by name, on PATH only (an executable file)"))
        })?
    };
    // A launcher runs `<launcher> <compiler> <args>`: a compiler there would take the real
    // compiler's path for a source file. Judged on the file the path leads to (`cc` is gcc,
    // ccache's `/usr/lib/ccache/gcc` is ccache).
    let real = std::fs::canonicalize(&program).unwrap_or_else(|_| program.clone());
    let name = compiler_name(&real);
    if C_FAMILY.contains(&name.as_str()) || SHADER_COMPILERS.contains(&name.as_str()) {
        return Err(Error::new(ErrorKind::Manifest, format!("the launcher `{}` is a compiler ({name}), not a launcher", crate::text::echo_path(&program)))
            .detail(format!("chosen by {origin}; a launcher is started as `<launcher> <compiler> <arguments>` (sccache, ccache, a wrapper script), so a compiler there would take the real compiler for a source file"))
            .detail("to choose the compiler itself, name it in [package.metadata.mcpp.tools] or with its variable (CXX, NVCC, ...)"));
    }
    let kind = match compiler_name(&program).as_str() {
        "sccache" => LauncherKind::Sccache,
        "ccache" => LauncherKind::Ccache,
        _ => LauncherKind::Other,
    };
    Ok(Some(Launcher { program, kind, origin: origin.to_string() }))
}

/// Whether any launcher can run one of the programs `programs` (by [`compiler_name`]: the C,
/// C++ and CUDA compilers): a rule whose tools are none of them (the shader compilers) takes
/// no `launcher` key of its own ([`crate::pipeline::validate`] refuses one).
pub fn takes_launcher(programs: &[&str]) -> bool {
    programs.iter().any(|p| C_FAMILY.contains(&compiler_name(Path::new(p)).as_str()))
}

/// The refusal of a rule's own `launcher` key (`[<table>.<rule>] launcher = "..."`, at
/// `file:line:col`) when the rule's compilers (`programs`) take no launcher
/// ([`takes_launcher`]): it would never be used. `none` is accepted.
pub fn refuse_rule_launcher(manifest: &Manifest, rule: &str, programs: &[&str]) -> Option<Error> {
    let value = manifest.mcpp.rule_launchers.get(rule)?;
    if value.trim() == "none" || takes_launcher(programs) {
        return None;
    }
    Some(
        Error::new(ErrorKind::Manifest, format!("the {rule} rule's compilers ({}) take no launcher, so `launcher = {:?}` would never be used", programs.join(", "), crate::text::echo(value)))
            .file(manifest.at_col(&format!("{rule}.launcher")))
            .key(format!("{MCPP_TABLE}.{rule}.launcher"))
            .help("remove the key (the package's `launcher` goes before the compilers that take one; shader compilers run without it)"),
    )
}

/// The one warning of a build whose launcher was left out of some compilers (`tools`: each
/// rule's name with the compiler the launcher cannot handle), or none.
pub fn left_out_warning(launcher: &Launcher, tools: &[(String, String)]) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let list: Vec<String> = tools.iter().map(|(rule, tool)| format!("{tool} ({rule})")).collect();
    Some(format!("the launcher `{}` does not handle {}: those compiles run without it", launcher.name(), list.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(path: &str) -> Tool {
        Tool { name: "t".into(), path: path.into(), version: String::new(), source: crate::tool::ToolSource::Path, env: Vec::new(), toolchain_package_root: None, launcher: None }
    }

    #[test]
    fn compiler_names_drop_versions_and_target_prefixes() {
        assert_eq!(compiler_name(Path::new("/usr/bin/clang++-19")), "clang++");
        assert_eq!(compiler_name(Path::new("/usr/bin/aarch64-linux-gnu-g++")), "g++");
        assert_eq!(compiler_name(Path::new("/opt/cuda/bin/nvcc")), "nvcc");
        assert_eq!(compiler_name(Path::new("/usr/bin/glslangValidator")), "glslangValidator");
        assert_eq!(compiler_name(Path::new("/x/sccache")), "sccache");
    }

    #[test]
    fn launchers_handle_c_family_compilers_only() {
        let l = |kind| Launcher { program: "/x/l".into(), kind, origin: String::new() };
        for kind in [LauncherKind::Sccache, LauncherKind::Ccache, LauncherKind::Other] {
            assert!(l(kind).handles(&tool("/opt/cuda/bin/nvcc")));
            assert!(l(kind).handles(&tool("/usr/bin/clang++-19")));
            assert!(!l(kind).handles(&tool("/usr/bin/glslangValidator")));
            assert!(!l(kind).handles(&tool("/usr/bin/glslc")));
            assert!(!l(kind).handles(&tool("/opt/slang/bin/slangc")));
        }
        assert!(l(LauncherKind::Sccache).handles(&tool("/opt/nvhpc/bin/nvc++")));
        assert!(!l(LauncherKind::Ccache).handles(&tool("/opt/nvhpc/bin/nvc++")));
    }

    #[test]
    fn env_wins_and_none_turns_it_off_per_rule() {
        let dir = std::env::temp_dir().join(format!("mcpp-launcher-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prog = dir.join("sccache");
        std::fs::write(&prog, "").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let text = "[package]\nname = \"p\"\n[package.metadata.mcpp]\nlauncher = \"sccache\"\n[package.metadata.mcpp.spirv]\nlauncher = \"none\"\n";
        let manifest = Manifest::parse(&dir.join("Cargo.toml"), text).unwrap();
        let mut env = Env::empty();
        env.set("PATH", dir.as_os_str());
        let l = Launchers::resolve(&manifest, &env).unwrap();
        assert_eq!(l.for_rule("cuda").map(|l| l.kind), Some(LauncherKind::Sccache));
        assert_eq!(l.for_rule("spirv"), None);
        env.set(LAUNCHER_ENV, "none");
        assert_eq!(Launchers::resolve(&manifest, &env).unwrap().for_rule("cuda"), None);
        env.set(LAUNCHER_ENV, "ccache");
        let e = Launchers::resolve(&manifest, &env).unwrap_err();
        assert!(e.to_string().contains("not on PATH"), "{e}");
        env.remove(LAUNCHER_ENV);
        env.set("PATH", "/nonexistent");
        let e = Launchers::resolve(&manifest, &env).unwrap_err().to_string();
        assert!(e.contains("Cargo.toml:4:"), "{e}");
        // docs.rs runs no compiler: the absent launcher is neither resolved nor refused.
        env.set("DOCS_RS", "1");
        assert_eq!(Launchers::resolve(&manifest, &env).unwrap().for_rule("cuda"), None);
        let bad = Manifest::parse(&dir.join("Cargo.toml"), "[package]\nname = \"p\"\n[package.metadata.mcpp.cuda]\nlauncher = 3\n").unwrap_err().to_string();
        assert!(bad.contains("Cargo.toml:4:") && bad.contains("cuda.launcher"), "{bad}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
