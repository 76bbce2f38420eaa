"""`ecomrlve train` and `ecomrlve eval`. torch/transformers load only when a command runs."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import typer

from ecomrlve.cli.common import console, fail, frame_table, progress_bar, user_errors
from ecomrlve.train.view import EPISODES_PER_STAGE, rescore, write_report

if TYPE_CHECKING:
    from ecomrlve.config import EcomConfig


class TrainEngine(StrEnum):
    ecomrlve = "ecomrlve"  # our DAPO loop (train/loop.py)
    verl = "verl"  # verl's trainer with ecomrlve's AgentLoop and reward


EngineOpt = typer.Option(
    TrainEngine.ecomrlve, "--engine", help="ecomrlve (our DAPO loop) or verl (verl's trainer)"
)
PrintOnlyOpt = typer.Option(
    False,
    "--print-only/--no-print-only",
    help="with --engine verl: print command and config",
    metavar="",
)


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.command("eval")(evaluate)
    app.command("view")(view)


def train(
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML config"),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="run folder (model, plots, summary)"
    ),
    data: Path | None = typer.Option(
        None, "--data", help="data directory (default: env.catalog_path's folder, else ./data)"
    ),
    curriculum: str | None = typer.Option(
        None,
        "--curriculum",
        help="curriculum under DATA/curricula (default: training.rollout.curriculum)",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="print the per-GPU memory plan and exit (0: fits, 2: does not)"
    ),
    gpus: int = typer.Option(
        1, "--gpus", help="with --dry-run: GPUs (torchrun ranks); verl: trainer.n_gpus_per_node"
    ),
    gpu_memory: float = typer.Option(80.0, "--gpu-memory", help="with --dry-run: GB per GPU"),
    engine: TrainEngine = EngineOpt,
    print_only: bool = PrintOnlyOpt,
) -> None:
    """SFT warm-start, then DAPO on the curriculum; held-out success for base -> SFT -> DAPO.

    Multi-GPU: torchrun --nproc_per_node N -m ecomrlve train ... (FSDP2, one vLLM per rank).
    `--engine verl`: write a verl config from ours and run verl's trainer (`--print-only`:
    print the command and the config verl composes, on any machine)."""
    import os

    from ecomrlve.config import load_config
    from ecomrlve.generators.registry import check_scenarios

    with user_errors():
        cfg = load_config(config)
        check_scenarios(cfg.env.scenarios)
    if engine is TrainEngine.verl:
        from ecomrlve.train.run import data_dir_for

        _train_with_verl(cfg, data_dir_for(cfg, data), curriculum, output, gpus, print_only)
        return
    if print_only:
        fail("--print-only goes with --engine verl")
    with user_errors():
        if dry_run:
            _print_memory_plan(cfg, gpus, gpu_memory)
            return
        if output is None:
            fail("--output is required (the run folder)")
        if output.exists() and not output.is_dir():
            fail(f"--output {output} exists and is not a folder")
        from ecomrlve.train.run import data_dir_for, train_from_config

        data = data_dir_for(cfg, data)
        with progress_bar("train") as update:
            summary = train_from_config(cfg, data, output, curriculum=curriculum, progress=update)
    from ecomrlve.train.distributed import exit_rank, shutdown_distributed

    if shutdown_distributed():  # under torchrun, rank 0 prints the summary
        if os.environ.get("RANK", "0") == "0":
            _print_summary(cfg, summary)
            print_report(summary.output, data)
        exit_rank(0)
    _print_summary(cfg, summary)
    print_report(summary.output, data)


def _print_summary(cfg, summary) -> None:
    rows = [
        {
            "stage": stage,
            "tasks": int(v["tasks"]),
            "pass@1": v["pass_at_1"],
            "95% CI": f"[{v['ci_low']:.2f}, {v['ci_high']:.2f}]" if "ci_low" in v else "",
            f"pass^{cfg.training.eval.samples}": v["pass_hat_k"],
            "reward": v["reward_mean"],
        }
        for stage, v in summary.held_out.items()
    ]
    if rows:
        console.print(frame_table(pl.DataFrame(rows), title="held-out success"))
    for key, gain in summary.held_out_gain.items():
        console.print(
            f"held-out pass@1 {key.replace('-', ' - ')}: {gain['diff']:+.3f} "
            f"(paired task bootstrap 95% CI [{gain['ci_low']:+.3f}, {gain['ci_high']:+.3f}], "
            f"{int(gain['tasks'])} tasks)"
        )
    quarters = summary.rl_success_quarters
    if quarters:
        console.print(
            f"training-rollout success, first -> last quarter of RL (one scenario mix): "
            f"{quarters['first']:.2f} -> {quarters['last']:.2f}, {quarters['diff']:+.3f} "
            f"(group bootstrap 95% CI "
            f"[{quarters['ci_low']:+.3f}, {quarters['ci_high']:+.3f}])"
        )
    rl_tasks = summary.rl_only_tasks or summary.train_tasks
    console.print(
        f"run {summary.run_id}: {summary.sft_steps} SFT steps on {summary.sft_sequences} "
        f"references, {summary.rl_steps} {summary.algorithm.upper()} steps on "
        f"{rl_tasks}{' reserved' if summary.rl_only_tasks else ''} of "
        f"{summary.train_tasks} tasks ({summary.task_source}) in {summary.seconds:.0f} s; "
        f"model {summary.model_dir}; "
        f"plots {summary.output / 'plots'}"
    )


def view(
    run: Path = typer.Argument(..., help="a finished training run's folder (`train --output`)"),
    data: Path | None = typer.Option(
        None,
        "--data",
        help="data directory the run was trained with (default: the folder above RUN holding "
        "a store, else ./data)",
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="HTML file to write (default RUN/report.html)"
    ),
    episodes: int = typer.Option(
        EPISODES_PER_STAGE,
        "--episodes",
        help="held-out episodes shown per stage (failed and passed in turn)",
    ),
    rescore_: bool = typer.Option(
        False,
        "--rescore",
        help="instead of the page: replay every stored held-out episode under today's verifier "
        "and print per stage how many verdicts flipped (did a verifier change move the figures?)",
    ),
) -> None:
    """Write one static HTML report of a finished run: held-out table with CIs, curves, task
    mix and an episode browser (opens from disk, offline)."""
    if rescore_:
        with user_errors():
            table = rescore(run, data)
        title = "held-out verdicts replayed under today's verifier"
        console.print(frame_table(table, title=title))
        return
    with user_errors():
        path = write_report(run, data, output, episodes=episodes)
    size = f"{path.stat().st_size / 1e3:,.0f} kB"
    console.print(f"report     {path} ({size})", highlight=False, soft_wrap=True)


def print_report(run: Path, data: Path | None) -> None:
    """The closing line of a training run: its HTML report (`view`). Training has finished and
    its results are stored, so a report that cannot be written is one warning line."""
    try:
        path = write_report(run, data)
    except Exception as err:  # the run is done: never fail it for its page
        console.print(
            f"report     not written: {err}", style="yellow", markup=False, soft_wrap=True
        )
        return
    console.print(f"report     {path}   (open it in a browser)", highlight=False, soft_wrap=True)


def _print_memory_plan(cfg, gpus: int, gpu_memory: float) -> None:
    """The --dry-run table, with the planner's choice for memory settings the config leaves
    unset; exit 2 with one line naming what would fit when it does not."""
    from ecomrlve.train.memory import choose_memory_settings, model_shape, what_would_fit

    if gpus < 1 or gpu_memory <= 0:
        fail(f"--gpus must be >= 1 and --gpu-memory > 0, got {gpus} and {gpu_memory}")
    if cfg.training.scale.lora_rank > 0 and gpus > 1:
        fail("training.scale.lora_rank > 0 is the one-GPU mode: use --gpus 1 or lora_rank: 0")
    shape = model_shape(cfg.agent.model, cfg.agent.tiny)
    choice = choose_memory_settings(cfg, gpus=gpus, gpu_memory_gb=gpu_memory, shape=shape)
    plan = choice.plan
    mode = (
        f"LoRA rank {plan.lora_rank}"
        if plan.lora_rank
        else "full fine-tune" + (", FSDP2" if gpus > 1 else "")
    )
    recompute = ", gradient checkpointing" if plan.checkpointing else ""
    table = pl.DataFrame([{"per GPU": item, "GiB": round(gib, 2)} for item, gib in plan.rows()])
    console.print(
        frame_table(
            table,
            title=f"{cfg.agent.model} ({shape.params / 1e9:.2f}B params), {mode}{recompute}, "
            f"{gpus} x {gpu_memory:g} GB",
        )
    )
    if choice.chosen and plan.fits:
        console.print(choice.describe(), soft_wrap=True)
    verdict = f"peak {plan.peak / 2**30:.1f} GiB of {plan.gpu_memory / 2**30:.1f} GiB per GPU"
    if plan.fits:
        console.print(f"fits: {verdict}")
        return
    options = what_would_fit(choice.apply(cfg), plan, shape)
    fail(
        f"does not fit: {verdict}; would fit: {', or '.join(options)}"
        if options
        else f"does not fit: {verdict}; nothing smaller found (fewer tokens, LoRA, more GPUs)"
    )


def evaluate(
    model: str | None = typer.Option(
        None,
        "--model",
        "-m",
        help="model folder, cached hub id, tiny-qwen3; with --endpoint: the served name",
    ),
    where: str | None = typer.Option(None, "--where", help="SQL predicate over the tasks view"),
    k: int = typer.Option(4, "--k", help="k of pass^k"),
    samples: int | None = typer.Option(None, "--samples", "-n", help="samples per task (>= k)"),
    limit: int | None = typer.Option(
        None,
        "--limit",
        help="evaluate at most this many tasks, spread evenly over scenario x difficulty (seeded)",
    ),
    seed: int = typer.Option(0, "--seed", help="sampling seed (and the --limit draw)"),
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
        None, "--output", "-o", help="with --endpoint: the run folder (default DATA/evals/RUN_ID)"
    ),
    resume: str | None = typer.Option(
        None,
        "--resume",
        help="continue a stopped endpoint run (its settings come from its run.json)",
    ),
) -> None:
    """pass@1 and pass^k by scenario x difficulty x step band; stored in eval_results.

    With --endpoint, the model is played through an OpenAI-compatible server (vLLM, SGLang, a
    hosted API); every transcript is written as a trajectory file for `ecomrlve verify`. Each
    episode is kept in the run folder as it finishes: a stopped run continues with
    `ecomrlve eval --resume RUN_ID` and plays only the episodes it lacks.
    \f
    Over 80 lines: its signature is the command's options (41 lines); the body checks them and
    hands over to `train.evaluate`.
    """

    if k < 1:
        fail(f"--k must be >= 1, got {k}")
    if resume is not None:
        run_settings = {
            "--where": where,
            "--samples": samples,
            "--limit": limit,
            "--config": config,
        }
        given = [name for name, value in run_settings.items() if value is not None]
        if given:
            fail(f"--resume takes its settings from the run; drop {', '.join(given)}")
        _evaluate_endpoint(endpoint, model, data, config=None, resume=resume, output=output)
        return
    if model is None:
        fail("--model is required (or --resume RUN_ID)")
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
        cfg = _eval_config(model, config)
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


def _eval_config(model: str, config: Path | None) -> EcomConfig:
    """`--config`, else the config of the run `model` comes from (its folder's config.yaml:
    the agent settings it was trained with), else the defaults."""
    from ecomrlve.config import load_config
    from ecomrlve.train.run import run_config_path

    if config is None and (config := run_config_path(model)) is not None:
        console.print(f"settings from {config} (the run the model was trained in)", highlight=False)
    return load_config(config)


def _evaluate_endpoint(
    endpoint: str | None, model: str | None, data: Path, *, config: Path | None, **kw
) -> None:
    """`ecomrlve eval --endpoint` / `--resume`: evaluate, then print the table, latency and
    files. Ctrl-C keeps the finished episodes and prints how to continue (exit 130)."""
    import time

    from ecomrlve.config import load_config

    started = {"run": None, "at": time.monotonic()}
    where = f" --output {kw['output']}" if kw.get("output") is not None else ""

    def announce(run_id: str, folder: Path, done: int, total: int) -> None:
        started["run"] = (run_id, folder, total)
        found = f", {done} found done" if done else ""
        console.print(
            f"run {run_id}: {total} episodes{found}; each is kept in {folder} as it finishes "
            f"(continue a stopped run with: ecomrlve eval --resume {run_id} --data {data}{where})",
            highlight=False,
            soft_wrap=True,
        )

    with user_errors():
        cfg = None if kw.get("resume") else load_config(config)
        from ecomrlve.train.evaluate import EpisodeJournal, evaluate_endpoint

        try:
            with progress_bar("eval") as update:
                result = evaluate_endpoint(
                    endpoint, model, data, cfg=cfg, progress=update, announce=announce, **kw
                )
        except KeyboardInterrupt:
            if started["run"] is None:
                raise
            run_id, folder, total = started["run"]
            kept = len(EpisodeJournal(folder).read())
            console.print(
                f"interrupted: run {run_id} keeps {kept} of {total} episodes in {folder}; "
                f"continue with: ecomrlve eval --resume {run_id} --data {data}{where}",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(130) from None
    report, k = result.report, result.report.k
    played = report.episodes.height - result.resumed
    seconds = time.monotonic() - started["at"]
    console.print(
        f"played {played} episodes in {seconds:.0f} s ({played / max(seconds, 1e-9):.2f} "
        f"episodes/s)"
        + (f"; {result.resumed} were done before the resume" if result.resumed else ""),
        highlight=False,
    )
    endpoint, model = result.url, result.model
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


def _train_with_verl(
    cfg: EcomConfig,
    data: Path,
    curriculum: str | None,
    output: Path | None,
    gpus: int,
    print_only: bool,
) -> None:
    """`ecomrlve train --engine verl`: write the verl config from ours and run verl's trainer.

    With `--print-only` (works on CPU): print the command and the config verl's own loader
    composes from it, write nothing. Otherwise write the AgentLoop entry and env config under
    OUTPUT/verl/ and run `python -m verl.trainer.main_ppo ...`, exiting with its status.
    """
    from ecomrlve.integrations.verl import launch as launcher

    name = curriculum or cfg.training.rollout.curriculum or cfg.data.curriculum
    out = output if output is not None else Path(data) / "runs" / f"{name}-verl"
    if gpus < 1:
        fail(f"--gpus must be >= 1, got {gpus}")
    with user_errors():
        launch = launcher.verl_launch(cfg, data, name, out, gpus=gpus)
    try:
        import hydra  # noqa: F401 - verl's config loader
        from omegaconf import OmegaConf

        composed = launcher.compose_verl_config(launch)
    except ImportError:
        versions = launcher.VERL_VERSIONS
        fail(f"--engine verl needs verl: pip install 'ecomrlve[verl]' 'verl{versions}'")
    except Exception as err:  # hydra: an override verl does not accept
        fail(f"verl rejects the generated config: {str(err).splitlines()[0]}")
    if print_only:
        sys.stdout.write("# command\n" + launch.shell() + "\n")
        for path, text in launch.files.items():
            sys.stdout.write(f"# file {path}\n{text}")
        sys.stdout.write("# config (verl's ppo_trainer composed with the command's overrides)\n")
        sys.stdout.write(OmegaConf.to_yaml(composed))
        return
    with user_errors(OSError):
        launch.write_files()
    console.print(f"launching verl: {launch.shell()}", highlight=False, soft_wrap=True)
    raise typer.Exit(launch.run(data))
