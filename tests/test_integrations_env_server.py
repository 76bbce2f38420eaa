"""`ecomrlve env-server` over loopback: reference episodes, auth, limits, caps, eviction."""

from __future__ import annotations

import re
import threading
import time

import httpx
import pytest
from typer.testing import CliRunner

from ecomrlve.cli import app
from ecomrlve.env.episode.environment import EcomEnv
from ecomrlve.integrations.env_server import EcomAction, serve_in_thread
from ecomrlve.testing import env_tasks as fx
from ecomrlve.testing.served import served_world, sync_client

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def tasks(catalog):
    return [*fx.all_tasks(catalog), fx.event_task(catalog)]  # one shop that changes mid-episode


@pytest.fixture(scope="module")
def url(catalog, tasks):
    with serve_in_thread(served_world(catalog, tasks, max_sessions=8), TOKEN) as base:
        yield base


def _client(url: str, token: str = TOKEN):
    return sync_client(url, token)


def test_reference_episodes_over_the_websocket_match_the_local_env(url, catalog, tasks) -> None:
    with _client(url) as client:
        for task in tasks:
            opening = client.reset(task_id=task.task_id).observation
            assert opening.task_id == task.task_id and not opening.done
            assert [m["role"] for m in opening.messages] == ["system", "user"]
            assert "<tools>" not in opening.messages[0]["content"]  # tools come as schemas
            assert {t["function"]["name"] for t in opening.tools} >= {"search", "checkout"}
            for turn in fx.reference(task):
                result = client.step(EcomAction(turn=turn))
            assert result.done
            local = EcomEnv(task, catalog)
            local.reset()
            for turn in fx.reference(task):
                expected = local.step(turn)
            assert result.observation.verdict == expected.info["verdict"].to_json()
            assert result.reward == expected.reward and result.observation.verdict["success"]
            state = client.state()
            assert state.task_id == task.task_id and state.world["done"] is True


def test_seed_picks_a_task_and_bad_requests_get_clear_errors(url, tasks) -> None:
    with _client(url) as client:
        with pytest.raises(RuntimeError, match="no episode: send reset first"):
            client.step(EcomAction(turn="hello"))
        picked = client.reset(seed=1).observation.task_id
        assert picked == sorted(t.task_id for t in tasks)[1]
        with pytest.raises(RuntimeError, match="unknown task_id"):
            client.reset(task_id="nope")
        client.step(EcomAction(turn="Done."))  # no tool call: the final answer
        with pytest.raises(RuntimeError, match="episode is over"):
            client.step(EcomAction(turn="again"))


