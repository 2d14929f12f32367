//! The stale-bytes matrix, bounded: a fixed sequence of the edits a user makes, and after every
//! step the bytes the generated surface embeds (the payload copies the Rust surface
//! `include_bytes!`s and the C data headers) must equal those of a clean build of the same
//! package state in a fresh out/work directory. Compiler starts are counted: every compile the
//! build started is an action it reports as ran, and a step that changes nothing compiles
//! nothing. A SPIR-V sequence (real glslangValidator and glslc) and a shorter CUDA one (real
//! nvcc). The storage axis: a bounded SPIR-V sequence under `storage = "object"`
//! (the `.incbin` files and the linked archive's `.rodata.mcpp.*` section bytes, which the
//! program reads) and `storage = "sidecar"` (the files beside the artifacts and
//! `mcpp-sidecars.json`), each step compared with a clean build in the same storage form.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use harness::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The storage form a matrix runs under (the manifest's `storage`; `Header` leaves the key out,
/// the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    Header,
    Object,
    Sidecar,
}

/// What the surface in `out` embeds: each file the Rust surface includes, and each C data
/// header (none here: the package has no C/C++ unit, so header storage writes no C arrays), by
/// its path relative to `out`.
fn embedded(out: &Path) -> BTreeMap<String, Vec<u8>> {
    let rust = std::fs::read_to_string(out.join("mcpp_shaders.rs")).expect("mcpp_shaders.rs");
    let mut files = BTreeMap::new();
    for part in rust.split("include_bytes!(").skip(1) {
        let lit = &part[..part.find(')').expect("include_bytes!( literal )")];
        let path: String = serde_json::from_str(lit).expect("a string literal");
        let rel = Path::new(&path)
            .strip_prefix(out)
            .unwrap_or_else(|_| panic!("{path} is not under {}", out.display()))
            .to_string_lossy()
            .into_owned();
        files.insert(
            format!("include:{rel}"),
            std::fs::read(&path).expect("included file"),
        );
    }
    for f in harness::walk(&out.join("mcpp/data")) {
        let rel = f.strip_prefix(out).unwrap().to_string_lossy().into_owned();
        files.insert(format!("data:{rel}"), std::fs::read(&f).unwrap());
    }
    assert!(
        files.keys().any(|k| k.starts_with("include:")),
        "the surface includes nothing:\n{rust}"
    );
    files
}

/// Object storage's assembly in `out` (`mcpp/<module>.payloads.S`): its text and the files it
/// `.incbin`s, in order.
fn assembly(out: &Path) -> (String, Vec<PathBuf>) {
    let s = harness::walk(&out.join("mcpp"))
        .into_iter()
        .find(|f| f.to_string_lossy().ends_with(".payloads.S"))
        .expect("object storage writes the assembly");
    let text = std::fs::read_to_string(s).unwrap();
    let incbins = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".incbin "))
        .map(|lit| PathBuf::from(serde_json::from_str::<String>(lit).expect("an .incbin string")))
        .collect();
    (text, incbins)
}

/// The static archives the build links (through its link-search and link-lib lines), by name.
fn linked_archives(outcome: &cargo_mcpp::pipeline::Outcome) -> BTreeMap<String, Vec<u8>> {
    let lines = outcome.cargo.lines();
    let dirs: Vec<PathBuf> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("cargo::rustc-link-search=native="))
        .map(PathBuf::from)
        .collect();
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("cargo::rustc-link-lib=static="))
        .map(|lib| {
            let name = format!("lib{lib}.a");
            let file = dirs
                .iter()
                .map(|d| d.join(&name))
                .find(|f| f.is_file())
                .unwrap_or_else(|| panic!("{name} in no link-search directory: {lines:#?}"));
            (name, std::fs::read(file).unwrap())
        })
        .collect()
}

