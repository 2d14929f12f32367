//! tools-embed: `[package.metadata.mcpp.embed]` data files through the payload
//! surface, in a crate with no shader at all. A Rust program compiled by rustc against the
//! generated surface prints what the accessors and the lookup table return, under each storage
//! form; after an edit of an embedded file it prints the new bytes, and a build with nothing
//! changed runs and writes nothing. `--no-accel` still embeds (data files are no device code).
//! The C header (`modules = false`, a `.c` unit) and the C++ module (`import`) reach the same
//! bytes and the table.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::path::Path;
use std::process::Command;

const EMBED: &str = "[package.metadata.mcpp.embed]\nfiles = [\"assets/**/*\", { glob = \"w/*.bin\", element = \"words\" }, { glob = \"t/*.txt\", nul = true }]\ntables = [{ name = \"msgs\", glob = \"m/*.txt\", key = \"stem\" }]\n";

/// A crate with only `embed` (no accelerator, no sources), `storage` and `extra` keys in
/// `[package.metadata.mcpp]`, and `files` besides the data.
fn embed_package(storage: &str, extra: &str, files: &[(&str, &str)]) -> Package {
    let cargo = format!(
        "{}{EMBED}",
        manifest("embed-app", &format!("storage = \"{storage}\"\n{extra}"))
    );
    let mut all: Vec<(&str, &str)> = vec![
        ("Cargo.toml", &cargo),
        ("assets/message.txt", "hello, world\n"),
        ("assets/fonts/3d-font.ttf", "FONT"),
        ("w/k.bin", "abcdefgh"),
        ("t/greeting.txt", "grüß dich"),
        ("m/en.txt", "hello"),
        ("m/de.txt", "hallo"),
    ];
    all.extend_from_slice(files);
    Package::new(&all)
}

const MAIN: &str = r#"
fn main() {
    let m = shaders::message_txt()UNWRAP;
    assert_eq!(m.bytes.as_ptr() as usize % 16, 0);
    println!("message {:?}", std::str::from_utf8(m.bytes).unwrap());
    println!("font {:?}", std::str::from_utf8(shaders::fonts::_3d_font_ttf()UNWRAP.bytes).unwrap());
    let w = shaders::k_bin()UNWRAP;
    println!("words {:x} {:x} {}", w.code[0], w.code[1], w.size_bytes);
    let g = shaders::greeting_txt()UNWRAP;
    println!("text {:?} {:?}", g.text, g.c_str.to_bytes_with_nul().len());
    println!("table {:?} {:?}", shaders::msgs::get("de")UNWRAP.map(|b| std::str::from_utf8(b).unwrap()), shaders::msgs::get("fr")UNWRAP);
    let keys: Vec<&str> = shaders::msgs::entries()UNWRAP.iter().map(|(k, _)| *k).collect();
    println!("keys {keys:?}");
}
"#;

/// What [`MAIN`] prints for a message `message`.
fn expected(message: &str) -> String {
    format!(
        "message {message:?}\nfont \"FONT\"\nwords {:x} {:x} 8\ntext \"grüß dich\" {}\ntable Some(\"hallo\") None\nkeys [\"de\", \"en\"]\n",
        u32::from_le_bytes(*b"abcd"),
        u32::from_le_bytes(*b"efgh"),
        "grüß dich".len() + 1
    )
}

