#!/usr/bin/env bash
# Checks a gptbench-history trend page in headless Chromium and screenshots it:
#   scripts/check-trend-page.sh PAGE.html SHOT.png [WIDTHxHEIGHT]   (default 1200x2400)
# Fails when the page loads a script or an external resource, has no chart, or Chromium
# cannot render it. Needs chromium (Debian: apt-get install chromium); CI does not run it.
set -euo pipefail

page=${1:?usage: check-trend-page.sh PAGE.html SHOT.png [WIDTHxHEIGHT]}
shot=${2:?usage: check-trend-page.sh PAGE.html SHOT.png [WIDTHxHEIGHT]}
size=${3:-1200x2400}
fail() { echo "check-trend-page: $*" >&2; exit 1; }

[ -s "$page" ] || fail "$page: missing or empty"
! grep -qi '<script' "$page" || fail "$page: has a script"
! grep -Eo "(src|href)=['\"][a-z]+://" "$page" | grep -q . || fail "$page: loads an external resource"
charts=$(grep -o '<svg' "$page" | wc -l)
[ "$charts" -gt 0 ] || fail "$page: no chart"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || fail "no chromium on PATH"

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
  --window-size="${size/x/,}" --screenshot="$shot" "file://$(realpath "$page")" >/dev/null 2>&1 ||
  fail "chromium could not render $page"
[ -s "$shot" ] || fail "no screenshot written"
echo "check-trend-page: $page: $charts charts, no scripts or external resources; screenshot $shot" >&2
