"""Checkpoints: exact resume (bitwise on CPU), RNG round trips, atomic writes, keep-last-K."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from ecomrlve.testing.training import deterministic_algorithms, small_qwen3_config
from ecomrlve.train.checkpoint import (
    CheckpointError,
    capture_rng_state,
    checkpoint_dir,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    read_trainer_state,
    restore_rng_state,
    save_checkpoint,
)


@pytest.fixture(autouse=True)
def _deterministic():
    with deterministic_algorithms():
        yield


def _tiny_model() -> torch.nn.Module:
    from transformers import Qwen3ForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        return Qwen3ForCausalLM(small_qwen3_config())


class Curriculum:
    """Stands in for the sampler: a cursor and a difficulty window that moves with rewards."""

    def __init__(self) -> None:
        self.cursor = 0
        self.window = [0, 0]

    def next_batch(self, n: int) -> list[int]:
        out = list(range(self.cursor, self.cursor + n))
        self.cursor += n
        return out

    def record(self, success_rate: float) -> None:
        if success_rate > 0.5:
            self.window[1] += 1

    def state_dict(self) -> dict:
        return {"cursor": self.cursor, "window": list(self.window)}

    def load_state_dict(self, state: dict) -> None:
        self.cursor = int(state["cursor"])
        self.window = [int(v) for v in state["window"]]


class Run:
    """A miniature RL loop whose every step draws from each RNG the real loop can touch:
    the rollout generator (sampling), numpy (rewards), python `random` (shuffling) and torch's
    global RNG (dropout-like noise), and whose data comes from a stateful curriculum."""

    def __init__(self) -> None:
        self.model = _tiny_model()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-2, weight_decay=0.1)
        self.curriculum = Curriculum()
        self.rollout = torch.Generator().manual_seed(99)
        self.np_rng = np.random.default_rng(np.random.SeedSequence([5]))

    def step(self) -> float:
        ids = self.curriculum.next_batch(4)  # (4,) data position advances
        prompts = torch.tensor([[2 + i % 40, 3, 4, 5] for i in ids])  # (4, 4)
        sampled = torch.randint(2, 48, (4, 6), generator=self.rollout)  # (4, 6)
        random.shuffle(order := list(range(4)))
        batch = torch.cat([prompts, sampled], dim=1)[order]  # (4, 10)
        noise = torch.randn(4) * 0.1  # (4,) global torch RNG
        rewards = torch.tensor(self.np_rng.random(4), dtype=torch.float32) + noise  # (4,)
        logits = self.model(input_ids=batch).logits[:, :-1]  # (4, 9, V)
        logp = torch.log_softmax(logits, -1).gather(-1, batch[:, 1:, None])[..., 0]  # (4, 9)
        loss = -(logp.mean(-1) * (rewards - rewards.mean())).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.curriculum.record(float((rewards > 0.5).float().mean()))
        return float(loss.detach())

    def save(self, root: Path, step: int, keep_last: int = 3) -> Path:
        return save_checkpoint(
            root,
            step,
            model=self.model,
            optimizer=self.optimizer,
            state={"data_position": self.curriculum.cursor},
            stateful={"curriculum": self.curriculum},
            generators={"rollout": self.rollout, "rewards": self.np_rng},
            keep_last=keep_last,
        )

    def load(self, path: Path) -> dict:
        return load_checkpoint(
            path,
            model=self.model,
            optimizer=self.optimizer,
            stateful={"curriculum": self.curriculum},
            generators={"rollout": self.rollout, "rewards": self.np_rng},
        )


def _seed_globals(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@pytest.mark.slow  # three DAPO runs
def test_resume_at_step_k_reaches_bitwise_same_weights_at_step_n(tmp_path: Path) -> None:
    n, k = 6, 3
    _seed_globals(0)
    full = Run()
    full_losses = [full.step() for _ in range(n)]

    _seed_globals(0)
    first = Run()
    first_losses = [first.step() for _ in range(k)]
    saved = first.save(tmp_path / "ckpt", k)
    del first

    _seed_globals(12345)  # a new process: every RNG elsewhere
    resumed = Run()
    resumed.rollout.manual_seed(777)
    meta = resumed.load(saved)
    assert meta["step"] == k and meta["state"] == {"data_position": 4 * k}
    resumed_losses = [resumed.step() for _ in range(n - k)]

    assert first_losses + resumed_losses == full_losses
    full_state, resumed_state = full.model.state_dict(), resumed.model.state_dict()
    for name, tensor in full_state.items():
        assert torch.equal(tensor, resumed_state[name]), name
    assert resumed.curriculum.state_dict() == full.curriculum.state_dict()
    full_opt = full.optimizer.state_dict()["state"]
    resumed_opt = resumed.optimizer.state_dict()["state"]
    for idx, slots in full_opt.items():
        for slot, value in slots.items():
            assert torch.equal(value, resumed_opt[idx][slot]), (idx, slot)


def test_rng_state_round_trip_restores_every_stream() -> None:
    gens = {
        "torch": torch.Generator().manual_seed(1),
        "numpy": np.random.default_rng(2),
        "python": random.Random(3),
    }

    def draws() -> tuple[float, ...]:  # one draw from every stream, global and named
        return (
            random.random(),
            np.random.rand(),
            torch.rand(1).item(),
            torch.rand(1, generator=gens["torch"]).item(),
            gens["numpy"].random(),
            gens["python"].random(),
        )

    _seed_globals(4)
    state = capture_rng_state(gens)
    expected = draws()
    _seed_globals(99)
    for g in gens.values():
        (g.manual_seed if isinstance(g, torch.Generator) else lambda s, g=g: None)(5)
    gens["python"].seed(8)
    restore_rng_state(state, gens)
    again = draws()
    assert again == expected


def test_restore_rejects_a_generator_of_another_kind() -> None:
    state = capture_rng_state({"rollout": torch.Generator().manual_seed(0)})
    with pytest.raises(CheckpointError, match="rollout"):
        restore_rng_state(state, {"rollout": np.random.default_rng(0)})
    with pytest.raises(CheckpointError, match="missing"):
        restore_rng_state(state, {"missing": torch.Generator()})


def test_keeps_only_the_last_k_and_ignores_interrupted_saves(tmp_path: Path) -> None:
    run = Run()
    root = tmp_path / "ckpt"
    for step in range(1, 6):
        run.step()
        run.save(root, step, keep_last=2)
    assert [s for s, _ in list_checkpoints(root)] == [4, 5]
    # A save killed half-way leaves a temp folder and an unmarked step folder: neither counts.
    (root / ".step-00000006.tmp").mkdir()
    checkpoint_dir(root, 7).mkdir()
    assert latest_checkpoint(root) == checkpoint_dir(root, 5)
    # The next save clears its own stale temp folder.
    run.save(root, 6, keep_last=2)
    assert not (root / ".step-00000006.tmp").exists()
    assert [s for s, _ in list_checkpoints(root)] == [5, 6]
    # Saving a step again (after a resume) replaces it whole.
    assert read_trainer_state(checkpoint_dir(root, 6))["state"]["data_position"] == 20
    run.step()
    run.save(root, 6, keep_last=2)
    assert read_trainer_state(checkpoint_dir(root, 6))["state"]["data_position"] == 24
    assert not [p.name for p in root.iterdir() if p.name.startswith(".")]  # no temp or old copy


def test_bad_checkpoints_are_one_line_errors(tmp_path: Path) -> None:
    run = Run()
    with pytest.raises(CheckpointError, match="not a complete checkpoint"):
        run.load(tmp_path)
    with pytest.raises(CheckpointError, match="JSON"):
        save_checkpoint(tmp_path / "c", 1, model=run.model, state={"bad": object()})
    assert latest_checkpoint(tmp_path / "c") is None
    with pytest.raises(CheckpointError, match="keep_last"):
        save_checkpoint(tmp_path / "c", 1, model=run.model, keep_last=0)


def test_lora_checkpoint_holds_only_the_adapters(tmp_path: Path) -> None:
    from ecomrlve.train.lora import apply_lora, trainable_parameters

    model = apply_lora(_tiny_model(), rank=4, seed=0)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=1e-2)
    batch = torch.randint(2, 48, (2, 8))
    model(input_ids=batch, labels=batch).loss.backward()
    optimizer.step()
    saved = save_checkpoint(tmp_path, 1, model=model, optimizer=optimizer)
    import torch.distributed.checkpoint as dcp

    keys = set(dcp.FileSystemReader(str(saved)).read_metadata().state_dict_metadata)
    model_keys = {k for k in keys if k.startswith("model.")}
    # Frozen base weights are rebuilt from the base model, not saved. (The tiny model ties
    # lm_head to the embedding; DCP keeps that alias's name, one vocab x hidden tensor.)
    base = {k for k in model_keys if "lora_" not in k}
    assert base == {"model.base_model.model.lm_head.weight"}
    assert len(model_keys - base) == 2 * 7 * 2  # A and B, 7 projections, 2 layers

    fresh = apply_lora(_tiny_model(), rank=4, seed=1)  # other adapter init
    load_checkpoint(
        saved, model=fresh, optimizer=torch.optim.AdamW(trainable_parameters(fresh), lr=1e-2)
    )
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
