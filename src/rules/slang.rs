//! Slang (`.slang`) to SPIR-V with slangc, from the `slang` toolchain package or a declared program
//! (`[package.metadata.mcpp.tools] slangc`, `SLANGC`, `MCPP_SLANGC`, ...; the one resolver,
//! [`crate::tool::resolve`]). Like the SPIR-V rule, the producer writes a bare `.spv` and a
//! depfile, and the surface generator does the rest: `shaders/scale.slang` compiled for the
//! compute stage is the payload `scale_comp`, so it collides with a `scale.comp` beside it.
//!
//! The command (argv only): `slangc -target spirv -profile <spirv_X_Y> -entry <entry> -stage
//! <stage> -O0 -D.. -I.. <flags> -depfile <d> -o <spv> <src>`. The profile comes from the
//! `vulkan` entry of the accelerator set; `-O0` is the default because the toolchain package's slangc
//! (from the slangtorch wheel) has no `spirv-opt` and fails on any optimising build.

use super::options::{self, CommonOptions, RuleOptions};
use super::{Rule, RuleContext, RulePlan, ToolchainPackageReq};
use crate::config::accel::Backend;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::graph::{Action, External, Role};
use crate::config::manifest::Manifest;
use super::DeviceSource;
use crate::tool::{self, ToolSpec};
use serde::Deserialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The options table of the rule.
const TABLE: &str = "package.metadata.mcpp.slang";

/// The shader stage of every `.slang` source of the package (`-stage`), and the suffix its
/// payloads are named with (`<stem>_<suffix>`, the GLSL extension of the same stage, so a
/// `.slang` and a GLSL shader of one stage and stem in one directory collide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlangStage {
    /// `compute` (default): `<stem>_comp`.
    #[default]
    Compute,
    /// `vertex`: `<stem>_vert`.
    Vertex,
    /// `fragment`: `<stem>_frag`.
    Fragment,
    /// `geometry`: `<stem>_geom`.
    Geometry,
    /// `hull` (tessellation control): `<stem>_tesc`.
    Hull,
    /// `domain` (tessellation evaluation): `<stem>_tese`.
    Domain,
    /// `mesh`: `<stem>_mesh`.
    Mesh,
    /// `amplification` (task): `<stem>_task`.
    Amplification,
    /// `raygeneration`: `<stem>_rgen`.
    Raygeneration,
    /// `intersection`: `<stem>_rint`.
    Intersection,
    /// `anyhit`: `<stem>_rahit`.
    Anyhit,
    /// `closesthit`: `<stem>_rchit`.
    Closesthit,
    /// `miss`: `<stem>_rmiss`.
    Miss,
    /// `callable`: `<stem>_rcall`.
    Callable,
}

impl SlangStage {
    /// slangc's name of the stage (`-stage compute`).
    pub fn slang_name(self) -> &'static str {
        match self {
            SlangStage::Compute => "compute",
            SlangStage::Vertex => "vertex",
            SlangStage::Fragment => "fragment",
            SlangStage::Geometry => "geometry",
            SlangStage::Hull => "hull",
            SlangStage::Domain => "domain",
            SlangStage::Mesh => "mesh",
            SlangStage::Amplification => "amplification",
            SlangStage::Raygeneration => "raygeneration",
            SlangStage::Intersection => "intersection",
            SlangStage::Anyhit => "anyhit",
            SlangStage::Closesthit => "closesthit",
            SlangStage::Miss => "miss",
            SlangStage::Callable => "callable",
        }
    }
    /// The suffix of the payload name: the GLSL extension of the same stage (`comp`).
    pub fn suffix(self) -> &'static str {
        match self {
            SlangStage::Compute => "comp",
            SlangStage::Vertex => "vert",
            SlangStage::Fragment => "frag",
            SlangStage::Geometry => "geom",
            SlangStage::Hull => "tesc",
            SlangStage::Domain => "tese",
            SlangStage::Mesh => "mesh",
            SlangStage::Amplification => "task",
            SlangStage::Raygeneration => "rgen",
            SlangStage::Intersection => "rint",
            SlangStage::Anyhit => "rahit",
            SlangStage::Closesthit => "rchit",
            SlangStage::Miss => "rmiss",
            SlangStage::Callable => "rcall",
        }
    }
}

