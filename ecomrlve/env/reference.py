"""Reference solutions as assistant turns: what `ecomrlve solve` writes and SFT trains on.

One reference tool call per turn (Qwen3 `<tool_call>` format), then a final answer that states
the first alternative of every `answer_facts` entry, so the verifier accepts it.
"""

from __future__ import annotations

from ecomrlve.env.parser import format_call
from ecomrlve.tasks import Task

CONFIRMATION = "All done — your request has been taken care of."


def final_answer(task: Task) -> str:
    """The reference final answer: a confirmation plus every answer fact."""
    facts = [alternatives[0] for alternatives in task.goal.answer_facts if alternatives]
    if not facts:
        return CONFIRMATION
    return f"{CONFIRMATION} Here is what you asked about: " + "; ".join(facts) + "."


def reference_turns(task: Task) -> list[str]:
    """The reference trajectory of `task`: one `<tool_call>` turn per call, then the answer."""
    turns = [format_call(call.name, call.arguments) for call in task.reference]
    turns.append(final_answer(task))
    return turns
