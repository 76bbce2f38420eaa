"""Measures of how real generated text reads: lint rules and diversity figures (issue 13).

Shared by `tests/test_realism_lint.py` (the lint rules over thousands of prompts and simulated
user replies) and `benchmarks/diversity.py` (distinct openings per scenario, non-catalog word
types, distinct user-reply forms per fact kind).

Example:
    >>> lint("Please put two of the black fragrance in my cart")
    ['count of a mass noun: two of the black fragrance']
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable

from ecomrlve.catalogs.taxonomy import CATEGORIES
from ecomrlve.env.episode.user import SimulatedUser
from ecomrlve.generators.phrasing import QUESTION_WORDS
from ecomrlve.tasks import Task

# Category names that are mass nouns: counted with a unit ("two bottles of fragrance").
MASS_NOUNS: tuple[str, ...] = tuple(c.name for c in CATEGORIES if c.unit and c.name[-1] != "s")
_COUNT = r"(?:one|two|three|four|five|six|seven|eight|nine|\d+|some|several)"
LINT_RULES: dict[str, re.Pattern[str]] = {
    "doubled word": re.compile(r"\b([A-Za-z]+)\s+\1\b", re.IGNORECASE),
    "size one size": re.compile(r"\bsize\s+one size\b", re.IGNORECASE),
    "count of a mass noun": re.compile(
        rf"\b{_COUNT} of the (?:[\w-]+ ){{0,3}}(?:{'|'.join(MASS_NOUNS)})\b", re.IGNORECASE
    ),
    "a before a vowel": re.compile(r"\ba (?=[aeio])(?!one\b)\w+", re.IGNORECASE),
    "unfilled placeholder": re.compile(r"\{[^{}]*\}|<v>|\bNone\b|\bnan\b"),
    # item, family, user and policy ids (order ids belong to what the user may quote)
    "id": re.compile(r"\b(?:I\d{7}|F\d{7}|U\d{6}|POL-\d{3})\b"),
}


def lint(text: str) -> list[str]:
    """The lint findings in `text`: "<rule>: <matched text>" for each match."""
    return [
        f"{rule}: {m.group(0)}"
        for rule, pattern in LINT_RULES.items()
        for m in pattern.finditer(text)
    ]


def user_replies(task: Task, is_item_id: Callable[[str], bool]) -> dict[str, list[str]]:
    """What the simulated user says about each of the task's facts, asked one fact at a time
    (three times each, so the paraphrase forms rotate) and once with a catch-all question."""
    replies: dict[str, list[str]] = defaultdict(list)
    user = SimulatedUser(task, is_item_id)
    for key in task.goal.user_facts:
        question = f"Could you tell me {QUESTION_WORDS.get(key, key.replace('_', ' '))}?"
        for _ in range(3):
            replies[key].append(user.answer(question))
    replies["catch-all"].append(user.answer("Anything else I should know?"))
    return replies


def reply_forms(task: Task, replies: dict[str, list[str]]) -> dict[str, set[str]]:
    """Per fact kind, the sentence stating the fact with the value replaced by "<v>"."""
    forms: dict[str, set[str]] = defaultdict(set)
    for key, texts in replies.items():
        value = task.goal.user_facts.get(key)
        if not value:
            continue
        for text in texts:
            for sentence in re.split(r"(?<=[.!?])\s+", text):
                if value in sentence:
                    forms[key].add(sentence.replace(value, "<v>"))
    return forms


def opening(prompt: str, words: int = 3) -> str:
    """The first `words` words of a prompt, lower case, punctuation dropped."""
    return " ".join(re.findall(r"[a-z']+", prompt.lower())[:words])


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def word_types(texts: Iterable[str]) -> set[str]:
    """Lower-case word types (letters, with inner apostrophes) of `texts`."""
    types: set[str] = set()
    for text in texts:
        types.update(_WORD.findall(text.lower()))
    return types