/// `[package.metadata.mcpp.slang]`; every key has a default. Read once per build by [`Rule::read_options`] ([`options::read_boxed`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", expecting = "a table of Slang rule keys ([package.metadata.mcpp.slang])")]
pub struct SlangOptions {
    /// The entry point function of every source (`-entry`, default `main`). slangc names the
    /// SPIR-V entry point `main` whatever the function is called.
    pub entry: Option<String>,
    /// The stage of every source (`-stage`, default `compute`).
    pub stage: Option<SlangStage>,
    /// Override of the SPIR-V profile (default: from the accelerator's Vulkan version).
    pub profile: Option<String>,
    /// `includes`: module search directories (`-I`), relative to the package root (or
    /// absolute), so that `import name;` finds `name.slang` there (the importer's own directory
    /// is searched first); `defines` (`-DNAME=value`); `optimize`: `true` is `-O1` (slangc's
    /// default level, which needs a slangc that can load `spirv-opt`), absent or `false` is
    /// `-O0`, the only level the toolchain package's slangc builds; `flags`: appended after the rule's
    /// own (before `-depfile`), passed unexamined.
    #[serde(skip)]
    pub common: CommonOptions,
}

impl RuleOptions for SlangOptions {
    const KEYS: &'static [crate::config::manifest::KeyDoc] = OPTION_KEYS;
    fn common(&self) -> &CommonOptions {
        &self.common
    }
    fn common_mut(&mut self) -> &mut CommonOptions {
        &mut self.common
    }
    /// An entry that is no identifier, an empty profile (or one that reads as a flag).
    fn problems(&self, manifest: &Manifest, _rule: &str) -> Vec<Error> {
        let mut problems = Vec::new();
        if let Some(entry) = self.entry.as_deref().filter(|e| !crate::rules::host::is_identifier(e)) {
            problems.push(
                Error::new(ErrorKind::Manifest, format!("`{}` is not a Slang function name", crate::text::echo(entry)))
                    .file(manifest.at_col("slang.entry"))
                    .key(format!("{TABLE}.entry"))
                    .help("name the entry point function ([A-Za-z_][A-Za-z0-9_]*), or leave `entry` out for `main`"),
            );
        }
        if self.profile.as_deref().is_some_and(|p| p.trim().is_empty() || p.starts_with('-')) {
            problems.push(
                Error::new(ErrorKind::Manifest, "`profile` names no Slang profile")
                    .file(manifest.at_col("slang.profile"))
                    .key(format!("{TABLE}.profile"))
                    .help("write a profile such as \"spirv_1_5\", or leave `profile` out to derive it from the `vulkan` entry of `accel`"),
            );
        }
        problems
    }
}

/// The keys of `[package.metadata.mcpp.slang]`, documented (the guide's generated manifest reference).
const OPTION_KEYS: &[crate::config::manifest::KeyDoc] = &[
    crate::config::manifest::KeyDoc { key: "entry", default: "`\"main\"`", meaning: "the entry point function of every `.slang` source (`-entry`); an identifier" },
    crate::config::manifest::KeyDoc {
        key: "stage",
        default: "`\"compute\"`",
        meaning: "the stage of every `.slang` source (`-stage`): `compute`, `vertex`, `fragment`, `geometry`, `hull`, `domain`, `mesh`, `amplification`, `raygeneration`, `intersection`, `anyhit`, `closesthit`, `miss`, `callable`; names the payload `<stem>_comp`, `_vert`, `_frag`, ...",
    },
    crate::config::manifest::KeyDoc { key: "includes", default: "`[]`", meaning: "module search directories (`-I`), relative to the package root, for `import`" },
    CommonOptions::DEFINES_DOC,
    crate::config::manifest::KeyDoc { key: "profile", default: "from `accel`", meaning: "e.g. `\"spirv_1_6\"`; default from the `vulkan` entry of `accel`: `spirv_1_3` for 1.1, `spirv_1_5` for 1.2, `spirv_1_6` for 1.3 and 1.4, `spirv_1_0` for 1.0 or a bare `vulkan` (another version is refused unless `profile` is set)" },
    crate::config::manifest::KeyDoc { key: "optimize", default: "`false`", meaning: "`-O0` unless `true` (`-O1`, which needs a slangc that can load `spirv-opt`; the toolchain package's cannot)" },
    crate::config::manifest::KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments, after the rule's own and before `-depfile -o <spv> <src>`, passed unexamined" },
];

