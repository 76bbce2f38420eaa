"""A fair, changing shop and a customer who talks back (issue 44, items 3 and 4).

    python benchmarks/fair_shop.py --per-cell 20 --seed 41

On a fresh small store (`--products` products, seed `--seed`), it generates `--per-cell` tasks
per scenario x difficulty at d8-10 (where the shop changes) and prints:

1. the world events at d8+: per kind, how many; the share on the main request (the reference
   call they hang on is a core step); no-ops (the reference replay never ran into them: not
   fired, an order that could no longer ship, a product bought before it sold out) and
   invisible ones (fired, but no later tool result shows the change);
2. scripted agents at d9-10, by scenario: the reference; the reference plus one harmless read
   (`view_cart` at a seeded position); that plus one confirmation question before the first
   committing write ("shall I go ahead?");
3. an agent that meets a stock-out where the shop shows it and swaps: it plays the reference
   without the calls that handle the stock-out, and when an add or a checkout is refused for
   the sold-out product it adds the substitute (removing the sold-out one first at a
   checkout) and checks out again;
4. the simulated user on confirmation questions (a dozen wordings, asked of tasks that want
   the write and of tasks that don't): the share answered right;
5. a customer who talks back (`generators/talk.py`, declined rises): the tasks of each kind per
   difficulty, price changes by what they ask of the agent (only telling, the customer's yes,
   not buying after their no), and the trajectories that try to get paid without doing what the
   customer said (the guesser, the first wish, buying after a no) beside the reference.

It runs on code before issue 44 too (the same figures for the before column);
`--turn-slack 0` plays without the turn limit's room for care.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from ecomrlve.catalogs import build_catalog
from ecomrlve.config import EnvConfig
from ecomrlve.env import EcomEnv
from ecomrlve.env.episode.parser import format_call
from ecomrlve.env.episode.reference import final_answer
from ecomrlve.generators import GenContext, generate_tasks
from ecomrlve.generators.registry import scenario_names
from ecomrlve.tasks import Task, ToolCall
from ecomrlve.testing.bench import print_table

DIFFICULTIES = (8, 9, 10)
COMMITTING = ("checkout", "cancel_order", "return_item", "exchange_item")
CONFIRMATIONS = (
    "Shall I go ahead?",
    "Should I go ahead and {action}?",
    "Do you want me to {action}?",
    "Would you like me to {action}?",
    "Is it okay if I {action}?",
    "Can I {action} now?",
    "Just to confirm, should I {action}?",
    "Before I {action}: are you happy for me to proceed?",
    "May I {action}?",
    "Want me to {action}?",
    "Please confirm: shall I {action}?",
    "Good to go — shall I {action}?",
)


YES_WORDS = re.compile(r"\byes\b|go ahead|proceed|do it|do that")


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}" if whole else "-"


CONFIG = EnvConfig()


def play(task: Task, catalog: Any, calls: list[ToolCall], react: bool = False) -> bool:
    """Play `calls` one a turn, then the reference's final answer; with `react`, swap a
    product refused as out of stock for the event's substitute (and check out again)."""
    env = EcomEnv(task, catalog, CONFIG)
    env.reset()
    stock = {e.item_id: e for e in task.events if e.kind == "out_of_stock"}
    queue = list(calls)
    result = None
    while queue:
        call = queue.pop(0)
        result = env.step(format_call(call.name, call.arguments))
        if result.done:
            break
        message = result.observation[0]["content"] if result.observation else ""
        if not react or "out of stock" not in message:
            continue
        for item_id, event in stock.items():
            if item_id not in message:
                continue
            quantity = int(call.arguments.get("quantity", 1))
            add = {"item_id": event.substitute, "quantity": quantity}
            swap = [ToolCall(name="add_to_cart", arguments=add)]
            if call.name == "checkout":
                quantity = _cart_quantity(env, item_id)
                swap = [
                    ToolCall(name="remove_from_cart", arguments={"item_id": item_id}),
                    ToolCall(name="add_to_cart",
                             arguments={"item_id": event.substitute, "quantity": quantity}),
                    call,
                ]  # fmt: skip
            queue[:0] = swap
            del stock[item_id]
            break
    if result is None or not result.done:
        result = env.step(final_answer(task))
    verdict = result.info.get("verdict")
    return bool(verdict and verdict.success)


def _cart_quantity(env: EcomEnv, item_id: str) -> int:
    return int(env.record.state.cart.get(item_id, 1))


