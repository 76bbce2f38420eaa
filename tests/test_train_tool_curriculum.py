"""Tool curriculum (`training.rollout.tool_curriculum`): each scenario's own tools first, the
full set once success holds; the width is recorded per RL step and per held-out episode."""

from __future__ import annotations

import copy
import json

import pytest

from ecomrlve.config import config_from_dict
from ecomrlve.env import tool_schemas
from ecomrlve.tasks import Task
from ecomrlve.testing.env_tasks import sql_rows
from ecomrlve.testing.training import TINY_RUN, tiny_lm_pair, train_store_dir
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.curriculum import read_store_tasks, row_to_task
from ecomrlve.train.tool_curriculum import (
    FULL_WIDTH,
    SCENARIO_WIDTH,
    ToolCurriculum,
    scenario_tools,
)

ALL_TOOLS = [t["function"]["name"] for t in tool_schemas()]


def offered_in(prompt: str) -> set[str]:
    """The tool names a rendered prompt's `<tools>` block lists."""
    block = prompt.split("<tools>\n", 1)[1].split("</tools>", 1)[0]  # the block, not the prose
    return {json.loads(line)["function"]["name"] for line in block.strip().splitlines()}


def _curriculum(frame, threshold: float = 0.5, window: int = 2) -> ToolCurriculum:
    return ToolCurriculum(
        scenario_tools(frame, ALL_TOOLS), tool_schemas(), threshold=threshold, window=window
    )


@pytest.fixture(scope="module")
def store_frame():
    return read_store_tasks(train_store_dir())


def test_each_scenario_is_offered_the_tools_its_references_call(store_frame) -> None:
    own = scenario_tools(store_frame, ALL_TOOLS)
    assert set(own) == set(store_frame["scenario"].unique())
    for row in store_frame.iter_rows(named=True):
        called = {c["name"] for c in json.loads(row["reference"])}
        assert called <= set(own[row["scenario"]]), row["task_id"]
    assert all(0 < len(names) < len(ALL_TOOLS) for names in own.values()), own
    # `agent.tools` narrower than a scenario needs: only offered tools, in the offered order
    subset = ["view_cart", "get_order", "search"]
    for scenario, names in scenario_tools(store_frame, subset).items():
        assert names == [t for t in subset if t in own[scenario]]


def test_narrow_prompts_list_only_the_scenarios_tools_and_are_shorter(store_frame) -> None:
    _, tokenizer = tiny_lm_pair()
    chat = ChatFormat(tokenizer, tool_schemas())
    curriculum = _curriculum(store_frame)
    own = scenario_tools(store_frame, ALL_TOOLS)
    for row in store_frame.unique("scenario", keep="first").iter_rows(named=True):
        task = row_to_task(row)
        messages = [{"role": "user", "content": "hello"}]
        narrow = chat.render(messages, generation_prompt=True, tools=curriculum.schemas_for(task))
        full = chat.render(messages, generation_prompt=True)
        assert offered_in(narrow) == set(own[task.scenario]), task.scenario
        assert offered_in(full) == set(ALL_TOOLS)
        assert len(chat.prompt_ids(messages, curriculum.schemas_for(task))) < len(
            chat.prompt_ids(messages)
        )


def test_widens_once_mean_success_over_the_window_holds_and_never_narrows(store_frame) -> None:
    curriculum = _curriculum(store_frame, threshold=0.5, window=2)
    task = row_to_task(next(store_frame.iter_rows(named=True)))
    widths = []
    for step, success in enumerate([0.9, 0.0, 0.6, 0.4, 0.0, 0.0], start=1):
        widths.append(curriculum.width)
        curriculum.record(step, success)
    # after step 1: one step only (< window); after 2: mean 0.45; after 3: 0.3; after 4: 0.5
    assert widths == [SCENARIO_WIDTH] * 4 + [FULL_WIDTH] * 2
    assert curriculum.widened_after == 4 and curriculum.schemas_for(task) is None
    restored = _curriculum(store_frame)
    restored.load_state_dict(curriculum.state_dict())  # what a checkpoint carries
    assert restored.width == FULL_WIDTH and restored.successes == curriculum.successes


def test_config_turns_it_on_flat_or_nested_and_off_by_default() -> None:
    assert not config_from_dict({}).training.rollout.tool_curriculum
    nested = {"rollout": {"tool_curriculum": True, "tool_curriculum_window": 3}}
    flat = {"tool_curriculum": True, "tool_curriculum_window": 3}
    assert config_from_dict({"training": nested}) == config_from_dict({"training": flat})


@pytest.mark.slow  # a whole tiny SFT + DAPO run
def test_tiny_train_records_the_width_per_step_and_narrow_prompts_offer_own_tools(
    tmp_path, monkeypatch
) -> None:
    """Threshold 0 and window 2: steps 1-2 offer each scenario's own tools, step 3 all of them;
    base and SFT evaluation run narrow, the final one wide. Every prompt the loop played is
    checked against its task's scenario."""
    import ecomrlve.train.sources as sources
    from ecomrlve.train.run import train_from_config

    raw = copy.deepcopy(TINY_RUN)
    raw["training"].update(total_steps=3)
    raw["training"]["rollout"] = {
        "tool_curriculum": True,
        "tool_curriculum_threshold": 0.0,
        "tool_curriculum_window": 2,
    }
    cfg = config_from_dict(raw)
    played: list[tuple[Task, str]] = []  # every RL episode's task and prompt text
    play = sources.run_episodes

    def spy(tasks, engine, chat, *args, **kwargs):
        episodes = play(tasks, engine, chat, *args, **kwargs)
        for episode in episodes:
            prompt = episode.sequence.token_ids[: episode.sequence.prompt_length]
            played.append((episode.task, chat.tokenizer.decode(prompt)))
        return episodes

    monkeypatch.setattr(sources, "run_episodes", spy)
    data = train_store_dir()
    summary = train_from_config(cfg, data, tmp_path / "run")

    run_id = summary.run_id
    steps = sql_rows(
        data,
        "SELECT step, tools_offered FROM train_steps WHERE run_id = ? ORDER BY step",
        [run_id],
    )
    assert steps == [(1, "scenario"), (2, "scenario"), (3, "all")]
    episodes = sql_rows(
        data,
        "SELECT stage, list(DISTINCT tools_offered) FROM eval_episodes WHERE run_id = ? "
        "GROUP BY stage ORDER BY stage",
        [run_id],
    )
    assert episodes == [("base", ["scenario"]), ("final", ["all"]), ("sft", ["scenario"])]
    assert summary.held_out_tools == {"base": "scenario", "sft": "scenario", "final": "all"}

    own = scenario_tools(read_store_tasks(data), ALL_TOOLS)
    per_step = 2 * 2  # prompts_per_step x group_size, at least (dynamic sampling plays more)
    assert len(played) >= 3 * per_step
    narrow = [(t, p) for t, p in played if offered_in(p) != set(ALL_TOOLS)]
    assert narrow, "no narrow prompt was played"
    for task, prompt in narrow:
        assert offered_in(prompt) == set(own[task.scenario]), task.task_id
    # the last step's prompts (played after widening) offer every tool
    assert offered_in(played[-1][1]) == set(ALL_TOOLS)