/// slangc: `SLANGC`, `MCPP_SLANGC`, `MCPP_TOOL_SLANGC`, the `slang` toolchain package, then PATH.
pub const SLANGC: ToolSpec = ToolSpec {
    name: "slangc",
    programs: &["slangc"],
    env_vars: &["SLANGC", "MCPP_SLANGC"],
    version_args: &["-v"],
    install_hint: "cargo mcpp fetch (the slang toolchain package), or the slangc of a Slang release",
    toolchain_package: Some("slang"),
    toolkit: None,
};

/// The slang toolchain package's floor: the versions known to build with the flags above.
pub const SLANG_FLOOR: &str = ">=2026.14";

/// The SPIR-V profile (`-profile`) for the `vulkan` entry's version: the newest SPIR-V the
/// Vulkan version guarantees (1.1 -> `spirv_1_3`, 1.2 -> `spirv_1_5`, 1.3 and 1.4 ->
/// `spirv_1_6`), `spirv_1_0` for 1.0 or a bare `vulkan`; `None` for a version no Vulkan has.
pub fn profile_for(vulkan: Option<&str>) -> Option<&'static str> {
    match vulkan {
        None | Some("1.0") => Some("spirv_1_0"),
        Some("1.1") => Some("spirv_1_3"),
        Some("1.2") => Some("spirv_1_5"),
        Some("1.3") | Some("1.4") => Some("spirv_1_6"),
        Some(_) => None,
    }
}

/// The Slang rule.
pub struct SlangRule;