def with_read(task: Task) -> list[ToolCall]:
    """The reference with one `view_cart` at a position seeded by the task id."""
    calls = list(task.reference)
    at = zlib.crc32(task.task_id.encode()) % (len(calls) + 1)
    return [*calls[:at], ToolCall(name="view_cart"), *calls[at:]]


def with_confirmation(calls: list[ToolCall]) -> list[ToolCall]:
    """`calls` with "shall I go ahead?" before the first committing write (else last)."""
    at = next((k for k, c in enumerate(calls) if c.name in COMMITTING), len(calls))
    ask = ToolCall(name="ask_user", arguments={"question": "Shall I go ahead?"})
    return [*calls[:at], ask, *calls[at:]]


def without_stock_handling(task: Task) -> list[ToolCall]:
    """The reference less the calls that handle its stock-out (the agent learns of it from
    the shop's refusal instead)."""
    calls = list(task.reference)
    for event in task.events:
        if event.kind != "out_of_stock":
            continue
        keep = []
        for k, call in enumerate(calls):
            args = call.arguments
            nxt = calls[k + 1] if k + 1 < len(calls) else None
            prev = calls[k - 1] if k else None
            if (
                (call.name == "add_to_cart" and args.get("item_id") == event.substitute)
                or (call.name == "remove_from_cart" and args.get("item_id") == event.item_id)
                or (  # before issue 44: the reference viewed the cart right after the add
                    call.name == "view_cart"
                    and prev is not None
                    and prev.name == "add_to_cart"
                    and prev.arguments.get("item_id") == event.item_id
                    and nxt is not None
                    and nxt.name == "remove_from_cart"
                )
                or (  # after: the checkout the stock-out refuses
                    call.name == "checkout"
                    and nxt is not None
                    and nxt.name == "remove_from_cart"
                    and nxt.arguments.get("item_id") == event.item_id
                )
            ):
                continue
            keep.append(call)
        calls = keep
    return calls


def anchor(task: Task, event: Any) -> int:
    """The reference call an event hangs on."""
    trigger = getattr(event, "before", "") or getattr(event, "after", "")
    if trigger:
        for k, call in enumerate(task.reference):
            args = call.arguments
            if call.name == trigger and all(
                not value or args.get(key, value) == value
                for key, value in (("item_id", event.item_id), ("order_id", event.order_id))
            ):
                return k
    if event.kind in ("price_change", "out_of_stock") and event.after_calls > 0:
        return event.after_calls - 1  # fired after its add
    return min(event.after_calls, len(task.reference) - 1)


def event_effects(task: Task, catalog: Any) -> list[tuple[str, bool, bool, bool]]:
    """(kind, on the main request, no-op, invisible) per world event of the reference replay."""
    env = EcomEnv(task, catalog)
    env.reset()
    contents: list[str] = []
    for call in task.reference:
        result = env.step(format_call(call.name, call.arguments))
        contents += [m["content"] for m in result.observation if m.get("role") == "tool"]
    env.step(final_answer(task))
    record = env.record
    core = set(task.core_calls or range(len(task.reference)))
    out = []
    for k, event in enumerate(task.events):
        if event.kind in ("confirm_writes", "clarify", "change_of_mind"):
            continue
        fired = record.events_fired.get(k)
        later = " ".join(contents[fired:]) if fired is not None else ""
        if event.kind == "tool_failure":
            noop, visible = fired is None, fired is not None
        elif event.kind == "price_change":
            bought = any(
                line["item_id"] == event.item_id
                for order_id in record.state.new_order_ids
                for line in record.state.orders[order_id]["items"]
            )
            # turned down past the budget: the agent must not buy (not a no-op)
            noop = fired is None or not (bought or getattr(event, "declined", False))
            visible = str(event.price) in later or f"{event.price:.2f}" in later
        elif event.kind == "out_of_stock":
            in_cart = event.item_id in record.event_carts.get(k, ())
            refused = any(not c.ok and event.item_id in (c.error or "") for c in record.calls)
            noop = fired is None or not (in_cart or refused)
            visible = refused or ('"in_stock":false' in later and event.item_id in later)
        else:  # order_shipped
            order = record.state.orders.get(event.order_id, {})
            noop = fired is None or order.get("status") != "shipped"
            visible = event.order_id in later and "shipped" in later
        out.append((event.kind, anchor(task, event) in core, noop, not noop and not visible))
    return out


