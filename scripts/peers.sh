#!/usr/bin/env bash
# Builds the source documents' own systems, which Debian does not package,
# into a cache the laboratory finds them in:
#   OpenSIPS 3.6.8   the SIP server of the scheduler paper
#   SObjectizer 5.8.4  the actor framework of the agents document
#   C++SME (8e12da6)   the thesis's SME implementation
# plus takt's own SObjectizer benchmark driver, compiled against the
# SObjectizer build.
#
# Sources: from a directory of archives named by TAKT_PEER_SOURCES (each
# checked against the sha256 listed below), or, when it is unset, by a
# shallow git clone of the tag or commit listed below (checked against the
# commit id). Each peer is built once per version into
# ${TAKT_PEERS_DIR:-<repo>/target/peers}/<name>-<version>/ and marked by a
# `.built` file; a rerun only rebuilds what is missing or changed.
#
# Usage: bash scripts/peers.sh [opensips|sobjectizer|cppsme|so5-driver ...]
# (no argument: all of them). Build dependencies (bison, flex, cmake,
# autoconf, automake, libtool, g++) come from scripts/setup.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${TAKT_PEERS_DIR:-$ROOT/target/peers}"
JOBS="$(nproc 2>/dev/null || echo 2)"

# name  version  archive  sha256-of-archive  upstream  git-ref  commit
OPENSIPS_VERSION=3.6.8
OPENSIPS_ARCHIVE=opensips-3.6.8.tar.gz
OPENSIPS_SHA256=327fd037619482670750cc05b86f9fc5dfceadb9f7438ca2e4eb8be14e4b3b3c
OPENSIPS_GIT=https://github.com/OpenSIPS/opensips.git
OPENSIPS_REF=3.6.8
OPENSIPS_COMMIT=f9f85260e5def73e3f854f5e22d148d2d977e85f
# Only the modules the laboratory loads (proto_udp and proto_tcp are static
# in the core).
OPENSIPS_MODULES="sl tm rr maxfwd signaling sipmsgops mi_datagram"

SO5_VERSION=5.8.4
SO5_ARCHIVE=sobjectizer-5.8.4.tar.gz
SO5_SHA256=16f0937ed4a022e56c93c4e3313811e8ded8be24af17da290e23ccf3b3c2fd5e
SO5_GIT=https://github.com/Stiffstream/sobjectizer.git
SO5_REF=v.5.8.4
SO5_COMMIT=48240cff83d758f0e7fc413ec408536147a374ed

CPPSME_VERSION=8e12da6
CPPSME_ARCHIVE=cppsme-8e12da6.tar.gz
CPPSME_SHA256=358bea117ac096c56ccb9be4e097d3221229d5a673d05890b5ee73e0ab61fc63
CPPSME_GIT=https://github.com/sme-projects/cppsme.git
CPPSME_REF=8e12da670d2639ea7926cf07c737775cea20b254
CPPSME_COMMIT=8e12da670d2639ea7926cf07c737775cea20b254

die() { echo "peers: $*" >&2; exit 1; }
say() { echo "peers: $*" >&2; }

# fetch NAME ARCHIVE SHA256 GIT REF COMMIT DEST: unpacks the sources of one
# peer into DEST (a fresh directory), from the archive directory or git.
fetch() {
  local name=$1 archive=$2 sha=$3 git=$4 ref=$5 commit=$6 dest=$7
  rm -rf "$dest"
  mkdir -p "$dest"
  if [ -n "${TAKT_PEER_SOURCES:-}" ]; then
    local file="$TAKT_PEER_SOURCES/$archive"
    [ -f "$file" ] || die "$name: $file is missing (TAKT_PEER_SOURCES=$TAKT_PEER_SOURCES names a directory without $archive)"
    local got
    got="$(sha256sum "$file" | cut -d' ' -f1)"
    [ "$got" = "$sha" ] || die "$name: $file has sha256 $got, expected $sha (a different or damaged archive)"
    tar -xzf "$file" -C "$dest" --strip-components=1 \
      || die "$name: could not unpack $file"
  else
    command -v git >/dev/null 2>&1 || die "$name: git is missing and TAKT_PEER_SOURCES is unset (set it to a directory holding $archive)"
    say "$name: cloning $git at $ref (set TAKT_PEER_SOURCES to build from archives instead)"
    if ! git -c advice.detachedHead=false clone -q --depth 1 --branch "$ref" "$git" "$dest" 2>/dev/null; then
      # A bare commit id is not a branch or tag: fetch it by id.
      rm -rf "$dest" && mkdir -p "$dest"
      git -C "$dest" init -q
      git -C "$dest" fetch -q --depth 1 "$git" "$ref" \
        || die "$name: could not fetch $ref from $git (offline? set TAKT_PEER_SOURCES to a directory holding $archive)"
      git -C "$dest" checkout -q FETCH_HEAD
    fi
    local head
    head="$(git -C "$dest" rev-parse HEAD)"
    [ "$head" = "$commit" ] || die "$name: $git $ref is commit $head, expected $commit"
  fi
}

