//! Device-source collection and classification: expand the
//! `sources` globs, apply the constrained-glob include / exclude / refuse semantics against
//! the build's accelerator set, and give every file to exactly one rule by its extension
//! ([`collect`]; the classified [`DeviceSource`] is the rules' type, so this module asks the
//! registry and the rules never import it). Also the expander of the other package-relative
//! lists, `cxx-sources` and the island's ([`expand_globs`]).

pub mod embed;
pub mod walk;

use crate::config::accel::AccelSet;
use crate::error::{Error, ErrorKind, Result};
use crate::config::manifest::{Manifest, SourceEntry};
use crate::rules::{DeviceSource, Rule};
use std::path::{Path, PathBuf};

/// The device extensions cargo-mcpp knows (the device extensions of the
/// engines cargo-mcpp follows, plus `.slang`). A listed file with any other extension has no role and is refused.
pub const DEVICE_EXTENSIONS: &[&str] = &[
    "cu", "hip", "sycl", "asc", "cce", "comp", "vert", "frag", "geom", "tesc", "tese", "mesh", "task", "rgen", "rint", "rahit",
    "rchit", "rmiss", "rcall", "glsl", "hlsl", "cl", "metal", "slang",
];

/// The outcome of collection.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    /// Every matched file, in glob order then path order, without duplicates.
    pub sources: Vec<DeviceSource>,
    /// Directories to watch for added files (the fixed prefix of each glob), existing only.
    pub watch_dirs: Vec<PathBuf>,
    /// Warnings (e.g. a glob at the package root, which cargo cannot watch for new files).
    pub warnings: Vec<String>,
}

/// The extension of a file name (after the last `.` of the name), lowercase as written.
pub fn extension(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    Some(ext.to_string())
}

/// Expand and classify the manifest's `sources` for a build with accelerator set `accel`.
///
/// # Errors
/// [`ErrorKind::Sources`] for: a glob matching no file; a constrained glob whose backend the
/// build names but whose architectures it does not cover; a file whose extension has no role;
/// a device source no rule claims. [`ErrorKind::Manifest`] for a malformed constraint.
pub fn collect(manifest: &Manifest, accel: &AccelSet, rules: &[Box<dyn Rule>], env: &crate::config::env::Env) -> Result<Collected> {
    collect_with(manifest, accel, rules, env, false)
}

/// [`collect`]; `deferred`: the build script may register rules beyond `rules` (the command
/// line's check before cargo runs it), so a file no rule of `rules` claims is left out here and
/// left to the build script, which claims or refuses it.
///
/// # Errors
/// As [`collect`].
pub fn collect_with(manifest: &Manifest, accel: &AccelSet, rules: &[Box<dyn Rule>], env: &crate::config::env::Env, deferred: bool) -> Result<Collected> {
    let root = manifest.dir();
    let mut out = Collected::default();
    let mut seen = std::collections::HashSet::new();
    // `"!pattern"` entries: their files are left out of every entry (resolved paths).
    let mut left_out = std::collections::HashSet::new();
    for (index, entry) in manifest.mcpp.sources.iter().enumerate().filter(|(_, e)| e.is_exclusion()) {
        left_out.extend(excluded(manifest, &format!("sources[{index}]"), entry.glob())?);
    }
    for (index, entry) in manifest.mcpp.sources.iter().enumerate() {
        if entry.is_exclusion() {
            continue;
        }
        let listing = Listing {
            manifest,
            index,
            key: format!("package.metadata.mcpp.sources[{index}]"),
            subject: format!("sources entry '{}'", crate::text::echo(entry.glob())),
            at: manifest.at_col(&format!("sources[{index}]")),
        };
        let constraint = constraint(&listing, entry, accel, env)?;
        let mut own_left_out = std::collections::HashSet::new();
        if let SourceEntry::Constrained(c) = entry {
            for (i, pattern) in c.exclude.iter().enumerate() {
                own_left_out.extend(excluded(manifest, &format!("sources[{index}].exclude[{i}]"), pattern)?);
            }
            if let Some(w) = unapplied_target(&listing, c, constraint.as_ref(), accel) {
                out.warnings.push(w);
            }
        }
        let files = crate::sources::walk::expand(root, entry.glob(), crate::sources::walk::Asker { manifest: Path::new(&listing.at), key: &listing.key, subject: &listing.subject })?;
        let matched = files.len();
        let mut kept = 0;
        for m in files {
            if left_out.contains(&m.real) || own_left_out.contains(&m.real) {
                continue;
            }
            kept += 1;
            // One file once across entries (by its resolved path), in a hash set: linear.
            if seen.insert(m.real.clone()) {
                let ext = extension(&m.path).unwrap_or_default();
                if deferred && !rules.iter().any(|r| r.claims(&ext) || r.constrained_extensions().contains(&ext.as_str())) {
                    continue;
                }
                out.sources.push(classify(&listing, m, constraint.as_ref(), output(entry), target_env(entry), accel, rules)?);
            }
        }
        if matched == 0 {
            return Err(Error::new(ErrorKind::Sources, format!("{} matches no file", listing.subject))
                .file(&listing.at)
                .key(listing.key)
                .help(format!("check the pattern against the files under {}; globs are relative to the package root", root.display())));
        }
        if kept == 0 {
            return Err(Error::new(ErrorKind::Sources, format!("every file {} matches is excluded", listing.subject))
                .file(&listing.at)
                .key(listing.key)
                .help("narrow the exclusions (`exclude`, `\"!pattern\"` entries), or remove the entry"));
        }
        watch(&mut out, root, entry.glob(), &listing.subject);
    }
    refuse_also_host(manifest, &out.sources, rules)?;
    Ok(out)
}

