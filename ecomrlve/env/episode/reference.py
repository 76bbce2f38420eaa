"""Reference solutions as assistant turns: what `ecomrlve solve` writes and SFT trains on.

One reference tool call per turn (Qwen3 `<tool_call>` format), then a final answer a customer
would accept: one plain sentence per action taken (return filed, exchange set up, order
placed…), naming the products by title with the id in brackets, and the sentences the
generator wrote for the facts asked about (`AnswerFact.say`). A request that was refused is
answered with why, never with "done".
"""

from __future__ import annotations

from typing import Any

from ecomrlve.env.episode.parser import format_call
from ecomrlve.env.shop import tools
from ecomrlve.tasks import Task

CONFIRMATION = "All done — your request has been taken care of."


def product_name(task: Task, item_id: str) -> str:
    """How the reference names a product to the customer: its title with the id in brackets
    ("Trailblaze running shoes - khaki, size 42 (I0018308)"); the id alone for task rows
    written before the goal carried titles."""
    title = task.goal.product_names.get(item_id)
    return f"{title} ({item_id})" if title else item_id


def refused_calls(task: Task) -> set[int]:
    """Indexes of the reference calls a world event refuses (issue 44): the add of a product
    that sells out at the add, the checkout of a cart holding one that sold out after its add,
    the cancel of an order that ships at the cancel. Events by call count refuse nothing here
    (their reference never runs into a refusal)."""
    refused: set[int] = set()
    pending = [e for e in task.events if e.kind in ("out_of_stock", "order_shipped")]
    withdrawn: set[str] = set()
    cart = {line["item_id"] for line in task.initial_state.get("cart", [])}
    for k, call in enumerate(task.reference):
        args = call.arguments
        for event in list(pending):
            if event.before == call.name and args.get(
                "item_id" if event.kind == "out_of_stock" else "order_id"
            ) in (event.item_id, event.order_id):
                pending.remove(event)
                withdrawn.add(event.item_id)
                refused.add(k)
        if k in refused:
            continue
        if call.name == "add_to_cart":
            cart.add(args["item_id"])
            for event in list(pending):
                if event.after == "add_to_cart" and event.item_id == args["item_id"]:
                    pending.remove(event)
                    withdrawn.add(event.item_id)
        elif call.name == "remove_from_cart":
            cart.discard(args["item_id"])
        elif call.name == "checkout":
            if cart & withdrawn:
                refused.add(k)
            else:
                cart = set()
    return refused


def reference_cart(task: Task) -> dict[str, int]:
    """The cart the reference checks out, product -> quantity: the starting cart played
    forward (calls a world event refuses change nothing)."""
    refused = refused_calls(task) if task.events else set()
    cart = {
        line["item_id"]: int(line.get("quantity", 1)) for line in task.initial_state.get("cart", [])
    }
    for k, call in enumerate(task.reference):
        if k in refused:
            continue
        args = call.arguments
        if call.name == "add_to_cart":
            cart[args["item_id"]] = cart.get(args["item_id"], 0) + int(args.get("quantity", 1))
        elif call.name == "remove_from_cart" or (
            call.name == "set_quantity" and args.get("quantity") == 0
        ):
            cart.pop(args["item_id"], None)
        elif call.name == "set_quantity":
            cart[args["item_id"]] = int(args["quantity"])
        elif call.name == "checkout":
            break
    return cart


class _Reference:
    """A task as its write tools' reference sentences read it (`writes.ReferenceView`)."""

    def __init__(self, task: Task):
        self.task = task

    def product_name(self, item_id: str) -> str:
        return product_name(self.task, item_id)

    def ordered(self) -> list[str]:
        """The products the reference's checkout orders (`reference_cart`)."""
        return list(reference_cart(self.task))


def _action_sentence(task: Task, name: str, arguments: dict[str, Any]) -> str | None:
    """What a write call did, in words, naming its products (facts carry what cancellations
    mean): its tool's `Writes.say` (declared beside the tool, `ecomrlve.env.shop.writes`)."""
    spec = tools.TOOL_SPECS.get(name)
    if spec is None or spec.writes is None or spec.writes.say is None:
        return None
    return spec.writes.say(_Reference(task), arguments)


def final_answer(task: Task) -> str:
    """The reference final answer: what was done, then every fact asked about."""
    # a call sent twice in a row is a retry after a transient failure: one action; a call a
    # world event refused did nothing
    refused = refused_calls(task) if task.events else set()
    calls = [
        c
        for k, c in enumerate(task.reference)
        if k not in refused and (k == 0 or c != task.reference[k - 1])
    ]
    sentences = [s for call in calls if (s := _action_sentence(task, call.name, call.arguments))]
    # world events the reference runs into (`WorldEvent.say` set): an order that shipped
    # before its cancel replaces what the goal says about that order; one asked about that
    # shipped before the reference looked replaces what it says of its status and date
    # (told where its status was, so the details after it still follow their order)
    told = [event for event in task.events if event.say]
    shipped = {e.order_id: e.say for e in told if e.kind == "order_shipped"}
    too_late = set(shipped) & set(task.goal.cancel)
    in_place = {order_id: say for order_id, say in shipped.items() if order_id not in too_late}
    for fact in task.goal.answer_facts:
        if not fact.say or fact.subject in too_late:
            continue
        if fact.subject in in_place and fact.kind in ("status", "date"):
            sentences.append(in_place.pop(fact.subject) if fact.kind == "status" else "")
            continue
        sentences.append(fact.say)
    sentences = [s for s in sentences if s]
    sentences += [
        event.say
        for event in told
        if event.kind != "order_shipped" or event.order_id in too_late or event.order_id in in_place
    ]
    legacy = [f.value for f in task.goal.answer_facts if f.kind == "text"]
    if legacy:  # tasks written before typed facts: state each key
        sentences.append("Here is what you asked about: " + "; ".join(legacy) + ".")
    if not sentences:
        return CONFIRMATION
    return " ".join(sentences)


def reference_turns(task: Task) -> list[str]:
    """The reference trajectory of `task`: one `<tool_call>` turn per call, then the answer."""
    turns = [format_call(call.name, call.arguments) for call in task.reference]
    turns.append(final_answer(task))
    return turns
