//! The refusal texts of `cargo mcpp pack`, pinned as one snapshot
//! (`tests/integration/snapshots/integration__refusals_pack__pack_refusals.snap`): each bad input's exit code and text
//! from its `error:` line on, the temp paths replaced by `[PKG]` (the package) and `[TMP]`.
//! Accept a deliberate change with `INSTA_UPDATE=always` (or `cargo insta review`).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::redact;
use std::process::Command;

/// One bad input: its name, the `[package.metadata.mcpp.pack]` body (and what follows), the
/// `[package]` version, the `pack` arguments and the files.
type Case<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a [&'a str],
    &'a [(&'a str, &'a [u8])],
);

fn refusal(pack: &str, version: &str, args: &[&str], files: &[(&str, &[u8])]) -> String {
    refusal_with(pack, version, args, files, &|_| {})
}

/// [`refusal`] with `prepare` run on the package directory before `pack` starts (a FIFO, a
/// link to a device); `pack` is killed after 60 s (a read that never ends), which the text says.
fn refusal_with(
    pack: &str,
    version: &str,
    args: &[&str],
    files: &[(&str, &[u8])],
    prepare: &dyn Fn(&std::path::Path),
) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(pkg.join("Cargo.toml"), format!("[package]\nname = \"app\"\nversion = \"{version}\"\nedition = \"2021\"\n\n[workspace]\n\n[package.metadata.mcpp.pack]\n{pack}\n")).unwrap();
    std::fs::write(pkg.join("src/main.rs"), "fn main() {}\n").unwrap();
    for (name, bytes) in files {
        std::fs::write(pkg.join(name), bytes).unwrap();
    }
    prepare(&pkg);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .arg("mcpp")
        .arg("pack")
        .args(args)
        .current_dir(&pkg)
        .env("MCPP_HOME", tmp.path().join("empty-home"))
        .env_remove("SOURCE_DATE_EPOCH")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut stderr_pipe, &mut text).unwrap();
        text
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stderr = reader.join().unwrap();
    let stderr = String::from_utf8_lossy(&stderr);
    let from = stderr.find("error:").unwrap_or(0);
    format!(
        "exit {}\n{}",
        status.map_or("none: killed after 60 s".to_string(), |s| s
            .code()
            .unwrap_or(-1)
            .to_string()),
        redact(&stderr[from..], tmp.path()).trim_end()
    )
}

/// The start of a type-2 runtime: an ELF header with `AI\x02` at offset 8, for x86-64
/// (`e_machine` 62 at offset 18).
const RUNTIME: &[u8] = b"\x7fELF\x02\x01\x01\x00AI\x02\x00\x00\x00\x00\x00\x02\x00\x3e\x00";

