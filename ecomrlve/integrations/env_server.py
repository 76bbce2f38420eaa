"""`ecomrlve env-server`: the env over HTTP and WebSocket (OpenEnv), with a token and limits.

OpenEnv's protocol: one WebSocket connection to `/ws` is one session with its own `EcomEnv`.
A session sends `reset` (an episode of a task: by `task_id`, or the `seed`-th task of the
server's selection), then `step`s (one assistant turn each: raw Qwen3 text or an OpenAI-style
message, as in the trajectory format), and may ask for `state`. The last step's observation
carries `done=True`, the reward and the verifier's verdict.

    client = EcomEnvClient("http://127.0.0.1:8000", token=token).sync()
    with client:
        opening = client.reset(task_id="cart-s0-d3-i0-a0")     # messages [system, user] + tools
        result = client.step(EcomAction(turn='<tool_call>\\n{"name": "view_cart", ...'))
        result.observation.messages                            # tool results (and user turns)

What the server adds to OpenEnv: every request (HTTP and WebSocket) needs
`Authorization: Bearer TOKEN` (`/health` excepted); a session plays at most `max_steps` turns
and `max_episode_s` seconds per episode, after which the episode ends as truncated with its
verdict; at most `max_sessions` sessions at once, and a session idle `idle_s` seconds is
evicted; HTTP bodies and WebSocket messages over `max_body_bytes` are refused. OpenEnv's HTTP
`/reset` is stateless (it shows an episode's opening); HTTP `/step` answers 400 with a pointer
to `/ws`, where multi-turn episodes run.

One shared world (`--shared-seats K`, issue 47): the server hosts one `SharedWorld` of K seats
(`ecomrlve.env.episode.shared`) instead of an episode per session. Each client has its own token
(one per seat, `seat_tokens`); a WebSocket session opened with seat k's token plays seat k: its
`reset` joins the world (the first reset after every seat has finished draws the next world,
`draw_shared_tasks`), its `step`s play that seat's turns now, in the order they arrive, under one
lock (the stock, prices and order queue stay consistent), and its `state` shows that seat's own
customer, cart and orders only. A seat whose session closes mid-episode is ended (judged as
truncated). See `SharedTable`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gc
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server import (
    Action,
    ConcurrencyConfig,
    Environment,
    HTTPEnvServer,
    Observation,
    State,
)
from pydantic import Field

from ecomrlve import store
from ecomrlve.config import EnvConfig
from ecomrlve.env.episode.environment import EcomEnv
from ecomrlve.env.episode.environment import StepResult as EnvStep
from ecomrlve.env.episode.shared import SharedWorld, draw_shared_tasks
from ecomrlve.env.shop.products import Catalog
from ecomrlve.tasks import Task

log = logging.getLogger(__name__)

TOKEN_ENV = "ECOMRLVE_ENV_TOKEN"
UNAUTHENTICATED_PATHS = frozenset({"/health"})
STATELESS_STEP = (
    "HTTP /step has no session (a fresh env per request): play episodes over the WebSocket /ws"
)
# the seat of the WebSocket session being opened (its token's), set by `_Guard`
SESSION_SEAT: ContextVar[int | None] = ContextVar("ecomrlve_session_seat", default=None)


@dataclass(frozen=True)
class ServerLimits:
    """What one server allows; every field must be positive."""

    max_sessions: int = 128
    max_steps: int = 32
    max_episode_s: float = 600.0
    idle_s: float = 300.0
    max_body_bytes: int = 256 * 1024

    def __post_init__(self) -> None:
        for name in ("max_sessions", "max_steps", "max_episode_s", "idle_s", "max_body_bytes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")


# ---- wire types ---------------------------------------------------------------------------------


class EcomAction(Action):
    """One assistant turn: raw model text, or `{"content", "tool_calls"}` (a trajectory turn)."""

    turn: str | dict[str, Any] = Field(description="the assistant turn")


class EcomObservation(Observation):
    """What the env answers. On reset: the opening messages and the tool schemas."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    task_id: str | None = None
    turn: int = 0
    verdict: dict[str, Any] | None = None
    error: str | None = None


class EcomState(State):
    """The session's episode: task, turns played and the world (cart, orders, last page)."""

    task_id: str | None = None
    world: dict[str, Any] | None = None


