"""A finished training run written in seconds, without a model (`ecomrlve view`'s tests).

`scripted_run` fills a store and a run folder the way `ecomrlve train` does (the same writers:
`evaluate.report_of` + `store_report`, `RunLog`, the `train_runs` row, `summary.json` last), but
its held-out episodes are scripted: a task is solved by its reference turns or answered with a
bluff (a final message that claims what was not done), judged by the real verifier.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml

from ecomrlve import store
from ecomrlve.config import EcomConfig
from ecomrlve.env import Catalog, verify
from ecomrlve.tasks import Task
from ecomrlve.testing.env_tasks import all_tasks, reference, write_store

RUN_ID = "scripted-run"
# a final message that claims an action never taken, with markup a page must escape
BLUFF = (
    "Done! I have cancelled your order and refunded you in full. "
    '<script>alert("bluff")</script> & <b>thanks</b>'
)
# which (task index, sample) each stage solves: base none, SFT every other task, final all but one
SOLVED = {
    "base": lambda index, sample: False,
    "sft": lambda index, sample: index % 2 == 0,
    "final": lambda index, sample: (index, sample) != (0, 1),
}
SAMPLES = 2


def _played(task: Task, group: int, sample: int, turns: list[str], catalog: Any, cfg: EcomConfig):
    from ecomrlve.train.chat import TokenSequence
    from ecomrlve.train.rollout import Episode

    verdict = verify(task, turns, catalog, cfg.env)
    return Episode(task, group, sample, TokenSequence(), list(turns), verdict, finish="answer")


def scripted_run(root: Path) -> tuple[Path, Path]:
    """(data folder, run folder) under `root`: the fixture store (`write_store`: 9 tasks, one
    per goal kind), held-out episodes of base, SFT and final (2 samples each), SFT and RL step
    rows with their plots, `config.yaml`, the `train_runs` row and `summary.json`."""
    data, output = root / "data", root / "data" / "runs" / "scripted"
    catalog = write_store(data)
    tasks = all_tasks(catalog)
    cfg = EcomConfig()
    output.mkdir(parents=True)
    (output / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    held_out = _scripted_held_out(data, tasks, catalog, cfg)
    plots = _scripted_training(data, output, tasks)
    summary = {
        "run_id": RUN_ID,
        "output": str(output),
        "model_dir": str(output / "model"),
        "model": "scripted",
        "algorithm": "dapo",
        "curriculum": None,
        "train_tasks": 0,
        "rl_only_tasks": 0,
        "task_source": "scripted",
        "heldout_tasks": len(tasks),
        "sft_sequences": 40,
        "sft_steps": 5,
        "rl_steps": 3,
        "held_out": held_out,
        "held_out_gain": {},
        "rl_success_quarters": None,
        "plots": [str(p) for p in plots],
        "seconds": 1.0,
    }
    store.atomic_write_bytes(json.dumps(summary, indent=2).encode(), output / "summary.json")
    return data, output


def _scripted_held_out(
    data: Path, tasks: list[Task], catalog: Catalog, cfg: EcomConfig
) -> dict[str, dict[str, float]]:
    """Play and store each stage's held-out episodes (`SOLVED` says which succeed); the
    overall metrics per stage."""
    from ecomrlve.train.evaluate import report_of, store_report

    held_out: dict[str, dict[str, float]] = {}
    for stage, solved in SOLVED.items():
        episodes = [
            _played(
                task,
                index,
                sample,
                reference(task) if solved(index, sample) else [BLUFF],
                catalog,
                cfg,
            )
            for index, task in enumerate(tasks)
            for sample in range(SAMPLES)
        ]
        report = report_of(episodes, stage=stage, k=SAMPLES, samples=SAMPLES, tools_offered="all")
        store_report(data, report, run_id=RUN_ID, model="scripted", where=None)
        held_out[stage] = report.overall
    return held_out


def _scripted_training(data: Path, output: Path, tasks: list[Task]) -> list[Path]:
    """SFT and RL step rows, their plots and the `train_runs` row; the plots' paths."""
    from ecomrlve.train.results import RUN_SCHEMA, RunLog, append

    run_log = RunLog(data, RUN_ID)
    run_log.record_sft(
        [
            {"step": s, "loss": 2.0 / s, "tokens": 500, "sequences": 8, "lr": 1e-3, "seconds": s}
            for s in range(1, 6)
        ]
    )
    for step in (1, 2, 3):
        run_log.record_step(
            {"step": step, "reward_mean": 0.2 * step, "success_rate": 0.25 * step},
            [
                {"step": step, "scenario": t.scenario, "episodes": 2, "success_rate": 0.5}
                | {"reward_mean": 0.4, "window_low": 0, "window_high": step}
                for t in tasks[:3]
            ],
            [],
        )
    plots = run_log.plot(output / "plots")
    append(
        data,
        "train_runs",
        [
            {
                "run_id": RUN_ID,
                "output": store.data_relative(data, output),
                "model": "scripted",
                "algorithm": "dapo",
                "steps": 3,
                "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
        ],
        RUN_SCHEMA,
    )
    return plots
