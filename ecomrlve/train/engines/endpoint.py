"""A `RolloutEngine` on OpenAI-compatible servers (vLLM, SGLang, a hosted API), over HTTP.

Two faces, one client:

* **Chat** (`run_chat_episodes`, what `ecomrlve eval --endpoint` uses): each episode talks to
  `/v1/chat/completions` with `tools=` (our schemas) and sends the env's own message list, so
  any served model is evaluated the way a user would call it. The server's tool-call parsing
  is used when it returns `tool_calls`; when it returns raw Qwen3 text, the env's parser reads
  the `<tool_call>` blocks. Episodes run concurrently (asyncio, at most `concurrency` requests
  in flight); one that fails for good is reported on its own (finish "error"), the others go on.
* **Tokens** (`EndpointEngine.generate`, the rollout interface the trainer uses): prompts go as
  token ids to `/v1/completions` with vLLM's `return_tokens_as_token_ids`, so the trainer keeps
  its chat format and loss mask and gets per-token log-probs back, spread over a pool of
  servers (request i goes to server i mod n).

Every request has a timeout; 429, 5xx, timeouts and dropped connections are retried with
exponential backoff (honouring a numeric `Retry-After`); other 4xx fail at once. Errors name
the endpoint. The API key is read by the caller from an environment variable and kept in a
private header map: it never appears in a message, a log line or a repr.

Weights (`sync_weights`): the trainer writes its current weights to a folder the servers can
read and asks each server to load them with `POST /update_weights_from_disk
{"model_path": ...}` (SGLang's endpoint; the loopback server implements it too). A server
without it stops the run with a message that says so. Each completion records the policy
version it was sampled with (`Completion.extra["policy_version"]`), counted from 0 and
incremented by every successful push: the first step toward asynchronous training with a
staleness bound.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import shutil
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from ecomrlve.config import AgentConfig, EnvConfig
from ecomrlve.env import Catalog, EcomEnv, Verdict, tool_schemas
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.tasks import Task
from ecomrlve.train.engine import Completion, FinishReason, Judged, SamplingParams, has_prompts

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
WEIGHTS_PATH = "/update_weights_from_disk"
_SEED_STRIDE = 1_000_003
_SEED_MOD = 2**31 - 1  # servers take a 32-bit seed


class EndpointError(RuntimeError):
    """A request to an endpoint failed for good (after its retries); the message names it."""


class EndpointUnreachableError(EndpointError, ValueError):
    """The endpoint does not answer at all, or refuses us (wrong URL, port, model or key).

    A `ValueError` too, so the CLI reports it as bad input: one line, exit 2."""


class WeightSyncUnsupportedError(EndpointError, ValueError):
    """A server in the pool cannot load new weights; training against it would go stale."""


def normalise_url(url: str) -> str:
    """`http://host:port` -> `http://host:port/v1`; a URL with a path is kept as given."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"endpoint {url!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)")
    return url if parts.path not in ("", "/") else f"{url}/v1"


def read_api_key(variable: str | None) -> str | None:
    """The API key from environment variable `variable` (None: no key is sent)."""
    if variable is None:
        return None
    value = os.environ.get(variable)
    if not value:
        raise ValueError(f"--api-key-env {variable}: that environment variable is not set")
    return value


@dataclass
class ChatReply:
    """One assistant turn from `/chat/completions`, with what it cost."""

    message: dict[str, Any]  # {"content": str | None, "tool_calls": [...]} as the server sent it
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int


@dataclass
class ChatEpisode(Judged):
    """One episode played over chat completions: its turns (the trajectory), verdict and cost."""

    task: Task
    sample: int
    turns: list[dict[str, Any]] = field(default_factory=list)
    verdict: Verdict | None = None
    finish: str = ""  # "answer" | "turn_limit" | "turn_length" | "token_budget" | "error"
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    turn_latencies: list[float] = field(default_factory=list)
    retries: int = 0

    def trajectory(self) -> dict[str, Any]:
        """The trajectory-file line that `ecomrlve verify` re-scores."""
        return {"task_id": self.task.task_id, "turns": self.turns}


