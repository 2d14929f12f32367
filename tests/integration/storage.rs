//! Storage forms: `storage = "header" | "object" | "sidecar"`. A Rust program
//! compiled by rustc against the generated surface (and, for object storage, the lane's archive
//! holding the assembled `.incbin` object) prints the bytes its accessors return; they are the
//! compiled shader's, and after an edit of the shader the new ones, with gcc and clang as the
//! assembler. Sidecar files are written beside the artifacts, listed in `mcpp-sidecars.json`,
//! read relative to the executable or `MCPP_SIDECAR_DIR`, and a missing one is an error naming
//! the path tried. Switching storage leaves no stale bytes.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The example-like package (two `scale.comp`) with `storage = <storage>`.
fn storage_package(storage: &str) -> Package {
    let mcpp = format!(
        "accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\"]\nstorage = \"{storage}\""
    );
    let cargo = format!("{}\n[package.metadata.mcpp.spirv]\ncompiler = \"glslang\"\nincludes = [\"shaders/include\"]\ndefines = {{ WORKGROUP = \"64\" }}\n", manifest("store-app", &mcpp));
    Package::new(&[
        ("Cargo.toml", &cargo),
        ("shaders/include/common.glsl", COMMON_GLSL),
        ("shaders/a/scale.comp", SCALE_COMP),
        ("shaders/b/scale.comp", SQUARE_COMP),
    ])
}

/// Set the manifest's storage.
fn set_storage(pkg: &Package, storage: &str) {
    let text = pkg.read("Cargo.toml");
    let at = text.find("storage = \"").unwrap();
    let end = at + text[at..].find('\n').unwrap();
    pkg.write(
        "Cargo.toml",
        &format!("{}storage = \"{storage}\"{}", &text[..at], &text[end..]),
    );
}

