#!/usr/bin/env bash
# The test command: install the toolchains (idempotent), lint (clippy with the doors of
# clippy.toml, warnings are errors, in every build of the workspace's crates), build the guide
# (docs/, mdBook), then build and run every test with the real compilers. A missing toolchain
# fails the tests; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-toolchains.sh
source "${MCPP_TOOLCHAINS:-/opt/mcpp-toolchains}/env.sh"
# The tree as rustfmt writes it (rustfmt.toml): a contributor's editor reformats nothing.
cargo fmt --all --check
# Every cargo step below compiles this workspace's own crates through clippy-driver
# (scripts/clippy-rustc: clippy's lints, warnings are errors), so each step is also a lint pass,
# and a step reuses what an earlier one checked (the documentation of mcpp-build reads
# cargo-mcpp's checked metadata).
lint=(--config "build.rustc-workspace-wrapper=\"$PWD/scripts/clippy-rustc\"")
# The library's feature sets on their own (a workspace build unifies its features): without
# `engine` (only the earlier build.rs form's refusal), and the in-process engine without the
# command line, as mcpp-build's `engine` feature builds it.
cargo check --lib --no-default-features "${lint[@]}"
cargo check --lib --no-default-features --features engine "${lint[@]}"
cargo check -p mcpp-build --features engine "${lint[@]}"
# The published crates' documentation as docs.rs builds it ([package.metadata.docs.rs]: cargo-mcpp
# without default features, mcpp-build with and without its engine), broken links are errors.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p cargo-mcpp --no-default-features "${lint[@]}"
# With the engine too: the hidden internals' doc links stay whole for contributors. The engine's
# feature set of the check above, whose checked dependencies rustdoc reads.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p cargo-mcpp --no-default-features --features engine "${lint[@]}"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p mcpp-build "${lint[@]}"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p mcpp-build --features engine "${lint[@]}"
# The published crates package (what they hold is built and installed by tests/packaging.rs).
cargo package -p cargo-mcpp -p mcpp-build --no-verify --allow-dirty --offline
mdbook build docs
# cargo-nextest runs every test as a process of its own, with the groups and priorities of
# .config/nextest.toml: the tests that build in a shared target directory take turns there
# without holding a test thread, and the longest chains start first. Its build of every target
# of the workspace is also the workspace's lint pass (as `cargo clippy --workspace --all-targets
# -- -D warnings` would be).
cargo nextest run --workspace --all-targets --no-fail-fast "${lint[@]}" "$@"
