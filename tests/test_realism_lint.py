"""Lint over generated text (issue 13): >= 5,000 prompts and the simulated user's replies to
them read like a customer's — no doubled words, no "size one size", no "two of the <mass
noun>", no unfilled placeholders, no ids."""

from __future__ import annotations

import pytest

from ecomrlve.generators import GenContext, generate_tasks
from ecomrlve.generators.realism import lint, reply_forms, user_replies
from ecomrlve.tasks import Task

N_TASKS = 5_400  # 600 per scenario, d 0-10


@pytest.fixture(scope="module")
def generated(small_catalog_dir):
    ctx = GenContext.load(small_catalog_dir)
    frame, _ = generate_tasks(ctx, N_TASKS, seed=13)
    return ctx, [Task.from_row(row) for row in frame.iter_rows(named=True)]


def test_prompts_pass_the_lint(generated):
    _, tasks = generated
    assert len(tasks) >= 5_000
    findings = [(t.task_id, f) for t in tasks for f in lint(t.prompt)]
    assert not findings, findings[:10]


def test_user_replies_pass_the_lint_and_vary(generated):
    ctx, tasks = generated
    findings, forms, n_replies = [], {}, 0
    for task in tasks:
        replies = user_replies(task, ctx.catalog.__contains__)
        for texts in replies.values():
            n_replies += len(texts)
            findings += [(task.task_id, f) for text in texts for f in lint(text)]
        if task.goal.typo_rate == 0:
            for key, found in reply_forms(task, replies).items():
                forms.setdefault(key, set()).update(found)
    assert n_replies >= 5_000
    assert not findings, findings[:10]
    assert all(len(found) >= 6 for found in forms.values()), {k: len(v) for k, v in forms.items()}


def test_counts_sizes_and_frames_read_right():
    import numpy as np

    from ecomrlve.generators.phrasing import size_phrase
    from ecomrlve.generators.prompts import compose, counted

    assert counted(2, "fragrance", "woody") == "two bottles of woody fragrance"
    assert counted(1, "jeans", "dark wash") == "one pair of dark wash jeans"
    assert counted(1, "t-shirts", "navy") == "one navy t-shirt"
    assert counted(3, "t-shirts", "navy") == "three navy t-shirts"
    assert counted(None, "tea", "jasmine") == "some jasmine tea"
    assert size_phrase("one size") == "" and size_phrase("M") == "in size M"
    assert size_phrase("queen") == "in queen size" and size_phrase("50 ml") == "in 50 ml"
    texts = [
        compose("Hi, please cancel {x}.", {"x": "my order"}, np.random.default_rng(i), 0.0)
        for i in range(40)
    ]
    assert all(t.startswith("Hi, please cancel my order.") for t in texts)  # no second greeting
    again = [
        compose("Please cancel {x}.", {"x": "it"}, np.random.default_rng(i), 0.0) for i in range(40)
    ]
    assert again == [
        compose("Please cancel {x}.", {"x": "it"}, np.random.default_rng(i), 0.0) for i in range(40)
    ]
    assert len(set(again)) > 20 and not any(lint(t) for t in again)
