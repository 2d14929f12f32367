#!/usr/bin/env bash
# The build's performance figures, side by side in one run, printed as a Markdown table:
#   - the physical limit with cargo-mcpp's own compiler argv (every entry of the build's
#     compile_commands.json, run `nproc` at a time: `limit-from-db.py`);
#   - the crate-only cold build (`cargo clean -p` + the device cache removed, dependencies built)
#     through `mcpp-build` (benches/cargo-mcpp, the client of the installed engine), through
#     `mcpp-build` with its `engine` feature (benches/cargo-mcpp-lib: in process) and through
#     the cargo-mcpp library with its `engine` feature (benches/cargo-mcpp-engine: in process);
#   - the no-op build all three ways, next to an empty crate's (cargo's own floor on this machine);
#   - with sccache (`MCPP_LAUNCHER`, the mcpp-build variant): the cold build with an empty cache
#     and the warm-cache clean build, with sccache's hit and miss counts; then where one warm
#     kernel's time goes (`sccache-breakdown.py`: each process sccache runs for it, timed alone).
# Within a round every contender runs once, in turn (the machine may be shared: compare within a
# round); ratios are medians of per-round ratios.
#
# usage: benches/figures.sh            (from anywhere; prints the table on stdout, progress on stderr)
# env:   SIZES="32 128"  ROUNDS_<N> (default 3 up to N=32, else 1)  NOOP_ROUNDS=10  SCCACHE_ROUNDS=2  SCCACHE_N=32
#        KIT=benches (the folder holding gen-kernels.py)  RAW=file (the raw TSV; default a temp file)
# Needs: nvcc (source /opt/mcpp-toolchains/env.sh, done here when present), python3; for the
# sccache rows, sccache (setup component `sccache`, MCPP_SCCACHE) — skipped when absent.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for e in /opt/mcpp-toolchains/env.sh /opt/toolchains/env.sh; do [ -f "$e" ] && . "$e"; done
KIT=${KIT:-$ROOT/benches}
SIZES=${SIZES:-"32 128"}; NOOP_ROUNDS=${NOOP_ROUNDS:-10}; SCCACHE_ROUNDS=${SCCACHE_ROUNDS:-2}; SCCACHE_N=${SCCACHE_N:-32}
[ -f "$KIT/gen-kernels.py" ] || { echo "figures.sh: no $KIT/gen-kernels.py (set KIT)" >&2; exit 1; }
command -v nvcc >/dev/null || { echo "figures.sh: nvcc not on PATH" >&2; exit 1; }
export NVCC=$(command -v nvcc) CARGO_TERM_COLOR=never
unset MCPP_LAUNCHER
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
RAW=${RAW:-$TMP/raw.tsv}; : > "$RAW"
MC=$ROOT/benches/cargo-mcpp; LIB=$ROOT/benches/cargo-mcpp-lib; ENG=$ROOT/benches/cargo-mcpp-engine; EMPTY=$TMP/empty
log() { echo "[$(date +%T)] $*" >&2; }
rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RAW"; }   # N round contender value
# seconds of one command (stdout/stderr to the log), or FAIL
t() { local s e; s=$(date +%s%N); "$@" >>"$TMP/log" 2>&1 || { echo FAIL; return; }; e=$(date +%s%N); echo "$(( e - s ))e-9" | awk '{printf "%.4f", $1}'; }
gen() { for v in "$MC" "$LIB" "$ENG"; do python3 "$KIT/gen-kernels.py" "$1" "$v/kernels" >/dev/null; done; }
build() { (cd "$1" && KERNELS_DIR="$1/kernels" ./bench-build.sh); }
cold() { (cd "$1" && ./bench-clean-pkg.sh) && build "$1"; }
noop() { (cd "$1" && cargo build --release); }
limit() { python3 "$ROOT/benches/limit-from-db.py" "$(ls "$MC"/target/release/mcpp/bench-cargo-mcpp/*/compile_commands.json | head -1)" "$(nproc)" "$TMP/limit"; }

log "engine: this checkout's release cargo-mcpp (for the mcpp-build and library variants)"
(cd "$ROOT" && cargo build --release --quiet --bin cargo-mcpp) || exit 1
export CARGO_MCPP=$ROOT/target/release/cargo-mcpp
mkdir -p "$EMPTY/src" && printf '[package]\nname = "empty"\nversion = "0.1.0"\nedition = "2021"\n[workspace]\n' > "$EMPTY/Cargo.toml" && echo 'fn main() {}' > "$EMPTY/src/main.rs"
log "warm-up (not timed): dependencies of the variants and the empty crate, 4 kernels"
gen 4; for v in "$MC" "$LIB" "$ENG" "$EMPTY"; do (cd "$v" && { [ "$v" = "$EMPTY" ] && cargo build --release -q || KERNELS_DIR="$v/kernels" ./bench-build.sh -q; }) >>"$TMP/log" 2>&1 || { echo "warm-up of $v failed: $TMP/log" >&2; tail -30 "$TMP/log" >&2; exit 1; }; done

