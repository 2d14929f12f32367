//! Where each payload's bytes live, per rule and per constrained glob: `storage` in
//! `[package.metadata.mcpp]` (the package's, header by default), in a rule's table
//! (`[package.metadata.mcpp.spirv] storage = "sidecar"`, taken out of the table by
//! [`crate::config::manifest::Manifest::parse`] as `launcher` is), in a `sources` entry
//! (`{ glob, storage }`) and in `[package.metadata.mcpp.embed]` and its entries; the most
//! specific wins: entry, then rule (or `embed`), then package. A `storage` where no payload is
//! made (a rule that only makes linked objects, such as CUDA with `output = "object"`, HIP,
//! SYCL, Ascend C; a `sources` entry whose files make none) is refused at its `file:line:col`.
//! Storage is part of the surface's files (accessors, data headers, assembly, sidecars), whose
//! bytes the host lane's fingerprints and cargo's include tracking follow: a switch rewrites
//! what it must, and the device compiles are untouched.

use crate::error::{Error, ErrorKind, Result};
use crate::config::manifest::{Manifest, SourceEntry, MCPP_TABLE};
use crate::rules::options::RuleOptionsBox;
use crate::rules::Rule;
use crate::sources::Collected;
use crate::surface::storage::{self, parse, Storage};
use std::collections::BTreeMap;

/// The storage of every payload whose storage is not the package's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoragePlan {
    /// The package's storage (`[package.metadata.mcpp] storage`).
    pub package: Storage,
    /// By package-relative device source: its `sources` entry's or its rule's storage.
    pub by_source: BTreeMap<String, Storage>,
}

/// Whether `rule` hands the surface a payload for any of `sources` ([`Rule::makes_payload`]).
fn makes_payloads(rule: &dyn Rule, manifest: &Manifest, options: &RuleOptionsBox, sources: &[&crate::rules::DeviceSource]) -> Result<bool> {
    for s in sources {
        if rule.makes_payload(manifest, options, s)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The storage of the package, of each rule's and each `sources` entry's payloads; `options`
/// are the rules' ([`Rule::read_options`]), in registry order.
///
/// # Errors
/// A `storage` value that is no storage form; a rule's `storage` when the rule makes no payload
/// from this package's sources; a `sources` entry's `storage` when its files make none (each at
/// its `file:line:col`, naming the key and the way out).
pub fn resolve(manifest: &Manifest, collected: &Collected, registry: &[Box<dyn Rule>], options: &[RuleOptionsBox]) -> Result<StoragePlan> {
    let package = storage::from_manifest(manifest)?;
    let mut by_rule: BTreeMap<usize, Storage> = BTreeMap::new();
    for (name, raw) in &manifest.mcpp.rule_storage {
        let Some(index) = registry.iter().position(|r| r.name() == name) else { continue };
        let rel_key = format!("{name}.storage");
        let form = parse(manifest, &rel_key, raw)?;
        let rule = registry[index].as_ref();
        let mine: Vec<&crate::rules::DeviceSource> = collected.sources.iter().filter(|s| s.rule == index).collect();
        if !makes_payloads(rule, manifest, &options[index], &mine)? {
            let why = if mine.is_empty() {
                format!("no source of this package is the {name} rule's")
            } else if rule.outputs().is_empty() {
                format!("the {name} rule makes objects that are linked, never bytes to embed")
            } else {
                format!("the {name} rule's output here is linked object code (an `output` such as {} makes payloads)", rule.outputs().iter().filter(|o| **o != "object").map(|o| format!("`\"{o}\"`")).collect::<Vec<_>>().join(", "))
            };
            return Err(Error::new(ErrorKind::Manifest, format!("`storage` in [{MCPP_TABLE}.{name}] applies to no payload: {why}"))
                .file(manifest.at_col(&rel_key))
                .key(format!("{MCPP_TABLE}.{rel_key}"))
                .help("remove the key"));
        }
        by_rule.insert(index, form);
    }
    let mut by_entry: BTreeMap<usize, Storage> = BTreeMap::new();
    for (i, entry) in manifest.mcpp.sources.iter().enumerate() {
        let SourceEntry::Constrained(c) = entry else { continue };
        let Some(raw) = &c.storage else { continue };
        let rel_key = format!("sources[{i}].storage");
        let form = parse(manifest, &rel_key, raw)?;
        let mut makes = false;
        for s in collected.sources.iter().filter(|s| s.entry == i) {
            makes |= makes_payloads(registry[s.rule].as_ref(), manifest, &options[s.rule], &[s])?;
        }
        if !makes {
            return Err(Error::new(ErrorKind::Manifest, format!("`storage` of the sources entry `{}` applies to no payload: its files make objects that are linked", crate::text::echo(&c.glob)))
                .file(manifest.at_col(&rel_key))
                .key(format!("{MCPP_TABLE}.{rel_key}"))
                .help("remove the key, or give the entry an `output` that makes a payload (CUDA: \"ptx\", \"cubin\", \"fatbin\")"));
        }
        by_entry.insert(i, form);
    }
    let mut by_source = BTreeMap::new();
    for s in &collected.sources {
        if let Some(form) = by_entry.get(&s.entry).or_else(|| by_rule.get(&s.rule)) {
            by_source.insert(s.rel.clone(), *form);
        }
    }
    Ok(StoragePlan { package, by_source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_storage_wins_and_a_key_without_payloads_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["s/a.comp", "s/b.comp", "k/x.cu"] {
            std::fs::create_dir_all(dir.path().join(f).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        let read = |body: &str| {
            let text = format!("[package]\nname = \"p\"\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\n{body}\n");
            let path = dir.path().join("Cargo.toml");
            let m = Manifest::parse(&path, &text).unwrap();
            let registry = crate::rules::registry();
            let accel = crate::config::accel::AccelSet::parse("vulkan1.2").unwrap();
            let collected = crate::sources::collect(&m, &accel, &registry, &crate::config::env::Env::empty()).unwrap();
            let options: Vec<RuleOptionsBox> = registry.iter().map(|r| r.read_options(&m).0).collect();
            resolve(&m, &collected, &registry, &options)
        };
        let plan = read("storage = \"object\"\nsources = [{ glob = \"s/a.comp\", storage = \"header\" }, \"s/b.comp\"]\n[package.metadata.mcpp.spirv]\nstorage = \"sidecar\"").unwrap();
        assert_eq!(plan.package, Storage::Object);
        assert_eq!(plan.by_source, BTreeMap::from([("s/a.comp".to_string(), Storage::Header), ("s/b.comp".to_string(), Storage::Sidecar)]));
        let e = read("sources = [\"s/*.comp\", \"k/*.cu\"]\n[package.metadata.mcpp.cuda]\nstorage = \"sidecar\"").unwrap_err();
        assert!(e.message.contains("applies to no payload") && e.file.as_ref().unwrap().display().to_string().ends_with("Cargo.toml:7:1"), "{e}");
        let e = read("sources = [{ glob = \"k/*.cu\", storage = \"object\" }]").unwrap_err();
        assert!(e.message.contains("`k/*.cu` applies to no payload"), "{e}");
        assert!(read("sources = [{ glob = \"k/*.cu\", output = \"ptx\", storage = \"object\" }]").unwrap().by_source.contains_key("k/x.cu"));
        let e = read("sources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nstorage = \"disk\"").unwrap_err();
        assert!(e.message.contains("`storage = \"disk\"` is not a storage form"), "{e}");
    }
}
