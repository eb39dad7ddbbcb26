#!/usr/bin/env bash
# Runs every loom model (tests named loom_*) with a bounded preemption count.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
tests=()
for f in crates/*/tests/loom_*.rs; do
  crate=$(basename "$(dirname "$(dirname "$f")")")
  tests+=("$crate:$(basename "$f" .rs)")
done
for t in "${tests[@]}"; do
  cargo test --locked --release -p "${t%%:*}" --test "${t##*:}"
done
