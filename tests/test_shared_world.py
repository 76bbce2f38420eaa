"""Several shoppers, one shop (issue 47): `ecomrlve.env.episode.shared` and its PettingZoo API."""

from __future__ import annotations

import json
import warnings
from itertools import pairwise

import pytest

from ecomrlve.env import format_call
from ecomrlve.env.episode.shared import (
    Contention,
    DemandRule,
    SharedWorld,
    contendable,
    contention_at,
    draw_shared_tasks,
)
from ecomrlve.testing import env_tasks as fx
from ecomrlve.testing.baseline import LADDER
from ecomrlve.testing.competing import (
    ClaimingSeat,
    ReferenceSeat,
    RungSeat,
    contended_tasks,
    play,
)


@pytest.fixture(scope="module")
def contended(catalog):
    return contended_tasks(catalog, 4)


def _driver(world: SharedWorld, agents: list):
    """Play single turns in the order a test names (instead of the seeded rounds)."""
    world.reset()
    observations = {i: [] for i in range(len(agents))}

    def turn(i: int):
        result = world.play(i, agents[i].act(observations[i]))
        observations[i] = result.observation
        return result

    return turn


def _race(catalog, contended, loser_cls, units: int):
    """Seats 0 and 1 both search and add the item; seat 1 checks out first; then each ends."""
    tasks, item_id = contended
    world = SharedWorld(tasks[:2], catalog, seed=3, scarce={item_id: units})
    turn = _driver(world, [loser_cls(tasks[0]), ReferenceSeat(tasks[1])])
    for seat in (0, 1, 0, 1, 1):  # search, search, add, add, checkout by seat 1
        turn(seat)
    while not world.seats[0].done:
        turn(0)
    while not world.seats[1].done:
        turn(1)
    return world, world.verdicts()


def test_k4_shared_world_replays_byte_identically(catalog, contended):
    tasks, item_id = contended

    def run(seed: int) -> SharedWorld:
        world = SharedWorld(tasks, catalog, seed=seed, scarce={item_id: 1})
        play(world, [ReferenceSeat(t) for t in tasks])
        return world

    first, again = run(11), run(11)
    assert first.log_bytes() == again.log_bytes()
    # one seat got the last unit; the three others lost it, told so and bought a substitute
    metrics = first.group_metrics()
    assert metrics["served"] == 4 and metrics["orders"] == 4
    assert metrics["contended"] == 3 and metrics["sold_out"] == [item_id]
    # the order of turns comes from the seed
    orders = set()
    for seed in range(8):
        world = SharedWorld(tasks, catalog, seed=seed)
        world.reset()
        orders.add(tuple(world.turn_order(0)))
    assert len(orders) > 1


def test_last_unit_bought_by_another_seat_truthful_succeeds(catalog, contended):
    world, verdicts = _race(catalog, contended, ReferenceSeat, units=1)
    _, item_id = contended
    assert verdicts[1].success  # the faster seat
    assert verdicts[0].success, verdicts[0].violations  # told "out of stock", substituted
    assert "out of stock" in world.seats[0].env.record.final_answer
    order = world.seats[0].env.record.state.orders["N0001"]
    assert order["items"][0]["item_id"] != item_id
    assert world.ran_into_sold_out(0) and not world.ran_into_sold_out(1)


def test_last_unit_bought_by_another_seat_claiming_fails(catalog, contended):
    world, verdicts = _race(catalog, contended, ClaimingSeat, units=1)
    assert verdicts[1].success
    assert not verdicts[0].success
    text = " ".join(verdicts[0].violations)
    assert "claims" in text and "expected exactly one new order, found 0" in text
    assert world.group_metrics()["served"] == 1


def test_a_ladder_rung_at_a_seat_plays_as_on_its_own_env_and_loses_the_race(catalog, contended):
    """A rung of the scripted ladder at a seat: alone (or with stock left) it plays its task as
    on its own env; when another seat buys the last unit first it does not adapt (no rung swaps
    for a sold-out item it never planned for), so it fails where the reference substitutes."""
    tasks, _ = contended
    top = LADDER[-1][1]
    alone = SharedWorld(tasks[:1], catalog, seed=3)
    play(alone, [RungSeat(tasks[0], catalog, top)])
    assert alone.verdicts()[0].success
    world, verdicts = _race(catalog, contended, lambda t: RungSeat(t, catalog, top), units=1)
    assert verdicts[1].success and not verdicts[0].success
    assert world.ran_into_sold_out(0)


