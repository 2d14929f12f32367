//! `cargo mcpp pack --format msi` for real on Linux (../shared/toolchains/README.md 10): a
//! dependency-free Windows program cross-built by Debian's own cargo and rustc 1.63 with the
//! Windows std and mingw (`/usr/bin/cargo mcpp pack ...` runs cargo-mcpp as that cargo's
//! subcommand), the MSI written by wixl and read back by msitools (`msiinfo export ... Property`
//! / `File`, `msiextract` giving back the same bytes), then installed under Wine (`msiexec /i
//! /qn`: the program runs from `C:\Program Files\<app>\`), upgraded in place by 1.2.4, the
//! downgrade to 1.2.3 refused, and removed (`msiexec /x`).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::{real_tool, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MAIN_RS: &str = r#"fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let beside = std::env::current_exe().unwrap().parent().unwrap().join("data").join("greeting.txt");
    let greeting = std::fs::read_to_string(&beside).unwrap_or_else(|e| format!("no greeting: {e}"));
    println!("winhello {} [{}] {}", env!("CARGO_PKG_VERSION"), args.join("|"), greeting.trim());
    std::process::exit(args.last().and_then(|a| a.parse().ok()).unwrap_or(0));
}
"#;

const TARGET: &str = "x86_64-pc-windows-gnu";

/// A build script listing one sidecar, `kernels/main.bin` beside the program, in
/// `OUT_DIR/mcpp-sidecars.json` (the producer's contract, README "Sidecars").
const SIDECAR_BUILD_RS: &str = r#"fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("kernel.bin"), "kernel bytes\n").unwrap();
    let list = format!("{{\"version\":1,\"sidecars\":[{{\"source\":{:?},\"relative\":\"kernels/main.bin\"}}]}}", out.join("kernel.bin").display().to_string());
    std::fs::write(out.join("mcpp-sidecars.json"), list).unwrap();
}
"#;

fn manifest(version: &str) -> String {
    format!(
        "[package]\nname = \"winhello\"\nversion = \"{version}\"\nedition = \"2021\"\ndescription = \"Says hello on Windows\"\nauthors = [\"Ann Example <ann@example.org>\"]\nrepository = \"https://example.org/winhello\"\n\n[workspace]\n\n[package.metadata.mcpp.pack]\napp-name = \"WinHello\"\nfiles = [{{ glob = \"data/*.txt\", dest = \"data\" }}]\n"
    )
}

struct Win {
    tmp: tempfile::TempDir,
}

