//! CUDA device code as a payload (issue 15) through the library API on temp copies of
//! `tests/fixtures/cuda-ptx` (three kernels, two of which include `kernels/shared.cuh`, compiled
//! with `[package.metadata.mcpp.cuda] output = "ptx"`, and `guarded/bf16max.cu`, whose header
//! guards a redefinition with `#if __CUDA_ARCH__ < 800`, given `output = "ptx"` by its `sources`
//! entry): real nvcc for the bytes criterion, the output switch and the guard; the recording
//! shim for argv, the placeholders of `--no-accel`, the object check and keep-going.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use cargo_mcpp::ErrorKind;
use harness::*;
use std::path::{Path, PathBuf};

/// The embedded copy of the payload `<ns>/<id>` (`kernels/affine_ptx`) of the surface in `<tmp>/out`.
fn payload(tmp: &Path, rel: &str, ext: &str) -> Vec<u8> {
    std::fs::read(tmp.join("out/mcpp/payloads").join(format!("{rel}.{ext}")))
        .unwrap_or_else(|e| panic!("{rel}.{ext}: {e}"))
}

fn ptx(tmp: &Path, rel: &str) -> String {
    let bytes = payload(tmp, rel, "txt");
    assert_eq!(
        bytes.last(),
        Some(&0),
        "{rel}: the text copy carries one NUL"
    );
    String::from_utf8(bytes[..bytes.len() - 1].to_vec()).unwrap()
}

fn surface(tmp: &Path) -> String {
    std::fs::read_to_string(tmp.join("out/mcpp_shaders.rs")).unwrap()
}

fn ids(ran: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = ran.iter().map(String::as_str).collect();
    v.sort_unstable();
    v
}

#[test]
fn an_edited_cuh_changes_exactly_the_ptx_of_its_includers_and_a_noop_starts_no_nvcc() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, nvcc) = counted_toolkit(tmp.path());
    let run = || cuda_build(tmp.path(), &pkg, &root).try_compile().unwrap();
    let first = run();
    assert_eq!(
        ids(&first.report.ran),
        [
            "cuda:ptx:compute_80:guarded/bf16max.cu",
            "cuda:ptx:compute_80:kernels/affine.cu",
            "cuda:ptx:compute_80:kernels/scale.cu",
            "cuda:ptx:compute_80:kernels/solo.cu"
        ]
    );
    let compiles = nvcc.calls().iter().filter(|c| c.has("--ptx")).count();
    assert_eq!(compiles, 4);
    let rs = surface(tmp.path());
    assert!(
        rs.contains("pub fn affine_ptx() -> super::TextPayload")
            && rs.contains("pub fn bf16max_ptx() -> super::TextPayload"),
        "{rs}"
    );
    assert!(rs.contains("pub fn all_text() -> [TextPayload; 4]"), "{rs}");
    let (affine, scale, solo, guarded) = (
        ptx(tmp.path(), "kernels/affine_ptx"),
        ptx(tmp.path(), "kernels/scale_ptx"),
        ptx(tmp.path(), "kernels/solo_ptx"),
        ptx(tmp.path(), "guarded/bf16max_ptx"),
    );
    assert!(
        affine.contains(".target sm_80") && affine.contains(".entry affine"),
        "{affine}"
    );
    assert!(
        guarded.contains(".entry bf16max"),
        "the __CUDA_ARCH__-guarded header compiles device-only: {guarded}"
    );
    // The C++ module hands the same text out.
    let cppm = std::fs::read_to_string(tmp.path().join("out/mcpp/fix_ptx.shaders.cppm")).unwrap();
    assert!(cppm.contains("text_payload affine_ptx()"), "{cppm}");

    // A no-op: nothing runs, no nvcc process at all (not even --version).
    let starts = nvcc.starts();
    let again = run();
    assert!(again.report.ran.is_empty(), "{:?}", again.report.ran);
    assert_eq!(nvcc.starts(), starts);

    // The shared header: exactly its two includers recompile, with new PTX; the others keep their bytes.
    edit(&pkg.join("kernels/shared.cuh"), "0.25f", "0.75f");
    let edited = run();
    assert_eq!(
        ids(&edited.report.ran),
        [
            "cuda:ptx:compute_80:kernels/affine.cu",
            "cuda:ptx:compute_80:kernels/scale.cu"
        ]
    );
    assert_eq!(nvcc.starts(), starts + 2);
    assert_ne!(ptx(tmp.path(), "kernels/affine_ptx"), affine);
    assert_ne!(ptx(tmp.path(), "kernels/scale_ptx"), scale);
    assert_eq!(ptx(tmp.path(), "kernels/solo_ptx"), solo);
    assert_eq!(ptx(tmp.path(), "guarded/bf16max_ptx"), guarded);
}