class EndpointEngine:
    """OpenAI-compatible servers behind the `RolloutEngine` interface, plus chat turns.

    Args:
        urls: one server or a pool (`http://host:port` or a full `.../v1` base URL).
        model: the model name the servers serve.
        api_key: sent as a bearer token (read it with `read_api_key`; never pass it on argv).
        concurrency: requests in flight at once, over the whole pool.
        timeout_s: per request.
        max_retries: retries after the first attempt, on 429/5xx/timeouts/connection errors.
        backoff_s: first retry delay; doubles each retry (with jitter), capped at 30 s.
        weights_dir: where `sync_weights` writes weights for the servers to load (a folder
            they can read); None: a push is an error.
        chat_template_kwargs: sent with chat requests (vLLM and SGLang pass them to the chat
            template, e.g. `{"enable_thinking": False}`); None for servers that reject them.
    """

    def __init__(
        self,
        urls: str | Sequence[str],
        model: str,
        *,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        weights_dir: str | os.PathLike | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        urls = [urls] if isinstance(urls, str) else list(urls)
        if not urls:
            raise ValueError("an endpoint engine needs at least one server URL")
        if concurrency < 1:
            raise ValueError(f"--concurrency must be >= 1, got {concurrency}")
        if timeout_s <= 0:
            raise ValueError(f"--timeout must be > 0 seconds, got {timeout_s}")
        if max_retries < 0:
            raise ValueError(f"--retries must be >= 0, got {max_retries}")
        if not model:
            raise ValueError("--model must name the served model")
        self.urls = [normalise_url(u) for u in urls]
        self.model = model
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.weights_dir = Path(weights_dir) if weights_dir is not None else None
        self.chat_template_kwargs = chat_template_kwargs
        self.policy_version = 0
        self.__headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.__secret = api_key or None

    def __repr__(self) -> str:  # no key here, ever
        return f"EndpointEngine(urls={self.urls!r}, model={self.model!r})"

    # -----------------------------------------------------------------------------------------
    # HTTP with retries
    # -----------------------------------------------------------------------------------------

    def client(self) -> httpx.AsyncClient:
        """An HTTP client for one event loop (`async with engine.client() as http:`)."""
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=64)
        return httpx.AsyncClient(
            headers=self.__headers, timeout=self.timeout_s, limits=limits, trust_env=False
        )

    def _scrub(self, text: str) -> str:
        return text.replace(self.__secret, "***") if self.__secret else text

    async def request(
        self,
        http: httpx.AsyncClient,
        method: str,
        base: str,
        path: str,
        payload: dict[str, Any] | None = None,
        *,
        retries: int | None = None,
    ) -> tuple[dict[str, Any], float, int]:
        """(JSON body, seconds of the successful attempt, attempts). Raises `EndpointError`."""
        url = f"{base}{path}"
        retries = self.max_retries if retries is None else retries
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            problem: str
            wait: float | None = None
            try:
                response = await http.request(method, url, json=payload)
            except httpx.TimeoutException:
                problem = f"timed out after {self.timeout_s:g} s"
            except httpx.TransportError as err:
                problem = (
                    f"unreachable ({type(err).__name__}: {self._scrub(str(err)) or 'no answer'})"
                )
                if attempt == 1 and isinstance(err, httpx.ConnectError) and retries == 0:
                    raise EndpointUnreachableError(f"endpoint {base}: {problem}") from None
            else:
                latency = time.perf_counter() - started
                if response.status_code < 400:
                    try:
                        return response.json(), latency, attempt
                    except ValueError:
                        raise EndpointError(
                            f"endpoint {url}: answered {response.status_code} with a body that is "
                            "not JSON"
                        ) from None
                body = self._scrub(response.text.strip().replace("\n", " "))[:200]
                problem = f"HTTP {response.status_code}: {body}"
                if response.status_code not in RETRY_STATUS:
                    raise EndpointError(f"endpoint {url}: {problem}")
                wait = _retry_after(response.headers.get("retry-after"))
            if attempt > retries:
                raise EndpointError(f"endpoint {url}: {problem} (after {attempt} attempts)")
            delay = wait if wait is not None else self.backoff_s * 2 ** (attempt - 1)
            delay = min(delay, 30.0) * (1.0 + 0.1 * random.random())
            log.info(
                "endpoint %s: %s; retry %d/%d in %.2f s", url, problem, attempt, retries, delay
            )
            await asyncio.sleep(delay)

    def check(self) -> list[str]:
        """Ask every server for its models; raise `EndpointUnreachableError` naming the first
        one that does not answer, refuses the key, or does not serve `model`."""
        return _run(self._check())

    async def _check(self) -> list[str]:
        served: list[str] = []
        async with self.client() as http:
            for base in self.urls:
                try:
                    body, _, _ = await self.request(http, "GET", base, "/models", retries=1)
                except EndpointError as err:
                    message = str(err)
                    if "HTTP 404" in message:  # some servers have no model list: try anyway
                        continue
                    if "HTTP 401" in message or "HTTP 403" in message:
                        raise EndpointUnreachableError(
                            f"endpoint {base} refused the API key ({message.split(': ', 1)[1][:8]})"
                        ) from None
                    raise EndpointUnreachableError(message) from None
                names = [m.get("id") for m in body.get("data", []) if isinstance(m, dict)]
                if names and self.model not in names:
                    raise EndpointUnreachableError(
                        f"endpoint {base} does not serve model {self.model!r} "
                        f"(it serves: {', '.join(map(str, names[:8]))})"
                    )
                served.extend(str(n) for n in names)
        return served

    # -----------------------------------------------------------------------------------------
    # Chat completions
    # -----------------------------------------------------------------------------------------

    async def chat(
        self,
        http: httpx.AsyncClient,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        temperature: float,
        top_p: float,
        seed: int,
        tools: list[dict[str, Any]] | None = None,
        server: int = 0,
    ) -> ChatReply:
        """One assistant turn. A reply with no usable message raises `EndpointError`."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "seed": seed % _SEED_MOD,
        }
        if self.chat_template_kwargs is not None:
            payload["chat_template_kwargs"] = self.chat_template_kwargs
        if tools:
            payload["tools"] = tools
            payload["tool_choice"] = "auto"
        base = self.urls[server % len(self.urls)]
        body, latency, attempts = await self.request(
            http, "POST", base, "/chat/completions", payload
        )
        try:
            choice = body["choices"][0]
            raw = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise EndpointError(
                f"endpoint {base}: a chat reply without choices[0].message"
            ) from None
        if not isinstance(raw, dict):
            raise EndpointError(f"endpoint {base}: choices[0].message is not an object")
        message: dict[str, Any] = {"content": raw.get("content")}
        if raw.get("tool_calls"):
            message["tool_calls"] = raw["tool_calls"]  # as sent: the env judges them
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return ChatReply(
            message=message,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            prompt_tokens=_int(usage.get("prompt_tokens")),
            completion_tokens=_int(usage.get("completion_tokens")),
            latency_s=latency,
            attempts=attempts,
        )

    # -----------------------------------------------------------------------------------------
    # RolloutEngine: token ids in, token ids and log-probs out
    # -----------------------------------------------------------------------------------------

    def generate(
        self, prompts_token_ids: list[list[int]], sampling: SamplingParams
    ) -> list[Completion]:
        """One completion per prompt, in order, from `/completions` over the server pool."""
        if not has_prompts(prompts_token_ids):
            return []
        return _run(self._generate_all(prompts_token_ids, sampling))

    async def _generate_all(
        self, prompts: list[list[int]], sampling: SamplingParams
    ) -> list[Completion]:
        gate = asyncio.Semaphore(self.concurrency)
        version = self.policy_version
        async with self.client() as http:

            async def one(index: int, prompt: list[int]) -> Completion:
                async with gate:
                    return await self._complete(http, index, prompt, sampling, version)

            return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))

    async def _complete(
        self,
        http: httpx.AsyncClient,
        index: int,
        prompt: list[int],
        sampling: SamplingParams,
        version: int,
    ) -> Completion:
        base = self.urls[index % len(self.urls)]
        payload = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "seed": (
                sampling.row_seeds[index]
                if sampling.row_seeds
                else sampling.seed * _SEED_STRIDE + index
            )
            % _SEED_MOD,
            "logprobs": 0,
            "stop_token_ids": list(sampling.stop_token_ids),
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
        }
        body, latency, _ = await self.request(http, "POST", base, "/completions", payload)
        try:
            choice = body["choices"][0]
            logprobs = choice["logprobs"]
            ids = [_token_id(t) for t in logprobs["tokens"]]
            values = [float(v) for v in logprobs["token_logprobs"]]
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise EndpointError(
                f"endpoint {base}: a completion without token-id log-probs ({err}); the token "
                "rollout path needs vLLM's return_tokens_as_token_ids"
            ) from None
        finish: FinishReason = "length" if choice.get("finish_reason") == "length" else "stop"
        stops = set(sampling.stop_token_ids)
        if finish == "stop" and stops and (not ids or ids[-1] not in stops):
            # the server dropped the stop token; the chat format needs it after the turn
            ids.append(sampling.stop_token_ids[0])
            values.append(0.0)
        return Completion(
            ids,
            values,
            finish,
            extra={"policy_version": version, "server": base, "latency_s": latency},
        )

    # -----------------------------------------------------------------------------------------
    # Weights: trainer -> servers
    # -----------------------------------------------------------------------------------------

    def sync_weights(self, policy: Any, tokenizer: Any = None) -> None:
        """Write `policy` (a `save_pretrained` module) under `weights_dir` and have every server
        load it; then the policy version goes up by one. Raises `WeightSyncUnsupportedError`
        when a server cannot load weights (and no server is left half-updated silently: the
        message names the ones that did)."""
        if self.weights_dir is None:
            raise WeightSyncUnsupportedError(
                "the endpoint engine has no weights_dir: servers cannot receive weights"
            )
        if not hasattr(policy, "save_pretrained"):
            raise WeightSyncUnsupportedError(
                "the endpoint engine pushes a saved model: pass the policy module "
                f"(with save_pretrained), not a {type(policy).__name__}"
            )
        version = self.policy_version + 1
        target = self.weights_dir / f"policy-{version:06d}"
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            policy.save_pretrained(tmp)
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp)
            shutil.rmtree(target, ignore_errors=True)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _run(self._push(str(target.resolve())))
        self.policy_version = version
        previous = self.weights_dir / f"policy-{version - 1:06d}"
        shutil.rmtree(previous, ignore_errors=True)  # servers have moved on
        log.info("pushed policy version %d to %d server(s)", version, len(self.urls))

    async def _push(self, model_path: str) -> None:
        done: list[str] = []
        async with self.client() as http:
            for base in self.urls:
                root = _server_root(base)
                try:
                    await self.request(
                        http, "POST", root, WEIGHTS_PATH, {"model_path": model_path}, retries=1
                    )
                except EndpointError as err:
                    if any(f"HTTP {s}" in str(err) for s in (404, 405, 501)):
                        raise WeightSyncUnsupportedError(
                            f"server {root} cannot load new weights (no POST {WEIGHTS_PATH}); "
                            "serve the policy with SGLang or the loopback server, or use "
                            "rollout_engine hf/vllm"
                            + (f" (already updated: {', '.join(done)})" if done else "")
                        ) from None
                    raise
                done.append(root)


# ---------------------------------------------------------------------------------------------
# Episodes over chat completions
# ---------------------------------------------------------------------------------------------


def run_chat_episodes(
    tasks: list[Task],
    engine: EndpointEngine,
    catalog: Catalog,
    *,
    env_config: EnvConfig,
    agent: AgentConfig,
    samples_per_task: int = 1,
    seed: int = 0,
    progress: ProgressFn | None = None,
    skip: Collection[tuple[str, int]] = (),
    on_episode: Callable[[ChatEpisode], None] | None = None,
) -> list[ChatEpisode]:
    """Play `samples_per_task` episodes of every task against the endpoint, many at once.

    The order of the result is task-major, sample-minor, whatever order they finish in.
    `skip` names (task_id, sample) pairs already played (a resumed evaluation): they are not
    played and not returned, and the others keep the seeds they have in a full run.
    `on_episode` is called with each episode as it finishes (in finishing order)."""
    return _run(
        _chat_episodes(
            tasks,
            engine,
            catalog,
            env_config,
            agent,
            samples_per_task,
            seed,
            progress,
            frozenset(skip),
            on_episode,
        )
    )


async def _chat_episodes(
    tasks: list[Task],
    engine: EndpointEngine,
    catalog: Catalog,
    env_config: EnvConfig,
    agent: AgentConfig,
    samples: int,
    seed: int,
    progress: ProgressFn | None,
    skip: frozenset[tuple[str, int]],
    on_episode: Callable[[ChatEpisode], None] | None,
) -> list[ChatEpisode]:
    gate = asyncio.Semaphore(engine.concurrency)
    tools = tool_schemas()
    # numbered over the whole run, so a resumed episode keeps its seed
    jobs = [
        (number, task, sample)
        for number, (task, sample) in enumerate(
            (task, sample) for task in tasks for sample in range(samples)
        )
        if (task.task_id, sample) not in skip
    ]
    finished = 0
    async with engine.client() as http:

        async def one(number: int, task: Task, sample: int) -> ChatEpisode:
            nonlocal finished
            episode = await _chat_episode(
                http, gate, engine, tools, task, sample, number, catalog, env_config, agent, seed
            )
            finished += 1
            if on_episode:
                on_episode(episode)
            if progress:
                progress(ProgressEvent("eval", finished, len(jobs), unit="episodes"))
            return episode

        return list(await asyncio.gather(*(one(n, t, s) for n, t, s in jobs)))


async def _chat_episode(
    http: httpx.AsyncClient,
    gate: asyncio.Semaphore,
    engine: EndpointEngine,
    tools: list[dict[str, Any]],
    task: Task,
    sample: int,
    number: int,
    catalog: Catalog,
    env_config: EnvConfig,
    agent: AgentConfig,
    seed: int,
) -> ChatEpisode:
    """One episode: the env's messages go to the server, its replies go to the env."""
    env = EcomEnv(task, catalog, env_config)
    env.reset(include_tools=False)  # the schemas travel as tools=
    episode = ChatEpisode(task, sample)
    used = 0  # prompt + completion tokens of the last request: the episode's length so far
    turn = 0
    while True:
        budget = min(agent.max_new_tokens, agent.max_episode_tokens - used)
        if budget < 1:
            return _cut(episode, env, "token_budget")
        try:
            async with gate:
                reply = await engine.chat(
                    http,
                    _wire(env.messages),
                    max_tokens=budget,
                    temperature=agent.temperature,
                    top_p=agent.top_p,
                    seed=seed * 10_007 + number * 101 + turn,
                    tools=tools,
                    server=number,
                )
        except EndpointError as err:
            episode.error = str(err)
            log.warning("episode %s/%d: %s", task.task_id, sample, err)
            return _cut(episode, env, "error")
        turn += 1
        episode.turns.append(reply.message)
        episode.prompt_tokens += reply.prompt_tokens
        episode.completion_tokens += reply.completion_tokens
        episode.turn_latencies.append(reply.latency_s)
        episode.retries += reply.attempts - 1
        used = reply.prompt_tokens + reply.completion_tokens
        result = env.step(reply.message)
        if result.done:
            episode.verdict = result.info["verdict"]
            episode.finish = "turn_limit" if result.info.get("truncated") else "answer"
            return episode
        if reply.finish_reason == "length":
            return _cut(
                episode, env, "token_budget" if used >= agent.max_episode_tokens else "turn_length"
            )