impl Win {
    fn new() -> Win {
        let tmp = tempfile::Builder::new()
            .prefix("mcpp-msi-")
            .tempdir()
            .unwrap();
        let pkg = tmp.path().join("pkg");
        std::fs::create_dir_all(pkg.join("src")).unwrap();
        std::fs::create_dir_all(pkg.join("data")).unwrap();
        std::fs::write(pkg.join("Cargo.toml"), manifest("1.2.3")).unwrap();
        std::fs::write(pkg.join("src/main.rs"), MAIN_RS).unwrap();
        std::fs::write(pkg.join("data/greeting.txt"), "good day\n").unwrap();
        std::fs::write(pkg.join("build.rs"), SIDECAR_BUILD_RS).unwrap();
        Win { tmp }
    }
    fn pkg(&self) -> PathBuf {
        self.tmp.path().join("pkg")
    }
    /// `/usr/bin/cargo mcpp ...`: Debian's cargo and rustc, this cargo-mcpp first on PATH.
    fn cargo_mcpp(&self, args: &[&str]) -> Output {
        let me = PathBuf::from(env!("CARGO_BIN_EXE_cargo-mcpp"));
        let path = std::env::join_paths(std::iter::once(me.parent().unwrap().to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        Command::new("/usr/bin/cargo")
            .arg("mcpp")
            .args(args)
            .current_dir(self.pkg())
            .env("PATH", path)
            .env("RUSTC", "/usr/bin/rustc")
            .env("MCPP_HOME", self.tmp.path().join("mcpp-home"))
            .env("CARGO_TARGET_DIR", self.tmp.path().join("target"))
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO")
            .output()
            .unwrap()
    }
    fn msi(&self, version: &str) -> PathBuf {
        self.tmp.path().join(format!(
            "target/{TARGET}/release/pack/WinHello-{version}-x64.msi"
        ))
    }
    fn wine(&self, args: &[&str]) -> Output {
        Command::new("/usr/lib/wine/wine64")
            .args(args)
            .env("WINEPREFIX", self.tmp.path().join("wine"))
            .env("WINEDEBUG", "-all")
            .env_remove("DISPLAY")
            .output()
            .unwrap()
    }
    fn installed(&self) -> PathBuf {
        self.tmp.path().join("wine/drive_c/Program Files/WinHello")
    }
}

/// The rows of `msiinfo export <msi> <table>` as tab-separated fields (header rows left out).
fn table(msi: &Path, name: &str) -> Vec<Vec<String>> {
    // msiinfo writes a binary column's streams (the Icon table's) as files under the current
    // directory: the package's, never the repository's.
    let out = Command::new(real_tool("msiinfo"))
        .args(["export"])
        .arg(msi)
        .arg(name)
        .current_dir(msi.parent().unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(3)
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn property(msi: &Path, key: &str) -> String {
    table(msi, "Property")
        .into_iter()
        .find(|r| r[0] == key)
        .map(|r| r[1].clone())
        .unwrap_or_else(|| panic!("no {key} in {}", msi.display()))
}

#[test]
fn an_msi_is_read_back_by_msitools_installed_upgraded_refused_downgraded_and_removed_under_wine() {
    assert!(
        Path::new("/usr/bin/cargo").is_file() && Path::new("/usr/lib/wine/wine64").is_file(),
        "Debian's cargo and wine64 are not installed; run scripts/setup-toolchains.sh"
    );
    let w = Win::new();
    // The dry run: every file with its source and place, wixl named; no package.
    let dry = w.cargo_mcpp(&["pack", "--format", "msi", "--target", TARGET, "--dry-run"]);
    let plan = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(dry.status.success(), "{}", text(&dry));
    for line in [
        "winhello.exe (executable)  <-  ",
        "data/greeting.txt  <-  ",
        "tool:    /usr/bin/wixl (0.101) -a x64 -o ",
        "version 1.2.3)",
    ] {
        assert!(plan.contains(line), "`{line}` not in the plan:\n{plan}");
    }
    assert!(
        !w.msi("1.2.3").exists() && !w.msi("1.2.3").with_extension("wxs").exists(),
        "--dry-run wrote the package"
    );
    let out = w.cargo_mcpp(&["pack", "--format", "msi", "--target", TARGET]);
    assert!(out.status.success(), "{}", text(&out));
    let msi3 = w.msi("1.2.3");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .starts_with(&format!("Packed {} (", msi3.display())),
        "{}",
        text(&out)
    );
    let exe = w
        .tmp
        .path()
        .join(format!("target/{TARGET}/release/winhello.exe"));

    // The Property and File tables, and the files given back byte for byte.
    let upgrade = property(&msi3, "UpgradeCode");
    assert_eq!(upgrade.len(), 38, "{upgrade}");
    assert_eq!(property(&msi3, "ProductVersion"), "1.2.3");
    assert_eq!(property(&msi3, "ProductName"), "WinHello");
    assert_eq!(property(&msi3, "Manufacturer"), "Ann Example");
    let mut files: Vec<(String, String)> = table(&msi3, "File")
        .into_iter()
        .map(|r| (r[2].clone(), r[3].clone()))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            ("greeting.txt".to_string(), "9".to_string()),
            ("main.bin".to_string(), "13".to_string()),
            (
                "winhello.exe".to_string(),
                std::fs::metadata(&exe).unwrap().len().to_string()
            )
        ]
    );
    let x = w.tmp.path().join("extracted");
    let ex = Command::new(real_tool("msiextract"))
        .arg("-C")
        .arg(&x)
        .arg(&msi3)
        .output()
        .unwrap();
    assert!(ex.status.success(), "{}", text(&ex));
    assert_eq!(
        std::fs::read(x.join("WinHello/winhello.exe")).unwrap(),
        std::fs::read(&exe).unwrap()
    );
    assert_eq!(
        std::fs::read(x.join("WinHello/data/greeting.txt")).unwrap(),
        b"good day\n"
    );
    assert_eq!(
        std::fs::read(x.join("WinHello/kernels/main.bin")).unwrap(),
        b"kernel bytes\n",
        "the sidecar beside the program"
    );
    assert_eq!(table(&msi3, "Component").len(), 3, "one component per file");

    // The resolver's decision for wixl is where `why tool` reads it.
    let why = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args([
            "mcpp",
            "why",
            "tool",
            "wixl",
            "--release",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(w.tmp.path().join("target"))
        .current_dir(w.pkg())
        .output()
        .unwrap();
    assert!(
        why.status.success() && text(&why).contains("answer:  /usr/bin/wixl"),
        "{}",
        text(&why)
    );

    // Installed under Wine, the program runs from Program Files.
    let i = w.wine(&["msiexec", "/i", msi3.to_str().unwrap(), "/qn"]);
    assert!(i.status.success(), "install 1.2.3: {}", text(&i));
    assert_eq!(
        std::fs::read(w.installed().join("kernels/main.bin")).unwrap(),
        b"kernel bytes\n",
        "the sidecar installed beside the program"
    );
    let run = w.wine(&["C:\\Program Files\\WinHello\\winhello.exe", "a", "5"]);
    assert_eq!(
        (
            String::from_utf8_lossy(&run.stdout).replace('\r', ""),
            run.status.code()
        ),
        ("winhello 1.2.3 [a|5] good day\n".to_string(), Some(5)),
        "{}",
        text(&run)
    );

    // 1.2.4: the same UpgradeCode, another ProductCode; it replaces 1.2.3 in place.
    std::fs::write(w.pkg().join("Cargo.toml"), manifest("1.2.4")).unwrap();
    let out = w.cargo_mcpp(&["pack", "--format", "msi", "--target", TARGET]);
    assert!(out.status.success(), "{}", text(&out));
    let msi4 = w.msi("1.2.4");
    assert_eq!(property(&msi4, "UpgradeCode"), upgrade);
    assert_ne!(
        property(&msi4, "ProductCode"),
        property(&msi3, "ProductCode")
    );
    let i = w.wine(&["msiexec", "/i", msi4.to_str().unwrap(), "/qn"]);
    assert!(i.status.success(), "upgrade to 1.2.4: {}", text(&i));
    let run = w.wine(&["C:\\Program Files\\WinHello\\winhello.exe"]);
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).replace('\r', ""),
        "winhello 1.2.4 [] good day\n",
        "{}",
        text(&run)
    );

    // 1.2.3 over 1.2.4 is refused (MajorUpgrade's downgrade error), and 1.2.4 stays.
    let d = w.wine(&["msiexec", "/i", msi3.to_str().unwrap(), "/qn"]);
    assert!(
        !d.status.success(),
        "the downgrade was installed: {}",
        text(&d)
    );
    let run = w.wine(&["C:\\Program Files\\WinHello\\winhello.exe"]);
    assert!(
        String::from_utf8_lossy(&run.stdout).starts_with("winhello 1.2.4 "),
        "{}",
        text(&run)
    );

    // Removed.
    let r = w.wine(&["msiexec", "/x", msi4.to_str().unwrap(), "/qn"]);
    assert!(r.status.success(), "remove: {}", text(&r));
    assert!(
        !w.installed().join("winhello.exe").exists(),
        "still installed after msiexec /x"
    );
}

/// The WiX v4+ route, argv-verified: on this Linux machine there is no `wix` (a .NET tool for
/// Windows), so `pack.msi.tool` names the recording shim installed as `wix`; the route is
/// chosen by that name. The test checks the argv pack gives it (`wix build -arch x64 -o <msi>
/// <wxs>`) and the rendered source: XML whose root is `<Wix>` in the WiX v4 namespace, a
/// `Package` with the version, UpgradeCode and ProductCode, `MajorUpgrade`,
/// `StandardDirectory ProgramFiles64Folder`, one 64-bit component per file with its absolute
/// source, each referenced by the feature. What `wix` itself makes of it is not run here.
#[test]
fn a_wix4_msi_is_argv_verified_through_the_recording_shim_with_a_v4_source() {
    assert!(
        Path::new("/usr/bin/cargo").is_file(),
        "Debian's cargo is not installed; run scripts/setup-toolchains.sh"
    );
    let w = Win::new();
    let wix = harness::Shim::install(&w.tmp.path().join("wix-bin"), "wix");
    wix.answer_version("wix 5.0.2+recording-shim");
    std::fs::write(
        w.pkg().join("Cargo.toml"),
        format!(
            "{}\n[package.metadata.mcpp.pack.msi]\ntool = {:?}\n",
            manifest("1.2.3"),
            wix.path().display().to_string()
        ),
    )
    .unwrap();
    let dry = w.cargo_mcpp(&["pack", "--format", "msi", "--target", TARGET, "--dry-run"]);
    let plan = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(
        dry.status.success()
            && plan.contains(&format!(
                "tool:    {} (wix 5.0.2+recording-shim) build -arch x64 -o ",
                wix.path().display()
            ))
            && plan.contains("(WiX v4 source;"),
        "{}",
        text(&dry)
    );
    assert!(
        wix.records().iter().all(|r| r.is_probe()),
        "the dry run ran wix"
    );

    let out = w.cargo_mcpp(&["pack", "--format", "msi", "--target", TARGET]);
    assert!(out.status.success(), "{}", text(&out));
    let msi = w.msi("1.2.3");
    let wxs = msi.with_extension("wxs");
    let runs: Vec<_> = wix
        .records()
        .into_iter()
        .filter(|r| !r.is_probe())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        runs[0].args,
        [
            "build",
            "-arch",
            "x64",
            "-o",
            msi.to_str().unwrap(),
            wxs.to_str().unwrap()
        ]
    );

