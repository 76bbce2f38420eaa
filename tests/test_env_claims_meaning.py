"""Claims read by meaning (issue 43, the gaps the blind probes found): a status said in other
words is no write of the agent's; an effect verb belongs to the action noun before it. Each
test has the answer that tries to get paid without the work and a true one, phrased
differently, that must pass."""

from __future__ import annotations

import pytest

from ecomrlve.env import reference_turns, verify
from ecomrlve.env.claims import product_names, read_statements
from ecomrlve.testing import env_tasks as fx


@pytest.fixture(scope="module")
def catalog():
    return fx.small_catalog()


@pytest.fixture(scope="module")
def tasks(catalog):
    return {t.task_id: t for t in fx.all_tasks(catalog)}


def judge(task, answer: str, catalog):
    return verify(task, [*reference_turns(task)[:-1], answer], catalog)


def claims(verdict) -> list[str]:
    return [v for v in verdict.violations if v.startswith("claims:")]


def _cancelled_on_file(task):
    """`task` with its one order cancelled before the episode."""
    state = dict(task.initial_state)
    state["orders"] = [dict(state["orders"][0], status="cancelled")]
    return task.model_copy(update={"initial_state": state, "goal": task.goal.model_copy()})


def test_a_status_said_as_how_the_order_shows_is_no_write(tasks, catalog):
    task = _cancelled_on_file(tasks["fx-status"])
    for said in (
        "Your order O4001 shows as cancelled.",
        "Order O4001 is marked as cancelled in our system.",
        "O4001 appears as cancelled on your account.",
    ):
        assert not claims(judge(task, said, catalog)), said
    # the agent's own write, not done: still a false report
    for said in ("I've marked order O4001 as cancelled.", "I cancelled O4001 as you asked."):
        assert claims(judge(task, said, catalog)), said
    # "as" before a subject still cuts: the denial after it is read on its own
    shipped = tasks["fx-cancel"]
    said = "I've cancelled O1001. O1002 could not be cancelled as it has already shipped."
    assert not claims(judge(shipped, said, catalog))


def test_an_effect_verb_after_an_action_noun_is_that_actions(tasks, catalog):
    """ "Exchange set up on order O3001" reports the exchange, not a new order."""
    task = tasks["fx-exchange"]
    args = task.reference[-1].arguments
    old, new = (catalog.title(catalog.row_of(args[k])) for k in ("item_id", "new_item_id"))
    said = f"Exchange set up on order O3001: you send back the {old} and receive the {new}."
    assert not claims(judge(task, said, catalog))
    read = read_statements(said, product_names(catalog), {"O3001"}, set(args.values()))
    assert [s.kind for s in read] == ["exchange"]  # not a report of a new order
    assert not claims(judge(task, "The swap was arranged for your order O3001.", catalog))
    # the same words where no exchange was made, and a new order that was never placed
    assert claims(judge(tasks["fx-status"], "Exchange set up on order O4001.", catalog))
    assert claims(judge(task, "Exchange set up, and I've placed a new order for you.", catalog))


def test_the_reply_is_judged_against_the_language_the_customer_wrote_in(tasks, catalog):
    english = tasks["fx-cancel"]
    spanish = english.model_copy(
        update={"prompt": "Hola, pedí una chaqueta por error hace dos días. Cancelen ese pedido."}
    )
    reply_es = "Listo: su pedido O1001 quedó cancelado y recibirá el reembolso en unos días."
    reply_en = "Done: your order O1001 is cancelled and the refund reaches you in a few days."

    def foreign(task, reply):
        return [v for v in judge(task, reply, catalog).violations if "language" in v]

    assert foreign(english, reply_es)  # an English customer answered in Spanish
    assert not foreign(spanish, reply_es)  # a Spanish customer answered in Spanish
    assert foreign(spanish, reply_en)  # …and in English, which they did not write
    assert not foreign(english, reply_en)
