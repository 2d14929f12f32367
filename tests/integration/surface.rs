//! The generated surface: naming snapshots (nested directories, a keyword directory, a name
//! starting with a digit, dashes in the package name) and the C++ module / C header compiled
//! and linked by real compilers (clang++-19 `--precompile`, g++ `-fmodules-ts`, gcc for C).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::process::Command;

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
const FRAG: &str =
    "#version 450\nlayout(location = 0) out vec4 color;\nvoid main() { color = vec4(1.0); }\n";

/// The naming package. Its one C++ unit (using nothing of the surface) makes header storage
/// write the C arrays, which the tests below compile outside the crate.
fn naming_package(modules: bool) -> Package {
    let m = manifest(
        "my-shader-app",
        &format!("accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\", \"shaders/**/*.frag\"]\nmodules = {modules}\ncxx-sources = [\"cpp/host.cpp\"]"),
    );
    Package::new(&[
        ("Cargo.toml", &m),
        (
            "cpp/host.cpp",
            "extern \"C\" int host_one() { return 1; }\n",
        ),
        ("shaders/blur.comp", COMP),
        ("shaders/a/scale.comp", COMP),
        (
            "shaders/b/scale.comp",
            "#version 450\nlayout(local_size_x = 2) in;\nvoid main() {}\n",
        ),
        ("shaders/default/x.comp", COMP),
        ("shaders/type/mesh.comp", COMP),
        ("shaders/effects/post/3d-tone.frag", FRAG),
    ])
}

/// Every generated file but the byte-carrying ones (data headers, payload copies), paths made stable.
fn uber(pkg: &Package) -> String {
    let mut files: Vec<_> = walk(&pkg.out_dir())
        .into_iter()
        .filter(|p| {
            !p.to_string_lossy().contains("/data/")
                && !p.to_string_lossy().contains("/mcpp/payloads/")
        })
        .collect();
    files.sort();
    let mut out = String::new();
    for f in files {
        let rel = f.strip_prefix(pkg.out_dir()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&f)
            .unwrap()
            .replace(&pkg.work_dir().display().to_string(), "[WORK]")
            .replace(&pkg.out_dir().display().to_string(), "[OUT]");
        let text = regex_variant(&text);
        out.push_str(&format!("===== {rel}\n{text}\n"));
    }
    out
}

