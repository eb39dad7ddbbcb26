#!/usr/bin/env bash
# takt's whole test suite: what CI runs (.ci/run calls this and nothing else).
#   1. installs required tools (scripts/setup.sh)
#   2. cargo fmt --check and clippy -D warnings
#   3. cargo test over the workspace
#   4. loom models (RUSTFLAGS="--cfg loom", bounded preemptions)
#   5. the unsafe-heavy tests under valgrind memcheck
#   6. a short run of each of takt-sip's fuzz targets (scripts/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s ==\n' "$*" >&2; }

# Every test runner's output also goes to a log, summed up in the last line.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
exec > >(tee "$log") 2>&1

step "setup"
bash scripts/setup.sh

step "fmt"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked

step "loom models"
bash scripts/loom.sh

step "valgrind memcheck"
bash scripts/valgrind.sh

step "fuzz (takt-sip, about a minute per target)"
bash scripts/fuzz.sh

wait_for_tee() { sleep 0.2; }
wait_for_tee
python3 - "$log" <<'PY'
import re, sys
passed = failed = 0
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"test result: \w+\. (\d+) passed; (\d+) failed", line)
    if m:
        passed += int(m.group(1)); failed += int(m.group(2))
print(f"takt tests: {passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
PY
