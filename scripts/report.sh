#!/usr/bin/env bash
# takt's main job on a fresh machine: installs and builds exactly what the
# report measures (scripts/setup-report.sh: Debian packages, root; the
# source documents' systems Debian does not package, where they build —
# one that fails is reported "not measured", not fatal), builds takt and
# the ractor_cluster peer of the remote stage (its own cargo workspace,
# put next to target/release/takt where `takt bench remote` finds it),
# then runs `takt report` with its embedded plan.
# Arguments go to `takt report` (e.g. --quick, --only sip, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
TAKT_PEERS_OPTIONAL=1 bash scripts/setup-report.sh
cargo build --release --locked -p takt
cargo build --release --locked --manifest-path peers/ractor-cluster/Cargo.toml --target-dir target
exec target/release/takt report "$@"