# ---- tasks and the per-session env --------------------------------------------------------------


class TaskPool:
    """The tasks a server plays (loaded once, shared read-only by every session)."""

    def __init__(self, rows: dict[str, dict[str, Any]]):
        if not rows:
            raise ValueError("no tasks to serve: the selection is empty")
        self.rows = rows
        self.ids = sorted(rows)

    @classmethod
    def from_store(cls, data: str | os.PathLike, where: str | None = None) -> TaskPool:
        from ecomrlve.train.curriculum import read_store_tasks

        frame = read_store_tasks(data, where)
        return cls({row["task_id"]: row for row in frame.iter_rows(named=True)})

    @classmethod
    def from_tasks(cls, tasks: list[Task]) -> TaskPool:
        return cls({t.task_id: t.to_row() for t in tasks})

    def pick(self, task_id: Any, seed: Any) -> Task:
        """The task named `task_id`, else the `seed`-th (mod the pool). Raises ValueError with
        one line for an unknown id or a value of the wrong type (a client's bad request)."""
        if task_id is not None:
            if not isinstance(task_id, str):
                raise ValueError(f"task_id must be a string, got {_short(task_id)}")
            row = self.rows.get(task_id)
            if row is None:
                raise ValueError(
                    f"unknown task_id {task_id[:80]!r} (this server has {len(self.ids)} tasks, "
                    f"e.g. {self.ids[0]!r})"
                )
        else:
            if seed is not None and (
                isinstance(seed, bool) or not isinstance(seed, int) or seed < 0
            ):
                raise ValueError(f"seed must be a non-negative integer, got {_short(seed)}")
            row = self.rows[self.ids[(seed or 0) % len(self.ids)]]
        return Task.from_row(row)


def _short(value: Any) -> str:
    """A client's value in an error line: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class SharedTable:
    """One shared world the server hosts: K seats on one shop, one session per seat.

    Every method holds one lock, so concurrent sessions (each runs in its own thread) see and
    change the shop one turn at a time: no sale is lost, no unit sold twice. The world of
    episode e is drawn from `SeedSequence([seed, e])` (`draw_shared_tasks`, `contention`); it
    opens on the first `join` after every seat of the last one has finished."""

    def __init__(
        self,
        tasks: TaskPool,
        catalog: Catalog,
        env_config: EnvConfig,
        seats: int,
        *,
        seed: int = 0,
        contention: float = 1.0,
    ):
        if isinstance(seats, bool) or not isinstance(seats, int) or seats < 1:
            raise ValueError(f"seats must be an integer >= 1, got {seats!r}")
        self.pool = [Task.from_row(tasks.rows[i]) for i in tasks.ids]
        self.catalog = catalog
        self.env_config = env_config
        self.seats = seats
        self.seed = seed
        self.contention = contention
        self.lock = threading.Lock()
        self.world: SharedWorld | None = None
        self.episode = 0  # worlds opened so far
        self.joined: set[int] = set()  # seats that have their opening in the current world
        self.held: set[int] = set()  # seats a live session plays

    def take(self, seat: int) -> None:
        """A session opens on `seat`; refused while another session plays it."""
        with self.lock:
            if seat in self.held:
                raise ValueError(f"seat {seat} is played by another session")
            self.held.add(seat)

    def leave(self, seat: int) -> None:
        """The session of `seat` closed: an episode it left unfinished ends (truncated)."""
        with self.lock:
            self.held.discard(seat)
            if self.world is not None and seat in self.joined and not self.world.seats[seat].done:
                self.world.seats[seat].env.finish()

    def join(self, seat: int) -> tuple[EcomEnv, list[dict[str, Any]]]:
        """Seat `seat`'s episode in the current world (the next world once every seat of the
        last has finished) and its opening messages."""
        with self.lock:
            world = self.world
            if world is None or all(s.done for s in world.seats):
                world = self._open()
            if seat in self.joined:
                left = len(world.live())
                raise ValueError(
                    f"seat {seat} is playing this shared episode: step until it ends"
                    if not world.seats[seat].done
                    else f"seat {seat}'s episode is over; the next shared episode opens when "
                    f"every seat has finished ({left} still playing)"
                )
            self.joined.add(seat)
            return world.seats[seat].env, self.openings[seat]

    def _open(self) -> SharedWorld:
        entropy = np.random.SeedSequence([self.seed, self.episode]).generate_state(1)
        world_seed = int(entropy[0])
        self.episode += 1
        tasks, scarce = draw_shared_tasks(
            self.pool, self.seats, world_seed, contention=self.contention
        )
        self.world = SharedWorld(
            tasks, self.catalog, self.env_config, seed=world_seed, scarce=scarce
        )
        self.openings = self.world.reset(include_tools=False)
        self.joined = set()
        return self.world

    def play(self, seat: int, turn: str | dict[str, Any]) -> EnvStep:
        """Seat `seat`'s turn, now."""
        with self.lock:
            return self.world.play(seat, turn)


