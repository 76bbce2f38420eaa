"""What a pipeline run shows in the Prefect UI besides its stages: the plots, a summary of the
curriculum manifest and the held-out evaluation table, as Prefect artifacts.

Artifact keys (stable, so the UI keeps their history across runs): `ecomrlve-plots`,
`ecomrlve-manifest`, `ecomrlve-eval`.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

PLOTS_KEY = "ecomrlve-plots"
MANIFEST_KEY = "ecomrlve-manifest"
EVAL_KEY = "ecomrlve-eval"
MAX_INLINE_PLOT_BYTES = 2 << 20  # larger plots are linked by path instead of embedded


def plots_markdown(plots: list[str]) -> str:
    """The plots as markdown: each PNG embedded (data URI), so the UI shows it offline."""
    lines = ["# Dataset plots", ""]
    for plot in plots:
        path = Path(plot)
        lines.append(f"## {path.stem.replace('_', ' ')}")
        data = path.read_bytes()
        if len(data) <= MAX_INLINE_PLOT_BYTES:
            encoded = base64.b64encode(data).decode()
            lines.append(f"![{path.name}](data:image/png;base64,{encoded})")
        else:
            lines.append(f"`{path}` ({len(data):,} bytes)")
        lines.append("")
    return "\n".join(lines)


def manifest_rows(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per scenario: tasks per difficulty range and step band (from the manifest)."""
    rows = []
    for scenario, per_difficulty in sorted(manifest.get("counts", {}).items()):
        bands: dict[str, int] = {}
        for per_band in per_difficulty.values():
            for band, n in per_band.items():
                bands[band] = bands.get(band, 0) + int(n)
        levels = sorted(int(d) for d in per_difficulty)
        rows.append(
            {
                "scenario": scenario,
                "tasks": sum(bands.values()),
                "difficulty": f"{levels[0]}-{levels[-1]}" if levels else "",
                **{f"steps {band}": n for band, n in sorted(bands.items())},
            }
        )
    return rows


def manifest_markdown(manifest: dict[str, Any], path: str) -> str:
    verl = manifest.get("verl", {})
    return "\n".join(
        [
            f"# Curriculum `{manifest.get('name')}`",
            "",
            f"* {manifest.get('tasks', 0):,} tasks in {len(manifest.get('shards', []))} shards "
            f"at `{path}`",
            f"* catalog_hash `{manifest.get('catalog_hash')}`, seeds {manifest.get('seeds')}",
            f"* selection: `{manifest.get('source_query')}`",
            f"* verl rows: `{verl.get('dir')}/` (agent `{verl.get('agent_name')}`), "
            f"validation `{verl.get('val_file')}` ({verl.get('val_tasks')} tasks)",
        ]
    )


def eval_rows(train: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out table of a training run: one row per stage (base, sft, dapo)."""
    return [
        {
            "stage": stage,
            "tasks": int(metrics.get("tasks", 0)),
            "pass@1": round(float(metrics.get("pass_at_1", 0.0)), 4),
            "pass^k": round(float(metrics.get("pass_hat_k", 0.0)), 4),
            "reward": round(float(metrics.get("reward_mean", 0.0)), 4),
        }
        for stage, metrics in train.get("held_out", {}).items()
    ]


@task(name="publish_artifacts")
def publish_artifacts_stage(
    curriculum_path: str, plots: list[str], train: dict[str, Any] | None
) -> list[str]:
    """Create the run's artifacts; returns their keys."""
    keys = []
    manifest = json.loads((Path(curriculum_path) / "manifest.json").read_text())
    create_markdown_artifact(
        plots_markdown(plots), key=PLOTS_KEY, description="plots of the dataset (PNG)"
    )
    keys.append(PLOTS_KEY)
    create_table_artifact(
        manifest_rows(manifest),
        key=MANIFEST_KEY,
        description=manifest_markdown(manifest, curriculum_path),
    )
    keys.append(MANIFEST_KEY)
    if train and train.get("held_out"):  # a verl run reports no held-out table of ours
        create_table_artifact(
            eval_rows(train),
            key=EVAL_KEY,
            description=f"held-out success of run {train.get('run_id')} (base → SFT → DAPO)",
        )
        keys.append(EVAL_KEY)
    return keys
