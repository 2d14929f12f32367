//! `cargo mcpp build --message-format json`: the device phase's lines among cargo's
//! own on standard output, every line JSON: a glslang error as a `compiler-message` with its
//! file and line, each device artifact with its sha256, the package's `mcpp-device-finished`,
//! and cargo's messages after them, its `build-finished` last.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use harness::text;
use std::process::Output;

fn build_json(pkg: &harness::Package) -> Output {
    pkg.cargo_mcpp_build(&["--message-format", "json"])
        .env("GLSLANG_VALIDATOR", pkg.counting_tool("glslangValidator"))
        .output()
        .unwrap()
}

/// Every stdout line, parsed (the test fails on a line that is not JSON).
fn messages(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{}", text(out)))
        })
        .collect()
}

#[test]
fn device_messages_are_cargo_style_json_lines_before_cargos_own() {
    let pkg = harness::client_package("json-pkg", "", "mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\nfn main() { println!(\"{}\", shaders::a::scale_comp().code.len()); }\n");
    let shader = pkg.path("shaders/b/scale.comp");
    let good = std::fs::read_to_string(&shader).unwrap();
    std::fs::write(
        &shader,
        good.replace("data[i] * data[i]", "data[i] * undefined_name"),
    )
    .unwrap();

    let out = build_json(&pkg);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let m = messages(&out);
    let error = m
        .iter()
        .find(|v| v["reason"] == "compiler-message" && v["package_id"] == "mcpp-device:json-pkg")
        .unwrap_or_else(|| panic!("no device compiler-message: {m:#?}"));
    assert_eq!(error["message"]["level"], "error", "{error:#}");
    let span = &error["message"]["spans"][0];
    assert!(
        span["file_name"]
            .as_str()
            .unwrap()
            .ends_with("shaders/b/scale.comp"),
        "{error:#}"
    );
    assert_eq!(span["line_start"], 4, "{error:#}");
    assert!(
        error["message"]["message"]
            .as_str()
            .unwrap()
            .contains("undefined_name"),
        "{error:#}"
    );
    // `rendered` is the compiler's line, not prefixed with the action's description.
    assert!(
        error["message"]["rendered"]
            .as_str()
            .unwrap()
            .starts_with("ERROR: "),
        "{error:#}"
    );
    assert!(
        m.iter()
            .any(|v| v["reason"] == "mcpp-device-finished" && v["success"] == false),
        "{m:#?}"
    );

    std::fs::write(&shader, &good).unwrap();
    let out = build_json(&pkg);
    assert!(out.status.success(), "{}", text(&out));
    let m = messages(&out);
    let artifacts: Vec<&serde_json::Value> = m
        .iter()
        .filter(|v| v["reason"] == "mcpp-device-artifact")
        .collect();
    assert_eq!(artifacts.len(), 2, "two SPIR-V payloads: {m:#?}");
    for a in &artifacts {
        let bytes = std::fs::read(a["path"].as_str().unwrap()).unwrap();
        assert_eq!(a["sha256"].as_str().unwrap(), sha256(&bytes), "{a:#}");
    }
    let finished = m
        .iter()
        .position(|v| v["reason"] == "mcpp-device-finished" && v["success"] == true)
        .unwrap_or_else(|| panic!("{m:#?}"));
    // The device phase runs in the build script, before the crate itself compiles.
    let crate_artifact = m
        .iter()
        .position(|v| {
            v["reason"] == "compiler-artifact"
                && v["target"]["name"] == "json-pkg"
                && v["target"]["kind"][0] == "bin"
        })
        .unwrap_or_else(|| panic!("{m:#?}"));
    assert!(finished < crate_artifact, "{m:#?}");
    assert_eq!(m.last().unwrap()["reason"], "build-finished");
    assert_eq!(
        m.iter().filter(|v| v["reason"] == "build-finished").count(),
        1,
        "only cargo's own build-finished"
    );
}