def test_the_bearer_token_is_required(url) -> None:
    assert httpx.get(f"{url}/health").status_code == 200  # liveness needs no token
    assert httpx.get(f"{url}/schema").status_code == 401
    wrong = httpx.get(f"{url}/schema", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json() == {"error": "missing or wrong bearer token"}
    assert httpx.get(f"{url}/schema", headers=AUTH).status_code == 200
    with pytest.raises(ConnectionError, match="403"), _client(url, token="nope") as client:
        client.reset()


def test_request_bodies_are_bounded(catalog, tasks) -> None:
    with serve_in_thread(served_world(catalog, tasks, max_body_bytes=4096), TOKEN) as base:
        opening = httpx.post(f"{base}/reset", json={"seed": 0}, headers=AUTH)
        assert opening.status_code == 200 and opening.json()["observation"]["task_id"]
        stateless = httpx.post(f"{base}/step", json={"action": {"turn": "hi"}}, headers=AUTH)
        assert stateless.status_code == 400 and "/ws" in stateless.json()["error"]
        big = {"seed": 0, "episode_id": "x" * 5000}
        response = httpx.post(f"{base}/reset", json=big, headers=AUTH)
        assert response.status_code == 413 and "4096 bytes" in response.json()["error"]
        with _client(base) as client:
            client.reset()
            with pytest.raises(Exception):  # noqa: B017 - the server closes the socket (1009)
                client.step(EcomAction(turn="x" * 5000))


def test_step_and_time_limits_end_the_episode_with_its_verdict(catalog, tasks) -> None:
    task = tasks[0]
    turns = fx.reference(task)
    assert len(turns) > 2
    with (
        serve_in_thread(served_world(catalog, tasks, max_steps=2), TOKEN) as base,
        _client(base) as c,
    ):
        c.reset(task_id=task.task_id)
        first = c.step(EcomAction(turn=turns[0]))
        assert not first.done
        second = c.step(EcomAction(turn=turns[1]))
        assert second.done and second.observation.error.startswith("step limit: 2 turns")
        assert second.observation.verdict["success"] is False
        assert second.observation.messages  # the turn's own tool results still come back
        with pytest.raises(RuntimeError, match="episode is over"):
            c.step(EcomAction(turn=turns[2]))
    limits = {"max_episode_s": 0.05}
    with serve_in_thread(served_world(catalog, tasks, **limits), TOKEN) as base, _client(base) as c:
        c.reset(task_id=task.task_id)
        time.sleep(0.1)
        late = c.step(EcomAction(turn=turns[0]))
        assert late.done and late.observation.error.startswith("time limit")
        assert late.observation.verdict["steps"] == 0  # the late turn was not played


def test_session_cap_refuses_a_session_over_it(catalog, tasks) -> None:
    # sessions never idle out here, so the cap is what refuses the third one
    with serve_in_thread(served_world(catalog, tasks, max_sessions=2), TOKEN) as base:
        first, second, third = _client(base), _client(base), _client(base)
        first.connect()
        second.connect()
        first.reset()
        second.reset()
        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            third.reset()
        for client in (third, first, second):
            client.disconnect()


def test_idle_sessions_are_evicted_and_free_their_slot(catalog, tasks, monkeypatch) -> None:
    """Both sessions idle past `idle_s`: the server closes them (waited for as the closes
    themselves, not a guessed sleep), a new session gets a slot, an evicted one is refused."""
    from ecomrlve.integrations import env_server

    closed = threading.Semaphore(0)
    close = env_server.EcomServerEnv.close

    def counted_close(self) -> None:
        close(self)
        closed.release()

    monkeypatch.setattr(env_server.EcomServerEnv, "close", counted_close)
    world = served_world(catalog, tasks, max_sessions=2, idle_s=0.5)
    with serve_in_thread(world, TOKEN) as base:
        first, second = _client(base), _client(base)
        first.connect()
        second.connect()
        first.reset()
        second.reset()
        assert closed.acquire(timeout=60) and closed.acquire(timeout=60)
        with _client(base) as fresh:
            assert fresh.reset().observation.task_id
        with pytest.raises(RuntimeError, match="session was closed"):
            first.reset()  # an evicted session is refused, with the reason
        first.disconnect()
        second.disconnect()


def test_cli_refuses_bad_input_with_one_line(tmp_path, monkeypatch) -> None:
    runner = CliRunner()
    monkeypatch.delenv("ECOMRLVE_ENV_TOKEN", raising=False)
    result = runner.invoke(app, ["env-server", "--data", str(tmp_path)])
    assert result.exit_code == 2 and "no bearer token" in result.stderr
    monkeypatch.setenv("ECOMRLVE_ENV_TOKEN", "t")
    result = runner.invoke(app, ["env-server", "--data", str(tmp_path), "--max-steps", "0"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: max_steps must be positive, got 0"
    result = runner.invoke(app, ["env-server", "--data", str(tmp_path / "none")])
    assert result.exit_code == 2 and "no catalog" in result.stderr


def test_the_served_world_is_frozen_out_of_the_collector(catalog, tasks, monkeypatch) -> None:
    """`serve` moves everything loaded before it (catalog, tasks) out of the garbage
    collector's generations, so full collections during steps do not walk the world."""
    import gc

    import uvicorn

    from ecomrlve.integrations import env_server

    world = served_world(catalog, tasks)
    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: seen.update(frozen=gc.get_freeze_count()))
    gc.unfreeze()
    try:
        env_server.serve(world, TOKEN, port=0)
        assert seen["frozen"] > 0
        assert not any(t is world.tasks for t in gc.get_objects())  # no longer tracked
    finally:
        gc.unfreeze()


# ---- any OpenEnv client, bad requests, dropped connections (issue 31) ---------------------------


def test_generic_openenv_client_sends_the_token_in_the_url(url, catalog, tasks) -> None:
    """`GenericEnvClient` has no header hook: the token rides in the URL's user info (the
    websockets library sends it as Basic credentials), and a whole episode plays with dicts."""
    from openenv.core.generic_client import GenericEnvClient

    task = tasks[0]
    authed = url.replace("http://", f"http://ecomrlve:{TOKEN}@")
    with GenericEnvClient(base_url=authed, message_timeout_s=60).sync() as env:
        opening = env.reset(task_id=task.task_id)
        assert opening.observation["task_id"] == task.task_id
        for turn in fx.reference(task):
            result = env.step({"turn": turn})
        assert result.done and result.observation["verdict"]["success"]
    wrong = url.replace("http://", "http://ecomrlve:nope@")
    with (
        pytest.raises(ConnectionError, match="403"),
        GenericEnvClient(base_url=wrong).sync() as env,
    ):
        env.reset()
    # HTTP routes take the same Basic credentials
    assert httpx.get(f"{url}/schema", auth=("anyone", TOKEN)).status_code == 200
    assert httpx.get(f"{url}/schema", auth=(TOKEN, "nope")).status_code == 401


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"task_id": "cart-s0-d3-i0-a9"}, 400, "unknown task_id 'cart-s0-d3-i0-a9'"),
        ({"task_id": 5}, 400, "task_id must be a string, got 5"),
        ({"seed": "abc"}, 422, "seed: Input should be a valid integer"),
        ({"seed": -1}, 422, "seed: Input should be greater than or equal to 0"),
        ({"episode_id": 3}, 422, "episode_id: Input should be a valid string"),
        (b"{not json", 422, "valid dictionary"),
    ],
)
def test_bad_http_requests_answer_4xx_with_one_line(url, caplog, body, status, says) -> None:
    content = body if isinstance(body, bytes) else None
    payload = None if content is not None else body
    response = httpx.post(f"{url}/reset", json=payload, content=content, headers=AUTH)
    assert response.status_code == status
    error = response.json()["error"]
    assert says in error and "\n" not in error
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # no traceback logged


