# ruff: noqa: E501  (the word lists read best one per line)
"""What a write tool declares beside its method: `@tool(ToolKind.WRITE, milestone=...,
writes=Writes(...))` in `tools.py`. The layers above read these declarations and hold no list of
write tools of their own:

* `action`: its `ActionKind`, what a claim of it is called and the words the claim reader knows
  it by (`ecomrlve.env.judge.claims.kinds` reads every tool's kind with its own);
* `done`: how a successful call of it becomes the `Action` a claim is checked against
  (`ecomrlve.env.judge.claims.episode.succeeded_actions`);
* `say`: the sentence the reference's final message says about a call of it
  (`ecomrlve.env.episode.reference.final_answer`);
* `goal_check`: the end state its goal needs, as violations (`ecomrlve.env.judge.verifier.judge`
  runs it after its own checks): what the task's goal or its reference's calls of the tool say
  should be so (the shop's own writes are checked against their `Goal` fields by the verifier);
* `confirmed`: a `confirm_writes` shop rule holds it until the customer's yes;
* `answer`: it is the agent's answer (`recommend`), not a change to the shop: only its last
  successful call stands, and "nothing changed" does not deny it.

Its milestone rule is the decorator's `milestone` (`milestones.py`). The shop's own tools'
declarations are below, one per write tool and named after it, as their milestone rules are in
`milestones.py`; a new tool may write its declaration next to its method instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ecomrlve.env.shop.state import WorldState
from ecomrlve.tasks import Task


@dataclass(frozen=True)
class ActionKind:
    """One action a message can report, promise or deny.

    `verbs`: lemmas whose any form speaks of it ("call off": "off" within three words after);
    `nouns`: lemmas that speak of it with an effect verb (`EFFECTS`, or `effects` when given);
    `states`: adjectives (or a phrase ending in one of its words) that report it after a
    form of "be" ("is now void", "is on order");
    `context`: words one of which the clause must hold ("cart" for an addition); `excludes`:
    words that make the clause another kind's; `covers`: the action kinds of the episode that
    make a report true (default: `name`); `needs_name`: a report must name a product acted
    on; `advice_unnamed`: a report naming no product is advice ("I'd suggest waiting");
    `lands`: where its result lands ("on your card"); `phrases` / `denial`: patterns of a kind said in set phrases rather than a verb ("these fit
    what you asked for", "nothing fits")."""

    name: str
    verbs: tuple[str, ...] = ()
    nouns: tuple[str, ...] = ()
    states: tuple[str, ...] = ()  # adjectives of its result after "is" ("the order is void")
    effects: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    covers: tuple[str, ...] = ()
    needs_name: bool = False
    advice_unnamed: bool = False
    phrases: str = ""
    denial: str = ""
    hints: tuple[
        str, ...
    ] = ()  # words one of which a clause holds when `phrases` or `denial` match
    # where its result lands: a noun of it said to be there is done ("the credit is now on
    # your account", "the money is back on your card")
    lands: tuple[str, ...] = ()
    phrases_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    denial_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(
            self,
            "phrases_re",
            re.compile(rf"\b(?:{self.phrases})\b", re.I) if self.phrases else None,
        )
        set_(self, "denial_re", re.compile(self.denial, re.I) if self.denial else None)
        if not self.covers:
            set_(self, "covers", (self.name,))
        if not (self.verbs or self.nouns or self.phrases):
            raise ValueError(f"action kind {self.name!r} needs verbs, nouns or phrases")
        if (self.phrases or self.denial) and not self.hints:
            raise ValueError(f"action kind {self.name!r} needs hints for its phrases")


@dataclass(frozen=True, slots=True)
class Action:
    """One write that succeeded: its kind and the orders and products it touched."""

    kind: str
    orders: frozenset[str] = frozenset()
    items: frozenset[str] = frozenset()


class ReferenceView(Protocol):
    """What a reference sentence reads of its task (`ecomrlve.env.episode.reference` gives it)."""

    def product_name(self, item_id: str) -> str:
        """The product as the reference names it: its title with the id in brackets."""
        ...

    def ordered(self) -> list[str]:
        """The products the reference's checkout orders."""
        ...


# a successful call's arguments, the state at the episode's end and how many successful calls
# of the same tool came before it -> the action a claim of it is checked against (None: none)
DoneRule = Callable[[dict[str, Any], WorldState, int], Action | None]
# the task (as the reference sees it) and a call's arguments -> the reference's sentence about it
SayRule = Callable[[ReferenceView, dict[str, Any]], str | None]
# the task, the episode's initial state and its end state -> the goal's violations ("goal: …")
GoalCheck = Callable[[Task, dict[str, Any], WorldState], list[str]]


@dataclass(frozen=True)
class Writes:
    """A write tool's declaration (the module docstring says who reads each field)."""

    action: ActionKind
    done: DoneRule
    say: SayRule | None = None
    goal_check: GoalCheck | None = None
    confirmed: bool = False
    answer: bool = False


# --------------------------------------------------------------------------------------------
# the shop's write tools
# --------------------------------------------------------------------------------------------

CART = ("cart", "basket", "bag", "trolley")
CHANGES = ("change", "update", "switch", "edit", "correct", "replace", "set", "adjust", "fix",
           "modify", "amend", "increase", "decrease", "reduce", "raise", "lower", "bump")  # fmt: skip


def _lines(order: dict[str, Any]) -> frozenset[str]:
    return frozenset(line["item_id"] for line in order["items"])


def _item(kind: str) -> DoneRule:
    return lambda args, state, nth: Action(kind, items=frozenset({args["item_id"]}))


def _set_quantity(args: dict[str, Any], state: WorldState, nth: int) -> Action:
    kind = "remove" if args.get("quantity") == 0 else "quantity"
    return Action(kind, items=frozenset({args["item_id"]}))


def _placed(args: dict[str, Any], state: WorldState, nth: int) -> Action | None:
    # the nth successful checkout placed the nth new order
    if nth >= len(state.new_order_ids):
        return None
    order_id = state.new_order_ids[nth]
    return Action("order", frozenset({order_id}), _lines(state.orders[order_id]))


def _say_placed(ref: ReferenceView, args: dict[str, Any]) -> str | None:
    names = [f"the {ref.product_name(i)}" for i in ref.ordered()]
    if not names:
        return None
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    return f"I've placed your order for {listed}."


def _cancelled(args: dict[str, Any], state: WorldState, nth: int) -> Action:
    order_id = args["order_id"]
    return Action("cancel", frozenset({order_id}), _lines(state.orders[order_id]))


def _returned(args: dict[str, Any], state: WorldState, nth: int) -> Action:
    return Action("return", frozenset({args["order_id"]}), frozenset({args["item_id"]}))


# the product after a colon: the answer checker reads "return" and a brand such as "May Works"
# in one clause as "may return"
def _say_returned(ref: ReferenceView, args: dict[str, Any]) -> str:
    return (
        f"I've started a return from order {args['order_id']}: the "
        f"{ref.product_name(args['item_id'])}."
    )


def _exchanged(args: dict[str, Any], state: WorldState, nth: int) -> Action:
    items = frozenset({args["item_id"], args["new_item_id"]})
    return Action("exchange", frozenset({args["order_id"]}), items)


def _say_exchanged(ref: ReferenceView, args: dict[str, Any]) -> str:
    return (
        f"I've set up an exchange on order {args['order_id']}: the "
        f"{ref.product_name(args['item_id'])} goes back and the "
        f"{ref.product_name(args['new_item_id'])} comes to you."
    )


def _recommended(args: dict[str, Any], state: WorldState, nth: int) -> Action:
    return Action("recommend", items=frozenset(args["item_ids"]))


def _say_recommended(ref: ReferenceView, args: dict[str, Any]) -> str:
    names = [ref.product_name(i) for i in args["item_ids"]]
    return "These fit what you asked for: " + "; ".join(names) + "."


# fmt: off
add_to_cart = Writes(
    ActionKind("add", verbs=("add", "put", "place", "pop", "drop", "throw", "toss", "load"), context=CART),
    done=_item("add"),
)
remove_from_cart = Writes(
    ActionKind("remove", verbs=("remove", "delete", "take out", "take off", "clear", "empty")),
    done=_item("remove"),
)
set_quantity = Writes(
    ActionKind("quantity", nouns=("quantity",), effects=CHANGES, covers=("quantity", "add", "remove")),
    done=_set_quantity,
)
checkout = Writes(
    ActionKind(
        "order",
        verbs=("place", "order", "purchase", "buy", "check out", "reorder"),
        nouns=("order", "purchase", "checkout"),
        states=("on order",),  # "the jacket is on order for you" (not "… on order O1")
        excludes=CART,
        # "I couldn't complete your order", "the payment didn't go through"
        denial=r"\b(?:order|purchase|checkout|payment) (?:didn't|did not|couldn't|could not|wouldn't|would not|won't|will not) go through"
        r"|\b(?:order|purchase|checkout) (?:has |have )?failed|\bwhenever you(?:'re| are)? (?:ready|want|like) to check ?out",
        hints=("through", "failed", "check", "checkout"),
    ),
    done=_placed,
    say=_say_placed,
    confirmed=True,
)
cancel_order = Writes(
    ActionKind(
        "cancel",
        verbs=("cancel", "void", "stop", "withdraw", "call off", "annul", "rescind", "revoke", "abort",
               "axe", "kill", "pull the plug", "terminate", "halt", "scrap", "nullify", "nix",
               "scrub", "ditch", "undo", "retract", "countermand", "quash", "invalidate"),
        nouns=("cancellation", "cancelation"),
        states=("void", "null"),
    ),
    done=_cancelled,
    confirmed=True,
)
return_item = Writes(
    ActionKind(
        "return",
        verbs=("return", "send back", "ship back", "mail back", "post back", "pick up", "collect",
               "take back"),
        nouns=("return", "pickup", "pick-up", "collection", "label", "rma", "courier", "returnable"),
        lands=("inbox", "mailbox"),  # "a return label for O1 is now in your inbox"
    ),
    done=_returned,
    say=_say_returned,
    confirmed=True,
)
exchange_item = Writes(
    ActionKind(
        "exchange",
        verbs=("exchange", "swap", "replace", "substitute", "trade in"),
        nouns=("exchange", "swap", "replacement", "substitute"),
        excludes=CART,
    ),
    done=_exchanged,
    say=_say_exchanged,
    confirmed=True,
)
recommend = Writes(
    ActionKind(
        "recommend",
        verbs=("recommend", "suggest"),
        phrases=r"I recommend|I'd recommend|I would recommend|I suggest|I'd suggest|I would suggest",
        advice_unnamed=True,
        hints=("recommend", "suggest"),
    ),
    done=_recommended,
    say=_say_recommended,
    answer=True,
)
# fmt: on
