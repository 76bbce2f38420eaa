"""SFT is visible: its per-step rows (loss, supervised tokens, lr) reach the `sft_steps` table and
a loss plot, `sft_steps` sets the number of optimizer steps over reshuffled passes, and the
learning rate follows warmup then cosine decay."""

from __future__ import annotations

import itertools

import duckdb
import pytest

from ecomrlve.config import config_from_dict
from ecomrlve.store import DataPaths
from ecomrlve.train.results import RunLog
from ecomrlve.train.schedule import MIN_FACTOR, lr_factor
from ecomrlve.train.sft import sft_batches, sft_total_steps


def test_warmup_then_cosine_to_ten_percent():
    factors = [lr_factor(s, 20, warmup=4, schedule="cosine") for s in range(1, 21)]
    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    assert factors[4] == 1.0 and factors[-1] == pytest.approx(MIN_FACTOR)
    assert all(a >= b for a, b in itertools.pairwise(factors[3:]))  # decays only
    assert [lr_factor(s, 20, warmup=0, schedule="constant") for s in (1, 20)] == [1.0, 1.0]


def test_sft_steps_cycles_reshuffled_passes():
    cfg = config_from_dict({"training": {"sft_steps": 7, "sft_batch_size": 4, "seed": 3}})
    assert sft_total_steps(cfg.training, 10) == 7
    batches = list(sft_batches(10, 7, cfg.training))
    assert [len(b) for b in batches] == [4, 4, 2, 4, 4, 2, 4]  # 3 per pass of 10
    one_pass = [i for batch in batches[:3] for i in batch]
    assert sorted(one_pass) == list(range(10))  # a pass sees every reference once
    assert batches == list(sft_batches(10, 7, cfg.training))  # seeded
    epochs = config_from_dict({"training": {"sft_epochs": 2, "sft_batch_size": 4}})
    assert sft_total_steps(epochs.training, 10) == 6


def test_sft_rows_reach_the_sft_steps_table_and_the_loss_plot(tmp_path):
    rows = [
        {"step": s, "loss": 3.0 / s, "tokens": 700, "sequences": 16, "lr": 1e-3, "seconds": s}
        for s in range(1, 11)
    ]
    log = RunLog(tmp_path, "run-a")
    log.record_sft(rows)
    with duckdb.connect(str(DataPaths.of(tmp_path).db), read_only=True) as con:
        got = con.execute(
            "SELECT step, loss, tokens, lr FROM sft_steps WHERE run_id = 'run-a' ORDER BY step"
        ).fetchall()
    assert got == [(r["step"], r["loss"], r["tokens"], r["lr"]) for r in rows]
    plots = log.plot(tmp_path / "plots")
    assert (tmp_path / "plots" / "sft_loss.png") in plots
    assert (tmp_path / "plots" / "sft_loss.png").stat().st_size > 1000