fn sha256(bytes: &[u8]) -> String {
    cargo_mcpp::engine::fingerprint::sha256_hex(bytes)
}

/// A package of one Slang compute shader (`shaders/s.slang`, `body` its statements) built by
/// `cargo mcpp build --message-format json` with the installed slangc.
fn slang_json(body: &str) -> (harness::Package, Output, Vec<serde_json::Value>) {
    let shader = format!("RWStructuredBuffer<float> data;\n[shader(\"compute\")]\n[numthreads(1, 1, 1)]\nvoid main(uint3 id : SV_DispatchThreadID) {{\n{body}\n}}\n");
    let pkg = harness::Package::new(&[
        (
            "Cargo.toml",
            &format!("[package]\nname = \"slang-json\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/*.slang\"]\n\n[workspace]\n", harness::client_dependency()),
        ),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        ("src/lib.rs", "\n"),
        ("shaders/s.slang", &shader),
    ]);
    let out = pkg
        .cargo_mcpp_build(&["--message-format", "json"])
        .env("SLANGC", harness::real_slangc())
        .env_remove("MCPP_SLANGC")
        .env_remove("MCPP_TOOL_SLANGC")
        .output()
        .unwrap();
    let m = messages(&out);
    (pkg, out, m)
}

#[test]
fn slangcs_diagnostics_are_compiler_messages_with_their_place_and_counted_once() {
    // slangc 2026.x: `error[E30015]: undefined identifier` then ` --> file:5:19`.
    let (pkg, out, m) = slang_json("    data[id.x] = undefined_name;");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let error = m
        .iter()
        .find(|v| v["reason"] == "compiler-message" && v["package_id"] == "mcpp-device:slang-json")
        .unwrap_or_else(|| panic!("no Slang compiler-message: {m:#?}\n{}", text(&out)));
    assert_eq!(error["message"]["level"], "error", "{error:#}");
    let span = &error["message"]["spans"][0];
    assert!(
        span["file_name"].as_str().unwrap().ends_with("s.slang"),
        "{error:#}"
    );
    assert_eq!(
        (span["line_start"].as_u64(), span["column_start"].as_u64()),
        (Some(5), Some(18)),
        "{error:#}"
    );
    let rendered = error["message"]["rendered"].as_str().unwrap();
    assert!(
        rendered.starts_with("error[E30015]: undefined identifier\n") && rendered.contains("--> "),
        "the compiler's text, no prefix: {rendered}"
    );
    drop(pkg);

    // One warning (slangc prints five lines for it): counted once.
    let (_pkg, out, m) = slang_json("    int k = 1.5;\n    data[id.x] = k;");
    assert!(out.status.success(), "{}", text(&out));
    let warnings: Vec<&serde_json::Value> = m
        .iter()
        .filter(|v| v["reason"] == "compiler-message" && v["message"]["level"] == "warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{m:#?}");
    let finished = m
        .iter()
        .find(|v| v["reason"] == "mcpp-device-finished")
        .unwrap();
    assert_eq!(finished["warnings"], 1, "{finished:#}");
}

#[test]
fn a_message_format_given_to_cargo_after_the_separator_is_honoured() {
    let pkg = harness::client_package("json-sep", "", "mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\nfn main() { println!(\"{}\", shaders::a::scale_comp().code.len()); }\n");
    for format in [
        &["--", "--message-format", "json"][..],
        &["--", "--message-format=json"][..],
    ] {
        std::fs::remove_dir_all(pkg.dir.path().join("target")).ok();
        let out = pkg
            .cargo_mcpp_build(format)
            .env("GLSLANG_VALIDATOR", pkg.counting_tool("glslangValidator"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let m = messages(&out);
        assert!(
            m.iter()
                .any(|v| v["reason"] == "mcpp-device-finished" && v["success"] == true),
            "{format:?}: {m:#?}"
        );
        assert_eq!(m.last().unwrap()["reason"], "build-finished");
    }
}
