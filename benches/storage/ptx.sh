#!/usr/bin/env bash
# How long rustc takes to compile a crate embedding one large PTX file through cargo-mcpp's
# header storage (the default), against `include_str!` of the same file: the generated surface
# must cost what `include_str!` costs (the goal: within 1.2x for a 6 MiB PTX).
#
#   benches/storage/ptx.sh                        # MB=6 ROUNDS=5 WORK=/tmp/mcpp-ptx-bench
#
# It builds this checkout's cargo-mcpp (debug: only rustc is timed), generates a PTX-like text of
# MB MiB (distinct lines, as a kernel library's PTX is), embeds it in a crate (tools-embed,
# `nul = true`: a text payload, header storage), builds that crate once to generate the surface,
# then times rustc on two one-file programs that read the whole text, interleaved per round:
# one includes the generated surface (`shaders::kernels_ptx()`), one `include_str!`s the file.
# Prints the median time of each in debug (no -O) and release (-O), and the median ratio.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/mcpp-ptx-bench}; MB=${MB:-6}; ROUNDS=${ROUNDS:-5}
rm -rf "$WORK"; mkdir -p "$WORK/crate/data" "$WORK/crate/src" "$WORK/bin"
(cd "$REPO" && cargo build --quiet --bin cargo-mcpp)
ENGINE=${CARGO_TARGET_DIR:-$REPO/target}/debug/cargo-mcpp
python3 - "$WORK/crate/data/kernels.ptx" "$MB" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
size = mb << 20
out = [".version 9.0\n.target sm_80\n.address_size 64\n\n"]
n, i = len(out[0]), 0
while n < size:
    line = f"\tfma.rn.f32 \t%f{i % 977}, %f{i * 7 % 977}, %f{i * 13 % 977}, 0f3F800000; // {i:x}\n"
    out.append(line); n += len(line); i += 1
open(path, "w").write("".join(out)[:size])
PY
cat > "$WORK/crate/Cargo.toml" <<TOML
[package]
name = "ptx-bench"
version = "0.1.0"
edition = "2021"

[build-dependencies]
mcpp-build = { path = "$REPO/mcpp-build" }

[package.metadata.mcpp.embed]
files = [{ glob = "data/*.ptx", nul = true }]
TOML
echo 'fn main() { mcpp_build::build(); }' > "$WORK/crate/build.rs"
echo 'fn main() {}' > "$WORK/crate/src/main.rs"
(cd "$WORK/crate" && CARGO_MCPP="$ENGINE" CARGO_TARGET_DIR="$WORK/target" cargo build --quiet)
SURFACE=$(ls "$WORK"/target/debug/build/ptx-bench-*/out/mcpp_shaders.rs | head -1)
cat > "$WORK/surface.rs" <<RS
mod shaders { include!("$SURFACE"); }
fn main() {
    let t = std::hint::black_box(shaders::kernels_ptx());
    let sum: u64 = t.c_str.to_bytes().iter().map(|&b| u64::from(b)).sum();
    println!("{} {sum}", t.text.len());
}
RS
cat > "$WORK/include.rs" <<RS
static TEXT: &str = include_str!("$WORK/crate/data/kernels.ptx");
fn main() {
    let t = std::hint::black_box(TEXT);
    let sum: u64 = t.as_bytes().iter().map(|&b| u64::from(b)).sum();
    println!("{} {sum}", t.len());
}
RS
ms() { local s e; s=$(date +%s%N); rustc --edition 2021 -D warnings "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
for mode in debug release; do
  opt=(); [ "$mode" = release ] && opt=(-O)
  : > "$WORK/$mode.tsv"
  for r in $(seq "$ROUNDS"); do
    a=$(ms "${opt[@]}" -o "$WORK/bin/surface-$mode" "$WORK/surface.rs")
    b=$(ms "${opt[@]}" -o "$WORK/bin/include-$mode" "$WORK/include.rs")
    echo "$a $b" >> "$WORK/$mode.tsv"
  done
  [ "$("$WORK/bin/surface-$mode")" = "$("$WORK/bin/include-$mode")" ] || { echo "the two programs read different text" >&2; exit 1; }
  python3 - "$WORK/$mode.tsv" "$mode" "$MB" <<'PY'
import statistics, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
a = statistics.median(r[0] for r in rows); b = statistics.median(r[1] for r in rows)
ratio = statistics.median(r[0] / r[1] for r in rows)
print(f"{sys.argv[2]:8} {sys.argv[3]} MiB PTX: header storage {a:.0f} ms, include_str! {b:.0f} ms, median ratio {ratio:.2f}x ({len(rows)} rounds)")
PY
done
