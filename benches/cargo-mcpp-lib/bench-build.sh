#!/bin/sh
# BUILD of this variant: link the kit's kernels into the package (sources are package-relative;
# the link is made once, so its mtime stays put), then build. nvcc is the kit's counting shim
# (first on PATH), named through NVCC so that it is the program that runs; the toolkit comes
# from CUDA_PATH.
set -e
[ "$(readlink kernels 2>/dev/null)" = "$KERNELS_DIR" ] || ln -sfn "$KERNELS_DIR" kernels
NVCC="$(command -v nvcc)" exec cargo build --release "$@"