@dataclass
class ServedWorld:
    """Everything sessions share: the catalog, the tasks, the env config and the limits (and,
    for one shared world, its table)."""

    catalog: Catalog
    tasks: TaskPool
    env_config: EnvConfig
    limits: ServerLimits
    shared: SharedTable | None = None


class EcomServerEnv(Environment[EcomAction, EcomObservation, EcomState]):
    """One session's env: an `EcomEnv` per episode, with the server's step and time limits."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, world: ServedWorld):
        super().__init__()
        self.world = world
        self.env: EcomEnv | None = None
        self.episode_id: str | None = None
        self.started = 0.0
        self.steps = 0
        self.closed = False
        self.seat: int | None = None  # the shared world's seat of this session's token
        self._lock = threading.Lock()

    def sit(self, seat: int | None) -> None:
        """Bind the session to its token's seat of the shared world (before any message)."""
        if seat is not None and self.world.shared is not None:
            self.world.shared.take(seat)
            self.seat = seat

    def close(self) -> None:
        """Called when the session ends or is evicted for idling: later messages are refused."""
        self.closed = True
        if self.seat is not None and self.world.shared is not None:
            self.world.shared.leave(self.seat)
            self.seat = None

    @property
    def _shop(self) -> contextlib.AbstractContextManager[Any]:
        """The shared world's lock (a seat's env reads and changes the shared shop)."""
        return self.world.shared.lock if self.seat is not None else contextlib.nullcontext()

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError(
                f"this session was closed (idle over {self.world.limits.idle_s:g} s): "
                "open a new one"
            )

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        include_tools: bool = False,
        **_: Any,
    ) -> EcomObservation:
        """Start an episode. `include_tools=False` (default): tools come as schemas in `tools`
        for the client's chat template, not as text in the system message."""
        self._check_open()
        if self.world.shared is not None:
            if self.seat is None:
                raise ValueError(
                    "this server hosts one shared world: connect over /ws with a seat's token"
                )
            with self._lock:
                self.env, messages = self.world.shared.join(self.seat)
                self.episode_id = episode_id
                self.started = time.monotonic()
                self.steps = 0
            return EcomObservation(
                messages=messages, tools=self.env.tool_schemas(), task_id=self.env.task.task_id
            )
        task = self.world.tasks.pick(task_id, seed)
        with self._lock:
            self.env = EcomEnv(task, self.world.catalog, self.world.env_config)
            messages = self.env.reset(include_tools=include_tools)
            self.episode_id = episode_id
            self.started = time.monotonic()
            self.steps = 0
        return EcomObservation(
            messages=messages, tools=self.env.tool_schemas(), task_id=task.task_id
        )

    def step(self, action: EcomAction, timeout_s: float | None = None, **_: Any) -> EcomObservation:
        self._check_open()
        with self._lock:
            env = self.env
            if env is None:
                raise ValueError("no episode: send reset first")
            limits = self.world.limits
            if env.done:
                raise ValueError("the episode is over: send reset to start another")
            elapsed = time.monotonic() - self.started
            if elapsed > limits.max_episode_s:
                return self._cut(env, f"time limit: {limits.max_episode_s:g} s per episode")
            self.steps += 1
            if self.seat is not None:
                result = self.world.shared.play(self.seat, action.turn)
            else:
                result = env.step(action.turn)
            observation = EcomObservation(
                messages=result.observation, task_id=env.task.task_id, turn=self.steps
            )
            if result.done:
                observation.done = True
                observation.reward = result.reward
                observation.verdict = result.info["verdict"].to_json()
            elif self.steps >= limits.max_steps:
                cut = self._cut(env, f"step limit: {limits.max_steps} turns per episode")
                cut.messages = observation.messages
                return cut
            return observation

    def _cut(self, env: EcomEnv, reason: str) -> EcomObservation:
        """End the episode now (truncated) and return its verdict with the reason."""
        with self._shop:
            verdict = env.finish()
        return EcomObservation(
            done=True,
            reward=verdict.reward,
            verdict=verdict.to_json(),
            task_id=env.task.task_id,
            turn=self.steps,
            error=reason,
        )

    @property
    def state(self) -> EcomState:
        with self._lock:
            if self.env is None:
                return EcomState(episode_id=self.episode_id, step_count=0)
            with self._shop:
                world = self.env.state()
            return EcomState(
                episode_id=self.episode_id,
                step_count=self.steps,
                task_id=self.env.task.task_id,
                world=world,
            )