/// A file is device source or host C++, never both: one listed by `sources` (a `.cpp` under a
/// glob constrained to sycl) and by `cxx-sources` would be compiled twice, by two compilers,
/// and linked twice. A `cxx-sources` glob that cannot be
/// expanded is left to the host lane, which refuses it with its own message.
///
/// # Errors
/// [`ErrorKind::Sources`] naming the file, the `sources` entry and `cxx-sources` (both
/// positions in the manifest).
fn refuse_also_host(manifest: &Manifest, sources: &[DeviceSource], rules: &[Box<dyn Rule>]) -> Result<()> {
    const CXX_KEY: &str = "package.metadata.mcpp.cxx-sources";
    if manifest.mcpp.cxx_sources.is_empty() || sources.is_empty() {
        return Ok(());
    }
    let Ok((host, _)) = expand_globs(manifest, CXX_KEY, &manifest.mcpp.cxx_sources) else { return Ok(()) };
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let host: std::collections::HashSet<PathBuf> = host.iter().map(|(p, _)| real(p)).collect();
    // Only a file a rule takes through a constraint can be host C++ too (`.cpp` for SYCL); a
    // `.cu` or `.sycl` in cxx-sources is the host lane's to refuse.
    let constrained = |s: &&DeviceSource| !rules[s.rule].claims(&s.ext);
    let Some(both) = sources.iter().filter(constrained).find(|s| host.contains(&real(&s.path))) else { return Ok(()) };
    let glob = manifest.mcpp.sources.get(both.entry).map(|e| crate::text::echo(e.glob())).unwrap_or_default();
    Err(Error::new(ErrorKind::Sources, format!("'{}' is listed both in package.metadata.mcpp.sources[{}] ('{glob}') and in {CXX_KEY}", both.rel, both.entry))
        .file(manifest.at_col(&format!("sources[{}]", both.entry)))
        .key(format!("package.metadata.mcpp.sources[{}]", both.entry))
        .detail(format!("{CXX_KEY} at {}", manifest.at_col("cxx-sources")))
        .detail("A file is device source (compiled by its rule, under `sources`) or host C++ (compiled by the host lane, under `cxx-sources`), not both: it would be compiled twice and its symbols linked twice.")
        .help(format!("keep it in one of them: narrow the cxx-sources globs so they miss {} (or the sources entry so it does), and put host code in a file of its own", both.rel)))
}

/// One entry of `sources`, as messages name it.
struct Listing<'a> {
    /// The manifest.
    manifest: &'a Manifest,
    /// The entry's index in `sources`.
    index: usize,
    /// `package.metadata.mcpp.sources[i]`.
    key: String,
    /// `sources entry '<glob>'`.
    subject: String,
    /// `path:line:col` of the entry in the manifest (the path alone when unknown).
    at: String,
}

/// The accelerator constraint of a constrained glob, for this build.
struct Constraint {
    /// The constraint as written.
    text: String,
    /// The backends it names.
    backends: Vec<crate::config::accel::Backend>,
    /// Whether this build compiles its files (it names their backends and covers the constraint).
    included: bool,
}