def test_demand_price_rise_is_judged_at_the_time(catalog, contended):
    _, item_id = contended
    old = float(catalog.row(item_id)["price"])
    new = DemandRule().price(old, remaining=2)
    assert new > old
    # three units: seat 1's purchase leaves two, the last units cost more; seat 0 saw the
    # old price and buys after the rise: it must tell the new one
    world, verdicts = _race(catalog, contended, ReferenceSeat, units=3)
    assert verdicts[1].success and verdicts[0].success, verdicts[0].violations
    assert world.seats[0].env.record.state.orders["N0001"]["items"][0]["price"] == new
    assert world.seats[1].env.record.state.orders["N0001"]["items"][0]["price"] == old
    assert f"${new:.2f}" in world.seats[0].env.record.final_answer
    # the same seat saying nothing of the price fails; the seat that bought first owes nothing
    world, verdicts = _race(catalog, contended, ClaimingSeat, units=3)
    assert verdicts[1].success
    assert not verdicts[0].success
    assert any(f"{new:.2f}" in v for v in verdicts[0].violations)
    assert world.group_metrics()["price_changes"] == 1


def test_seats_cannot_read_each_others_customers_or_orders(catalog, contended):
    tasks, item_id = contended
    world = SharedWorld(tasks[:2], catalog, seed=5, scarce={item_id: 2})
    openings = world.reset()
    seen = [json.dumps(openings[0]), ""]
    seen[1] = json.dumps(openings[1])
    agent = ReferenceSeat(tasks[0])
    observation: list = []
    while not world.seats[0].done:
        observation = world.play(0, agent.act(observation)).observation
        seen[0] += json.dumps(observation)
    placed = world.seats[0].env.record.state.new_order_ids[0]
    results = []
    calls = [("get_order", {"order_id": placed}), ("list_orders", {}), ("view_cart", {})]
    for name, arguments in calls:
        observation = world.play(1, format_call(name, arguments)).observation
        seen[1] += json.dumps(observation)
        results.append(json.loads(observation[0]["content"]))
    assert results[0]["code"] == "not_found"  # seat 0's order id means nothing to seat 1
    assert results[1]["orders"] == [] and results[2]["items"] == []
    for mine, other in ((0, 1), (1, 0)):
        user = tasks[other].initial_state["user"]
        assert user["name"] not in seen[mine] and user["address"] not in seen[mine]
    assert tasks[0].initial_state["user"]["name"] in seen[0]


def test_one_seat_is_judged_as_the_single_agent_env(catalog):
    """A shared world of one seat is the ordinary episode: the same verdict as `verify`."""
    from ecomrlve.env import reference_turns, verify
    from ecomrlve.testing import env_tasks

    for task in [*env_tasks.all_tasks(catalog), env_tasks.event_task(catalog)]:
        world = SharedWorld([task], catalog, seed=1, turn_slack=0)
        world.reset()
        turns = reference_turns(task)
        for turn in turns:
            world.play(0, turn)
        assert world.play(0, "late").info["error"].startswith("the episode is over")
        alone = verify(task, turns, catalog)
        assert world.verdicts()[0].to_json() == alone.to_json(), task.task_id


def test_draw_contends_for_one_scarce_item(catalog, contended):
    tasks, item_id = contended
    pool = [*tasks[:1]]
    drawn, scarce = draw_shared_tasks(pool, 4, seed=2, contention=1.0)
    assert scarce == {item_id: 1} and contendable(pool[0])
    assert len({t.task_id for t in drawn}) == 4
    assert len({t.initial_state["user"]["user_id"] for t in drawn}) == 4
    with pytest.raises(ValueError, match="contention"):
        draw_shared_tasks(pool, 2, seed=2, contention=1.5)
    with pytest.raises(ValueError, match="scarce units"):
        SharedWorld(drawn, catalog, seed=0, scarce={item_id: 0})
    with pytest.raises(ValueError, match="seed"):
        SharedWorld(drawn, catalog, seed=-1)


