//! The in-process archive writer against the real system linker: objects compiled by `cc`,
//! archived by `cargo_mcpp::engine::archive::write`, linked by `cc` (GNU ld, which needs the symbol
//! index), run; then one member recompiled changes the archive's bytes and the program's output.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::engine::archive::{self, ArchiveFormat};
use harness::text;
use std::path::Path;
use std::process::Command;

fn cc(args: &[&str], dir: &Path) {
    let out = Command::new("cc")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cc is installed");
    assert!(out.status.success(), "cc {args:?}: {}", text(&out));
}

#[test]
fn an_archive_written_in_process_links_with_gnu_ld_and_follows_its_members() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(
        d.join("a_long_member_name_beyond_sixteen.c"),
        "int seven(void) { return 7; }\n",
    )
    .unwrap();
    std::fs::write(d.join("b.c"), "int six(void) { return 6; }\n").unwrap();
    std::fs::write(d.join("main.c"), "#include <stdio.h>\nint seven(void); int six(void);\nint main(void) { printf(\"%d\\n\", seven() * six()); return 0; }\n").unwrap();
    for f in ["a_long_member_name_beyond_sixteen.c", "b.c", "main.c"] {
        cc(&["-c", "-fPIC", f], d);
    }
    let members = [d.join("a_long_member_name_beyond_sixteen.o"), d.join("b.o")];
    let lib = d.join("lib/libparts.a");
    archive::write(
        ArchiveFormat::for_target("x86_64-unknown-linux-gnu"),
        &members,
        &lib,
    )
    .unwrap();
    let first = std::fs::read(&lib).unwrap();
    assert!(first.starts_with(b"!<arch>\n"), "an ar archive");
    archive::write(ArchiveFormat::Gnu, &members, &lib).unwrap();
    assert_eq!(
        std::fs::read(&lib).unwrap(),
        first,
        "deterministic: the same members give the same bytes"
    );

    let link_and_run = || {
        cc(&["main.o", "-Llib", "-lparts", "-o", "prog"], d);
        let out = Command::new(d.join("prog")).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(link_and_run(), "42");

    std::fs::write(d.join("b.c"), "int six(void) { return 3; }\n").unwrap();
    cc(&["-c", "-fPIC", "b.c"], d);
    archive::write(ArchiveFormat::Gnu, &members, &lib).unwrap();
    assert_ne!(
        std::fs::read(&lib).unwrap(),
        first,
        "a changed member changes the archive"
    );
    assert_eq!(link_and_run(), "21");

    let e = archive::write(ArchiveFormat::Gnu, &[d.join("missing.o")], &lib)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot read the archive member") && e.contains("missing.o"),
        "{e}"
    );
    assert_eq!(
        ArchiveFormat::for_target("aarch64-apple-darwin"),
        ArchiveFormat::Darwin
    );
    assert_eq!(
        ArchiveFormat::for_target("x86_64-pc-windows-msvc"),
        ArchiveFormat::Coff
    );
}