def _cut(episode: ChatEpisode, env: EcomEnv, finish: str) -> ChatEpisode:
    """End an episode the env has not closed: judged on the turns it played (as `verify` does)."""
    episode.finish = finish
    episode.verdict = env.finish()
    return episode


def _wire(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The env's messages as a chat request: each tool result answers one of the preceding
    assistant's call ids (strict servers require it), in order."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for message in messages:
        message = dict(message)
        if message.get("role") == "assistant":
            calls = message.get("tool_calls")
            calls = calls if isinstance(calls, list) else []
            pending = [
                c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)
            ]
        elif message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending:
                pending.remove(call_id)
            elif pending:
                message["tool_call_id"] = pending.pop(0)
        out.append(message)
    return out


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _run(coro: Awaitable[T]) -> T:
    """Run a coroutine to completion from sync code, also when the caller is inside a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)  # type: ignore[arg-type]
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)  # type: ignore[arg-type]
        except BaseException as err:  # re-raised in the caller's thread
            box["error"] = err

    thread = threading.Thread(target=target, name="endpoint-loop")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and math.isfinite(value) else 0


def _token_id(token: Any) -> int:
    """vLLM's `token_id:123` (return_tokens_as_token_ids) or a bare integer."""
    if isinstance(token, int):
        return token
    if isinstance(token, str) and token.startswith("token_id:"):
        return int(token[len("token_id:") :])
    raise ValueError(f"token {token!r} is not a token id")


def _server_root(base: str) -> str:
    """`http://h:p/v1` -> `http://h:p` (admin endpoints live at the server root)."""
    return base[: -len("/v1")] if base.endswith("/v1") else base
