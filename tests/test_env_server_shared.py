"""`ecomrlve env-server --shared-seats`: several OpenEnv clients, each its own token and
session, playing one shared world at once (issue 47)."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from ecomrlve.integrations.env_server import EcomAction, serve_in_thread, with_shared_world
from ecomrlve.testing.competing import ReferenceSeat, contended_tasks
from ecomrlve.testing.served import served_world, sync_client

TOKEN = "server-token"
SEATS = 4
SEAT_TOKENS = tuple(f"seat-{k}-token" for k in range(SEATS))


@pytest.fixture(scope="module")
def served(catalog):
    tasks, _ = contended_tasks(catalog, SEATS)  # every customer wants the same t-shirt first
    return with_shared_world(served_world(catalog, tasks), SEATS, seed=11)


@pytest.fixture(scope="module")
def url(served):
    with serve_in_thread(served, TOKEN, SEAT_TOKENS) as base:
        yield base


def _play_seat(url: str, table, seat: int, start: threading.Barrier, out: dict) -> None:
    """One client: join the world, play the reference (adapted to a shared shop) to the end,
    then read its state. Everything it received is kept in `out[seat]`."""
    seen: list[str] = []
    try:
        with sync_client(url, SEAT_TOKENS[seat]) as client:
            opening = client.reset().observation
            seen.append(json.dumps(opening.messages))
            task = table.world.tasks[seat]  # the test's agent reads its task's reference
            assert task.task_id == opening.task_id
            agent = ReferenceSeat(task)
            start.wait(timeout=60)  # every client has joined: their turns now interleave
            observation: list = []
            result = None
            for _ in range(32):
                result = client.step(EcomAction(turn=agent.act(observation)))
                observation = result.observation.messages
                seen.append(json.dumps(observation))
                if result.done:
                    break
            state = client.state()
        out[seat] = {"result": result, "state": state, "seen": "".join(seen)}
    except Exception as err:  # the main thread asserts on it
        out[seat] = {"error": repr(err)}
        start.abort()


def test_four_clients_play_one_world_concurrently(url, served) -> None:
    table = served.shared
    out: dict[int, dict] = {}
    start = threading.Barrier(SEATS)
    threads = [
        threading.Thread(target=_play_seat, args=(url, table, seat, start, out))
        for seat in range(SEATS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert all(not t.is_alive() for t in threads)
    assert not [o["error"] for o in out.values() if "error" in o]  # no server error, no 500
    world = table.world
    assert table.episode == 1 and all(s.done for s in world.seats)

    # no lost writes: every unit a seat bought is in the shared stock, once
    bought: dict[str, int] = {}
    orders = 0
    for seat in world.seats:
        state = seat.env.record.state
        for order_id in state.new_order_ids:
            orders += 1
            for line in state.orders[order_id]["items"]:
                bought[line["item_id"]] = bought.get(line["item_id"], 0) + line["quantity"]
    (scarce, units), *_ = world.scarce.items()
    stock = int(served.catalog.stock[served.catalog.row_of(scarce)])
    sold_before = {scarce: stock - units}
    assert {i: n - sold_before.get(i, 0) for i, n in world.ledger.sold.items()} == bought
    assert bought.get(scarce) == 1  # the last shirt went to exactly one seat
    assert orders == len(world.ledger.queue) == SEATS  # every customer served, one order each
    for item_id, sold in world.ledger.sold.items():
        assert sold <= int(served.catalog.stock[served.catalog.row_of(item_id)])

    # each seat judged on its own view; each client sees only its own customer and orders
    verdicts = world.verdicts()
    assert all(v.success for v in verdicts.values())
    assert sum(world.ran_into_sold_out(k) for k in range(SEATS)) == SEATS - 1
    for k in range(SEATS):
        result, state = out[k]["result"], out[k]["state"]
        assert result.done and result.observation.verdict["success"]
        own = world.seats[k].env.record.state
        assert state.world["user"] == own.to_json()["user"]
        assert state.world["orders"] == own.to_json()["orders"]
        others = {world.seats[j].task.initial_state["user"]["user_id"] for j in range(SEATS)}
        others.discard(own.to_json()["user"]["user_id"])
        assert not any(user_id in out[k]["seen"] for user_id in others)
        assert not any(user_id in json.dumps(state.world) for user_id in others)


def test_a_seat_plays_in_one_session_and_a_seat_token_is_needed(url) -> None:
    with sync_client(url, SEAT_TOKENS[0]) as first:
        first.state()  # the session is open and holds seat 0
        with (
            pytest.raises(RuntimeError, match="seat 0 is played by another session"),
            sync_client(url, SEAT_TOKENS[0]) as second,
        ):
            second.reset()
    with (
        pytest.raises(RuntimeError, match="connect over /ws with a seat's token"),
        sync_client(url, TOKEN) as server_token,
    ):
        server_token.reset()
    # HTTP /reset has no session: refused with one line, never a 500
    answer = httpx.post(
        f"{url}/reset", json={}, headers={"Authorization": f"Bearer {SEAT_TOKENS[1]}"}
    )
    assert answer.status_code == 400 and "seat's token" in answer.json()["error"]
    answer = httpx.post(f"{url}/reset", json={}, headers={"Authorization": "Bearer nope"})
    assert answer.status_code == 401


def test_seat_tokens_must_fit_the_seats(served) -> None:
    from ecomrlve.integrations.env_server import build_app

    with pytest.raises(ValueError, match="3 seat tokens for 4 shared seats"):
        build_app(served, TOKEN, SEAT_TOKENS[:3])
    with pytest.raises(ValueError, match="its own non-empty token"):
        build_app(served, TOKEN, (TOKEN, *SEAT_TOKENS[1:]))


def test_cli_needs_a_token_per_seat(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from ecomrlve.cli import app

    monkeypatch.setenv("ECOMRLVE_ENV_TOKEN", "t")
    runner = CliRunner()
    result = runner.invoke(app, ["env-server", "--data", str(tmp_path), "--shared-seats", "2"])
    assert result.exit_code == 2 and "--seat-token-file" in result.stderr
