#!/usr/bin/env bash
# Code footprint of the proxy path, by message kind: how many distinct
# instructions one message executes and how many 64-byte code lines they
# lie on, with the functions holding the most lines.
#
#   crates/takt-sip/scripts/path_lines.sh [stateful|stateless] [calls] [kinds...]
#
# Runs examples/path_cost (build it first: cargo build --release -p takt-sip
# --example path_cost) under callgrind once per kind, collecting only inside
# that kind's `handle_<kind>`, with per-instruction addresses. A message that
# finds its core cold (a halted vCPU, or the kernel's receive path in between)
# fetches each of these code lines again; see the crate README, "What a
# message costs, and where".
set -euo pipefail
mode=${1:-stateful}
n=${2:-500}
shift $(($# < 2 ? $# : 2))
kinds=${*:-invite 100 180 200 ack bye 200bye}
root=$(cd "$(dirname "$0")/../../.." && pwd)
bin=$root/target/release/examples/path_cost
out=$(mktemp /tmp/path_lines.XXXXXX)
trap 'rm -f "$out"' EXIT
echo "$mode, $n calls: per message"
for k in $kinds; do
    valgrind --tool=callgrind --dump-instr=yes --toggle-collect="path_cost::handle_$k" \
        --callgrind-out-file="$out" "$bin" "$mode" "$n" >/dev/null 2>&1
    python3 - "$out" "$k" "$n" <<'EOF'
import collections, re, sys
path, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
names, fn, addr, total = {}, None, 0, 0
lines = collections.defaultdict(set)
instrs = set()
for raw in open(path):
    line = raw.rstrip("\n")
    m = re.match(r"c?fn=\((\d+)\)(?: (.*))?$", line)
    if m:
        if m.group(2):
            names[m.group(1)] = m.group(2)
        if line.startswith("fn="):
            fn = names.get(m.group(1), m.group(1))
        continue
    if line.startswith("summary:") or line.startswith("totals:"):
        total = int(line.split()[1])
        continue
    first = line.split(" ", 1)[0]
    if first.startswith("0x"):
        addr = int(first, 16)
    elif first[:1] in "+-" and first[1:].isdigit():
        addr += int(first)
    elif first != "*":
        continue
    lines[fn].add(addr >> 6)
    instrs.add(addr)
every = set().union(*lines.values()) if lines else set()
top = sorted(lines.items(), key=lambda kv: -len(kv[1]))[:4]
print("%-7s Ir %6.0f  distinct instructions %5d  code lines %4d  (%s)" % (
    kind, total / n, len(instrs), len(every),
    ", ".join("%s %d" % (f.split("::")[-1], len(s)) for f, s in top)))
EOF
done