#[test]
fn pack_refusals() {
    let appimage: &[&str] = &["--format", "appimage"];
    let msi_windows: &[&str] = &["--format", "msi", "--target", "x86_64-pc-windows-gnu"];
    // A real PNG (the built-in icon) cut before its end, and with its header chunk's CRC broken.
    let png = cargo_mcpp::pack::DEFAULT_ICON_PNG;
    let truncated_png = png[..png.len() - 20].to_vec();
    let mut bad_crc_png = png.to_vec();
    bad_crc_png[29] ^= 0xff;
    // A real 300x300 PNG: a valid icon for an AppImage, too large for an MSI's ICO image.
    let mut large_png = Vec::new();
    {
        let mut e = png::Encoder::new(&mut large_png, 300, 300);
        e.set_color(png::ColorType::Rgba);
        let mut w = e.write_header().unwrap();
        w.write_image_data(&vec![0u8; 300 * 300 * 4]).unwrap();
    }
    let cases: &[Case] = &[
        ("unknown format", "", "1.0.0", &["--format", "bogus"], &[]),
        ("unknown key", "ap-name = \"x\"", "1.0.0", appimage, &[]),
        ("icon of another format", "icon = \"icon.bmp\"", "1.0.0", appimage, &[("icon.bmp", b"BM")]),
        ("icon that is not what it says", "icon = \"icon.png\"", "1.0.0", appimage, &[("icon.png", b"GIF89a")]),
        ("PNG icon cut short", "icon = \"icon.png\"", "1.0.0", appimage, &[("icon.png", &truncated_png)]),
        ("PNG icon with a damaged chunk", "icon = \"icon.png\"", "1.0.0", appimage, &[("icon.png", &bad_crc_png)]),
        ("SVG icon that is not XML", "icon = \"icon.svg\"", "1.0.0", appimage, &[("icon.svg", b"<svg><g></svg>")]),
        ("SVG icon whose root is not <svg>", "icon = \"icon.svg\"", "1.0.0", appimage, &[("icon.svg", b"<html><svg/></html>")]),
        ("missing runtime", "", "1.0.0", appimage, &[]),
        ("runtime file that is not one", "", "1.0.0", &["--format", "appimage", "--runtime-file", "src/main.rs"], &[]),
        ("AppImage for aarch64", "", "1.0.0", &["--format", "appimage", "--target", "aarch64-unknown-linux-gnu"], &[]),
        ("x86-64 runtime for an aarch64 AppImage", "", "1.0.0", &["--format", "appimage", "--target", "aarch64-unknown-linux-gnu", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME)]),
        ("AppImage for Windows", "", "1.0.0", &["--format", "appimage", "--target", "x86_64-pc-windows-gnu"], &[]),
        ("bad category", "categories = [\"Utility;X\"]", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME)]),
        ("empty categories", "categories = []", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME)]),
        ("unregistered category", "categories = [\"Utilities\"]", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME)]),
        ("no main category", "categories = [\"Debugger\"]", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME)]),
        ("extra file through the program's place", "files = [{ glob = \"greet.txt\", dest = \"app\" }]", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME), ("greet.txt", b"hi")]),
        ("empty app-name", "app-name = \"\"", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME)]),
        ("app-name with a path", "app-name = \"../evil\"", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME)]),
        ("app-name illegal on Windows", "app-name = \"A:B\"", "1.0.0", msi_windows, &[]),
        ("hidden app-name", "app-name = \".app\"", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run"], &[("rt", RUNTIME)]),
        ("another profile", "", "1.0.0", &["--format", "appimage", "--profile", "dev"], &[]),
        ("another profile among cargo's arguments", "", "1.0.0", &["--format", "appimage", "--", "--profile=dev"], &[]),
        ("MSI for a non-Windows target", "", "1.0.0", &["--format", "msi", "--target", "x86_64-unknown-linux-gnu"], &[]),
        ("MSI of a pre-release", "", "1.2.3-beta.1", msi_windows, &[]),
        ("MSI version out of range", "version = \"1.256.0\"", "1.0.0", msi_windows, &[]),
        ("MSI upgrade code not a GUID", "[package.metadata.mcpp.pack.msi]\nupgrade-code = \"1234\"", "1.0.0", msi_windows, &[]),
        ("MSI icon larger than an ICO image holds", "icon = \"icon.png\"", "1.0.0", msi_windows, &[("icon.png", &large_png)]),
        ("MSI tool that does not exist", "[package.metadata.mcpp.pack.msi]\ntool = \"no/such/wixl\"", "1.0.0", msi_windows, &[]),
        ("accelerator set the build refuses", "", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--dry-run", "--accel", "cuda13+{sm_80}"], &[("rt", RUNTIME)]),
        ("no such binary target", "", "1.0.0", &["--format", "appimage", "--runtime-file", "rt", "--bin", "nope"], &[("rt", RUNTIME)]),
        (
            "missing executable",
            "\n[features]\ngui = []\n\n[[bin]]\nname = \"app\"\npath = \"src/main.rs\"\nrequired-features = [\"gui\"]",
            "1.0.0",
            &["--format", "appimage", "--runtime-file", "rt"],
            &[("rt", RUNTIME)],
        ),
    ];
    let mut all = String::new();
    for (name, pack, version, args, files) in cases {
        all.push_str(&format!(
            "===== {name}\n{}\n\n",
            refusal(pack, version, args, files)
        ));
    }
    insta::assert_snapshot!("pack_refusals", all);
}