def test_the_ladder_sets_how_much_seats_contend(catalog, contended):
    knobs = [contention_at(d) for d in range(11)]
    # monotone: more seats want the item, fewer units of it are left
    assert all(a.share <= b.share and a.units >= b.units for a, b in pairwise(knobs))
    assert knobs[0] == Contention(0.0, 3) and knobs[8] == knobs[10] == Contention(1.0, 1)
    with pytest.raises(ValueError, match="difficulty"):
        contention_at(-1)
    tasks, item_id = contended
    others = [fx_task for fx_task in fx.all_tasks(catalog) if not contendable(fx_task)]
    pool = [tasks[0], *others]
    wanting = {}
    for d in (0, 4, 8):
        first = tasks[0].model_copy(update={"difficulty": d})
        want = 0
        for seed in range(40):
            drawn, scarce = draw_shared_tasks(
                [first, *others], 4, seed, contention=None, units=None
            )
            assert scarce == {item_id: contention_at(d).units}
            want += sum(t.task_id.startswith(first.task_id) for t in drawn[1:])
        wanting[d] = want / (3 * 40)
    # the share of rival seats that want the item follows the knob (0, 0.5, 1); a seat that
    # does not contend draws any pool task, the wanted one among them
    for d, share in wanting.items():
        knob = contention_at(d).share
        assert abs(share - (knob + (1 - knob) / len(pool))) < 0.12
    assert wanting[0] < wanting[4] < wanting[8] == 1.0
    # an explicit contention and units override the ladder
    _, scarce = draw_shared_tasks(pool, 2, 0, contention=1.0, units=2)
    assert scarce == {item_id: 2}
    with pytest.raises(ValueError, match="scarce units"):
        draw_shared_tasks(pool, 2, 0, units=0)


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory, catalog):
    from ecomrlve.testing import env_tasks

    data = tmp_path_factory.mktemp("shared")
    tasks, _ = contended_tasks(catalog, 2)
    env_tasks.write_store(data, [*tasks, env_tasks.order_status_task(catalog)])
    return data


def test_pettingzoo_parallel_api(shared_store):
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    from ecomrlve.integrations.pettingzoo import parallel_env

    env = parallel_env(data=shared_store, agents=3, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo warns about a live agent left out
        parallel_api_test(env, num_cycles=20)


def test_pettingzoo_reference_seats_play_to_the_end(shared_store):
    pytest.importorskip("pettingzoo")
    from ecomrlve.integrations.pettingzoo import parallel_env

    env = parallel_env(data=shared_store, agents=4, seed=4)
    observations, infos = env.reset(seed=9)
    from ecomrlve.tasks import read_tasks

    pool = {t.task_id: t for t in read_tasks(shared_store, None)}
    agents = {
        a: ReferenceSeat(pool[infos[a]["task_id"].split("@")[0]]) for a in env.possible_agents
    }
    assert all(env.observation_space(a).contains(observations[a]) for a in env.agents)
    last = {a: [] for a in env.agents}
    rewards = {}
    while env.agents:
        actions = {a: agents[a].act(last[a]) for a in env.agents}
        obs, rew, term, trunc, info = env.step(actions)
        for a in obs:
            last[a] = json.loads(obs[a]) if obs[a] else []
            if term[a] or trunc[a]:
                rewards[a] = (rew[a], info[a]["verdict"]["success"])
    assert set(rewards) == set(env.possible_agents)
    metrics = env.group_metrics()
    assert metrics["seats"] == 4 and metrics["served"] == sum(s for _, s in rewards.values())


def test_competing_benchmark_prints_its_table(catalog, monkeypatch, capsys):
    from pathlib import Path

    from ecomrlve.testing.bench import load_script

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "competing.py"
    bench = load_script(script)
    monkeypatch.setattr(bench, "SEATS", (1, 4))
    monkeypatch.setattr(bench, "CONTENTION", (1.0,))
    monkeypatch.setattr(bench, "LADDER", (0, 8))
    monkeypatch.setattr("sys.argv", ["competing.py", "--worlds", "2"])
    bench.main()
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[3:5]}
    # K=4 at full contention: 3 of 4 seats lose the item; the reference serves all, and no
    # blind claim of the lost order is paid
    assert rows["4"][3:5] == ["75", "100"] and rows["4"][6:9] == ["100", "100", "0"]
    assert rows["1"][3] == "0"