/// The compiled payload of `a/scale.comp` (the verified copy in OUT_DIR).
fn payload(pkg: &Package) -> Vec<u8> {
    std::fs::read(pkg.out_dir().join("mcpp/payloads/a/scale_comp.spv")).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

const MAIN: &str = r#"
fn hex(b: &[u8]) -> String { b.iter().map(|x| format!("{x:02x}")).collect() }
fn main() {
    let p = shaders::a::scale_comp()UNWRAP;
    assert_eq!(p.code.as_ptr() as usize % 4, 0);
    assert_eq!(p.code[0], 0x0723_0203);
    let bytes: Vec<u8> = p.code.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(bytes.len(), p.size_bytes);
    println!("{}", hex(&bytes));
}
"#;

/// Compile the Rust surface into `exe` with rustc (linking what the build links: the lane's
/// archive, under object storage) and return what it prints (with `env` set).
fn rust_program(
    pkg: &Package,
    outcome: &cargo_mcpp::pipeline::Outcome,
    exe: &Path,
    env: &[(&str, &Path)],
) -> std::process::Output {
    let unwrap = if pkg.read("Cargo.toml").contains("\"sidecar\"") {
        ".unwrap_or_else(|e| { eprintln!(\"{e}\"); std::process::exit(3) })"
    } else {
        ""
    };
    compile_program(pkg, outcome, exe, &MAIN.replace("UNWRAP", unwrap));
    let mut cmd = Command::new(exe);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Compile `main` (a program using the module `shaders`, the generated surface) into `exe`
/// with rustc, `-D warnings`, linking what the build links (the lane's archive under object
/// storage); returns how long rustc took.
fn compile_program(
    pkg: &Package,
    outcome: &cargo_mcpp::pipeline::Outcome,
    exe: &Path,
    main_body: &str,
) -> std::time::Duration {
    let main = pkg.dir.path().join("main.rs");
    std::fs::write(
        &main,
        format!(
            "mod shaders {{ include!({:?}); }}\n{}",
            pkg.out_dir().join("mcpp_shaders.rs").display().to_string(),
            main_body
        ),
    )
    .unwrap();
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    let mut rustc = Command::new("rustc");
    rustc
        .args(["--edition", "2021", "-D", "warnings", "-o"])
        .arg(exe)
        .arg(&main);
    let lines = outcome.cargo.lines();
    for l in lines {
        if let Some(dir) = l.strip_prefix("cargo::rustc-link-search=native=") {
            rustc.arg("-L").arg(format!("native={dir}"));
        }
        if let Some(lib) = l.strip_prefix("cargo::rustc-link-lib=") {
            rustc.arg("-l").arg(lib);
        }
    }
    let start = std::time::Instant::now();
    let out = rustc.output().unwrap();
    assert!(out.status.success(), "rustc failed: {}", text(&out));
    start.elapsed()
}

/// What the program printed, which must have succeeded.
fn printed(out: std::process::Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Object storage with g++ and with clang as the assembler: the program reads the shader's
/// bytes through the `.incbin` symbols; after an edit of the shader it reads the new bytes
/// (the payload is a declared input of the assembly's action); no data header is generated.
#[test]
fn object_storage_reads_the_incbin_bytes_and_follows_an_edit_with_gcc_and_clang() {
    for (name, real) in [("g++", "g++"), ("clang++", "clang++-19")] {
        let pkg = storage_package("object");
        let cxx = pkg.counting_wrapper_of(name, &real_tool(real));
        let mut b = pkg.build();
        b.env("CXX", &cxx);
        let outcome = pkg.compile(&b);
        // Only the assembly is in the archive: no C++ runtime is linked into a pure-Rust crate.
        assert!(
            !outcome
                .cargo
                .lines()
                .iter()
                .any(|l| l.contains("rustc-link-lib") && l.contains("c++")),
            "{name}: {:#?}",
            outcome.cargo.lines()
        );
        let exe = pkg.dir.path().join("bin/prog");
        assert_eq!(
            printed(rust_program(&pkg, &outcome, &exe, &[])),
            format!("{}\n", hex(&payload(&pkg))),
            "{name}"
        );
        assert!(
            !pkg.out_dir().join("mcpp/data").exists(),
            "object storage writes no data header"
        );
        let asm = std::fs::read_to_string(pkg.out_dir().join("mcpp/store_app.shaders.payloads.S"))
            .unwrap();
        assert!(
            asm.contains(".incbin")
                && asm.contains(".balign 16")
                && asm.contains(".section .rodata.mcpp."),
            "{asm}"
        );
        let before = payload(&pkg);
        edit(
            &pkg.path("shaders/a/scale.comp"),
            "data[i] = transform(data[i]);",
            "data[i] = transform(data[i]) * 2.0 + 1.0;",
        );
        let outcome = pkg.compile(&b);
        assert_ne!(payload(&pkg), before, "the edit changed the payload");
        assert_eq!(
            printed(rust_program(&pkg, &outcome, &exe, &[])),
            format!("{}\n", hex(&payload(&pkg))),
            "{name}: the new bytes are read"
        );
        assert!(
            pkg.compiles(name)
                .iter()
                .filter(|c| c.contains("payloads.S"))
                .count()
                == 2,
            "{name}: assembled once per change: {:#?}",
            pkg.compiles(name)
        );
    }
}

/// Sidecar storage: the file beside the artifacts, listed in `mcpp-sidecars.json` (the contract
/// with `cargo mcpp pack`), read relative to the executable, or below `MCPP_SIDECAR_DIR`; a
/// missing file is an error naming the path tried; an edit rewrites the file.
#[test]
fn sidecar_storage_reads_the_file_beside_the_executable_or_the_override_and_names_a_missing_one() {
    let pkg = storage_package("sidecar");
    let outcome = pkg.compile(&pkg.build());
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(pkg.out_dir().join("mcpp-sidecars.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["version"], 1);
    let list = json["sidecars"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{json}");
    let a = list
        .iter()
        .find(|s| s["relative"] == "mcpp-data/store-app/a/scale_comp.spv")
        .unwrap_or_else(|| panic!("{json}"));
    let source = PathBuf::from(a["source"].as_str().unwrap());
    assert!(source.is_absolute());
    assert_eq!(std::fs::read(&source).unwrap(), payload(&pkg));
    let artifacts = pkg.out_dir().join("artifacts");
    assert_eq!(
        source,
        artifacts.join("mcpp-data/store-app/a/scale_comp.spv")
    );

    // Beside the executable: the program in the artifact directory finds it.
    let exe = artifacts.join("prog");
    assert_eq!(
        printed(rust_program(&pkg, &outcome, &exe, &[])),
        format!("{}\n", hex(&payload(&pkg)))
    );
    // Elsewhere, through the override.
    let moved = pkg.dir.path().join("elsewhere/prog");
    assert_eq!(
        printed(rust_program(
            &pkg,
            &outcome,
            &moved,
            &[("MCPP_SIDECAR_DIR", &artifacts)]
        )),
        format!("{}\n", hex(&payload(&pkg)))
    );
    // Elsewhere without it: the error names the path tried.
    let out = rust_program(&pkg, &outcome, &moved, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let tried = moved
        .parent()
        .unwrap()
        .join("mcpp-data/store-app/a/scale_comp.spv");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "cannot read the sidecar payload {}",
            tried.display()
        )),
        "{}",
        text(&out)
    );

    // An edit rewrites the sidecar.
    let before = payload(&pkg);
    edit(
        &pkg.path("shaders/a/scale.comp"),
        "data[i] = transform(data[i]);",
        "data[i] = transform(data[i]) * 2.0 + 1.0;",
    );
    let outcome = pkg.compile(&pkg.build());
    assert_ne!(payload(&pkg), before);
    assert_eq!(std::fs::read(&source).unwrap(), payload(&pkg));
    assert_eq!(
        printed(rust_program(&pkg, &outcome, &exe, &[])),
        format!("{}\n", hex(&payload(&pkg)))
    );
}

/// Switching the storage form and back rebuilds what it must: after each step, with an edit of
/// the shader between steps, the program reads the bytes a clean build would embed.
#[test]
fn switching_storage_leaves_no_stale_bytes() {
    let pkg = storage_package("header");
    let mut b = pkg.build();
    b.env("CXX", real_tool("g++"));
    let exe = pkg.out_dir().join("artifacts/prog");
    for (i, storage) in ["header", "object", "sidecar", "header", "object"]
        .into_iter()
        .enumerate()
    {
        set_storage(&pkg, storage);
        pkg.write(
            "shaders/a/scale.comp",
            &SCALE_COMP.replace(
                "data[i] = transform(data[i])",
                &format!("data[i] = {}.0 + transform(data[i])", i + 2),
            ),
        );
        let outcome = pkg.compile(&b);
        // A clean build of the same sources.
        let clean = storage_package(storage);
        clean.write("shaders/a/scale.comp", &pkg.read("shaders/a/scale.comp"));
        let mut cb = clean.build();
        cb.env("CXX", real_tool("g++"));
        clean.compile(&cb);
        assert_eq!(payload(&pkg), payload(&clean), "{storage}");
        assert_eq!(
            printed(rust_program(&pkg, &outcome, &exe, &[])),
            format!("{}\n", hex(&payload(&clean))),
            "step {i}: {storage}"
        );
        let json = std::fs::read_to_string(pkg.out_dir().join("mcpp-sidecars.json")).unwrap();
        assert_eq!(
            json.contains("scale_comp"),
            storage == "sidecar",
            "{storage}: {json}"
        );
    }
}

/// The C and C++ accessors under object and sidecar storage (a `.c` unit including the header,
/// `modules = false`): the bytes of the payload; a missing sidecar gives null and size 0 and
/// one line naming the path.
#[test]
fn c_accessors_read_object_and_sidecar_storage_and_a_missing_sidecar_is_null() {
    for storage in ["object", "sidecar"] {
        let pkg = storage_package(storage);
        let manifest_text = pkg.read("Cargo.toml").replace(
            "storage = ",
            "modules = false\ncxx-sources = [\"cpp/use.c\"]\nstorage = ",
        );
        pkg.write("Cargo.toml", &manifest_text);
        pkg.write(
            "cpp/use.c",
            "#include \"store_app.shaders.h\"\n#include <stdio.h>\nint dump(void) {\n  const unsigned char* p = (const unsigned char*)mcpp_embed_9store_app7shaders1a10scale_comp_data();\n  unsigned long n = mcpp_embed_9store_app7shaders1a10scale_comp_size();\n  if (p == 0) { printf(\"null %lu\\n\", n); return 1; }\n  for (unsigned long i = 0; i < n; ++i) printf(\"%02x\", p[i]);\n  printf(\"\\n\");\n  return 0;\n}\n",
        );
        let mut b = pkg.build();
        b.env("CXX", real_tool("g++"));
        let outcome = pkg.compile(&b);
        let dir = pkg.out_dir().join("artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            pkg.dir.path().join("main.c"),
            "int dump(void);\nint main(void) { return dump(); }\n",
        )
        .unwrap();
        let lines = outcome.cargo.lines();
        let search = lines
            .iter()
            .find_map(|l| l.strip_prefix("cargo::rustc-link-search=native="))
            .unwrap();
        let lib = lines
            .iter()
            .find_map(|l| l.strip_prefix("cargo::rustc-link-lib=static="))
            .unwrap();
        let exe = dir.join("cprog");
        let out = Command::new(real_tool("g++"))
            .args(["-x", "c"])
            .arg(pkg.dir.path().join("main.c"))
            .args(["-x", "none"])
            .arg(Path::new(search).join(format!("lib{lib}.a")))
            .arg("-lstdc++")
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(
            printed(Command::new(&exe).output().unwrap()),
            format!("{}\n", hex(&payload(&pkg))),
            "{storage}"
        );
        if storage == "sidecar" {
            std::fs::remove_file(dir.join("mcpp-data/store-app/a/scale_comp.spv")).unwrap();
            let out = Command::new(&exe).output().unwrap();
            assert_eq!(
                (
                    out.status.code(),
                    String::from_utf8_lossy(&out.stdout).into_owned()
                ),
                (Some(1), "null 0\n".to_string())
            );
            assert!(
                String::from_utf8_lossy(&out.stderr).contains(&format!(
                    "the sidecar payload {} is missing",
                    dir.join("mcpp-data/store-app/a/scale_comp.spv").display()
                )),
                "{}",
                text(&out)
            );
        }
    }
}

/// An unknown storage form is refused at its `file:line:col`, naming the accepted ones.
#[test]
fn an_unknown_storage_is_refused_naming_the_forms() {
    let pkg = storage_package("disk");
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("storage")
            && e.contains("header")
            && e.contains("object")
            && e.contains("sidecar"),
        "{e}"
    );
    assert!(e.contains("Cargo.toml:9:"), "{e}");
}

/// PTX-like text of `size` bytes (distinct lines, as a kernel library's PTX is).
fn ptx_text(size: usize) -> String {
    let mut s = String::from("//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_80\n.address_size 64\n\n");
    let mut i = 0u64;
    while s.len() < size {
        s.push_str(&format!(
            "\tfma.rn.f32 \t%f{}, %f{}, %f{}, 0f3F800000; // {i:x}\n",
            i % 977,
            (i * 7) % 977,
            (i * 13) % 977
        ));
        i += 1;
    }
    s.truncate(size);
    s
}

/// FNV-1a of `b`, the checksum the program prints.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A 6 MiB PTX-sized text payload and a 5 MiB cubin-sized bytes payload (NUL bytes inside), as
/// tools-embed files, under each storage form: rustc compiles the surface with `-D warnings`
/// (no lint to allow, no long const evaluation) and the program reads exactly the files' bytes,
/// the text NUL-terminated.
#[test]
fn multi_megabyte_text_and_bytes_payloads_build_and_read_back_under_every_storage_form() {
    let ptx = ptx_text(6 << 20);
    let blob: Vec<u8> = (0..5u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    assert!(blob.contains(&0));
    let want = format!(
        "{} {} {} {}\n",
        ptx.len(),
        fnv(ptx.as_bytes()),
        blob.len(),
        fnv(&blob)
    );
    for storage in ["header", "object", "sidecar"] {
        let mcpp = format!("storage = \"{storage}\"\n\n[package.metadata.mcpp.embed]\nfiles = [{{ glob = \"data/*.ptx\", nul = true }}, \"data/*.cubin\"]");
        let pkg = Package::new(&[("Cargo.toml", &manifest("big-app", &mcpp))]);
        std::fs::create_dir_all(pkg.path("data")).unwrap();
        std::fs::write(pkg.path("data/kernels.ptx"), &ptx).unwrap();
        std::fs::write(pkg.path("data/kernels.cubin"), &blob).unwrap();
        let outcome = pkg.compile(&pkg.build());
        let unwrap = if storage == "sidecar" {
            ".unwrap()"
        } else {
            ""
        };
        let main = format!(
            "fn fnv(b: &[u8]) -> u64 {{ b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)) }}\n\
             fn main() {{\n    let t = shaders::kernels_ptx(){unwrap};\n    let b = shaders::kernels_cubin(){unwrap};\n\
             \x20   assert_eq!(t.c_str.to_bytes(), t.text.as_bytes());\n    assert_eq!(b.bytes.as_ptr() as usize % 16, 0);\n\
             \x20   println!(\"{{}} {{}} {{}} {{}}\", t.text.len(), fnv(t.text.as_bytes()), b.bytes.len(), fnv(b.bytes));\n}}\n"
        );
        let exe = pkg.dir.path().join("bin/big");
        let took = compile_program(&pkg, &outcome, &exe, &main);
        let out = Command::new(&exe)
            .env("MCPP_SIDECAR_DIR", pkg.out_dir().join("artifacts"))
            .output()
            .unwrap();
        assert_eq!(printed(out), want, "{storage}");
        eprintln!("{storage}: rustc took {took:?}");
    }
}

/// Header storage writes the C arrays (`mcpp/data/**.h`, in OUT_DIR and the variant's
/// `surface/`) only when a C/C++ unit of the package compiles them: a Rust-only package gets the
/// payload copies alone (the Rust program still reads the compiled bytes), and its
/// implementation unit says why; adding a `cxx-sources` unit writes the arrays, holding the
/// same bytes, and removing it again removes them.
#[test]
fn header_storage_writes_c_arrays_only_for_a_cxx_unit() {
    let pkg = storage_package("header");
    let outcome = pkg.compile(&pkg.build());
    let arrays = |pkg: &Package| -> Vec<PathBuf> {
        let mut out = harness::walk(&pkg.out_dir().join("mcpp/data"));
        out.extend(harness::walk(&pkg.work_dir()).into_iter().filter(|f| {
            f.components().any(|c| c.as_os_str() == "data")
                && f.extension().is_some_and(|e| e == "h")
        }));
        out
    };
    assert_eq!(
        arrays(&pkg),
        Vec::<PathBuf>::new(),
        "no C/C++ unit, no C arrays"
    );
    let body =
        std::fs::read_to_string(pkg.out_dir().join("mcpp/store_app.shaders.impl.cpp")).unwrap();
    assert!(
        body.contains("no C/C++ unit of the package compiles")
            && !body.contains("#include \"data/"),
        "{body}"
    );
    let exe = pkg.dir.path().join("bin/prog");
    assert_eq!(
        printed(rust_program(&pkg, &outcome, &exe, &[])),
        format!("{}\n", hex(&payload(&pkg)))
    );

    // A C++ unit: the arrays appear, with the payload's words.
    let text = pkg.read("Cargo.toml");
    pkg.write("cpp/use.cpp", "extern \"C\" int one() { return 1; }\n");
    pkg.write(
        "Cargo.toml",
        &text.replace(
            "storage = \"header\"",
            "storage = \"header\"\ncxx-sources = [\"cpp/use.cpp\"]",
        ),
    );
    pkg.compile(&pkg.build());
    let data = std::fs::read_to_string(pkg.out_dir().join("mcpp/data/a/scale_comp.h")).unwrap();
    let words: Vec<u32> = payload(&pkg)
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert!(
        words.iter().all(|w| data.contains(&format!("0x{w:08x}u"))),
        "{data}"
    );
    assert_eq!(
        arrays(&pkg).len(),
        4,
        "both shaders, in OUT_DIR and the variant: {:?}",
        arrays(&pkg)
    );

    // Without it again, the arrays go.
    pkg.write("Cargo.toml", &text);
    pkg.compile(&pkg.build());
    assert_eq!(arrays(&pkg), Vec::<PathBuf>::new());
}
