//! WGSL (`.wgsl`) to SPIR-V with naga, in process: the shader translator wgpu uses, a Rust
//! library, so no compiler has to be installed. Each source is parsed and validated; a problem
//! is refused at its `file:line:col`. What is embedded is, per source, either the SPIR-V words
//! (default, `output = "spirv"`: the same `&[u32]` surface as GLSL and Slang) or the validated
//! WGSL text (`output = "wgsl"`, for wgpu's `ShaderSource::Wgsl`). The SPIR-V version comes
//! from the `vulkan` entry of the accelerator set, as the Slang rule derives its profile.
//!
//! The work is a graph step ([`crate::engine::graph::Step`]): fingerprinted by naga's version and the
//! options, rerun when the source changes, skipped on a no-op, its output checked.
//!
//! naga is compiled in with the `wgsl` feature (the installed `cargo mcpp` has it; a build
//! script's in-process engine has it with `mcpp-build`'s `wgsl` feature). Without it the rule
//! still knows its sources, keys and accessors, and refuses to plan a `.wgsl` source, naming
//! the feature.

use super::options::RuleOptionsBox;
use super::{DeviceSource, Rule, RuleContext, RulePlan};
use crate::config::accel::Backend;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::graph::{Action, Expect, InProcess, Role, Step};
use crate::config::manifest::{KeyDoc, Manifest};
use crate::tool::ToolSpec;
use serde::Deserialize;
#[cfg(feature = "wgsl")]
use std::path::{Path, PathBuf};

/// The naga release compiled in (Cargo.lock's; a unit test holds them equal): part of the
/// step's identity, so a new naga translates every shader again.
#[cfg(feature = "wgsl")]
pub const NAGA_VERSION: &str = "30.0.2";

/// What a `.wgsl` source becomes. Read from a string, so a value of another type is refused
/// naming its type, as a `sources` entry's `output` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(try_from = "String")]
pub enum WgslOutput {
    /// SPIR-V words (`<stem>_wgsl()`, `&[u32]`), the default.
    #[default]
    Spirv,
    /// The WGSL source itself, after validation (`<stem>_wgsl()`, text).
    Wgsl,
}

impl TryFrom<String> for WgslOutput {
    type Error = String;
    fn try_from(value: String) -> std::result::Result<WgslOutput, String> {
        match value.as_str() {
            "spirv" => Ok(WgslOutput::Spirv),
            "wgsl" => Ok(WgslOutput::Wgsl),
            other => Err(format!("unknown variant `{other}`, expected `spirv` or `wgsl`")),
        }
    }
}

impl WgslOutput {
    /// The values of `output` ([`Rule::outputs`]).
    const NAMES: &'static [&'static str] = &["spirv", "wgsl"];

    /// The output of `source`: its `sources` entry's `output`, else the table's, else SPIR-V.
    fn of(source: &DeviceSource, opts: &WgslOptions) -> WgslOutput {
        match source.output.as_deref() {
            Some("wgsl") => WgslOutput::Wgsl,
            Some("spirv") => WgslOutput::Spirv,
            _ => opts.output.unwrap_or_default(),
        }
    }
}

/// `[package.metadata.mcpp.wgsl]`; every key has a default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", expecting = "a table of WGSL rule keys ([package.metadata.mcpp.wgsl])")]
pub struct WgslOptions {
    /// `"spirv"` (default) or `"wgsl"`.
    pub output: Option<WgslOutput>,
}

/// The keys of [`WgslOptions`], documented ([`Rule::option_keys`]).
const OPTION_KEYS: &[KeyDoc] = &[KeyDoc {
    key: "output",
    default: "`\"spirv\"`",
    meaning: "what each `.wgsl` becomes (a `sources` entry `{ glob = \"...\", output = \"wgsl\" }` overrides it for its files): `\"spirv\"` (naga's SPIR-V, `<stem>_wgsl()` as `&[u32]` words; the SPIR-V version from the `vulkan` entry of `accel`: 1.0 for 1.0 or a bare `vulkan`, 1.3 for 1.1, 1.5 for 1.2, 1.6 for 1.3 and 1.4) or `\"wgsl\"` (the source text after naga validated it, `<stem>_wgsl()` as text, for wgpu). Either way the source is parsed and validated in process; a problem is refused at its `file:line:col`",
}];

