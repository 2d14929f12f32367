#!/usr/bin/env bash
# The test command: install the toolchains (idempotent), lint (clippy with the doors of
# clippy.toml, warnings are errors), then run every test with the real compilers. A missing
# toolchain fails the tests; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-toolchains.sh
source "${MCPP_TOOLCHAINS:-/opt/mcpp-toolchains}/env.sh"
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --all-targets "$@"
