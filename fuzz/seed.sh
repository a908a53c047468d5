#!/usr/bin/env bash
# Seeds fuzz/corpus/TARGET/ for every target from the repository's fixtures and, when
# INFERLINT_RECORDED points at them, the real recordings. The corpora stay out of git
# (they are derived data, rebuilt in seconds); libFuzzer grows them from these seeds.
#
# Large files are cut into windows of a few dozen lines: libFuzzer mutates small inputs
# far faster, and every line shape still appears in some window.
set -euo pipefail
cd "$(dirname "$0")"

sources=(../fixtures)
if [ -n "${INFERLINT_RECORDED:-}" ] && [ -d "$INFERLINT_RECORDED" ]; then
  sources+=("$INFERLINT_RECORDED")
else
  echo "seed: INFERLINT_RECORDED is not set; seeding from fixtures/ only" >&2
fi

files() { find "${sources[@]}" -type f "$@" | sort; }

# window TARGET LINES FILE...: each file cut into windows of LINES lines.
window() {
  local target=$1 lines=$2
  shift 2
  mkdir -p "corpus/$target"
  local n=0 file
  for file in "$@"; do
    n=$((n + 1))
    split -l "$lines" -d -a 4 "$file" "corpus/$target/seed-$n-"
  done
}

# Seeds are added beside what earlier runs grew (same names are overwritten).
logs_of() { # engine folder pattern: every boot log of that engine
  files -path "*$1*" \( -name '*boot*.log' -o -name 'run_*.log' \)
}
mapfile -t vllm_logs < <(logs_of vllm)
mapfile -t sglang_logs < <(logs_of sglang)
mapfile -t trtllm_logs < <(logs_of trtllm)
mapfile -t failed_logs < <(files -name '*boot_fail*.log')
mapfile -t series < <(files -name '*.series.jsonl')
mapfile -t proms < <(files -name '*.prom')
mapfile -t snapshots < <(files -name '*.snapshot.json')
mapfile -t results < <(files -name 'bench.json*')
mapfile -t load_logs < <(files -name 'load.log')
# Every tool's result files (fixtures/loadtools holds real runs of each), but for the
# recordings' own snapshots and series; the few over 100 kB are left to the mutator.
mapfile -t tool_results < <(files -path '*loadtools*' \( -name '*.json' -o -name '*.jsonl' -o -name '*.csv' \) \
  ! -name '*.snapshot.json' ! -name '*.series.jsonl' -size -100k)

window bootlog_vllm 40 "${vllm_logs[@]}"
window bootlog_sglang 40 "${sglang_logs[@]}"
window bootlog_trtllm 40 "${trtllm_logs[@]}"
window failure_classifier 60 "${failed_logs[@]}"
# Log windows led by the bytes that choose the read sizes (3 sizes: 7, 64, 255 bytes).
mkdir -p corpus/bootlog_file
n=0
for file in "${vllm_logs[@]}" "${sglang_logs[@]}" "${trtllm_logs[@]}"; do
  n=$((n + 1))
  split -l 40 -d -a 4 --filter='{ printf "\003\007\100\377"; cat; } > "$FILE"' "$file" "corpus/bootlog_file/seed-$n-"
done
window prom_parse 60 "${proms[@]}"
window load_log 40 "${load_logs[@]}"

# Series lines: the header, a few samples and every gap or restart record of each file.
mkdir -p corpus/series_line corpus/series_file
n=0
for file in "${series[@]}"; do
  n=$((n + 1))
  { head -n 4 "$file"; grep -E '"(gap|restart)"' "$file" | head -n 4 || true; tail -n 1 "$file"; } |
    split -l 1 -d -a 3 - "corpus/series_line/seed-$n-"
  # Whole-file windows, each led by the byte that sets the number of stretches.
  split -l 30 -d -a 4 --filter='{ printf "\003"; cat; } > "$FILE"' "$file" "corpus/series_file/seed-$n-"
done

mkdir -p corpus/snapshot corpus/bench_result corpus/pyliteral
cp_numbered() { local target=$1 n=0 file; shift; for file in "$@"; do n=$((n + 1)); cp "$file" "corpus/$target/seed-$n"; done; }
cp_numbered snapshot "${snapshots[@]}"
window snapshot 60 "${proms[@]}"
cp_numbered bench_result "${results[@]}"
mkdir -p corpus/loadtool_result
cp_numbered loadtool_result "${tool_results[@]}" "${results[@]}"

# Python literals as the engines print them: vLLM's non-default args, SGLang's server
# args and TensorRT-LLM's settings.
n=0
cat "${vllm_logs[@]}" "${sglang_logs[@]}" "${trtllm_logs[@]}" |
  grep -oE '(non-default args: |server_args=|LLM Args: )[^ ].*' |
  sed -E 's/^(non-default args: |server_args=|LLM Args: )//' | sort -u | head -n 40 |
  while IFS= read -r literal; do
    n=$((n + 1))
    printf '%s' "$literal" > "corpus/pyliteral/seed-$n"
  done

# KV events: each real batch's payload (the third frame of each captured message), and
# each line of the subscribers' files.
mkdir -p corpus/kv_events
n=0
for file in $(files -name '*.hex'); do
  while IFS= read -r line; do
    n=$((n + 1))
    printf '%s' "$(cut -d' ' -f3 <<< "$line")" | xxd -r -p > "corpus/kv_events/seed-payload-$n"
  done < "$file"
done
for file in $(files -name '*.kv-events.jsonl'); do
  n=$((n + 1))
  split -l 1 -d -a 3 "$file" "corpus/kv_events/seed-line-$n-"
done

# Answers of Prometheus' query API, in the shapes it writes them.
mkdir -p corpus/prom_answer
printf '%s' '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"vllm:num_requests_running","instance":"a","job":"vllm"},"values":[[1764547200,"3"],[1764547201.5,"NaN"],[1764547203,"+Inf"]]},{"metric":{"__name__":"vllm:kv_cache_usage_perc","pod":"b:1","engine":"0"},"values":[[1764547200,"0.25"]]}]}}' >corpus/prom_answer/seed-matrix
printf '%s' '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"vllm:cache_config_info","instance":"a","num_gpu_blocks":"11","label":"q\"\u003c"},"value":[1764547200.123,"1"]}]},"warnings":["w"]}' >corpus/prom_answer/seed-vector
printf '%s' '{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:2: parse error"}' >corpus/prom_answer/seed-error
printf '%s' '{"status":"success","data":{"resultType":"scalar","result":[1764547200,"-Inf"]}}' >corpus/prom_answer/seed-scalar

for dir in corpus/*/; do
  echo "seed: $(ls "$dir" | wc -l) inputs in $dir"
done