/// The variant directory is a hash of the accelerator set; show it as [VARIANT].
fn regex_variant(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("[WORK]/") {
        out.push_str(&rest[..i + 7]);
        rest = &rest[i + 7..];
        if rest.len() >= 16 && rest[..16].chars().all(|c| c.is_ascii_hexdigit()) {
            out.push_str("[VARIANT]");
            rest = &rest[16..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn naming_snapshot_module_surface() {
    let pkg = naming_package(true);
    pkg.compile(&pkg.build());
    insta::assert_snapshot!("module_surface", uber(&pkg));
}

#[test]
fn naming_snapshot_header_surface() {
    let pkg = naming_package(false);
    pkg.compile(&pkg.build());
    insta::assert_snapshot!("header_surface", uber(&pkg));
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const CONSUMER: &str = r#"import my_shader_app.shaders;
extern "C" int printf(const char*, ...);
int main() {
    auto a = my_shader_app::shaders::a::scale_comp();
    auto d = my_shader_app::shaders::default_::x_comp();
    auto t = my_shader_app::shaders::effects::post::_3d_tone_frag();
    auto m = my_shader_app::shaders::type_::mesh_comp();
    if (a.code[0] != 0x07230203u || d.code[0] != 0x07230203u) return 1;
    printf("%lu %lu %lu %lu\n", a.size_bytes, d.size_bytes, t.size_bytes, m.size_bytes);
    return 0;
}
"#;

fn expected_sizes(pkg: &Package) -> String {
    let size = |s: &str| pkg.embedded_bytes(s).len();
    format!(
        "{} {} {} {}\n",
        size("shaders/a/scale.comp"),
        size("shaders/default/x.comp"),
        size("shaders/effects/post/3d-tone.frag"),
        size("shaders/type/mesh.comp")
    )
}

#[test]
fn the_cpp_module_compiles_and_links_with_clang_19() {
    let pkg = naming_package(true);
    pkg.compile(&pkg.build());
    let dir = pkg.out_dir().join("mcpp");
    let cxx = real_tool("clang++-19");
    std::fs::write(dir.join("consumer.cpp"), CONSUMER).unwrap();
    let c = |args: &[&str]| run(Command::new(&cxx).args(args).current_dir(&dir));
    c(&[
        "-std=c++20",
        "-x",
        "c++-module",
        "--precompile",
        "my_shader_app.shaders.cppm",
        "-o",
        "m.pcm",
    ]);
    c(&[
        "-std=c++20",
        "-fmodule-file=my_shader_app.shaders=m.pcm",
        "-c",
        "consumer.cpp",
        "-o",
        "consumer.o",
    ]);
    c(&["-std=c++20", "-c", "m.pcm", "-o", "m.o"]);
    c(&[
        "-std=c++20",
        "-c",
        "my_shader_app.shaders.impl.cpp",
        "-o",
        "impl.o",
    ]);
    c(&["consumer.o", "m.o", "impl.o", "-o", "consumer"]);
    assert_eq!(
        run(&mut Command::new(dir.join("consumer"))),
        expected_sizes(&pkg)
    );
}

#[test]
fn the_cpp_module_compiles_and_links_with_gxx_modules_ts() {
    let pkg = naming_package(true);
    pkg.compile(&pkg.build());
    let dir = pkg.out_dir().join("mcpp");
    let cxx = real_tool("g++");
    std::fs::write(dir.join("consumer.cpp"), CONSUMER).unwrap();
    let c = |args: &[&str]| run(Command::new(&cxx).args(args).current_dir(&dir));
    c(&[
        "-std=c++20",
        "-fmodules-ts",
        "-x",
        "c++",
        "-c",
        "my_shader_app.shaders.cppm",
        "-o",
        "m.o",
    ]);
    c(&[
        "-std=c++20",
        "-fmodules-ts",
        "-c",
        "consumer.cpp",
        "-o",
        "consumer.o",
    ]);
    c(&[
        "-std=c++20",
        "-c",
        "my_shader_app.shaders.impl.cpp",
        "-o",
        "impl.o",
    ]);
    c(&["consumer.o", "m.o", "impl.o", "-o", "consumer"]);
    assert_eq!(
        run(&mut Command::new(dir.join("consumer"))),
        expected_sizes(&pkg)
    );
}

#[test]
fn the_header_surface_serves_c_and_cpp() {
    let pkg = naming_package(false);
    pkg.compile(&pkg.build());
    let dir = pkg.out_dir().join("mcpp");
    std::fs::write(
        dir.join("c_consumer.c"),
        "#include \"my_shader_app.shaders.h\"\n#include <stdio.h>\nint main(void) {\n  const unsigned int* w = mcpp_embed_13my_shader_app7shaders1a10scale_comp_data();\n  if (w[0] != 0x07230203u) return 1;\n  printf(\"%lu\\n\", mcpp_embed_13my_shader_app7shaders1a10scale_comp_size());\n  return 0;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cpp_consumer.cpp"),
        "#include \"my_shader_app.shaders.h\"\n#include <cstdio>\nint main() {\n  auto p = my_shader_app::shaders::default_::x_comp();\n  std::printf(\"%lu\\n\", p.size_bytes);\n  return p.code[0] == 0x07230203u ? 0 : 1;\n}\n",
    )
    .unwrap();
    let gcc = real_tool("gcc");
    let gxx = real_tool("g++");
    run(Command::new(&gxx)
        .args(["-c", "my_shader_app.shaders.impl.cpp", "-o", "impl.o"])
        .current_dir(&dir));
    run(Command::new(&gcc)
        .args([
            "-std=c11",
            "-Wall",
            "-Werror",
            "-c",
            "c_consumer.c",
            "-o",
            "c.o",
        ])
        .current_dir(&dir));
    run(Command::new(&gxx)
        .args(["c.o", "impl.o", "-o", "c_consumer"])
        .current_dir(&dir));
    run(Command::new(&gxx)
        .args([
            "-std=c++17",
            "cpp_consumer.cpp",
            "impl.o",
            "-o",
            "cpp_consumer",
        ])
        .current_dir(&dir));
    assert_eq!(
        run(&mut Command::new(dir.join("c_consumer"))),
        format!("{}\n", pkg.embedded_bytes("shaders/a/scale.comp").len())
    );
    assert_eq!(
        run(&mut Command::new(dir.join("cpp_consumer"))),
        format!("{}\n", pkg.embedded_bytes("shaders/default/x.comp").len())
    );
}

#[test]
fn the_module_interface_is_std_free() {
    let pkg = naming_package(true);
    pkg.compile(&pkg.build());
    let text =
        std::fs::read_to_string(pkg.out_dir().join("mcpp/my_shader_app.shaders.cppm")).unwrap();
    assert!(
        !text.contains("std::") && !text.contains("#include"),
        "{text}"
    );
}

#[test]
fn the_rust_surface_compiles_and_returns_aligned_words() {
    // Compile the generated Rust with rustc into a tiny program and run it.
    let pkg = naming_package(true);
    pkg.compile(&pkg.build());
    let main = pkg.out_dir().join("main.rs");
    std::fs::write(
        &main,
        format!(
            "mod shaders {{ include!({:?}); }}\nfn main() {{\n    let p = shaders::default_::x_comp();\n    assert_eq!(p.code[0], 0x0723_0203);\n    assert_eq!(p.code.as_ptr() as usize % 4, 0);\n    assert_eq!(p.size_bytes, p.code.len() * 4);\n    let t = shaders::effects::post::_3d_tone_frag();\n    let m = shaders::type_::mesh_comp();\n    println!(\"{{}} {{}} {{}} {{}}\", shaders::all().len(), p.size_bytes, t.source, m.source);\n}}\n",
            pkg.out_dir().join("mcpp_shaders.rs").display().to_string()
        ),
    )
    .unwrap();
    let exe = pkg.out_dir().join("surface-main");
    run(Command::new("rustc")
        .args(["--edition", "2021", "-D", "warnings", "-o"])
        .arg(&exe)
        .arg(&main));
    let printed = run(&mut Command::new(&exe));
    assert_eq!(
        printed,
        format!(
            "6 {} shaders/effects/post/3d-tone.frag shaders/type/mesh.comp\n",
            pkg.embedded_bytes("shaders/default/x.comp").len()
        )
    );
}

fn base_package(mcpp_extra: &str) -> Package {
    Package::new(&[
        (
            "Cargo.toml",
            &manifest(
                "base-app",
                &format!("accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\"]\n{mcpp_extra}"),
            ),
        ),
        ("shaders/a/one.comp", COMP),
    ])
}

fn warnings(outcome: &cargo_mcpp::pipeline::Outcome) -> Vec<String> {
    outcome.cargo.warnings().map(str::to_string).collect()
}

#[test]
fn a_moved_derived_base_is_warned_with_what_moved_and_the_key_to_pin_it() {
    let pkg = base_package("");
    let first = pkg.compile(&pkg.build());
    assert!(
        pkg.rust_surface()
            .contains("\npub fn one_comp() -> Payload {"),
        "{}",
        pkg.rust_surface()
    );
    assert_eq!(warnings(&first), Vec::<String>::new());
    let record = first.variant_dir.join("surface-base");
    assert_eq!(std::fs::read_to_string(&record).unwrap(), "shaders/a\n");

    // A new payload elsewhere moves the derived base: `one_comp()` becomes `a::one_comp()`.
    pkg.write("shaders/b/x.comp", COMP);
    // `cargo mcpp build` runs the device phase without a surface first; the build script it
    // then runs must still see the move (only a surface-generating run records the base).
    let mut config = pkg.build().config().unwrap();
    config.out_dir = None;
    cargo_mcpp::pipeline::run(&config, &cargo_mcpp::engine::graph::Silent, None).unwrap();
    assert_eq!(std::fs::read_to_string(&record).unwrap(), "shaders/a\n");
    let moved = pkg.compile(&pkg.build());
    assert!(
        pkg.rust_surface().contains("pub mod a {")
            && pkg
                .rust_surface()
                .contains("    pub fn one_comp() -> super::Payload {"),
        "{}",
        pkg.rust_surface()
    );
    assert_eq!(
        warnings(&moved),
        [
            "the surface's base directory moved from `shaders/a` to `shaders` (derived: the shallowest directory all payloads share), so accessors were renamed: `one_comp()` is now `a::one_comp()`",
            "pin it in [package.metadata.mcpp]: base-dir = \"shaders\" keeps these names from now on (base-dir = \"shaders/a\" would keep the old ones if every payload were under it; `shaders/b/x.comp` is not)",
        ]
    );
    assert!(moved.cargo.lines().iter().any(|l| l == "cargo::warning=cargo-mcpp: pin it in [package.metadata.mcpp]: base-dir = \"shaders\" keeps these names from now on (base-dir = \"shaders/a\" would keep the old ones if every payload were under it; `shaders/b/x.comp` is not)"));
    assert_eq!(std::fs::read_to_string(&record).unwrap(), "shaders\n");
    // Warned once: the next build names payloads by the recorded base.
    assert_eq!(warnings(&pkg.compile(&pkg.build())), Vec::<String>::new());

    // Removing it moves the base back; the old base holds every payload, so pinning it restores.
    std::fs::remove_file(pkg.path("shaders/b/x.comp")).unwrap();
    let back = pkg.compile(&pkg.build());
    assert_eq!(
        warnings(&back),
        [
            "the surface's base directory moved from `shaders` to `shaders/a` (derived: the shallowest directory all payloads share), so accessors were renamed: `a::one_comp()` is now `one_comp()`",
            "pin it in [package.metadata.mcpp]: base-dir = \"shaders\" brings the old names back (base-dir = \"shaders/a\" keeps the new ones)",
        ]
    );
}

#[test]
fn base_dir_pins_the_names_in_rust_cpp_and_c_without_a_warning() {
    let pkg = base_package("base-dir = \"shaders\"\nmodules = false");
    pkg.compile(&pkg.build());
    assert!(
        pkg.rust_surface().contains("pub mod a {"),
        "{}",
        pkg.rust_surface()
    );
    pkg.write("shaders/b/x.comp", COMP);
    pkg.write("shaders/a/deep/y.comp", COMP);
    let out = pkg.compile(&pkg.build());
    assert_eq!(warnings(&out), Vec::<String>::new());
    let rust = pkg.rust_surface();
    assert!(
        rust.contains("pub mod a {")
            && rust.contains("\n    pub mod deep {")
            && rust.contains("pub mod b {"),
        "{rust}"
    );
    let header = std::fs::read_to_string(pkg.out_dir().join("mcpp/base_app.shaders.h")).unwrap();
    assert!(header.contains("namespace a {\ninline payload one_comp() { return { mcpp_embed_8base_app7shaders1a8one_comp_data(), mcpp_embed_8base_app7shaders1a8one_comp_size() }; }"), "{header}");
    assert!(
        header.contains("const unsigned int* mcpp_embed_8base_app7shaders1b6x_comp_data(void);"),
        "{header}"
    );
    // The module surface follows the same base.
    pkg.write("Cargo.toml", &manifest("base-app", "accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\"]\nbase-dir = \"shaders/a\"\nmodules = true"));
    std::fs::remove_file(pkg.path("shaders/b/x.comp")).unwrap();
    pkg.compile(&pkg.build());
    let module = std::fs::read_to_string(pkg.out_dir().join("mcpp/base_app.shaders.cppm")).unwrap();
    assert!(
        module.contains("\ninline payload one_comp() {")
            && module.contains("namespace deep {\ninline payload y_comp() {"),
        "{module}"
    );
    assert!(
        pkg.rust_surface()
            .contains("\npub fn one_comp() -> Payload {"),
        "{}",
        pkg.rust_surface()
    );
}

#[test]
fn a_bad_base_dir_or_a_payload_outside_it_is_refused_naming_the_key_and_line() {
    let cases = [
        ("\"\"", "`base-dir` is empty"),
        (
            "\"/abs/shaders\"",
            "`base-dir = \"/abs/shaders\"` is absolute",
        ),
        (
            "\"shaders/../..\"",
            "`base-dir = \"shaders/../..\"` contains `..`",
        ),
        (
            "\"shaderz\"",
            "`base-dir = \"shaderz\"` is not a directory of the package",
        ),
        (
            "\"shaders/b\"",
            "the device source `shaders/a/one.comp` is outside `base-dir = \"shaders/b\"`",
        ),
    ];
    for (value, expected) in cases {
        let pkg = base_package(&format!("base-dir = {value}"));
        std::fs::create_dir_all(pkg.path("shaders/b")).unwrap();
        let e = pkg.refuse(&pkg.build());
        assert!(e.starts_with(expected), "{value}: {e}");
        assert!(
            e.contains(&format!(
                "--> {}:9 (key `package.metadata.mcpp.base-dir`)",
                pkg.path("Cargo.toml").display()
            )),
            "{value}: {e}"
        );
        assert!(e.contains("help: "), "{e}");
        let log = pkg.compiles("glslangValidator");
        assert!(log.is_empty(), "{value}: refused before compiling: {log:?}");
    }
    let pkg = base_package("base-dir = \"shaders/b\"");
    std::fs::create_dir_all(pkg.path("shaders/b")).unwrap();
    assert!(pkg.refuse(&pkg.build()).contains("help: set base-dir to a directory holding every device source (base-dir = \"shaders/a\" does), or move `shaders/a/one.comp` under `shaders/b`"));
}

/// A surface of one bytes payload (`data/w.bin`) and one text payload (`k.ptx`) under `dir`,
/// fed to the generator directly (no rule hands these kinds yet), with the hashes the device
/// phase would have verified.
fn kinds_surface(dir: &std::path::Path, modules: bool) -> cargo_mcpp::surface::Generated {
    use cargo_mcpp::surface::{self, Payload, SurfaceOptions};
    let payloads = [
        (
            "data",
            Payload::bytes("data/w.bin", "w_bin", dir.join("data/w.bin")),
        ),
        ("cuda", Payload::text("k.cu", "k_ptx", dir.join("k.ptx"))),
    ];
    let items = surface::name_payloads(&payloads, &[]).unwrap();
    let verified = payloads
        .iter()
        .map(|(_, p)| {
            (
                p.path.clone(),
                cargo_mcpp::engine::fingerprint::hash_file(&p.path).unwrap(),
            )
        })
        .collect();
    let out = dir.join("out");
    let opts = SurfaceOptions {
        package_name: "kinds".into(),
        module_name: "kinds.shaders".into(),
        modules,
        cpp_dir: out.join("mcpp"),
        rust_file: out.join("mcpp_shaders.rs"),
        payload_dir: out.join("mcpp/payloads"),
        verified,
        cpp_mirror: None,
        storage: surface::Storage::Header,
        object_format: surface::ObjectFormat::Elf,
        artifact_dir: out.join("artifacts"),
        cxx: true,
    };
    surface::generate(&items, &opts).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The generated Rust of a bytes and a text payload, compiled by rustc and run: what it reads
/// back is the files' bytes (the bytes 16-byte aligned, the text and its NUL-terminated form
/// one and the same), and after an edit of each file it is the new bytes.
#[test]
fn bytes_and_text_payloads_read_back_in_rust_as_the_files_bytes_and_follow_an_edit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("data")).unwrap();
    let main = d.join("main.rs");
    std::fs::write(
        &main,
        format!(
            r#"mod shaders {{ include!({:?}); }}
fn hex(b: &[u8]) -> String {{ b.iter().map(|x| format!("{{x:02x}}")).collect() }}
fn main() {{
    let b = shaders::data::w_bin();
    assert_eq!(b.bytes.as_ptr() as usize % 16, 0, "16-byte aligned");
    let t = shaders::k_ptx();
    assert_eq!(t.c_str.to_bytes(), t.text.as_bytes());
    assert_eq!(t.c_str.to_bytes_with_nul().as_ptr(), t.text.as_ptr(), "one copy of the text");
    assert_eq!((shaders::all().len(), shaders::all_bytes()[0], shaders::all_text()[0]), (0, b, t));
    println!("{{}} {{}} {{}} {{}}", hex(b.bytes), hex(t.text.as_bytes()), b.source, t.source);
}}
"#,
            d.join("out/mcpp_shaders.rs").display().to_string()
        ),
    )
    .unwrap();
    let exe = d.join("kinds-main");
    let read_back = |bytes: &[u8], text: &str| {
        std::fs::write(d.join("data/w.bin"), bytes).unwrap();
        std::fs::write(d.join("k.ptx"), text).unwrap();
        kinds_surface(d, true);
        run(Command::new("rustc")
            .args(["--edition", "2021", "-D", "warnings", "-o"])
            .arg(&exe)
            .arg(&main));
        let printed = run(&mut Command::new(&exe));
        assert_eq!(
            printed,
            format!("{} {} data/w.bin k.cu\n", hex(bytes), hex(text.as_bytes()))
        );
    };
    read_back(
        &[0, 1, 0xff, 0x80, 0x7f, 0, 0, 9],
        ".version 8.0\n// ∑ sum\n",
    );
    // An edit of each file, of another length: the bytes read back follow it.
    read_back(&[0xca, 0xfe, 0], ".version 8.1\n.target sm_90\n");
}

/// The C header of a bytes and a text payload, compiled by gcc (C) and g++ (C++): the bytes are
/// the file's, 16-byte aligned; the text is NUL-terminated and its size leaves the NUL out.
/// And the C++ module of the same surface, compiled by g++ `-fmodules-ts`.
#[test]
fn bytes_and_text_payloads_serve_c_and_cpp() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("data")).unwrap();
    let (bytes, text) = ([0x00u8, 0xff, 0x10, 0x80], ".version 8.0\n// ∑\n");
    std::fs::write(d.join("data/w.bin"), bytes).unwrap();
    std::fs::write(d.join("k.ptx"), text).unwrap();
    let (gcc, gxx) = (real_tool("gcc"), real_tool("g++"));
    let expected = format!("{} {} {}|{text}|\n", hex(&bytes), bytes.len(), text.len());

    kinds_surface(d, false);
    let mcpp = d.join("out/mcpp");
    std::fs::write(
        mcpp.join("c.c"),
        "#include \"kinds.shaders.h\"\n#include <stdio.h>\n#include <string.h>\nint main(void) {\n  const unsigned char* b = mcpp_embed_5kinds7shaders4data5w_bin_data();\n  unsigned long n = mcpp_embed_5kinds7shaders4data5w_bin_size();\n  if ((unsigned long)b % 16 != 0) return 1;\n  for (unsigned long i = 0; i < n; i++) printf(\"%02x\", b[i]);\n  const char* t = mcpp_embed_5kinds7shaders5k_ptx_data();\n  if (strlen(t) != mcpp_embed_5kinds7shaders5k_ptx_size()) return 2;\n  printf(\" %lu %lu|%s|\\n\", n, mcpp_embed_5kinds7shaders5k_ptx_size(), t);\n  return 0;\n}\n",
    )
    .unwrap();
    std::fs::write(
        mcpp.join("cpp.cpp"),
        "#include \"kinds.shaders.h\"\n#include <cstdio>\n#include <cstring>\nint main() {\n  kinds::shaders::bytes_payload b = kinds::shaders::data::w_bin();\n  kinds::shaders::text_payload t = kinds::shaders::k_ptx();\n  if (reinterpret_cast<unsigned long>(b.data) % 16 != 0 || std::strlen(t.text) != t.size_bytes) return 1;\n  for (unsigned long i = 0; i < b.size_bytes; i++) std::printf(\"%02x\", b.data[i]);\n  std::printf(\" %lu %lu|%s|\\n\", b.size_bytes, t.size_bytes, t.text);\n  return 0;\n}\n",
    )
    .unwrap();
    run(Command::new(&gxx)
        .args(["-c", "kinds.shaders.impl.cpp", "-o", "impl.o"])
        .current_dir(&mcpp));
    run(Command::new(&gcc)
        .args(["-std=c11", "-Wall", "-Werror", "-c", "c.c", "-o", "c.o"])
        .current_dir(&mcpp));
    run(Command::new(&gxx)
        .args(["c.o", "impl.o", "-o", "c_consumer"])
        .current_dir(&mcpp));
    run(Command::new(&gxx)
        .args([
            "-std=c++17",
            "-Wall",
            "-Werror",
            "cpp.cpp",
            "impl.o",
            "-o",
            "cpp_consumer",
        ])
        .current_dir(&mcpp));
    assert_eq!(run(&mut Command::new(mcpp.join("c_consumer"))), expected);
    assert_eq!(run(&mut Command::new(mcpp.join("cpp_consumer"))), expected);

    std::fs::remove_dir_all(d.join("out")).unwrap();
    let g = kinds_surface(d, true);
    let module = std::fs::read_to_string(&g.interface_file).unwrap();
    assert!(
        !module.contains("std::") && !module.contains("#include"),
        "the module interface stays std-free: {module}"
    );
    std::fs::write(
        mcpp.join("consumer.cpp"),
        "import kinds.shaders;\nextern \"C\" int printf(const char*, ...);\nint main() {\n  auto b = kinds::shaders::data::w_bin();\n  auto t = kinds::shaders::k_ptx();\n  for (unsigned long i = 0; i < b.size_bytes; i++) printf(\"%02x\", b.data[i]);\n  printf(\" %lu %lu|%s|\\n\", b.size_bytes, t.size_bytes, t.text);\n  return t.text[t.size_bytes] == 0 ? 0 : 1;\n}\n",
    )
    .unwrap();
    let c = |args: &[&str]| run(Command::new(&gxx).args(args).current_dir(&mcpp));
    c(&[
        "-std=c++20",
        "-fmodules-ts",
        "-x",
        "c++",
        "-c",
        "kinds.shaders.cppm",
        "-o",
        "m.o",
    ]);
    c(&[
        "-std=c++20",
        "-fmodules-ts",
        "-c",
        "consumer.cpp",
        "-o",
        "consumer.o",
    ]);
    c(&["-std=c++20", "-c", "kinds.shaders.impl.cpp", "-o", "impl.o"]);
    c(&["consumer.o", "m.o", "impl.o", "-o", "consumer"]);
    assert_eq!(run(&mut Command::new(mcpp.join("consumer"))), expected);
}