/// A SPIR-V module's first word, little-endian: what a SPIR-V output must start with.
const SPIRV_MAGIC: Expect = Expect { magic: &[0x03, 0x02, 0x23, 0x07], what: "a SPIR-V module" };

/// The WGSL rule.
pub struct WgslRule;

impl Rule for WgslRule {
    fn name(&self) -> &'static str {
        "wgsl"
    }
    fn backend(&self) -> Backend {
        Backend::Vulkan
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["wgsl"]
    }
    /// None: naga runs in process.
    fn tools(&self) -> &'static [ToolSpec] {
        &[]
    }
    fn read_options(&self, manifest: &Manifest) -> (RuleOptionsBox, Vec<Error>) {
        crate::rules::options::read_plain::<WgslOptions>(manifest, self.name())
    }
    fn option_keys(&self) -> &'static [KeyDoc] {
        OPTION_KEYS
    }
    fn outputs(&self) -> &'static [&'static str] {
        WgslOutput::NAMES
    }
    fn makes_payload(&self, _manifest: &Manifest, _options: &RuleOptionsBox, _source: &DeviceSource) -> Result<bool> {
        Ok(true)
    }
    /// A left-out source keeps its accessor `<stem>_wgsl`, empty, of its output's kind.
    fn placeholders(&self, _manifest: &Manifest, options: &RuleOptionsBox, sources: &[&DeviceSource]) -> Result<Vec<crate::surface::Payload>> {
        let opts: &WgslOptions = options.get()?;
        Ok(sources
            .iter()
            .map(|s| {
                let kind = match WgslOutput::of(s, opts) {
                    WgslOutput::Spirv => crate::surface::PayloadKind::Words32,
                    WgslOutput::Wgsl => crate::surface::PayloadKind::Text,
                };
                crate::surface::Payload::empty(s.rel.clone(), identifier(s), kind)
            })
            .collect())
    }
    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan> {
        let opts: &WgslOptions = ctx.options()?;
        let version = spirv_version(ctx.accel.version.as_deref()).ok_or_else(|| {
            ctx.accel_refusal(
                Error::new(ErrorKind::Accel, format!("the accelerator names {}, which is no Vulkan version the WGSL rule knows a SPIR-V version for", crate::text::echo(&ctx.accel.to_string())))
                    .detail("known: vulkan and vulkan1.0 (SPIR-V 1.0), vulkan1.1 (1.3), vulkan1.2 (1.5), vulkan1.3 and vulkan1.4 (1.6)")
                    .help("write one of those in `accel`"),
            )
        })?;
        #[cfg(not(feature = "wgsl"))]
        if !sources.is_empty() {
            return Err(without_naga(ctx.manifest, sources));
        }
        let mut plan = RulePlan::default();
        for s in sources {
            let output = WgslOutput::of(s, opts);
            let (out, payload, expect) = match output {
                WgslOutput::Spirv => {
                    let out = ctx.variant.lane_dir("wgsl").join(format!("{}.spv", s.rel));
                    (out.clone(), crate::surface::Payload::words(s.rel.clone(), identifier(s), out), Some(SPIRV_MAGIC))
                }
                WgslOutput::Wgsl => {
                    let out = ctx.variant.lane_dir("wgsl").join(&s.rel);
                    (out.clone(), crate::surface::Payload::text(s.rel.clone(), identifier(s), out), None)
                }
            };
            plan.actions.push(Action::in_process(InProcess {
                id: format!("wgsl:{}", s.rel),
                description: format!("naga {}", s.rel),
                role: Role::Source,
                step: translator(ctx.manifest, s, output, version)?,
                cwd: ctx.manifest.dir().to_path_buf(),
                inputs: vec![s.path.clone()],
                outputs: vec![out],
                expect,
            }));
            plan.payloads.push(payload);
        }
        Ok(plan)
    }
}

