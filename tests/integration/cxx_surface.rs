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