/// The members of the static archive `archive`, extracted with `ar x` into a temporary directory
/// (returned: the files live as long as it does), by file name.
fn archive_members(archive: &[u8]) -> (tempfile::TempDir, Vec<(String, PathBuf)>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.a"), archive).unwrap();
    let x = std::process::Command::new("ar")
        .args(["x", "lib.a"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(x.success(), "ar x");
    let members = harness::walk(dir.path())
        .into_iter()
        .map(|m| (m.file_name().unwrap().to_string_lossy().into_owned(), m))
        .filter(|(name, _)| name != "lib.a" && !name.starts_with("section-"))
        .collect();
    (dir, members)
}

/// The bytes of every `.rodata.mcpp.*` section of every member of `archive` (what the
/// accessors read between the begin and end symbols), by member and section.
fn payload_sections(archive: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let (dir, members) = archive_members(archive);
    let mut out = BTreeMap::new();
    for (name, member) in members {
        let listing = std::process::Command::new("objdump")
            .arg("-h")
            .arg(&member)
            .output()
            .unwrap();
        assert!(listing.status.success(), "objdump -h {name}");
        for section in String::from_utf8_lossy(&listing.stdout)
            .split_whitespace()
            .filter(|w| w.starts_with(".rodata.mcpp."))
        {
            let to = dir.path().join(format!("section-{name}{section}"));
            let st = std::process::Command::new("objcopy")
                .args(["-O", "binary", &format!("--only-section={section}")])
                .arg(&member)
                .arg(&to)
                .status()
                .unwrap();
            assert!(st.success(), "objcopy {section} {name}");
            out.insert(
                format!("{name}:{section}"),
                std::fs::read(&to).unwrap_or_default(),
            );
        }
    }
    out
}

/// The bytes the program will read under `storage`, by a key two builds of one state share:
/// header, what the surface embeds ([`embedded`]); object, the assembly's text (its paths
/// made relative), the `.incbin` files, and the `.rodata.mcpp.*` sections of the linked
/// archives; sidecar, `mcpp-sidecars.json` (paths made relative) and every file under the
/// artifacts' `mcpp-data/` (a stale leftover is a difference too). Object and sidecar also
/// keep the Rust surface's text (its accessors name the symbols and files).
fn read_bytes(
    pkg: &Package,
    storage: Storage,
    outcome: &cargo_mcpp::pipeline::Outcome,
) -> BTreeMap<String, Vec<u8>> {
    let out = pkg.out_dir();
    let root = pkg.dir.path().to_string_lossy().into_owned();
    let relative = |t: &str| t.replace(&root, "<tmp>").into_bytes();
    if storage == Storage::Header {
        return embedded(&out);
    }
    let mut files = BTreeMap::new();
    let rust = std::fs::read_to_string(out.join("mcpp_shaders.rs")).expect("mcpp_shaders.rs");
    assert!(
        !rust.contains("include_bytes!("),
        "{storage:?} storage includes no bytes:\n{rust}"
    );
    files.insert("rust:mcpp_shaders.rs".to_string(), relative(&rust));
    match storage {
        Storage::Object => {
            let (text, incbins) = assembly(&out);
            assert!(
                !incbins.is_empty(),
                "the assembly includes nothing:\n{text}"
            );
            files.insert("asm".to_string(), relative(&text));
            for f in &incbins {
                files.insert(
                    format!(
                        "incbin:{}",
                        String::from_utf8(relative(&f.to_string_lossy())).unwrap()
                    ),
                    std::fs::read(f).expect("an .incbin file"),
                );
            }
            let sections: BTreeMap<String, Vec<u8>> = linked_archives(outcome)
                .values()
                .flat_map(|a| payload_sections(a))
                .collect();
            assert_eq!(
                sections.len(),
                incbins.len(),
                "one .rodata.mcpp section per payload: {:?}",
                sections.keys()
            );
            files.extend(
                sections
                    .into_iter()
                    .map(|(k, v)| (format!("section:{k}"), v)),
            );
        }
        Storage::Sidecar => {
            let json = std::fs::read_to_string(out.join("mcpp-sidecars.json")).unwrap();
            files.insert("mcpp-sidecars.json".to_string(), relative(&json));
            let data = out.join("artifacts/mcpp-data");
            for f in harness::walk(&data) {
                files.insert(
                    format!("sidecar:{}", f.strip_prefix(&data).unwrap().display()),
                    std::fs::read(&f).unwrap(),
                );
            }
            assert!(
                files.keys().any(|k| k.starts_with("sidecar:")),
                "no sidecar written:\n{json}"
            );
        }
        Storage::Header => unreachable!(),
    }
    files
}

/// Compiles (starts naming an output; not the `--version`/`--help` probes) the counting
/// wrappers of `pkg` logged.
fn compiles(pkg: &Package) -> usize {
    ["glslangValidator", "glslc"]
        .iter()
        .map(|p| {
            Shim::at(&pkg.tools.join(p))
                .records()
                .iter()
                .filter(|r| r.has("-o"))
                .count()
        })
        .sum()
}

/// Assemblies and compiles the host C++ compiler's counting wrapper of `pkg` logged (none
/// when the matrix did not make one), not the `cc` crate's flag probes (in the work
/// directory's `cc-probe/`).
fn host_compiles(pkg: &Package) -> usize {
    let w = pkg.tools.join("g++");
    if w.exists() {
        Shim::at(&w)
            .records()
            .iter()
            .filter(|r| r.has("-o") && !r.line().contains("/cc-probe/"))
            .count()
    } else {
        0
    }
}

/// A builder for `pkg` with `accel`, the host compiler (object storage assembles) the counting
/// wrapper of g++.
fn builder(pkg: &Package, accel: Option<&str>) -> cargo_mcpp::Build {
    let mut b = pkg.build();
    if let Some(a) = accel {
        b.accel(a);
    }
    b.env("CXX", pkg.counting_wrapper_of("g++", &real_tool("g++")));
    b
}

/// A clean build of `pkg`'s current state (a copy, fresh out and work dirs) with `accel`: the
/// bytes it reads under `storage`.
fn clean_bytes(pkg: &Package, accel: Option<&str>, storage: Storage) -> BTreeMap<String, Vec<u8>> {
    let clean = Package::new(&[]);
    harness::copy_dir(&pkg.path(""), &clean.path(""));
    let outcome = clean.compile(&builder(&clean, accel));
    assert_eq!(
        compiles(&clean),
        outcome
            .report
            .ran
            .iter()
            .filter(|r| r.starts_with("spirv:"))
            .count()
    );
    read_bytes(&clean, storage, &outcome)
}

fn set_mtime(path: &Path, t: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

/// Rewrite `rel` with `from` replaced by `to` (asserting it was there).
fn edit(pkg: &Package, rel: &str, from: &str, to: &str) {
    harness::edit(&pkg.path(rel), from, to);
}

/// Flip a byte of `file` near its end, same size, its mtime restored.
fn corrupt_in_place(file: &Path) {
    let t = mtime(file);
    let mut bytes = std::fs::read(file).unwrap();
    let n = bytes.len() - 8;
    bytes[n] ^= 0x5a;
    std::fs::write(file, bytes).unwrap();
    set_mtime(file, t);
}

const A: &str = "spirv:shaders/a/scale.comp";
const B: &str = "spirv:shaders/b/scale.comp";

/// One step: its name, what it does to the package (given the variant directory of the last
/// build), the device actions allowed to run, and whether exactly those run.
type Step<'a> = (
    &'a str,
    Box<dyn Fn(&Package, &Path) + 'a>,
    &'a [&'a str],
    bool,
);

/// The SPIR-V edit sequence.
fn spirv_steps() -> Vec<Step<'static>> {
    vec![
        ("first build", Box::new(|_, _| {}), &[A, B], true),
        ("no-op", Box::new(|_, _| {}), &[], true),
        (
            "edit a shader",
            Box::new(|p, _| {
                edit(
                    p,
                    "shaders/b/scale.comp",
                    "data[i] * data[i]",
                    "data[i] * data[i] + 1.0",
                )
            }),
            &[B],
            true,
        ),
        (
            "edit the included .glsl",
            Box::new(|p, _| {
                edit(
                    p,
                    "shaders/include/common.glsl",
                    "SCALE = 3.0",
                    "SCALE = 5.0",
                )
            }),
            &[A],
            true,
        ),
        (
            "same-size edit of the include, its mtime restored (coarse timestamps)",
            Box::new(|p, _| {
                let f = p.path("shaders/include/common.glsl");
                let t = mtime(&f);
                edit(
                    p,
                    "shaders/include/common.glsl",
                    "SCALE = 5.0",
                    "SCALE = 6.0",
                );
                set_mtime(&f, t);
            }),
            &[A],
            true,
        ),
        (
            "edit the include again (B of ABA)",
            Box::new(|p, _| {
                edit(
                    p,
                    "shaders/include/common.glsl",
                    "SCALE = 6.0",
                    "SCALE = 8.0",
                )
            }),
            &[A],
            true,
        ),
        (
            "revert that edit (ABA)",
            Box::new(|p, _| {
                edit(
                    p,
                    "shaders/include/common.glsl",
                    "SCALE = 8.0",
                    "SCALE = 6.0",
                )
            }),
            &[A],
            false,
        ),
        (
            "touch without change",
            Box::new(|p, _| {
                for f in [
                    "shaders/include/common.glsl",
                    "shaders/a/scale.comp",
                    "Cargo.toml",
                ] {
                    set_mtime(&p.path(f), SystemTime::now() + Duration::from_secs(5));
                }
            }),
            &[],
            true,
        ),
        (
            "add a file shadowing the include earlier in the search path",
            Box::new(|p, _| p.write("shaders/a/common.glsl", &COMMON_GLSL.replace("3.0", "9.0"))),
            &[A],
            true,
        ),
        (
            "delete the shadowing file",
            Box::new(|p, _| std::fs::remove_file(p.path("shaders/a/common.glsl")).unwrap()),
            &[A],
            true,
        ),
        (
            "change a define in the manifest",
            Box::new(|p, _| edit(p, "Cargo.toml", "WORKGROUP = \"64\"", "WORKGROUP = \"32\"")),
            &[A, B],
            true,
        ),
        (
            "switch glslang -> glslc",
            Box::new(|p, _| {
                edit(
                    p,
                    "Cargo.toml",
                    "compiler = \"glslang\"",
                    "compiler = \"glslc\"",
                )
            }),
            &[A, B],
            true,
        ),
        (
            "delete an output in the device cache",
            Box::new(|_, v| {
                std::fs::remove_file(v.join("spirv/shaders/b/scale.comp.spv")).unwrap()
            }),
            &[B],
            true,
        ),
        (
            "overwrite an output in the device cache (same size, mtime restored)",
            Box::new(|_, v| corrupt_in_place(&v.join("spirv/shaders/a/scale.comp.spv"))),
            &[A],
            true,
        ),
        (
            "switch the accelerator set to vulkan1.3",
            Box::new(|_, _| {}),
            &[A, B],
            true,
        ),
        (
            "switch back to the manifest's vulkan1.2",
            Box::new(|_, _| {}),
            &[],
            true,
        ),
        (
            "switch glslc -> glslang",
            Box::new(|p, _| {
                edit(
                    p,
                    "Cargo.toml",
                    "compiler = \"glslc\"",
                    "compiler = \"glslang\"",
                )
            }),
            &[A, B],
            true,
        ),
        (
            "rename a source",
            Box::new(|p, _| {
                std::fs::rename(
                    p.path("shaders/b/scale.comp"),
                    p.path("shaders/b/square.comp"),
                )
                .unwrap()
            }),
            &["spirv:shaders/b/square.comp"],
            true,
        ),
        ("no-op at the end", Box::new(|_, _| {}), &[], true),
    ]
}

