#!/usr/bin/env bash
# Runs a command once the machine is quiet, and says afterwards how quiet it stayed.
#
# Before: waits until at least QUIET_IDLE_PCT (default 85) percent of the CPUs are idle
# over a 3-second window, as /proc/stat counts it, for at most QUIET_WAIT_S (default 900)
# seconds. During: every half second, the CPU time of build tools (cargo, rustc, cc, ld
# and the like: what else runs on this machine) is added up. After: the share of the CPUs
# they took while the command ran is written to quiet.txt in the folder named by the
# command's --result-dir (vllm bench serve's), so that a timing measured beside a build
# can be told and left out. A timing measured on a 2-core machine while a compiler runs
# beside it measures the compiler.
#
# Usage: scripts/real-vllm/quiet.sh COMMAND [ARGS...]
set -euo pipefail
exec python3 - "$@" <<'PY'
import os, signal, subprocess, sys, time

want = int(os.environ.get("QUIET_IDLE_PCT", "85"))
deadline = time.time() + int(os.environ.get("QUIET_WAIT_S", "900"))
ticks = os.sysconf("SC_CLK_TCK")
cpus = os.cpu_count() or 1
BUILD = {"cargo", "rustc", "cc", "cc1", "cc1plus", "ld", "ld.lld", "lld", "clippy-driver",
         "rustdoc", "collect2", "as", "build-script-build"}

def cpu():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v)

def idle_pct():
    i0, t0 = cpu(); time.sleep(3); i1, t1 = cpu()
    return 100 * (i1 - i0) // max(t1 - t0, 1)

while True:
    idle = idle_pct()
    if idle >= want:
        break
    if time.time() >= deadline:
        print(f"quiet.sh: the CPUs stayed busy (last {idle}% idle); running anyway", file=sys.stderr)
        break

def build_times():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        if comm in BUILD or comm.startswith("rustc") or comm.startswith("build_script"):
            f = s[s.rindex(")") + 2:].split()
            out[pid] = int(f[11]) + int(f[12])
    return out

child = subprocess.Popen(sys.argv[1:])
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda s, _f: child.send_signal(s))
start = time.monotonic()
seen = build_times()
used = 0
while child.poll() is None:
    time.sleep(0.5)
    now = build_times()
    for pid, t in now.items():
        used += t - seen.get(pid, 0)
    seen = now
elapsed = time.monotonic() - start
share = used / ticks / max(elapsed, 1e-9) / cpus
args = sys.argv[1:]
if "--result-dir" in args:
    folder = args[args.index("--result-dir") + 1]
    with open(os.path.join(folder, "quiet.txt"), "w") as f:
        f.write(f"load seconds: {elapsed:.1f}\nCPU share of build tools while it ran: {share:.3f}\n")
sys.exit(child.returncode)
PY
