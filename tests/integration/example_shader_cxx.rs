//! `examples/shader-cxx`: one shader read from Rust and from a C++ unit that imports the
//! generated module (object storage), built through the library API on a copy of the example and
//! its `src/main.rs` compiled by rustc with the build's link directives; the program asserts
//! that both read the same bytes, and prints them.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::process::Command;

#[test]
fn the_shader_is_read_from_rust_and_from_an_importing_cxx_unit() {
    for cxx in ["g++", "clang++-19"] {
        let pkg = Package::new(&[]);
        copy_dir(&repo().join("examples/shader-cxx"), &pkg.path(""));
        let mut b = pkg.build();
        b.env("CXX", real_tool(cxx));
        let outcome = pkg.compile(&b);
        let exe = pkg.dir.path().join("shader-cxx");
        let mut rustc = Command::new("rustc");
        rustc
            .env("OUT_DIR", pkg.out_dir())
            .args(["--edition", "2021", "-D", "warnings", "-o"])
            .arg(&exe)
            .arg(pkg.path("src/main.rs"))
            .args(rustc_link_args(&outcome));
        let out = rustc.output().unwrap();
        assert!(out.status.success(), "{cxx}: {}", text(&out));
        let out = Command::new(&exe).output().unwrap();
        assert!(out.status.success(), "{cxx}: {}", text(&out));
        let size = std::fs::read(pkg.out_dir().join("mcpp/payloads/double_comp.spv"))
            .unwrap()
            .len();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("shaders/double.comp: {size} bytes from Rust, {size} bytes from C++, magic 0x07230203\n"), "{cxx}");
    }
}
