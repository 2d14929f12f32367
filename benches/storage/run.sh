#!/usr/bin/env bash
# The storage benchmark (benches/storage/README.md): cold crate-only builds and binary
# sizes of N=100 payloads of ~16 KB under each storage form against a hand-written include_bytes!
# crate, a payload edit (what reruns), the same payloads as embedded data files (tools-embed)
# against include_bytes! of the same files, and one big data file (include_bytes!, object,
# header: time, peak RSS).
# Contenders are interleaved per round (a shared, noisy machine): compare within a round, report
# medians of per-round ratios. Writes $WORK/results.md (Markdown) and $WORK/raw.tsv.
#
#   source /opt/mcpp-toolchains/env.sh && benches/storage/run.sh
#   N=100 ROUNDS=5 BIG_MB=256 BIG_ROUNDS=2 WORK=/tmp/mcpp-storage-bench benches/storage/run.sh
#
# Needs glslangValidator (scripts/setup-toolchains.sh, component spirv), g++, python3 and GNU time
# (/usr/bin/time; the component `bench`). BIG_MB=0 leaves the big payload out.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/mcpp-storage-bench}; N=${N:-100}; ROUNDS=${ROUNDS:-5}; BIG_MB=${BIG_MB:-256}; BIG_ROUNDS=${BIG_ROUNDS:-2}
REAL_GLSLANG=$(command -v glslangValidator) || { echo "no glslangValidator on PATH: source /opt/mcpp-toolchains/env.sh" >&2; exit 2; }
REAL_CXX=$(command -v g++) || { echo "no g++" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: COMPONENTS=bench scripts/setup-toolchains.sh" >&2; exit 2; }
export CARGO_TERM_COLOR=never
mkdir -p "$WORK/bin" "$WORK/log"
LOG="$WORK/log"

echo "bench: building the engine (release cargo-mcpp of $REPO)" >&2
(cd "$REPO" && cargo build --release --quiet --bin cargo-mcpp)

# Wrappers (absolute paths baked in: the engine may run tools with a narrowed environment).
# The compiler of the N payloads: one log line per compile.
cat > "$WORK/bin/glslangValidator" <<W
#!/bin/sh
case " \$* " in *" -o "*) echo "\$*" >> "$LOG/glslang.log";; esac
exec "$REAL_GLSLANG" "\$@"
W
# The host compiler (the assembler of object storage): its peak RSS and time.
cat > "$WORK/bin/c++" <<W
#!/bin/sh
case "\$*" in *payloads.S*) exec /usr/bin/time -f "as \${CARGO_PKG_NAME:-?} %M %e" -a -o "$LOG/rss.log" "$REAL_CXX" "\$@";; esac
exec "$REAL_CXX" "\$@"
W
# The engine the build script runs (mcpp-build): the build script's work, its peak RSS and time.
cat > "$WORK/bin/cargo-mcpp" <<W
#!/bin/sh
exec /usr/bin/time -f "engine \${CARGO_PKG_NAME:-?} %M %e" -a -o "$LOG/rss.log" "$REPO/target/release/cargo-mcpp" "\$@"
W
# rustc: the peak RSS and time of the benchmark crates' compiles (and their build scripts').
cat > "$WORK/bin/rustc-wrapper" <<W
#!/bin/sh
crate=""; prev=""
for a in "\$@"; do [ "\$prev" = "--crate-name" ] && crate="\$a"; prev="\$a"; done
case "\$crate" in sb_*) exec /usr/bin/time -f "rustc \$crate %M %e" -a -o "$LOG/rss.log" "\$@";; esac
exec "\$@"
W
chmod +x "$WORK/bin/"*
export CARGO_MCPP="$WORK/bin/cargo-mcpp" CXX="$WORK/bin/c++" RUSTC_WRAPPER="$WORK/bin/rustc-wrapper" GLSLANG_VALIDATOR="$WORK/bin/glslangValidator"

BIG_ARG=(); [ "$BIG_MB" -gt 0 ] && BIG_ARG=(--big "$BIG_MB")
REAL_GLSLANG="$REAL_GLSLANG" python3 "$HERE/gen.py" "$WORK" "$N" "$REPO" "${BIG_ARG[@]}"
: > "$LOG/glslang.log"; : > "$LOG/rss.log"; : > "$WORK/rss.tsv"
RAW="$WORK/raw.tsv"; echo -e "part\tround\tcontender\tseconds\tglslang\tassemblies\trustc\tbinary\tsidecars\trc" > "$RAW"

