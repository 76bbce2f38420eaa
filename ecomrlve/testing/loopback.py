"""A loopback OpenAI-compatible server for a local model folder: tests and benchmarks only.

It answers the subset of the vLLM server's API the endpoint engine uses, with the same
response schema, from Hugging Face `generate` on the CPU (or GPU):

* `GET /v1/models`
* `POST /v1/chat/completions`: messages + `tools=` rendered with the model's own chat template
  (`chat_template_kwargs` honoured, as vLLM does), Hermes/Qwen3 `<tool_call>` blocks parsed into
  `tool_calls` the way vLLM's `hermes` parser does (`tool_parser=False`: raw text, as a server
  started without a tool parser), `usage` counted in tokens;
* `POST /v1/completions` with token-id prompts, `logprobs` and `return_tokens_as_token_ids`;
* `POST /update_weights_from_disk {"model_path"}`: load new weights (SGLang's endpoint).

Requests that arrive together are batched (one `HFEngine.generate` per batch with the same
sampling temperature/top-p), so concurrency is measurable. It binds 127.0.0.1 only, and
`serve()` stops by itself after `max_seconds`. An optional bearer key is checked.

    ecomrlve loopback --model DIR --name tiny --max-seconds 600
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' `Request` hints.
import asyncio
import concurrent.futures
import contextlib
import json
import logging
import queue
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
OPEN, CLOSE = "<tool_call>", "</tool_call>"


@dataclass
class _Job:
    prompt: list[int]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    done: concurrent.futures.Future


class LoopbackModel:
    """A model folder behind a batching worker thread.

    Args:
        model_dir: a saved model + tokenizer with a chat template.
        name: the model name clients send (default: the folder name).
        tool_parser: parse `<tool_call>` blocks into `tool_calls` (vLLM `--tool-call-parser
            hermes`); False returns the raw text.
        max_batch: requests per `generate` call.
        batch_wait_s: how long the worker waits for more requests before it starts a batch.
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        name: str | None = None,
        tool_parser: bool = True,
        max_batch: int = 32,
        batch_wait_s: float = 0.005,
    ) -> None:
        from ecomrlve.train.chat import ChatFormat
        from ecomrlve.train.engines.hf import HFEngine
        from ecomrlve.train.model import load_model_and_tokenizer

        self.model_dir = Path(model_dir)
        self.name = name or self.model_dir.name
        self.tool_parser = tool_parser
        self.max_batch = max_batch
        self.batch_wait_s = batch_wait_s
        self.model, self.tokenizer = load_model_and_tokenizer(str(model_dir), device="cpu")
        self.chat = ChatFormat(self.tokenizer, [])
        self.engine = HFEngine(self.model, self.chat.pad_token_id, max_batch_size=max_batch)
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._lock = threading.Lock()  # generation vs weight loading
        self._worker = threading.Thread(target=self._work, name="loopback-batcher", daemon=True)
        self._worker.start()
        self.weights_loaded = 0

    def close(self) -> None:
        self._jobs.put(None)
        self._worker.join(timeout=30)

    # ---- generation -----------------------------------------------------------------------------
    def submit(self, job: _Job) -> concurrent.futures.Future:
        self._jobs.put(job)
        return job.done

    def _work(self) -> None:
        while True:
            first = self._jobs.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + self.batch_wait_s
            while len(batch) < self.max_batch:
                try:
                    job = self._jobs.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if job is None:
                    self._jobs.put(None)
                    break
                batch.append(job)
            groups: dict[tuple[float, float], list[_Job]] = {}
            for job in batch:
                groups.setdefault((job.temperature, job.top_p), []).append(job)
            for (temperature, top_p), jobs in groups.items():
                self._run(jobs, temperature, top_p)

    def _run(self, jobs: list[_Job], temperature: float, top_p: float) -> None:
        from ecomrlve.train.engine import SamplingParams

        try:
            sampling = SamplingParams(
                max_new_tokens=max(j.max_tokens for j in jobs),
                temperature=temperature,
                top_p=top_p,
                stop_token_ids=self.chat.stop_token_ids,
                seed=jobs[0].seed,
            )
            with self._lock:
                completions = self.engine.generate([j.prompt for j in jobs], sampling)
        except Exception as err:  # reported to every waiting request as a 500
            for job in jobs:
                job.done.set_exception(err)
            return
        for job, completion in zip(jobs, completions, strict=True):
            ids, logprobs = completion.token_ids, completion.logprobs
            finish = completion.finish_reason
            if len(ids) > job.max_tokens:  # the batch ran longer than this request asked
                ids, logprobs, finish = ids[: job.max_tokens], logprobs[: job.max_tokens], "length"
            job.done.set_result((ids, logprobs, finish))

    def load_weights(self, model_path: str) -> None:
        from transformers import AutoModelForCausalLM

        fresh = AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True)
        with self._lock:
            self.model.load_state_dict(fresh.state_dict())
        self.weights_loaded += 1

    # ---- request handling -------------------------------------------------------------------
    def render(self, messages: list[dict[str, Any]], tools: Any, kwargs: dict[str, Any]) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=tools or None, tokenize=False, add_generation_prompt=True, **kwargs
        )

    def chat_reply(self, text: str) -> tuple[dict[str, Any], bool]:
        """(OpenAI message, has tool calls): the hermes parser's behaviour."""
        if not self.tool_parser or OPEN not in text:
            return {"role": "assistant", "content": text, "tool_calls": []}, False
        calls = []
        start = text.find(OPEN)
        content = text[:start].strip() or None
        rest = text[start:]
        try:
            while rest.strip():
                rest = rest.strip()
                if not rest.startswith(OPEN) or CLOSE not in rest:
                    raise ValueError("text outside tool calls")
                body, rest = rest[len(OPEN) :].split(CLOSE, 1)
                obj = json.loads(body)
                if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                    raise ValueError("not a call")
                calls.append(
                    {
                        "id": f"chatcmpl-tool-{uuid.uuid4().hex[:16]}",
                        "type": "function",
                        "function": {
                            "name": obj["name"],
                            "arguments": json.dumps(obj.get("arguments", {}), ensure_ascii=False),
                        },
                    }
                )
        except (ValueError, json.JSONDecodeError):
            return {"role": "assistant", "content": text, "tool_calls": []}, False
        return {"role": "assistant", "content": content, "tool_calls": calls}, True


