#!/usr/bin/env bash
# Installs what takt's tests need on a fresh Debian machine. Idempotent.
# Every tool listed here is required: a missing one fails the test run.
set -euo pipefail

need_pkgs=()
command -v valgrind >/dev/null 2>&1 || need_pkgs+=(valgrind)
command -v sipp >/dev/null 2>&1 || need_pkgs+=(sip-tester)
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
# takt machine --compare's reference tool (the test runs perf bench).
command -v perf >/dev/null 2>&1 || need_pkgs+=(linux-perf)
# takt-report's tests open the report in headless Chromium.
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)

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

for tool in valgrind sipp ip perf chromium; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup: $tool is still missing" >&2; exit 1; }
done
