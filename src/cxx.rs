//! The crate's own C++ host sources (`[package.metadata.mcpp] cxx-sources`), the island's host
//! fallback, and the generated module interfaces they import, compiled with the `cc` crate's
//! compiler choice through the action graph (fingerprints, depfiles, the jobserver) and
//! archived into one static library linked into the crate.
//!
//! C++20 modules: each unit is read for `export module X;`, `module X;` and `[export] import X;`
//! lines; interfaces are compiled before their importers (graph dependencies), and an
//! importer's key includes the bytes of every interface it reads.
//! - clang: `--precompile` the interface to `bmi/X.pcm`, compile the `.pcm` to an object,
//!   importers get `-fmodule-file=X=bmi/X.pcm` (toolchains README section 9).
//! - gcc: `-fmodules-ts` with a module mapper file naming `bmi/X.gcm` for every module, so no
//!   `gcm.cache/` appears in the package.

use crate::error::{Error, ErrorKind, Result};
use crate::graph::{Action, Role};
use crate::host::{Family, HostToolchain};
use crate::rules::LinkDirective;
use crate::tool::Tool;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// One C++ unit to compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Absolute path.
    pub path: PathBuf,
    /// Package-relative (or generated-file) name used in ids and messages.
    pub rel: String,
    /// A header the compiler reads before the unit's first line (`-include <header>`, `/FI<header>`
    /// for MSVC): the island's generated boundary for the island's own C++ files, so a fallback
    /// needs no `#include` of it. Not given to a module unit (its first line must be `module`).
    pub force_include: Option<PathBuf>,
}

/// What a unit's text says about modules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleLines {
    /// `export module X;`: the unit is the interface of X.
    pub provides: Option<String>,
    /// `module X;` and `import X;` / `export import X;`, in order.
    pub requires: Vec<String>,
    /// The first header unit imported (`import <vector>;`), which the lane refuses.
    pub header_unit: Option<String>,
    /// Whether the unit is a module unit (`module;`, `module X;` or `export module X;`).
    pub module_unit: bool,
}

/// Read the module lines of a C++ unit (line-based: a declaration at the start of a line).
pub fn module_lines(text: &str) -> ModuleLines {
    let mut m = ModuleLines::default();
    for line in text.lines() {
        let l = line.trim();
        let name_of = |rest: &str| -> Option<String> {
            let n = rest.trim().strip_suffix(';')?.trim();
            (!n.is_empty() && !n.starts_with('<') && !n.starts_with('"')).then(|| n.to_string())
        };
        if l == "module;" || l.starts_with("module ") || l.starts_with("export module ") {
            m.module_unit = true;
        }
        if let Some(rest) = l.strip_prefix("export module ") {
            m.provides = name_of(rest);
        } else if let Some(rest) = l.strip_prefix("export import ").or_else(|| l.strip_prefix("import ")) {
            let r = rest.trim();
            if (r.starts_with('<') || r.starts_with('"')) && m.header_unit.is_none() {
                m.header_unit = Some(r.trim_end_matches(';').trim().to_string());
            }
            if let Some(n) = name_of(rest) {
                if !m.requires.contains(&n) {
                    m.requires.push(n);
                }
            }
        } else if let Some(rest) = l.strip_prefix("module ") {
            if let Some(n) = name_of(rest) {
                if !n.starts_with(':') && !m.requires.contains(&n) {
                    m.requires.push(n);
                }
            }
        }
    }
    m
}

/// The options of one host C++ compile.
#[derive(Debug, Clone)]
pub struct CxxPlanInput<'a> {
    /// The host toolchain (cc's choice).
    pub host: &'a HostToolchain,
    /// The compiler as a resolved tool (identity for fingerprints).
    pub compiler: &'a Tool,
    /// The units, in the order given.
    pub units: &'a [Unit],
    /// `-std=` value.
    pub std: &'a str,
    /// Include directories (absolute).
    pub includes: &'a [PathBuf],
    /// Definitions.
    pub defines: &'a BTreeMap<String, String>,
    /// Extra flags, appended last.
    pub flags: &'a [String],
    /// Where objects and module files go.
    pub dir: &'a Path,
    /// The working directory (package root).
    pub cwd: &'a Path,
    /// The archive's library name, e.g. `mcpp_cxx_app`.
    pub lib_name: &'a str,
}