# built DIR STAMP: true when DIR holds a finished build with this stamp.
built() { [ -f "$1/.built" ] && [ "$(cat "$1/.built")" = "$2" ]; }

build_opensips() {
  local dir="$CACHE/opensips-$OPENSIPS_VERSION"
  local stamp="opensips $OPENSIPS_VERSION $OPENSIPS_COMMIT modules: $OPENSIPS_MODULES"
  built "$dir" "$stamp" && { say "opensips $OPENSIPS_VERSION: built ($dir)"; return; }
  for tool in bison flex make gcc; do
    command -v $tool >/dev/null 2>&1 || die "opensips: $tool is missing (run scripts/setup.sh)"
  done
  local src="$CACHE/src/opensips-$OPENSIPS_VERSION"
  fetch opensips "$OPENSIPS_ARCHIVE" "$OPENSIPS_SHA256" "$OPENSIPS_GIT" "$OPENSIPS_REF" "$OPENSIPS_COMMIT" "$src"
  local t0=$SECONDS mods="" m
  for m in $OPENSIPS_MODULES; do mods="$mods modules/$m"; done
  say "opensips $OPENSIPS_VERSION: building the core and$mods"
  (cd "$src" && make -j"$JOBS" app >"$src/build.log" 2>&1 \
    && make -j"$JOBS" modules modules="${mods# }" >>"$src/build.log" 2>&1) \
    || { tail -n 30 "$src/build.log" >&2; die "opensips: the build failed (log: $src/build.log)"; }
  rm -rf "$dir"
  mkdir -p "$dir/sbin" "$dir/lib64/opensips/modules"
  install -m 0755 "$src/opensips" "$dir/sbin/opensips"
  for m in $OPENSIPS_MODULES; do
    install -m 0644 "$src/modules/$m/$m.so" "$dir/lib64/opensips/modules/$m.so"
  done
  "$dir/sbin/opensips" -V >/dev/null 2>&1 || die "opensips: the built binary does not run ($dir/sbin/opensips -V)"
  echo "$stamp" >"$dir/.built"
  say "opensips $OPENSIPS_VERSION: built in $((SECONDS - t0)) s ($dir)"
}