for N in $SIZES; do
  gen "$N"; R=$(eval echo "\${ROUNDS_$N:-}"); [ -n "$R" ] || { [ "$N" -le 32 ] && R=3 || R=1; }
  for r in $(seq "$R"); do
    log "N=$N round $r/$R: cold mcpp-build, limit (same argv), cold library, cold library with engine"
    rec "$N" "$r" cold_mcpp_build "$(t cold "$MC")"
    rec "$N" "$r" limit "$(t limit)"
    rec "$N" "$r" cold_library "$(t cold "$LIB")"
    rec "$N" "$r" cold_engine "$(t cold "$ENG")"
  done
  log "N=$N: $NOOP_ROUNDS no-op rounds (empty crate, mcpp-build, library, library with engine)"
  for r in $(seq "$NOOP_ROUNDS"); do
    rec "$N" "$r" noop_empty "$(t noop "$EMPTY")"
    rec "$N" "$r" noop_mcpp_build "$(t noop "$MC")"
    rec "$N" "$r" noop_library "$(t noop "$LIB")"
    rec "$N" "$r" noop_engine "$(t noop "$ENG")"
  done
done

SC=${MCPP_SCCACHE:-$(command -v sccache || true)}
if [ -n "$SC" ] && [ -x "$SC" ]; then
  gen "$SCCACHE_N"
  export MCPP_LAUNCHER=$SC SCCACHE_SERVER_PORT=$(( 4300 + $$ % 600 ))
  for r in $(seq "$SCCACHE_ROUNDS"); do
    export SCCACHE_DIR=$TMP/sccache-$r
    "$SC" --stop-server >/dev/null 2>&1; "$SC" --start-server >>"$TMP/log" 2>&1
    log "sccache round $r/$SCCACHE_ROUNDS: cold (empty cache $SCCACHE_DIR), then warm-cache clean build, N=$SCCACHE_N"
    rec "$SCCACHE_N" "$r" cold_mcpp_build_nolauncher "$(MCPP_LAUNCHER=none t cold "$MC")"
    "$SC" --zero-stats >/dev/null 2>&1
    rec "$SCCACHE_N" "$r" sccache_cold "$(t cold "$MC")"
    "$SC" --show-stats > "$TMP/stats-cold" 2>&1
    "$SC" --zero-stats >/dev/null 2>&1
    rec "$SCCACHE_N" "$r" sccache_warm "$(t cold "$MC")"
    "$SC" --show-stats > "$TMP/stats-warm" 2>&1
    for w in cold warm; do
      rec "$SCCACHE_N" "$r" "sccache_${w}_hits" "$(sed -n 's/^Cache hits  *\([0-9]*\)$/\1/p' "$TMP/stats-$w" | head -1)"
      rec "$SCCACHE_N" "$r" "sccache_${w}_misses" "$(sed -n 's/^Cache misses  *\([0-9]*\)$/\1/p' "$TMP/stats-$w" | head -1)"
    done
  done
  "$SC" --stop-server >/dev/null 2>&1
  unset MCPP_LAUNCHER SCCACHE_DIR SCCACHE_SERVER_PORT
  log "sccache: where a warm kernel's time goes (benches/sccache-breakdown.py, one process at a time)"
  MCPP_SCCACHE=$SC python3 "$ROOT/benches/sccache-breakdown.py" "$(ls "$MC"/target/release/mcpp/bench-cargo-mcpp/*/compile_commands.json | head -1)" 3 "$SCCACHE_N" "$(nproc)" > "$TMP/breakdown" 2>>"$TMP/log" || echo "| breakdown failed: see the log |" > "$TMP/breakdown"
  noop "$MC" >>"$TMP/log" 2>&1   # back to the launcher-less build script environment
else
  log "no sccache (MCPP_SCCACHE unset, none on PATH): sccache rows skipped"
fi

grep -q FAIL "$RAW" && { echo "figures.sh: a build failed (see the FAIL rows); last lines of the log:" >&2; tail -30 "$TMP/log" >&2; }
python3 "$ROOT/benches/figures-table.py" "$RAW" "$(nproc)"
[ -s "$TMP/breakdown" ] && { echo; cat "$TMP/breakdown"; }
