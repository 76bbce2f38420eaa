"""Reference solutions as assistant turns: what `ecomrlve solve` writes and SFT trains on.

One reference tool call per turn (Qwen3 `<tool_call>` format), then a final answer a customer
would accept: one plain sentence per action taken (return filed, exchange set up, order
placed…) and the sentences the generator wrote for the facts asked about (`AnswerFact.say`).
A request that was refused is answered with why, never with "done".
"""

from __future__ import annotations

from typing import Any

from ecomrlve.env.parser import format_call
from ecomrlve.tasks import Task

CONFIRMATION = "All done — your request has been taken care of."


def _action_sentence(name: str, arguments: dict[str, Any]) -> str | None:
    """What a write call did, in words (facts carry what cancellations mean)."""
    if name == "return_item":
        return (
            f"I've started a return of {arguments['item_id']} from order {arguments['order_id']}."
        )
    if name == "exchange_item":
        return (
            f"I've set up the exchange of {arguments['item_id']} from order "
            f"{arguments['order_id']} for {arguments['new_item_id']}."
        )
    if name == "checkout":
        return "I've placed your order."
    if name == "recommend":
        return "These fit what you asked for: " + ", ".join(arguments["item_ids"]) + "."
    return None


def final_answer(task: Task) -> str:
    """The reference final answer: what was done, then every fact asked about."""
    sentences = [s for call in task.reference if (s := _action_sentence(call.name, call.arguments))]
    sentences += [fact.say for fact in task.goal.answer_facts if fact.say]
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
