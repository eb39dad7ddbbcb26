#!/usr/bin/env bash
# Installs what takt's tests need on a fresh Debian machine. Idempotent.
# Every tool listed here is required: a missing one fails the test run.
# First what the report measures (scripts/setup-report.sh: SIPp, Kamailio,
# nats-server, CAF, OpenSIPS, SObjectizer), then the tests' own tools.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-report.sh

need_pkgs=()
command -v valgrind >/dev/null 2>&1 || need_pkgs+=(valgrind)
# takt machine --compare's reference tool (the test runs perf bench).
command -v perf >/dev/null 2>&1 || need_pkgs+=(linux-perf)
# takt-report's tests open the report in headless Chromium.
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)
# takt-remote's tests: certificates for TLS.
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need_pkgs+=(postgresql)  # takt-records: the shared store's tests

if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install: ${need_pkgs[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${need_pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

for tool in valgrind perf openssl chromium; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup: $tool is still missing" >&2; exit 1; }
done

# takt-sip's fuzz targets (scripts/fuzz.sh): cargo-fuzz on a nightly
# toolchain (libFuzzer needs -Z flags); the workspace itself builds on stable.
CARGO_FUZZ_VERSION=0.13.1
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "setup: installing the nightly toolchain (for cargo-fuzz)" >&2
  rustup toolchain install nightly --profile minimal >/dev/null
fi
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  echo "setup: installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --quiet
fi
[ "$(cargo fuzz --version 2>/dev/null)" = "cargo-fuzz $CARGO_FUZZ_VERSION" ] \
  || { echo "setup: cargo-fuzz $CARGO_FUZZ_VERSION is still missing" >&2; exit 1; }

# C++SME, the thesis's SME implementation (takt-bench-sme's tests and
# `takt bench sme --peers`); the report's peers were built above.
bash scripts/peers.sh cppsme
