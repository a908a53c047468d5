#!/usr/bin/env bash
# Whole-process comparison against the Python inferlint 0.3.1, in the same run:
#   - `series BIG --snapshot after.snapshot.json --requested 32` on a 345,600-sample
#     series (24 h at 4 Hz), built by repeating a real recording with times and counters
#     shifted (`cargo xtask bigseries`);
#   - `inferlint --version`.
# Timing with hyperfine, peak memory with GNU time. Prints the ratios.
#
# Needs: hyperfine and GNU time (Debian: apt-get install hyperfine time), python3 with
# venv, and the recordings (INFERLINT_RECORDED, default ../shared/recorded).
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDED="${INFERLINT_RECORDED:-../shared/recorded}"
LIVE="$RECORDED/vllm-0.28/live"
OUT=bench/out
mkdir -p "$OUT"

if [ ! -x "$OUT/py/bin/inferlint" ]; then
  python3 -m venv "$OUT/py"
  "$OUT/py/bin/pip" install -q inferlint==0.3.1
fi
PY="$OUT/py/bin/inferlint"

cargo build --release --locked -p inferlint-cli -q
RS=target/release/inferlint
BIG="$OUT/big.series.jsonl"
if [ ! -s "$BIG" ]; then
  cargo xtask bigseries "$BIG" "$LIVE/run.series.jsonl" 345600
fi

ARGS=(series "$BIG" --snapshot "$LIVE/after.snapshot.json" --requested 32)
echo "== verdicts agree?"
"$RS" "${ARGS[@]}" --json > "$OUT/rs.json" || true
"$PY" "${ARGS[@]}" --json > "$OUT/py.json" || true
python3 - "$OUT/rs.json" "$OUT/py.json" <<'PY'
import json, sys
rs, py = (json.load(open(p)) for p in sys.argv[1:3])
same = [(a["tripwire"], a["status"], a["message"]) for a in rs] == [(b["tripwire"], b["status"], b["message"]) for b in py]
print("same verdicts and messages:", same)
for a, b in zip(rs, py):
    print(f'  {a["tripwire"]}: ours {a["status"]} / python {b["status"]}')
sys.exit(0 if same else 1)
PY

echo "== time: series on 345,600 samples"
# -N: no shell in between; -i: a failed tripwire exits 1, which is the expected answer.
hyperfine -N -i --warmup 1 --runs "${RUNS:-10}" --export-json "$OUT/series.json" \
  -n rust "$RS ${ARGS[*]}" \
  -n python "$PY ${ARGS[*]}"

echo "== time: --version"
hyperfine --warmup 3 --runs "${RUNS:-30}" -N --export-json "$OUT/version.json" \
  -n rust "$RS --version" -n python "$PY --version"

echo "== time: report with the day-long series (writes report.html)"
RARGS=(report --requested 32 --boot-log "$LIVE/boot.log" --before "$LIVE/before.snapshot.json" --after "$LIVE/after.snapshot.json" --series "$BIG")
hyperfine -N -i --warmup 1 --runs "${REPORT_RUNS:-3}" --export-json "$OUT/report.json" \
  -n rust "$RS ${RARGS[*]} -o $OUT/rs-report.html" \
  -n python "$PY ${RARGS[*]} -o $OUT/py-report.html"

rss() { { /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null || true; } | tail -1; }
RS_KB=$(rss "$RS" "${ARGS[@]}")
PY_KB=$(rss "$PY" "${ARGS[@]}")
RS_REPORT_KB=$(rss "$RS" "${RARGS[@]}" -o "$OUT/rs-report.html")
PY_REPORT_KB=$(rss "$PY" "${RARGS[@]}" -o "$OUT/py-report.html")

python3 - "$OUT/series.json" "$OUT/version.json" "$RS_KB" "$PY_KB" "$OUT/report.json" "$RS_REPORT_KB" "$PY_REPORT_KB" "$OUT/rs-report.html" "$OUT/py-report.html" <<'PY'
import json, os, sys
series, version = (json.load(open(p))["results"] for p in sys.argv[1:3])
rs_kb, py_kb = int(sys.argv[3]), int(sys.argv[4])
report = json.load(open(sys.argv[5]))["results"]
rr_kb, pr_kb = int(sys.argv[6]), int(sys.argv[7])
rs_size, py_size = os.path.getsize(sys.argv[8]), os.path.getsize(sys.argv[9])
def med(rs, name): return next(r for r in rs if r["command"] == name)["median"]
s_rs, s_py = med(series, "rust"), med(series, "python")
v_rs = med(version, "rust")
print(f"series: rust {s_rs*1000:.1f} ms, python {s_py*1000:.0f} ms -> {s_py/s_rs:.1f}x faster (target >= 30x)")
print(f"memory: rust {rs_kb/1024:.1f} MiB, python {py_kb/1024:.1f} MiB -> {rs_kb/py_kb:.3f} of python's (target <= 0.1)")
print(f"--version: rust {v_rs*1000:.2f} ms (target < 5 ms)")
r_rs, r_py = med(report, "rust"), med(report, "python")
print(f"report, 24 h: rust {r_rs:.2f} s, {rr_kb/1024:.1f} MiB, {rs_size/1e6:.2f} MB of HTML; "
      f"python {r_py:.2f} s, {pr_kb/1024:.0f} MiB, {py_size/1e6:.1f} MB (targets: <= 0.1 s, <= 50 MB, <= 2 MB; "
      "bench/report.sh holds it against series and cat of the same file)")
PY
