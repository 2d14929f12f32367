#!/usr/bin/env python3
"""The physical limit with a build's own compiler argv: every entry of a compile_commands.json
(cargo-mcpp writes the real argv, the launcher left out) run JOBS at a time, in its directory,
with the values of `-o`, `-MF` and `--depfile` moved into SCRATCH (so the build's own objects
and depfiles are left alone; everything else is the build's argv byte for byte).
usage: limit-from-db.py COMPILE_COMMANDS_JSON JOBS SCRATCH_DIR   (exit 1 if a compile fails)"""
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

db, jobs, scratch = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(scratch, exist_ok=True)
entries = json.load(open(db))

def argv(i, e):
    a = list(e["arguments"])
    for j in range(len(a) - 1):
        if a[j] in ("-o", "-MF", "--depfile"):
            a[j + 1] = os.path.join(scratch, f"{i}-{os.path.basename(a[j + 1])}")
    return a

def run(ie):
    i, e = ie
    return subprocess.run(argv(i, e), cwd=e["directory"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

with ThreadPoolExecutor(max_workers=jobs) as pool:
    codes = list(pool.map(run, enumerate(entries)))
sys.exit(1 if any(codes) else 0)
