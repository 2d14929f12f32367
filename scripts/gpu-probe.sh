#!/bin/sh
# Run on the GPU machine (carry .gpu; scripts/gpu-build.sh puts the release cargo-mcpp there):
# the engine's hardware facts on real hardware, without Rust or cargo there. The engine runs
# as a build script would (`cargo-mcpp mcpp build-script`, with the variables cargo sets) on a
# one-kernel package:
#   1. accel "cuda13.0+{native}": nvidia-smi's compute capability becomes -gencode (shown from
#      a logging nvcc wrapper) and the archive holds that SASS (cuobjdump, when present);
#   2. the driver floor: the same toolkit presented as 14.0 (a copy of its include/cuda.h with
#      CUDA_VERSION 14000, the rest linked) is refused against the real driver's version, read
#      through libcuda's cuDriverGetVersion.
set -u
E="$(cd "$(dirname "$0")/../.gpu" && pwd)/cargo-mcpp"
NV="$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)"
[ -x "$NV" ] || { echo "no nvcc on this machine"; exit 1; }
KIT="$(dirname "$(dirname "$(readlink -f "$NV")")")"
echo "nvcc: $NV (toolkit $KIT); host c++: $(command -v c++ || echo none); $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader)"
W="$(mktemp -d)"; P="$W/pkg"; mkdir -p "$P" "$W/out" "$W/bin"
cat > "$P/Cargo.toml" <<'TOML'
[package]
name = "probe"
version = "0.1.0"
edition = "2021"

[package.metadata.mcpp]
accel = "cuda13.0+{native}"
sources = ["k.cu"]

[package.metadata.mcpp.cuda]
compiler = "nvcc"
TOML
printf '__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\nextern "C" void launch(float* x) { twice<<<1, 32>>>(x); }\n' > "$P/k.cu"
printf '#!/bin/sh\necho "nvcc $*" >> "%s/nvcc.log"\nexec "%s" "$@"\n' "$W" "$NV" > "$W/bin/nvcc"; chmod +x "$W/bin/nvcc"
engine() { # $1: accel text; $2: toolkit root
  sed -i "s|^accel = .*|accel = \"$1\"|" "$P/Cargo.toml"
  env CARGO_MANIFEST_DIR="$P" OUT_DIR="$W/out" CARGO_PKG_NAME=probe PROFILE=release OPT_LEVEL=3 DEBUG=false \
      TARGET=x86_64-unknown-linux-gnu HOST=x86_64-unknown-linux-gnu NUM_JOBS=4 NVCC="$W/bin/nvcc" CUDA_PATH="$2" \
      MCPP_HOME="$W/home" "$E" mcpp build-script --client-version "$("$E" mcpp --version | sed 's/.* //')"
}
echo "== 1. {native}"
engine "cuda13.0+{native}" "$KIT" > "$W/directives.txt" 2> "$W/stderr.txt"; rc=$?
echo "engine exit $rc"; cat "$W/stderr.txt"
grep -v -- --version "$W/nvcc.log" | sed 's/ -MMD.*//'
grep -E 'rustc-link-lib|warning' "$W/directives.txt"
A="$(find "$W" -name 'libmcpp_cuda_probe.a' | head -1)"; echo "archive: ${A:-none}"
if [ -n "$A" ] && command -v cuobjdump >/dev/null; then cuobjdump --list-elf --list-ptx "$A"; fi
echo "== 2. driver floor (toolkit presented as 14.0)"
F="$W/fake-14.0"; mkdir -p "$F/include"
for x in "$KIT"/*; do [ "$(basename "$x")" = include ] || ln -s "$x" "$F/"; done
for x in "$KIT"/include/*; do ln -s "$x" "$F/include/"; done
rm "$F/include/cuda.h"; sed 's/^#define CUDA_VERSION .*/#define CUDA_VERSION 14000/' "$KIT/include/cuda.h" > "$F/include/cuda.h"
: > "$W/nvcc.log"
engine "cuda14.0+{native}" "$F" > "$W/directives2.txt" 2>&1; rc2=$?
echo "engine exit $rc2"; cat "$W/directives2.txt"; echo "compiles started: $(grep -vc -- --version "$W/nvcc.log")"
[ $rc -eq 0 ] && [ $rc2 -ne 0 ]
