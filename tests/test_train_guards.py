"""Guards on what the update trains: in a multi-turn episode, every trained position is a token
the engine sampled for the assistant, and every sampled assistant token is trained, at its own
position, with its own sampling log-prob; the model's log-prob of it is read at the position
that predicts it.

Episodes of several turns (tool calls, tool responses, a final answer) are played through the
real `run_episodes` by an engine that records every token it emits with a log-prob unique to
that token. The check then goes through what the trainer sees (`collate` -> `Batch`, and
`forward_logprobs` on a real model), never through the rollout's own bookkeeping, so a loss
mask shifted by one, tool or user tokens marked trainable, or log-probs gathered one position
off each fail here. (Sign errors in the advantages or an inverted ratio are caught by
`test_train_learning.py`, which watches the DAPO loop stop learning.)
"""

from __future__ import annotations

import pytest
import torch

from ecomrlve.config import AgentConfig, EnvConfig
from ecomrlve.env import Catalog, reference_turns, tool_schemas
from ecomrlve.testing.training import one_layer_spec, train_store_dir
from ecomrlve.train.batching import collate, forward_logprobs
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.curriculum import read_store_tasks, row_to_task
from ecomrlve.train.engine import Completion, SamplingParams
from ecomrlve.train.model import build_tiny_qwen3, build_tiny_tokenizer
from ecomrlve.train.rollout import run_episodes


class RecordingEngine:
    """Plays each task's reference turns and records, per task, every token it emits with a
    log-prob unique to that token (so a token trained at the wrong place shows up)."""

    def __init__(self, chat: ChatFormat, tasks) -> None:
        self.chat, self.tasks = chat, tasks
        self.emitted: dict[str, list[tuple[int, float]]] = {t.task_id: [] for t in tasks}
        self.counter = 0

    def generate(self, prompts_token_ids, sampling: SamplingParams) -> list[Completion]:
        out = []
        for ids in prompts_token_ids:
            text = self.chat.tokenizer.decode(ids)
            task = next(t for t in self.tasks if t.prompt in text)
            turn = text.count("<|im_start|>assistant") - 1
            reply = self.chat.assistant_ids(reference_turns(task)[turn])
            logprobs = []
            for token in reply:
                self.counter += 1
                logprobs.append(-self.counter / 1024)  # exact in fp32, unique
                self.emitted[task.task_id].append((token, logprobs[-1]))
            out.append(Completion(reply, logprobs, "stop"))
        return out

    def sync_weights(self, policy) -> None:
        pass


@pytest.fixture(scope="module")
def played():
    store = train_store_dir()
    frame = read_store_tasks(store)
    tasks = [
        row_to_task(r)
        for r in frame.sort("min_steps", "task_id", descending=[True, False])
        .unique("scenario", keep="first", maintain_order=True)
        .iter_rows(named=True)
    ]
    tasks = [t for t in tasks if len(reference_turns(t)) >= 3][:4]  # >= 2 tool calls + answer
    corpus = [t.prompt for t in tasks] * 5 + [reference_turns(t)[0] for t in tasks] * 5
    chat = ChatFormat(build_tiny_tokenizer(corpus, 600), tool_schemas())
    engine = RecordingEngine(chat, tasks)
    episodes = run_episodes(
        tasks,
        engine,
        chat,
        Catalog.load(store),
        env_config=EnvConfig(),
        agent=AgentConfig(max_new_tokens=512, max_episode_tokens=8192),
    )
    return chat, engine, episodes


def test_the_fixture_is_multi_turn_with_tool_responses(played):
    chat, _, episodes = played
    assert len(episodes) >= 3
    for episode in episodes:
        assert episode.success and len(episode.turns) >= 3
        text = chat.tokenizer.decode(episode.sequence.token_ids)
        assert text.count("<tool_response>") >= 2 and text.count("<|im_start|>user") >= 2


def test_trained_positions_are_exactly_the_sampled_assistant_tokens(played):
    chat, engine, episodes = played
    batch = collate([e.sequence for e in episodes], chat.pad_token_id)
    for row, episode in enumerate(episodes):
        trained = batch.loss_mask[row].nonzero().flatten().tolist()  # positions t -> token t+1
        got = [
            (int(batch.input_ids[row, t + 1]), float(batch.sampling_logprobs[row, t]))
            for t in trained
        ]
        # the same tokens in the same order with their own log-probs: nothing more, nothing less
        assert got == engine.emitted[episode.task.task_id]
        # and nothing else in the row is trained: prompt, tool responses, user turns, padding
        untrained = batch.loss_mask[row] == 0
        assert int(untrained.sum()) == batch.loss_mask.shape[1] - len(trained)
        assert float(batch.sampling_logprobs[row][untrained].abs().sum()) == 0.0


def test_trained_log_probs_are_read_at_the_position_that_predicts_the_token(played):
    chat, _, episodes = played
    episodes = episodes[:2]
    spec = one_layer_spec()
    model = build_tiny_qwen3(chat.tokenizer, spec).eval()  # over this fixture's vocabulary
    batch = collate([e.sequence for e in episodes], chat.pad_token_id)
    with torch.no_grad():
        got, _ = forward_logprobs(model, batch)  # (B, L-1)
    for row, episode in enumerate(episodes):
        ids = torch.tensor([episode.sequence.token_ids])  # (1, T) unpadded
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0].float()  # (T, V)
        want = torch.log_softmax(logits[:-1], dim=-1)  # (T-1, V): row t predicts token t+1
        for t, trained in enumerate(episode.sequence.loss_mask[1:]):
            token = episode.sequence.token_ids[t + 1]
            if trained:
                assert float(got[row, t]) == pytest.approx(float(want[t, token]), abs=1e-4)
            else:
                assert float(got[row, t]) == 0.0