/// The actions (in dependency order, `deps` indices local to the returned list) and the link
/// directives.
///
/// # Errors
/// [`ErrorKind::Sources`] for a module provided twice, an import no unit provides (that is not
/// a standard header unit), or an import cycle; [`ErrorKind::ToolNotFound`] for MSVC with modules.
pub fn plan(input: &CxxPlanInput) -> Result<(Vec<Action>, Vec<LinkDirective>)> {
    let mut lines = Vec::new();
    for u in input.units {
        let text = std::fs::read_to_string(&u.path).map_err(|e| Error::io("cannot read the C++ source", &u.path, e))?;
        lines.push(module_lines(&text));
    }
    let mut provider: BTreeMap<String, usize> = BTreeMap::new();
    for (i, m) in lines.iter().enumerate() {
        if let Some(name) = &m.provides {
            if let Some(&j) = provider.get(name) {
                return Err(Error::new(ErrorKind::Sources, format!("two units are the interface of the module `{name}`"))
                    .file(&input.units[i].path)
                    .detail(input.units[j].rel.clone())
                    .detail(input.units[i].rel.clone())
                    .help("one module has one primary interface unit; rename one of the modules"));
            }
            provider.insert(name.clone(), i);
        }
    }
    let modules = !provider.is_empty() || lines.iter().any(|m| !m.requires.is_empty());
    if modules && input.host.family == Family::Msvc {
        return Err(Error::new(ErrorKind::ToolNotFound, "C++20 modules in the host sources need gcc or clang; the cc crate chose MSVC")
            .help("set CXX to clang++ or g++, or use headers instead of modules"));
    }
    for (i, m) in lines.iter().enumerate() {
        let unit = &input.units[i];
        let unsupported = |what: &str, help: &str| {
            Err(Error::new(ErrorKind::Sources, format!("{}: {what} is not supported by the host C++ lane", unit.rel))
                .file(&unit.path)
                .key("package.metadata.mcpp.cxx-sources")
                .help(help.to_string()))
        };
        if let Some(h) = &m.header_unit {
            return unsupported(&format!("the header unit `import {h};`"), "include the header instead (`#include <...>`): header units need per-compiler scanning this lane does not do");
        }
        if m.provides.as_deref().is_some_and(|p| p.contains(':')) || m.requires.iter().any(|r| r.contains(':')) {
            return unsupported("a module partition (`module a:part` / `import :part`)", "split the partition into a module of its own (`export module a.part;`) and import that");
        }
        for r in &m.requires {
            if r == "std" || r == "std.compat" {
                return unsupported(&format!("`import {r};`"), "include the standard headers (`#include <vector>`): the standard library module needs a prebuilt std BMI this lane does not build");
            }
            if m.provides.as_ref() == Some(r) {
                return Err(Error::new(ErrorKind::Sources, format!("{} imports the module `{r}` it is the interface of", unit.rel))
                    .file(&unit.path)
                    .help(format!("remove `import {r};` from its own interface")));
            }
        }
    }
    for (i, m) in lines.iter().enumerate() {
        for r in &m.requires {
            if !provider.contains_key(r) {
                return Err(Error::new(ErrorKind::Sources, format!("{} imports the module `{r}`, which no C++ source provides", input.units[i].rel))
                    .file(&input.units[i].path)
                    .key("package.metadata.mcpp.cxx-sources")
                    .help(format!("add the unit with `export module {r};` to cxx-sources (the island's module is generated when [package.metadata.mcpp.island] is declared)")));
            }
        }
    }
    // Topological order of units: interfaces before importers.
    let mut order: Vec<usize> = Vec::new();
    let mut state = vec![0u8; lines.len()];
    fn visit(i: usize, lines: &[ModuleLines], provider: &BTreeMap<String, usize>, state: &mut [u8], order: &mut Vec<usize>, units: &[Unit], stack: &mut Vec<usize>) -> Result<()> {
        match state[i] {
            2 => return Ok(()),
            1 => {
                let from = stack.iter().position(|&s| s == i).unwrap_or(0);
                let chain: Vec<&str> = stack[from..].iter().chain(std::iter::once(&i)).map(|&u| units[u].rel.as_str()).collect();
                return Err(Error::new(ErrorKind::Sources, format!("the module imports of {} form a cycle", units[i].rel))
                    .file(&units[i].path)
                    .detail(chain.join(" imports "))
                    .help("C++ modules cannot import each other in a cycle; move the shared part into a third module"));
            }
            _ => {}
        }
        state[i] = 1;
        stack.push(i);
        for r in &lines[i].requires {
            let p = provider[r];
            if p != i {
                visit(p, lines, provider, state, order, units, stack)?;
            }
        }
        stack.pop();
        state[i] = 2;
        order.push(i);
        Ok(())
    }
    for i in 0..lines.len() {
        visit(i, &lines, &provider, &mut state, &mut order, input.units, &mut Vec::new())?;
    }
    let bmi_ext = if input.host.family == Family::Clang { "pcm" } else { "gcm" };
    let bmi = |name: &str| input.dir.join("bmi").join(format!("{name}.{bmi_ext}"));
    let mapper = input.dir.join("module.map");
    if modules && input.host.family == Family::Gnu {
        let text: String = provider.keys().map(|n| format!("{n} {}\n", bmi(n).display())).collect();
        crate::fingerprint::write_if_changed(&mapper, text.as_bytes())?;
        std::fs::create_dir_all(input.dir.join("bmi")).map_err(|e| Error::io("cannot create", input.dir, e))?;
    }
    // Transitive module requirements of each unit.
    let mut closure: Vec<Vec<String>> = vec![Vec::new(); lines.len()];
    for &i in &order {
        let mut all: Vec<String> = Vec::new();
        for r in &lines[i].requires {
            let p = provider[r];
            for t in closure[p].iter().chain(std::iter::once(r)) {
                if !all.contains(t) {
                    all.push(t.clone());
                }
            }
        }
        closure[i] = all;
    }
    // Under a wrapper (`CXX="ccache g++"`) the program run is the wrapper ([`crate::host::lane_tool`]),
    // and the compiler is its first argument.
    let mut common: Vec<OsString> = input.host.wrapper.iter().map(|_| input.host.cxx.clone().into_os_string()).collect();
    common.extend(input.host.cxx_args.iter().map(OsString::from));
    common.push(format!("-std={}", input.std).into());
    if modules && input.host.family == Family::Gnu {
        common.push("-fmodules-ts".into());
        let mut m = OsString::from("-fmodule-mapper=");
        m.push(&mapper);
        common.push(m);
    }
    // A forced include goes here: after the language options, before -I/-D and the flags.
    let forced_at = common.len();
    common.extend(crate::host::include_define_args(input.includes, input.defines));
    common.extend(input.flags.iter().map(OsString::from));
    let mut actions: Vec<Action> = Vec::new();
    // The index of the action whose output is each module's BMI.
    let mut bmi_action: BTreeMap<String, usize> = BTreeMap::new();
    let mut objects = Vec::new();
    for &i in &order {
        let u = &input.units[i];
        let obj = input.dir.join("obj").join(crate::rules::cuda::object_name(&u.rel, "o"));
        let depfile = obj.with_extension("d");
        let mut args = common.clone();
        let mut inputs = vec![u.path.clone()];
        if let Some(header) = u.force_include.as_ref().filter(|_| !lines[i].module_unit) {
            let forced = crate::island::emit::force_include_args(header, input.host.family == Family::Msvc);
            args.splice(forced_at..forced_at, forced);
            inputs.push(header.clone());
        }
        let mut deps = Vec::new();
        for r in &closure[i] {
            inputs.push(bmi(r));
            deps.push(bmi_action[r]);
            if input.host.family == Family::Clang {
                let mut f = OsString::from(format!("-fmodule-file={r}="));
                f.push(bmi(r));
                args.push(f);
            }
        }
        if modules && input.host.family == Family::Gnu {
            inputs.push(mapper.clone());
        }
        let provides = lines[i].provides.clone();
        match (&provides, input.host.family) {
            (Some(name), Family::Clang) => {
                let pcm = bmi(name);
                let mut pre = args.clone();
                pre.extend(["-MD".into(), "-MF".into(), depfile.clone().into(), "-x".into(), "c++-module".into(), "--precompile".into()]);
                pre.extend([u.path.clone().into(), "-o".into(), pcm.clone().into()]);
                actions.push(Action {
                    id: format!("cxx:{}:bmi", u.rel),
                    description: format!("{} --precompile {}", input.compiler.name, u.rel),
                    role: Role::Source,
                    tool: input.compiler.clone(),
                    args: pre,
                    cwd: input.cwd.to_path_buf(),
                    inputs,
                    outputs: vec![pcm.clone()],
                    depfile: Some(depfile),
                    include_dirs: input.includes.to_vec(),
                    deps: deps.clone(),
                    builtin: None,
                });
                let pre_index = actions.len() - 1;
                bmi_action.insert(name.clone(), pre_index);
                let mut c = common.clone();
                for r in &closure[i] {
                    let mut f = OsString::from(format!("-fmodule-file={r}="));
                    f.push(bmi(r));
                    c.push(f);
                }
                c.extend(["-c".into(), pcm.clone().into(), "-o".into(), obj.clone().into()]);
                let mut d = deps;
                d.push(pre_index);
                actions.push(Action {
                    id: format!("cxx:{}", u.rel),
                    description: format!("{} {}", input.compiler.name, u.rel),
                    role: Role::Object,
                    tool: input.compiler.clone(),
                    args: c,
                    cwd: input.cwd.to_path_buf(),
                    inputs: vec![pcm],
                    outputs: vec![obj.clone()],
                    depfile: None,
                    include_dirs: Vec::new(),
                    deps: d,
                    builtin: None,
                });
            }
            _ => {
                args.extend(["-MD".into(), "-MF".into(), depfile.clone().into()]);
                if provides.is_some() {
                    args.extend(["-x".into(), "c++".into()]);
                }
                args.extend(["-c".into(), u.path.clone().into(), "-o".into(), obj.clone().into()]);
                let mut outputs = vec![obj.clone()];
                if let Some(name) = &provides {
                    outputs.push(bmi(name));
                }
                actions.push(Action {
                    id: format!("cxx:{}", u.rel),
                    description: format!("{} {}", input.compiler.name, u.rel),
                    role: Role::Object,
                    tool: input.compiler.clone(),
                    args,
                    cwd: input.cwd.to_path_buf(),
                    inputs,
                    outputs,
                    depfile: Some(depfile),
                    include_dirs: input.includes.to_vec(),
                    deps,
                    builtin: None,
                });
                if let Some(name) = provides {
                    bmi_action.insert(name, actions.len() - 1);
                }
            }
        }
        objects.push(obj);
    }
    let all: Vec<usize> = (0..actions.len()).collect();
    let (archive, mut link) = crate::rules::cuda::archive(input.host.archive_format, input.lib_name, input.dir, &objects, all, input.cwd);
    actions.push(archive);
    if let Some(std) = &input.host.cpp_stdlib {
        link.push(LinkDirective::Lib(format!("dylib={std}")));
    }
    Ok((actions, link))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_lines_are_read() {
        let m = module_lines("module;\n#include \"k.h\"\nexport module app.seam;\nimport app.kernels;\nexport import other;\nimport <vector>;\n");
        assert_eq!(m.provides.as_deref(), Some("app.seam"));
        assert_eq!(m.requires, ["app.kernels", "other"]);
        assert!(m.module_unit);
        let m = module_lines("module app.seam;\n");
        assert_eq!((m.provides, m.requires, m.module_unit), (None, vec!["app.seam".to_string()], true));
        let m = module_lines("#include \"k.h\"\nimport app.kernels;\nint f() { return 0; }\n");
        assert!(!m.module_unit, "an importer is not a module unit");
    }
}
