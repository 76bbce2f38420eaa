"""Probes of the facts reader (issue 43): evidence, not knowledge, and natural correct values.

Each builder takes a task (and the catalog where it must play the reference to learn what a
tool showed) and returns the turns of one episode, or None when the probe does not apply. The
"must fail" classes: the reference answer after its look-ups are replaced by one unrelated
search (`no_lookup`), a return/cancel reason listing every complaint (`reason_dump`), a date
hedged with today or the order's placed date (`hedged_date`). The "must pass" classes: amounts
in words (`amount_words`), statuses said otherwise (`status_words`), the checkout's own
order number, total and arrival date (`checkout_result`), a refund timing from the policy
just read (`refund_timing`), and a price that changed before the agent ever saw the item,
left untold (`early_price_change`, which also returns the changed task).
"""

from __future__ import annotations

import datetime as dt
import re

from ecomrlve.env import Catalog, EcomEnv, final_answer, format_call, reference_turns, verify
from ecomrlve.env.episode.reference import refused_calls
from ecomrlve.tasks import Task

READS = frozenset(("search", "get_product", "view_cart", "list_orders", "get_order",
                   "search_policy"))  # fmt: skip
UNRELATED_SEARCH = format_call("search", {"query": "umbrella"})
EVERY_COMPLAINT = (
    "it doesn't fit, it arrived damaged, I changed my mind, I ordered it by mistake, I found it "
    "cheaper elsewhere, I don't need it any more, it would arrive too late, it takes too long "
    "to arrive, wrong colour, poor quality"
)


def _calls(task: Task) -> list[str]:
    return [format_call(call.name, call.arguments) for call in task.reference]


def _play(task: Task, catalog: Catalog, turns: list[str] | None = None) -> EcomEnv:
    env = EcomEnv(task, catalog)
    env.reset()
    for turn in _calls(task) if turns is None else turns:
        env.step(turn)
    return env


def no_lookup(task: Task) -> list[str] | None:
    """The reference with every look-up replaced by one unrelated search (writes and questions
    to the customer kept), then the reference answer: tasks with facts only."""
    if not task.goal.answer_facts:
        return None
    turns, searched = [], False
    for call in task.reference:
        if call.name in READS:
            if not searched:
                turns.append(UNRELATED_SEARCH)
                searched = True
            continue
        turns.append(format_call(call.name, call.arguments))
    if not searched:
        return None
    return [*turns, final_answer(task)]


def reason_dump(task: Task) -> list[str] | None:
    """The reference with every return/cancel reason replaced by a list of every complaint
    (None when no such call takes effect: a cancel a world event refuses judges no reason)."""
    refused = refused_calls(task)
    if not any(
        c.name in ("return_item", "cancel_order") and k not in refused
        for k, c in enumerate(task.reference)
    ):
        return None
    turns = []
    for call in task.reference:
        arguments = dict(call.arguments)
        if call.name in ("return_item", "cancel_order"):
            arguments["reason"] = EVERY_COMPLAINT
        turns.append(format_call(call.name, arguments))
    return [*turns, final_answer(task)]


_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]  # fmt: skip
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def number_words(n: int) -> str:
    """English words for 0 <= n < 1,000,000 ("forty-seven", "one thousand two hundred")."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return f"{_ONES[n // 100]} hundred" + (f" {number_words(rest)}" if rest else "")
    rest = n % 1000
    return f"{number_words(n // 1000)} thousand" + (f" {number_words(rest)}" if rest else "")


def say_amount(dollars: float, variant: int) -> str:
    """ "forty-seven dollars and ninety-nine cents" (variant 0) / "47 dollars and 99 cents"."""
    whole, cents = int(dollars), round(dollars * 100) % 100
    if variant % 2 == 0:
        out = f"{number_words(whole)} dollars"
        return out + (f" and {number_words(cents)} cents" if cents else "")
    return f"{whole} dollars" + (f" and {cents} cents" if cents else "")


_AMOUNT = re.compile(r"\$(\d+(?:\.\d\d)?)")


def amount_words(task: Task) -> list[str] | None:
    """The reference with every "$47.99" of its answer in words (two wordings by task index)."""
    answer = final_answer(task)
    if not _AMOUNT.search(answer):
        return None
    said = _AMOUNT.sub(lambda m: say_amount(float(m[1]), task.index), answer)
    return [*_calls(task), said]


STATUS_WORDS = (
    (r"was delivered on", ("reached you on", "was dropped off on")),
    (r"was cancelled", ("shows as cancelled", "shows as cancelled")),
)


def status_words(task: Task, variant: int) -> list[str] | None:
    """The reference with "was delivered on" said as "reached you on" (variant 0) / "was
    dropped off on" (1), and "was cancelled" as "shows as cancelled" (2)."""
    answer = final_answer(task)
    pattern, sayings = STATUS_WORDS[0] if variant < 2 else STATUS_WORDS[1]
    if not re.search(pattern, answer):
        return None
    return [*_calls(task), re.sub(pattern, sayings[variant % 2], answer)]


def _spoken_date(iso: str) -> str:
    day = dt.date.fromisoformat(iso)
    return f"{day.strftime('%B')} {day.day}"


