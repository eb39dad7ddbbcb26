#!/usr/bin/env python3
"""Interleaved A/B of the proxy's CPU per call in two takt builds.

  crates/takt-sip/scripts/ab_cpu.py BASE_TAKT NEW_TAKT MODE CPS PAIRS [SECS]

Each pair runs `cpu_per_call.py` (beside this script: the proxy in the
`shared` model, 4 workers on CPU 1, `takt sip gen` on CPU 0 at CPS calls/s
for SECS seconds, 3 by default) once per build, the order swapped every
pair, and prints per build the median and range of the server CPU per
call, the system calls and context switches per call, and the median of
the per-pair ratios new/base (< 1: the new build uses less).
"""
import os, re, statistics, subprocess, sys

if len(sys.argv) < 6:
    sys.exit(__doc__)
base, new, mode, cps, pairs = sys.argv[1:6]
secs = sys.argv[6] if len(sys.argv) > 6 else "3"
here = os.path.dirname(os.path.abspath(__file__))


def run(binary):
    out = subprocess.run([sys.executable, f"{here}/cpu_per_call.py", binary, mode, cps, secs],
                         capture_output=True, text=True, check=True).stdout
    cpu = float(re.search(r"server cpu/call ([\d.]+)", out).group(1))
    failed = int(re.search(r"failed (\d+)", out).group(1))
    sys_ = float(re.search(r"sys_enter\s+([\d.]+)", out).group(1))
    cs = float(re.search(r"context-switches\s+([\d.]+)", out).group(1))
    return cpu, sys_, cs, failed


res = {"base": [], "new": []}
ratios = []
for i in range(int(pairs)):
    order = [("base", base), ("new", new)] if i % 2 == 0 else [("new", new), ("base", base)]
    got = {}
    for tag, b in order:
        got[tag] = run(b)
        res[tag].append(got[tag])
    ratios.append(got["new"][0] / got["base"][0])
    print(f"pair {i} ({order[0][0]} first): base {got['base'][0]:.2f} us  new {got['new'][0]:.2f} us"
          f"  ratio {ratios[-1]:.3f}  (syscalls {got['base'][1]:.2f} -> {got['new'][1]:.2f},"
          f" switches {got['base'][2]:.2f} -> {got['new'][2]:.2f}, failed calls"
          f" {got['base'][3]} / {got['new'][3]})", flush=True)
for tag in ("base", "new"):
    cpu = [r[0] for r in res[tag]]
    print(f"{tag}: cpu/call median {statistics.median(cpu):.2f} us (range {min(cpu):.2f}-{max(cpu):.2f}),"
          f" syscalls/call {statistics.median(r[1] for r in res[tag]):.2f},"
          f" context switches/call {statistics.median(r[2] for r in res[tag]):.2f}")
print(f"new/base: median ratio {statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f},"
      f" {len(ratios)} pairs)")
