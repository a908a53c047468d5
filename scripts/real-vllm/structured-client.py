"""Sends N completions at once, each constrained to a JSON schema of its own (so each
needs its own grammar compiled before the scheduler may admit it: vLLM defers it while
it waits, `num_skipped_waiting_reqs`), 32 tokens each, and prints what each got back.

Usage: python3 structured-client.py URL [N [PROPERTIES]]   (default 16 requests, 40 properties)
"""

import json
import sys
import threading
import urllib.request


def schema(i, n):
    props = {f"field_{i}_{k}": {"type": "string", "enum": [f"v{i}_{k}_{j}" for j in range(8)]}
             for k in range(n)}
    return {"type": "object", "properties": props, "required": list(props)}


def send(url, i, n, out):
    body = {"model": "tiny-llama", "prompt": f"request {i}", "max_tokens": 32,
            "structured_outputs": {"json": schema(i, n)}}
    req = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            got = json.load(r)
            out[i] = f"{r.status} {got['usage']}"
    except Exception as e:  # noqa: BLE001 (reported, not raised)
        out[i] = f"error {e}"


def main(url, count=16, props=40):
    out = {}
    threads = [threading.Thread(target=send, args=(url, i, props, out)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(count):
        print(f"request {i}: {out.get(i)}")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], int(a[1]) if len(a) > 1 else 16, int(a[2]) if len(a) > 2 else 40)