def checkout_result(task: Task, catalog: Catalog) -> list[str] | None:
    """The reference, its answer followed by the order number, total and arrival date the
    checkout's own result showed."""
    if not any(c.name == "checkout" for c in task.reference):
        return None
    env = _play(task, catalog)
    results = [r for r in env.record.shown if isinstance(r, dict) and "eta" in r and r.get("ok")]
    if not results:
        return None
    placed = results[-1]
    told = (
        f" Your order number is {placed['order_id']}; the total came to ${placed['total']:.2f} "
        f"and it should arrive by {_spoken_date(placed['eta'])}."
    )
    return [*_calls(task), final_answer(task) + told]


_REFUND = re.compile(r"within (\d+) to (\d+) business days")


def refund_timing(task: Task, catalog: Catalog) -> list[str] | None:
    """The reference, a policy look-up of refunds, then its answer and the refund timing that
    look-up showed ("within 5 to 7 business days")."""
    turns = [*_calls(task), format_call("search_policy", {"query": "refund business days"})]
    env = _play(task, catalog, turns)
    if env.record.truncated or not env.record.shown:  # no room left for one more call
        return None
    text = " ".join(p["text"] for p in env.record.shown[-1].get("policies", ()))
    m = _REFUND.search(text)
    if m is None:
        return None
    told = (
        f" Once the item is back, your refund should arrive within {m[1]} to {m[2]} business days."
    )
    return [*turns, final_answer(task) + told]


def hedged_date(task: Task, variant: int) -> list[str] | None:
    """The reference with its arrival date hedged: "delivered either today or August 21"
    (variant 0) or with the order's placed date as the other alternative (variant 1)."""
    answer = final_answer(task)
    for fact in task.goal.answer_facts:
        if fact.kind != "date" or fact.role != "arrival":
            continue
        said = _spoken_date(fact.value)
        if said not in answer:
            continue
        if variant == 0:
            other = "today"
        else:
            placed = [
                a for a, r in zip(fact.allowed, fact.allowed_roles, strict=False) if r == "placed"
            ]
            if not placed:
                continue
            other = _spoken_date(placed[0])
        hedged = answer.replace(f"on {said}", f"either {other} or {said}", 1)
        if hedged == answer:
            hedged = answer.replace(said, f"either {other} or {said}", 1)
        return [*_calls(task), hedged]
    return None


def early_price_change(task: Task) -> tuple[Task, list[str]] | None:
    """The task with its price change moved before the first call (the agent never sees the
    old price), and the reference's calls and answer without the price-change sentence."""
    changes = [e for e in task.events if e.kind == "price_change"]
    if not changes or any(e.over_budget for e in changes):
        # a rise past the budget is no news to tell: the customer's yes or no decides the
        # purchase, and moved before the first call the reference would ask at another time
        return None
    first = {"after_calls": 0, "after": "", "before": ""}  # by the count: before any call
    events = [e.model_copy(update=first) if e.kind == "price_change" else e
              for e in task.events]  # fmt: skip
    moved = task.model_copy(update={"events": events})
    answer = final_answer(task)
    for event in changes:
        answer = answer.replace(event.say, "").strip()
    return moved, [*_calls(task), answer or "Done."]


def prompt_states_all(task: Task) -> bool:
    """Are all of the task's stated facts values the customer's own request states?"""
    from ecomrlve.env.judge.facts import KINDS, normalise

    text = normalise(task.prompt)
    for fact in task.goal.answer_facts:
        kind = KINDS[fact.kind]
        if not kind.valued or not kind.grounded:
            return False
        want = kind.target(fact.value)
        if not any(kind.matches(value, want) for _, value in kind.extract(text, None)):
            return False
    return True


# class -> (builder(task, catalog) -> (task, turns) | None, must pass)
CLASSES = {
    "reference": (lambda t, c: (t, reference_turns(t)), True),
    "no look-up (facts not in the prompt)": (
        lambda t, c: None if prompt_states_all(t) else _same(t, no_lookup(t)),
        False,
    ),
    "reason listing every complaint": (lambda t, c: _same(t, reason_dump(t)), False),
    "date hedged with today": (lambda t, c: _same(t, hedged_date(t, 0)), False),
    "date hedged with the placed date": (lambda t, c: _same(t, hedged_date(t, 1)), False),
    "amount in words": (lambda t, c: _same(t, amount_words(t)), True),
    "status: reached you on": (lambda t, c: _same(t, status_words(t, 0)), True),
    "status: was dropped off on": (lambda t, c: _same(t, status_words(t, 1)), True),
    "status: shows as cancelled": (lambda t, c: _same(t, status_words(t, 2)), True),
    "checkout's own result": (lambda t, c: _same(t, checkout_result(t, c)), True),
    "refund timing from the policy read": (lambda t, c: _same(t, refund_timing(t, c)), True),
    "price changed before it was seen, untold": (lambda t, c: early_price_change(t), True),
}


def _same(task: Task, turns: list[str] | None) -> tuple[Task, list[str]] | None:
    return None if turns is None else (task, turns)


def measure(tasks: list[Task], catalog: Catalog) -> dict[str, tuple[int, int]]:
    """Each class's (successes, episodes) over `tasks`."""
    out = {}
    for name, (build, _) in CLASSES.items():
        passed = total = 0
        for task in tasks:
            probe = build(task, catalog)
            if probe is None:
                continue
            played, turns = probe
            total += 1
            passed += verify(played, turns, catalog).success
        out[name] = (passed, total)
    return out
