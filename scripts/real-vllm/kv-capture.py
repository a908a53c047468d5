"""Captures the raw messages of an engine's KV-cache event stream, for fixtures: each
message one line, its frames in hex separated by single spaces (an empty frame is an
empty field). Uses pyzmq from the vLLM venv; never run in CI.

  kv-capture.py sub ENDPOINT OUT
      subscribes to every topic of the PUB socket at ENDPOINT and writes each message as
      it arrives, until SIGTERM or SIGINT.
  kv-capture.py replay ENDPOINT START_SEQ OUT
      asks the ROUTER at ENDPOINT for the batches from START_SEQ (a DEALER sends
      ["", START_SEQ as 8 bytes big-endian]) and writes every message of the answer,
      the end marker (sequence number -1) included; gives up after 10 s.
"""

import signal
import sys
import time

import zmq


def line(frames):
    return " ".join(f.hex() for f in frames) + "\n"


def sub(endpoint, out):
    ctx = zmq.Context()
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    s.connect(endpoint)
    running = [True]

    def stop(*_):
        running[0] = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    n = 0
    with open(out, "w") as f:
        while running[0]:
            if s.poll(100):
                f.write(line(s.recv_multipart()))
                f.flush()
                n += 1
    s.close(linger=0)
    print(f"{n} messages -> {out}")


def replay(endpoint, start, out):
    ctx = zmq.Context()
    d = ctx.socket(zmq.DEALER)
    d.connect(endpoint)
    d.send_multipart([b"", int(start).to_bytes(8, "big")])
    deadline = time.monotonic() + 10
    n = 0
    with open(out, "w") as f:
        while time.monotonic() < deadline:
            if not d.poll(100):
                continue
            frames = d.recv_multipart()
            f.write(line(frames))
            n += 1
            if len(frames) >= 2 and frames[-2] == (-1).to_bytes(8, "big", signed=True):
                break
    d.close(linger=0)
    print(f"{n} replay messages -> {out}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["sub"] and len(sys.argv) == 4:
        sub(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["replay"] and len(sys.argv) == 5:
        replay(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
