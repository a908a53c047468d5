"""A second client on the server while a load runs: someone else's traffic.

Waits until the server at URL has finished AFTER requests (`vllm:request_success_total`:
xray's probe sends 1 + 8 and `vllm bench serve` its test request before the load; the
before reading is taken between the two) and runs one (its `vllm:num_requests_running`
gauge above zero: the load has started), then sends COUNT completions at once, each a
prompt of PROMPT_WORDS words asking for MAX_TOKENS tokens with ignore_eos, each with an
`X-Request-Id` of `other-client-<n>`. Prints one line per request (its id and the usage
the server answered with) and exits 0; exits 1 when the load never started within the
wait.

Usage: python3 other-client.py URL [COUNT] [PROMPT_WORDS] [MAX_TOKENS] [AFTER]
Standard library only; reaches nothing but URL (127.0.0.1).
"""

import json
import sys
import threading
import time
import urllib.request

URL = sys.argv[1].rstrip("/")
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 6
PROMPT_WORDS = int(sys.argv[3]) if len(sys.argv) > 3 else 160
MAX_TOKENS = int(sys.argv[4]) if len(sys.argv) > 4 else 8
AFTER = int(sys.argv[5]) if len(sys.argv) > 5 else 10
MODEL = "tiny-llama"
WAIT_S = 900


def read(name: str) -> float:
    """The sum of every sample of `name` the server serves now (0 when unreachable)."""
    try:
        with urllib.request.urlopen(URL + "/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return 0.0
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


deadline = time.monotonic() + WAIT_S
while read("vllm:request_success_total") < AFTER or read("vllm:num_requests_running") <= 0:
    if time.monotonic() > deadline:
        print("the load never started", file=sys.stderr)
        sys.exit(1)
    time.sleep(0.05)

def send(n: int) -> None:
    prompt = " ".join(f"x{(n * 53 + k) % 997}" for k in range(PROMPT_WORDS))
    body = json.dumps(
        {
            "model": MODEL,
            "prompt": prompt,
            "max_tokens": MAX_TOKENS,
            "ignore_eos": True,
        }
    ).encode()
    request = urllib.request.Request(
        URL + "/v1/completions",
        data=body,
        headers={"Content-Type": "application/json", "X-Request-Id": f"other-client-{n}"},
    )
    with urllib.request.urlopen(request, timeout=120) as r:
        usage = json.load(r).get("usage", {})
    print(f"other-client-{n}: {json.dumps(usage)}", flush=True)


threads = [threading.Thread(target=send, args=(n,)) for n in range(COUNT)]
for t in threads:
    t.start()
for t in threads:
    t.join()
