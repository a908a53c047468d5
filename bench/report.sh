#!/usr/bin/env bash
# `report` of a day-long recording against what it cannot do with less work, in the same
# run: `series` on the same file (the checks' pass alone, no page) and `cat FILE >
# /dev/null` (reading the bytes, nothing parsed). The three run in turn, RUNS times, after
# one warm-up round, so that the page cache and the machine's load are shared; each
# round's report time is divided by that round's series and cat times, and the script
# prints the minimum, median and maximum of each time and each ratio. The processor time
# each took (user and system, of the process and its threads) is printed beside: on a
# machine other work shares, the wall time grows with that work, and the processor time
# much less.
#
#   bench/report.sh                       this checkout's release build
#   INFERLINT_BIN=old/inferlint bench/report.sh   another build (an earlier one, to compare)
#   RUNS=30 bench/report.sh               more rounds (default 15)
#
# The day is `cargo xtask bigseries` on the recorded vLLM 0.28 run (345,600 samples, 24 h
# at 4 Hz, 71 MB), with that run's boot log and snapshots; the page is written to
# bench/out/report-day.html.
#
# Needs: python3, and the recordings (INFERLINT_RECORDED, default ../shared/recorded).
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDED="${INFERLINT_RECORDED:-../shared/recorded}"
LIVE="$RECORDED/vllm-0.28/live"
OUT=bench/out
mkdir -p "$OUT"

if [ -n "${INFERLINT_BIN:-}" ]; then
  RS="$INFERLINT_BIN"
else
  cargo build --release --locked -p inferlint-cli -q
  RS="$PWD/target/release/inferlint"
fi
BIG="$OUT/big.series.jsonl"
if [ ! -s "$BIG" ]; then
  cargo xtask bigseries "$BIG" "$LIVE/run.series.jsonl" 345600
fi

python3 - "$RS" "$BIG" "$LIVE" "$OUT/report-day.html" "${RUNS:-15}" <<'PY'
import os, statistics, subprocess, sys, time

rs, big, live, page, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
commands = {
    "report": [rs, "report", "--requested", "32", "--boot-log", f"{live}/boot.log",
               "--before", f"{live}/before.snapshot.json", "--after", f"{live}/after.snapshot.json",
               "--series", big, "-o", page],
    "series": [rs, "series", big, "--snapshot", f"{live}/after.snapshot.json", "--requested", "32"],
    "cat": ["cat", big],
}
print(f"binary: {rs}")
print(f"file:   {big} ({os.path.getsize(big) / 1e6:.1f} MB)")
for name, argv in commands.items():
    print(f"{name:>6}: {' '.join(argv)}{' > /dev/null' if name == 'cat' else ''}")

def timed(argv):
    """Wall seconds, and processor seconds (user and system) of the process."""
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=null, stderr=null)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    # A failed tripwire exits 1, the answer this run expects; anything else is an error.
    if code not in (0, 1):
        sys.exit(f"{argv[0]} {argv[1] if len(argv) > 1 else ''} exited {code}")
    return seconds, usage.ru_utime + usage.ru_stime

order = list(commands)
times = {name: [] for name in order}
cpu = {name: [] for name in order}
for round_ in range(runs + 1):
    # The order turns each round, so no command always runs first after the others.
    turn = order[round_ % len(order):] + order[:round_ % len(order)]
    got = {name: timed(commands[name]) for name in turn}
    if round_ > 0:  # the first round warms the page cache
        for name in order:
            times[name].append(got[name][0])
            cpu[name].append(got[name][1])

def spread(values, unit=""):
    return f"min {min(values):.3f}{unit}  median {statistics.median(values):.3f}{unit}  max {max(values):.3f}{unit}"

print(f"\n{runs} rounds, each running the three in turn; wall time:")
for name in order:
    print(f"  {name:>6}: {spread(times[name], ' s')}")
vs_series = [r / s for r, s in zip(times["report"], times["series"])]
vs_cat = [r / c for r, c in zip(times["report"], times["cat"])]
print(f"  report / series: {spread(vs_series, 'x')}")
print(f"  report / cat:    {spread(vs_cat, 'x')}")
print("processor time (user and system):")
for name in order:
    print(f"  {name:>6}: {spread(cpu[name], ' s')}")
print(f"  report / series: {spread([r / s for r, s in zip(cpu['report'], cpu['series'])], 'x')}")
print(f"  page: {os.path.getsize(page) / 1e3:.0f} KB")
PY