/// The SPIR-V version (major, minor) for the `vulkan` entry's version: the Slang rule's
/// profile for it ([`super::slang::profile_for`], the one table of what each Vulkan version
/// guarantees), read as numbers. `None` for a version no Vulkan has.
pub fn spirv_version(vulkan: Option<&str>) -> Option<(u8, u8)> {
    let profile = super::slang::profile_for(vulkan)?;
    let (major, minor) = profile.strip_prefix("spirv_")?.split_once('_')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The graph step that translates `source` with naga.
#[cfg(feature = "wgsl")]
fn translator(_manifest: &Manifest, source: &DeviceSource, output: WgslOutput, spirv: (u8, u8)) -> Result<std::sync::Arc<dyn Step>> {
    Ok(std::sync::Arc::new(Naga { rel: source.rel.clone(), output, spirv }))
}

/// Without naga compiled in, nothing translates WGSL: [`without_naga`] refuses first.
#[cfg(not(feature = "wgsl"))]
fn translator(manifest: &Manifest, source: &DeviceSource, _output: WgslOutput, _spirv: (u8, u8)) -> Result<std::sync::Arc<dyn Step>> {
    Err(without_naga(manifest, &[source]))
}

/// The refusal of WGSL `sources` by an engine compiled without naga (no `wgsl` feature): every
/// source named, at the manifest's `sources` key, with the feature that brings naga.
#[cfg(not(feature = "wgsl"))]
fn without_naga(manifest: &Manifest, sources: &[&DeviceSource]) -> Error {
    let names: Vec<&str> = sources.iter().map(|s| s.rel.as_str()).collect();
    let e = Error::new(ErrorKind::Manifest, format!("{} {} WGSL, and this engine was compiled without the WGSL translator (naga)", names.join(", "), if names.len() == 1 { "is" } else { "are" }));
    e.file(manifest.at_col("sources"))
        .key("package.metadata.mcpp.sources")
        .detail("A build script's in-process engine compiles naga only when asked: WGSL sources need the `wgsl` feature.")
        .help("in [build-dependencies]: mcpp-build = { ..., features = [\"wgsl\"] } (`wgsl` turns on `engine`)")
        .help("or leave the engine out of the build script (mcpp-build with no features) and build with `cargo mcpp build`, which translates WGSL")
}

/// One source's translation: parse, validate, then write SPIR-V or the validated text.
#[cfg(feature = "wgsl")]
#[derive(Debug, Clone)]
struct Naga {
    /// The source as messages show it (package-relative).
    rel: String,
    output: WgslOutput,
    /// SPIR-V version (major, minor).
    spirv: (u8, u8),
}

#[cfg(feature = "wgsl")]
impl Step for Naga {
    fn name(&self) -> &str {
        "naga"
    }
    fn version(&self) -> String {
        format!("naga {NAGA_VERSION} in cargo-mcpp {}", env!("CARGO_PKG_VERSION"))
    }
    fn options(&self) -> String {
        match self.output {
            WgslOutput::Spirv => format!("output=spirv spirv={}.{}", self.spirv.0, self.spirv.1),
            WgslOutput::Wgsl => "output=wgsl".into(),
        }
    }
    fn run(&self, inputs: &[PathBuf], outputs: &[PathBuf]) -> Result<Vec<String>> {
        let ([path], [out]) = (inputs, outputs) else {
            return Err(Error::new(ErrorKind::ToolFailed, format!("naga {}: a WGSL step has one input and one output", self.rel)));
        };
        let source = std::fs::read_to_string(path).map_err(|e| {
            Error::io("cannot read the WGSL source", path, e).help("save the shader as UTF-8 text: WGSL source is UTF-8")
        })?;
        // A UTF-8 byte order mark (some Windows editors write one) is no part of the shader.
        let source = source.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(source);
        let spirv = translate(&self.rel, path, &source, self.output, self.spirv)?;
        let bytes: Vec<u8> = match spirv {
            Some(words) => words.iter().flat_map(|w| w.to_le_bytes()).collect(),
            None => source.into_bytes(),
        };
        crate::engine::fingerprint::write_if_changed(out, &bytes)?;
        Ok(Vec::new())
    }
}

/// Parse and validate `source` (the text of `path`, shown as `rel`); for [`WgslOutput::Spirv`]
/// translate it to SPIR-V `version` (every entry point in one module, `override`s at their
/// defaults), for [`WgslOutput::Wgsl`] return `None` (the text is the output).
///
/// # Errors
/// [`ErrorKind::ToolFailed`] naming `path:line:col` of the problem, with naga's rendering of
/// it: a parse error, a validation error, a module without an entry point, an `override` with
/// no default, or what the SPIR-V writer cannot express.
#[cfg(feature = "wgsl")]
fn translate(rel: &str, path: &Path, source: &str, output: WgslOutput, version: (u8, u8)) -> Result<Option<Vec<u32>>> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| refusal(rel, path, "is not valid WGSL", e.message(), e.location(source), &e.emit_to_string_with_path(source, rel), source))?;
    let mut validator = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all());
    // The validator's spans go from the enclosing item to the expression at fault: the place
    // shown is the last, most specific one.
    let info = validator.validate(&module).map_err(|e| refusal(rel, path, "does not validate", &innermost(e.as_inner()), e.spans().last().map(|(span, _)| span.location(source)), &e.emit_to_string_with_path(source, rel), source))?;
    if module.entry_points.is_empty() {
        return Err(Error::new(ErrorKind::ToolFailed, format!("{rel} has no entry point"))
            .file(path)
            .detail("A shader module needs a function marked @compute, @vertex or @fragment; WGSL has no includes, so a file of helpers alone compiles to nothing.")
            .help("mark the entry point (`@compute @workgroup_size(64) fn main(...)`), or leave the file out of `sources`"));
    }
    if output == WgslOutput::Wgsl {
        return Ok(None);
    }
    let constants = naga::back::PipelineConstants::default();
    let (module, info) = naga::back::pipeline_constants::process_overrides(&module, &info, None, &constants)
        .map_err(|e| {
            Error::new(ErrorKind::ToolFailed, format!("{rel}: its `override` constants cannot take their defaults: {e}"))
                .file(path)
                .help("give every `override` a default value (`override n: u32 = 64;`): SPIR-V is written with the defaults")
        })?;
    let options = naga::back::spv::Options {
        lang_version: version,
        // naga's defaults without `DEBUG` (which its own debug builds turn on): the bytes do not
        // depend on how cargo-mcpp was compiled. WebGPU's coordinate space, as wgpu gives it.
        flags: naga::back::spv::WriterFlags::ADJUST_COORDINATE_SPACE | naga::back::spv::WriterFlags::LABEL_VARYINGS | naga::back::spv::WriterFlags::CLAMP_FRAG_DEPTH,
        ..Default::default()
    };
    naga::back::spv::write_vec(&module, &info, &options, None).map(Some).map_err(|e| {
        Error::new(ErrorKind::ToolFailed, format!("naga cannot write {rel} as SPIR-V {}.{}: {e}", version.0, version.1))
            .file(path)
            .help("a newer Vulkan version in `accel` allows a newer SPIR-V; or use `output = \"wgsl\"` and let wgpu translate it")
    })
}

