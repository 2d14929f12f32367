//! What the selected compiler accepts is known before it compiles: an accelerator value the real
//! glslangValidator, glslc or nvcc would reject is refused with its column and the values the
//! compiler does accept, and no compile starts.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use cargo_mcpp::ErrorKind;
use std::path::Path;

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";

/// Whether the installed `program` lists `vulkan1.4` in its `--help` (glslang 15.1 or later).
fn lists_vulkan14(program: &str) -> bool {
    let out = std::process::Command::new(harness::real_tool(program))
        .arg("--help")
        .output()
        .unwrap();
    harness::text(&out).contains("vulkan1.4")
}

#[test]
fn a_vulkan_target_env_the_compiler_rejects_is_refused_with_the_column_and_what_it_accepts() {
    for (compiler, program) in [("glslang", "glslangValidator"), ("glslc", "glslc")] {
        let body = format!("accel = \"vulkan1.4\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\ncompiler = \"{compiler}\"");
        let pkg = harness::Package::new(&[
            ("Cargo.toml", &harness::manifest("accepted", &body)),
            ("s/x.comp", COMP),
        ]);
        if lists_vulkan14(program) {
            assert_eq!(
                pkg.compile(&pkg.build()).payloads,
                1,
                "{program} lists vulkan1.4 and compiles it"
            );
            continue;
        }
        let err = pkg.build().try_compile().unwrap_err();
        assert_eq!(err.kind, ErrorKind::Accel);
        let e = err.to_string();
        assert!(
            e.contains(&format!("{program} ("))
                && e.contains(") does not accept --target-env vulkan1.4"),
            "{e}"
        );
        assert!(
            e.contains("it accepts: vulkan1.0 vulkan1.1 vulkan1.2 vulkan1.3"),
            "{e}"
        );
        assert!(
            e.contains("column 7 of the entry `vulkan1.4`")
                && e.contains("package.metadata.mcpp.accel"),
            "{e}"
        );
        assert_eq!(
            pkg.starts(program),
            2,
            "{program}: its --version and --help, no compile"
        );
        // Asked once: a second refused build starts nothing.
        pkg.build().try_compile().unwrap_err();
        assert_eq!(pkg.starts(program), 2, "{program}: the answer is cached");
        // Set through spirv.target-env, the refusal names that key.
        pkg.write("Cargo.toml", &harness::manifest("accepted", &format!("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\ncompiler = \"{compiler}\"\ntarget-env = \"vulkan1.4\"")));
        let e = pkg.refuse(&pkg.build());
        assert!(
            e.contains("package.metadata.mcpp.spirv.target-env")
                && e.contains("does not accept --target-env vulkan1.4"),
            "{e}"
        );
    }
}

fn cuda_build(tmp: &Path, pkg: &Path, accel: &str) -> cargo_mcpp::Build {
    let mut b = cargo_mcpp::Build::new();
    b.manifest_dir(pkg)
        .out_dir(tmp.join("out"))
        .work_dir(tmp.join("work"))
        .release(false)
        .jobs(2)
        .env("MCPP_HOME", tmp.join("mcpp-home"));
    for v in [
        "NVCC",
        "MCPP_NVCC",
        "MCPP_TOOL_NVCC",
        "CUDA_HOME",
        "CUDAHOSTCXX",
        "NVCC_CCBIN",
        "MCPP_ACCEL",
        "MCPP_NO_ACCEL",
        "TARGET",
        "HOST",
    ] {
        b.env_remove(v);
    }
    b.env("CUDA_PATH", harness::cuda13()).accel(accel);
    b
}

#[test]
fn cuda_architectures_and_floors_nvcc_rejects_are_refused_before_compiling() {
    let (tmp, pkg) = harness::fixture("cuda-island");
    // (accel, the value named, its column in the entry)
    let cases = [
        ("cuda13.0+{sm_80a}", "`sm_80a` in `cuda13.0+{sm_80a}` is not an architecture nvcc 13.0 compiles for", 11),
        ("cuda13.0+{sm_90,sm_8}", "`sm_8` in", 17),
        ("cuda13.0+{sm_080}", "`sm_080` in", 11),
        ("cuda13.0+{sm_99}", "`sm_99` in", 11),
        ("cuda13.0+{sm_90f}", "`sm_90f` in", 11),
        ("cuda13.0+{sm_90} ptx>=0", "`ptx>=0` in `cuda13.0+{sm_90} ptx>=0` names no virtual architecture nvcc 13.0 generates PTX for", 23),
        ("cuda13.0+{sm_90} ptx>=10", "`ptx>=10` in", 23),
        ("cuda13.0+{sm_90} ptx>=85", "`ptx>=85` in", 23),
    ];
    for (accel, named, column) in cases {
        let err = cuda_build(tmp.path(), &pkg, accel)
            .try_compile()
            .unwrap_err();
        let e = err.to_string();
        assert_eq!(err.kind, ErrorKind::Accel, "{accel}: {e}");
        assert!(e.contains(named), "{accel}: {e}");
        assert!(e.contains(&format!("^ column {column}")), "{accel}: {e}");
        assert!(
            e.contains("nvcc 13.0 accepts: sm_75 sm_80 sm_86")
                && e.contains("sm_Na from sm_90, sm_Nf from sm_100"),
            "{accel}: {e}"
        );
        assert!(
            !harness::walk(&tmp.path().join("work"))
                .iter()
                .any(|p| p.extension().is_some_and(|x| x == "o")),
            "{accel}: nothing compiled"
        );
    }
}