# ---- the app: OpenEnv's routes behind a token and a body limit ---------------------------------


class _Guard:
    """ASGI middleware: the token on every HTTP request and WebSocket, bounded HTTP bodies,
    and a WebSocket client that goes away without `close` logged as one line.

    The token is accepted as `Authorization: Bearer TOKEN`, or as HTTP Basic credentials whose
    password is the token (any user name). The second is what a URL with user info sends:
    `GenericEnvClient("http://ecomrlve:TOKEN@host:8000")` (the websockets library turns the
    URL's user info into Basic credentials), so generic OpenEnv clients need no code of ours.

    A seat's token (`seat_tokens[k]`, a shared world) is accepted as well; a WebSocket opened
    with it plays seat k (`SESSION_SEAT`).
    """

    def __init__(
        self, app: Any, token: str, max_body_bytes: int, seat_tokens: tuple[str, ...] = ()
    ):
        self.app = app
        self.tokens = [token.encode(), *(t.encode() for t in seat_tokens)]
        self.max_body_bytes = max_body_bytes

    def _holder(self, header: bytes) -> int | None:
        """Which token the header carries: 0 the server's, k + 1 seat k's; None: no token."""
        scheme, _, credentials = header.partition(b" ")
        scheme = scheme.lower()
        if scheme == b"bearer":
            given = credentials.strip()
        elif scheme == b"basic":
            try:
                decoded = base64.b64decode(credentials.strip(), validate=True)
            except (binascii.Error, ValueError):
                return None
            given = decoded.partition(b":")[2]
        else:
            return None
        matches = [hmac.compare_digest(given, token) for token in self.tokens]  # each compared
        return matches.index(True) if any(matches) else None

    def _authorized(self, header: bytes) -> bool:
        return self._holder(header) is not None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or scope.get("path") in UNAUTHENTICATED_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        holder = self._holder(headers.get(b"authorization", b""))
        if holder is None:
            if kind == "websocket":  # closing before accept refuses the handshake (HTTP 403)
                await send({"type": "websocket.close", "code": 1008})
                return
            await _json_error(send, 401, "missing or wrong bearer token")
            return
        if kind == "websocket":
            seated = SESSION_SEAT.set(holder - 1 if holder else None)
            try:
                await _watched_session(self.app, scope, receive, send)
            finally:
                SESSION_SEAT.reset(seated)
            return
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            await _json_error(send, 413, f"request body over {self.max_body_bytes} bytes")
            return
        body = bytearray()
        more = True
        while more:  # read (bounded) before the app sees it, then replay
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body_bytes:
                await _json_error(send, 413, f"request body over {self.max_body_bytes} bytes")
                return
        if scope.get("path") == "/step":  # OpenEnv's HTTP /step builds a fresh env per request
            await _json_error(send, 400, STATELESS_STEP)
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _watched_session(app: Any, scope: dict, receive: Any, send: Any) -> None:
    """Run one WebSocket session; a client that leaves without `close` costs one log line.

    OpenEnv's handler closes the socket when a session ends; when the client has already
    gone, that send raised inside uvicorn and logged a ~50-line traceback per dropped
    connection. Here a send to a client that has gone is dropped (nobody can read it), and
    the session's end is logged once, with the client's address and close code."""
    said_close = False
    gone_code: int | None = None

    async def watched_receive() -> dict:
        nonlocal said_close, gone_code
        message = await receive()
        if message["type"] == "websocket.disconnect":
            gone_code = message.get("code", 1006)
        elif message["type"] == "websocket.receive" and not said_close:
            text = message.get("text") or ""
            if '"close"' in text and len(text) < 256:
                with contextlib.suppress(ValueError, AttributeError):
                    said_close = json.loads(text).get("type") == "close"
        return message

    async def watched_send(message: dict) -> None:
        nonlocal gone_code
        if gone_code is not None:
            return
        try:
            await send(message)
        except OSError:  # uvicorn's ClientDisconnected: the client is gone
            gone_code = 1006

    await app(scope, watched_receive, watched_send)
    if gone_code is not None and not said_close:
        client = scope.get("client") or ("?", 0)
        polite = gone_code in (1000, 1001)  # the socket was closed, only OpenEnv's close unsaid
        log.log(
            logging.INFO if polite else logging.WARNING,
            "session from %s:%s %s without close (code %s)",
            client[0],
            client[1],
            "ended" if polite else "dropped",
            gone_code,
        )


