#!/usr/bin/env bash
# The fuzz campaign of takt-sip (outside CI): RUNS inputs (default 10^7)
# through each cargo-fuzz target, the three targets side by side, from the
# seed corpus (fuzz_seeds example) plus whatever corpus earlier campaigns
# left in crates/takt-sip/fuzz/corpus/TARGET. Fails on any crash, panic,
# hang (> 10 s on one input) or out-of-memory (> 2 GB); the input that did
# it is kept in crates/takt-sip/fuzz/artifacts/TARGET/. Logs go to
# crates/takt-sip/fuzz/artifacts/campaign-TARGET.log.
#
# `parse` runs under AddressSanitizer (it covers the wire layer's SIMD
# scans, the unsafe code on the message path); `proxy` and `ua` run the
# same code with no sanitizer (about twice the inputs per second) — their
# own code is safe Rust, and panics, overflows (debug assertions are on)
# and hangs are caught either way.
#
# Usage: scripts/fuzz-campaign.sh [RUNS [TARGET...]]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-10000000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse proxy ua)

fuzz=crates/takt-sip/fuzz
seeds=$(mktemp -d "${TMPDIR:-/tmp}/takt-fuzz-seeds.XXXXXX")
trap 'rm -rf "$seeds"' EXIT
cargo run -q --locked -p takt-sip --example fuzz_seeds -- "$seeds"

sanitizer() { [ "$1" = parse ] && echo address || echo none; }
for t in "${targets[@]}"; do
  (cd "$fuzz" && cargo +nightly fuzz build -s "$(sanitizer "$t")" "$t")
done
mkdir -p "$fuzz/artifacts"
pids=()
for t in "${targets[@]}"; do
  mkdir -p "$fuzz/corpus/$t"
  (cd "$fuzz" && exec cargo +nightly fuzz run -s "$(sanitizer "$t")" "$t" \
     "corpus/$t" "$seeds/$t" -- -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
     -print_final_stats=1) >"$fuzz/artifacts/campaign-$t.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if wait "${pids[$i]}"; then verdict="no crash"; else verdict=FAILED; status=1; fi
  log="$fuzz/artifacts/campaign-$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  secs=$(awk -v e="${execs:-0}" -v r="${rate:-0}" 'BEGIN { if (r > 0) printf "%.0f", e / r; else print "?" }')
  printf 'campaign %-6s %-8s %12s execs  %6s inputs/s  ~%s s  corpus %s files\n' \
    "$t" "$verdict" "${execs:-?}" "${rate:-?}" "$secs" "$(find "$fuzz/corpus/$t" -type f | wc -l)"
  [ "$verdict" = "no crash" ] || grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -20 >&2 || true
done
exit $status
