#!/usr/bin/env bash
# Cold, warm-local and warm-shared clean builds of N generated CUDA kernels (benches/cargo-mcpp,
# release, nvcc) through each compiler launcher, ccache and sccache, in interleaved rounds; prints
# a Markdown table of medians and of the medians of per-round ratios.
#
# Per round, in turn:
#   - cold, no launcher: the crate-only clean build (`cargo clean -p` and the device cache removed);
#   - floor: the same with the device cache kept (cargo-mcpp compiles nothing: the build script's
#     own compile and run, the archive, rustc of the crate), what no compiler cache can go under;
#   - per launcher, with a Redis server on loopback as the shared cache (flushed first):
#     cold (empty local cache, empty Redis), warm-local (the local cache the cold build filled),
#     warm-shared (an empty local cache again; Redis, filled by the cold build, serves the build);
#     each with the launcher's own hit and miss counts.
# Then, per launcher, where a warm build's time goes: every compile of the build's
# compile_commands.json through the launcher, one at a time, with the local cache warm.
#
# usage: benches/warm.sh                 (prints the table on stdout, progress on stderr)
# env:   N=32 (4 or more) ROUNDS=2 RAW=file (the raw TSV; default a temp file)
# Needs: nvcc (source /opt/mcpp-toolchains/env.sh, done here when present), python3, ccache,
#        sccache (MCPP_SCCACHE or on PATH), redis-server (setup components `cuda sccache ccache`).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for e in /opt/mcpp-toolchains/env.sh; do [ -f "$e" ] && . "$e"; done
N=${N:-32}; ROUNDS=${ROUNDS:-2}
[ "$N" -ge 4 ] || { echo "warm.sh: N must be 4 or more (the bench crate calls k00..k03)" >&2; exit 1; }
SC=${MCPP_SCCACHE:-$(command -v sccache || true)}
CC=$(command -v ccache || true)
for p in nvcc python3 redis-server "$CC" "$SC"; do
  [ -n "$p" ] && command -v "$p" >/dev/null || { echo "warm.sh: missing ${p:-a launcher} (setup components cuda sccache ccache)" >&2; exit 1; }
