#!/usr/bin/env python3
"""$WORK/raw.tsv, rss.tsv and check.tsv (written by run.sh) -> the Markdown of results.md.
Times: median (min-max) over the rounds; ratios: the median of the per-round ratios to the
hand-written include_bytes! crate (the contenders of a round ran one after another).
usage: report.py WORK N ROUNDS BIG_MB"""
import csv, datetime, os, platform, statistics, subprocess, sys
from collections import defaultdict

work, n, rounds, big_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
raw = list(csv.DictReader(open(f"{work}/raw.tsv"), delimiter="\t"))
rss = defaultdict(list)  # (part, contender, tool) -> [(kB, s)]
for line in open(f"{work}/rss.tsv"):
    f = line.rstrip("\n").split("\t")
    if len(f) < 4:
        continue
    words = f[3].split()
    if len(words) == 4 and words[0] in ("engine", "as", "rustc"):
        rss[(f[0], f[2], words[0])].append((int(words[2]), float(words[3])))


def rows(part):
    by = defaultdict(dict)
    for r in raw:
        if r["part"] == part:
            by[r["contender"]][int(r["round"])] = r
    return by


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def span(xs):
    return f"{med(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})" if xs else "-"


def ratio(by, c, base):
    rs = [float(by[c][r]["seconds"]) / float(by[base][r]["seconds"]) for r in by[c] if r in by.get(base, {})]
    return f"{med(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})" if rs else "-"


def peak(part, c, tool):
    xs = rss.get((part, c, tool), [])
    return f"{med([k for k, _ in xs]) / 1024:.0f} MiB, {med([s for _, s in xs]):.2f} s" if xs else "-"


def mib(b):
    return f"{int(b) / (1 << 20):.2f} MiB"


cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"# Storage benchmark ({datetime.date.today().isoformat()})\n")
print(f"Machine: {os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}; "
      f"{subprocess.run(['rustc', '--version'], capture_output=True, text=True).stdout.strip()}; "
      f"glslangValidator {subprocess.run(['glslangValidator', '--version'], capture_output=True, text=True).stdout.split(chr(10))[0].split(':')[-1].strip()}. "
      f"N = {n} payloads of ~16 KB of SPIR-V; {rounds} interleaved rounds.\n")
names = {
    "include-bytes": "hand-written: build.rs runs glslangValidator (a thread a core), `include_bytes!`",
    "prebuilt": "`include_bytes!` of SPIR-V compiled beforehand (no compiler in the build: the floor)",
    "mcpp-header": "cargo-mcpp, `storage = \"header\"`",
    "mcpp-object": "cargo-mcpp, `storage = \"object\"`",
    "mcpp-sidecar": "cargo-mcpp, `storage = \"sidecar\"`",
    "embed-header": "cargo-mcpp tools-embed, `storage = \"header\"`",
    "embed-object": "cargo-mcpp tools-embed, `storage = \"object\"`",
    "embed-sidecar": "cargo-mcpp tools-embed, `storage = \"sidecar\"`",
    "big-include-bytes": f"hand-written `include_bytes!` of one {big_mb} MiB file (no build script)",
    "big-header": f"cargo-mcpp tools-embed, `storage = \"header\"`, one {big_mb} MiB file",
    "big-object": f"cargo-mcpp tools-embed, `storage = \"object\"`, one {big_mb} MiB file",
}
by = rows("cold")
print("## Cold crate-only build (`cargo clean --release -p` and the device cache) and binary size\n")
print("| contender | cold build | / hand-written | release binary | sidecar files | build script (engine) peak RSS, time | rustc of the crate: peak RSS, time |")
print("|---|---|---|---|---|---|---|")
for c in ["include-bytes", "prebuilt", "mcpp-header", "mcpp-object", "mcpp-sidecar"]:
    if c not in by:
        continue
    rs = by[c].values()
    last = list(rs)[-1]
    print(f"| {names[c]} | {span([float(r['seconds']) for r in rs])} | {ratio(by, c, 'include-bytes')} | {mib(last['binary'])} | {mib(last['sidecars']) if int(last['sidecars']) else '-'} | {peak('cold', c, 'engine')} | {peak('cold', c, 'rustc')} |")
