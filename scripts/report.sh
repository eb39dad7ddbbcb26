#!/usr/bin/env bash
# takt's main job on a fresh machine: installs the peers and tools the
# laboratory compares against (scripts/setup.sh, Debian packages, root),
# then builds takt and runs `takt report` with its embedded plan.
# Arguments go to `takt report` (e.g. --quick, --only sip, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec cargo run --release --locked -- report "$@"