async def _json_error(send: Any, status: int, message: str) -> None:
    payload = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class _SeatedEnvServer(HTTPEnvServer):
    """OpenEnv's server, whose WebSocket sessions sit at their token's seat when they open."""

    async def _create_session(self) -> tuple[str, Environment]:
        # runs in the WebSocket's own task, where `_Guard` set the token's seat (the env
        # factory itself runs in an executor thread, outside that context)
        session_id, env = await super()._create_session()
        try:
            env.sit(SESSION_SEAT.get())
        except ValueError:
            await self._destroy_session(session_id)
            raise
        return session_id, env


def build_app(world: ServedWorld, token: str, seat_tokens: tuple[str, ...] = ()) -> Any:
    """The ASGI app: OpenEnv's `/ws`, `/reset`, `/step`, `/state`, `/schema`, `/health` behind
    `_Guard`. Raises ValueError on an empty token, and when the seat tokens do not give each
    seat of `world.shared` its own token."""
    from fastapi import FastAPI

    if not token or not token.strip():
        raise ValueError(f"a bearer token is required: set {TOKEN_ENV}")
    seats = world.shared.seats if world.shared is not None else 0
    if len(seat_tokens) != seats:
        raise ValueError(f"{len(seat_tokens)} seat tokens for {seats} shared seats")
    if any(not t.strip() for t in seat_tokens) or len({token, *seat_tokens}) != seats + 1:
        raise ValueError("each seat needs its own non-empty token, none the server's")
    limits = world.limits
    server = _SeatedEnvServer(
        lambda: EcomServerEnv(world),
        EcomAction,
        EcomObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=limits.max_sessions, session_timeout=limits.idle_s
        ),
    )
    app = FastAPI(title="ecomrlve env server", docs_url=None, redoc_url=None)
    _answer_bad_requests_with_one_line(app)
    server.register_routes(app)
    app.state.env_server = server
    return _Guard(app, token, limits.max_body_bytes, seat_tokens)


def _answer_bad_requests_with_one_line(app: Any) -> None:
    """A request the env refuses (unknown task, bad seed) answers 400, and one that does not
    fit the route's schema 422, each as `{"error": "one line"}`; never a 500 with a traceback.
    (OpenEnv's HTTP `/reset` lets the env's ValueError escape as a 500.)"""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    async def refused(_request: Any, err: Exception) -> JSONResponse:
        line = (str(err).splitlines() or [type(err).__name__])[0]
        return JSONResponse({"error": line}, status_code=400)

    async def malformed(_request: Any, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0] if err.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        line = first.get("msg", "invalid request")
        return JSONResponse({"error": f"{where}: {line}" if where else line}, status_code=422)

    app.add_exception_handler(ValueError, refused)
    app.add_exception_handler(RequestValidationError, malformed)


def load_world(
    data: str | os.PathLike,
    limits: ServerLimits,
    *,
    where: str | None = None,
    env_config: EnvConfig | None = None,
    shared_seats: int = 0,
    contention: float = 1.0,
    seed: int = 0,
) -> ServedWorld:
    """The store's catalog and tasks (optionally a `where` selection), loaded once; with
    `shared_seats` K > 0, one shared world of K seats drawn from them (`SharedTable`)."""
    paths = store.DataPaths.of(data)
    world = ServedWorld(
        catalog=Catalog.load(paths.root),
        tasks=TaskPool.from_store(paths.root, where),
        env_config=env_config or EnvConfig(),
        limits=limits,
    )
    return with_shared_world(world, shared_seats, contention=contention, seed=seed)


