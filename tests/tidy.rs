//! `cargo xtask tidy` under `cargo test`: ARCHITECTURE.md names every module, no stubs, and
//! processes are started only where the architecture says.

#[test]
fn tidy() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--package", "xtask", "--", "tidy"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo run xtask");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
