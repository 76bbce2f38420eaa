"""Same trajectories, same verdicts: the pinned set in `tests/data/verdicts/` (see
`verdict_set.py`) replayed on the pinned catalog, compared byte for byte."""

from __future__ import annotations

import collections

import pytest
from verdict_set import (
    MESSAGES,
    VERDICTS,
    load_catalog,
    load_episodes,
    messages_digest,
    verdict_line,
)

from ecomrlve.env import verify
from ecomrlve.generators.registry import scenario_names


@pytest.fixture(scope="module")
def replayed() -> list[tuple[str, str, str, str]]:
    catalog = load_catalog()
    out = []
    for kind, task, turns in load_episodes():
        verdict = verdict_line(verify(task, turns, catalog))
        out.append((kind, task.task_id, verdict, messages_digest(task, turns, catalog)))
    return out


def test_the_set_covers_every_scenario_and_kind(replayed) -> None:
    kinds = collections.Counter(kind.rstrip("0123456789") for kind, *_ in replayed)
    assert {"reference", "cut_short", "bland_answer", "decoy_answer", "fuzz"} <= set(kinds)
    scenarios = {task_id.split("-s")[0] for _, task_id, *_ in replayed}
    assert set(scenario_names()) <= scenarios
    verdicts = [v for _, _, v, _ in replayed]
    assert any('"success": true' in v for v in verdicts)
    assert any('"success": false' in v for v in verdicts)


def test_verdicts_are_byte_for_byte_the_stored_ones(replayed) -> None:
    expected = VERDICTS.read_text().splitlines()
    assert len(expected) == len(replayed)
    for line, (kind, task_id, verdict, _) in zip(expected, replayed, strict=True):
        assert verdict == line, f"{task_id} ({kind})"


def test_messages_are_the_stored_ones(replayed) -> None:
    expected = MESSAGES.read_text().splitlines()
    for digest, (kind, task_id, _, actual) in zip(expected, replayed, strict=True):
        assert actual == digest, f"{task_id} ({kind}): the env showed different messages"
