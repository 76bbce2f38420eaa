"""`ecomrlve train` and `ecomrlve eval`. torch/transformers load only when a command runs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import typer

from ecomrlve.cli_common import console, fail, frame_table, progress_bar, user_errors


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.command("eval")(evaluate)


def train(
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML config"),
    output: Path = typer.Option(..., "--output", "-o", help="run folder (model, plots, summary)"),
    data: Path = typer.Option(Path("data"), "--data", help="data directory"),
    curriculum: str | None = typer.Option(
        None, "--curriculum", help="curriculum under DATA/curricula (default: training.curriculum)"
    ),
) -> None:
    """SFT warm-start, then DAPO on the curriculum; held-out success for base -> SFT -> DAPO."""
    from ecomrlve.config import load_config

    with user_errors():
        cfg = load_config(config)
        if output.exists() and not output.is_dir():
            fail(f"--output {output} exists and is not a folder")
        from ecomrlve.train.run import train_from_config

        with progress_bar("train") as update:
            summary = train_from_config(cfg, data, output, curriculum=curriculum, progress=update)
    rows = [
        {
            "stage": stage,
            "tasks": int(v["tasks"]),
            "pass@1": v["pass_at_1"],
            f"pass^{cfg.training.eval_samples}": v["pass_hat_k"],
            "reward": v["reward_mean"],
        }
        for stage, v in summary.held_out.items()
    ]
    if rows:
        console.print(frame_table(pl.DataFrame(rows), title="held-out success"))
    console.print(
        f"run {summary.run_id}: {summary.sft_steps} SFT steps on {summary.sft_sequences} "
        f"references, {summary.rl_steps} {summary.algorithm.upper()} steps on "
        f"{summary.train_tasks} tasks in {summary.seconds:.0f} s; model {summary.model_dir}; "
        f"plots {summary.output / 'plots'}"
    )


def evaluate(
    model: str = typer.Option(..., "--model", "-m", help="model folder, cached hub id, tiny-qwen3"),
    where: str | None = typer.Option(None, "--where", help="SQL predicate over the tasks view"),
    k: int = typer.Option(4, "--k", help="k of pass^k"),
    samples: int | None = typer.Option(None, "--samples", "-n", help="samples per task (>= k)"),
    limit: int | None = typer.Option(None, "--limit", help="evaluate at most this many tasks"),
    seed: int = typer.Option(0, "--seed", help="sampling seed"),
    config: Path | None = typer.Option(None, "--config", "-c", help="env/agent settings"),
    data: Path = typer.Option(Path("data"), "--data", help="data directory"),
) -> None:
    """pass@1 and pass^k by scenario x difficulty x step band; stored in eval_results."""
    from ecomrlve.config import load_config

    if k < 1:
        fail(f"--k must be >= 1, got {k}")
    with user_errors():
        cfg = load_config(config)
        from ecomrlve.train.evaluate import evaluate_model

        with progress_bar("eval") as update:
            run_id, report = evaluate_model(
                model,
                data,
                cfg=cfg,
                where=where,
                k=k,
                samples=samples,
                limit=limit,
                seed=seed,
                progress=update,
            )
    table = report.table.rename({"pass_at_1": "pass@1", "pass_hat_k": f"pass^{k}"})
    console.print(frame_table(table, title=f"{model}: {report.samples} samples per task"))
    total = report.overall
    console.print(
        f"{int(total['tasks'])} tasks: pass@1 {total['pass_at_1']:.3f}, pass^{k} "
        f"{total['pass_hat_k']:.3f}, mean reward {total['reward_mean']:.3f}; stored as run "
        f"{run_id} in eval_results"
    )