def build_app(model: LoopbackModel, *, api_key: str | None = None):
    """The FastAPI app for `model`. Over 80 lines only because it holds the app's seven route
    handlers (each under 35 lines), closures over `model` and `api_key` as FastAPI routes are."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    app = FastAPI(title="ecomrlve loopback")

    def refuse(request: Request) -> JSONResponse | None:
        if api_key and request.headers.get("authorization") != f"Bearer {api_key}":
            return JSONResponse({"error": {"message": "invalid API key"}}, status_code=401)
        return None

    def error(message: str, status: int = 400) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "code": status}}, status_code=status)

    def reply(
        kind: str, prefix: str, choice: dict[str, Any], prompt: list[int], ids: list[int]
    ) -> dict[str, Any]:
        """The response around one choice, with vLLM's fields in its order."""
        return {
            "id": f"{prefix}-{uuid.uuid4().hex}",
            "object": kind,
            "created": int(time.time()),
            "model": model.name,
            "choices": [{"index": 0, **choice}],
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(ids),
                "total_tokens": len(prompt) + len(ids),
            },
        }

    async def generate(body: dict[str, Any], prompt: list[int]) -> tuple[list[int], list, str]:
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        job = _Job(
            prompt=prompt,
            max_tokens=max(1, max_tokens),
            temperature=float(body.get("temperature", 1.0)),
            top_p=float(body.get("top_p", 1.0)),
            seed=int(body.get("seed") or 0),
            done=concurrent.futures.Future(),
        )
        return await asyncio.wrap_future(model.submit(job))

    @app.get("/v1/models")
    async def models(request: Request):
        if (refused := refuse(request)) is not None:
            return refused
        return {"object": "list", "data": [{"id": model.name, "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        if (refused := refuse(request)) is not None:
            return refused
        body = await request.json()
        if body.get("model") != model.name:
            return error(f"model {body.get('model')!r} does not exist", 404)
        try:
            text = model.render(
                body["messages"], body.get("tools"), body.get("chat_template_kwargs") or {}
            )
        except Exception as err:  # a template that cannot render these messages
            return error(f"cannot render the messages: {err}")
        prompt = model.chat.encode(text)
        ids, _, finish = await generate(body, prompt)
        reply_text = model.chat.decode_turn(ids)
        message, has_calls = model.chat_reply(reply_text)
        if has_calls and finish == "stop":
            finish = "tool_calls"
        choice = {"message": message, "finish_reason": finish}
        return reply("chat.completion", "chatcmpl", choice, prompt, ids)

    @app.post("/v1/completions")
    async def completions(request: Request):
        if (refused := refuse(request)) is not None:
            return refused
        body = await request.json()
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            prompt = model.chat.encode(prompt)
        if not (isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)):
            return error("prompt must be a string or a non-empty list of token ids")
        ids, logprobs, finish = await generate(body, prompt)
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        tokens = [
            f"token_id:{t}" if as_ids else model.tokenizer.convert_ids_to_tokens(t) for t in ids
        ]
        choice = {
            "text": model.tokenizer.decode(ids, skip_special_tokens=False),
            "logprobs": {"tokens": tokens, "token_logprobs": logprobs},
            "finish_reason": finish,
        }
        return reply("text_completion", "cmpl", choice, prompt, ids)

    @app.post("/update_weights_from_disk")
    async def update_weights(request: Request):
        if (refused := refuse(request)) is not None:
            return refused
        body = await request.json()
        path = body.get("model_path")
        if not isinstance(path, str) or not (Path(path) / "config.json").exists():
            return error(f"model_path {path!r} is not a saved model folder")
        await asyncio.to_thread(model.load_weights, path)
        return {"success": True, "message": f"loaded {path}"}

    return app


@contextlib.contextmanager
def serve(app: Any, *, port: int = 0, max_seconds: float = 600.0) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 in a background thread; yields the base URL (`.../v1`).

    The server stops when the block exits, or by itself after `max_seconds`."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    stop_timer = threading.Timer(max_seconds, lambda: setattr(server, "should_exit", True))
    stop_timer.daemon = True
    stop_timer.start()
    deadline = time.monotonic() + 60
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        raise RuntimeError("the loopback server did not start")
    try:
        yield f"http://{HOST}:{sock.getsockname()[1]}/v1"
    finally:
        stop_timer.cancel()
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def run(
    model_dir: str,
    name: str | None = None,
    port: int = 0,
    max_seconds: float = 600.0,
    tool_parser: bool = True,
    max_batch: int = 32,
) -> None:
    """Serve `model_dir` until `max_seconds` have passed (`ecomrlve loopback`); the first line
    on stdout says where ("serving NAME at URL")."""
    model = LoopbackModel(model_dir, name=name, tool_parser=tool_parser, max_batch=max_batch)
    with serve(build_app(model), port=port, max_seconds=max_seconds) as url:
        # the benchmark reads this line
        sys.stdout.write(f"serving {model.name} at {url}\n")
        sys.stdout.flush()
        deadline = time.monotonic() + max_seconds
        while time.monotonic() < deadline:
            time.sleep(0.5)
    model.close()
