//! A proptest over `[package.metadata.mcpp]`: random tables (keys from the valid set and junk
//! keys, values of every TOML type, strings with control characters, very long ones) never
//! panic `Manifest::parse` nor `pipeline::validate` on a temp package, and every error (and
//! every further problem it carries) names a file; every manifest error names a key.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use cargo_mcpp::config::manifest::Manifest;
use cargo_mcpp::pipeline::validate;
use cargo_mcpp::plan::accel::AccelChoice;
use cargo_mcpp::{Error, ErrorKind};
use proptest::prelude::*;
use toml::Value;

const KEYS: &[&str] = &[
    "accel",
    "sources",
    "module-name",
    "modules",
    "base-dir",
    "tools",
    "island",
    "cxx-sources",
    "cxx",
    "toolchain-packages",
    "payloads",
    "spirv",
    "cuda",
    "slang",
];
const INNER_KEYS: &[&str] = &[
    "compiler",
    "includes",
    "defines",
    "flags",
    "ccbin",
    "toolkit",
    "rdc",
    "target-env",
    "sources",
    "fallback",
    "header-includes",
    "glob",
    "accel",
    "glslangValidator",
    "glslc",
    "nvcc",
    "glslang",
    "std",
    "WORKGROUP",
];
const STRINGS: &[&str] = &[
    "vulkan1.2",
    "vulkan",
    "cuda13.0+{sm_80}",
    "cuda13.0+{sm_80,sm_90} ptx>=80",
    "none",
    "shaders/**/*.comp",
    "shaders/*.comp",
    "../outside/*.comp",
    ".[.]/x/*.comp",
    "/etc/passwd",
    "glslang",
    "glslc",
    "nvcc",
    "clang",
    "64",
    "",
    " ",
    "a\nb",
    "\u{1b}[31mred",
    "$(touch x)",
    "`id`",
    "x\u{0}y",
    "\r",
    "\u{7f}",
    "shaders",
    "x.shaders",
    "13.1.1",
    ">=13.1",
    "c++20",
    "-O3",
];

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(STRINGS).prop_map(str::to_string),
        2 => "\\PC{0,24}",
        2 => proptest::collection::vec(0u32..0x80, 0..16).prop_map(|v| v.into_iter().filter_map(char::from_u32).collect()),
        1 => (1usize..4).prop_map(|n| "é\u{1}x".repeat(n * 3_000)),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![4 => proptest::sample::select(INNER_KEYS).prop_map(str::to_string), 1 => string()]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        4 => string().prop_map(Value::String),
        1 => any::<i64>().prop_map(Value::Integer),
        1 => any::<bool>().prop_map(Value::Boolean),
        1 => (-1e6f64..1e6).prop_map(Value::Float),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Table(m.into_iter().collect())),
        ]
    })
}

fn mcpp_table() -> impl Strategy<Value = toml::Table> {
    let k =
        prop_oneof![5 => proptest::sample::select(KEYS).prop_map(str::to_string), 1 => string()];
    proptest::collection::btree_map(k, value(), 0..6).prop_map(|m| m.into_iter().collect())
}

/// Every error in `e` (itself and what it carries) names a file; manifest errors name a key.
fn check(e: &Error, what: &str, text: &str) -> Result<(), TestCaseError> {
    // An accelerator set given on the command line (`--accel`) has no file: it names its origin.
    let from_command_line = e.kind == ErrorKind::Accel && e.message.contains("from --accel");
    prop_assert!(
        e.file.is_some() || from_command_line,
        "{what}: an error without a file: {e}\n---\n{}",
        cut(text)
    );
    if e.kind == ErrorKind::Manifest {
        prop_assert!(
            e.key.as_deref().is_some_and(|k| !k.is_empty()),
            "{what}: a manifest error without a key: {e}\n---\n{}",
            cut(text)
        );
    }
    for a in &e.also {
        check(a, what, text)?;
    }
    Ok(())
}

fn cut(t: &str) -> String {
    t.chars().take(2000).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn random_mcpp_tables_never_panic_and_every_error_names_its_file_and_key(mcpp in mcpp_table(), accel in proptest::option::of(string())) {
        let mut metadata = toml::Table::new();
        metadata.insert("mcpp".into(), Value::Table(mcpp));
        let mut package = toml::Table::new();
        package.insert("name".into(), Value::String("fuzz-pkg".into()));
        package.insert("version".into(), Value::String("0.1.0".into()));
        package.insert("edition".into(), Value::String("2021".into()));
        package.insert("metadata".into(), Value::Table(metadata));
        let mut doc = toml::Table::new();
        doc.insert("package".into(), Value::Table(package));
        let text = toml::to_string(&doc).expect("a table serialises");

        let dir = tempfile::tempdir().unwrap();
        let manifest_path = dir.path().join("Cargo.toml");
        std::fs::write(&manifest_path, &text).unwrap();
        for (f, body) in [("shaders/a.comp", "#version 450\nvoid main() {}\n"), ("src/lib.rs", ""), ("include/x.glsl", "")] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        if let Err(e) = Manifest::parse(&manifest_path, &text) {
            check(&e, "Manifest::parse", &text)?;
        }
        let mut env = cargo_mcpp::config::env::Env::empty();
        env.set("PATH", "/usr/bin:/bin");
        let choice = match &accel {
            Some(a) => AccelChoice::Spec(a.clone()),
            None => AccelChoice::Manifest,
        };
        if let Err(e) = validate(&manifest_path, &choice, &env) {
            check(&e, "validate", &text)?;
            // The rendered error is bounded: echoes are cut.
            let shown = e.to_string();
            prop_assert!(shown.len() < 64 * 1024, "an error of {} bytes", shown.len());
        }
    }
}