/// The bounded sequence of the storage axis: the edits of the shaders and the include (ABA and
/// a same-size edit with its mtime kept), the device cache's outputs damaged, a rename; and
/// the storage form's own damage (an `.incbin` file or a sidecar overwritten in place, a
/// sidecar deleted), which the next build must repair with no compile.
fn storage_steps(storage: Storage) -> Vec<Step<'static>> {
    const KEEP: &[&str] = &[
        "first build",
        "no-op",
        "edit a shader",
        "edit the included .glsl",
        "same-size edit of the include, its mtime restored (coarse timestamps)",
        "edit the include again (B of ABA)",
        "revert that edit (ABA)",
        "delete an output in the device cache",
        "overwrite an output in the device cache (same size, mtime restored)",
        "rename a source",
        "no-op at the end",
    ];
    let mut steps: Vec<Step> = spirv_steps()
        .into_iter()
        .filter(|s| KEEP.contains(&s.0))
        .collect();
    let own: Vec<Step> = match storage {
        Storage::Object => vec![(
            "overwrite an .incbin file (same size, mtime restored)",
            Box::new(|p, _| corrupt_in_place(&assembly(&p.out_dir()).1[0])),
            &[],
            true,
        )],
        Storage::Sidecar => vec![
            (
                "overwrite a sidecar (same size, mtime restored)",
                Box::new(|p, _| {
                    corrupt_in_place(
                        &p.out_dir()
                            .join("artifacts/mcpp-data/shader-pkg/a/scale_comp.spv"),
                    )
                }),
                &[],
                true,
            ),
            (
                "delete a sidecar",
                Box::new(|p, _| {
                    std::fs::remove_file(
                        p.out_dir()
                            .join("artifacts/mcpp-data/shader-pkg/b/scale_comp.spv"),
                    )
                    .unwrap()
                }),
                &[],
                true,
            ),
        ],
        Storage::Header => Vec::new(),
    };
    // Before the rename, while both sources have their first names.
    let at = steps.iter().position(|s| s.0 == "rename a source").unwrap();
    steps.splice(at..at, own);
    steps
}

