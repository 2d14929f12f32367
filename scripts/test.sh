#!/usr/bin/env bash
# The test command: install the toolchains (idempotent), lint (clippy with the doors of
# clippy.toml, warnings are errors), build the guide (docs/, mdBook), then run every test with
# the real compilers. A missing toolchain fails the tests; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-toolchains.sh
source "${MCPP_TOOLCHAINS:-/opt/mcpp-toolchains}/env.sh"
cargo clippy --workspace --all-targets -- -D warnings
# The library's two build.rs forms on their own (a workspace build unifies its features): the
# client without `engine`, and the in-process engine without the command line.
cargo clippy --lib --no-default-features -- -D warnings
cargo clippy --lib --no-default-features --features engine -- -D warnings
mdbook build docs
cargo test --workspace --all-targets "$@"
