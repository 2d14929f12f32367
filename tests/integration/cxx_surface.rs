//! The payload surface used inside the crate (the C++ and C surfaces work inside the
//! crate): a `cxx-sources` unit imports `<pkg>.shaders` (the generated interface compiled in
//! module order with the crate's units, its implementation unit compiled and archived), and
//! under `modules = false` a C unit and a C++ unit include the generated header; the lane's
//! archive is linked into a program that prints what the accessors return, compared with the
//! embedded bytes. A payload edit recompiles only the implementation unit (compiler starts
//! counted through a recording wrapper).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A package with the example's two `scale.comp` shaders and the given host units.
fn surface_package(modules: bool, units: &[(&str, &str)]) -> Package {
    let list: Vec<String> = units.iter().map(|(p, _)| format!("{p:?}")).collect();
    let mcpp = format!("accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\"]\nmodules = {modules}\ncxx-sources = [{}]", list.join(", "));
    let cargo = format!("{}\n[package.metadata.mcpp.spirv]\ncompiler = \"glslang\"\nincludes = [\"shaders/include\"]\ndefines = {{ WORKGROUP = \"64\" }}\n", manifest("surf-app", &mcpp));
    let mut files: Vec<(&str, &str)> = vec![
        ("Cargo.toml", &cargo),
        ("shaders/include/common.glsl", COMMON_GLSL),
        ("shaders/a/scale.comp", SCALE_COMP),
        ("shaders/b/scale.comp", SQUARE_COMP),
    ];
    files.extend_from_slice(units);
    Package::new(&files)
}

/// The static archive the outcome links (`rustc-link-search` + `rustc-link-lib=static=`).
fn archive(outcome: &cargo_mcpp::pipeline::Outcome) -> PathBuf {
    let lines = outcome.cargo.lines();
    let dir = lines
        .iter()
        .find_map(|l| l.strip_prefix("cargo::rustc-link-search=native="))
        .unwrap_or_else(|| panic!("no link search: {lines:#?}"));
    let lib = lines
        .iter()
        .find_map(|l| l.strip_prefix("cargo::rustc-link-lib=static="))
        .unwrap_or_else(|| panic!("no static lib: {lines:#?}"));
    Path::new(dir).join(format!("lib{lib}.a"))
}

/// Link `main.c` (calling `use_size`/`use_first`, and `use2_size` when `two`) with the lane's
/// archive and the C++ runtime, run it, return what it printed.
fn run_linked(pkg: &Package, outcome: &cargo_mcpp::pipeline::Outcome, two: bool) -> String {
    let main = if two {
        "#include <stdio.h>\nunsigned long use_size(void); unsigned int use_first(void); unsigned long use2_size(void);\nint main(void) { printf(\"%lu %x %lu\\n\", use_size(), use_first(), use2_size()); return 0; }\n"
    } else {
        "#include <stdio.h>\nunsigned long use_size(void); unsigned int use_first(void);\nint main(void) { printf(\"%lu %x\\n\", use_size(), use_first()); return 0; }\n"
    };
    let dir = pkg.dir.path().join("link");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.c"), main).unwrap();
    let exe = dir.join("main");
    let out = Command::new(real_tool("g++"))
        .args(["-x", "c"])
        .arg(dir.join("main.c"))
        .args(["-x", "none"])
        .arg(archive(outcome))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "link failed: {}", text(&out));
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// What `run_linked` should print for `shaders/a/scale.comp` (and `b` when `two`).
fn expected(pkg: &Package, two: bool) -> String {
    let a = pkg.embedded_bytes("shaders/a/scale.comp");
    let first = u32::from_le_bytes([a[0], a[1], a[2], a[3]]);
    if two {
        format!(
            "{} {first:x} {}\n",
            a.len(),
            pkg.embedded_bytes("shaders/b/scale.comp").len()
        )
    } else {
        format!("{} {first:x}\n", a.len())
    }
}

const IMPORTER: &str = "import surf_app.shaders;\nextern \"C\" unsigned long use_size() { return surf_app::shaders::a::scale_comp().size_bytes; }\nextern \"C\" unsigned int use_first() { return surf_app::shaders::a::scale_comp().code[0]; }\n";

