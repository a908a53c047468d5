#!/usr/bin/env bash
# Runs every fuzz target, one at a time on one core, for SECONDS each (default 300), from
# the seeded corpora (run seed.sh first), and prints per target the executions, the time
# and whether it crashed. Logs go to fuzz/logs/TARGET.log, crashing inputs to
# fuzz/artifacts/TARGET/; the corpus column counts the inputs in fuzz/corpus/TARGET/ after
# the run. Needs cargo-fuzz and a nightly toolchain.
#
#   fuzz/seed.sh && fuzz/run-all.sh 300            # every target
#   fuzz/run-all.sh 60 series_line snapshot        # some
#
# Safe Rust needs no address sanitizer; without it each target runs about twice as many
# inputs. Debug assertions stay on, so an integer overflow is a crash.
set -uo pipefail
cd "$(dirname "$0")"
seconds=${1:-300}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build -s none >/dev/null 2>&1 || { echo "the fuzz targets do not build"; exit 1; }
mkdir -p logs
printf '%-20s %12s %8s %8s %s\n' target executions seconds corpus result
status=0
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  start=$(date +%s)
  cargo +nightly fuzz run -s none "$target" "corpus/$target" -- \
    -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 \
    >"logs/$target.log" 2>&1
  code=$?
  elapsed=$(( $(date +%s) - start ))
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "logs/$target.log" | tail -n 1 | grep -o '[0-9]*$')
  if [ "$code" -eq 0 ]; then
    result="no crash"
  else
    result="CRASH: $(grep -m 1 -E 'panicked at|ERROR: libFuzzer' "logs/$target.log" | cut -c1-100)"
    status=1
  fi
  corpus=$(find "corpus/$target" -type f | wc -l)
  printf '%-20s %12s %8s %8s %s\n' "$target" "${runs:-?}" "$elapsed" "$corpus" "$result"
done
exit $status
