"""Lockstep multi-turn rollouts: loss mask, sampling log-probs, turn limit, token budgets."""

from __future__ import annotations

import pytest

from ecomrlve.config import AgentConfig, EnvConfig
from ecomrlve.env import Catalog, reference_turns, tool_schemas
from ecomrlve.testing.training import tiny_lm_pair, train_store_dir
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.curriculum import read_store_tasks, row_to_task
from ecomrlve.train.engine import Completion, RolloutEngine, SamplingParams
from ecomrlve.train.engines.hf import HFEngine
from ecomrlve.train.model import build_tiny_tokenizer
from ecomrlve.train.rollout import reference_episode, run_episodes

LOGPROB = -0.25


class ScriptedEngine:
    """Answers each episode's turn t with script(task, t), found from the prompt text."""

    def __init__(self, chat: ChatFormat, tasks, script, *, cut: bool = False):
        self.chat, self.tasks, self.script, self.cut = chat, tasks, script, cut
        self.calls = 0

    def generate(self, prompts_token_ids, sampling: SamplingParams) -> list[Completion]:
        self.calls += 1
        out = []
        for ids in prompts_token_ids:
            text = self.chat.tokenizer.decode(ids)
            task = next(t for t in self.tasks if t.prompt in text)
            turn = text.count("<|im_start|>assistant") - 1
            if self.cut:  # never stops: a turn that runs into max_new_tokens
                reply = self.chat.encode("I keep talking " * 200)[: sampling.max_new_tokens]
                out.append(Completion(reply, [LOGPROB] * len(reply), "length"))
                continue
            reply = self.chat.assistant_ids(self.script(task, turn))
            out.append(Completion(reply, [LOGPROB] * len(reply), "stop"))
        return out

    def sync_weights(self, policy) -> None:
        pass


@pytest.fixture(scope="module")
def world():
    store = train_store_dir()
    frame = read_store_tasks(store).unique("scenario", keep="first", maintain_order=True)
    tasks = [row_to_task(r) for r in frame.iter_rows(named=True)][:4]
    corpus = [t.prompt for t in tasks] * 5 + ['{"name": "view_cart", "arguments": {}}'] * 5
    chat = ChatFormat(build_tiny_tokenizer(corpus, 600), tool_schemas())
    return Catalog.load(store), tasks, chat


def test_engines_satisfy_the_protocol():
    model, tokenizer = tiny_lm_pair()
    assert isinstance(HFEngine(model, tokenizer.pad_token_id), RolloutEngine)


def test_scripted_reference_rollout_matches_the_sft_layout(world):
    catalog, tasks, chat = world
    engine = ScriptedEngine(chat, tasks, lambda task, turn: reference_turns(task)[turn])
    agent = AgentConfig(max_new_tokens=256, max_episode_tokens=8192)
    episodes = run_episodes(
        tasks, engine, chat, catalog, env_config=EnvConfig(), agent=agent, samples_per_task=2
    )
    assert [(e.group, e.sample) for e in episodes] == [(g, s) for g in range(4) for s in range(2)]
    # lockstep: one engine call per round, as many rounds as the longest episode has turns
    assert engine.calls == max(len(t.reference) + 1 for t in tasks)
    for episode in episodes:
        assert episode.success and episode.finish == "answer" and not episode.truncated
        seq = episode.sequence
        assert len(seq.token_ids) == len(seq.loss_mask) == len(seq.logprobs)
        # exactly the assistant turns are trained, each ending in the stop token
        turns = len(reference_turns(episode.task))
        assert seq.generated_tokens == sum(
            len(chat.assistant_ids(t)) for t in reference_turns(episode.task)
        )
        assert (
            sum(1 for t, m in zip(seq.token_ids, seq.loss_mask, strict=True) if m and t == 2)
            == turns
        )
        assert all(
            (lp == LOGPROB) == bool(m) for lp, m in zip(seq.logprobs, seq.loss_mask, strict=True)
        )
        assert seq.loss_mask[: seq.prompt_length] == [0] * seq.prompt_length
        # the same token layout as the SFT data built from the reference solution
        reference = reference_episode(episode.task, chat, catalog, EnvConfig())
        assert reference.sequence.token_ids == seq.token_ids
        assert reference.sequence.loss_mask == seq.loss_mask


def test_episode_stops_at_the_turn_limit(world):
    catalog, tasks, chat = world
    view_cart = '<tool_call>\n{"name": "view_cart", "arguments": {}}\n</tool_call>'
    engine = ScriptedEngine(chat, tasks, lambda task, turn: view_cart)
    agent = AgentConfig(max_new_tokens=64, max_episode_tokens=8192)
    env_config = EnvConfig(max_steps=4)
    episodes = run_episodes(tasks[:2], engine, chat, catalog, env_config=env_config, agent=agent)
    for episode in episodes:
        assert episode.finish == "turn_limit" and not episode.success
        assert episode.steps == max(4, episode.task.min_steps + 1) == len(episode.turns)


def test_a_turn_cut_at_max_new_tokens_ends_the_episode(world):
    catalog, tasks, chat = world
    engine = ScriptedEngine(chat, tasks, None, cut=True)
    agent = AgentConfig(max_new_tokens=16, max_episode_tokens=8192)
    (episode,) = run_episodes(tasks[:1], engine, chat, catalog, env_config=EnvConfig(), agent=agent)
    assert episode.truncated and episode.verdict is not None and not episode.success
    assert episode.sequence.generated_tokens == 16 and len(episode.turns) == 1


def test_episode_token_budget(world):
    catalog, tasks, chat = world
    engine = ScriptedEngine(chat, tasks, lambda task, turn: reference_turns(task)[turn])
    task = max(tasks, key=lambda t: len(t.reference))
    prompt = reference_episode(task, chat, catalog, EnvConfig()).sequence.prompt_length
    agent = AgentConfig(max_new_tokens=256, max_episode_tokens=prompt + 8)
    (episode,) = run_episodes([task], engine, chat, catalog, env_config=EnvConfig(), agent=agent)
    assert episode.truncated and episode.finish in ("token_budget", "turn_length")
    assert len(episode.sequence) <= agent.max_episode_tokens + 1
    assert episode.sequence.generated_tokens <= 8
    assert episode.verdict is not None and not episode.success


def test_hf_rollouts_are_deterministic_per_seed(world):
    catalog, tasks, _ = world
    model, tokenizer = tiny_lm_pair()
    chat = ChatFormat(tokenizer, tool_schemas())
    engine = HFEngine(model, chat.pad_token_id)
    agent = AgentConfig(max_new_tokens=8, max_episode_tokens=8192)

    def play(seed: int):
        episodes = run_episodes(
            tasks[:2],
            engine,
            chat,
            catalog,
            env_config=EnvConfig(max_steps=2),
            agent=agent,
            samples_per_task=2,
            seed=seed,
        )
        return [e.sequence.token_ids for e in episodes], episodes

    first, episodes = play(1)
    assert play(1)[0] == first
    assert play(2)[0] != first
    for episode in episodes:
        assert episode.verdict is not None and episode.finish
        assert all(
            lp <= 0
            for lp, m in zip(episode.sequence.logprobs, episode.sequence.loss_mask, strict=True)
            if m
        )