/// The objects of the variant's CUDA lane (`cuda/obj/*.o`).
fn objects(variant: &Path) -> Vec<PathBuf> {
    walk(&variant.join("cuda/obj"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect()
}

#[test]
fn switching_output_rebuilds_into_its_own_outputs_and_the_arch_guard_compiles_only_device_only() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, nvcc) = counted_toolkit(tmp.path());
    let run = || {
        cuda_build(tmp.path(), &pkg, &root)
            .try_compile()
            .map_err(Box::new)
    };
    let first = run().unwrap();
    let ptx_dir = first.variant_dir.join("cuda/ptx");
    let ptx_files: Vec<(PathBuf, Vec<u8>)> = walk(&ptx_dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    assert_eq!(ptx_files.len(), 4, "{ptx_files:?}");
    assert!(
        objects(&first.variant_dir).is_empty(),
        "PTX is never an object"
    );

    // The table's output becomes "object": the kernels are compiled again, into objects (ELF),
    // archived; the guarded source keeps its entry's "ptx" and is fresh.
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"object\"\n",
    );
    let starts = nvcc.starts();
    let objected = run().unwrap();
    assert_eq!(
        ids(&objected.report.ran),
        [
            "archive:mcpp_cuda_fix_ptx",
            "cuda:kernels/affine.cu",
            "cuda:kernels/scale.cu",
            "cuda:kernels/solo.cu"
        ]
    );
    assert_eq!(nvcc.starts(), starts + 3);
    let objs = objects(&objected.variant_dir);
    assert_eq!(objs.len(), 3, "{objs:?}");
    for o in &objs {
        assert!(
            std::fs::read(o).unwrap().starts_with(b"\x7fELF"),
            "{} is an object file",
            o.display()
        );
    }
    let rs = surface(tmp.path());
    assert!(
        !rs.contains("affine_ptx") && rs.contains("bf16max_ptx"),
        "{rs}"
    );
    for (p, bytes) in &ptx_files {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{}: another kind's build leaves the PTX alone",
            p.display()
        );
    }

    // Back to "ptx": its own outputs are still there and verified, so nothing compiles.
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"object\"\n",
        "output = \"ptx\"\n",
    );
    let starts = nvcc.starts();
    let back = run().unwrap();
    assert!(back.report.ran.is_empty(), "{:?}", back.report.ran);
    assert_eq!(nvcc.starts(), starts);
    assert!(surface(tmp.path()).contains("pub fn affine_ptx()"));

    // The guarded kernel as an object: nvcc's host pass sees `__CUDA_ARCH__ < 800` true and
    // refuses the redefinition, and the build fails with nvcc's words and command line.
    edit(
        &pkg.join("Cargo.toml"),
        "{ glob = \"guarded/*.cu\", output = \"ptx\" }",
        "{ glob = \"guarded/*.cu\", output = \"object\" }",
    );
    let e = run().unwrap_err();
    assert_eq!(e.kind, ErrorKind::ToolFailed, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("guarded/bf16max.cu")
            && text.contains("__hmax_nan")
            && text.contains("has already been defined"),
        "{text}"
    );
    assert!(
        text.contains("command: ") && text.contains(" -c "),
        "{text}"
    );
}