by = rows("edit")
print(f"\n## One payload edited (N = {n}): what reruns\n")
print("| contender | build after the edit | / hand-written | shader compiles | assemblies | rustc of the crate |")
print("|---|---|---|---|---|---|")
for c in ["include-bytes", "mcpp-header", "mcpp-object", "mcpp-sidecar"]:
    if c not in by:
        continue
    rs = list(by[c].values())
    g = sorted({r["glslang"] for r in rs}); a = sorted({r["assemblies"] for r in rs}); ru = sorted({r["rustc"] for r in rs})
    print(f"| {names[c]} | {span([float(r['seconds']) for r in rs])} | {ratio(by, c, 'include-bytes')} | {'/'.join(g)} | {'/'.join(a)} | {'/'.join(ru)} |")
by = rows("ecold")
if by:
    print(f"\n## The same {n} payloads as embedded data files (tools-embed, `element = \"words\"`): cold crate-only build against `include_bytes!` of the same files\n")
    print("| contender | cold build | / include_bytes! | release binary | sidecar files | build script (engine) peak RSS, time | rustc of the crate: peak RSS, time |")
    print("|---|---|---|---|---|---|---|")
    for c in ["prebuilt", "embed-header", "embed-object", "embed-sidecar"]:
        if c not in by:
            continue
        rs = by[c].values()
        last = list(rs)[-1]
        print(f"| {names[c]} | {span([float(r['seconds']) for r in rs])} | {ratio(by, c, 'prebuilt')} | {mib(last['binary'])} | {mib(last['sidecars']) if int(last['sidecars']) else '-'} | {peak('ecold', c, 'engine')} | {peak('ecold', c, 'rustc')} |")
by = rows("eedit")
if by:
    print(f"\n## One embedded data file edited (N = {n}): what reruns\n")
    print("| contender | build after the edit | / include_bytes! | assemblies | rustc of the crate |")
    print("|---|---|---|---|---|")
    for c in ["prebuilt", "embed-header", "embed-object", "embed-sidecar"]:
        if c not in by:
            continue
        rs = list(by[c].values())
        a = sorted({r["assemblies"] for r in rs}); ru = sorted({r["rustc"] for r in rs})
        print(f"| {names[c]} | {span([float(r['seconds']) for r in rs])} | {ratio(by, c, 'prebuilt')} | {'/'.join(a)} | {'/'.join(ru)} |")
by = rows("big")
if by:
    print(f"\n## One {big_mb} MiB data file: include_bytes!, object and header storage\n")
    print("| contender | cold build | / include_bytes! | build script (engine) peak RSS, time | assembler peak RSS, time | rustc of the crate: peak RSS, time | release binary |")
    print("|---|---|---|---|---|---|---|")
    for c in ["big-include-bytes", "big-object", "big-header"]:
        if c not in by:
            continue
        rs = list(by[c].values())
        failed = [r for r in rs if r["rc"] != "0"]
        result = mib(rs[-1]["binary"])
        if failed:
            out = open(f"{work}/log/big-{c}-{failed[0]['round']}.out").read().splitlines()
            first = next((l.strip() for l in out if l.startswith("error")), "see the log")
            result = f"build FAILED ({len(failed)}/{len(rs)}): `{first}`"
        print(f"| {names[c]} | {span([float(r['seconds']) for r in rs])} | {ratio(by, c, 'big-include-bytes')} | {peak('big', c, 'engine')} | {peak('big', c, 'as')} | {peak('big', c, 'rustc')} | {result} |")
check = [l.rstrip("\n").split("\t") for l in open(f"{work}/check.tsv")]
same = len({tuple(x[1:]) for x in check}) == 1
print(f"\nEvery program printed the same payload sizes and words (`n x`): {'yes' if same else 'NO: ' + '; '.join(' '.join(x) for x in check)}.")
