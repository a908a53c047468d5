#!/usr/bin/env bash
# Time and peak memory of `inferlint whatif` on a run of a million requests, with GNU
# time, beside the same on the 32-request run it is grown from, so that the figures read
# as a cost per request against a small run's fixed cost.
#
# The run is fixtures/real/vllm-0.32-cpu/healthy-vllm-bench (a real vLLM run: boot log,
# snapshots, recording, and `vllm bench serve --save-detailed`'s bench.json), copied to a
# temporary folder, with every per-request list of bench.json (input_lens, output_lens,
# ttfts, itls, latencies, start_times, queue_times, generated_texts, errors) repeated to
# WHATIF_REQUESTS entries (default 1,000,000; about 780 MB): the 32 requests sent again
# and again, each repetition's send times moved on by the run's span, so that the file
# reads as the 32-request run done back to back. Its counts (num_prompts, completed,
# total_input_tokens, total_output_tokens) and duration grow with it; its `date` is left
# out, as a file saved after 20 hours of load cannot be placed beside readings 2.4 s apart
# (the run would set it aside as another run's).
#
# Each command prints its exit status, wall seconds, peak resident MiB and what it read
# (the first line of its answer; the error's last line when it failed):
#   whatif DIR                        the run as the model holds it
#   whatif DIR --set concurrency=16   and one change replayed
#
# INFERLINT_BIN names another build to measure (an earlier one, to compare).
#
# Needs: python3 and GNU time; about 1.6 GB of free disk in $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${INFERLINT_BIN:-}" ]; then
  RS="$INFERLINT_BIN"
else
  cargo build --release --locked -p inferlint-cli -q
  RS="$PWD/target/release/inferlint"
fi
N="${WHATIF_REQUESTS:-1000000}"
SOURCE=fixtures/real/vllm-0.32-cpu/healthy-vllm-bench
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

measure() {
  local name="$1"
  shift
  local status=0
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  read -r seconds kib < <(tail -1 "$WORK/time")
  local said
  if [ "$status" = 0 ]; then
    # What the replay read: "(vLLM, vllm bench serve: 32 requests, 8 at a time ...)".
    said="$(head -1 "$WORK/out" | sed 's/^What if: [^(]*//' | cut -c1-80)"
  else
    said="$(grep -v '^Command exited' "$WORK/err" | tail -1 | cut -c1-80)"
  fi
  printf '%-46s exit %-3s %7ss %8s MiB  %s\n' "$name" "$status" "$seconds" "$((kib / 1024))" "$said"
}

cp -r "$SOURCE" "$WORK/small"
cp -r "$SOURCE" "$WORK/big"
rm -f "$WORK/small/report.html" "$WORK/big/report.html"
python3 - "$WORK/big/bench.json" "$N" <<'PY'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
report = json.load(open(path))
k = len(report["errors"])
keys = [key for key, v in report.items() if isinstance(v, list) and len(v) == k]
starts = report["start_times"]
ends = [s + l for s, l in zip(starts, report["latencies"])]
# Each repetition starts where the last ended, one mean gap between sends later.
gap = (max(starts) - min(starts)) / max(1, k - 1)
period = max(ends) - min(starts) + gap
copies = -(-n // k)
for key in ["num_prompts", "completed"]:
    report[key] = n
for key in ["total_input_tokens", "total_output_tokens"]:
    report[key] = round(report[key] * n / k)
report["duration"] = report["duration"] * n / k
report.pop("date", None)
small = {key: v for key, v in report.items() if key not in keys}
with open(path, "w") as f:
    f.write(json.dumps(small)[:-1])
    for key in keys:
        f.write(", " + json.dumps(key) + ": [")
        if key == "start_times":
            items = (json.dumps(starts[i % k] + (i // k) * period) for i in range(n))
            f.write(", ".join(items))
        else:
            block = ", ".join(json.dumps(v) for v in report[key])
            whole, rest = divmod(n, k)
            f.write(", ".join([block] * whole))
            if rest:
                f.write((", " if whole else "") + ", ".join(json.dumps(v) for v in report[key][:rest]))
        f.write("]")
    f.write("}")
PY
size=$(($(stat -c %s "$WORK/big/bench.json") / 1000000))

echo "== whatif on $SOURCE (32 requests) and grown to $N requests ($size MB bench.json)"
for dir in small big; do
  label="32 requests"
  [ "$dir" = big ] && label="$N requests"
  measure "whatif, $label" "$RS" whatif "$WORK/$dir"
  measure "whatif --set concurrency=16, $label" "$RS" whatif "$WORK/$dir" --set concurrency=16
done
