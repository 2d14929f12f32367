#!/usr/bin/env python3
"""Where the seconds of a warm-cache nvcc compile through sccache go, per kernel.

usage: benches/sccache-breakdown.py COMPILE_COMMANDS_JSON [ROUNDS] [N] [CORES]
       (the mcpp-build variant's database: benches/cargo-mcpp/target/release/mcpp/
       bench-cargo-mcpp/*/compile_commands.json, after any build of it)
env:   MCPP_SCCACHE (else sccache on PATH); nvcc's toolkit on PATH as for the build.

Takes the first entry's argv (cargo-mcpp's own nvcc argv, launcher left out) and times, one
process at a time, the best of ROUNDS (default 3):
  - the compile without a launcher (what a cold build pays per kernel);
  - the same compile through sccache with a warm cache (a private server and cache directory);
  - each process sccache 0.16 runs for it (src/compiler/nvcc.rs, c.rs): the outer call's hash
    (`nvcc -M` for the depfile flags, `nvcc -E -Xcompiler=-P`), `nvcc --dryrun`, the steps of the
    dry run it runs uncached (the two host-compiler `-E` that make the inputs of cicc and
    cudafe++, fatbinary) and the host compile's hash (the host compiler's `-E` of the
    `.cudafe1.cpp`); cudafe++, cicc, ptxas and the host compile are cache hits (no process).
Prints a Markdown table: milliseconds per kernel and the projection to N kernels (default 32) on
CORES cores (default nproc): N x ms / cores.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time


def best(argv, rounds, env=None, cwd=None):
    """Best wall time in ms of `argv` over `rounds` runs; exits on a failure."""
    times = []
    for _ in range(rounds):
        start = time.monotonic()
        r = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append((time.monotonic() - start) * 1000)
        if r.returncode != 0:
            sys.exit(f"sccache-breakdown: {argv[0]} failed ({r.returncode}): {r.stderr.decode(errors='replace')[-2000:]}")
    return min(times)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    db = json.load(open(sys.argv[1]))
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    cores = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
    sc = os.environ.get("MCPP_SCCACHE") or shutil.which("sccache")
    if not sc:
        sys.exit("sccache-breakdown: no sccache (MCPP_SCCACHE unset, none on PATH)")
    entry = db[0]
    cwd = entry["directory"]
    argv = list(entry["arguments"])
    nvcc, src = argv[0], entry["file"]
    tmp = tempfile.mkdtemp(prefix="mcpp-sccache-breakdown")
    try:
        # The same argv with the outputs (object, depfile) moved into tmp.
        out = dict(zip(argv, argv[1:]))
        obj, dep = out.get("-o"), out.get("-MF")
        moved = [os.path.join(tmp, "k.o") if a == obj else os.path.join(tmp, "k.d") if a == dep else a for a in argv]
        # The outer call as sccache's preprocess() sees it: without -c, -o, the depfile flags, the input.
        skip = {"-c", "-MMD", "-MD", src}
        outer, i = [], 1
        while i < len(argv):
            if argv[i] in ("-o", "-MF"):
                i += 2
                continue
            if argv[i] not in skip:
                outer.append(argv[i])
            i += 1
        rows = []
        rows.append(("compile without a launcher (cold, per kernel)", best(moved, rounds, cwd=cwd)))
        env = dict(os.environ, SCCACHE_DIR=os.path.join(tmp, "cache"), SCCACHE_SERVER_PORT=str(4300 + os.getpid() % 600))
        subprocess.run([sc, "--stop-server"], env=env, capture_output=True)
        subprocess.run([sc, "--start-server"], env=env, check=True, capture_output=True)
        try:
            best([sc] + moved, 1, env=env, cwd=cwd)  # fills the cache
            warm = best([sc] + moved, rounds, env=env, cwd=cwd)
            # The one part of sccache's work cargo-mcpp's argv decides: the depfile flags.
            nodep = [a for a in moved if a not in ("-MMD", "-MD")]
            if "-MF" in nodep:
                f = nodep.index("-MF")
                del nodep[f:f + 2]
            best([sc] + nodep, 1, env=env, cwd=cwd)
            warm_nodep = best([sc] + nodep, rounds, env=env, cwd=cwd)
        finally:
            subprocess.run([sc, "--stop-server"], env=env, capture_output=True)
        rows.append(("**through sccache, warm cache (per kernel)**", warm))
        rows.append(("through sccache, warm cache, without `-MMD -MF` (no depfile: not a build cargo-mcpp can use)", warm_nodep))
        parts = []
        parts.append(("outer hash: `nvcc -M` (for `-MMD -MF`)", best([nvcc] + outer + ["-M", "-MF", os.path.join(tmp, "m.d"), "-x", "cu", src], rounds, cwd=cwd)))
        parts.append(("outer hash: `nvcc -E -Xcompiler=-P`", best([nvcc] + outer + ["-x", "cu", src, "-E", "-Xcompiler=-P"], rounds, cwd=cwd)))
        parts.append(("`nvcc --dryrun`", best(moved + ["--dryrun"], rounds, cwd=cwd)))
        # The dry run's steps, with their intermediate files kept in tmp (one real compile first).
        keep = os.path.join(tmp, "keep")
        os.makedirs(keep)
        kept = moved + ["-keep", "-keep-dir", keep]
        subprocess.run(kept, cwd=cwd, check=True, capture_output=True)
        dry = subprocess.run(kept + ["--dryrun"], cwd=cwd, capture_output=True, text=True).stderr
        steps = [shlex.split(line[3:]) for line in dry.splitlines() if line.startswith("#$ ") and "=" not in line[3:].split(" ")[0]]
        host = [s for s in steps if s and os.path.basename(s[0]) not in ("cudafe++", "ptxas", "fatbinary", "nvlink", "rm") and not s[0].startswith("--") and "cicc" not in s[0]]
        for s in host:
            if "-E" in s:
                what = "cicc input" if any(a.startswith("-D__CUDA_ARCH__=") for a in s) else "cudafe++ input"
                parts.append((f"dry-run step, uncached: host `-E` ({what})", best(s, rounds, cwd=cwd)))
            elif "-c" in s:
                pre = [a for a in s if a != "-c"]
                o = pre.index("-o")
                pre[o + 1] = os.devnull
                parts.append(("host compile's hash: host `-E` of the `.cudafe1.cpp`", best(pre + ["-E"], rounds, cwd=cwd)))
        for s in steps:
            if s and os.path.basename(s[0]) == "fatbinary":
                parts.append(("dry-run step, uncached: `fatbinary`", best(s, rounds, cwd=cwd)))
        rows += parts
        total = sum(ms for _, ms in parts)
        rows.append(("sum of the processes above (the rest: sccache's client, server, lookups)", total))
        print(f"| one kernel, `{os.path.basename(src)}`, best of {rounds} | ms | x{n} / {cores} cores (s) |")
        print("|---|---:|---:|")
        for what, ms in rows:
            print(f"| {what} | {ms:.0f} | {ms * n / cores / 1000:.2f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
