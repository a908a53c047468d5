#!/usr/bin/env bash
# The Python inferlint 0.3.1, run as a black box, on a recorded run and on the same run
# whose series carries every key inferlint's recorder adds (GPU readings, prefix-cache
# counters, the waiting gauge's split by reason, the header's "gpu"): its verdicts and messages must not change.
# Usage: scripts/compare-new-fields.sh PYTHON_INFERLINT [RECORDED_RUN]
#   PYTHON_INFERLINT: the Python tool's `inferlint` (e.g. a venv's bin/inferlint)
#   RECORDED_RUN: a run folder (default ../shared/recorded/vllm-0.28/xray)
set -euo pipefail
py=${1:?give the Python inferlint 0.3.1 executable}
run=${2:-"$(dirname "$0")/../../shared/recorded/vllm-0.28/xray"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cp -r "$run" "$out/plain"
cp -r "$run" "$out/added"
python3 - "$run/run.series.jsonl" "$out/added/run.series.jsonl" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src) as f, open(dst, "w") as out:
    for i, line in enumerate(f):
        o = json.loads(line)
        if "schema" in o:
            o["gpu"] = "nvml"
        elif "t_wall" in o:
            o.update({"prefix_cache_hits": 0.0, "prefix_cache_queries": 63.0 + i,
                      "gpu_other_mib": 20480.0, "gpu_other_util": 35.0, "gpu_util": 97.0,
                      "gpu_throttle": 4.0, "gpu_sm_mhz": 1500.0, "gpu_sm_max_mhz": 1980.0,
                      "waiting_capacity": o.get("waiting"), "waiting_deferred": 0.0})
        out.write(json.dumps(o) + "\n")
PY
for what in plain added; do
  (cd "$out" && "$py" series "$what/run.series.jsonl" --snapshot "$what/after.snapshot.json" \
     --requested 32 --json >"$what.series.json" || true)
  (cd "$out" && "$py" report "$what" --json -o "$what.html" 2>/dev/null \
     | sed "s#$what/#RUN/#g" >"$what.report.json" || true)
done
diff "$out/plain.series.json" "$out/added.series.json"
diff "$out/plain.report.json" "$out/added.report.json"
echo "the Python tool reads both series to the same verdicts and messages"
