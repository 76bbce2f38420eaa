"""The simulated customer: deterministic, template-based, no LLM.

It answers `ask_user` from the task's hidden `goal.user_facts`: every fact whose keywords
(`ecomrlve.tasks.USER_FACT_KEYWORDS`, matched at word starts, case-insensitive) appear in the
question is answered, each with one of several paraphrase templates chosen by a hash of
(task seed, fact key, how many questions came before). A question that matches no fact gets a
"don't know" reply.

Noise, per task:
* `goal.typo_rate`: each template word of 4+ letters gets two adjacent inner letters swapped
  with that probability (numpy generator seeded by the task seed and the reply number). The
  fact values themselves are never altered, so a noisy task stays solvable.
* `goal.intent_switch`: the second intent text is revealed once — appended to the reply to the
  first `ask_user`, or, if the agent has not asked by then, as a user message after assistant
  turn `INTENT_SWITCH_TURN` (the env does that part).

Replies never contain item ids or acceptance sets: any token of a fact value (or of the intent
switch text) that is a catalog item id — every acceptance set consists of those — is replaced
by "the one I mentioned".
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

import numpy as np

from ecomrlve.tasks import USER_FACT_KEYWORDS, Task

INTENT_SWITCH_TURN = 2
TYPO_STREAM = 7
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_WORD = re.compile(r"[A-Za-z]{4,}")

FACT_TEMPLATES: dict[str, tuple[str, ...]] = {
    "category": ("I'm looking for {v}.", "It's {v} that I need.", "What I want is {v}."),
    "brand": ("I'd like it from {v}.", "The brand should be {v}.", "Brand-wise, {v} please."),
    "color": ("In {v}, please.", "The colour should be {v}.", "I want it in {v}."),
    "size": ("Size {v}, please.", "I need size {v}.", "It has to be {v}."),
    "budget": ("My budget is {v}.", "I can spend up to {v}.", "No more than {v}, please."),
    "min_rating": (
        "It should be rated at least {v}.",
        "Only things with a rating of {v} or more.",
        "I want at least {v} stars.",
    ),
    "max_ship_days": (
        "It has to arrive within {v}.",
        "Delivery within {v}, please.",
        "I need it in {v} at most.",
    ),
    "quantity": ("I need {v}.", "{v}, please.", "Make it {v}."),
    "order": ("It's about {v}.", "I mean {v}.", "The order is {v}."),
    "item": ("It's {v}.", "I mean {v}.", "The item is {v}."),
    "reason": ("Well, {v}.", "The reason: {v}.", "Because {v}."),
    "preference": ("I'd prefer {v}.", "Ideally {v}.", "If possible, {v}."),
}
GENERIC_TEMPLATES: tuple[str, ...] = ("About the {k}: {v}.", "For the {k}, {v}.")
DONT_KNOW: tuple[str, ...] = (
    "Sorry, I don't know — I only know what I told you.",
    "I'm not sure about that, it doesn't matter to me.",
    "No idea, honestly. Whatever works.",
)
SWITCH_TEMPLATES: tuple[str, ...] = ("Oh, and one more thing: {v}", "Actually, also: {v}")


def _pick(options: tuple[str, ...], *key: object) -> str:
    digest = zlib.crc32(":".join(str(k) for k in key).encode())
    return options[digest % len(options)]


def _keyword_pattern(keywords: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(r"\b" + re.escape(k) for k in keywords), re.IGNORECASE)


KEYWORD_PATTERNS: dict[str, re.Pattern[str]] = {
    key: _keyword_pattern(words) for key, words in USER_FACT_KEYWORDS.items()
}


class SimulatedUser:
    """Answers questions from one task's hidden facts; deterministic per task."""

    def __init__(self, task: Task, is_item_id: Callable[[str], bool]):
        self.task = task
        self.goal = task.goal
        self._is_item_id = is_item_id
        self.questions = 0
        self.replies = 0
        self.intent_revealed = self.goal.intent_switch is None

    def _scrub(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            token = match.group(0)
            if self._is_item_id(token):  # every acceptance set holds catalog item ids
                return "the one I mentioned"
            return token

        return _TOKEN.sub(replace, str(text))

    def _typos(self, text: str, protected: list[str]) -> str:
        rate = float(self.goal.typo_rate)
        if rate <= 0.0:
            return text
        rng = np.random.default_rng(
            np.random.SeedSequence([abs(self.task.seed), TYPO_STREAM, self.replies])
        )
        spans = []
        for value in protected:
            start = text.find(value)
            while start >= 0:
                spans.append((start, start + len(value)))
                start = text.find(value, start + len(value))

        def swap(match: re.Match[str]) -> str:
            word = match.group(0)
            draw = rng.random()
            if any(a < match.end() and match.start() < b for a, b in spans) or draw >= rate:
                return word
            i = 1 + int(rng.integers(0, len(word) - 2))
            if i + 1 >= len(word):
                return word
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

        return _WORD.sub(swap, text)

    def answer(self, question: str) -> str:
        """The reply to one `ask_user` question."""
        self.questions += 1
        parts: list[str] = []
        values: list[str] = []
        for key, raw_value in self.goal.user_facts.items():
            pattern = KEYWORD_PATTERNS.get(key)
            if pattern is None:
                words = key.replace("_", " ")
                pattern = _keyword_pattern((words,))
            if not pattern.search(question):
                continue
            value = self._scrub(raw_value)  # only facts that are said get scrubbed
            templates = FACT_TEMPLATES.get(key, GENERIC_TEMPLATES)
            template = _pick(templates, self.task.seed, key, self.questions)
            parts.append(template.format(v=value, k=key.replace("_", " ")))
            values.append(value)
        if not parts:
            parts.append(_pick(DONT_KNOW, self.task.seed, "dont-know", self.questions))
        reply = self._typos(" ".join(parts), values)
        self.replies += 1
        if not self.intent_revealed:
            reply = f"{reply} {self.reveal_intent()}"
        return reply

    def reveal_intent(self) -> str:
        """The second intent as the user says it (once); empty when there is none or it's out."""
        if self.intent_revealed or not self.goal.intent_switch:
            return ""
        self.intent_revealed = True
        text = self._scrub(self.goal.intent_switch)
        return _pick(SWITCH_TEMPLATES, self.task.seed, "switch").format(v=text)