fn run(
    pkg: &Package,
    outcome: &cargo_mcpp::pipeline::Outcome,
    exe: &Path,
    sidecar: bool,
) -> String {
    let main = MAIN.replace("UNWRAP", if sidecar { ".unwrap()" } else { "" });
    let out = run_rust_surface_program(pkg, outcome, &main, exe, &[]);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Every storage form (object with g++ and clang as the assembler): the program reads the files' bytes, the words, the text and the table;
/// an edit of an embedded file changes the bytes it reads; a build with nothing changed runs
/// no action and writes no file; the embedded file is a rerun-if-changed input.
#[test]
fn an_embed_only_crate_reads_its_files_in_every_storage_form_and_follows_an_edit() {
    for (storage, cxx) in [
        ("header", "g++"),
        ("object", "g++"),
        ("object", "clang++-19"),
        ("sidecar", "g++"),
    ] {
        let pkg = embed_package(storage, "", &[]);
        let mut b = pkg.build();
        b.env("CXX", real_tool(cxx));
        let outcome = pkg.compile(&b);
        let exe = pkg.out_dir().join("artifacts/prog");
        assert_eq!(
            run(&pkg, &outcome, &exe, storage == "sidecar"),
            expected("hello, world\n"),
            "{storage}"
        );
        // `cargo mcpp pack` collects the sidecars this list names: the embedded files' too.
        let json = std::fs::read_to_string(pkg.out_dir().join("mcpp-sidecars.json")).unwrap();
        assert_eq!(
            json.contains("\"mcpp-data/embed-app/message_txt.bin\"")
                && json.contains("\"mcpp-data/embed-app/msgs/en_txt.bin\""),
            storage == "sidecar",
            "{storage}: {json}"
        );
        // A words data file is no SPIR-V: its sidecar is `.bin`, not `.spv`.
        assert_eq!(
            json.contains("\"mcpp-data/embed-app/k_bin.bin\""),
            storage == "sidecar",
            "{storage}: {json}"
        );
        assert!(!json.contains(".spv"), "{storage}: {json}");
        let message = pkg.path("assets/message.txt");
        assert!(
            outcome
                .cargo
                .lines()
                .iter()
                .any(|l| *l == format!("cargo::rerun-if-changed={}", message.display())),
            "{storage}: {:#?}",
            outcome.cargo.lines()
        );

        pkg.write("assets/message.txt", "edited\n");
        let outcome = pkg.compile(&b);
        assert_eq!(
            run(&pkg, &outcome, &exe, storage == "sidecar"),
            expected("edited\n"),
            "{storage}: the edit is read"
        );

        let again = pkg.compile(&b);
        assert!(
            again.report.ran.is_empty(),
            "{storage}: a no-op ran {:?}",
            again.report.ran
        );
        assert!(
            again.generated.as_ref().unwrap().written.is_empty(),
            "{storage}: a no-op wrote {:?}",
            again.generated.unwrap().written
        );
    }
}

/// A words payload of several MiB (6 MiB) under header storage: it builds (the words are the
/// included bytes read in place, not converted by const evaluation, which rustc stopped past a
/// few MiB) and the program reads the right words from a 4-aligned `&[u32]`. The same program
/// under every storage form compiles with `-D unsafe_code` (a user's `#![deny(unsafe_code)]`):
/// the generated `unsafe` carries its own `allow`. rustc's time is the benchmark's, not asserted.
#[test]
fn a_large_words_payload_builds_under_header_storage_and_the_surface_allows_deny_unsafe_code() {
    const WORDS: u32 = 6 * 1024 * 1024 / 4;
    let word = |i: u32| i.wrapping_mul(2_654_435_761) ^ 0x0723_0203;
    let main = r#"
fn main() {
    let w = shaders::big_bin()UNWRAP;
    assert_eq!(w.code.as_ptr() as usize % 4, 0);
    let sum = w.code.iter().fold(0u64, |s, x| s.wrapping_mul(31).wrapping_add(u64::from(*x)));
    println!("{} {} {:x} {:x} {sum:x}", w.code.len(), w.size_bytes, w.code[0], w.code[w.code.len() - 1]);
}
"#;
    let sum = (0..WORDS).fold(0u64, |s, i| {
        s.wrapping_mul(31).wrapping_add(u64::from(word(i)))
    });
    let expected = format!(
        "{WORDS} {} {:x} {:x} {sum:x}\n",
        WORDS * 4,
        word(0),
        word(WORDS - 1)
    );
    let bytes: Vec<u8> = (0..WORDS).flat_map(|i| word(i).to_le_bytes()).collect();
    for storage in ["header", "object", "sidecar"] {
        let cargo = manifest("big-app", &format!("storage = \"{storage}\"\n[package.metadata.mcpp.embed]\nfiles = [{{ glob = \"big/*.bin\", element = \"words\" }}]\n"));
        let pkg = Package::new(&[("Cargo.toml", &cargo)]);
        std::fs::create_dir_all(pkg.path("big")).unwrap();
        std::fs::write(pkg.path("big/big.bin"), &bytes).unwrap();
        let mut b = pkg.build();
        b.env("CXX", real_tool("g++"));
        let outcome = pkg.compile(&b);
        let exe = pkg.out_dir().join("artifacts/big");
        let main = main.replace(
            "UNWRAP",
            if storage == "sidecar" {
                ".unwrap()"
            } else {
                ""
            },
        );
        let out =
            run_rust_surface_program_with(&pkg, &outcome, &main, &exe, &[], &["-D", "unsafe_code"]);
        assert!(out.status.success(), "{storage}: {}", text(&out));
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            expected,
            "{storage}"
        );
    }
}

/// `--no-accel` still embeds: the data files are no device code.
#[test]
fn no_accel_still_embeds_the_data_files() {
    let pkg = embed_package("header", "accel = \"vulkan1.2\"", &[]);
    let mut b = pkg.build();
    b.env("CXX", real_tool("g++")).no_accel();
    let outcome = pkg.compile(&b);
    assert_eq!(outcome.payloads, 6);
    assert_eq!(
        run(&pkg, &outcome, &pkg.out_dir().join("artifacts/prog"), false),
        expected("hello, world\n")
    );
}

