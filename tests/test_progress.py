"""Progress you can follow (issue 45): one event type, a plain line at least every ~20 s off a
terminal (fake clock, no sleeps), a live bar on a terminal (a pseudo-terminal), Prefect's
progress artifact, and episodes counted as they finish from before the first turn."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from ecomrlve.cli.common import PROGRESS_LINE_EVERY_S, ProgressLines
from ecomrlve.flows.progress import ProgressArtifact
from ecomrlve.progress import PhaseETA, ProgressEvent

ROOT = Path(__file__).resolve().parents[1]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _train_events(minutes: int):
    """A training run's events, one every 7 s: SFT 40 steps, then DAPO 20 steps."""
    for step in range(1, 41):
        yield 7.0, ProgressEvent("sft", step, 40, "step", {"loss": 2.0 / step, "tokens/s": 900.0})
    for step in range(1, 21):
        metrics = {"reward": 0.1 * step, "success": 0.05 * step, "groups kept": "3/4"}
        yield 7.0, ProgressEvent("dapo", step, 20, "step", metrics)


def test_event_text_and_fraction() -> None:
    event = ProgressEvent("dapo", 3, 12, "step", {"reward": 0.4567, "groups kept": "3/4"})
    assert event.text() == "dapo step 3/12, reward 0.457, groups kept 3/4"
    assert event.fraction == 0.25 and event.whole == 0.25
    assert event.replace(overall=0.9).whole == 0.9
    assert ProgressEvent.of("families", 0.2).text() == "families"


def test_phase_eta_is_the_rate_since_the_phases_first_event() -> None:
    eta = PhaseETA()
    assert eta.seconds_left(ProgressEvent("sft", 0, 10, "step"), 0.0) is None
    assert eta.seconds_left(ProgressEvent("sft", 2, 10, "step"), 20.0) == pytest.approx(80.0)
    # a new phase starts a new rate
    assert eta.seconds_left(ProgressEvent("dapo", 1, 5, "step"), 30.0) is None


def test_off_a_terminal_a_line_at_least_every_20_s_names_phase_step_and_a_metric() -> None:
    """`make run > log` used to print `pipeline: train 86%` only: each line now says the phase,
    its step i/N, a metric and an ETA, at least once a minute (here every ~20 s)."""
    clock, written = FakeClock(), []
    lines = ProgressLines("train", PROGRESS_LINE_EVERY_S, clock=clock, write=written.append)
    stamps = []
    for dt, event in _train_events(minutes=7):
        clock.now += dt
        before = len(written)
        lines.update(event)
        stamps += [clock.now] * (len(written) - before)
    run_s = 60 * 7.0
    assert len(written) >= run_s // 60
    gaps = [b - a for a, b in zip([1000.0, *stamps], stamps, strict=False)]
    assert max(gaps) <= 60.0
    for line in written:
        assert line.startswith("train ") and " step " in line, line
        assert ("loss" in line) or ("reward" in line and "groups kept" in line), line
    assert any("sft step" in line and "tokens/s" in line and "ETA" in line for line in written)
    assert any("dapo step" in line and "success" in line for line in written)


def test_the_heartbeat_says_a_silent_phase_is_alive() -> None:
    clock, written = FakeClock(), []
    lines = ProgressLines("pipeline", 20.0, clock=clock, write=written.append)
    lines.update(ProgressEvent("sft", 1, 60, "step", {"loss": 1.5}).replace(stage="train"))
    clock.now += 25.0  # no event for 25 s: the heartbeat's check prints the latest one
    lines.line_if_due()
    assert written and written[-1].startswith("pipeline") and "train: sft step 1/60" in written[-1]


def test_a_short_command_prints_no_line() -> None:
    clock, written = FakeClock(), []
    lines = ProgressLines("quick", 20.0, clock=clock, write=written.append)
    lines.update(ProgressEvent.of("done", 1.0))
    assert written == []


TTY_SCRIPT = """
from ecomrlve.cli.common import progress_bar
from ecomrlve.progress import ProgressEvent
import time
with progress_bar("train") as update:
    for step in range(1, 6):
        update(ProgressEvent("sft", step, 5, "step", {"loss": 1.0 / step}, overall=step / 10))
        time.sleep(0.15)
    for step in range(1, 4):
        update(ProgressEvent("dapo", step, 3, "step", {"reward": 0.5}, overall=0.5 + step / 6))
        time.sleep(0.15)
"""


