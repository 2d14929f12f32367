#!/bin/sh
# CLEAN_PKG of this variant: the crate's build-script output AND its device cache (objects,
# fingerprints), so the crate-only cold build compiles every kernel again.
cargo clean --release -p bench-cargo-mcpp-engine && rm -rf target/release/mcpp
