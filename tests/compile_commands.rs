//! `compile_commands.json` (issue 14, `src/compile_db.rs`): every device and host C++ unit of a
//! build with its real argv (no launcher), in the device cache and in the directory asked for,
//! written only when changed, and good enough for clangd: `clangd-19 --check` over the CUDA
//! kernel of the cuda-island fixture built by the clang route finds no error. (nvcc's own argv
//! is listed as it ran; clangd's clang 19 reads neither nvcc's options, `-gencode`, `-ccbin`,
//! nor CUDA 13's headers: README.md "compile_commands.json".)
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

mod harness;

use harness::*;
use std::path::{Path, PathBuf};

fn entries(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str::<Vec<serde_json::Value>>(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn clangd() -> PathBuf {
    ["/usr/bin/clangd-19", "/usr/lib/llvm-19/bin/clangd"].into_iter().map(PathBuf::from).find(|p| p.is_file()).expect("clangd-19 is installed (scripts/setup-toolchains.sh, component clangd)")
}

/// `clangd --check=<file>` with the database in `dir`: its exit status and output.
fn clangd_check(dir: &Path, file: &Path) -> (bool, String) {
    let out = std::process::Command::new(clangd())
        .arg(format!("--compile-commands-dir={}", dir.display()))
        .arg(format!("--check={}", file.display()))
        .arg("--log=error")
        // The check itself logs its errors at error level; 0 when none.
        .output()
        .unwrap();
    (out.status.success(), text(&out))
}

#[test]
fn every_unit_is_listed_with_its_real_argv_in_the_cache_and_the_copy() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(&pkg.join("Cargo.toml"), "sources = [\"kernels/*.cu\"]\n", "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/*.cppm\", \"cpp/*.cpp\"]\nlauncher = \"none\"\ncompile-commands = \".\"\n");
    edit(&pkg.join("Cargo.toml"), "flags = [\"--extra-flag\"]\n", "");
    let out = cuda_build(tmp.path(), &pkg, &cuda13()).env_remove("MCPP_LAUNCHER").env_remove("MCPP_COMPILE_COMMANDS").try_compile().unwrap_or_else(|e| panic!("{e}"));
    let in_cache = out.variant_dir.join("compile_commands.json");
    let copy = pkg.join("compile_commands.json");
    let listed = entries(&in_cache);
    assert_eq!(std::fs::read(&in_cache).unwrap(), std::fs::read(&copy).unwrap());
    let files: Vec<String> = listed.iter().map(|e| e["file"].as_str().unwrap().to_string()).collect();
    let cu = pkg.join("kernels/scale.cu");
    assert!(files.contains(&cu.display().to_string()), "{files:?}");
    assert!(files.contains(&pkg.join("cpp/use.cpp").display().to_string()), "{files:?}");
    let entry = listed.iter().find(|e| e["file"] == cu.display().to_string()).unwrap();
    let argv: Vec<&str> = entry["arguments"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(argv[0], cuda13().join("bin/nvcc").display().to_string(), "{argv:?}");
    assert!(argv.contains(&cu.to_str().unwrap()), "{argv:?}");

    // Written only when changed: a no-op build leaves the file's mtime.
    let before = std::fs::metadata(&copy).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    cuda_build(tmp.path(), &pkg, &cuda13()).env_remove("MCPP_LAUNCHER").env_remove("MCPP_COMPILE_COMMANDS").try_compile().unwrap();
    assert_eq!(std::fs::metadata(&copy).unwrap().modified().unwrap(), before);
    // MCPP_COMPILE_COMMANDS (what `--compile-commands DIR` sets) wins over the manifest key.
    let other = tmp.path().join("elsewhere");
    cuda_build(tmp.path(), &pkg, &cuda13()).env_remove("MCPP_LAUNCHER").env("MCPP_COMPILE_COMMANDS", &other).try_compile().unwrap();
    assert_eq!(std::fs::read(other.join("compile_commands.json")).unwrap(), std::fs::read(&copy).unwrap());
}

#[test]
fn clangd_checks_the_kernel_of_the_clang_route_with_the_database() {
    let (tmp, pkg) = fixture("cuda-island");
    let layout = cuda12_clang();
    edit(&pkg.join("Cargo.toml"), "flags = [\"--extra-flag\"]", "flags = []");
    edit(&pkg.join("Cargo.toml"), "[package.metadata.mcpp.cuda]\n", &format!("[package.metadata.mcpp.cuda]\ncompiler = \"clang\"\ntoolkit = \"{}\"\n", layout.display()));
    let out = cuda_build(tmp.path(), &pkg, &layout)
        .tool("clang++", "/usr/bin/clang++-19")
        .accel("cuda12.9+{sm_90}")
        .env("MCPP_COMPILE_COMMANDS", &pkg)
        .env("MCPP_LAUNCHER", "none")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.report.ran.contains(&"cuda:kernels/scale.cu".to_string()));
    let cu = pkg.join("kernels/scale.cu");
    let listed = entries(&pkg.join("compile_commands.json"));
    assert!(listed.iter().any(|e| e["file"] == cu.display().to_string() && e["arguments"][0] == "/usr/bin/clang++-19"), "{listed:#?}");
    let (ok, said) = clangd_check(&pkg, &cu);
    assert!(ok, "clangd --check failed:\n{said}");
    assert!(!said.contains("E["), "clangd logged an error:\n{said}");
    // The check can fail: a syntax error in the kernel is found through the same database.
    std::fs::write(&cu, format!("{}\nint broken = ;\n", std::fs::read_to_string(&cu).unwrap())).unwrap();
    let (ok, said) = clangd_check(&pkg, &cu);
    assert!(!ok && said.contains("E["), "{said}");
}