def confirmation_answers(tasks: list[Task], catalog: Any) -> tuple[int, int, int, int]:
    """(right yes, asked yes, right no, asked no) over the wordings: a cancel the goal wants
    (yes) and one of an order it doesn't (no); an order placed where the goal buys (yes) and
    where it buys nothing (no)."""
    from ecomrlve.env.episode.user import SimulatedUser

    right_yes = asked_yes = right_no = asked_no = 0
    for task in tasks:
        goal = task.goal
        orders = [o["order_id"] for o in task.initial_state.get("orders", [])]
        cases = []
        if goal.cancel:
            cases.append((f"cancel order {goal.cancel[0]}", True))
        other = [o for o in orders if o not in goal.cancel]
        if other and goal.cancel:
            cases.append((f"cancel order {other[0]}", False))
        cases.append(("place the order", goal.purchase is not None))
        for action, expect in cases:
            for wording in CONFIRMATIONS:
                if not expect and "{action}" not in wording:
                    continue  # "shall I go ahead?" names no write: yes to the goal's own
                user = SimulatedUser(task, catalog.__contains__)
                reply = user.answer(wording.format(action=action)).lower()
                said_no = reply.startswith(("no", "oh no", "hmm, no"))
                said_yes = not said_no and YES_WORDS.search(reply) is not None
                if expect:
                    asked_yes += 1
                    right_yes += said_yes
                else:
                    asked_no += 1
                    right_no += said_no
    return right_yes, asked_yes, right_no, asked_no


def price_demands(tasks: list[Task]) -> dict[str, int]:
    """Price changes at d8+ by what they ask of the agent: only telling (a rise within the
    budget or a drop), the customer's yes before buying, or not buying after their no."""
    out = {"tell only": 0, "ask, then buy": 0, "ask, then don't buy": 0}
    for event in (e for t in tasks for e in t.events if e.kind == "price_change"):
        if getattr(event, "declined", False):
            out["ask, then don't buy"] += 1
        elif event.over_budget:
            out["ask, then buy"] += 1
        else:
            out["tell only"] += 1
    return out


def cheats(task: Task) -> dict[str, list[ToolCall]]:
    """The trajectories that try to get paid without doing what the customer's talk asks:
    the guesser (never asks which order), the first wish (asks, ignores the new quantity),
    buying after the customer's no (the whole order, or the product they said to leave out)."""
    calls = list(task.reference)
    out: dict[str, list[ToolCall]] = {}
    for event in task.events:
        if event.kind == "clarify":
            out["guesses the order"] = [c for k, c in enumerate(calls) if k != event.after_calls]
        elif event.kind == "change_of_mind":
            out["buys the first wish"] = [c for c in calls if c.name != "set_quantity"]
        elif getattr(event, "drop", False):  # "leave that one out": bought all the same
            out["buys after a no"] = [
                c for c in calls
                if not (c.name == "remove_from_cart" and c.arguments["item_id"] == event.item_id)
            ]  # fmt: skip
        elif getattr(event, "declined", False):
            out["buys after a no"] = [*calls, ToolCall(name="checkout")]
    return out