/// The constraint of `entry` (`None` for a plain glob): included when the build covers it, left
/// out when the build names none of its backends.
///
/// # Errors
/// [`ErrorKind::Accel`] for a malformed constraint; [`ErrorKind::Manifest`] for an empty one;
/// [`ErrorKind::Sources`] when the build names its backends but does not cover it.
fn constraint(listing: &Listing, entry: &SourceEntry, accel: &AccelSet, env: &crate::config::env::Env) -> Result<Option<Constraint>> {
    let SourceEntry::Constrained(c) = entry else { return Ok(None) };
    let Some(text) = &c.accel else { return Ok(None) };
    let (key, subject) = (&listing.key, &listing.subject);
    let at = listing.manifest.at_col(&format!("sources[{}].accel", listing.index));
    let constraint = AccelSet::parse(text).map_err(|e| {
        Error::new(ErrorKind::Accel, format!("{subject} has a malformed `accel` constraint"))
            .file(&at)
            .key(format!("{key}.accel"))
            .detail(e.to_string())
    })?;
    if constraint.is_empty() {
        return Err(Error::new(ErrorKind::Manifest, format!("{subject} is constrained to an empty accelerator"))
            .file(&at)
            .key(format!("{key}.accel"))
            .help("name the backend it needs, e.g. accel = \"vulkan1.2\", or make it a plain glob string"));
    }
    let backends = constraint.entries.iter().map(|e| e.backend).collect();
    let included = if !accel.names_backends_of(&constraint) {
        false
    } else if accel.covers(&constraint) {
        true
    } else {
        return Err(Error::new(ErrorKind::Sources, format!("{subject} is constrained to accel \"{}\", which this build does not cover", crate::text::echo(text)))
            .file(&at)
            .key(format!("{key}.accel"))
            .detail(format!("this build targets: {accel}"))
            .help(format!(
                "build with an accelerator set covering it ({}), or with {} to leave every constrained glob out (the CPU-only variant)",
                crate::output::report::accel_way(env, text),
                crate::output::report::no_accel_way(env)
            )));
    };
    Ok(Some(Constraint { text: text.clone(), backends, included }))
}

/// The resolved paths of the files an exclusion glob (`"!pattern"`, or `exclude[i]` of an
/// entry; `key` its place under `package.metadata.mcpp`) matches; none is no error, as in
/// Cargo's `exclude`. A pattern ending in `/**` leaves out everything below the directory (as
/// in `.gitignore`). Containment and the other checks of a glob apply.
///
/// # Errors
/// As [`crate::sources::walk::expand`].
fn excluded(manifest: &Manifest, key: &str, pattern: &str) -> Result<Vec<PathBuf>> {
    let at = manifest.at_col(key);
    let full = format!("package.metadata.mcpp.{key}");
    let subject = format!("exclusion '{}'", crate::text::echo(pattern));
    let pattern = if pattern.ends_with("/**") { format!("{pattern}/*") } else { pattern.to_string() };
    let files = crate::sources::walk::expand(manifest.dir(), &pattern, crate::sources::walk::Asker { manifest: Path::new(&at), key: &full, subject: &subject })?;
    Ok(files.into_iter().map(|m| m.real).collect())
}

/// A warning when an entry's constraint names another Vulkan version than the build compiles
/// its files for and the entry sets no `target-env`: the constraint selects the files, it does
/// not set their target (`{ glob, accel = "vulkan1.0" }` inside a `vulkan1.2` build compiles at
/// 1.2).
fn unapplied_target(listing: &Listing, c: &crate::config::manifest::ConstrainedGlob, constraint: Option<&Constraint>, accel: &AccelSet) -> Option<String> {
    let constraint = constraint.filter(|k| k.included)?;
    if c.target_env.is_some() {
        return None;
    }
    let parsed = AccelSet::parse(&constraint.text).ok()?;
    let wanted = parsed.entry(crate::config::accel::Backend::Vulkan)?.version.clone()?;
    let built = accel.entry(crate::config::accel::Backend::Vulkan)?.version.clone().unwrap_or_else(|| "1.0".into());
    if wanted == built {
        return None;
    }
    Some(format!(
        "{} is constrained to vulkan{wanted}, and this build compiles its files for vulkan{built}: a constraint selects files, it does not set their target; write target-env = \"vulkan{wanted}\" in the entry (for Slang files a profile, e.g. \"spirv_1_0\") to compile them for it ({})",
        listing.subject, listing.at
    ))
}

/// The `target-env` of a `sources` entry, if it has one.
fn target_env(entry: &SourceEntry) -> Option<&str> {
    match entry {
        SourceEntry::Constrained(c) => c.target_env.as_deref(),
        SourceEntry::Glob(_) => None,
    }
}

/// The `output` of a `sources` entry (`{ glob = "...", output = "ptx" }`), if it has one.
fn output(entry: &SourceEntry) -> Option<&str> {
    match entry {
        SourceEntry::Constrained(c) => c.output.as_deref(),
        SourceEntry::Glob(_) => None,
    }
}

