//! The refusal texts of the HIP lane, pinned as one snapshot
//! (`tests/integration/snapshots/integration__refusals_hip__hip_refusals.snap`): each bad input on a temp copy of
//! `tests/fixtures/hip-island` with a fake ROCm (a recording [`Shim`] as hipcc, device libraries
//! for gfx908, gfx90a and gfx1030), the temp paths replaced by `[PKG]` and `[TMP]`. Accept a
//! change of wording with `INSTA_UPDATE=always`.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::Build;
use harness::*;
use std::path::Path;

/// One bad input: an edit of the fixture's manifest (`from` -> `to`, none when `from` is
/// empty), an extra change of the builder, and its refusal text. Nothing may compile.
fn refusal(from: &str, to: &str, change: impl Fn(&mut Build, &Path)) -> String {
    let (tmp, pkg) = fixture("hip-island");
    let (root, hipcc) = fake_rocm(tmp.path());
    if !from.is_empty() {
        edit(&pkg.join("Cargo.toml"), from, to);
    }
    let mut b = hip_build(tmp.path(), &pkg, &root);
    change(&mut b, tmp.path());
    let text = match b.try_compile() {
        Ok(_) => panic!("{from} -> {to}: the build was expected to be refused"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        hipcc.calls().iter().filter(|c| c.has("-c")).count(),
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
fn hip_refusals() {
    let same = |_: &mut Build, _: &Path| {};
    let cases: Vec<(&str, String)> = vec![
        (
            "no HIP installed at all",
            refusal("", "", |b, _| {
                b.env_remove("ROCM_PATH").env("PATH", "/nonexistent");
            }),
        ),
        (
            "a ROCM_PATH that is no HIP install",
            refusal("", "", |b, _| {
                b.env("ROCM_PATH", "/nonexistent");
            }),
        ),
        (
            "an architecture without a device library (gfx1100)",
            refusal("", "", accel("hip5.2+{gfx1100}")),
        ),
        (
            "a HIP version other than the install's",
            refusal("", "", accel("hip6.1+{gfx90a}")),
        ),
        (
            "a HIP version without a minor",
            refusal("", "", accel("hip5+{gfx90a}")),
        ),
        (
            "a hip_version.h that does not say the version",
            refusal("", "", |_, tmp| {
                std::fs::write(
                    tmp.join("fake-rocm/include/hip/hip_version.h"),
                    "#define HIP_VERSION_H\n",
                )
                .unwrap();
            }),
        ),
        (
            "an NVIDIA architecture in the hip entry",
            refusal("", "", accel("hip5.2+{sm_89}")),
        ),
        (
            "both platforms with which = auto",
            refusal("", "", accel("hip5.2+{gfx90a}, cuda13.0+{sm_90}")),
        ),
        (
            "no architecture for either platform",
            refusal("", "", accel("hip5.2")),
        ),
        (
            "which = nvidia without a cuda entry",
            refusal(
                "[package.metadata.mcpp.hip]\n",
                "[package.metadata.mcpp.hip]\nwhich = \"nvidia\"\n",
                same,
            ),
        ),
        (
            "a device-lib-path without the architecture's library",
            refusal(
                "[package.metadata.mcpp.hip]\n",
                "[package.metadata.mcpp.hip]\ndevice-lib-path = \"kernels\"\n",
                same,
            ),
        ),
        (
            "a rocm key naming no HIP install",
            refusal(
                "[package.metadata.mcpp.hip]\n",
                "[package.metadata.mcpp.hip]\nrocm = \"/nonexistent\"\n",
                same,
            ),
        ),
        (
            "which names no platform",
            refusal(
                "[package.metadata.mcpp.hip]\n",
                "[package.metadata.mcpp.hip]\nwhich = \"intel\"\n",
                same,
            ),
        ),
        (
            "HIP on NVIDIA with headers that lack the NVIDIA platform",
            refusal("", "", |b, tmp| {
                std::fs::remove_dir_all(tmp.join("fake-rocm/include/hip/nvidia_detail")).unwrap();
                let (cuda, _) = fake_toolkit(tmp);
                b.env("CUDA_PATH", cuda).accel("hip, cuda13.0+{sm_90}");
            }),
        ),
    ];
    let all: String = cases
        .iter()
        .map(|(name, text)| format!("===== {name}\n{text}\n\n"))
        .collect();
    insta::assert_snapshot!("hip_refusals", all);
}
