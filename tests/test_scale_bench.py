"""The GPU benchmark script: its --tiny mode runs the same code on CPU, and the 8B shape is
Qwen3-8B's parameter count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ecomrlve.testing.bench import load_script

pytestmark = pytest.mark.slow  # the benchmark script as a subprocess

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_train.py"


def _module():
    return load_script(SCRIPT)


def test_qwen3_8b_shape_has_8_2b_parameters() -> None:
    bench = _module()
    n = bench.count_parameters(bench.QWEN3_8B)
    assert 8.15e9 < n < 8.25e9  # Qwen3-8B: 8.19B with untied embeddings


def test_tiny_mode_runs_every_phase_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--steps", "1", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "tokens/s" in done.stdout and "baseline" in done.stdout
    result = json.loads(out.read_text())
    phases = [(r["phase"], "baseline" in r["variant"]) for r in result["rows"]]
    assert phases == [("update", False), ("update", True), ("rollout", False), ("rollout", True)]
    for row in result["rows"]:
        assert row["tokens"] > 0 and row["tokens_per_s"] > 0 and row["note"] != "out of memory"
    update = result["rows"][0]
    assert update["tflops"] > 0 and update["mfu"] is None  # no MFU claim on CPU
    assert update["plan_gb"] > 0  # the dry-run's estimate for the same shape, beside the peak


def test_without_cuda_the_full_shape_refuses_cleanly() -> None:
    import torch

    if torch.cuda.is_available():
        return
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--tiny" in done.stderr