/// The most specific message of an error: the last of its `source` chain (naga's validator
/// says "Entry point main at Compute is invalid", then why, then why again).
#[cfg(feature = "wgsl")]
fn innermost(e: &dyn std::error::Error) -> String {
    let mut e = e;
    while let Some(next) = e.source() {
        e = next;
    }
    e.to_string()
}

/// The refusal of `rel`: `<rel> <what>: <message>` at `path:line:col` (the column in
/// characters from 1, as editors, rustc and naga's rendering count; naga's own counts bytes),
/// naga's rendering of the problem (the line, a caret, its notes) as details.
#[cfg(feature = "wgsl")]
fn refusal(rel: &str, path: &Path, what: &str, message: &str, at: Option<naga::SourceLocation>, rendered: &str, source: &str) -> Error {
    let file = match at {
        Some(l) => {
            let before = source.get(..l.offset as usize).unwrap_or_default();
            let column = before.rsplit('\n').next().unwrap_or_default().chars().count() + 1;
            format!("{}:{}:{column}", path.display(), l.line_number)
        }
        None => path.display().to_string(),
    };
    let mut e = Error::new(ErrorKind::ToolFailed, format!("{rel} {what}: {message}")).file(file);
    // naga's rendering opens with `error: <message>`: said once, in the headline.
    let repeated = format!("error: {message}");
    for line in rendered.lines().filter(|l| !l.trim().is_empty() && l.trim_end() != repeated) {
        e = e.detail(line.trim_end().to_string());
    }
    match at {
        Some(_) => e.help("fix the shader at the place shown (naga, the WGSL translator wgpu uses, parsed and validated it)"),
        None => e.help("fix the shader (naga, the WGSL translator wgpu uses, parsed and validated it; it gave no place)"),
    }
}

