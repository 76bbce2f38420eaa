"""TRL: `EcomToolEnv` as `GRPOTrainer(environment_factory=...)`, `ecom_reward` reading the env's
verdict after the final answer, and the curriculum's rows through `datasets`."""

from __future__ import annotations

import os
from pathlib import Path

import integrations_fixtures
import pytest

from ecomrlve.env.catalog import Catalog
from ecomrlve.env.environment import EcomEnv
from ecomrlve.env.tools import tool_schemas
from ecomrlve.integrations.trl import EcomToolEnv, ecom_reward, load_curriculum_dataset
from ecomrlve.testing import env_tasks as fx

pytestmark = pytest.mark.slow  # TRL's trainer


@pytest.fixture(scope="module")
def curriculum_store(tmp_path_factory) -> Path:
    return integrations_fixtures.curriculum_store(tmp_path_factory.mktemp("trl") / "data")


def test_reference_episodes_through_the_tool_methods_earn_the_envs_reward(
    curriculum_store,
) -> None:
    train = load_curriculum_dataset(curriculum_store, "demo")
    val = load_curriculum_dataset(curriculum_store, "demo", "validation")
    assert (train.num_rows, val.num_rows) == (10, 1)
    make = EcomToolEnv.factory(curriculum_store)
    for row in [*train, *val]:
        env = make()
        assert env.reset(**row) is None  # the row's prompt already opens the chat
        task = env.env.task
        for call in task.reference:
            assert isinstance(getattr(env, call.name)(**call.arguments), str)
        final = fx.reference(task)[-1]
        completion = [{"role": "assistant", "content": final}]
        local = EcomEnv(task, Catalog.load(curriculum_store))
        local.reset()
        for turn in fx.reference(task):
            expected = local.step(turn)
        assert ecom_reward([completion], [env]) == [expected.reward]
        assert env.verdict.success


def test_a_completion_cut_mid_tool_call_is_judged_truncated(curriculum_store) -> None:
    row = next(iter(load_curriculum_dataset(curriculum_store, "demo")))
    env = EcomToolEnv.factory(curriculum_store)()
    env.reset(**row)
    cut = [{"role": "assistant", "content": "", "tool_calls": [{"name": "view_cart"}]}]
    (reward,) = ecom_reward([cut], [env])
    assert not env.verdict.success and reward == env.verdict.reward


def test_get_json_schema_derives_every_tool(curriculum_store) -> None:
    from transformers.utils import get_json_schema

    env = EcomToolEnv.factory(curriculum_store)()
    for schema in tool_schemas():
        ours = schema["function"]
        derived = get_json_schema(getattr(env, ours["name"]))["function"]
        assert derived["name"] == ours["name"]
        assert derived["description"] == ours["description"]
        props = derived["parameters"]["properties"]
        assert set(props) == set(ours["parameters"]["properties"])
        assert set(derived["parameters"].get("required", [])) == set(ours["parameters"]["required"])
    search = get_json_schema(env.search)["function"]["parameters"]["properties"]["filters"]
    assert search["type"] == "object" and "max_ship_days (integer)" in search["description"]


def test_grpo_trainer_runs_one_step_with_the_environment(curriculum_store, tmp_path) -> None:
    """TRL's own GRPOTrainer, a tiny random Qwen3 and TRL's training-ready Qwen3 template."""
    import trl
    from trl import GRPOConfig, GRPOTrainer

    from ecomrlve.testing.training import one_layer_spec
    from ecomrlve.train.model import build_tiny_qwen3, build_tiny_tokenizer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    train = load_curriculum_dataset(curriculum_store, "demo").select(range(2))
    tokenizer = build_tiny_tokenizer([m["content"] for r in train for m in r["prompt"]], 1024)
    template = Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
    tokenizer.chat_template = template.read_text()
    spec = one_layer_spec(4096)
    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=16,
        max_steps=1,
        max_tool_calling_iterations=2,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=build_tiny_qwen3(tokenizer, spec),
        args=args,
        processing_class=tokenizer,
        train_dataset=train,
        environment_factory=EcomToolEnv.factory(curriculum_store),
        reward_funcs=[ecom_reward],
    )
    trainer.train()
    logged = trainer.state.log_history[0]
    assert trainer.state.global_step == 1
    # the reward is the verifier's: the random model's garbage fails, with the format penalty
    assert "rewards/ecom_reward/mean" in logged
    envs = trainer.environments
    assert envs and all(e.verdict is not None and not e.verdict.success for e in envs)
    assert logged["rewards/ecom_reward/mean"] == pytest.approx(
        sum(e.verdict.reward for e in envs) / len(envs), abs=1e-6
    )