/// Give a matched file to the rule that claims its extension; it is selected when its
/// constraint (if any) is included and the build names its rule's backend. The entry's
/// `output` must be one the rule offers ([`Rule::outputs`]).
///
/// # Errors
/// [`ErrorKind::Sources`] for a device extension no rule claims, an extension with no role, or
/// a constraint naming another backend than the file's rule compiles for;
/// [`ErrorKind::Manifest`] for an `output` the file's rule does not offer.
fn classify(listing: &Listing, m: crate::sources::walk::Matched, constraint: Option<&Constraint>, output: Option<&str>, target_env: Option<&str>, accel: &AccelSet, rules: &[Box<dyn Rule>]) -> Result<DeviceSource> {
    let crate::sources::walk::Matched { path, rel, .. } = m;
    let ext = extension(&path).unwrap_or_default();
    // An extension a rule claims only under a constraint naming its backend (`.cpp` for SYCL).
    let constrained = |c: &Constraint| rules.iter().position(|r| r.constrained_extensions().contains(&ext.as_str()) && c.backends.contains(&r.backend()));
    let Some(rule) = rules.iter().position(|r| r.claims(&ext)).or_else(|| constraint.and_then(constrained)) else {
        if let Some(r) = rules.iter().find(|r| r.constrained_extensions().contains(&ext.as_str())) {
            let backend = r.backend();
            return Err(Error::new(ErrorKind::Sources, format!("'{rel}' is listed in sources, and a `.{ext}` file is {} source only through a glob constrained to {backend}", r.name()))
                .file(&path)
                .key(listing.key.clone())
                .detail(format!("A `.{ext}` file is host C++ unless its `sources` entry says it is {} code.", r.name()))
                .help(format!("list it as {{ glob = \"{}\", accel = \"{backend}\" }} (or a `.{}` name); as host C++, list it in `cxx-sources` or compile it in build.rs (the cc crate)", crate::text::echo(&rel), r.extensions().first().copied().unwrap_or(""))));
        }
        let err = if DEVICE_EXTENSIONS.contains(&ext.as_str()) {
            Error::new(ErrorKind::Sources, format!("device source that no rule compiles: {rel}"))
                .file(&path)
                .detail(format!("A `.{ext}` file is device code, and no rule of this cargo-mcpp claims `.{ext}`,"))
                .detail("so it would be listed and never compiled.")
                .help(format!("drop it from `sources`, or use a cargo-mcpp with a rule for `.{ext}` (rules: {})", rule_list(rules)))
        } else {
            let shown = if ext.is_empty() { "no extension".to_string() } else { format!("the extension '.{ext}'") };
            Error::new(ErrorKind::Sources, format!("'{rel}' is listed in sources, and cargo-mcpp has no role for {shown}"))
                .file(&path)
                .detail("No rule would compile it, so listing it would build nothing; this is refused rather than ignored.")
                .help(format!("the extensions this cargo-mcpp compiles: {}", rule_list(rules)))
                .help("host C/C++ files are compiled by build.rs (the cc crate), not listed in [package.metadata.mcpp] sources")
                .help("a rule crate may compile it: register its rule in build.rs (`mcpp_build::Build::rule`)")
        };
        return Err(err.key(listing.key.clone()));
    };
    let backend = rules[rule].backend();
    if let Some(c) = constraint.filter(|c| !c.backends.contains(&backend)) {
        return Err(Error::new(ErrorKind::Sources, format!("{} constrains {rel} to accel \"{}\", but a `.{ext}` file is compiled only for {backend}", listing.subject, c.text))
            .file(listing.manifest.at_col(&format!("sources[{}].accel", listing.index)))
            .key(format!("{}.accel", listing.key))
            .detail("One extension has one meaning: the constraint would leave it out of every build that compiles it.")
            .help(format!("constrain it to the {backend} backend (e.g. accel = \"{backend}\"), or list it as a plain glob")));
    }
    if let Some(out) = output.filter(|o| !rules[rule].outputs().contains(o)) {
        let offered = rules[rule].outputs();
        let way = if offered.is_empty() {
            format!("the {} rule makes one kind of output: drop `output` from this entry", rules[rule].name())
        } else {
            format!("the {} rule offers output = {}", rules[rule].name(), offered.iter().map(|o| format!("\"{o}\"")).collect::<Vec<_>>().join(", "))
        };
        return Err(Error::new(ErrorKind::Manifest, format!("{} asks for output \"{}\" of {rel}, which the {} rule does not make", listing.subject, crate::text::echo(out), rules[rule].name()))
            .file(listing.manifest.at_col(&format!("sources[{}].output", listing.index)))
            .key(format!("{}.output", listing.key))
            .help(way));
    }
    if let Some(t) = target_env {
        let at = listing.manifest.at_col(&format!("sources[{}].target-env", listing.index));
        let key = format!("{}.target-env", listing.key);
        if rules[rule].takes_target_env().is_none() {
            return Err(Error::new(ErrorKind::Manifest, format!("{} sets target-env \"{}\" for {rel}, and the {} rule has one target per build", listing.subject, crate::text::echo(t), rules[rule].name()))
                .file(at)
                .key(key)
                .detail("The setting would not be applied, so it is refused rather than ignored.")
                .help("drop `target-env` from this entry (it applies to GLSL shaders and Slang sources), or list these files in an entry of their own"));
        }
        if t.trim().is_empty() || t.starts_with('-') || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::new(ErrorKind::Manifest, format!("{} sets target-env \"{}\", which names no target environment", listing.subject, crate::text::echo(t)))
                .file(at)
                .key(key)
                .help("write one such as \"vulkan1.0\" or \"spirv1.4\" (GLSL), or a Slang profile such as \"spirv_1_3\""));
        }
    }
    let selected = constraint.is_none_or(|c| c.included) && accel.entry(backend).is_some();
    Ok(DeviceSource { path, rel, ext, rule, entry: listing.index, selected, output: output.map(str::to_string), target_env: target_env.map(str::to_string) })
}