#[test]
fn cubins_per_architecture_a_fat_binary_and_ptx_per_virtual_architecture() {
    let (tmp, pkg) = fixture("cuda-ptx");
    for f in ["kernels/scale.cu", "kernels/solo.cu"] {
        std::fs::remove_file(pkg.join(f)).unwrap();
    }
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"cubin\"\n",
    );
    let root = cuda13();
    let two = "cuda13.0+{sm_80,sm_90}";
    let outcome = cuda_build(tmp.path(), &pkg, &root)
        .accel(two)
        .try_compile()
        .unwrap();
    assert_eq!(
        ids(&outcome.report.ran),
        [
            "cuda:cubin:sm_80:kernels/affine.cu",
            "cuda:cubin:sm_90:kernels/affine.cu",
            "cuda:ptx:compute_80:guarded/bf16max.cu",
            "cuda:ptx:compute_90:guarded/bf16max.cu"
        ]
    );
    let rs = surface(tmp.path());
    for f in [
        "pub fn affine_cubin_sm_80() -> super::BytesPayload",
        "pub fn affine_cubin_sm_90() -> super::BytesPayload",
        "pub fn bf16max_ptx() -> super::TextPayload",
        "pub fn bf16max_ptx_compute_80() -> super::TextPayload",
    ] {
        assert!(rs.contains(f), "{f}\n{rs}");
    }
    assert!(
        ptx(tmp.path(), "guarded/bf16max_ptx").contains(".target sm_90"),
        "the unsuffixed PTX is the floor's"
    );
    assert!(ptx(tmp.path(), "guarded/bf16max_ptx_compute_80").contains(".target sm_80"));
    for arch in ["sm_80", "sm_90"] {
        let cubin = payload(tmp.path(), &format!("kernels/affine_cubin_{arch}"), "bin");
        assert!(
            cubin.starts_with(b"\x7fELF") && cubin.windows(6).any(|w| w == b"affine"),
            "{arch}: an ELF cubin with the kernel"
        );
    }

    // One fat binary: every architecture and the PTX floor.
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"cubin\"\n",
        "output = \"fatbin\"\n",
    );
    let outcome = cuda_build(tmp.path(), &pkg, &root)
        .accel(two)
        .try_compile()
        .unwrap();
    assert_eq!(ids(&outcome.report.ran), ["cuda:fatbin:kernels/affine.cu"]);
    let fatbin = payload(tmp.path(), "kernels/affine_fatbin", "bin");
    assert!(
        fatbin.starts_with(&[0x50, 0xed, 0x55, 0xba]),
        "a fat binary: {:02x?}",
        &fatbin[..8.min(fatbin.len())]
    );
    let rs = surface(tmp.path());
    assert!(
        rs.contains("pub fn affine_fatbin() -> super::BytesPayload")
            && !rs.contains("affine_cubin"),
        "{rs}"
    );
}

#[test]
fn the_argv_of_each_output_kind_on_both_routes() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, shim) = fake_toolkit(tmp.path());
    let ccbin = std::fs::canonicalize(shim.path()).unwrap();
    cuda_build(tmp.path(), &pkg, &root)
        .env("NVCC_CCBIN", &ccbin)
        .accel("cuda13.0+{sm_80,sm_90}")
        .try_compile()
        .unwrap();
    let call = |needle: &str, arch: &str| {
        shim.calls()
            .into_iter()
            .find(|c| c.names(needle) && c.has(arch))
            .unwrap_or_else(|| panic!("{needle} {arch}"))
    };
    let c = call("guarded/bf16max.cu", "-arch=compute_80");
    let (out, dep) = (
        c.after("-o").unwrap().to_string(),
        c.after("-MF").unwrap().to_string(),
    );
    let src = pkg
        .join("guarded/bf16max.cu")
        .to_string_lossy()
        .into_owned();
    let ccbin = ccbin.to_string_lossy().into_owned();
    let want: Vec<&str> = vec![
        "-ccbin",
        &ccbin,
        "-arch=compute_80",
        "--ptx",
        "-O0",
        "-lineinfo",
        "-MMD",
        "-MF",
        &dep,
        &src,
        "-o",
        &out,
    ];
    assert_eq!(c.args, want);
    assert!(
        out.contains("/cuda/ptx/")
            && out.ends_with(".compute_80.ptx")
            && dep.ends_with(".compute_80.d"),
        "{out} {dep}"
    );
    assert!(call("guarded/bf16max.cu", "-arch=compute_90").has("--ptx"));

    // The clang route: --cuda-device-only, -S for PTX, -c for a cubin.
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"cubin\"\ncompiler = \"clang\"\n",
    );
    let clang = Shim::install(&tmp.path().join("clang"), "clang-shim");
    cuda_build(tmp.path(), &pkg, &root)
        .tool("clang++", clang.path())
        .accel("cuda13.0+{sm_90}")
        .try_compile()
        .unwrap();
    let calls = clang.calls();
    let cubin = calls
        .iter()
        .find(|c| c.names("kernels/affine.cu"))
        .expect("affine.cu compiled by clang");
    let toolkit = format!("--cuda-path={}", root.display());
    assert_eq!(
        &cubin.args[..7],
        [
            "-x",
            "cuda",
            toolkit.as_str(),
            "--cuda-device-only",
            "--cuda-gpu-arch=sm_90",
            "-c",
            "-Wno-unknown-cuda-version"
        ]
    );
    let ptx = calls
        .iter()
        .find(|c| c.names("guarded/bf16max.cu"))
        .expect("bf16max.cu compiled by clang");
    assert!(
        ptx.has("--cuda-device-only")
            && ptx.has("-S")
            && ptx.has("--cuda-gpu-arch=sm_90")
            && ptx.has("-MD"),
        "{}",
        ptx.line()
    );
}