impl Rule for SlangRule {
    fn name(&self) -> &'static str {
        "slang"
    }
    fn backend(&self) -> Backend {
        Backend::Vulkan
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["slang"]
    }
    fn takes_target_env(&self) -> Option<&'static str> {
        Some("the profile (-profile)")
    }
    fn tools(&self) -> &'static [ToolSpec] {
        &[SLANGC]
    }
    fn option_keys(&self) -> &'static [crate::config::manifest::KeyDoc] {
        OPTION_KEYS
    }
    fn read_options(&self, manifest: &Manifest) -> (options::RuleOptionsBox, Vec<Error>) {
        options::read_boxed::<SlangOptions>(manifest, self.name())
    }
    fn toolchain_packages(&self, _options: &options::RuleOptionsBox) -> Result<Vec<ToolchainPackageReq>> {
        Ok(vec![ToolchainPackageReq { package: "slang", version: SLANG_FLOOR, tool: SLANGC, named_by_env: &[] }])
    }

    fn makes_payload(&self, _manifest: &crate::config::manifest::Manifest, _options: &options::RuleOptionsBox, _source: &DeviceSource) -> crate::error::Result<bool> {
        Ok(true)
    }
    /// A left-out source keeps its accessor `<stem>_<stage suffix>`, empty.
    fn placeholders(&self, _manifest: &Manifest, options: &options::RuleOptionsBox, sources: &[&DeviceSource]) -> Result<Vec<crate::surface::Payload>> {
        let stage = options.get::<SlangOptions>()?.stage.unwrap_or_default();
        Ok(sources.iter().map(|s| crate::surface::Payload::empty(s.rel.clone(), identifier(s, stage), crate::surface::PayloadKind::Words32)).collect())
    }
    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan> {
        let opts: &SlangOptions = ctx.options()?;
        let profile = match (&opts.profile, profile_for(ctx.accel.version.as_deref())) {
            (Some(p), _) => p.clone(),
            (None, Some(p)) => p.to_string(),
            (None, None) => {
                return Err(ctx.accel_refusal(
                    Error::new(
                        ErrorKind::Accel,
                        format!("the accelerator names {}, which is no Vulkan version the Slang rule knows a SPIR-V profile for", crate::text::echo(&ctx.accel.to_string())),
                    )
                    .detail("known: vulkan (spirv_1_0), vulkan1.0 (spirv_1_0), vulkan1.1 (spirv_1_3), vulkan1.2 (spirv_1_5), vulkan1.3 and vulkan1.4 (spirv_1_6)")
                    .help("write one of those in `accel`, or set [package.metadata.mcpp.slang] profile explicitly (e.g. \"spirv_1_6\")"),
                ))
            }
        };
        let (tool, warning) = tool::resolve(&SLANGC, ctx.tools, ctx.env, ctx.cache)?;
        let includes = opts.common.resolve_includes(ctx.manifest, self.name())?;
        let stage = opts.stage.unwrap_or_default();
        let mut plan = RulePlan::default();
        plan.warnings.extend(warning);
        let mut shadowed = std::collections::BTreeSet::new();
        for s in sources {
            let lookup = import_lookup(&s.path, &includes);
            shadowed.extend(lookup.shadowed);
            let mut inputs = vec![s.path.clone()];
            inputs.extend(lookup.modules);
            let out = ctx.variant.lane_dir("slang").join(format!("{}.spv", s.rel));
            let depfile = ctx.variant.lane_dir("slang").join(format!("{}.d", s.rel));
            // A `sources` entry's `target-env` is this source's profile.
            let args = argv(opts, s.target_env.as_deref().unwrap_or(&profile), &includes, &depfile, &out, &s.path);
            plan.actions.push(Action::external(External {
                id: format!("slang:{}", s.rel),
                description: format!("{} {}", tool.name, s.rel),
                role: Role::Source,
                tool: tool.clone(),
                args,
                cwd: ctx.manifest.dir().to_path_buf(),
                inputs,
                outputs: vec![out.clone()],
            })
                .with_depfile(depfile, includes.clone()));
            plan.payloads.push(crate::surface::Payload::words(s.rel.clone(), identifier(s, stage), out));
        }
        let shown = |p: &Path| p.strip_prefix(ctx.manifest.dir()).map(|r| r.display().to_string()).unwrap_or_else(|_| p.display().to_string());
        for (module, source) in shadowed {
            plan.warnings.push(format!(
                "the precompiled module `{}` shadows `{}`: slangc loads the module for the import, so an edit to the source reaches the SPIR-V only once the module is rebuilt (delete the module to compile the source, or rebuild it: slangc {} -o {})",
                crate::text::echo(&shown(&module)),
                crate::text::echo(&shown(&source)),
                crate::text::echo(&shown(&source)),
                crate::text::echo(&shown(&module)),
            ));
        }
        plan.tools.push(tool);
        Ok(plan)
    }
}

/// What slangc reads for the `import`s of a source, by its lookup rules (its depfile names
/// neither a precompiled module it loads nor, then, the source the module shadows).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ImportLookup {
    /// Every precompiled module (`<name>.slang-module`) an import of the source, or of a
    /// `.slang` it imports, can load: declared inputs of the compile, so replacing one reruns it.
    pub modules: Vec<PathBuf>,
    /// (module, source) pairs where a module wins over a source of the same import.
    pub shadowed: Vec<(PathBuf, PathBuf)>,
}