/// Watch the fixed directory prefix of `pattern` for added files (an existing directory, once);
/// a glob at the package root is warned instead: the root holds `target/`, which changes on
/// every build and would rerun the build script forever.
fn watch(out: &mut Collected, root: &Path, pattern: &str, subject: &str) {
    let fixed: Vec<&str> = pattern.split('/').take_while(|c| !c.contains(['*', '?', '[', '{'])).collect();
    let fixed = if fixed.len() == pattern.split('/').count() { &fixed[..fixed.len().saturating_sub(1)] } else { &fixed[..] };
    let dir = root.join(fixed.join("/"));
    if fixed.is_empty() {
        out.warnings.push(format!(
            "{subject} matches files at the package root; cargo cannot watch the root for new files (it holds target/), so cargo (and `cargo mcpp build`, which runs the same build script) notices a new one only after Cargo.toml changes; keep device sources in a directory"
        ));
    } else if dir.is_dir() && !out.watch_dirs.contains(&dir) {
        out.watch_dirs.push(dir);
    }
}

fn rule_list(rules: &[Box<dyn Rule>]) -> String {
    rules.iter().map(|r| format!("{} ({})", r.name(), r.extensions().iter().map(|e| format!(".{e}")).collect::<Vec<_>>().join(" "))).collect::<Vec<_>>().join("; ")
}

/// Files (absolute, package-relative name) and directories to watch, from [`expand_globs`].
pub type Expanded = (Vec<(PathBuf, String)>, Vec<PathBuf>);

/// Expand package-relative globs (`key` names the manifest list for messages), sorted, without
/// duplicates; each file with its package-relative name.
///
/// # Errors
/// [`ErrorKind::Manifest`] for a glob that is invalid, leaves the package, or matches nothing.
pub fn expand_globs(manifest: &Manifest, key: &str, globs: &[String]) -> Result<Expanded> {
    let root = manifest.dir();
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let mut watch = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, pattern) in globs.iter().enumerate() {
        let k = format!("{key}[{i}]");
        let at = manifest.at_col(k.strip_prefix(&format!("{}.", crate::config::manifest::MCPP_TABLE)).unwrap_or(&k));
        let subject = format!("`{}`", crate::text::echo(pattern));
        let matched = crate::sources::walk::expand(root, pattern, crate::sources::walk::Asker { manifest: Path::new(&at), key: &k, subject: &subject })?;
        if matched.is_empty() {
            return Err(Error::new(ErrorKind::Manifest, format!("{subject} matches no file"))
                .file(&at)
                .key(k)
                .help(format!("check the pattern against the files under {}; globs are relative to the package root", root.display())));
        }
        for m in matched {
            // One file once (by its resolved path), in a hash set: linear.
            if seen.insert(m.real) {
                files.push((m.path, m.rel));
            }
        }
        let fixed: Vec<&str> = pattern.split('/').take_while(|c| !c.contains(['*', '?', '[', '{'])).collect();
        if fixed.len() < pattern.split('/').count() && !fixed.is_empty() {
            let dir = root.join(fixed.join("/"));
            if dir.is_dir() && !watch.contains(&dir) {
                watch.push(dir);
            }
        }
    }
    Ok((files, watch))
}
