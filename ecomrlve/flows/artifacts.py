"""What a pipeline run shows in the Prefect UI besides its stages: the plots, a summary of the
curriculum manifest and the held-out evaluation table, as Prefect artifacts.

Artifact keys (stable, so the UI keeps their history across runs): `ecomrlve-plots`,
`ecomrlve-manifest`, `ecomrlve-eval`, and after a training run `ecomrlve-training-plots` (its
curves) and `ecomrlve-eval-scenarios` (held-out pass@1 per stage x scenario).
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
TRAINING_PLOTS_KEY = "ecomrlve-training-plots"
EVAL_SCENARIOS_KEY = "ecomrlve-eval-scenarios"
MAX_INLINE_PLOT_BYTES = 2 << 20  # larger plots are linked by path instead of embedded


def plots_markdown(plots: list[str], title: str = "Dataset plots") -> str:
    """The plots as markdown: each PNG embedded (data URI), so the UI shows it offline."""
    lines = [f"# {title}", ""]
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


def eval_scenario_rows(data_dir: str, run_id: str) -> list[dict[str, Any]]:
    """Held-out pass@1 of a training run per stage x scenario, from `eval_results`."""
    from ecomrlve import store

    con = store.connect(data_dir, read_only=True)
    try:
        rows = con.execute(
            "SELECT stage, scenario, sum(tasks) AS tasks, "
            "round(sum(pass_at_1 * tasks) / sum(tasks), 4) AS pass_at_1, "
            "round(sum(reward_mean * tasks) / sum(tasks), 4) AS reward "
            "FROM eval_results WHERE run_id = ? GROUP BY ALL ORDER BY scenario, stage",
            [run_id],
        ).fetchall()
    except Exception:  # no eval_results table yet (a run that evaluated nothing)
        return []
    finally:
        con.close()
    names = ("stage", "scenario", "tasks", "pass@1", "reward")
    return [dict(zip(names, row, strict=True)) for row in rows]


def publish_training_artifacts(data_dir: str, train: dict[str, Any]) -> list[str]:
    """The training run's curves (embedded PNGs) and its per-scenario held-out table."""
    keys = []
    plots = [p for p in train.get("plots", []) if Path(p).exists()]
    if plots:
        create_markdown_artifact(
            plots_markdown(plots, title=f"Training run {train.get('run_id')}"),
            key=TRAINING_PLOTS_KEY,
            description="training curves: reward, success by scenario, difficulty, SFT loss",
        )
        keys.append(TRAINING_PLOTS_KEY)
    rows = eval_scenario_rows(data_dir, str(train.get("run_id")))
    if rows:
        create_table_artifact(
            rows,
            key=EVAL_SCENARIOS_KEY,
            description=f"held-out pass@1 by stage and scenario, run {train.get('run_id')}",
        )
        keys.append(EVAL_SCENARIOS_KEY)
    return keys


@task(name="publish_artifacts")
def publish_artifacts_stage(
    curriculum_path: str,
    plots: list[str],
    train: dict[str, Any] | None,
    data_dir: str | None = None,
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
    if train and data_dir is not None:
        keys += publish_training_artifacts(data_dir, train)
    return keys
