#!/usr/bin/env bash
# takt's main job on a fresh machine: installs what the report measures
# (scripts/setup-report.sh: Debian packages, root), builds the source
# documents' systems Debian does not package (one that fails is reported
# "not measured", not fatal), takt, and the ractor_cluster peer of the
# remote stage (its own cargo workspace, built in target/ractor-cluster —
# a target directory of its own, since cargo locks one per build — and
# copied next to target/release/takt, where `takt bench remote` finds it),
# then runs `takt report` with its embedded plan.
# The three builds run side by side: takt's build has long stretches on
# one core (its last crates and their link), which the others fill. Their
# output goes to target/report-build/*.log, shown when one fails.
# Arguments go to `takt report` (e.g. --quick, --only sip, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
TAKT_SETUP_PEERS=0 bash scripts/setup-report.sh

logs=target/report-build
mkdir -p "$logs"
bash scripts/peers.sh opensips sobjectizer so5-driver >"$logs/peers.log" 2>&1 &
peers=$!
cargo build --release --locked --manifest-path peers/ractor-cluster/Cargo.toml --target-dir target/ractor-cluster \
  >"$logs/ractor-cluster.log" 2>&1 &
ractor=$!
# On an early exit (takt's build failed, or an interrupt) the builds in the
# background go too.
trap 'kill $peers $ractor 2>/dev/null || true' EXIT
echo "report: building takt; the peers and the ractor_cluster peer beside it ($logs/)" >&2
cargo build --release --locked -p takt
if ! wait $peers; then
  tail -n 20 "$logs/peers.log" >&2
  echo "report: a peer was not built (above, $logs/peers.log); the report marks it not measured" >&2
fi
if ! wait $ractor; then
  tail -n 30 "$logs/ractor-cluster.log" >&2
  echo "report: the ractor_cluster peer did not build ($logs/ractor-cluster.log)" >&2
  exit 1
fi
trap - EXIT
cp target/ractor-cluster/release/takt-peer-ractor target/release/
exec target/release/takt report "$@"
