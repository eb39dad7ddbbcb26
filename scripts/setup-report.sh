#!/usr/bin/env bash
# Installs and builds what `takt report` measures on a fresh Debian
# machine, and nothing that only the tests need (scripts/setup.sh adds
# those). Idempotent; root for the Debian packages.
#   - SIPp (the `sip` stage's per-message costs), iproute2
#   - Kamailio (a SIP server of every SIP stage), its service kept stopped
#   - nats-server (the `remote` stage)
#   - g++ and the CAF headers: takt's default build compiles the CAF peer
#     of the `agents` stage
#   - the source documents' systems Debian does not package, built by
#     scripts/peers.sh: OpenSIPS (capacity, sweep) and SObjectizer with
#     takt's driver (agents); with TAKT_PEERS_OPTIONAL set, one that fails
#     to build is left out (its sections say "not measured") instead of
#     failing the setup; with TAKT_SETUP_PEERS=0 they are not built here
#     (scripts/report.sh builds them beside takt)
# The ractor_cluster peer of the `remote` stage is a cargo build of its
# own: scripts/report.sh builds it beside takt.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v sipp >/dev/null 2>&1 || need_pkgs+=(sip-tester)
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
# The SIP laboratory's kamailio target (sbin is not on every PATH).
[ -x /usr/sbin/kamailio ] && [ -x /usr/sbin/kamcmd ] || need_pkgs+=(kamailio)
# CAF 0.17, the C++ actor framework: takt-peer-caf compiles its benchmarks
# against the headers and links libcaf_core (takt bench agents --peers).
command -v g++ >/dev/null 2>&1 || need_pkgs+=(g++)
[ -f /usr/include/caf/all.hpp ] || need_pkgs+=(libcaf-dev)
# takt bench remote: a NATS server (Debian's 2.9).
command -v nats-server >/dev/null 2>&1 || need_pkgs+=(nats-server)
# The peers' build tools (scripts/peers.sh).
for tool in bison flex cmake autoreconf automake libtoolize make git; do
  command -v "$tool" >/dev/null 2>&1 && continue
  case "$tool" in
    autoreconf) need_pkgs+=(autoconf) ;;
    libtoolize) need_pkgs+=(libtool) ;;
    *) need_pkgs+=("$tool") ;;
  esac
done

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

for tool in sipp ip g++ nats-server /usr/sbin/kamailio /usr/sbin/kamcmd; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup: $tool is still missing" >&2; exit 1; }
done
[ -f /usr/include/caf/all.hpp ] || { echo "setup: the CAF headers (libcaf-dev) are still missing" >&2; exit 1; }

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

# The source documents' systems the report runs (TAKT_PEER_SOURCES names a
# directory of their archives; without it peers.sh clones them). C++SME is
# the tests' (the report's SME stage runs takt's executors only).
[ "${TAKT_SETUP_PEERS:-1}" = 0 ] && exit 0
if ! bash scripts/peers.sh opensips sobjectizer so5-driver; then
  if [ -n "${TAKT_PEERS_OPTIONAL:-}" ]; then
    echo "setup: a peer was not built (above); the report marks it not measured" >&2
  else
    exit 1
  fi
fi