def test_bad_websocket_messages_get_one_line_errors(url) -> None:
    with _client(url) as client:
        for data, says in [
            ({"seed": "abc"}, "seed must be a non-negative integer, got 'abc'"),
            ({"seed": True}, "seed must be a non-negative integer, got True"),
            ({"task_id": ["x"]}, "task_id must be a string"),
        ]:
            with pytest.raises(RuntimeError, match=re.escape(says)):
                client.reset(**data)
        assert client.reset(seed=0).observation.task_id  # the session goes on


def test_a_dropped_connection_logs_one_line(url) -> None:
    """A raw client that resets and vanishes (no close message, no close frame) costs the
    server log one warning line, no traceback; a client that says `close` costs nothing."""
    import asyncio
    import json
    import logging

    from websockets.asyncio.client import connect

    ended = threading.Event()
    records: list[logging.LogRecord] = []

    class Watch(logging.Handler):
        # its own handler on the server's logger: what other tests did to logging (a quiet
        # CLI run, propagation) does not hide the records
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)
            if "without close" in record.getMessage():
                ended.set()

    logger = logging.getLogger("ecomrlve.integrations.env_server")
    watch, level, disabled = Watch(level=logging.INFO), logger.level, logger.disabled
    logger.addHandler(watch)
    logger.setLevel(logging.INFO)
    logger.disabled = False  # a dictConfig elsewhere in the session may have disabled it
    try:
        with _client(url) as polite:
            polite.reset(seed=0)

        async def vanish() -> None:
            ws = await connect(url.replace("http", "ws") + "/ws", additional_headers=AUTH)
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            await ws.recv()
            ws.transport.abort()  # gone: no close message, no close frame

        asyncio.run(vanish())
        assert ended.wait(timeout=60)  # the server's one line is the state waited for
    finally:
        logger.removeHandler(watch)
        logger.setLevel(level)
        logger.disabled = disabled
    lines = [r for r in records if "without close" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelname == "WARNING"
    assert "dropped without close" in lines[0].getMessage()
    assert not [r for r in records if r.levelname == "ERROR" or r.exc_info]
