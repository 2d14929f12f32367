//! The refusal texts of the CUDA lane, pinned as one snapshot
//! (`tests/integration/snapshots/integration__refusals_cuda__cuda_refusals.snap`): each bad input on a temp copy of
//! `tests/fixtures/cuda-island` with a fake toolkit (a recording [`Shim`] as nvcc), the temp
//! paths replaced by `[PKG]` and `[TMP]`. Accept a change of wording with `INSTA_UPDATE=always`.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::Build;
use harness::*;
use std::path::Path;

/// One bad input: an edit of the fixture's manifest (`from` -> `to`, none when `from` is
/// empty), an extra change of the builder, and its refusal text. Nothing may compile.
fn refusal(from: &str, to: &str, change: impl Fn(&mut Build, &Path)) -> String {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, nvcc) = fake_toolkit(tmp.path());
    if !from.is_empty() {
        edit(&pkg.join("Cargo.toml"), from, to);
    }
    let mut b = cuda_build(tmp.path(), &pkg, &root);
    change(&mut b, &pkg);
    let text = match b.try_compile() {
        Ok(_) => panic!("{from} -> {to}: the build was expected to be refused"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        nvcc.calls().iter().filter(|c| c.has("-c")).count(),
        0,
        "{from} -> {to}: nothing may compile before the refusal:\n{text}"
    );
    redact(&text, tmp.path())
}

fn accel(a: &'static str) -> impl Fn(&mut Build, &Path) {
    move |b, _| {
        b.accel(a);
    }
}

#[test]
fn cuda_refusals() {
    let same = |_: &mut Build, _: &Path| {};
    let cases: Vec<(&str, String)> = vec![
        (
            "a CUDA version without a minor",
            refusal("", "", accel("cuda13+{sm_90}")),
        ),
        (
            "a PTX floor above every architecture",
            refusal("", "", accel("cuda13.0+{sm_90} ptx>=95")),
        ),
        (
            "an empty architecture list",
            refusal("", "", accel("cuda13.0+{}")),
        ),
        (
            "an architecture of another backend",
            refusal("", "", accel("cuda13.0+{gfx942}")),
        ),
        (
            "a toolkit of another CUDA version",
            refusal("", "", accel("cuda12.9+{sm_90}")),
        ),
        (
            "no toolkit at all",
            refusal("", "", |b, _| {
                b.env_remove("CUDA_PATH").env("PATH", "/nonexistent");
            }),
        ),
        (
            "a named CUDA_PATH that is no toolkit",
            refusal("", "", |b, _| {
                b.env("CUDA_PATH", "/nonexistent");
            }),
        ),
        (
            "an rdc flag without the rdc key",
            refusal(
                "flags = [\"--extra-flag\"]",
                "flags = [\"-rdc=true\"]",
                same,
            ),
        ),
        (
            "--ptx in flags (PTX text archived as an object)",
            refusal(
                "flags = [\"--extra-flag\"]",
                "flags = [\"-lineinfo\", \"--ptx\"]",
                same,
            ),
        ),
        (
            "-cubin in flags",
            refusal("flags = [\"--extra-flag\"]", "flags = [\"-cubin\"]", same),
        ),
        (
            "-fatbin in flags",
            refusal("flags = [\"--extra-flag\"]", "flags = [\"-fatbin\"]", same),
        ),
        (
            "-E in flags",
            refusal("flags = [\"--extra-flag\"]", "flags = [\"-E\"]", same),
        ),
        (
            "-M in flags",
            refusal("flags = [\"--extra-flag\"]", "flags = [\"-M\"]", same),
        ),
        (
            "-dlink in flags",
            refusal("flags = [\"--extra-flag\"]", "flags = [\"-dlink\"]", same),
        ),
        (
            "-S on the clang route",
            refusal(
                "flags = [\"--extra-flag\"]",
                "flags = [\"-S\"]\ncompiler = \"clang\"",
                same,
            ),
        ),
        (
            "a fat binary on the clang route",
            refusal(
                "flags = [\"--extra-flag\"]",
                "flags = []\ncompiler = \"clang\"\noutput = \"fatbin\"",
                same,
            ),
        ),
        (
            "the island's device half as PTX",
            refusal(
                "flags = [\"--extra-flag\"]",
                "flags = []\noutput = \"ptx\"",
                same,
            ),
        ),
        (
            "an output the table does not know",
            refusal(
                "flags = [\"--extra-flag\"]",
                "flags = []\noutput = \"asm\"",
                same,
            ),
        ),
        (
            "an output a sources entry asks that the rule does not make",
            refusal(
                "sources = [\"kernels/*.cu\"]",
                "sources = [{ glob = \"kernels/*.cu\", output = \"sass\" }]",
                same,
            ),
        ),
        (
            "a define nvcc would hand to a shell",
            refusal(
                "defines = { WIDTH = \"4\" }",
                "defines = { WIDTH = \"$(touch pwned)\" }",
                same,
            ),
        ),
        (
            "a define name that is no identifier",
            refusal(
                "defines = { WIDTH = \"4\" }",
                "defines = { \"WIDTH=5 -DX\" = \"4\" }",
                same,
            ),
        ),
        (
            "a ccbin that does not exist",
            refusal(
                "includes = [\"include\"]",
                "includes = [\"include\"]\nccbin = \"/nonexistent/g++\"",
                same,
            ),
        ),
        (
            "island halves that disagree",
            refusal("", "", |b, pkg| {
                edit(
                    &pkg.join("host/scale.cpp"),
                    "int scale_run(float* y, unsigned n)",
                    "int scale_run(float* y, int n)",
                );
                b.accel("cuda13.0+{sm_90}");
            }),
        ),
    ];
    let all: String = cases
        .iter()
        .map(|(name, text)| format!("===== {name}\n{text}\n\n"))
        .collect();
    insta::assert_snapshot!("cuda_refusals", all);
}
