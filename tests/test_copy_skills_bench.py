"""benchmarks/copy_skills.py: its probes ask what they say they ask, the same seed gives the same
sequences, and the script trains and prints its table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ecomrlve.testing.bench import load_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "copy_skills.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT)


@pytest.fixture(scope="module")
def vocab(bench):
    return bench.Vocabulary.build(products=300, seed=0)


def _parts(sequence) -> tuple[list[int], list[int]]:
    start = sequence.loss_mask.index(1)
    assert all(sequence.loss_mask[start:])  # one trained tail, nothing trained before it
    return sequence.token_ids[:start], sequence.token_ids[start:]


def test_recall_asks_for_the_id_written_after_the_asked_key(bench, vocab) -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        context, answer = _parts(bench.recall(vocab, rng))
        text = vocab.tokenizer.decode(context)
        records, question = text.rsplit("\n", 1)
        key = question.removeprefix("? ").removesuffix(" ->")
        pairs = [line.rsplit(" ", 1) for line in records.splitlines()]
        assert 2 <= len(pairs) <= 6
        # the answer is the id of a record whose key is the asked one (keys may repeat)
        assert vocab.tokenizer.decode(answer) in {i for k, i in pairs if k == key}
        # "O" and seven digits, spelled as the tokenizer spells the id wherever it appears
        text = vocab.tokenizer.decode(answer)
        assert len(text) == 8 and text[0] == "O" and text[1:].isdigit()
        assert answer == vocab.encode(text)


def test_one_record_and_repeat_copy_from_the_context(bench, vocab) -> None:
    rng = np.random.default_rng(1)
    for _ in range(100):
        context, answer = _parts(bench.one_record(vocab, rng))
        assert vocab.tokenizer.decode(context).count("\n") == 1
        assert answer == context[context.index(answer[0]) :][: len(answer)]
        context, answer = _parts(bench.repeat(vocab, rng))
        assert context == answer and len(answer) >= 24


def test_same_seed_same_sequences(bench, vocab) -> None:
    def draw(seed: int) -> list[list[int]]:
        rng = np.random.default_rng(np.random.SeedSequence([seed]))
        return [probe(vocab, rng).token_ids for probe in bench.PROBES.values() for _ in range(5)]

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)


@pytest.mark.slow  # the script as a subprocess (builds a tokenizer and trains three models)
def test_script_prints_its_table() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--steps", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[2:]]  # under the header and rule
    assert [row[0] for row in rows] == ["repeat", "one_record", "recall"]
    assert all(row[1] == "128" and row[2] == "2" and row[4].endswith("%") for row in rows)
