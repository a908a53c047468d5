#!/usr/bin/env bash
# Runs a command once the machine is quiet: at least QUIET_IDLE_PCT (default 85) percent
# of the CPUs idle over a 3-second window, as /proc/stat counts it, waiting at most
# QUIET_WAIT_S (default 900) seconds. A timing measured on a 2-core machine while a
# compiler runs beside it measures the compiler; the runs that prove `whatif` start their
# load only when nothing else is using the CPUs (the server itself idles until then).
#
# Usage: scripts/real-vllm/quiet.sh COMMAND [ARGS...]
set -euo pipefail
want="${QUIET_IDLE_PCT:-85}"
deadline=$(( $(date +%s) + ${QUIET_WAIT_S:-900} ))
cpu() { awk '/^cpu /{idle=$5+$6; total=0; for(i=2;i<=NF;i++) total+=$i; print idle, total}' /proc/stat; }
while :; do
  read -r i0 t0 < <(cpu)
  sleep 3
  read -r i1 t1 < <(cpu)
  idle=$(( (i1 - i0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1) ))
  if [ "$idle" -ge "$want" ]; then
    break
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "quiet.sh: the CPUs stayed busy (last ${idle}% idle); running anyway" >&2
    break
  fi
done
exec "$@"
