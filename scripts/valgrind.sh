#!/usr/bin/env bash
# Runs the unsafe-heavy crates' tests under valgrind memcheck (Miri is not
# available on the installed nightly). Any memcheck error fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
crates=(takt-sched takt-agents takt-sme takt-sip takt-peer-caf)
for c in "${crates[@]}"; do
  mapfile -t exes < <(cargo test --locked -p "$c" --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])')
  for exe in "${exes[@]}"; do
    # loom models are compiled out without --cfg loom; scripts/loom.sh runs them.
    case "$(basename "$exe")" in loom_*) continue ;; esac
    echo "valgrind: $exe" >&2
    # --fair-sched: a ticket lock instead of a pipe between threads, so spinning
    # workers cannot starve the thread they wait for (a work-stealing test
    # timed out in 1 of 5 runs without it).
    TAKT_UNDER_VALGRIND=1 valgrind -q --error-exitcode=99 --fair-sched=yes --leak-check=full \
      --errors-for-leak-kinds=definite --show-possibly-lost=no --track-origins=yes \
      "$exe" --test-threads=2
  done
done