def with_shared_world(
    world: ServedWorld, seats: int, *, contention: float = 1.0, seed: int = 0
) -> ServedWorld:
    """`world` hosting one shared world of `seats` seats drawn from its tasks (0: none)."""
    if seats == 0:
        return world
    world.shared = SharedTable(
        world.tasks, world.catalog, world.env_config, seats, seed=seed, contention=contention
    )
    return world


def serve(
    world: ServedWorld,
    token: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    seat_tokens: tuple[str, ...] = (),
) -> None:
    """Run the server until interrupted (uvicorn; WebSocket messages bounded like HTTP bodies)."""
    import uvicorn

    app = build_app(world, token, seat_tokens)
    # The world (catalog, every task) lives as long as the server: out of the collector's
    # reach, a full collection no longer walks it in the middle of a step (~190 ms with
    # 2,700 tasks loaded; frozen, under 1 ms).
    gc.freeze()
    uvicorn.run(
        app,
        host=host,
        port=port,
        ws_max_size=world.limits.max_body_bytes,
        log_level="warning",
        access_log=False,
    )


# ---- the client ---------------------------------------------------------------------------------


class EcomEnvClient(EnvClient[EcomAction, EcomObservation, EcomState]):
    """OpenEnv client for `ecomrlve env-server` (sends the bearer token on connect)."""

    def __init__(self, base_url: str, token: str, **kwargs: Any):
        super().__init__(base_url, **kwargs)
        self._token = token

    async def connect(self) -> EcomEnvClient:
        from websockets.asyncio.client import connect as ws_connect

        if self._ws is not None:
            return self
        try:
            self._ws = await ws_connect(
                self._ws_url,
                open_timeout=self._connect_timeout,
                max_size=self._max_message_size,
                additional_headers={"Authorization": f"Bearer {self._token}"},
                proxy=None,
            )
        except Exception as err:
            raise ConnectionError(f"cannot connect to {self._ws_url}: {err}") from None
        return self

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        """As OpenEnv's, but a session the server has closed (full, evicted, message too
        large) raises with the server's last word instead of a bare ConnectionClosed."""
        from websockets.exceptions import ConnectionClosed

        try:
            return await super()._send_and_receive(message)
        except ConnectionClosed as closed:
            last = None
            with contextlib.suppress(Exception):
                last = json.loads(await self._ws.recv())
            if isinstance(last, dict) and last.get("type") == "error":
                data = last.get("data", {})
                raise RuntimeError(
                    f"Server error: {data.get('message')} (code: {data.get('code')})"
                ) from None
            raise ConnectionError(f"the server closed the session ({closed})") from None

    async def disconnect(self) -> None:
        """Say `close` and let the server close first (it closes the socket after `close`;
        closing ours at the same time makes the server log a disconnect error)."""
        import asyncio

        if self._ws is None:
            return
        ws, self._ws = self._ws, None
        with contextlib.suppress(Exception):
            await ws.send(json.dumps({"type": "close"}))
            await asyncio.wait_for(ws.wait_closed(), timeout=5)
        with contextlib.suppress(Exception):
            await ws.close()

    def _step_payload(self, action: EcomAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[EcomObservation]:
        observation = EcomObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(observation, payload.get("reward"), payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> EcomState:
        return EcomState(**payload)


# ---- in-process server (tests, the loopback benchmark) -----------------------------------------


@contextlib.contextmanager
def serve_in_thread(
    world: ServedWorld, token: str, seat_tokens: tuple[str, ...] = ()
) -> Iterator[str]:
    """Run the server on 127.0.0.1 at a free port in a background thread; yield its base URL.

    Stops the server (and waits for the thread) on exit.
    """
    import uvicorn

    config = uvicorn.Config(
        build_app(world, token, seat_tokens),
        host="127.0.0.1",
        port=0,
        ws_max_size=world.limits.max_body_bytes,
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="ecomrlve-env-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the env server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
