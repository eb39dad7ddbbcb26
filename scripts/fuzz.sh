#!/usr/bin/env bash
# Short cargo-fuzz runs of takt-sip's fuzz targets (crates/takt-sip/fuzz):
# part of the test suite. Each target starts from the seed corpus (RFC 4475
# torture messages and synthesized call flows, written by the fuzz_seeds
# example) and runs for FUZZ_SECONDS (default 55) seconds. Any crash, panic,
# hang (> 10 s on one input) or out-of-memory fails the script; the crashing
# input is kept in crates/takt-sip/fuzz/artifacts/TARGET/ and reproduces with
#   cargo +nightly fuzz run TARGET crates/takt-sip/fuzz/artifacts/TARGET/crash-...
# Prints executions and inputs/s per target.
#
# Usage: scripts/fuzz.sh [TARGET...]   (default: parse proxy ua)
# Needs the nightly toolchain and cargo-fuzz (scripts/setup.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-55}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse proxy ua)

work=$(mktemp -d "${TMPDIR:-/tmp}/takt-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
cargo run -q --locked -p takt-sip --example fuzz_seeds -- "$work/seeds"

cd crates/takt-sip/fuzz
cargo +nightly fuzz build

status=0
for t in "${targets[@]}"; do
  mkdir -p "$work/corpus/$t"
  log="$work/$t.log"
  if cargo +nightly fuzz run "$t" "$work/corpus/$t" "$work/seeds/$t" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 >"$log" 2>&1; then
    verdict=ok
  else
    verdict=FAILED
    status=1
    grep -E 'panicked|ERROR|SUMMARY|Test unit written|deadly signal|timeout' "$log" | head -20 >&2 || true
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$work/corpus/$t" -type f | wc -l)
  printf 'fuzz %-6s %-6s %12s execs %8s inputs/s  corpus %s (+%s seeds)\n' \
    "$t" "$verdict" "${execs:-?}" "${rate:-?}" "$corpus" "$(ls "$work/seeds/$t" | wc -l)"
done
exit $status
