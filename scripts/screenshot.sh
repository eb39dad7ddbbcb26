#!/usr/bin/env bash
# The first screen of a report as a PNG for the README:
#   scripts/screenshot.sh [--section ID] [REPORT_DIR] [OUT] [HEIGHT]
# REPORT_DIR holds the index.html of `takt report` (default takt-report),
# OUT is the PNG to write (default docs/report.png), HEIGHT the height of
# the 1280-pixel-wide window in pixels (default 1500). With --section ID
# the picture shows the report's title and run block, then the section
# whose id is ID alone (`--section answer`: the answer to the scheduler
# question, the README's screenshot; any stage's name works too, e.g.
# `--section sweep`). Needs Debian's chromium (scripts/setup.sh installs
# it); pngquant, when installed, compresses the image to a palette of
# colours (a few hundred KB at most).
set -euo pipefail
cd "$(dirname "$0")/.."
section=
if [[ ${1:-} == --section ]]; then
    [[ $# -ge 2 ]] || { echo "screenshot.sh: --section needs a section id, e.g. --section answer" >&2; exit 1; }
    section=$2
    shift 2
fi
dir=${1:-takt-report}
out=${2:-docs/report.png}
height=${3:-1500}
if [[ ! -f "$dir/index.html" ]]; then
    echo "screenshot.sh: no $dir/index.html: run takt report first" >&2
    exit 1
fi
[[ $height =~ ^[0-9]+$ ]] || { echo "screenshot.sh: HEIGHT must be a number of pixels, not '$height'" >&2; exit 1; }
command -v chromium >/dev/null || { echo "screenshot.sh: chromium is not installed (scripts/setup.sh)" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
page="$(realpath "$dir/index.html")"
if [[ -n $section ]]; then
    [[ $section =~ ^[A-Za-z][A-Za-z0-9_-]*$ ]] || { echo "screenshot.sh: '$section' is not a section id" >&2; exit 1; }
    if ! grep -q "<section id=\"$section\">" "$page"; then
        echo "screenshot.sh: $dir/index.html has no section '$section'; its sections:" \
            "$(grep -o '<section id="[^"]*"' "$page" | cut -d'"' -f2 | tr '\n' ' ')" >&2
        exit 1
    fi
    # A copy of the page (it is self-contained) with everything but the
    # title, the run block and that section hidden.
    hide="header > :not(h1):not(dl), main > section:not(#$section), footer { display: none !important; }"
    sed "s|</head>|<style>$hide</style></head>|" "$page" >"$scratch/index.html"
    page="$scratch/index.html"
fi
# The page fetches nothing; the flags keep the browser's own services quiet.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$scratch/profile" --window-size="1280,$height" \
    --screenshot="$scratch/shot.png" "file://$page" 2>"$scratch/log" || {
    cat "$scratch/log" >&2
    exit 1
}
mkdir -p "$(dirname "$out")"
if command -v pngquant >/dev/null; then
    pngquant --quality=50-85 --speed 1 --strip --force --output "$out" "$scratch/shot.png"
else
    echo "screenshot.sh: pngquant is not installed; the PNG is not compressed" >&2
    cp "$scratch/shot.png" "$out"
fi
echo "$out: $(stat -c %s "$out") bytes"