pkg() { echo "sb-$1"; }
cold() { # crate-only: the build script, its OUT_DIR and the device cache go, dependencies stay
  local c=$1; (cd "$WORK/$c" && cargo clean --release -q -p "$(pkg "$c")" && rm -rf target/release/mcpp target/release/mcpp-data && cargo build --release -q)
}
build() { (cd "$WORK/$1" && cargo build --release -q); }
lines() { wc -l < "$1" | tr -d ' '; }
count() { grep -c "$1" "$LOG/rss.log" || true; }
measure() { # part round contender command...: one timed run and what it started
  local part=$1 r=$2 c=$3; shift 3
  local g0 a0 r0 s e bin side
  g0=$(lines "$LOG/glslang.log"); a0=$(count '^as '); r0=$(count "^rustc $(pkg "$c" | tr - _) "); local l0; l0=$(lines "$LOG/rss.log")
  local rc=0
  s=$(date +%s.%N); "$@" "$c" >"$LOG/build.out" 2>&1 || rc=$?; e=$(date +%s.%N)
  # A failed build is a result of the big part (its output kept), an error elsewhere.
  if [ "$rc" -ne 0 ]; then cp "$LOG/build.out" "$LOG/$part-$c-$r.out"; [ "$part" = big ] || { cat "$LOG/build.out" >&2; exit 1; }; fi
  bin=$(stat -c %s "$WORK/$c/target/release/$(pkg "$c")" 2>/dev/null || echo 0); [ "$rc" -eq 0 ] || bin=0
  side=$( (du -sb "$WORK/$c/target/release/mcpp-data" 2>/dev/null || true) | cut -f1); side=${side:-0}
  echo -e "$part\t$r\t$c\t$(echo "$e - $s" | bc -l)\t$(( $(lines "$LOG/glslang.log") - g0 ))\t$(( $(count '^as ') - a0 ))\t$(( $(count "^rustc $(pkg "$c" | tr - _) ") - r0 ))\t$bin\t$side\t$rc" >> "$RAW"
  tail -n +"$((l0 + 1))" "$LOG/rss.log" | sed "s/^/$part\t$r\t$c\t/" >> "$WORK/rss.tsv"
}

SMALL="include-bytes prebuilt mcpp-header mcpp-object mcpp-sidecar"
echo "bench: warming up (dependencies, one build each; not timed)" >&2
for c in $SMALL; do build "$c" >/dev/null 2>&1 || { build "$c"; exit 1; }; done
: > "$WORK/check.tsv"
for c in $SMALL; do echo -e "$c\t$("$WORK/$c/target/release/$(pkg "$c")")" >> "$WORK/check.tsv"; done

echo "bench: (a) cold crate-only builds, $ROUNDS rounds" >&2
for r in $(seq "$ROUNDS"); do for c in $SMALL; do measure cold "$r" "$c" cold; done; done

echo "bench: (c) one payload edited, $ROUNDS rounds" >&2
for r in $(seq "$ROUNDS"); do
  for c in include-bytes mcpp-header mcpp-object mcpp-sidecar; do
    k=$((N / 2)); f="$WORK/$c/shaders/s$(printf %03d "$k").comp"
    if grep -q "+ $k.0;" "$f"; then sed -i "s/+ $k.0;/+ $k.5;/" "$f"; else sed -i "s/+ $k.5;/+ $k.0;/" "$f"; fi
    measure edit "$r" "$c" build
  done
done

# The same payloads as data files (tools-embed): no compiler in any build, so the figures are the
# storage's own cost against include_bytes! of the same files (prebuilt/, no build script).
EMBED="prebuilt embed-header embed-object embed-sidecar"
for c in embed-header embed-object embed-sidecar; do build "$c" >/dev/null 2>&1 || { build "$c"; exit 1; }; done
for c in embed-header embed-object embed-sidecar; do echo -e "$c\t$("$WORK/$c/target/release/$(pkg "$c")")" >> "$WORK/check.tsv"; done
echo "bench: (d) cold crate-only builds of embedded data files, $ROUNDS rounds" >&2
for r in $(seq "$ROUNDS"); do for c in $EMBED; do measure ecold "$r" "$c" cold; done; done
echo "bench: (e) one data file edited, $ROUNDS rounds" >&2
k=$(printf %03d $((N / 2)))
for r in $(seq "$ROUNDS"); do
  for c in $EMBED; do
    f="$WORK/$c/data/s$k.bin"; [ "$c" = prebuilt ] && f="$WORK/prebuilt/spv/s$k.comp.spv"
    python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[64] ^= 1; open(p, "wb").write(b)' "$f"
    measure eedit "$r" "$c" build
  done
done

if [ "$BIG_MB" -gt 0 ]; then
  echo "bench: (b) one data file of $BIG_MB MiB, $BIG_ROUNDS rounds" >&2
  BIG="big-include-bytes big-object big-header"
  # Dependencies (and a first build, not timed).
  for c in $BIG; do build "$c" >/dev/null 2>&1 || true; done
  for r in $(seq "$BIG_ROUNDS"); do
    for c in $BIG; do
      measure big "$r" "$c" cold
    done
  done
fi
python3 "$HERE/report.py" "$WORK" "$N" "$ROUNDS" "$BIG_MB" > "$WORK/results.md"
cat "$WORK/results.md"