/// The C header (`modules = false`, a `.c` unit) and the C++ module (a unit importing
/// `embed_app.shaders`) reach a file's bytes and the table's `get`, `count`, `key`.
#[test]
fn the_c_header_and_the_cpp_module_reach_the_files_and_the_table() {
    let c = "#include \"embed_app.shaders.h\"\n#include <stdio.h>\nint dump(void) {\n  unsigned long n = 0;\n  const unsigned char* d = mcpp_table_9embed_app7shaders4msgs_get(\"en\", &n);\n  printf(\"%.*s %lu %s\\n\", (int)n, (const char*)d, mcpp_table_9embed_app7shaders4msgs_count(), mcpp_table_9embed_app7shaders4msgs_key(1));\n  printf(\"%lu %.*s|\\n\", mcpp_embed_9embed_app7shaders11message_txt_size(), (int)mcpp_embed_9embed_app7shaders11message_txt_size(), (const char*)mcpp_embed_9embed_app7shaders11message_txt_data());\n  return mcpp_table_9embed_app7shaders4msgs_get(\"fr\", &n) == 0 && n == 0 ? 0 : 1;\n}\n";
    let cpp = "import embed_app.shaders;\n#include <stdio.h>\nextern \"C\" int dump() {\n  auto e = embed_app::shaders::msgs::get(\"en\");\n  printf(\"%.*s %lu %s\\n\", (int)e.size_bytes, (const char*)e.data, embed_app::shaders::msgs::count(), embed_app::shaders::msgs::key(1));\n  auto m = embed_app::shaders::message_txt();\n  printf(\"%lu %.*s|\\n\", m.size_bytes, (int)m.size_bytes, (const char*)m.data);\n  return embed_app::shaders::msgs::get(\"fr\").data == nullptr ? 0 : 1;\n}\n";
    for (modules, unit, body) in [(false, "cpp/use.c", c), (true, "cpp/use.cpp", cpp)] {
        let pkg = embed_package(
            "header",
            &format!("modules = {modules}\ncxx-sources = [\"{unit}\"]"),
            &[(unit, body)],
        );
        let mut b = pkg.build();
        b.env("CXX", real_tool("g++"));
        let outcome = pkg.compile(&b);
        let lines = outcome.cargo.lines();
        let search = lines
            .iter()
            .find_map(|l| l.strip_prefix("cargo::rustc-link-search=native="))
            .unwrap();
        let lib = lines
            .iter()
            .find_map(|l| l.strip_prefix("cargo::rustc-link-lib=static="))
            .unwrap();
        std::fs::write(
            pkg.dir.path().join("main.c"),
            "int dump(void);\nint main(void) { return dump(); }\n",
        )
        .unwrap();
        let exe = pkg.dir.path().join("cprog");
        let out = Command::new(real_tool("g++"))
            .args(["-x", "c"])
            .arg(pkg.dir.path().join("main.c"))
            .args(["-x", "none"])
            .arg(Path::new(search).join(format!("lib{lib}.a")))
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let out = Command::new(&exe).output().unwrap();
        assert!(out.status.success(), "modules = {modules}: {}", text(&out));
        // A bytes payload has no NUL of its own: it is printed by its size.
        let printed = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            printed, "hello 2 en\n13 hello, world\n|\n",
            "modules = {modules}"
        );
    }
}

/// A sidecar changed after the build (a words file of a size that is no multiple of 4, a text
/// file that is not UTF-8) is an `Err` naming the file, never a panic.
#[test]
fn a_corrupt_sidecar_is_an_error_naming_the_file() {
    let pkg = embed_package("sidecar", "", &[]);
    let outcome = pkg.compile(&pkg.build());
    let artifacts = pkg.out_dir().join("artifacts");
    let data = artifacts.join("mcpp-data/embed-app");
    let named = |stem: &str| {
        data.join(
            std::fs::read_dir(&data)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().into_string().unwrap())
                .find(|n| n.starts_with(stem))
                .unwrap(),
        )
    };
    let (words, text_file) = (named("k_bin."), named("greeting_txt."));
    std::fs::write(&words, b"abcdefg").unwrap();
    std::fs::write(&text_file, b"gr\xfc\xdf").unwrap();
    let main = r#"
fn main() {
    match shaders::k_bin() { Ok(w) => println!("words {}", w.size_bytes), Err(e) => println!("{e}") }
    match shaders::greeting_txt() { Ok(t) => println!("text {}", t.text), Err(e) => println!("{e}") }
}
"#;
    let out = run_rust_surface_program(&pkg, &outcome, main, &artifacts.join("prog"), &[]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "cannot read the sidecar payload {}: it is 7 bytes, not a whole number of 32-bit words",
            words.display()
        )),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "cannot read the sidecar payload {}: it is not UTF-8 text",
            text_file.display()
        )),
        "{stdout}"
    );
}