done
unset MCPP_LAUNCHER CARGO_TARGET_DIR
for v in $(env | sed -n 's/^\(CCACHE_[A-Z_]*\)=.*/\1/p; s/^\(SCCACHE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export CARGO_TERM_COLOR=never
TMP=$(mktemp -d)
RAW=${RAW:-$TMP/raw.tsv}; : > "$RAW"
MC=$ROOT/benches/cargo-mcpp
log() { echo "[$(date +%T)] $*" >&2; }
rec() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$RAW"; }   # round contender value
t() { local s e; s=$(date +%s%N); "$@" >>"$TMP/log" 2>&1 || { echo FAIL; return; }; e=$(date +%s%N); echo "$(( e - s ))e-9" | awk '{printf "%.4f", $1}'; }
build() { (cd "$MC" && KERNELS_DIR="$MC/kernels" ./bench-build.sh); }
cold() { (cd "$MC" && ./bench-clean-pkg.sh) && build; }
floor() { (cd "$MC" && cargo clean --release -p bench-cargo-mcpp) && build; }

# The shared cache: Redis on a free loopback port, no persistence, 512 MiB at most.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --maxmemory 512mb --maxmemory-policy allkeys-lru --dir "$TMP" >"$TMP/redis.log" 2>&1 &
REDIS=$!
SCPORT=$(( 4300 + $$ % 600 ))
cleanup() { SCCACHE_SERVER_PORT=$SCPORT "$SC" --stop-server >/dev/null 2>&1; kill "$REDIS" 2>/dev/null; wait "$REDIS" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
flush() { python3 - "$PORT" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n")
assert s.recv(64).startswith(b"+OK"), "redis FLUSHALL failed"
EOF
}
for _ in $(seq 50); do flush 2>/dev/null && break; sleep 0.1; done
flush || { echo "warm.sh: redis-server did not start: $(cat "$TMP/redis.log")" >&2; exit 1; }

# Each launcher's settings for one phase: its local cache directory ($1) and Redis behind it.
use_ccache() { export MCPP_LAUNCHER=$CC CCACHE_DIR=$1 CCACHE_REMOTE_STORAGE=redis://127.0.0.1:$PORT CCACHE_CONFIGPATH=$TMP/ccache.conf; "$CC" -z >/dev/null; }
use_sccache() {
  export MCPP_LAUNCHER=$SC SCCACHE_DIR=$1 SCCACHE_MULTILEVEL_CHAIN=disk,redis SCCACHE_REDIS_ENDPOINT=redis://127.0.0.1:$PORT SCCACHE_SERVER_PORT=$SCPORT SCCACHE_IDLE_TIMEOUT=600
  "$SC" --stop-server >/dev/null 2>&1; "$SC" --start-server >>"$TMP/log" 2>&1
}
off() { unset MCPP_LAUNCHER CCACHE_DIR CCACHE_REMOTE_STORAGE CCACHE_CONFIGPATH SCCACHE_DIR SCCACHE_MULTILEVEL_CHAIN SCCACHE_REDIS_ENDPOINT; }
# hits/misses of the last build, by the launcher's own statistics
counts() {
  if [ "$1" = ccache ]; then
    "$CC" --print-stats | awk -F'\t' '$1=="direct_cache_hit"||$1=="preprocessed_cache_hit"{h+=$2} $1=="cache_miss"{m=$2} $1=="remote_storage_hit"{r=$2} END{printf "%d/%d (remote %d)", h, m, r}'
  else
    "$SC" --show-stats --stats-format json | python3 -c 'import json,sys; s=json.load(sys.stdin)["stats"]; c=lambda k: s[k]["counts"].get("CUDA",0); r=sum(l["hits"] for l in s.get("multi_level",[]) if "redis" in l["name"]); print("%d/%d (remote %d)" % (c("cache_hits"), c("cache_misses"), r))'
  fi
}

log "engine: this checkout's release cargo-mcpp"
(cd "$ROOT" && cargo build --release --quiet --bin cargo-mcpp) || exit 1
export CARGO_MCPP=$ROOT/target/release/cargo-mcpp NVCC=$(command -v nvcc)
python3 "$ROOT/benches/gen-kernels.py" "$N" "$MC/kernels" >/dev/null
log "warm-up (not timed): the bench crate's dependencies and one build"
build >>"$TMP/log" 2>&1 || { tail -30 "$TMP/log" >&2; exit 1; }

for r in $(seq "$ROUNDS"); do
  log "round $r/$ROUNDS: cold without launcher, floor"
  off; rec "$r" cold_none "$(t cold)"
  rec "$r" floor "$(t floor)"
  for l in ccache sccache; do
    log "round $r/$ROUNDS: $l cold, warm-local, warm-shared"
    flush; L=$TMP/$l-$r
    "use_$l" "$L/a"; rec "$r" "${l}_cold" "$(t cold)"; rec "$r" "${l}_cold_counts" "$(counts $l)"
    "use_$l" "$L/a"; rec "$r" "${l}_warm_local" "$(t cold)"; rec "$r" "${l}_warm_local_counts" "$(counts $l)"
    "use_$l" "$L/b"; rec "$r" "${l}_warm_shared" "$(t cold)"; rec "$r" "${l}_warm_shared_counts" "$(counts $l)"
    [ "$l" = sccache ] && "$SC" --stop-server >/dev/null 2>&1
    off
  done
done

# Where a warm build's time goes: each compile alone through the launcher, local cache warm.
DB=$(ls "$MC"/target/release/mcpp/bench-cargo-mcpp/*/compile_commands.json | head -1)
for l in ccache sccache; do
  log "$l: each of the $N compiles alone, local cache warm"
  "use_$l" "$TMP/$l-1/a"
  rec 1 "${l}_each_ms" "$(python3 - "$DB" "$([ $l = ccache ] && echo "$CC" || echo "$SC")" <<'EOF'
import json, os, subprocess, sys, tempfile, time
db, launcher = json.load(open(sys.argv[1])), sys.argv[2]
tmp = tempfile.mkdtemp()
total = 0.0
for e in db:
    argv = list(e["arguments"])
    # the outputs into tmp, as the build names them (the cache key does not include them)
    for flag in ("-o", "-MF"):
        i = argv.index(flag)
        argv[i + 1] = os.path.join(tmp, os.path.basename(argv[i + 1]))
    env = dict(os.environ)
    if os.path.basename(launcher) == "ccache":
        # What cargo-mcpp gives ccache for this release argv (src/tool/launch.rs), so the key is the build's.
        env.update(CCACHE_BASEDIR=e["directory"], CCACHE_NOHASHDIR="1", CCACHE_DEPEND="1")
    s = time.monotonic()
    subprocess.run([launcher] + argv, cwd=e["directory"], env=env, check=True, stdout=subprocess.DEVNULL)
    total += time.monotonic() - s
print(f"{total * 1000 / len(db):.1f}")
EOF
)"
  rec 1 "${l}_each_counts" "$(counts $l)"
  [ "$l" = sccache ] && "$SC" --stop-server >/dev/null 2>&1
  off
done

grep -q FAIL "$RAW" && { echo "warm.sh: a build failed (see the FAIL rows); last lines of the log:" >&2; tail -30 "$TMP/log" >&2; }
python3 - "$RAW" "$N" "$(nproc)" <<'EOF'
import statistics, sys
from collections import defaultdict
raw, n, cores = sys.argv[1], sys.argv[2], sys.argv[3]
v = defaultdict(dict)
for line in open(raw):
    r, c, x = line.rstrip("\n").split("\t")
    v[c][r] = x
def num(c):
    return {r: float(x) for r, x in v[c].items() if x not in ("", "FAIL")}
def med(c):
    xs = list(num(c).values())
    if not xs:
        return "-"
    m = statistics.median(xs)
    return f"{m:.2f}" if len(xs) == 1 else f"{m:.2f} ({min(xs):.2f}-{max(xs):.2f})"
def ratio(a, b):
    da, db = num(a), num(b)
    rs = [da[r] / db[r] for r in da if r in db and db[r]]
    return f"{statistics.median(rs):.1f}x" if rs else "-"
print(f"| N={n} kernels, {cores} cores, crate-only clean builds (s) | ccache | sccache |")
print("|---|---|---|")
print(f"| cold, no launcher | {med('cold_none')} | {med('cold_none')} |")
print(f"| floor: nothing to compile (build script, archive, rustc) | {med('floor')} | {med('floor')} |")
for what, key in (("cold (empty caches)", "cold"), ("warm-local", "warm_local"), ("warm-shared (empty local cache, Redis warm)", "warm_shared")):
    print(f"| {what} | {med('ccache_' + key)} | {med('sccache_' + key)} |")
    print(f"| &nbsp;&nbsp;hits/misses (CUDA compiles) | {' / '.join(sorted(set(v['ccache_' + key + '_counts'].values())))} | {' / '.join(sorted(set(v['sccache_' + key + '_counts'].values())))} |")
for what, key in (("warm-local", "warm_local"), ("warm-shared", "warm_shared")):
    print(f"| cold without launcher / {what} | {ratio('cold_none', 'ccache_' + key)} | {ratio('cold_none', 'sccache_' + key)} |")
    print(f"| cold with the launcher / {what} | {ratio('ccache_cold', 'ccache_' + key)} | {ratio('sccache_cold', 'sccache_' + key)} |")
print(f"| one warm compile through the launcher, alone (ms, mean of {n}) | {v['ccache_each_ms'].get('1', '-')} | {v['sccache_each_ms'].get('1', '-')} |")
print(f"| &nbsp;&nbsp;hits/misses | {v['ccache_each_counts'].get('1', '-')} | {v['sccache_each_counts'].get('1', '-')} |")
print(f"| &nbsp;&nbsp;x{n} / {cores} cores (s) | {float(v['ccache_each_ms'].get('1', 0)) * int(n) / int(cores) / 1000:.2f} | {float(v['sccache_each_ms'].get('1', 0)) * int(n) / int(cores) / 1000:.2f} |")
EOF