build_sobjectizer() {
  local dir="$CACHE/sobjectizer-$SO5_VERSION"
  local stamp="sobjectizer $SO5_VERSION $SO5_COMMIT static"
  built "$dir" "$stamp" && { say "sobjectizer $SO5_VERSION: built ($dir)"; return; }
  for tool in cmake make g++; do
    command -v $tool >/dev/null 2>&1 || die "sobjectizer: $tool is missing (run scripts/setup.sh)"
  done
  local src="$CACHE/src/sobjectizer-$SO5_VERSION"
  fetch sobjectizer "$SO5_ARCHIVE" "$SO5_SHA256" "$SO5_GIT" "$SO5_REF" "$SO5_COMMIT" "$src"
  local t0=$SECONDS
  say "sobjectizer $SO5_VERSION: building the static library (tests and samples off)"
  rm -rf "$dir"
  (cmake -S "$src/dev" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$dir" -DSOBJECTIZER_BUILD_STATIC=ON \
      -DSOBJECTIZER_BUILD_SHARED=OFF -DBUILD_ALL=OFF -DBUILD_TESTS=OFF \
      -DBUILD_EXAMPLES=OFF >"$src/build.log" 2>&1 \
    && cmake --build "$src/build" -j"$JOBS" >>"$src/build.log" 2>&1 \
    && cmake --install "$src/build" >>"$src/build.log" 2>&1) \
    || { tail -n 30 "$src/build.log" >&2; die "sobjectizer: the build failed (log: $src/build.log)"; }
  ls "$dir"/lib*/libso*.a >/dev/null 2>&1 || die "sobjectizer: no static library under $dir/lib*"
  echo "$stamp" >"$dir/.built"
  say "sobjectizer $SO5_VERSION: built in $((SECONDS - t0)) s ($dir)"
}

build_cppsme() {
  local dir="$CACHE/cppsme-$CPPSME_VERSION"
  local stamp="cppsme $CPPSME_VERSION $CPPSME_COMMIT"
  built "$dir" "$stamp" && { say "cppsme $CPPSME_VERSION: built ($dir)"; return; }
  for tool in autoreconf automake libtoolize make g++; do
    command -v $tool >/dev/null 2>&1 || die "cppsme: $tool is missing (run scripts/setup.sh)"
  done
  fetch cppsme "$CPPSME_ARCHIVE" "$CPPSME_SHA256" "$CPPSME_GIT" "$CPPSME_REF" "$CPPSME_COMMIT" "$dir"
  local t0=$SECONDS
  say "cppsme $CPPSME_VERSION: building libsme and the thesis's ring programs"
  # Its configure adds -Werror; today's g++ warns about a self-initialized
  # member the ring programs never read, so the build drops -Werror and
  # keeps the rest of the project's flags (the sources are unchanged).
  local flags="-O2 -Wall -pedantic -pthread"
  (cd "$dir" && autoreconf -i >build.log 2>&1 && ./configure >>build.log 2>&1 \
    && make -j"$JOBS" CXXFLAGS="$flags" >>build.log 2>&1 \
    && make -C test -j"$JOBS" CXXFLAGS="$flags" ring_dynamic ring_heavy ring_uneven >>build.log 2>&1) \
    || { tail -n 30 "$dir/build.log" >&2; die "cppsme: the build failed (log: $dir/build.log)"; }
  for p in ring_dynamic ring_heavy ring_uneven; do
    [ -x "$dir/test/$p" ] || die "cppsme: $dir/test/$p was not built"
  done
  echo "$stamp" >"$dir/.built"
  say "cppsme $CPPSME_VERSION: built in $((SECONDS - t0)) s ($dir)"
}

# takt's SObjectizer benchmark driver (its sources live in the repository);
# rebuilt when the sources or the library change.
build_so5_driver() {
  local srcdir="$ROOT/crates/takt-bench-agents/cpp/sobjectizer"
  local lib="$CACHE/sobjectizer-$SO5_VERSION"
  local out="$CACHE/bin/takt-so5-bench"
  if ! ls "$srcdir"/*.cpp >/dev/null 2>&1; then
    say "so5-driver: no sources in $srcdir yet; nothing to build"
    return
  fi
  built "$lib" "sobjectizer $SO5_VERSION $SO5_COMMIT static" || die "so5-driver: SObjectizer $SO5_VERSION is not built (bash scripts/peers.sh sobjectizer)"
  local stamp
  stamp="$(cat "$srcdir"/*.cpp "$srcdir"/*.hpp "$lib/.built" 2>/dev/null | sha256sum | cut -d' ' -f1)"
  [ -x "$out" ] && [ -f "$out.built" ] && [ "$(cat "$out.built")" = "$stamp" ] \
    && { say "so5-driver: built ($out)"; return; }
  mkdir -p "$CACHE/bin"
  local libfile
  libfile="$(ls "$lib"/lib*/libso*.a | head -n 1)"
  local t0=$SECONDS
  # SO_5_STATIC_LIB: the headers' declarations for the static library.
  g++ -O2 -std=c++17 -pthread -DSO_5_STATIC_LIB -I"$lib/include" "$srcdir"/*.cpp \
      "$libfile" -o "$out.tmp" 2>"$CACHE/bin/takt-so5-bench.log" \
    || { tail -n 30 "$CACHE/bin/takt-so5-bench.log" >&2; die "so5-driver: compiling $srcdir failed"; }
  mv "$out.tmp" "$out"
  echo "$stamp" >"$out.built"
  say "so5-driver: built in $((SECONDS - t0)) s ($out)"
}

main() {
  mkdir -p "$CACHE"
  local what=("$@")
  [ ${#what[@]} -gt 0 ] || what=(opensips sobjectizer cppsme so5-driver)
  for w in "${what[@]}"; do
    case "$w" in
      opensips) build_opensips ;;
      sobjectizer) build_sobjectizer ;;
      cppsme) build_cppsme ;;
      so5-driver) build_so5_driver ;;
      *) die "unknown peer '$w' (opensips, sobjectizer, cppsme, so5-driver)" ;;
    esac
  done
}

main "$@"