/// Run `steps` on the shader package under `storage`; after each step the bytes the program
/// reads equal a clean build's of the same state in the same storage form, and only the
/// allowed device actions ran (every compiler start one of them). Under object storage the
/// assembly's action runs exactly when its text or an `.incbin` file's bytes changed, and every
/// host compiler start is a host action reported as ran.
fn spirv_matrix(storage: Storage, steps: Vec<Step>) {
    let pkg = shader_package("glslang");
    match storage {
        Storage::Header => {}
        Storage::Object => edit(
            &pkg,
            "Cargo.toml",
            "sources = [",
            "storage = \"object\"\nsources = [",
        ),
        Storage::Sidecar => edit(
            &pkg,
            "Cargo.toml",
            "sources = [",
            "storage = \"sidecar\"\nsources = [",
        ),
    }
    let mut accel: Option<&str> = None;
    let mut variant = PathBuf::new();
    let mut previous = BTreeMap::new();
    for (i, (name, action, allowed, exact)) in steps.iter().enumerate() {
        match *name {
            "switch the accelerator set to vulkan1.3" => accel = Some("vulkan1.3"),
            "switch back to the manifest's vulkan1.2" => accel = None,
            _ => {}
        }
        action(&pkg, &variant);
        let (before, host_before) = (compiles(&pkg), host_compiles(&pkg));
        let outcome = pkg.compile(&builder(&pkg, accel));
        variant = outcome.variant_dir.clone();
        let (mut ran, host): (Vec<String>, Vec<String>) = outcome
            .report
            .ran
            .iter()
            .cloned()
            .partition(|r| r.starts_with("spirv:"));
        ran.sort();
        let step = format!("{storage:?} storage, step {i} ({name})");
        assert_eq!(
            compiles(&pkg) - before,
            ran.len(),
            "{step}: every compiler start is an action reported as ran: {ran:?}"
        );
        if *exact {
            assert_eq!(ran, *allowed, "{step}: the actions that ran");
        } else {
            assert!(
                ran.iter().all(|r| allowed.contains(&r.as_str())),
                "{step}: {ran:?} ran, only {allowed:?} may"
            );
        }
        let now = read_bytes(&pkg, storage, &outcome);
        let clean = clean_bytes(&pkg, accel, storage);
        assert_eq!(
            now.keys().collect::<Vec<_>>(),
            clean.keys().collect::<Vec<_>>(),
            "{step}: the files read differ from a clean build's"
        );
        for (k, v) in &now {
            assert!(clean[k] == *v, "{step}: STALE BYTES in {k}: the incremental build reads other bytes than a clean build");
        }
        if matches!(*name, "no-op" | "touch without change" | "no-op at the end") {
            assert_eq!(
                now, previous,
                "{step}: nothing changed, and neither did the bytes"
            );
        }
        match storage {
            Storage::Header => assert!(
                host.is_empty(),
                "{step}: no host lane under header storage without C++ units: {host:?}"
            ),
            Storage::Object => {
                let assembled = host.iter().filter(|h| h.contains("payloads.S")).count();
                let inputs_changed = now
                    .iter()
                    .filter(|(k, _)| *k == "asm" || k.starts_with("incbin:"))
                    .ne(previous
                        .iter()
                        .filter(|(k, _)| *k == "asm" || k.starts_with("incbin:")));
                assert_eq!(assembled, usize::from(inputs_changed), "{step}: the assembly runs exactly when its text or an .incbin file changed: {host:?}");
                let started = host_compiles(&pkg) - host_before;
                assert_eq!(
                    started,
                    host.iter().filter(|h| !h.starts_with("archive:")).count(),
                    "{step}: every host compiler start is a host action reported as ran: {host:?}"
                );
            }
            Storage::Sidecar => assert!(
                host.iter().all(|h| !h.contains("payloads.S")),
                "{step}: sidecar storage assembles nothing: {host:?}"
            ),
        }
        previous = now;
    }
}