    let source = std::fs::read_to_string(&wxs).unwrap();
    let doc = roxmltree::Document::parse(&source)
        .unwrap_or_else(|e| panic!("the v4 source is not XML: {e}\n{source}"));
    const V4: &str = "http://wixtoolset.org/schemas/v4/wxs";
    let root = doc.root_element();
    assert_eq!(
        (root.tag_name().namespace(), root.tag_name().name()),
        (Some(V4), "Wix"),
        "{source}"
    );
    assert!(
        doc.descendants()
            .filter(|n| n.is_element())
            .all(|n| n.tag_name().namespace() == Some(V4)),
        "an element outside the v4 namespace:\n{source}"
    );
    let element = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name((V4, name)))
            .unwrap_or_else(|| panic!("no <{name}>:\n{source}"))
    };
    let package = element("Package");
    assert_eq!(package.attribute("Version"), Some("1.2.3"));
    assert_eq!(package.attribute("Name"), Some("WinHello"));
    assert_eq!(package.attribute("Manufacturer"), Some("Ann Example"));
    assert_eq!(package.attribute("Scope"), Some("perMachine"));
    for code in ["UpgradeCode", "ProductCode"] {
        assert_eq!(
            package.attribute(code).map(str::len),
            Some(38),
            "{code}:\n{source}"
        );
    }
    assert!(element("MajorUpgrade")
        .attribute("DowngradeErrorMessage")
        .unwrap_or_default()
        .contains("newer version"));
    assert_eq!(
        element("StandardDirectory").attribute("Id"),
        Some("ProgramFiles64Folder")
    );
    assert_eq!(element("Directory").attribute("Name"), Some("WinHello"));
    let exe = w
        .tmp
        .path()
        .join(format!("target/{TARGET}/release/winhello.exe"));
    let mut files: Vec<(String, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name((V4, "File")))
        .map(|f| {
            (
                f.attribute("Name").unwrap().to_string(),
                f.attribute("Source").unwrap().to_string(),
            )
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    assert_eq!(
        files[0],
        (
            "greeting.txt".to_string(),
            w.pkg().join("data/greeting.txt").display().to_string()
        )
    );
    assert!(
        files[1].0 == "main.bin"
            && files[1].1.ends_with("/out/kernel.bin")
            && Path::new(&files[1].1).is_file(),
        "the sidecar, from OUT_DIR: {files:?}"
    );
    assert_eq!(
        files[2],
        ("winhello.exe".to_string(), exe.display().to_string())
    );
    let kernels = doc
        .descendants()
        .find(|n| n.has_tag_name((V4, "Directory")) && n.attribute("Name") == Some("kernels"))
        .expect("a kernels directory");
    assert!(
        kernels
            .descendants()
            .any(|n| n.has_tag_name((V4, "File")) && n.attribute("Name") == Some("main.bin")),
        "{source}"
    );
    let components: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name((V4, "Component")))
        .map(|c| {
            assert_eq!(c.attribute("Bitness"), Some("always64"));
            c.attribute("Id").unwrap()
        })
        .collect();
    let mut refs: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name((V4, "ComponentRef")))
        .map(|c| c.attribute("Id").unwrap())
        .collect();
    let mut ids = components.clone();
    ids.sort();
    refs.sort();
    assert_eq!(refs, ids, "every component in the feature:\n{source}");
    assert!(msi.is_file(), "the shim's -o output");
}

