#!/usr/bin/env bash
# The first screen of a report as a PNG for the README:
#   scripts/screenshot.sh [REPORT_DIR] [OUT] [HEIGHT]
# REPORT_DIR holds the index.html of `takt report` (default takt-report),
# OUT is the PNG to write (default docs/report.png), HEIGHT the height of
# the 1280-pixel-wide window in pixels (default 1500). Needs Debian's
# chromium (scripts/setup.sh installs it); pngquant, when installed,
# compresses the image to a palette of colours (a few hundred KB at most).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-takt-report}
out=${2:-docs/report.png}
height=${3:-1500}
if [[ ! -f "$dir/index.html" ]]; then
    echo "screenshot.sh: no $dir/index.html: run takt report first" >&2
    exit 1
fi
command -v chromium >/dev/null || { echo "screenshot.sh: chromium is not installed (scripts/setup.sh)" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The page fetches nothing; the flags keep the browser's own services quiet.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$scratch/profile" --window-size="1280,$height" \
    --screenshot="$scratch/shot.png" "file://$(realpath "$dir/index.html")" 2>"$scratch/log" || {
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