def test_on_a_terminal_a_live_bar_shows_the_phase_and_step() -> None:
    """Through a pseudo-terminal: rich's live display (cursor hidden, lines redrawn) with the
    bar, the phase, its step and a metric."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "160", "TERM": "xterm", "PYTHONPATH": str(ROOT)}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", TTY_SCRIPT],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
        cwd=ROOT,
    )
    os.close(follower)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        proc.wait(timeout=60)
        os.close(leader)
    text = out.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert "\x1b[?25l" in text  # a live display hides the cursor while it redraws
    assert "━" in text  # the bar
    assert "sft step" in text and "loss" in text and "dapo step 3/3" in text


class FakeArtifacts:
    def __init__(self) -> None:
        self.calls: list[tuple[str, float, str]] = []

    def create_progress_artifact(self, progress, key=None, description=None):
        self.calls.append(("create", progress, description))
        return "artifact-id"

    def update_progress_artifact(self, artifact_id, progress, description=None):
        assert artifact_id == "artifact-id"
        self.calls.append(("update", progress, description))


def test_prefect_progress_artifact_follows_the_events_at_most_every_5_s() -> None:
    clock, api = FakeClock(), FakeArtifacts()
    artifact = ProgressArtifact("train-progress", clock=clock, api=api)
    for step in range(1, 21):
        clock.now += 1.0
        artifact(ProgressEvent("sft", step, 20, "step", {"loss": 1.0}, overall=step / 20))
    kinds = [c[0] for c in api.calls]
    assert kinds[0] == "create" and set(kinds[1:]) == {"update"}
    assert 3 <= len(api.calls) <= 6  # throttled, and the last event always lands
    assert api.calls[-1][1] == 100.0 and "sft step 20/20" in api.calls[-1][2]


def test_an_unreachable_prefect_api_never_stops_the_stage() -> None:
    class Down:
        def create_progress_artifact(self, *a, **k):
            raise ConnectionError("refused")

    artifact = ProgressArtifact("train-progress", api=Down())
    artifact(ProgressEvent("sft", 1, 2, "step"))
    artifact(ProgressEvent("sft", 2, 2, "step"))  # no second try, no error


def test_episodes_are_counted_from_before_the_first_turn() -> None:
    """`ecomrlve eval` sat at `starting 0%` for minutes: the first event comes before the
    first turn (0/N with the turn), then one per turn with the episodes finished."""
    from ecomrlve.config import AgentConfig, EnvConfig
    from ecomrlve.env import Catalog, reference_turns, tool_schemas
    from ecomrlve.testing.training import train_store_dir
    from ecomrlve.train.chat import ChatFormat
    from ecomrlve.train.curriculum import read_store_tasks, row_to_task
    from ecomrlve.train.engine import Completion
    from ecomrlve.train.model import build_tiny_tokenizer
    from ecomrlve.train.rollout import run_episodes

    store = train_store_dir()
    frame = read_store_tasks(store).unique("scenario", keep="first", maintain_order=True)
    tasks = [row_to_task(r) for r in frame.iter_rows(named=True)][:3]
    chat = ChatFormat(build_tiny_tokenizer([t.prompt for t in tasks] * 5, 600), tool_schemas())

    class Reference:
        def generate(self, prompts, sampling):
            out = []
            for ids in prompts:
                text = chat.tokenizer.decode(ids)
                task = next(t for t in tasks if t.prompt in text)
                turn = text.count("<|im_start|>assistant") - 1
                reply = chat.assistant_ids(reference_turns(task)[turn])
                out.append(Completion(reply, [-0.1] * len(reply), "stop"))
            return out

    events: list[ProgressEvent] = []
    run_episodes(
        tasks,
        Reference(),
        chat,
        Catalog.load(store),
        env_config=EnvConfig(),
        agent=AgentConfig(max_new_tokens=256, max_episode_tokens=8192),
        progress=events.append,
    )
    assert (events[0].done, events[0].total, events[0].metrics) == (0, 3, {"turn": 1})
    assert [e.done for e in events] == sorted(e.done for e in events)
    assert events[-1].done == 3 and events[-1].text().startswith("rollout episodes 3/3")
    assert len(events) == 1 + max(len(t.reference) + 1 for t in tasks)


@pytest.mark.slow  # a whole (one-step) tiny training run
def test_a_tiny_training_run_reports_sft_eval_and_dapo_steps_with_metrics(tmp_path) -> None:
    """What `ecomrlve train` and the pipeline's train stage show: SFT step i/N with loss and
    tokens/s, held-out episodes done/total, DAPO step j/M with reward, success, kept groups."""
    from ecomrlve.config import config_from_dict
    from ecomrlve.testing.training import TINY_RUN, train_store_dir
    from ecomrlve.train.run import train_from_config

    raw = {**TINY_RUN, "data": {"difficulty": [1, 1], "max_steps": 3}}
    raw["training"] = {**TINY_RUN["training"], "total_steps": 1, "sft_steps": 2}
    events: list[ProgressEvent] = []
    train_from_config(
        config_from_dict(raw), train_store_dir(), tmp_path / "run", progress=events.append
    )
    by_phase = {e.phase: e for e in events}  # the last event of each phase
    assert by_phase["sft"].text().startswith("sft step 2/2, loss ")
    assert "tokens/s" in by_phase["sft"].metrics
    assert by_phase["eval sft"].unit == "episodes"
    assert by_phase["eval sft"].done == by_phase["eval sft"].total > 0
    assert by_phase["dapo"].text().startswith("dapo step 1/1, reward ")
    assert {"success", "groups kept"} <= set(by_phase["dapo"].metrics)
    overall = [e.whole for e in events]
    assert overall == sorted(overall) and overall[-1] == 1.0