/// A `[package.metadata.mcpp.pack]` table does not make `cargo mcpp build` need the AppImage
/// runtime (a toolchain package only `pack --format appimage` takes): before, every
/// `cargo mcpp build --offline` of such a package was refused for want of it in the cache,
/// also for a package only ever packed as an MSI.
#[test]
fn a_pack_table_does_not_make_an_offline_build_need_the_appimage_runtime() {
    let pkg = harness::Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "[package]\nname = \"msi-only\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\nembed = [\"data/*\"]\n\n[package.metadata.mcpp.pack]\napp-name = \"MsiOnly\"\n\n[workspace]\n",
                harness::client_dependency()
            ),
        ),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("data/greeting.txt", "good day\n"),
    ]);
    let out = pkg.cargo_mcpp_build(&["--offline"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("appimage-runtime"), "{}", text(&out));
}

/// `pack.icon` is the MSI's product icon (Programs and Features shows it): an Icon table row
/// holding the PNG wrapped as an ICO image, named by `ARPPRODUCTICON` (before, the Icon table
/// was empty and the property absent). The icon's bytes are read back from the MSI.
#[test]
fn an_msi_carries_the_pack_icon_as_its_product_icon() {
    let w = Win::new();
    let png = cargo_mcpp::pack::DEFAULT_ICON_PNG;
    std::fs::write(w.pkg().join("icon.png"), png).unwrap();
    let manifest = std::fs::read_to_string(w.pkg().join("Cargo.toml")).unwrap();
    std::fs::write(
        w.pkg().join("Cargo.toml"),
        manifest.replace(
            "app-name = \"WinHello\"\n",
            "app-name = \"WinHello\"\nicon = \"icon.png\"\n",
        ),
    )
    .unwrap();
    let out = w.cargo_mcpp(&["pack", "--format", "msi", "--target", TARGET]);
    assert!(out.status.success(), "{}", text(&out));
    let msi = w.msi("1.2.3");
    let icon = property(&msi, "ARPPRODUCTICON");
    assert!(icon.ends_with(".ico"), "ARPPRODUCTICON = `{icon}`");
    let rows = table(&msi, "Icon");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][0], icon);
    let x = tempfile::tempdir().unwrap();
    let stream = Command::new(real_tool("msiinfo"))
        .arg("extract")
        .arg(&msi)
        .arg(format!("Icon.{icon}"))
        .current_dir(x.path())
        .output()
        .unwrap();
    assert!(stream.status.success(), "{}", text(&stream));
    let ico = stream.stdout;
    // An ICO directory of one image (type 1, count 1), 1x1, 32 bits, the PNG at offset 22.
    assert_eq!(&ico[..6], b"\0\0\x01\0\x01\0");
    assert_eq!((ico[6], ico[7]), (1, 1));
    assert_eq!(
        u32::from_le_bytes(ico[14..18].try_into().unwrap()) as usize,
        png.len()
    );
    assert_eq!(&ico[22..], png);
}