#[test]
fn every_step_of_the_spirv_matrix_embeds_the_bytes_of_a_clean_build() {
    spirv_matrix(Storage::Header, spirv_steps());
}

#[test]
fn every_step_of_the_spirv_matrix_under_object_storage_assembles_the_bytes_of_a_clean_build() {
    spirv_matrix(Storage::Object, storage_steps(Storage::Object));
}

#[test]
fn every_step_of_the_spirv_matrix_under_sidecar_storage_writes_the_sidecars_of_a_clean_build() {
    spirv_matrix(Storage::Sidecar, storage_steps(Storage::Sidecar));
}

/// The CUDA lane's builder for the fixture copy `pkg` with the toolkit `cuda`.
fn cuda_build(tmp: &Path, pkg: &Path, cuda: &Path) -> cargo_mcpp::Build {
    let mut b = cargo_mcpp::Build::new();
    b.manifest_dir(pkg)
        .out_dir(tmp.join("out"))
        .work_dir(tmp.join("work"))
        .release(false)
        .jobs(2)
        .env("MCPP_HOME", tmp.join("mcpp-home"))
        .env("CUDA_PATH", cuda);
    for v in [
        "NVCC",
        "MCPP_NVCC",
        "MCPP_TOOL_NVCC",
        "CUDA_HOME",
        "CUDAHOSTCXX",
        "NVCC_CCBIN",
        "MCPP_ACCEL",
        "MCPP_NO_ACCEL",
        "TARGET",
        "HOST",
    ] {
        b.env_remove(v);
    }
    b
}

