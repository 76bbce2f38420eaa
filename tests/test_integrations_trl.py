"""TRL: `EcomToolEnv` as `GRPOTrainer(environment_factory=...)`, `ecom_reward` reading the env's
verdict after the final answer, and the curriculum's rows through `datasets`."""

from __future__ import annotations

import os
from pathlib import Path

import integrations_fixtures
import pytest

from ecomrlve.env.episode.environment import EcomEnv
from ecomrlve.env.shop.products import Catalog
from ecomrlve.env.shop.tools import tool_schemas
from ecomrlve.integrations.trl import (
    EcomToolEnv,
    ecom_reward,
    load_curriculum_dataset,
    trl_tokenizer,
)
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


# ---------------------------------------------------------------------------------------------
# TRL out of the box (issue 31.1): `trl_tokenizer` and the docs snippet as written
# ---------------------------------------------------------------------------------------------

CALL = '<tool_call>\n{"name": "view_cart", "arguments": {}}\n</tool_call><|im_end|>'
INTEGRATIONS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"


def _tool_methods(env: EcomToolEnv) -> list:
    """The tools TRL hands the chat template: the env's public methods, as TRL lists them."""
    import inspect

    return [
        getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name != "reset" and not name.startswith("_")
    ]


def _train_to_call_a_tool(folder: Path, prompts: list[list[dict]]) -> None:
    """Save a tiny Qwen3 (the demo's template) that answers these prompts with `CALL`: a few
    dozen steps of next-token loss on the call after TRL's rendering of each prompt."""
    import torch

    from ecomrlve.testing.training import one_layer_spec
    from ecomrlve.train.model import build_tiny_qwen3, build_tiny_tokenizer, render_chat_text

    corpus = [render_chat_text(p, tool_schemas(), enable_thinking=False) for p in prompts]
    tokenizer = build_tiny_tokenizer([*corpus, CALL], 1024)
    tokenizer.save_pretrained(folder)  # the project's own template, as `ecomrlve train` saves it
    torch.manual_seed(0)
    model = build_tiny_qwen3(tokenizer, one_layer_spec(4096))
    trl_tok = trl_tokenizer(folder)
    tools = tool_schemas()
    target = trl_tok(CALL, add_special_tokens=False)["input_ids"]
    batch = []
    for prompt in prompts:
        ids = trl_tok.apply_chat_template(
            prompt, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"]
        batch.append((torch.tensor([list(ids) + target]), len(ids)))
    optim = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(40):
        for ids, start in batch:
            logits = model(ids).logits[0, start - 1 : -1]
            loss = torch.nn.functional.cross_entropy(logits, ids[0, start:])
            loss.backward()
            optim.step()
            optim.zero_grad()
    model.save_pretrained(folder)


@pytest.fixture(scope="module")
def demo_folder(curriculum_store, tmp_path_factory) -> Path:
    """A folder laid out like the demo's: `data/` with curriculum `default` and the tiny model
    under `data/runs/default/model`, trained to call `view_cart`."""
    from ecomrlve import store
    from ecomrlve.flows import shards as cur

    root = tmp_path_factory.mktemp("trl-demo")
    data = root / "data"
    os.symlink(curriculum_store, data)
    with store.exclusive_lock(data):
        cur.build_curriculum(data, "default")
    rows = load_curriculum_dataset(data, "default")
    model_dir = tmp_path_factory.mktemp("trl-model")
    _train_to_call_a_tool(model_dir, [r["prompt"] for r in rows])
    return root, model_dir


def test_trl_tokenizer_is_what_grpo_needs(curriculum_store) -> None:
    from trl.chat_template_utils import is_chat_template_prefix_preserving

    from ecomrlve.train.model import build_tiny_tokenizer

    tokenizer = trl_tokenizer(build_tiny_tokenizer(["<|im_start|> search view_cart"], 300))
    assert is_chat_template_prefix_preserving(tokenizer)  # else TRL swaps in its own template
    parsed = tokenizer.parse_response(CALL, prefix="")
    assert parsed["tool_calls"][0]["function"] == {"name": "view_cart", "arguments": {}}
    env = EcomToolEnv.factory(curriculum_store)()
    prompt = [{"role": "system", "content": "shop"}, {"role": "user", "content": "hi"}]
    methods = _tool_methods(env)
    by_name = {s["function"]["name"]: s for s in tool_schemas()}

    def render(tools, **kwargs) -> str:
        return tokenizer.apply_chat_template(
            prompt, tools=tools, tokenize=False, add_generation_prompt=True, **kwargs
        )

    # TRL passes the methods; the text is our schemas' text, in TRL's order
    assert render(methods) == render([by_name[m.__name__] for m in methods])
    # a tool that is not ours is written as derived
    assert '"name": "lookup"' in render([{"type": "function", "function": {"name": "lookup"}}])
    assert render(methods).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    thinking = render(methods, enable_thinking=True)
    assert thinking.endswith("<|im_start|>assistant\n")
    with pytest.raises(ValueError, match="not a Qwen3-template tokenizer"):
        trl_tokenizer(_no_qwen_tokenizer())
    with pytest.raises(ValueError, match="local model folder"):
        trl_tokenizer("no/such/model")


def _no_qwen_tokenizer():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"a": 0}, "a")))


def test_readme_trl_snippet_runs_as_written_and_calls_tools(demo_folder, monkeypatch) -> None:
    """The integrations page's TRL block, verbatim, from a folder laid out like the demo's:
    2 GRPO steps, and the model's `<tool_call>` blocks reach the env as tool calls."""
    import re
    import shutil

    root, model_dir = demo_folder
    target = root / "data" / "runs" / "default" / "model"
    if not target.exists():
        shutil.copytree(model_dir, target)
    text = INTEGRATIONS_PAGE.read_text(encoding="utf-8")
    start = text.index("**TRL** (`ecomrlve/integrations/trl.py`)")
    (block,) = re.findall(
        r"```python\n(.*?)```", text[start : text.index("**OpenEnv", start)], re.S
    )
    monkeypatch.chdir(root)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    scope: dict = {}
    exec(compile(block, "docs/integrations.md", "exec"), scope)
    trainer = scope["trainer"]
    assert trainer.state.global_step == 2
    frequencies = [
        row["tools/call_frequency"]
        for row in trainer.state.log_history
        if "tools/call_frequency" in row
    ]
    assert frequencies and max(frequencies) > 0
    called = [e for e in trainer.environments if e.env.record.calls]
    assert called and all(c.name == "view_cart" for e in called for c in e.env.record.calls)