/// The accessor's name of a source, built or left out: `<stem>_wgsl`.
fn identifier(s: &DeviceSource) -> String {
    let stem = s.path.file_stem().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{stem}_wgsl")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOUBLE: &str = "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n\n@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    if (id.x < arrayLength(&data)) { data[id.x] = 2.0 * data[id.x]; }\n}\n";

    #[test]
    fn the_spirv_version_is_the_slang_profiles() {
        assert_eq!(spirv_version(None), Some((1, 0)));
        assert_eq!(spirv_version(Some("1.1")), Some((1, 3)));
        assert_eq!(spirv_version(Some("1.2")), Some((1, 5)));
        assert_eq!(spirv_version(Some("1.4")), Some((1, 6)));
        assert_eq!(spirv_version(Some("9.9")), None);
    }

    #[cfg(feature = "wgsl")]
    #[test]
    fn naga_version_is_the_locked_one() {
        let lock = include_str!("../../Cargo.lock");
        let at = lock.find("name = \"naga\"\nversion = \"").expect("naga in Cargo.lock") + "name = \"naga\"\nversion = \"".len();
        assert_eq!(&lock[at..at + lock[at..].find('"').unwrap()], NAGA_VERSION);
    }

    #[cfg(feature = "wgsl")]
    #[test]
    fn a_shader_becomes_spirv_of_the_asked_version_or_stays_text() {
        let words = translate("d.wgsl", Path::new("/p/d.wgsl"), DOUBLE, WgslOutput::Spirv, (1, 5)).unwrap().unwrap();
        assert_eq!(words[0], 0x0723_0203, "the SPIR-V magic");
        assert_eq!(words[1], 0x0001_0500, "SPIR-V 1.5");
        assert_eq!(translate("d.wgsl", Path::new("/p/d.wgsl"), DOUBLE, WgslOutput::Wgsl, (1, 5)).unwrap(), None);
    }

    #[cfg(feature = "wgsl")]
    #[test]
    fn a_problem_is_refused_at_its_line_and_column() {
        // A parse error: a name with no definition, at its own column.
        let bad = DOUBLE.replace("2.0 * data[id.x]", "2.0 * datum[id.x]");
        let e = translate("shaders/d.wgsl", Path::new("/p/shaders/d.wgsl"), &bad, WgslOutput::Wgsl, (1, 0)).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("shaders/d.wgsl is not valid WGSL: no definition in scope for identifier: `datum`"), "{text}");
        let col = bad.lines().nth(4).unwrap().find("datum").unwrap() + 1;
        assert_eq!(e.file.as_deref(), Some(Path::new(&format!("/p/shaders/d.wgsl:5:{col}"))), "{text}");
        // A validation error: the innermost reason is the headline, naga's rendering follows.
        let bad = DOUBLE.replace("2.0 * data[id.x]", "2.0 * data[id.x] + 1u");
        let e = translate("shaders/d.wgsl", Path::new("/p/shaders/d.wgsl"), &bad, WgslOutput::Spirv, (1, 0)).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("shaders/d.wgsl does not validate: Operation Add can't work with"), "{text}");
        assert!(text.contains("--> /p/shaders/d.wgsl:5:51") && text.contains("Entry point main at Compute is invalid"), "{text}");
        // The place is the expression at fault, not the function around it.
        let col = bad.lines().nth(4).unwrap().find("2.0 * data").unwrap() + 1;
        assert_eq!(e.file.as_deref(), Some(Path::new(&format!("/p/shaders/d.wgsl:5:{col}"))), "{text}");
        let none = translate("h.wgsl", Path::new("/p/h.wgsl"), "fn helper(x: f32) -> f32 { return x; }\n", WgslOutput::Spirv, (1, 0)).unwrap_err();
        assert!(none.to_string().starts_with("h.wgsl has no entry point"), "{none}");
    }

    #[cfg(feature = "wgsl")]
    #[test]
    fn columns_count_characters_as_editors_do() {
        // `é` is two bytes: naga's byte column would be one more than an editor's.
        let bad = DOUBLE.replace("2.0 * data[id.x]", "/* é */ datum[id.x]");
        let e = translate("d.wgsl", Path::new("/p/d.wgsl"), &bad, WgslOutput::Wgsl, (1, 0)).unwrap_err();
        let line = bad.lines().nth(4).unwrap();
        let col = line[..line.find("datum").unwrap()].chars().count() + 1;
        assert_eq!(e.file.as_deref(), Some(Path::new(&format!("/p/d.wgsl:5:{col}"))), "{e}");
    }

    #[cfg(feature = "wgsl")]
    #[test]
    fn a_byte_order_mark_is_no_part_of_the_shader() {
        let dir = tempfile::tempdir().unwrap();
        let (src, spv, text) = (dir.path().join("d.wgsl"), dir.path().join("d.spv"), dir.path().join("d.txt"));
        std::fs::write(&src, format!("\u{feff}{DOUBLE}")).unwrap();
        Naga { rel: "d.wgsl".into(), output: WgslOutput::Spirv, spirv: (1, 0) }.run(std::slice::from_ref(&src), std::slice::from_ref(&spv)).unwrap();
        assert_eq!(std::fs::read(&spv).unwrap()[..4], [0x03, 0x02, 0x23, 0x07]);
        Naga { rel: "d.wgsl".into(), output: WgslOutput::Wgsl, spirv: (1, 0) }.run(&[src], std::slice::from_ref(&text)).unwrap();
        assert_eq!(std::fs::read_to_string(&text).unwrap(), DOUBLE);
    }

    #[test]
    fn an_output_of_another_type_is_refused_naming_its_type() {
        let e = toml::from_str::<WgslOptions>("output = 5").unwrap_err().to_string();
        assert!(e.contains("invalid type: integer `5`, expected a string"), "{e}");
        let e = toml::from_str::<WgslOptions>("output = \"glsl\"").unwrap_err().to_string();
        assert!(e.contains("unknown variant `glsl`, expected `spirv` or `wgsl`"), "{e}");
        assert_eq!(toml::from_str::<WgslOptions>("output = \"wgsl\"").unwrap().output, Some(WgslOutput::Wgsl));
    }
}