/// A top-level accessor whose name is not snake case (`A.txt` -> `A_txt()`) warns nothing in the
/// user's crate (compiled with `-D warnings`) under every storage form.
#[test]
fn a_capitalised_file_name_compiles_without_a_warning_in_every_storage_form() {
    for storage in ["header", "object", "sidecar"] {
        let pkg = embed_package(storage, "", &[("assets/A.txt", "capital")]);
        let mut b = pkg.build();
        b.env("CXX", real_tool("g++"));
        let outcome = pkg.compile(&b);
        let unwrap = if storage == "sidecar" {
            ".unwrap()"
        } else {
            ""
        };
        let main = format!("fn main() {{ print!(\"{{}}\", std::str::from_utf8(shaders::A_txt(){unwrap}.bytes).unwrap()); }}\n");
        let out = run_rust_surface_program(
            &pkg,
            &outcome,
            &main,
            &pkg.out_dir().join("artifacts/prog"),
            &[],
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "capital",
            "{storage}: {}",
            text(&out)
        );
    }
}

/// `embed = [globs]`, the list shorthand of `embed.files`, builds and reads like the table form.
#[test]
fn the_list_form_of_embed_builds_and_reads_the_files() {
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &manifest(
                "list-app",
                "embed = [\"t/x.txt\", { glob = \"w/*.bin\", element = \"words\" }]",
            ),
        ),
        ("t/x.txt", "listed"),
        ("w/k.bin", "abcd"),
    ]);
    let outcome = pkg.compile(&pkg.build());
    let main = "fn main() { print!(\"{} {:x}\", std::str::from_utf8(shaders::x_txt().bytes).unwrap(), shaders::k_bin().code[0]); }\n";
    let out = run_rust_surface_program(
        &pkg,
        &outcome,
        main,
        &pkg.out_dir().join("artifacts/prog"),
        &[],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("listed {:x}", u32::from_le_bytes(*b"abcd")),
        "{}",
        text(&out)
    );
}

/// On a file system with 1-second timestamps (FAT, ext3, some network mounts) cargo misses an
/// edit made in the same second as a build: the build says so once, with the cause and the way
/// out. The package's files are given whole-second modification times, as such a file system
/// keeps them; the second build says nothing more, and a package whose times carry
/// nanoseconds is never warned.
#[test]
fn whole_second_timestamps_are_detected_and_warned_about_once() {
    let p = Package::new(&[
        (
            "Cargo.toml",
            &manifest("coarse", "[package.metadata.mcpp.embed]\nfiles = [\"d/*\"]"),
        ),
        ("d/a.txt", "one"),
        ("d/b.txt", "two"),
    ]);
    let mut b = p.build();
    b.env("CXX", real_tool("g++"));
    let text = |o: &cargo_mcpp::pipeline::Outcome| o.cargo.lines().join("\n");
    let fine = text(&p.compile(&b));
    assert!(!fine.contains("1-second"), "{fine}");
    let whole = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    for f in ["Cargo.toml", "d/a.txt", "d/b.txt"] {
        std::fs::File::options()
            .write(true)
            .open(p.path(f))
            .unwrap()
            .set_modified(whole)
            .unwrap();
    }
    let first = text(&p.compile(&b));
    let warning = first
        .lines()
        .find(|l| l.contains("1-second"))
        .unwrap_or_else(|| panic!("no warning:\n{first}"));
    assert!(
        warning.starts_with("cargo::warning=")
            && warning.contains("same second")
            && warning.contains("touch"),
        "{warning}"
    );
    let second = text(&p.compile(&b));
    assert!(!second.contains("1-second"), "warned twice:\n{second}");
}

/// A build script whose `OUT_DIR` holds a newline (a `CARGO_TARGET_DIR` with one, under plain
/// `cargo build`) is refused before anything is written, naming `OUT_DIR` and the way out:
/// cargo's directives are lines, and the link failed on a cut path.
#[test]
fn an_out_dir_with_a_newline_is_refused_before_anything_is_written() {
    let p = Package::new(&[
        (
            "Cargo.toml",
            &manifest("nl-out", "[package.metadata.mcpp.embed]\nfiles = [\"d/*\"]"),
        ),
        ("d/a.txt", "one"),
    ]);
    let out = p.dir.path().join("tar\nget/out");
    let mut b = p.build();
    b.out_dir(&out).env("CXX", real_tool("g++"));
    let e = p.refuse(&b);
    assert!(
        e.contains("OUT_DIR") && e.contains("CARGO_TARGET_DIR") && e.contains("newline"),
        "{e}"
    );
    assert!(
        !p.dir.path().join("tar\nget").exists(),
        "something was written"
    );
}