/// The lookup of slangc 2026 for `import a.b_c;` in `importer`: the names `a/b_c` and
/// `a/b-c`, each in the importer's directory, then in every `-I` directory in order; a
/// `<name>.slang-module` anywhere on that path is loaded before any `<name>.slang` (checked with
/// slangc: a module in an include directory wins over a source beside the importer). A string
/// import (`import "x/y.slang";`) is looked up relative to the same directories. Imported
/// sources are scanned the same way (transitively, each file once). Over-approximating only
/// ever costs a rebuild, never a stale byte.
pub(crate) fn import_lookup(source: &Path, includes: &[PathBuf]) -> ImportLookup {
    let mut out = ImportLookup::default();
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![source.to_path_buf()];
    while let Some(file) = todo.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let dirs: Vec<PathBuf> = file.parent().map(Path::to_path_buf).into_iter().chain(includes.iter().cloned()).collect();
        for name in import_names(&text) {
            let mut modules = Vec::new();
            let mut sources = Vec::new();
            for stem in name.stems() {
                for dir in &dirs {
                    let module = dir.join(format!("{stem}.slang-module"));
                    if module.is_file() && !modules.contains(&module) {
                        modules.push(module);
                    }
                    let source = dir.join(format!("{stem}.slang"));
                    if source.is_file() && !sources.contains(&source) {
                        sources.push(source);
                    }
                }
            }
            if let (Some(module), Some(source)) = (modules.first(), sources.first()) {
                out.shadowed.push((module.clone(), source.clone()));
            }
            if modules.is_empty() {
                todo.extend(sources);
            }
            for m in modules {
                if !out.modules.contains(&m) {
                    out.modules.push(m);
                }
            }
        }
    }
    out.modules.sort();
    out
}

/// One `import` of a Slang file: a module path (`a.b_c`) or a string (`"x/y.slang"`).
#[derive(Debug, PartialEq, Eq)]
enum ImportName {
    Module(String),
    File(String),
}

impl ImportName {
    /// The file names without extension slangc tries: `a/b_c` and `a/b-c` for a module path;
    /// the string without its `.slang` for a string import.
    fn stems(&self) -> Vec<String> {
        match self {
            ImportName::Module(m) => {
                let path = m.replace('.', "/");
                let dashed = path.replace('_', "-");
                if dashed == path {
                    vec![path]
                } else {
                    vec![path, dashed]
                }
            }
            ImportName::File(f) => vec![f.strip_suffix(".slang").unwrap_or(f).to_string()],
        }
    }
}

/// The `import` (and `__import`) declarations of Slang source text, comments left out.
fn import_names(text: &str) -> Vec<ImportName> {
    let code = strip_comments(text);
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = code[i..].find("import") {
        let start = i + at;
        let end = start + "import".len();
        i = end;
        let before_ok = start == 0 || !ident(bytes[start - 1]) || code[..start].ends_with("__");
        if !before_ok || bytes.get(end).is_some_and(|&b| ident(b)) {
            continue;
        }
        let rest = code[end..].trim_start();
        if let Some(quoted) = rest.strip_prefix('"') {
            if let Some(close) = quoted.find('"') {
                out.push(ImportName::File(quoted[..close].to_string()));
            }
            continue;
        }
        let name: String = rest.chars().take_while(|&c| c.is_ascii_alphanumeric() || c == '_' || c == '.').collect();
        let after = rest[name.len()..].trim_start();
        if !name.is_empty() && after.starts_with(';') {
            out.push(ImportName::Module(name));
        }
    }
    out
}

/// `text` with `//` and `/* */` comments replaced by a space (strings kept).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                out.extend(chars.next());
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The accessor's name of a source, built or left out: `<stem>_<stage suffix>` (`scale_comp`).
fn identifier(s: &DeviceSource, stage: SlangStage) -> String {
    let stem = s.path.file_stem().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{stem}_{}", stage.suffix())
}

