#!/usr/bin/env bash
# Build the binaries scripts/gpu-run.sh runs on the GPU machine, into .gpu/ (git-ignored), and
# download the Vulkan loader packages into .gl/. Then: the `device` tool's run with
# command "bash scripts/gpu-run.sh" (and "sh scripts/gpu-probe.sh") and carry [".gpu", ".gl"].
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-toolchains.sh
source "${MCPP_TOOLCHAINS:-/opt/mcpp-toolchains}/env.sh"
cargo build --release --quiet
MCPP="$PWD/target/release/cargo-mcpp"
mkdir -p .gpu .gl
(cd examples/cuda-saxpy && "$MCPP" mcpp build --release && cp target/release/cuda-saxpy ../../.gpu/cuda-saxpy-nvcc)
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cp -r examples/cuda-saxpy "$tmp/saxpy-clang"; rm -rf "$tmp/saxpy-clang/target"
sed -i "s|path = \"../../mcpp-build\"|path = \"$PWD/mcpp-build\"|; s|compiler = \"nvcc\"|compiler = \"clang\"\ntoolkit = \"${MCPP_TOOLCHAINS:-/opt/mcpp-toolchains}/cuda-12.9-clang\"|" "$tmp/saxpy-clang/Cargo.toml"
(cd "$tmp/saxpy-clang" && "$MCPP" mcpp build --release --accel "cuda12.9+{sm_90}" && cp target/release/cuda-saxpy "$OLDPWD/.gpu/cuda-saxpy-clang")
(cd examples/vulkan-compute && "$MCPP" mcpp build --release && cp target/release/vulkan-compute ../../.gpu/)
(cd examples/cuda-ptx && "$MCPP" mcpp build --release && cp target/release/cuda-ptx ../../.gpu/)
# `cargo mcpp new` as a user runs it: the CUDA island (sm_90, nvcc) and the Vulkan compute lane.
"$MCPP" mcpp new "$tmp/init-cuda" --lane cuda --island --accel "cuda13.0+{sm_90}" --mcpp-build-path "$PWD/mcpp-build"
(cd "$tmp/init-cuda" && CARGO_MCPP="$MCPP" "$MCPP" mcpp build --release && cp target/release/init-cuda "$OLDPWD/.gpu/")
"$MCPP" mcpp new "$tmp/init-vulkan" --lane spirv --mcpp-build-path "$PWD/mcpp-build"
(cd "$tmp/init-vulkan" && CARGO_MCPP="$MCPP" "$MCPP" mcpp build --release && cp target/release/init-vulkan "$OLDPWD/.gpu/")
cp "$MCPP" .gpu/   # the engine, for scripts/gpu-probe.sh
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
mkdir -p /tmp/amd64/partial
apt-get $o update -qq && (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
ls -la .gpu .gl
