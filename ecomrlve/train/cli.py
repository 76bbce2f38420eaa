"""`ecomrlve train` and `ecomrlve eval`. torch/transformers load only when a command runs."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import polars as pl
import typer

from ecomrlve.cli_common import console, fail, frame_table, progress_bar, user_errors


class TrainEngine(StrEnum):
    ecomrlve = "ecomrlve"  # our DAPO loop (train/loop.py)
    verl = "verl"  # verl's trainer with ecomrlve's AgentLoop and reward


EngineOpt = typer.Option(
    TrainEngine.ecomrlve, "--engine", help="ecomrlve (our DAPO loop) or verl (verl's trainer)"
)
PrintOnlyOpt = typer.Option(
    False, "--print-only/--no-print-only", help="with --engine verl: print command and config"
)


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
    engine: TrainEngine = EngineOpt,
    print_only: bool = PrintOnlyOpt,
    gpus: int = typer.Option(1, "--gpus", help="GPUs (verl: trainer.n_gpus_per_node)"),
) -> None:
    """SFT warm-start, then DAPO on the curriculum; held-out success for base -> SFT -> DAPO.

    `--engine verl`: write a verl config from ours and run verl's trainer (`--print-only`:
    print the command and the config verl composes, on any machine)."""
    from ecomrlve.config import load_config

    with user_errors():
        cfg = load_config(config)
    if engine is TrainEngine.verl:
        from ecomrlve.integrations.cli import train_with_verl

        train_with_verl(cfg, data, curriculum, output, gpus, print_only)
        return
    if print_only:
        fail("--print-only goes with --engine verl")
    with user_errors():
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
    model: str = typer.Option(
        ...,
        "--model",
        "-m",
        help="model folder, cached hub id, tiny-qwen3; with --endpoint: the served name",
    ),
    where: str | None = typer.Option(None, "--where", help="SQL predicate over the tasks view"),
    k: int = typer.Option(4, "--k", help="k of pass^k"),
    samples: int | None = typer.Option(None, "--samples", "-n", help="samples per task (>= k)"),
    limit: int | None = typer.Option(None, "--limit", help="evaluate at most this many tasks"),
    seed: int = typer.Option(0, "--seed", help="sampling seed"),
    config: Path | None = typer.Option(None, "--config", "-c", help="env/agent settings"),
    data: Path = typer.Option(Path("data"), "--data", help="data directory"),
    endpoint: str | None = typer.Option(
        None, "--endpoint", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1"
    ),
    api_key_env: str | None = typer.Option(
        None, "--api-key-env", help="environment variable holding the endpoint's API key"
    ),
    concurrency: int = typer.Option(8, "--concurrency", help="endpoint requests in flight"),
    timeout: float = typer.Option(120.0, "--timeout", help="seconds per endpoint request"),
    retries: int = typer.Option(3, "--retries", help="retries on 429/5xx/timeouts"),
    template_kwargs: bool = typer.Option(
        True,
        "--template-kwargs/--no-template-kwargs",
        help="send chat_template_kwargs (enable_thinking) to vLLM/SGLang; off for strict APIs",
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="with --endpoint: folder for trajectories + PNG"
    ),
) -> None:
    """pass@1 and pass^k by scenario x difficulty x step band; stored in eval_results.

    With --endpoint, the model is played through an OpenAI-compatible server (vLLM, SGLang, a
    hosted API); every transcript is written as a trajectory file for `ecomrlve verify`.
    """
    from ecomrlve.config import load_config

    if k < 1:
        fail(f"--k must be >= 1, got {k}")
    if endpoint is None and (api_key_env or output):
        fail("--api-key-env and --output go with --endpoint")
    if endpoint is not None:
        _evaluate_endpoint(
            endpoint,
            model,
            data,
            config=config,
            where=where,
            k=k,
            samples=samples,
            limit=limit,
            seed=seed,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout_s=timeout,
            max_retries=retries,
            template_kwargs=template_kwargs,
            output=output,
        )
        return
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


def _evaluate_endpoint(endpoint: str, model: str, data: Path, *, config: Path | None, **kw) -> None:
    """`ecomrlve eval --endpoint`: evaluate, then print the table, latency and files."""
    from ecomrlve.config import load_config

    with user_errors():
        cfg = load_config(config)
        from ecomrlve.train.evaluate import evaluate_endpoint

        with progress_bar("eval") as update:
            result = evaluate_endpoint(endpoint, model, data, cfg=cfg, progress=update, **kw)
    report, k = result.report, kw["k"]
    table = report.table.rename({"pass_at_1": "pass@1", "pass_hat_k": f"pass^{k}"})
    console.print(
        frame_table(table, title=f"{model} @ {endpoint}: {report.samples} samples per task")
    )
    episodes = report.episodes
    total = report.overall
    console.print(
        f"{int(total['tasks'])} tasks: pass@1 {total['pass_at_1']:.3f}, pass^{k} "
        f"{total['pass_hat_k']:.3f}, mean reward {total['reward_mean']:.3f}; "
        f"{episodes['prompt_tokens'].sum():,} prompt + {episodes['completion_tokens'].sum():,} "
        f"completion tokens; turn latency p50 {result.turn_latency_p50:.3f} s, p99 "
        f"{result.turn_latency_p99:.3f} s; stored as run {result.run_id} in eval_results"
    )
    if result.errors:
        console.print(
            f"[yellow]{result.errors} episode(s) failed on the endpoint and count as failures "
            "(eval_episodes.error says why)[/yellow]"
        )
    console.print(f"trajectories {result.trajectories} (ecomrlve verify), plot {result.plot}")
