#!/usr/bin/env bash
# Compares our verdicts with the Python inferlint's (run as a black box) on every
# simulated run folder: `report DIR --json`, tripwire and status of each result.
#
# usage: scripts/compare-sim.sh [FOLDER...]   (default: fixtures/sim/*)
# env:   INFERLINT (our binary, default target/debug/inferlint)
#        PY_INFERLINT (the Python tool, default bench/out/py/bin/inferlint)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ours="${INFERLINT:-$root/target/debug/inferlint}"
theirs="${PY_INFERLINT:-$root/bench/out/py/bin/inferlint}"
[ -x "$ours" ] || { echo "failed to find our binary at $ours (cargo build -p inferlint-cli)" >&2; exit 2; }
[ -x "$theirs" ] || { echo "failed to find the Python tool at $theirs (pip install inferlint==0.3.1)" >&2; exit 2; }
if [ "$#" -eq 0 ]; then set -- "$root"/fixtures/sim/*/; fi
verdicts() {
    python3 -c '
import json, sys
text = sys.stdin.read()
data = json.loads(text)
results = data if isinstance(data, list) else data.get("results", [])
# Ours lists tripwires it could not check (status not_checked, --json contract 2); the
# Python tool leaves them out, so only verdicts are compared.
for r in sorted(results, key=lambda r: r["tripwire"]):
    if r["status"] != "not_checked":
        print(r["tripwire"], r["status"].lower())
'
}
status=0
for dir in "$@"; do
    dir="${dir%/}"
    tmp="$(mktemp -d)"
    cp -r "$dir"/. "$tmp"/
    a="$("$ours" report "$tmp" -o "$tmp/ours.html" --json 2>/dev/null | verdicts)" || true
    b="$("$theirs" report "$tmp" -o "$tmp/theirs.html" --json 2>/dev/null | verdicts)" || true
    rm -rf "$tmp"
    if [ -n "$a" ] && [ "$a" = "$b" ]; then
        echo "agree     $(basename "$dir"): $(echo "$a" | tr '\n' ' ')"
    else
        echo "DISAGREE  $(basename "$dir")"
        diff <(echo "$a") <(echo "$b") | sed 's/^/    /' || true
        status=1
    fi
done
exit $status