/// The static archive the build links (found through its link-search line).
fn linked_archive(outcome: &cargo_mcpp::pipeline::Outcome) -> Vec<u8> {
    let dir = outcome
        .cargo
        .lines()
        .iter()
        .find_map(|l| {
            l.strip_prefix("cargo::rustc-link-search=native=")
                .filter(|d| Path::new(d).join("libmcpp_cuda_fix_island.a").is_file())
                .map(PathBuf::from)
        })
        .expect("a link-search directory with the island's archive");
    std::fs::read(dir.join("libmcpp_cuda_fix_island.a")).unwrap()
}

/// What of the archive two clean builds reproduce: the host code and data sections (`.text`,
/// `.data`, `.rodata`, where the marker lives) of every member, by member and section. The
/// device code's `.nv_fatbin` is left out: nvcc embeds its temporary file names there, so it
/// differs between two clean builds of one state (the marker reflects the include's and the
/// define's values, which reach the device code the same way).
fn stable_sections(archive: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let (dir, members) = archive_members(archive);
    let mut out = BTreeMap::new();
    for (name, member) in members {
        for section in [".text", ".data", ".rodata"] {
            let to = dir.path().join(format!("section-{name}{section}"));
            let st = std::process::Command::new("objcopy")
                .args(["-O", "binary", &format!("--only-section={section}")])
                .arg(&member)
                .arg(&to)
                .status()
                .unwrap();
            assert!(st.success(), "objcopy {section} {name}");
            out.insert(
                format!("{name}:{section}"),
                std::fs::read(&to).unwrap_or_default(),
            );
        }
    }
    assert!(!out.is_empty(), "the archive has members");
    out
}