#[test]
fn without_an_accelerator_the_accessors_are_generated_empty_and_nothing_compiles() {
    let (tmp, pkg) = fixture("cuda-ptx");
    let (root, shim) = fake_toolkit(tmp.path());
    let outcome = cuda_build(tmp.path(), &pkg, &root)
        .no_accel()
        .try_compile()
        .unwrap();
    assert!(outcome.report.ran.is_empty());
    assert_eq!(shim.starts(), 0, "no nvcc at all");
    let rs = surface(tmp.path());
    for f in [
        "pub fn affine_ptx() -> super::TextPayload",
        "pub fn solo_ptx() -> super::TextPayload",
        "pub fn bf16max_ptx() -> super::TextPayload",
    ] {
        assert!(rs.contains(f), "{f}\n{rs}");
    }
    assert_eq!(
        payload(tmp.path(), "kernels/affine_ptx", "txt"),
        b"\0",
        "an empty text: its NUL only"
    );
    let cppm = std::fs::read_to_string(tmp.path().join("out/mcpp/fix_ptx.shaders.cppm")).unwrap();
    assert!(cppm.contains("text_payload affine_ptx()"), "{cppm}");
    // The same names as the accelerated build's (one architecture).
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"fatbin\"\n",
    );
    cuda_build(tmp.path(), &pkg, &root)
        .no_accel()
        .try_compile()
        .unwrap();
    let rs = surface(tmp.path());
    assert!(
        rs.contains("pub fn affine_fatbin() -> super::BytesPayload")
            && rs.contains("pub fn bf16max_ptx()"),
        "{rs}"
    );
    assert_eq!(payload(tmp.path(), "kernels/affine_fatbin", "bin"), b"");
}

#[test]
fn an_object_that_is_not_an_object_file_is_a_failure() {
    let (tmp, pkg) = fixture("cuda-ptx");
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"object\"\n",
    );
    let (root, shim) = fake_toolkit(tmp.path());
    shim.output("//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n");
    let e = cuda_build(tmp.path(), &pkg, &root)
        .try_compile()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ToolFailed);
    let text = e.to_string();
    assert!(
        text.contains("exited 0 but")
            && text.contains("is not an ELF file")
            && text.contains("it starts with 2f 2f 0a 2f"),
        "{text}"
    );
}

#[test]
fn every_failed_compile_is_reported_and_the_independent_ones_still_run() {
    let (tmp, pkg) = fixture("cuda-ptx");
    edit(
        &pkg.join("Cargo.toml"),
        "output = \"ptx\"\n",
        "output = \"object\"\n",
    );
    let (root, shim) = fake_toolkit(tmp.path());
    // Every object compile fails (they have -c); the guarded PTX compile does not.
    shim.fail_if_arg("-c", "k.cu(1): error: simulated", 2);
    let e = cuda_build(tmp.path(), &pkg, &root)
        .jobs(1)
        .try_compile()
        .unwrap_err();
    let text = e.to_string();
    assert_eq!(
        e.problems(),
        4,
        "three failures and the archive not run:\n{text}"
    );
    for k in ["kernels/affine.cu", "kernels/scale.cu", "kernels/solo.cu"] {
        assert!(text.contains(&format!("nvcc {k} failed")), "{k}:\n{text}");
    }
    assert_eq!(text.matches("command: ").count(), 3, "{text}");
    assert!(
        text.contains("1 action(s) not run: they depend on a failed one")
            && text.contains("archive libmcpp_cuda_fix_ptx.a"),
        "{text}"
    );
    assert_eq!(
        shim.calls().iter().filter(|c| c.has("--ptx")).count(),
        1,
        "the independent PTX compile ran"
    );
    // Fixed: the PTX compile that succeeded is fresh.
    let shim = Shim::install(&root.join("bin"), "nvcc");
    let outcome = cuda_build(tmp.path(), &pkg, &root)
        .jobs(1)
        .try_compile()
        .unwrap();
    assert!(
        !outcome.report.ran.iter().any(|a| a.starts_with("cuda:ptx")),
        "{:?}",
        outcome.report.ran
    );
    assert_eq!(shim.calls().iter().filter(|c| c.has("--ptx")).count(), 0);
}
