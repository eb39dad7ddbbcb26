#!/usr/bin/env bash
# Per-message instructions and cache misses of the proxy path, by kind.
#
#   crates/takt-sip/scripts/path_misses.sh [stateful|stateless] [calls] [cold]
#
# Runs examples/path_cost (build it first: cargo build --release -p takt-sip
# --example path_cost) under callgrind with the cache simulator and prints,
# per message kind, the inclusive cost of one `handle_<kind>` call:
# instructions (Ir), I1 misses, D1 misses (read + write) and last-level
# misses (instruction + data). The last level is simulated as a 1 MiB,
# 16-way cache (this machine's per-core L2): valgrind's default takes the
# host's L3 (or a bogus 512 MiB on some VMs), which hides every miss the
# live proxy pays. `cold` writes 16 MiB between messages (see path_cost.rs);
# keep `calls` small with it (300 takes about a minute).
set -euo pipefail
mode=${1:-stateful}
n=${2:-2000}
cold=${3:-}
root=$(cd "$(dirname "$0")/../../.." && pwd)
bin=$root/target/release/examples/path_cost
out=$(mktemp /tmp/path_misses.XXXXXX)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --cache-sim=yes --LL=1048576,16,64 --dump-instr=no \
    --callgrind-out-file="$out" "$bin" "$mode" "$n" $cold >/dev/null 2>&1
echo "$mode, $n calls${cold:+, cold}: per message (LL = 1 MiB L2)"
callgrind_annotate --threshold=100 --inclusive=yes "$out" 2>/dev/null |
    grep -E 'path_cost::handle_' | grep -v '=>' | python3 -c '
import re, sys
n = int(sys.argv[1])
seen = set()
for line in sys.stdin:
    f = re.sub(r"\(\s*[0-9.]+%\)", "", line).replace(",", "").split()
    v = [0 if x == "." else int(x) for x in f[:9]]
    name = [x for x in f if "handle_" in x][0].split("::")[-1]
    if name in seen:  # sorted by Ir: later rows are self costs, not inclusive
        continue
    seen.add(name)
    print("%-14s Ir %7.0f  I1 %6.1f  D1 %6.1f  LL %6.1f"
          % (name, v[0] / n, v[3] / n, (v[4] + v[5]) / n, (v[6] + v[7] + v[8]) / n))
' "$n"