def talk_back(tasks: list[Task], catalog: Any) -> None:
    kinds = {
        "clarify": lambda e: e.kind == "clarify",
        "change_of_mind": lambda e: e.kind == "change_of_mind",
        "over budget, yes": lambda e: e.over_budget and not getattr(e, "declined", False),
        "over budget, no": lambda e: getattr(e, "declined", False) and not e.drop,
        "over budget, leave it out": lambda e: getattr(e, "drop", False),
    }
    print("\n5. a customer who talks back: tasks carrying each kind, by difficulty")
    rows = [("kind", *(f"d{d}" for d in DIFFICULTIES))]
    for name, fits in kinds.items():
        rows.append((name, *(str(sum(any(fits(e) for e in t.events) for t in tasks
                                     if t.difficulty == d)) for d in DIFFICULTIES)))  # fmt: skip
    print_table(rows, numeric=True)
    demands = price_demands(tasks)
    total = sum(demands.values())
    print(f"price changes at d8-10 ({total}): " + ", ".join(
        f"{k} {v} ({percent(v, total)}%)" for k, v in demands.items()))  # fmt: skip
    rows = [("trajectory", "tasks", "passed %")]
    played: dict[str, list[bool]] = {}
    for task in tasks:
        for name, calls in cheats(task).items():
            played.setdefault(name, []).append(play(task, catalog, calls))
    talking = [t for t in tasks if cheats(t)]
    ref = [play(t, catalog, list(t.reference)) for t in talking]
    rows.append(("reference", str(len(ref)), percent(sum(ref), len(ref))))
    for name, got in played.items():
        rows.append((name, str(len(got)), percent(sum(got), len(got))))
    print_table(rows, numeric=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=3000)
    parser.add_argument("--per-cell", type=int, default=20)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--turn-slack", type=int, help="env.turn_slack (default: the env's)")
    args = parser.parse_args()
    if args.turn_slack is not None:
        global CONFIG
        CONFIG = EnvConfig(turn_slack=args.turn_slack)
    started = time.perf_counter()
    n = args.per_cell * len(scenario_names()) * len(DIFFICULTIES)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        build_catalog(data, args.products, seed=args.seed)
        ctx = GenContext.load(data)
        frame, report = generate_tasks(ctx, n, seed=args.seed, difficulty=DIFFICULTIES[::2])
        tasks = [Task.from_row(r) for r in frame.iter_rows(named=True)]
        catalog = ctx.catalog
        print(f"{len(tasks)} tasks at d8-10 ({report.invalid} invalid), seed {args.seed}, "
              f"{args.products:,} products")  # fmt: skip

        effects = [e for t in tasks for e in event_effects(t, catalog)]
        print("\n1. world events at d8-10 (confirmation rules not counted)")
        rows = [("kind", "events", "on main request %", "no-op %", "invisible %")]
        for kind in ["price_change", "out_of_stock", "order_shipped", "tool_failure", "all"]:
            got = [e for e in effects if kind in ("all", e[0])]
            rows.append((kind, str(len(got)), percent(sum(e[1] for e in got), len(got)),
                         percent(sum(e[2] for e in got), len(got)),
                         percent(sum(e[3] for e in got), len(got))))  # fmt: skip
        print_table(rows, numeric=True)
        rule = {d: [any(e.kind == "confirm_writes" for e in t.events)
                    for t in tasks if t.difficulty == d] for d in DIFFICULTIES}  # fmt: skip
        over = sum(getattr(e, "over_budget", False) for t in tasks for e in t.events)
        print("tasks with the confirm_writes rule: " + ", ".join(
            f"d{d} {percent(sum(v), len(v))}%" for d, v in rule.items()
        ) + f"; price rises past the budget: {over}")  # fmt: skip

        hard = [t for t in tasks if t.difficulty >= 9]
        print("\n2. scripted agents at d9-10: % of tasks passed")
        rows = [("scenario", "tasks", "reference", "+1 read", "+1 read +1 confirmation")]
        for scenario in [*scenario_names(), "all"]:
            got = [t for t in hard if scenario in ("all", t.scenario)]
            ref = sum(play(t, catalog, list(t.reference)) for t in got)
            read = sum(play(t, catalog, with_read(t)) for t in got)
            both = sum(play(t, catalog, with_confirmation(with_read(t))) for t in got)
            rows.append((scenario, str(len(got)), percent(ref, len(got)),
                         percent(read, len(got)), percent(both, len(got))))  # fmt: skip
        print_table(rows, numeric=True)

        stock = [t for t in tasks if any(e.kind == "out_of_stock" for e in t.events)]
        print("\n3. an agent that meets a stock-out where the shop shows it and swaps")
        rows = [("where it shows", "tasks", "passed %")]
        for where, keep in (
            ("at the checkout", lambda e: getattr(e, "before", "") != "add_to_cart"),
            ("at the add", lambda e: getattr(e, "before", "") == "add_to_cart"),
        ):
            got = [t for t in stock if any(keep(e) for e in t.events if e.kind == "out_of_stock")]
            passed = sum(play(t, catalog, without_stock_handling(t), react=True) for t in got)
            rows.append((where, str(len(got)), percent(passed, len(got))))
        print_table(rows, numeric=True)

        sample = [t for t in tasks if t.goal.cancel][:30] + [
            t for t in tasks if t.goal.purchase and not t.goal.cancel
        ][:30]
        yes, asked_yes, no, asked_no = confirmation_answers(sample, catalog)
        print(f"\n4. confirmation questions ({len(CONFIRMATIONS)} wordings, {len(sample)} tasks): "
              f"yes when the goal wants the write {percent(yes, asked_yes)}% of {asked_yes}; "
              f"no when it doesn't {percent(no, asked_no)}% of {asked_no}")  # fmt: skip
        talk_back(tasks, catalog)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
