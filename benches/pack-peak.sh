#!/usr/bin/env bash
# Peak memory (maximum resident set size, /usr/bin/time -v) of `cargo mcpp pack --format
# appimage` packing one extra file of SIZE_MIB mebibytes of random bytes (pack.files), and of a
# build embedding one such file (`[package.metadata.mcpp.embed]`). The packed and embedded
# bytes are streamed, so the peak should stay far below the file's size.
# usage: benches/pack-peak.sh [SIZE_MIB] [CARGO_MCPP] [pack|both]
#   (default 1024, target/debug/cargo-mcpp, both; the embed half compiles the bytes with rustc,
#   whose own peak is several times the file's size)
# STORAGE=object|header|sidecar chooses the embedded file's storage form (default header; its
# C/C++ array text, several times the file's size, is written only for a package with a C/C++
# unit, which this one has not).
# Needs the appimage-runtime toolchain package (cargo mcpp fetch appimage-runtime) in MCPP_HOME.
set -euo pipefail
SIZE=${1:-1024}
ME=$(readlink -f "${2:-target/debug/cargo-mcpp}")
REPO=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/pkg/src" "$tmp/pkg/data"
head -c "$((SIZE * 1024 * 1024))" /dev/urandom > "$tmp/pkg/data/big.bin"
cat > "$tmp/pkg/Cargo.toml" <<TOML
[package]
name = "bigpack"
version = "0.1.0"
edition = "2021"

[workspace]

[package.metadata.mcpp.pack]
files = [{ glob = "data/*.bin", dest = "data" }]
TOML
echo 'fn main() {}' > "$tmp/pkg/src/main.rs"
peak() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ { print $2 }'; }
(cd "$tmp/pkg" && "$ME" mcpp fetch appimage-runtime >/dev/null 2>&1)
(cd "$tmp/pkg" && "$ME" mcpp build --release >/dev/null 2>&1)
echo "pack ${SIZE} MiB: $(cd "$tmp/pkg" && CARGO_TARGET_DIR="$tmp/target" peak "$ME" mcpp pack --format appimage) KiB peak"
[ "${3:-both}" = pack ] && exit 0
# The same file embedded (bytes storage: the payload copy in OUT_DIR, the Rust surface).
cat > "$tmp/pkg/Cargo.toml" <<TOML
[package]
name = "bigembed"
version = "0.1.0"
edition = "2021"

[build-dependencies]
mcpp-build = { path = "$REPO/mcpp-build" }

[package.metadata.mcpp]
storage = "${STORAGE:-header}"
embed = ["data/*.bin"]

[workspace]
TOML
echo 'fn main() { mcpp_build::build(); }' > "$tmp/pkg/build.rs"
echo "embed ${SIZE} MiB (storage ${STORAGE:-header}): $(cd "$tmp/pkg" && CARGO_MCPP="$ME" CARGO_TARGET_DIR="$tmp/target" peak "$ME" mcpp build) KiB peak (largest process of the build: cargo, rustc or the engine)"