/// `import surf_app.shaders;` in a `cxx-sources` unit builds and links, with clang (BMI by
/// `--precompile`) and g++ (`-fmodules-ts` with the mapper); a shader edit changes the bytes
/// the program reads and starts the compiler once, for the implementation unit only (the
/// interface, its BMI and the importer stay fresh).
#[test]
fn a_cxx_unit_imports_the_shader_module_and_a_payload_edit_recompiles_only_the_implementation() {
    for (name, real) in [("clang++", "clang++-19"), ("g++", "g++")] {
        let pkg = surface_package(true, &[("cpp/use.cpp", IMPORTER)]);
        let cxx = pkg.counting_wrapper_of(name, &real_tool(real));
        let mut b = pkg.build();
        b.env("CXX", &cxx);
        let first = pkg.compile(&b);
        assert_eq!(
            run_linked(&pkg, &first, false),
            expected(&pkg, false),
            "{name}"
        );
        let compiles = pkg.compiles(name);
        assert!(
            compiles.iter().any(|c| c.contains("surf_app.shaders.cppm")),
            "{name}: the interface was compiled: {compiles:#?}"
        );
        assert!(
            compiles
                .iter()
                .any(|c| c.contains("surf_app.shaders.impl.cpp")),
            "{name}: the implementation was compiled: {compiles:#?}"
        );
        let interface = std::fs::read(pkg.out_dir().join("mcpp/surf_app.shaders.cppm")).unwrap();

        // A no-op build starts no compiler.
        let before = pkg.compiles(name).len();
        pkg.compile(&b);
        assert_eq!(
            pkg.compiles(name).len(),
            before,
            "{name}: a no-op build compiled"
        );

        edit(
            &pkg.path("shaders/a/scale.comp"),
            "data[i] = transform(data[i]);",
            "data[i] = transform(data[i]) + 1.0;",
        );
        let old_size = pkg.embedded_bytes("shaders/a/scale.comp");
        let second = pkg.compile(&b);
        assert_ne!(
            pkg.embedded_bytes("shaders/a/scale.comp"),
            old_size,
            "the edit changed the payload"
        );
        let after = pkg.compiles(name);
        let new: Vec<&String> = after[before..].iter().collect();
        assert_eq!(
            new.len(),
            1,
            "{name}: only the implementation unit recompiles: {new:#?}"
        );
        assert!(
            new[0].contains("surf_app.shaders.impl.cpp"),
            "{name}: {new:#?}"
        );
        assert_eq!(
            std::fs::read(pkg.out_dir().join("mcpp/surf_app.shaders.cppm")).unwrap(),
            interface,
            "the interface is not rewritten"
        );
        assert_eq!(
            run_linked(&pkg, &second, false),
            expected(&pkg, false),
            "{name}: the program reads the new bytes"
        );
    }
}

/// Under `modules = false`, a `.c` unit (compiled as C) and a `.cpp` unit include the header and
/// call the accessors; the definitions are linked from the lane's archive.
#[test]
fn under_modules_false_a_c_unit_and_a_cpp_unit_include_the_header_and_link() {
    let c_unit = "#include \"surf_app.shaders.h\"\nunsigned long use_size(void) { return mcpp_embed_8surf_app7shaders1a10scale_comp_size(); }\nunsigned int use_first(void) { return mcpp_embed_8surf_app7shaders1a10scale_comp_data()[0]; }\n#ifdef __cplusplus\n#error compiled as C++\n#endif\n";
    let cpp_unit = "#include \"surf_app.shaders.h\"\nextern \"C\" unsigned long use2_size() { return surf_app::shaders::b::scale_comp().size_bytes; }\n";
    let pkg = surface_package(false, &[("cpp/use.c", c_unit), ("cpp/use2.cpp", cpp_unit)]);
    let mut b = pkg.build();
    b.env("CXX", real_tool("g++"));
    let outcome = pkg.compile(&b);
    assert_eq!(run_linked(&pkg, &outcome, true), expected(&pkg, true));
    // The same with clang.
    let pkg = surface_package(false, &[("cpp/use.c", c_unit), ("cpp/use2.cpp", cpp_unit)]);
    let mut b = pkg.build();
    b.env("CXX", real_tool("clang++-19"));
    let outcome = pkg.compile(&b);
    assert_eq!(run_linked(&pkg, &outcome, true), expected(&pkg, true));
}

