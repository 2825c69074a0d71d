#!/usr/bin/env bash
# Open a flashix report.html in headless Chromium and check that it rendered:
# a non-empty screenshot, and a DOM holding the report's charts.
#
#   scripts/check-report.sh [REPORT_HTML] [SCREENSHOT_PNG]
#
# Defaults: bench-out/report.html and bench-out/report.png. Needs Debian's chromium
# (`apt-get install -y chromium`); installs it when missing and running as root.
set -euo pipefail

report="${1:-bench-out/report.html}"
png="${2:-${report%.html}.png}"
chromium="${CHROMIUM:-/usr/bin/chromium}"

if [[ ! -f "$report" ]]; then
    echo "check-report: no report at $report (run \`flashix bench\` first)" >&2
    exit 1
fi
if [[ ! -x "$chromium" ]]; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "check-report: installing chromium" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "check-report: $chromium not found; install Debian's chromium package" >&2
        exit 1
    fi
fi

url="file://$(realpath "$report")"
profile_dir="$(mktemp -d)"
trap 'rm -rf "$profile_dir"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --user-data-dir="$profile_dir")

rm -f "$png"
"$chromium" "${flags[@]}" --screenshot="$png" --window-size=1400,3000 "$url" >/dev/null 2>&1 || true
if [[ ! -s "$png" ]]; then
    echo "check-report: no screenshot written to $png" >&2
    exit 1
fi
# A real PNG, not an error page of a few bytes.
if [[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]]; then
    echo "check-report: $png is not a PNG" >&2
    exit 1
fi

dom="$("$chromium" "${flags[@]}" --dump-dom "$url" 2>/dev/null)"
fail=0
for chart in ops p50 p99 ios ios-writes wa limit insert-latency; do
    if ! grep -q "data-chart=\"$chart\"" <<<"$dom"; then
        echo "check-report: the rendered DOM has no '$chart' chart" >&2
        fail=1
    fi
done
bars=$(grep -o '<rect class="bar"' <<<"$dom" | wc -l)
lines=$(grep -o '<polyline class="line"' <<<"$dom" | wc -l)
if (( bars == 0 || lines == 0 )); then
    echo "check-report: charts are empty ($bars bars, $lines lines)" >&2
    fail=1
fi
if ! grep -q "<table" <<<"$dom"; then
    echo "check-report: the rendered DOM has no result table" >&2
    fail=1
fi
if (( fail )); then
    exit 1
fi
echo "check-report: $report rendered: $(stat -c %s "$png")-byte screenshot $png, $bars bars, $lines lines"
