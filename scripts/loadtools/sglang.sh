#!/usr/bin/env bash
# SGLang's `python -m sglang.bench_serving` (SGLang 0.5.23) against the simulated SGLang,
# through `inferlint xray`, which adds --output-file $OUT/bench.jsonl (the flag it adds
# for SGLang's own client). The default backend `sglang` (its native /generate):
#   concurrent-16          32 random prompts of 32 tokens, 32 output tokens, 16 at once
#   concurrent-16-details  the same with --output-details (per-request arrays)
#   some-errored-details   the same, the server answering 500 to every 5th request
#   oai-chat-16            --backend sglang-oai-chat (/v1/chat/completions)
#   all-failed-after-warmup every timed request answered 500: the client crashes, no result
#   server-died-no-result  the server dies on the first timed request: no result file
# Usage: scripts/loadtools/sglang.sh   (see common.sh for the environment)
#
# The benchmark client is a module of the whole SGLang package, whose dependencies need
# CUDA 13 (flashinfer, sgl-kernel, ...). The package is installed without them, and only
# what importing sglang.bench_serving needs is added: the tool's code runs unchanged.
source "$(dirname "$0")/common.sh"
VERSION=0.5.23
build_inferlint
venv sglang "${PYTHON:-python3}" --no-deps "sglang==$VERSION"
"$VENV/bin/pip" install -q aiohttp numpy requests tqdm "transformers==5.19.0" \
  "tokenizers==0.23.2" msgspec orjson pillow pybase64 psutil torch torchvision starlette \
  pyzmq IPython datasets "apache-tvm-ffi==0.1.11" sentencepiece compressed-tensors gguf
make_tokenizer "$VENV"
PY="$VENV/bin/python"
# `--dataset-name random` cuts its prompts from ShareGPT conversations, which it would
# download; a small ShareGPT-shaped file of filler words, made here, is given instead.
SHAREGPT="$WORK/sharegpt-filler.json"
"$PY" - "$SHAREGPT" <<'PYEOF'
import json, random, sys
rng = random.Random(0)
words = lambda n: " ".join(f"w{rng.randrange(2000)}" for _ in range(n))
convs = [{"id": str(i), "conversations": [{"from": "human", "value": words(200)},
                                          {"from": "gpt", "value": words(200)}]}
         for i in range(64)]
json.dump(convs, open(sys.argv[1], "w"))
PYEOF

run_sglang() { # REQUESTED SERVE-ARGS EXTRA-FLAGS...
  local requested="$1" serve="$2"
  shift 2
  xray "$requested" "--engine sglang --speed 1 $serve" \
    "$PY" -m sglang.bench_serving --base-url "$URL" --model "$MODEL" --tokenizer "$TOK" \
    --dataset-name random --dataset-path "$SHAREGPT" --random-input-len 32 --random-output-len 32 \
    --random-range-ratio 1.0 --num-prompts 32 --max-concurrency 16 --seed 0 --disable-tqdm "$@"
}

prepare sglang concurrent-16
run_sglang 16 ""
made "$VERSION" "a normal run with the default backend (SGLang's /generate): 32 random prompts, 16 at once, every one answered; bench.jsonl gets one JSON line (request_rate is Infinity)"

prepare sglang concurrent-16-details
run_sglang 16 "" --output-details
made "$VERSION" "the same normal run with --output-details: the line also holds one array entry per request (input_lens, output_lens, ttfts, itls, generated_texts, errors)"

prepare sglang some-errored-details
run_sglang 16 "--error-every 5" --output-details
made "$VERSION" "a run with failed requests: the server answers 500 to every 5th completion request (inferlint-sim --error-every 5); SGLang leaves them out of completed and keeps their error texts with --output-details"

prepare sglang oai-chat-16
run_sglang 16 "" --backend sglang-oai-chat
made "$VERSION" "a normal run through the OpenAI chat endpoint (--backend sglang-oai-chat) rather than /generate"

prepare sglang all-failed-after-warmup
run_sglang 16 "--error-from 2" --output-details
made "$VERSION" "every timed request fails: the server answers SGLang's warm-up request, then 500 to every later one (inferlint-sim --error-from 2, as an API server whose engine died). SGLang 0.5.23 then fails in its own statistics (numpy percentile of an empty list, IndexError) and writes NO result file; load.log holds the traceback"

prepare sglang server-died-no-result
run_sglang 16 "--die-on-request 2" --output-details
made "$VERSION" "the server dies on the first timed request (inferlint-sim --die-on-request 2: listener and connections closed): every request fails, then the client itself fails asking /server_info and writes NO result file; load.log holds its traceback. xray could take no after snapshot"
