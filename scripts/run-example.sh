#!/usr/bin/env bash
# Set up and run the example: install the toolchains (idempotent), install `cargo mcpp` from
# this checkout, build examples/vulkan-compute with it (GLSL and Slang -> SPIR-V -> embedded) and run it
# on the first Vulkan device (lavapipe on a machine without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-toolchains.sh
source "${MCPP_TOOLCHAINS:-/opt/mcpp-toolchains}/env.sh"
cargo install --quiet --locked --path . --root target/mcpp-install 2>/dev/null || cargo install --quiet --path . --root target/mcpp-install
export PATH="$PWD/target/mcpp-install/bin:$PATH"
cd examples/vulkan-compute
# The example's compilers are the toolchain packages it declares (mcpp.lock), not the setup's slangc.
unset MCPP_SLANGC
cargo mcpp build "$@"
exec ./target/debug/vulkan-compute
