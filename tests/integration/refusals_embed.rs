//! The refusal texts of tools-embed (`[package.metadata.mcpp.embed]`), pinned as one snapshot
//! (`tests/integration/snapshots/integration__refusals_embed__embed_refusals.snap`), temp paths redacted: each names the
//! manifest's `file:line:col` of the entry, the key and the way out. Accept a deliberate change
//! with `INSTA_UPDATE=always` (or `cargo insta review`).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;

/// One bad input: its name, the `[package.metadata.mcpp]` body and the files.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";

#[test]
fn embed_refusals() {
    let cases: &[Case] = &[
        ("a glob that is not valid", "[package.metadata.mcpp.embed]\nfiles = [\"d/[x\"]", &[("d/a", "1")]),
        ("a glob that matches nothing", "[package.metadata.mcpp.embed]\nfiles = [\"d/*.bin\"]", &[("d/a.txt", "1")]),
        ("words of a size that is no multiple of 4", "[package.metadata.mcpp.embed]\nfiles = [{ glob = \"w/*.bin\", element = \"words\" }]", &[("w/k.bin", "1234567")]),
        ("an unknown element", "[package.metadata.mcpp.embed]\nfiles = [{ glob = \"w/*.bin\", element = \"u16\" }]", &[("w/k.bin", "12")]),
        ("nul with words", "[package.metadata.mcpp.embed]\nfiles = [{ glob = \"w/*.bin\", element = \"words\", nul = true }]", &[("w/k.bin", "1234")]),
        ("nul on a file that is not UTF-8 text", "[package.metadata.mcpp.embed]\nfiles = [{ glob = \"t/*.txt\", nul = true }]", &[("t/a.txt", "a\u{0}b")]),
        ("an unknown key of an entry", "[package.metadata.mcpp.embed]\nfiles = [{ glob = \"w/*.bin\", elements = \"words\" }]", &[("w/k.bin", "1234")]),
        ("an unknown key of the embed table", "[package.metadata.mcpp.embed]\nfile = [\"w/*.bin\"]", &[("w/k.bin", "1234")]),
        ("a namespace that is no identifier", "[package.metadata.mcpp.embed]\nfiles = [{ glob = \"w/*.bin\", namespace = \"my-data\" }]", &[("w/k.bin", "1234")]),
        ("two files with one name", "[package.metadata.mcpp.embed]\nfiles = [\"a/*.txt\", \"b/*.txt\"]", &[("a/x.txt", "1"), ("b/x.txt", "2")]),
        ("two files whose names become one identifier", "[package.metadata.mcpp.embed]\nfiles = [\"a/*\"]", &[("a/x-y.bin", "1"), ("a/x_y.bin", "2")]),
        (
            "a file named as a compiled payload",
            "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.embed]\nfiles = [\"d/*\"]",
            &[("s/x.comp", COMP), ("d/x_comp", "1")],
        ),
        ("a duplicate key of a table", "[package.metadata.mcpp.embed]\ntables = [{ name = \"msgs\", glob = \"m/**/*.txt\" }]", &[("m/en.txt", "1"), ("m/sub/en.txt", "2")]),
        ("an unknown key mode", "[package.metadata.mcpp.embed]\ntables = [{ name = \"msgs\", glob = \"m/*.txt\", key = \"hash\" }]", &[("m/en.txt", "1")]),
        ("a table name that is no identifier", "[package.metadata.mcpp.embed]\ntables = [{ name = \"my msgs\", glob = \"m/*.txt\" }]", &[("m/en.txt", "1")]),
        ("a table file named as the table's function", "[package.metadata.mcpp.embed]\ntables = [{ name = \"msgs\", glob = \"m/*\" }]", &[("m/get", "1")]),
    ];
    let mut all = String::new();
    for (name, mcpp, files) in cases {
        let text = package_refusal(mcpp, files, |b| {
            b.env("CXX", real_tool("g++"));
        });
        all.push_str(&format!("===== {name}\n{text}\n\n"));
    }
    insta::assert_snapshot!("embed_refusals", all);
}

/// A glob matching a FIFO, a socket or a symbolic link to `/dev/zero` is refused naming the
/// file (before, each was silently left out and the build succeeded): reading one would block
/// or never end.
#[test]
fn embed_refuses_files_that_are_not_regular_by_name() {
    type Make = fn(&std::path::Path);
    let cases: &[(&str, Make)] = &[
        ("a FIFO", |p| {
            let s = std::process::Command::new("mkfifo")
                .arg(p)
                .status()
                .unwrap();
            assert!(s.success());
        }),
        ("a socket", |p| {
            std::os::unix::net::UnixListener::bind(p).unwrap();
        }),
        ("a symbolic link to /dev/zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
    ];
    let mut all = String::new();
    for (name, make) in cases {
        let pkg = Package::new(&[
            (
                "Cargo.toml",
                &manifest(
                    "refusals",
                    "[package.metadata.mcpp.embed]\nfiles = [\"d/*\"]",
                ),
            ),
            ("d/a.txt", "1"),
        ]);
        make(&pkg.path("d/odd"));
        let mut b = pkg.build();
        b.env("CXX", real_tool("g++"));
        let text = redact(&pkg.refuse(&b), pkg.dir.path());
        all.push_str(&format!("===== {name}\n{text}\n\n"));
    }
    insta::assert_snapshot!("embed_special_files", all);
}