/// The CRC-32 of PNG chunks (ISO 3309, the polynomial 0xEDB88320), for the test images.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The built-in 1x1 PNG with its header claiming `w` x `h` pixels (a valid header CRC).
fn png_claiming(w: u32, h: u32) -> Vec<u8> {
    let mut png = cargo_mcpp::pack::DEFAULT_ICON_PNG.to_vec();
    png[16..20].copy_from_slice(&w.to_be_bytes());
    png[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    png
}

/// A [`Case`] without the version, with what to make in the package before `pack` runs.
type SpecialCase<'a> = (
    &'a str,
    &'a str,
    &'a [&'a str],
    &'a [(&'a str, &'a [u8])],
    &'a dyn Fn(&std::path::Path),
);

/// An icon or runtime file that is no regular file, or too large, is refused before it is
/// read, naming the key and the limits: before, `/dev/zero` was read until memory ran out, a
/// FIFO blocked forever, and a 20000x20000 PNG header made the decoder allocate gigabytes.
#[test]
fn pack_refuses_inputs_that_are_no_regular_file_or_too_large_before_reading_them() {
    let fifo = |name: &'static str| {
        move |pkg: &std::path::Path| {
            let status = Command::new("mkfifo").arg(pkg.join(name)).status().unwrap();
            assert!(status.success());
        }
    };
    let to_dev_zero = |name: &'static str| {
        move |pkg: &std::path::Path| {
            std::os::unix::fs::symlink("/dev/zero", pkg.join(name)).unwrap()
        }
    };
    let dry: &[&str] = &["--format", "appimage", "--runtime-file", "rt", "--dry-run"];
    let huge = png_claiming(20000, 20000);
    let wide = png_claiming(1025, 16);
    let big = vec![b' '; (4 << 20) + 1];
    let cases: &[SpecialCase] = &[
        (
            "icon linked to /dev/zero",
            "icon = \"icon.png\"",
            dry,
            &[("rt", RUNTIME)],
            &to_dev_zero("icon.png"),
        ),
        (
            "icon that is a FIFO",
            "icon = \"icon.svg\"",
            dry,
            &[("rt", RUNTIME)],
            &fifo("icon.svg"),
        ),
        (
            "icon that is a directory",
            "icon = \"icon.png\"",
            dry,
            &[("rt", RUNTIME)],
            &|p| std::fs::create_dir(p.join("icon.png")).unwrap(),
        ),
        (
            "icon of more than 4 MiB",
            "icon = \"icon.svg\"",
            dry,
            &[("rt", RUNTIME), ("icon.svg", &big)],
            &|_| {},
        ),
        (
            "PNG icon claiming 20000x20000 pixels",
            "icon = \"icon.png\"",
            dry,
            &[("rt", RUNTIME), ("icon.png", &huge)],
            &|_| {},
        ),
        (
            "PNG icon wider than 1024 pixels",
            "icon = \"icon.png\"",
            dry,
            &[("rt", RUNTIME), ("icon.png", &wide)],
            &|_| {},
        ),
        (
            "runtime file /dev/zero",
            "",
            &[
                "--format",
                "appimage",
                "--runtime-file",
                "/dev/zero",
                "--dry-run",
            ],
            &[],
            &|_| {},
        ),
        ("runtime file that is a FIFO", "", dry, &[], &fifo("rt")),
        (
            "manifest runtime-file linked to /dev/zero",
            "[package.metadata.mcpp.pack.appimage]\nruntime-file = \"rt\"",
            &["--format", "appimage", "--dry-run"],
            &[],
            &to_dev_zero("rt"),
        ),
    ];
    let mut all = String::new();
    for (name, pack, args, files, prepare) in cases {
        all.push_str(&format!(
            "===== {name}\n{}\n\n",
            refusal_with(pack, "1.0.0", args, files, *prepare)
        ));
    }
    insta::assert_snapshot!("pack_special_inputs", all);
}