/// The slangc arguments (after the program) for one source:
/// `-target spirv -profile <profile> -entry <entry> -stage <stage> -O0|-O1 -DNAME=value.. -I<dir>..
/// <flags> -depfile <d> -o <spv> <src>`.
pub fn argv(opts: &SlangOptions, profile: &str, includes: &[PathBuf], depfile: &Path, out: &Path, src: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    a.extend(["-target".into(), "spirv".into(), "-profile".into(), profile.into()]);
    a.extend(["-entry".into(), opts.entry.as_deref().unwrap_or("main").into()]);
    a.extend(["-stage".into(), opts.stage.unwrap_or_default().slang_name().into()]);
    a.push(if opts.common.optimize_or(false) { "-O1" } else { "-O0" }.into());
    a.extend(opts.common.define_args());
    for inc in includes {
        let mut s = OsString::from("-I");
        s.push(inc);
        a.push(s);
    }
    a.extend(opts.common.flags.iter().map(OsString::from));
    a.extend(["-depfile".into(), depfile.into(), "-o".into(), out.into(), src.into()]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_is_the_newest_spirv_the_vulkan_version_guarantees() {
        assert_eq!(profile_for(None), Some("spirv_1_0"));
        assert_eq!(profile_for(Some("1.0")), Some("spirv_1_0"));
        assert_eq!(profile_for(Some("1.1")), Some("spirv_1_3"));
        assert_eq!(profile_for(Some("1.2")), Some("spirv_1_5"));
        assert_eq!(profile_for(Some("1.3")), Some("spirv_1_6"));
        assert_eq!(profile_for(Some("1.4")), Some("spirv_1_6"));
        assert_eq!(profile_for(Some("2.7")), None);
    }

    #[test]
    fn the_command_is_argv_with_o0_unless_optimize_is_true() {
        let common = CommonOptions { defines: [("N".to_string(), "a b".to_string())].into(), flags: vec!["-g".into()], ..Default::default() };
        let mut opts = SlangOptions { common, ..Default::default() };
        let a = argv(&opts, "spirv_1_5", &[PathBuf::from("/m o")], Path::new("/w/x.d"), Path::new("/w/x.spv"), Path::new("/p/x.slang"));
        let words: Vec<&str> = a.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(
            words,
            ["-target", "spirv", "-profile", "spirv_1_5", "-entry", "main", "-stage", "compute", "-O0", "-DN=a b", "-I/m o", "-g", "-depfile", "/w/x.d", "-o", "/w/x.spv", "/p/x.slang"]
        );
        opts.common.optimize = Some(true);
        opts.entry = Some("scale".into());
        opts.stage = Some(SlangStage::Fragment);
        let a = argv(&opts, "spirv_1_6", &[], Path::new("d"), Path::new("o"), Path::new("s"));
        let words: Vec<&str> = a.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(words[..9], ["-target", "spirv", "-profile", "spirv_1_6", "-entry", "scale", "-stage", "fragment", "-O1"]);
        assert_eq!(SlangStage::Fragment.suffix(), "frag");
    }

    #[test]
    fn imports_are_read_past_comments_and_strings_in_both_forms() {
        let text = "// import commented;\n/* import block; */ import a.b_c;\n__import legacy;\nimport \"x/y.slang\";\nfloat important = 1; // not an import\nimport  spaced ;\n";
        let names = import_names(text);
        assert_eq!(
            names,
            [
                ImportName::Module("a.b_c".into()),
                ImportName::Module("legacy".into()),
                ImportName::File("x/y.slang".into()),
                ImportName::Module("spaced".into())
            ]
        );
        assert_eq!(names[0].stems(), ["a/b_c", "a/b-c"]);
        assert_eq!(names[2].stems(), ["x/y"]);
    }

    #[test]
    fn a_module_anywhere_on_the_import_path_is_tracked_and_shadows_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let (src, inc) = (dir.path().join("src"), dir.path().join("inc"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::create_dir_all(&inc).unwrap();
        std::fs::write(src.join("main.slang"), "import util;\nimport other_mod;\n").unwrap();
        std::fs::write(src.join("util.slang"), "import deep;\n").unwrap();
        std::fs::write(inc.join("deep.slang-module"), "").unwrap();
        let got = import_lookup(&src.join("main.slang"), std::slice::from_ref(&inc));
        assert_eq!(got.modules, [inc.join("deep.slang-module")], "a module imported by an imported source");
        assert!(got.shadowed.is_empty());
        std::fs::write(inc.join("util.slang-module"), "").unwrap();
        std::fs::write(inc.join("other-mod.slang-module"), "").unwrap();
        let got = import_lookup(&src.join("main.slang"), std::slice::from_ref(&inc));
        assert_eq!(got.modules, [inc.join("other-mod.slang-module"), inc.join("util.slang-module")], "the module wins, the source is not scanned");
        assert_eq!(got.shadowed, [(inc.join("util.slang-module"), src.join("util.slang"))]);
    }
}