/// A crate whose host side is pure Rust (shaders only, or data files only) under header storage
/// needs no C++ compiler: with `CXX` naming no program the build succeeds, links nothing, and
/// the Rust program reads the payloads. A `cxx-sources` unit brings the lane back: the same
/// `CXX` is then what fails, and a real one compiles and links the implementation unit.
#[test]
fn a_pure_rust_crate_under_header_storage_needs_no_cxx_compiler() {
    let missing = Path::new("/nonexistent/c++");
    let main = "fn main() { let p = shaders::a::scale_comp(); println!(\"{:x} {}\", p.code[0], p.size_bytes); }\n";
    let pkg = surface_package(true, &[]);
    let mut b = pkg.build();
    b.env("CXX", missing);
    let outcome = pkg.compile(&b);
    assert!(
        !outcome
            .cargo
            .lines()
            .iter()
            .any(|l| l.contains("rustc-link-lib")),
        "nothing to link: {:#?}",
        outcome.cargo.lines()
    );
    let exe = pkg.out_dir().join("artifacts/prog");
    let out = run_rust_surface_program(&pkg, &outcome, main, &exe, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let spv = pkg.embedded_bytes("shaders/a/scale.comp");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("7230203 {}\n", spv.len())
    );

    let embed = format!(
        "{}[package.metadata.mcpp.embed]\nfiles = [\"assets/*\"]\n",
        manifest("data-app", "")
    );
    let pkg = Package::new(&[("Cargo.toml", &embed), ("assets/hello.txt", "hello")]);
    let mut b = pkg.build();
    b.env("CXX", missing);
    let outcome = pkg.compile(&b);
    let out = run_rust_surface_program(
        &pkg,
        &outcome,
        "fn main() { print!(\"{}\", std::str::from_utf8(shaders::hello_txt().bytes).unwrap()); }\n",
        &exe,
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "hello");

    let unit = "import surf_app.shaders;\nextern \"C\" unsigned long use_size() { return surf_app::shaders::a::scale_comp().size_bytes; }\nextern \"C\" unsigned int use_first() { return surf_app::shaders::a::scale_comp().code[0]; }\n";
    let pkg = surface_package(true, &[("cpp/use.cpp", unit)]);
    let mut b = pkg.build();
    b.env("CXX", missing);
    let err = b
        .try_compile()
        .expect_err("a cxx-sources unit needs the compiler");
    assert!(err.to_string().contains("nonexistent"), "{err}");
    b.env("CXX", real_tool("g++"));
    let outcome = pkg.compile(&b);
    assert_eq!(run_linked(&pkg, &outcome, false), expected(&pkg, false));
}

/// A unit using the surface in the form `modules` does not generate is refused before any
/// compiler starts, naming the unit's line and the way out: `import` under `modules = false`
/// (the surface is a header), the header included under `modules = true` (a C unit needs
/// `modules = false`).
#[test]
fn the_surface_used_in_the_other_form_is_refused_naming_modules() {
    let pkg = surface_package(
        false,
        &[(
            "cpp/use.cpp",
            "// the shaders\nimport surf_app.shaders;\nint f() { return 0; }\n",
        )],
    );
    let mut b = pkg.build();
    b.env("CXX", real_tool("g++"));
    let err = pkg.refuse(&b);
    assert!(err.contains("cpp/use.cpp imports the module `surf_app.shaders`, but `modules = false` makes the payload surface a header"), "{err}");
    assert!(
        err.contains("cpp/use.cpp:2") && err.contains("#include \"surf_app.shaders.h\""),
        "{err}"
    );
    assert!(!err.contains("which no C++ source provides"), "{err}");

    let pkg = surface_package(
        true,
        &[(
            "cpp/use.c",
            "#include \"surf_app.shaders.h\"\nunsigned long f(void) { return 0; }\n",
        )],
    );
    let mut b = pkg.build();
    b.env("CXX", real_tool("g++"));
    let err = pkg.refuse(&b);
    assert!(err.contains("cpp/use.c includes `surf_app.shaders.h`, which is generated only under `modules = false` (a C unit needs the header form)"), "{err}");
    assert!(
        err.contains("cpp/use.c:1") && err.contains("set `modules = false`"),
        "{err}"
    );
    assert!(!err.contains("No such file"), "{err}");
}

/// The accessor names of a generated surface file (`pub fn NAME(` in Rust, `inline ... NAME()`
/// in C++), sorted.
fn accessor_names(text: &str, rust: bool) -> Vec<String> {
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = if rust {
                l.strip_prefix("pub fn ")?
            } else {
                l.strip_prefix("inline ")?.split_once(' ')?.1
            };
            Some(rest.split('(').next()?.to_string())
        })
        .collect();
    names.sort();
    names
}

