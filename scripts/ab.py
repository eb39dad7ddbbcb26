#!/usr/bin/env python3
"""Interleaved A/B of two takt builds on the two hot paths a change to the
laboratory must not slow: `takt bench agents --quick` (the one-thread
ping_pong row) and `takt sip load --quick` (t_sip_hot, the geometric mean
of its rows), both with the measured threads on CPU 1 (SIPp on CPU 0).
Each pair runs both builds back to back, the order swapped every pair;
the summary is the median of the per-pair ratios new/base (< 1: the new
build is faster), with their range. Run it on a quiet machine.

usage: scripts/ab.py BASE_TAKT NEW_TAKT PAIRS OUTDIR
  e.g. scripts/ab.py /tmp/takt-base target/release/takt 10 ab-out
Writes every run's JSON document, pairs.tsv and summary.json to OUTDIR.
"""
import json, os, statistics, subprocess, sys, time

if len(sys.argv) != 5:
    sys.exit(__doc__)
base, new, pairs, out = (os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]),
                         int(sys.argv[3]), os.path.abspath(sys.argv[4]))
os.makedirs(out, exist_ok=True)
CMDS = {
    "agents": ["bench", "agents", "--quick", "--json", "--cpus", "1"],
    "load": ["sip", "load", "--quick", "--json", "--cpus", "1", "--sipp-cpus", "0"],
}


def run(binary, tag, kind, i):
    path = f"{out}/{kind}-{tag}-{i}.json"
    t = time.time()
    with open(path, "w") as f, open(path + ".err", "w") as e:
        subprocess.run([binary] + CMDS[kind], stdout=f, stderr=e, check=True, cwd="/tmp")
    return json.load(open(path)), time.time() - t


def pick(doc, kind):
    """The compared quantity of one run."""
    if kind == "agents":
        rows = [r for r in doc["results"] if r["name"] == "ping_pong" and r["impl"] == "takt"
                and r["params"].get("dispatcher") == "one_thread"]
        assert len(rows) == 1, rows
        return rows[0]["median"]
    # t_sip_hot: geometric mean over its rows (message x mode x model).
    rows = [r["median"] for r in doc["results"] if r["name"] == "t_sip_hot"]
    assert rows
    prod = 1.0
    for v in rows:
        prod *= v
    return prod ** (1 / len(rows))


ratios = {k: [] for k in CMDS}
log = open(f"{out}/pairs.tsv", "a")
for i in range(pairs):
    for kind in CMDS:
        order = [("base", base), ("new", new)] if i % 2 == 0 else [("new", new), ("base", base)]
        vals = {}
        for tag, binary in order:
            doc, secs = run(binary, tag, kind, i)
            vals[tag] = pick(doc, kind)
        r = vals["new"] / vals["base"]
        ratios[kind].append(r)
        line = f"{i}\t{kind}\t{order[0][0]}-first\tbase={vals['base']:.4f}\tnew={vals['new']:.4f}\tratio={r:.4f}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

summary = {}
for kind, rs in ratios.items():
    rs_sorted = sorted(rs)
    summary[kind] = {
        "pairs": len(rs),
        "median_ratio_new_over_base": statistics.median(rs),
        "min": rs_sorted[0],
        "max": rs_sorted[-1],
        "ratios": rs,
    }
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps(summary, indent=1))