/// The marker string compiled into the island (`MCPP-MARK:<scale>:<width>`), read from the bytes.
fn marker(bytes: &[u8]) -> String {
    let at = bytes
        .windows(10)
        .position(|w| w == b"MCPP-MARK:")
        .expect("the marker is in the archive");
    let end = bytes[at..].iter().position(|b| *b == 0).unwrap();
    String::from_utf8_lossy(&bytes[at..at + end]).into_owned()
}

#[test]
fn every_step_of_the_cuda_matrix_links_the_bytes_of_a_clean_build() {
    let (tmp, pkg) = harness::fixture("cuda-island");
    harness::edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    // A marker the test can read from the archive: the include's value and the define's.
    harness::edit(
        &pkg.join("kernels/params.cuh"),
        "#define SCALE_FACTOR 3.0f\n",
        "#define SCALE_FACTOR 3.0f\n#define MARK_SCALE \"3\"\n",
    );
    std::fs::write(
        pkg.join("kernels/scale.cu"),
        std::fs::read_to_string(pkg.join("kernels/scale.cu")).unwrap()
            + "\n#define MCPP_STR2(x) #x\n#define MCPP_STR(x) MCPP_STR2(x)\nextern \"C\" __attribute__((used)) const char mcpp_marker[] = \"MCPP-MARK:\" MARK_SCALE \":\" MCPP_STR(WIDTH);\n",
    )
    .unwrap();
    let real = harness::cuda13();
    let root = tmp.path().join("counted-cuda");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    for d in ["include", "lib"] {
        std::os::unix::fs::symlink(real.join(d), root.join(d)).unwrap();
    }
    let nvcc = Shim::wrap(&root.join("bin"), "nvcc", &real.join("bin/nvcc"));

    let clean = |marker_want: &str| -> Vec<u8> {
        let c = tempfile::tempdir().unwrap();
        harness::copy_dir(&pkg, &c.path().join("pkg"));
        let o = cuda_build(c.path(), &c.path().join("pkg"), &real)
            .accel("cuda13.0+{sm_80}")
            .try_compile()
            .unwrap();
        let bytes = linked_archive(&o);
        assert_eq!(marker(&bytes), marker_want);
        bytes
    };
    const CU: &str = "cuda:kernels/scale.cu";
    const AR: &str = "archive:mcpp_cuda_fix_island";
    type Step<'a> = (&'a str, Box<dyn Fn() + 'a>, &'a [&'a str], &'a str);
    let steps: Vec<Step> = vec![
        ("first build", Box::new(|| {}), &[AR, CU], "MCPP-MARK:3:4"),
        (
            "edit the included .cuh",
            Box::new(|| {
                harness::edit(&pkg.join("kernels/params.cuh"), "3.0f", "5.0f");
                harness::edit(
                    &pkg.join("kernels/params.cuh"),
                    "MARK_SCALE \"3\"",
                    "MARK_SCALE \"5\"",
                );
            }),
            &[AR, CU],
            "MCPP-MARK:5:4",
        ),
        (
            "edit it again (B of ABA)",
            Box::new(|| {
                harness::edit(&pkg.join("kernels/params.cuh"), "5.0f", "7.0f");
                harness::edit(
                    &pkg.join("kernels/params.cuh"),
                    "MARK_SCALE \"5\"",
                    "MARK_SCALE \"7\"",
                );
            }),
            &[AR, CU],
            "MCPP-MARK:7:4",
        ),
        (
            "revert that edit (ABA)",
            Box::new(|| {
                harness::edit(&pkg.join("kernels/params.cuh"), "7.0f", "5.0f");
                harness::edit(
                    &pkg.join("kernels/params.cuh"),
                    "MARK_SCALE \"7\"",
                    "MARK_SCALE \"5\"",
                );
            }),
            &[AR, CU],
            "MCPP-MARK:5:4",
        ),
        (
            "change a define",
            Box::new(|| harness::edit(&pkg.join("Cargo.toml"), "WIDTH = \"4\"", "WIDTH = \"8\"")),
            &[AR, CU],
            "MCPP-MARK:5:8",
        ),
        ("no-op", Box::new(|| {}), &[], "MCPP-MARK:5:8"),
    ];
    let mut previous: Vec<u8> = Vec::new();
    for (i, (name, action, allowed, want)) in steps.iter().enumerate() {
        action();
        let before = nvcc.starts();
        let outcome = cuda_build(tmp.path(), &pkg, &root)
            .accel("cuda13.0+{sm_80}")
            .try_compile()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut ran = outcome.report.ran.clone();
        ran.sort();
        let step = format!("step {i} ({name})");
        let mut want_ran: Vec<&str> = allowed.to_vec();
        want_ran.sort();
        assert!(
            ran.iter().all(|r| want_ran.contains(&r.as_str())),
            "{step}: {ran:?} ran, only {want_ran:?} may"
        );
        if i > 0 {
            assert_eq!(ran, want_ran, "{step}");
            assert_eq!(
                nvcc.starts() - before,
                ran.iter().filter(|r| r.starts_with("cuda:")).count(),
                "{step}: nvcc starts are the compiles reported"
            );
        }
        let now = linked_archive(&outcome);
        assert_eq!(
            marker(&now),
            *want,
            "{step}: STALE: the linked archive carries another marker"
        );
        let clean = clean(want);
        let (now_sections, clean_sections) = (stable_sections(&now), stable_sections(&clean));
        assert_eq!(
            now_sections.keys().collect::<Vec<_>>(),
            clean_sections.keys().collect::<Vec<_>>(),
            "{step}"
        );
        for (k, v) in &now_sections {
            assert!(
                clean_sections[k] == *v,
                "{step}: STALE BYTES in {k}: the linked archive differs from a clean build's"
            );
        }
        if allowed.is_empty() {
            assert!(
                now == previous,
                "{step}: nothing changed, and neither did the archive (every byte)"
            );
        }
        previous = now;
    }
}
