"""`benchmarks/learning.py --quick` end to end on a shrunken recipe: the store, DAPO and GRPO runs
through the real CLI, the tables (printed and in learning.md) and the curves."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ecomrlve.config import load_config

ROOT = Path(__file__).resolve().parent.parent
CELL = re.compile(r"([-+]?\d+\.\d+) \[([-+]?\d+\.\d+), ([-+]?\d+\.\d+)\]")


@pytest.mark.slow  # two tiny trainings, TRL's SFTTrainer and GRPOTrainer
def test_quick_study_writes_tables_and_curves(tmp_path: Path) -> None:
    # the recipe through the config loader, so the file may keep its keys flat or in blocks
    recipe = load_config(ROOT / "configs" / "tiny_cpu.yaml").model_dump(mode="json")
    training = recipe["training"]
    training["eval"].update(tasks=9, samples=1)
    training["sft"]["steps"] = 3
    training["algorithm"]["total_steps"] = 1
    recipe["agent"]["max_new_tokens"] = 48
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(recipe))
    out = tmp_path / "study"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    flags = ["--quick", "--seeds", "1", "--throughput-steps", "1", "--config", str(config)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "learning.py"), *flags, "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    markdown = (out / "learning.md").read_text()
    for title in ("by scenario", "by step band", "DAPO vs GRPO", "Throughput"):
        assert title in markdown and title in done.stdout
    # every scenario of the nine has a row, and every pass@1 and interval is a share
    for scenario in ("bundle", "journey", "policy", "cart", "cancel"):
        assert f"| {scenario} |" in markdown
    pass_rows = markdown.split("**DAPO vs GRPO")[0]
    cells = [tuple(map(float, m)) for m in CELL.findall(pass_rows)]
    assert cells
    for value, low, high in cells:
        assert -1.0 <= low <= value <= high <= 1.0
    scenario_table = markdown.split("**Held-out pass@1 by step band")[0]
    for line in scenario_table.splitlines():
        if line.startswith("| ") and CELL.search(line):
            shares = [tuple(map(float, m)) for m in CELL.findall(line)][:4]  # base/SFT/DAPO/GRPO
            assert all(0.0 <= v <= 1.0 for cell in shares for v in cell), line
    assert (out / "curves.png").stat().st_size > 0
    assert (out / "runs" / "sft-seed0" / "plots" / "sft_loss.png").exists()
    for run in ("dapo-seed0", "grpo-seed0"):
        assert (out / "runs" / run / "plots" / "reward.png").exists()
