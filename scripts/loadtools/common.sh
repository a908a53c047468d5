# Shared by the scripts beside it: each makes the fixtures of one load tool under
# fixtures/loadtools/<tool>/<case>/ by running the real tool against `inferlint-sim serve`
# through `inferlint xray`. Sourced, not run.
#
# Environment:
#   LOADTOOLS_VENVS  where each tool's virtual environment lives (one per tool, outside
#                    the repository: they hold gigabytes; default ~/.cache/inferlint-loadtools)
#   LOADTOOLS_WORK   scratch folder: the tokenizer and per-run files (default
#                    /tmp/inferlint-loadtools)
#   PYTHON           the interpreter a venv is made with (default python3)
#   CASES            only these cases (names, space-separated); default all
# Nothing here reaches beyond 127.0.0.1 except pip, for the tools' own packages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENVS="${LOADTOOLS_VENVS:-$HOME/.cache/inferlint-loadtools}"
WORK="${LOADTOOLS_WORK:-/tmp/inferlint-loadtools}"
FIXTURES="$ROOT/fixtures/loadtools"
TOK="$WORK/tokenizer"
# The model name every tool is given; the simulated server serves it.
MODEL=sim-model
mkdir -p "$VENVS" "$WORK"
# The model hub is never asked: the tokenizer is made here, by path.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export NO_PROXY="127.0.0.1,localhost" no_proxy="127.0.0.1,localhost"

build_inferlint() {
  (cd "$ROOT" && cargo build -q -p inferlint-cli -p inferlint-sim)
  INFERLINT="$ROOT/target/debug/inferlint"
  SIM="$ROOT/target/debug/inferlint-sim"
}

# venv NAME PYTHON PIP-ARGS...: makes $VENVS/NAME once and installs into it.
venv() {
  local name="$1" python="$2"
  shift 2
  local dir="$VENVS/$name"
  if [ ! -x "$dir/bin/python" ]; then
    "$python" -m venv "$dir"
  fi
  "$dir/bin/pip" install -q "$@"
  VENV="$dir"
}

# make_tokenizer VENV: the word-level tokenizer (make-tokenizer.py), once.
make_tokenizer() {
  if [ ! -f "$TOK/tokenizer.json" ]; then
    "$1/bin/python" "$ROOT/scripts/loadtools/make-tokenizer.py" "$TOK"
  fi
}

free_port() {
  python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

# prepare TOOL CASE: sets OUT (the fresh run folder fixtures/loadtools/TOOL/CASE), PORT
# (free) and URL, for the load command to name.
prepare() {
  TOOL="$1" CASE="$2"
  SKIP=0
  OUT="$FIXTURES/$TOOL/$CASE"
  if [ -n "${CASES:-}" ] && [[ " $CASES " != *" $CASE "* ]]; then
    SKIP=1 PORT=0 URL=http://127.0.0.1:0
    return 0
  fi
  rm -rf "$OUT"
  mkdir -p "$(dirname "$OUT")"
  PORT="$(free_port)"
  URL="http://127.0.0.1:$PORT"
}

# xray REQUESTED "SERVE-ARGS" LOAD-COMMAND...: runs the load through `inferlint xray`
# into $OUT, the simulated server started with SERVE-ARGS on $PORT. The load command must
# write its result files under $OUT. xray's own verdict files (report.html,
# results.json) are removed: they are inferlint's output, not the tool's or the
# server's, and would go stale. xray's exit status is kept in $XRAY_STATUS (a failing
# load is a case too).
xray() {
  [ "$SKIP" = 1 ] && return 0
  XRAY_REQUESTED="$1" XRAY_SERVE="$2"
  shift 2
  XRAY_LOAD="$*"
  set +e
  "$INFERLINT" xray -o "$OUT" --no-gpu --no-probe --requested "$XRAY_REQUESTED" \
    --serve "$SIM serve --port $PORT $XRAY_SERVE" -- "$@" > "$WORK/xray-$TOOL-$CASE.out" 2>&1
  XRAY_STATUS=$?
  set -e
  rm -f "$OUT/report.html" "$OUT/results.json"
  echo "$TOOL/$CASE: xray exit status $XRAY_STATUS"
}

# made VERSION "WHAT THE CASE STANDS FOR" ["HAND-MADE NOTES"]
# Writes MADE.md beside the files of the last xray run.
made() {
  [ "$SKIP" = 1 ] && return 0
  local tool="$TOOL" case="$CASE" version="$1" what="$2" notes="${3:-none: every file is as the tool, the simulated server and inferlint xray wrote it.}"
  local dir="$OUT"
  {
    echo "# $tool / $case"
    echo
    echo "- tool: $tool $version"
    echo "- made: $(date -u +%Y-%m-%d) by scripts/loadtools/$tool.sh"
    echo "- what it stands for: $what"
    echo "- hand-made: $notes"
    echo
    echo "## How"
    echo
    echo 'The server is the simulated vLLM, SGLang or TensorRT-LLM (`inferlint-sim serve`, not a'
    echo 'real engine), on 127.0.0.1; `$PORT` was a free port, `$OUT` this folder. The tokenizer'
    echo 'is the word-level one of scripts/loadtools/make-tokenizer.py (one token per word).'
    echo
    echo '```'
    echo "inferlint xray -o \$OUT --no-gpu --no-probe --requested $XRAY_REQUESTED \\"
    echo "  --serve \"inferlint-sim serve --port \$PORT ${XRAY_SERVE% }\" \\"
    echo "  -- $(printf '%s' "$XRAY_LOAD" | sed "s#$OUT#\$OUT#g; s#$URL#http://127.0.0.1:\$PORT#g; s#$WORK#\$WORK#g; s#$VENVS#\$VENVS#g; s#$ROOT/##g")"
    echo '```'
    echo
    echo "xray exit status: $XRAY_STATUS. report.html and results.json (inferlint's own output)"
    echo "were removed; \`inferlint report \$OUT\` makes them again."
    echo
    echo "## Files"
    echo
    (cd "$dir" && find . -type f ! -name MADE.md | sort | while read -r f; do
      echo "- \`${f#./}\` ($(wc -c < "$f") bytes)"
    done)
  } > "$dir/MADE.md"
}

# standin_case FORMAT ENGINE "SERVE-ARGS" "WHAT" "HOW": a run whose load is standin.py
# writing FORMAT's files (a tool that cannot run here), MADE.md saying so.
standin_case() {
  local format="$1" engine="$2" serve="$3" what="$4" how="$5"
  shift 5
  xray 8 "--engine $engine --speed 1 $serve" \
    python3 "$ROOT/scripts/loadtools/standin.py" --format "$format" --url "$URL" \
    --model "$MODEL" --tokenizer "$TOK" --num-prompts 32 --concurrency 8 \
    --input-len 32 --output-len 32 "$@"
  made "(not run: $how)" "$what" "ALL of the tool's files: the tool could not run here ($how), so scripts/loadtools/standin.py sent the load for real and wrote its own measurements in the tool's file layout and field names, as read from the tool's source (see docs/loadtools.md). The server's files (boot.log, snapshots, series) are real recordings of that load"
}
