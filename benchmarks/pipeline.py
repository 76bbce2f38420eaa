"""Pipeline wall time by stage, Prefect's overhead, and generation throughput with 1 vs 2 workers.

    python benchmarks/pipeline.py                      # 20k products, 2.7k tasks (its default)
    python benchmarks/pipeline.py --tasks 900 --products 5000

1. Prefect's temporary server start, timed on its own (first no-op flow minus a warm one).
2. The pipeline (training skipped) on a fresh data directory, one thread worker, by stage.
3. The baseline: the same stage functions called directly, no Prefect, same order and inputs.
   Prefect overhead = (2) − (3); extrapolated to 100k tasks with the per-chunk overhead.
4. Generation through the `generate_tasks` flow on the processes runner, 1 vs 2 workers, each
   on a fresh data directory (no cache), tasks per second.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import tempfile
import time
from pathlib import Path

from ecomrlve.config import DataConfig
from ecomrlve.flows import prefect_env, quiet_settings
from ecomrlve.generators.generate import plan_run
from ecomrlve.generators.registry import scenario_names

CHUNK_SIZE = DataConfig().chunk_size  # the pipeline's default

_ROOT = Path(tempfile.mkdtemp(prefix="ecomrlve-bench-pipeline-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)  # after prefect stops its server
prefect_env(_ROOT, console_log_level="ERROR")


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def server_start_s() -> tuple[float, float]:
    from prefect import flow

    @flow
    def noop() -> int:
        return 1

    _, cold = timed(noop)
    _, warm = timed(noop)
    return cold - warm, warm


def baseline(data: Path, products: int, seed: int, tasks: int) -> dict[str, float]:
    """The pipeline's work without Prefect: the same functions, sequential."""
    import polars as pl

    from ecomrlve import store
    from ecomrlve.catalogs import build_catalog
    from ecomrlve.flows.plots import plot_dataset
    from ecomrlve.flows.publishing import publish_run
    from ecomrlve.flows.shards import build_curriculum, catalog_predicate
    from ecomrlve.flows.validation import validate_frame
    from ecomrlve.generators.generate import generate_chunk

    stages: dict[str, float] = {}
    started = time.perf_counter()
    with store.exclusive_lock(data):
        summary = build_catalog(data, products, seed)
    stages["catalog"] = time.perf_counter() - started

    started = time.perf_counter()
    chunks, _ = plan_run(tasks, list(scenario_names()), (0, 10), None, CHUNK_SIZE)
    frames = []
    for c in chunks:
        df, _ = generate_chunk(data, seed, c.scenario, c.difficulty, c.start_index, c.count)
        valid, _ = validate_frame(
            df,
            scenario=c.scenario,
            difficulty=c.difficulty,
            min_steps=None,
            max_steps=None,
            catalog_hash=summary.catalog_hash,
        )
        frames.append(valid)
    stages["generate"] = time.perf_counter() - started

    started = time.perf_counter()
    publish_run(data, "pipeline", pl.concat(frames))
    stages["publish"] = time.perf_counter() - started

    started = time.perf_counter()
    with store.exclusive_lock(data):
        build_curriculum(data, "default", where=catalog_predicate(summary.catalog_hash))
    stages["curriculum"] = time.perf_counter() - started

    started = time.perf_counter()
    plot_dataset(data, order=scenario_names())
    stages["plots"] = time.perf_counter() - started
    return stages


def generation_throughput(data: Path, tasks: int, workers: int, seed: int) -> tuple[int, float]:
    from ecomrlve.catalogs import catalog_hash
    from ecomrlve.flows.pipeline import _generation

    chunks, _ = plan_run(tasks, list(scenario_names()), (0, 10), None, CHUNK_SIZE)
    with _generation("processes", workers, None, str(data)) as generation:
        (_, stats), seconds = timed(
            lambda: generation(
                data_dir=str(data),
                seed=seed,
                chunks=chunks,
                min_steps=None,
                max_steps=None,
                catalog_hash=catalog_hash(data),
            )
        )
    return stats.valid, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=2_700)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-workers", action="store_true", help="skip the 1 vs 2 workers run")
    args = parser.parse_args()

    from ecomrlve.config import config_from_dict
    from ecomrlve.flows.params import PipelineParams
    from ecomrlve.flows.pipeline import pipeline

    rows: list[tuple[str, float, float | None]] = []
    with quiet_settings():
        server, warm_flow = server_start_s()
        flow_data = _ROOT / "flow"
        cfg = config_from_dict(
            {
                "data": {
                    "products": args.products,
                    "tasks": args.tasks,
                    "seed": args.seed,
                    "workers": 1,
                }
            }
        )
        summary, flow_wall = timed(
            lambda: pipeline(PipelineParams(data_dir=str(flow_data), config=cfg, skip_train=True))
        )
        base = baseline(_ROOT / "plain", args.products, args.seed, args.tasks)
        for record in summary.stages:
            if record.stage != "train":
                rows.append((record.stage, record.seconds, base.get(record.stage)))
        base_wall = sum(base.values())
        rows.append(("whole pipeline (no server start)", flow_wall, base_wall))

        throughput = []
        if not args.skip_workers:
            shutil.copytree(flow_data / "catalog", _ROOT / "w1" / "catalog")
            shutil.copytree(flow_data / "catalog", _ROOT / "w2" / "catalog")
            for workers in (1, 2):
                n, seconds = generation_throughput(
                    _ROOT / f"w{workers}", args.tasks, workers, args.seed + 1
                )
                throughput.append((workers, n, seconds))

    chunks = summary.generation.chunks
    overhead = flow_wall - base_wall
    per_task = base["generate"] / max(summary.tasks, 1)
    per_chunk = max(overhead, 0.0) / max(chunks, 1)
    chunks_100k = len(plan_run(100_000, list(scenario_names()), (0, 10), None, CHUNK_SIZE)[0])
    work_100k = per_task * 100_000 + base_wall - base["generate"]
    print(f"\npipeline: {args.products:,} products, {summary.tasks:,} tasks, {chunks} chunks")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    print(f"{'stage':<34}{'prefect flow s':>16}{'plain calls s':>16}")
    print(f"{'prefect server start':<34}{server:>16.2f}{'—':>16}")
    print(f"{'warm no-op flow run':<34}{warm_flow:>16.3f}{'—':>16}")
    for stage, flow_s, base_s in rows:
        plain = f"{base_s:.2f}" if base_s is not None else "—"
        print(f"{stage:<34}{flow_s:>16.2f}{plain:>16}")
    print(
        f"\nprefect overhead: {overhead:.2f} s = {overhead / flow_wall:.1%} of this run "
        f"({per_chunk * 1000:.0f} ms per chunk)"
    )
    print(
        f"extrapolated to 100k tasks: ~{chunks_100k} chunks × {per_chunk * 1000:.0f} ms = "
        f"{chunks_100k * per_chunk:.0f} s overhead vs ~{work_100k:.0f} s of work "
        f"({chunks_100k * per_chunk / (work_100k + chunks_100k * per_chunk):.1%}; target ≤ 10%)"
    )
    if throughput:
        print(f"\n{'generation, processes runner':<34}{'tasks':>8}{'seconds':>10}{'tasks/s':>10}")
        for workers, n, seconds in throughput:
            print(f"{f'{workers} worker(s)':<34}{n:>8}{seconds:>10.2f}{n / seconds:>10.1f}")
        speedup = throughput[0][2] / throughput[1][2]
        print(f"speed-up 2 vs 1 workers: {speedup:.2f}× (2 cores, shared)")


if __name__ == "__main__":
    main()
