#!/usr/bin/env bash
# takt's main job on a fresh machine: installs the peers and tools the
# laboratory compares against (scripts/setup.sh, Debian packages, root),
# builds the peers Debian does not package where it can (scripts/peers.sh;
# one that fails to build is reported "not measured", not fatal),
# then builds takt and runs `takt report` with its embedded plan.
# Arguments go to `takt report` (e.g. --quick, --only sip, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
TAKT_PEERS_OPTIONAL=1 bash scripts/setup.sh
exec cargo run --release --locked -- report "$@"
