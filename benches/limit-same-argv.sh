#!/usr/bin/env bash
# The kit's physical limit measured with cargo-mcpp's release argv (`-ccbin`, sm_90 SASS + PTX,
# `-Xcompiler -fPIC -O3`, `-MMD -MF`) next to the kit's own flags, both as `xargs -P $(nproc)`
# over the same kernels, interleaved. usage: benches/limit-same-argv.sh KERNELS_DIR [PASSES]
# (KERNELS_DIR: the kit's kernels/, e.g. /tmp/bench/kernels after a run). Prints milliseconds.
set -euo pipefail
K=$(readlink -f "$1"); P=${2:-3}; J=$(nproc); out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
CXX=$(command -v c++)
kit() { (cd "$K" && ls ./*.cu | xargs -P "$J" -I{} nvcc -c -gencode arch=compute_90,code=sm_90 -I"$K" -o "$out/{}.o" {}); }
ours() { (cd "$K" && ls ./*.cu | xargs -P "$J" -I{} nvcc -ccbin "$CXX" -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -Xcompiler -fPIC -O3 -MMD -MF "$out/{}.d" -c {} -o "$out/{}.o"); }
for p in $(seq "$P"); do
  for f in kit ours; do s=$(date +%s%N); $f; e=$(date +%s%N); echo "$f $(( (e - s) / 1000000 ))"; done
done
