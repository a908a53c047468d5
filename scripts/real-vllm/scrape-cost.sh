#!/usr/bin/env bash
# What one scrape costs the real vLLM CPU build's API server, with the whole page and with
# the page the recorder asks for now (prometheus_client's name[] filter at /metrics/), and
# what the recorder costs a benchmark's throughput and TPOT.
#
# Part 1, the server's CPU per scrape. The API server is the process `vllm serve` runs as
# (serve.sh execs it, so it leads the process group started here). Its user + system
# ticks (/proc/PID/stat) are read around three kinds of stretch of SECONDS each, taken in
# turn ROUNDS times: no scrape at all (what the idle server spends on its own), `inferlint
# watch --interval 0.05 --whole-pages`, and `inferlint watch --interval 0.05` (each asks
# 20 pages a second). Per scrape = (ticks of the stretch - ticks of the idle stretch
# beside it) / samples the recording holds. Pages sizes are measured with curl.
#
# Part 2, the benchmark with and without the recorder: `vllm bench serve` (PROMPTS random
# prompts, default 512, 64 in / 64 out, 8 at once) with no recorder, with `watch
# --interval 0.25` (4 Hz, what xray uses) and with `watch --interval 0.25 --whole-pages`,
# in turn, ROUNDS times; output tok/s and mean TPOT from each result file, and each
# round's figures over the same round's run without a recorder (the rounds share the
# machine's drift, so the ratios resolve what the raw figures' spread hides). 64 prompts
# (about 1.5 s a run) spread 1.2 to 4.7 s on this machine: too short to see a 1% effect.
#
# Everything runs under scripts/real-vllm/quiet.sh's watch of the machine: the share of
# the CPUs build tools took is printed beside each figure.
#
# Usage: scripts/real-vllm/scrape-cost.sh OUT [ROUNDS] [SECONDS]   (default 3 20)
#   PARTS=1, PARTS=2 or PARTS=3 runs one part only (PARTS=123 all three; default 12).
#
# Part 3, what each asked family adds: the recorder's filtered query cut to its first K
# names (K = 0 asks `/metrics/?name[]=` of a name no server has, 1, 2, ... all) and
# `/health` and the whole page, each asked SCRAPES (default 400) times on one kept-open
# connection (Python's http.client, no recorder), in turn ROUNDS times; API-server CPU
# per request = (ticks of the stretch - an idle stretch of the same length beside it) /
# requests. The requests go back to back, or PACE_HZ a second (PACE_HZ=20 is part 1's
# rate), which shows what a request costs a server that idles between them.
# Needs scripts/real-vllm/setup.sh (never in CI) and a release build of inferlint.
source "$(dirname "$0")/common.sh"
OUT="$1"
ROUNDS="${2:-3}"
SECS="${3:-20}"
mkdir -p "$OUT"
BIN="$ROOT/target/release/inferlint"
[ -x "$BIN" ] || { echo "build it first: cargo build --release -p inferlint-cli" >&2; exit 2; }
PORT="$(free_port)"
URL="http://127.0.0.1:$PORT"
cleanup() {
  for g in "${STARTED_GROUPS[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  for g in "${STARTED_GROUPS[@]}"; do
    for _ in $(seq 100); do kill -0 -- "-$g" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$g" 2>/dev/null || true
  done
}
trap cleanup EXIT
start_server "$OUT/boot.log" "$PORT"
for _ in $(seq 600); do curl -sf "$URL/health" >/dev/null && break; sleep 1; done
curl -sf "$URL/health" >/dev/null || { echo "the server did not come up: $OUT/boot.log" >&2; exit 1; }
API_PID="$SERVER_PID"
ticks() { awk '{print $14 + $15}' "/proc/$API_PID/stat"; }
HZ="$(getconf CLK_TCK)"

# One warm-up of each, so that no first-request cost lands in a stretch.
"$BIN" watch "$URL" -o "$OUT/warm.jsonl" --force --interval 0.05 --duration 2 --no-gpu >/dev/null 2>&1
"$BIN" watch "$URL" -o "$OUT/warm.jsonl" --force --interval 0.05 --duration 2 --no-gpu --whole-pages >/dev/null 2>&1
head -1 "$OUT/warm.jsonl" >/dev/null
FILTERED_PATH="$(grep -o 'GET /metrics/?[^ ]*' "$OUT/boot.log" | tail -1 | cut -c5-)"
want() { case "${PARTS:-12}" in *"$1"*) return 0 ;; *) return 1 ;; esac; }
if want 1; then
echo "page sizes: whole $(curl -s "$URL/metrics" | wc -c) bytes, filtered $(curl -s "$URL$FILTERED_PATH" | wc -c) bytes" | tee "$OUT/cost.txt"

stretch() {   # stretch KIND: prints "KIND TICKS SAMPLES"
  local kind="$1" before after samples=0
  before="$(ticks)"
  case "$kind" in
    idle) sleep "$SECS" ;;
    whole|filtered)
      local extra=()
      [ "$kind" = whole ] && extra=(--whole-pages)
      "$BIN" watch "$URL" -o "$OUT/$kind.jsonl" --force --interval 0.05 --duration "$SECS" \
        --no-gpu "${extra[@]}" >/dev/null 2>&1
      samples="$(grep -c '"t_wall"' "$OUT/$kind.jsonl")"
      ;;
  esac
  after="$(ticks)"
  echo "$kind $((after - before)) $samples"
}
: > "$OUT/stretches.txt"
for r in $(seq "$ROUNDS"); do
  for kind in idle whole filtered; do
    bash "$ROOT/scripts/real-vllm/quiet.sh" true >/dev/null 2>&1 || true
    stretch "$kind" | tee -a "$OUT/stretches.txt"
  done
