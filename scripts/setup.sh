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
# The SIP laboratory's kamailio target (sbin is not on every PATH).
[ -x /usr/sbin/kamailio ] && [ -x /usr/sbin/kamcmd ] || need_pkgs+=(kamailio)
# CAF 0.17, the C++ actor framework: takt-peer-caf compiles its benchmarks
# against the headers and links libcaf_core (takt bench agents --peers).
command -v g++ >/dev/null 2>&1 || need_pkgs+=(g++)
[ -f /usr/include/caf/all.hpp ] || need_pkgs+=(libcaf-dev)
# takt-remote's tests: a NATS server (Debian's 2.9) and certificates for TLS.
command -v nats-server >/dev/null 2>&1 || need_pkgs+=(nats-server)
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

for tool in valgrind sipp ip perf g++ nats-server openssl chromium /usr/sbin/kamailio /usr/sbin/kamcmd; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup: $tool is still missing" >&2; exit 1; }
done
[ -f /usr/include/caf/all.hpp ] || { echo "setup: the CAF headers (libcaf-dev) are still missing" >&2; exit 1; }

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

# The package installs a kamailio service that would hold port 5060: the
# lab starts its own Kamailio with its own configuration, so the service
# stays stopped and disabled.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now kamailio.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/kamailio ] && [ "$(id -u)" -eq 0 ]; then
  /etc/init.d/kamailio stop >/dev/null 2>&1 || true
fi
if pgrep -x kamailio -P 1 >/dev/null 2>&1 && ss -lun 2>/dev/null | grep -q ':5060 '; then
  echo "setup: a kamailio daemon still holds port 5060; stop it (systemctl disable --now kamailio)" >&2
  exit 1
fi

# The source documents' own systems, which Debian does not package
# (OpenSIPS, SObjectizer, C++SME), built from source by scripts/peers.sh:
# its build tools first. TAKT_PEER_SOURCES names a directory of their
# archives; without it the script clones them (network needed).
peer_pkgs=()
for tool in bison flex cmake autoreconf automake libtoolize make git; do
  command -v "$tool" >/dev/null 2>&1 && continue
  case "$tool" in
    autoreconf) peer_pkgs+=(autoconf) ;;
    libtoolize) peer_pkgs+=(libtool) ;;
    *) peer_pkgs+=("$tool") ;;
  esac
done
if [ ${#peer_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install: ${peer_pkgs[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${peer_pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${peer_pkgs[@]}" >/dev/null
fi
# The test run needs every peer: a failed build fails setup. The report
# (scripts/report.sh sets TAKT_PEERS_OPTIONAL=1) goes on without one and
# says "not measured" where it would have been.
if ! bash "$(dirname "$0")/peers.sh"; then
  if [ -n "${TAKT_PEERS_OPTIONAL:-}" ]; then
    echo "setup: a peer was not built (above); the report marks it not measured" >&2
  else
    exit 1
  fi
fi
