#!/usr/bin/env bash
# takt's whole test suite: what CI runs (.ci/run calls this and nothing else).
#   1. installs required tools (scripts/setup.sh)
#   2. cargo fmt --check and clippy -D warnings
#   3. the ractor_cluster peer (its own workspace): fmt, build, clippy, tests
#   4. cargo test over the workspace
#   5. loom models (RUSTFLAGS="--cfg loom", bounded preemptions)
#   6. the unsafe-heavy tests under valgrind memcheck
#   7. a short run of each of takt-sip's fuzz targets (scripts/fuzz.sh)
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

# The ractor_cluster peer of `takt bench remote` is a cargo workspace of its
# own (its ractor `cluster` feature and rustls/aws-lc-rs stay out of takt's
# build), built into takt's target directory next to target/release/takt,
# where the run finds it and takt-bench-remote's tests require it. Its clippy runs
# on the release profile to share the build's compiled dependencies.
step "ractor_cluster peer (peers/ractor-cluster)"
peer=peers/ractor-cluster/Cargo.toml
cargo fmt --manifest-path "$peer" -- --check
cargo build --release --locked --manifest-path "$peer" --target-dir target
cargo clippy --release --all-targets --locked --manifest-path "$peer" --target-dir target -- -D warnings
cargo test --release --locked --manifest-path "$peer" --target-dir target

step "tests"
cargo test --workspace --locked --no-fail-fast

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