done
python3 - "$OUT/stretches.txt" "$HZ" <<'PY' | tee -a "$OUT/cost.txt"
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
hz = int(sys.argv[2])
by = {}
for i in range(0, len(rows), 3):
    idle = int(rows[i][1])
    for kind, t, n in rows[i + 1:i + 3]:
        by.setdefault(kind, []).append((int(t) - idle) / hz / max(int(n), 1) * 1e3)
for kind, v in by.items():
    print(f"API server CPU per scrape, {kind}: " + " / ".join(f"{x:.2f}" for x in sorted(v)) +
          f" ms (min / ... / max of {len(v)} rounds; median {statistics.median(v):.2f} ms)")
w, f = statistics.median(by["whole"]), statistics.median(by["filtered"])
print(f"filtered / whole: {f / w:.2f}")
PY
fi

if want 2; then
# Part 2.
BENCH=("$REAL_VLLM_VENV/bin/vllm" bench serve --backend openai --base-url "$URL" --model "$MODEL_NAME"
  --tokenizer "$REAL_VLLM_MODEL" --dataset-name random --seed 0 --disable-tqdm --save-result
  --random-input-len 64 --random-output-len 64 --ignore-eos --num-prompts "${PROMPTS:-512}" --max-concurrency 8)
for r in $(seq "$ROUNDS"); do
  for kind in none filtered whole; do
    dir="$OUT/bench-$r-$kind"
    mkdir -p "$dir"
    rec=""
    if [ "$kind" != none ]; then
      extra=()
      [ "$kind" = whole ] && extra=(--whole-pages)
      "$BIN" watch "$URL" -o "$dir/run.series.jsonl" --interval 0.25 --no-gpu "${extra[@]}" >/dev/null 2>&1 &
      rec=$!
      sleep 1
    fi
    bash "$ROOT/scripts/real-vllm/quiet.sh" "${BENCH[@]}" --result-dir "$dir" --result-filename bench.json >"$dir/load.log" 2>&1
    [ -n "$rec" ] && { kill -INT "$rec"; wait "$rec" || true; }
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee -a "$OUT/cost.txt"
import json, sys, statistics, os
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for kind in ("none", "filtered", "whole"):
        d = f"{out}/bench-{r}-{kind}"
        b = json.load(open(f"{d}/bench.json"))
        q = open(f"{d}/quiet.txt").read().split()[-1] if os.path.exists(f"{d}/quiet.txt") else "?"
        rows.setdefault(kind, []).append((b["output_throughput"], b["mean_tpot_ms"], q))
def spread(v, f="{:.1f}"):
    s = sorted(v)
    return f"{f.format(s[0])} / {f.format(statistics.median(s))} / {f.format(s[-1])}"
print(f"bench: {rounds} rounds, min / median / max")
for kind, v in rows.items():
    print(f"  recorder {kind:>8}: output tok/s {spread([x[0] for x in v])}; mean TPOT ms "
          f"{spread([x[1] for x in v], '{:.3f}')}; build tools' CPU share {', '.join(x[2] for x in v)}")
for kind in ("filtered", "whole"):
    tps = [a[0] / b[0] for a, b in zip(rows[kind], rows["none"])]
    tpot = [a[1] / b[1] for a, b in zip(rows[kind], rows["none"])]
    print(f"  {kind} / none, same round: tok/s {spread(tps, '{:.3f}')}; TPOT {spread(tpot, '{:.3f}')}")
PY
fi

if want 3; then
# Part 3.
python3 - "$URL" "$FILTERED_PATH" "$API_PID" "$ROUNDS" "${SCRAPES:-400}" "$HZ" "${PACE_HZ:-0}" <<'PY' | tee -a "$OUT/cost.txt"
import http.client, statistics, sys, time, urllib.parse
url, path, pid, rounds, scrapes, hz = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
pace = float(sys.argv[7])
host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
base, _, query = path.partition("?")
names = [v for k, v in urllib.parse.parse_qsl(query) if k == "name[]"]
def ticks():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
def ask(target):
    conn = http.client.HTTPConnection(host, port)
    t0, start = ticks(), time.monotonic()
    for i in range(scrapes):
        if pace:
            time.sleep(max(0.0, start + i / pace - time.monotonic()))
        conn.request("GET", target)
        r = conn.getresponse()
        r.read()
        assert r.status == 200, (target, r.status)
    conn.close()
    return ticks() - t0, time.monotonic() - start
def idle(seconds):
    t0 = ticks(); time.sleep(seconds); return ticks() - t0
targets = {"/health": "/health", "whole": "/metrics"}
steps = range(0, len(names) + 1) if not pace else (0, len(names))
for k in steps:
    asked = names[:k] if k else ["no_such_family"]
    targets[f"{k} names"] = base + "?" + urllib.parse.urlencode([("name[]", n) for n in asked])
per = {t: [] for t in targets}
for _ in range(rounds):
    for label, target in targets.items():
        used, secs = ask(target)
        per[label].append((used - idle(secs)) / hz / scrapes * 1e3)
how = f"{pace:g} a second" if pace else "back to back"
print(f"API server CPU per request, {scrapes} requests on one connection, {how}, min / median / max of {rounds} rounds:")
for label, v in per.items():
    v.sort()
    print(f"  {label:>9}: {v[0]:.2f} / {statistics.median(v):.2f} / {v[-1]:.2f} ms")
print("  names in the order added: " + ", ".join(names))
print(f"  all names / whole: {statistics.median(per[f'{len(names)} names']) / statistics.median(per['whole']):.2f}")
PY
fi
