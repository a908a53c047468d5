#!/usr/bin/env bash
# `report` of a run folder with a day of engine steps (steps.jsonl, docs/steps.md)
# against the same folder without it, in the same run: a day at 50 steps a second is
# 4,320,000 step lines (about 120 bytes each), generated here with the real steps-healthy
# recording's header and its steps' shapes (a decode batch of 8, a prefill beside one step
# in twenty, a request waiting now and then, a preemption every 10,000 steps). The two run
# in turn, RUNS times after one warm-up round; the script prints each one's wall time and
# peak memory (the process's maximum resident set) and, per round, the difference and the
# ratio. The target: within 2 s and 300 MiB of the folder without steps.
#
#   bench/steps.sh                 this checkout's release build
#   RUNS=10 bench/steps.sh         more rounds (default 5)
#
# Needs: python3 and GNU time (/usr/bin/time). Never a test: timings belong here.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
mkdir -p "$OUT"
FIXTURE=fixtures/real/vllm-0.32-cpu/steps-healthy

if [ -n "${INFERLINT_BIN:-}" ]; then
  RS="$INFERLINT_BIN"
else
  cargo build --release --locked -p inferlint-cli -q
  RS="$PWD/target/release/inferlint"
fi

WITH="$OUT/steps-day"
WITHOUT="$OUT/steps-day-without"
for d in "$WITH" "$WITHOUT"; do
  rm -rf "$d"
  mkdir -p "$d"
  for f in boot.log before.snapshot.json after.snapshot.json run.series.jsonl bench.json; do
    cp "$FIXTURE/$f" "$d/"
  done
done

python3 - "$FIXTURE/steps.jsonl" "$WITH/steps.jsonl" <<'PY'
import sys
src, dst = sys.argv[1], sys.argv[2]
header = open(src).readline()
n = 86_400 * 50
with open(dst, "w") as out:
    out.write(header)
    lines = []
    for k in range(n):
        t = 0.5 + k / 50
        if k % 20 == 0:
            line = f'{{"t":{t:.6f},"r":8,"w":1,"d":0,"kv":0.0012,"i":{k},"pr":1,"pt":32,"dr":7,"dt":7,"ms":3.146,"gen":8,"prompt":32,"pre":{1 if k % 10000 == 0 else 0}}}\n'
        else:
            line = f'{{"t":{t:.6f},"r":8,"w":0,"d":0,"kv":0.0012,"i":{k},"pr":0,"pt":0,"dr":8,"dt":8,"ms":3.37,"gen":8,"prompt":0,"pre":0}}\n'
        lines.append(line)
        if len(lines) == 100_000:
            out.writelines(lines)
            lines.clear()
    out.writelines(lines)
    out.write(f'{{"t":{0.5 + n / 50:.6f},"end":true,"steps":{n},"dropped":0,"calls":{n},"record_ns":0}}\n')
PY

python3 - "$RS" "$WITH" "$WITHOUT" "${RUNS:-5}" <<'PY'
import os, statistics, subprocess, sys, time
rs, with_, without, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
size = os.path.getsize(os.path.join(with_, "steps.jsonl"))
print(f"binary: {rs}")
print(f"steps:  {with_}/steps.jsonl ({size / 1e6:.0f} MB, 4,320,000 steps)")
cmds = {
    "with": [rs, "report", with_, "-o", os.path.join(with_, "report.html")],
    "without": [rs, "report", without, "-o", os.path.join(without, "report.html")],
}
for name, argv in cmds.items():
    print(f"{name:>8}: {' '.join(argv)}")

def timed(argv):
    """Wall seconds, and the peak resident memory in MiB as GNU time measures it (the
    process's own maximum resident set)."""
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], stdout=null, stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
        return wall, int(done.stderr.decode().strip().splitlines()[-1]) / 1024

rounds = []
for r in range(runs + 1):
    got = {name: timed(argv) for name, argv in cmds.items()}
    if r:
        rounds.append(got)
def show(label, values, unit):
    print(f"{label:>28}: min {min(values):.3f} {unit}, median {statistics.median(values):.3f} {unit}, max {max(values):.3f} {unit}")
for name in cmds:
    show(f"{name} time", [g[name][0] for g in rounds], "s")
    show(f"{name} peak memory", [g[name][1] for g in rounds], "MiB")
show("time added by the steps", [g["with"][0] - g["without"][0] for g in rounds], "s")
show("time ratio", [g["with"][0] / g["without"][0] for g in rounds], "x")
show("memory added by the steps", [g["with"][1] - g["without"][1] for g in rounds], "MiB")
show("memory ratio", [g["with"][1] / g["without"][1] for g in rounds], "x")
PY
