#!/usr/bin/env python3
"""benches/figures.sh's raw TSV (N, round, contender, value) -> the Markdown table of the build
figures: medians (min-max) and medians of per-round ratios. usage: figures-table.py RAW.tsv CORES"""
import statistics, sys
from collections import defaultdict

rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
cores = sys.argv[2]
v = defaultdict(dict)  # (N, contender) -> {round: value}
for n, r, c, x in rows:
    try:
        v[(n, c)][r] = float(x)
    except ValueError:
        v[(n, c)][r] = None  # FAIL or missing

def vals(n, c):
    return [x for x in v.get((n, c), {}).values() if x is not None]

def med(n, c, scale=1.0, fmt="{:.2f}"):
    xs = vals(n, c)
    if not xs:
        return "-"
    m = statistics.median(xs) * scale
    lo, hi = min(xs) * scale, max(xs) * scale
    s = fmt.format(m)
    return s if len(xs) == 1 else f"{s} ({fmt.format(lo)}-{fmt.format(hi)})"

def diff(n, a, b, scale=1000.0, fmt="{:+.0f}"):
    da, db = v.get((n, a), {}), v.get((n, b), {})
    ds = [(da[r] - db[r]) * scale for r in da if r in db and da[r] is not None and db[r] is not None]
    return fmt.format(statistics.median(ds)) if ds else "-"

def ratio(n, a, b, fmt="{:.3f}x"):
    da, db = v.get((n, a), {}), v.get((n, b), {})
    rs = [da[r] / db[r] for r in da if r in db and da[r] is not None and db[r]]
    return fmt.format(statistics.median(rs)) if rs else "-"

sizes = sorted({n for n, c in v if c in ("cold_mcpp_build", "noop_empty")}, key=int)
print(f"| figure | " + " | ".join(f"N={n}" for n in sizes) + " |")
print("|---|" + "---|" * len(sizes))
table = [
    ("limit, cargo-mcpp's argv, `nproc`={} at once (s)".format(cores), lambda n: med(n, "limit")),
    ("cold crate-only, `mcpp-build` (s)", lambda n: med(n, "cold_mcpp_build")),
    ("&nbsp;&nbsp;/ limit (median of per-round ratios)", lambda n: ratio(n, "cold_mcpp_build", "limit")),
    ("cold crate-only, library build-dependency (s)", lambda n: med(n, "cold_library")),
    ("&nbsp;&nbsp;/ limit", lambda n: ratio(n, "cold_library", "limit")),
    ("cold crate-only, library with `engine` (s)", lambda n: med(n, "cold_engine")),
    ("&nbsp;&nbsp;/ limit", lambda n: ratio(n, "cold_engine", "limit")),
    ("no-op, empty crate (ms)", lambda n: med(n, "noop_empty", 1000, "{:.0f}")),
    ("no-op, `mcpp-build` (ms)", lambda n: med(n, "noop_mcpp_build", 1000, "{:.0f}")),
    ("no-op, library build-dependency (ms)", lambda n: med(n, "noop_library", 1000, "{:.0f}")),
    ("no-op, library with `engine` (ms)", lambda n: med(n, "noop_engine", 1000, "{:.0f}")),
    ("&nbsp;&nbsp;`mcpp-build` minus empty crate, same round (ms)", lambda n: diff(n, "noop_mcpp_build", "noop_empty")),
    ("&nbsp;&nbsp;library minus empty crate, same round (ms)", lambda n: diff(n, "noop_library", "noop_empty")),
    ("&nbsp;&nbsp;library with `engine` minus empty crate, same round (ms)", lambda n: diff(n, "noop_engine", "noop_empty")),
]
for name, f in table:
    print(f"| {name} | " + " | ".join(f(n) for n in sizes) + " |")
sc = sorted({n for n, c in v if c == "sccache_warm"}, key=int)
if sc:
    n = sc[0]
    print()
    print(f"| sccache, `mcpp-build`, N={n} | value |")
    print("|---|---|")
    print(f"| cold crate-only, no launcher (s) | {med(n, 'cold_mcpp_build_nolauncher')} |")
    print(f"| cold crate-only, sccache, empty cache (s) | {med(n, 'sccache_cold')} |")
    print(f"| warm-cache clean build, sccache (s) | {med(n, 'sccache_warm')} |")
    print(f"| speed-up of the warm build over the cold build without launcher | {ratio(n, 'cold_mcpp_build_nolauncher', 'sccache_warm', '{:.1f}x')} |")
    print(f"| speed-up of the warm build over the cold build with sccache | {ratio(n, 'sccache_cold', 'sccache_warm', '{:.1f}x')} |")
    print(f"| sccache hits / misses, cold build | {med(n, 'sccache_cold_hits', 1, '{:.0f}')} / {med(n, 'sccache_cold_misses', 1, '{:.0f}')} |")
    print(f"| sccache hits / misses, warm build | {med(n, 'sccache_warm_hits', 1, '{:.0f}')} / {med(n, 'sccache_warm_misses', 1, '{:.0f}')} |")