/// Under `--no-accel` every shader lane keeps its accessors (GLSL, Slang, WGSL): the Rust and C++
/// surfaces name the same functions as with `vulkan1.2`, each empty and documented as not
/// built; a `cxx-sources` unit importing the module and a Rust program calling the accessors
/// compile, link and read size 0 (and the real bytes with the set).
#[test]
fn no_accel_keeps_every_shader_accessor_empty_and_documented() {
    const SLANG: &str = "RWStructuredBuffer<float> data;\n[shader(\"compute\")]\n[numthreads(64, 1, 1)]\nvoid main(uint3 id : SV_DispatchThreadID) { data[id.x] = data[id.x] * 2.0; }\n";
    const WGSL: &str = "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n\n@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    if (id.x < arrayLength(&data)) { data[id.x] = 2.0 * data[id.x]; }\n}\n";
    const USER: &str = "import surf_app.shaders;\nextern \"C\" unsigned long use_size() { return surf_app::shaders::a::scale_comp().size_bytes; }\nextern \"C\" unsigned int use_first() { auto p = surf_app::shaders::a::scale_comp(); return p.size_bytes ? p.code[0] : 0xdeadu; }\n";
    const MAIN: &str = "fn main() {\n    let (a, c, d) = (shaders::a::scale_comp(), shaders::c::blur_comp(), shaders::d::fill_wgsl());\n    println!(\"{} {} {} {}\", a.is_empty(), a.size_bytes, c.is_empty(), d.is_empty());\n}\n";
    let pkg = surface_package(true, &[("cpp/use.cpp", USER)]);
    pkg.write("shaders/c/blur.slang", SLANG);
    pkg.write("shaders/d/fill.wgsl", WGSL);
    let manifest = std::fs::read_to_string(pkg.path("Cargo.toml")).unwrap();
    pkg.write(
        "Cargo.toml",
        &manifest.replace(
            "sources = [\"shaders/**/*.comp\"]",
            "sources = [\"shaders/**/*.comp\", \"shaders/**/*.slang\", \"shaders/**/*.wgsl\"]",
        ),
    );
    let build = |no_accel: bool| {
        let mut b = pkg.build();
        b.tool("slangc", real_slangc());
        if no_accel {
            b.no_accel();
        }
        b
    };
    let surfaces = || {
        let rust = pkg.rust_surface();
        let cpp =
            std::fs::read_to_string(pkg.out_dir().join("mcpp/surf_app.shaders.cppm")).unwrap();
        (rust, cpp)
    };
    let with = pkg.compile(&build(false));
    let (rust_with, cpp_with) = surfaces();
    assert_eq!(run_linked(&pkg, &with, false), expected(&pkg, false));
    let exe = pkg.dir.path().join("bin/with");
    let out = run_rust_surface_program(&pkg, &with, MAIN, &exe, &[]);
    let a = pkg.embedded_bytes("shaders/a/scale.comp").len();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("false {a} false false\n"),
        "{}",
        text(&out)
    );

    let without = pkg.compile(&build(true));
    assert!(
        !without
            .report
            .ran
            .iter()
            .any(|r| ["spirv:", "slang:", "wgsl:"]
                .iter()
                .any(|l| r.starts_with(l))),
        "no shader compiles: {:?}",
        without.report.ran
    );
    let (rust_without, cpp_without) = surfaces();
    let names = accessor_names(&rust_with, true);
    assert!(
        ["blur_comp", "fill_wgsl", "scale_comp"]
            .iter()
            .all(|n| names.iter().any(|x| x == n)),
        "{names:?}"
    );
    assert_eq!(
        accessor_names(&rust_without, true),
        names,
        "the Rust surface under --no-accel:\n{rust_without}"
    );
    assert_eq!(
        accessor_names(&cpp_without, false),
        accessor_names(&cpp_with, false),
        "the C++ surface under --no-accel:\n{cpp_without}"
    );
    let doc = "/// Empty: not built in this build (accelerator set none: `--no-accel`, `MCPP_NO_ACCEL=1` or a docs.rs build).";
    assert_eq!(
        rust_without.matches(doc).count(),
        4,
        "each of the four accessors says it is empty:\n{rust_without}"
    );
    assert!(
        !rust_with.contains("not built in this build"),
        "{rust_with}"
    );
    assert_eq!(run_linked(&pkg, &without, false), "0 dead\n");
    let exe = pkg.dir.path().join("bin/without");
    let out = run_rust_surface_program(&pkg, &without, MAIN, &exe, &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "true 0 true true\n",
        "{}",
        text(&out)
    );
}
