"""How customers phrase prompts: counts, mass nouns, sizes, variants, and the frame around a
request.

Shared by the scenario modules' prompt-building lines, so that "two bottles of woody
fragrance", "a pair of black sneakers" and "size M" / "50 ml" / "queen size" come out right in
every scenario (never "two of the black fragrance" or "in size one size"), and every prompt is
composed as opener x request frame x closer (`compose`, `frame`; seeded like everything else).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ecomrlve.catalogs.taxonomy import (
    CATEGORY_BY_NAME,
    HEADPHONE_FITS,
    fix_articles,
    size_words,
)
from ecomrlve.generators.draws import pick
from ecomrlve.generators.phrasing import add_typos, render

NUMBER_WORDS: dict[int, str] = {
    1: "one",
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    7: "seven",
    8: "eight",
    9: "nine",
}

# How the `color` column is phrased after a category name, per variant kind.
VARIANT_PHRASES: dict[str, tuple[str, ...]] = {
    "colour": ("in {v}", "in the colour {v}", "in {v} colour"),
    "roast": ("in a {v}", "as a {v}", "with a {v}"),
    "flavour": ("in {v} flavour", "with {v} flavour", "in the flavour {v}"),
    "scent": ("with a {v} scent", "in a {v} scent", "with {v} notes"),
    "skin type": ("for {v}", "made for {v}", "suited to {v}"),
}


def number_word(n: int) -> str:
    return NUMBER_WORDS.get(n, str(n))


def counted(n: int | None, category: str, described: str = "") -> str:
    """`n` items of `category` with `described` words before the noun: "two black t-shirts",
    "one pair of black jeans", "three bags of dark roast coffee"; `n=None` is "some …"."""
    spec = CATEGORY_BY_NAME.get(category)
    words = f"{described} {category}".strip()
    if n is None:
        return f"some {words}"
    if spec is not None and spec.unit:
        unit = spec.unit if n == 1 else _plural(spec.unit)
        return f"{number_word(n)} {unit} of {words}"
    if n == 1:
        noun = spec.singular if spec is not None and spec.singular else category
        return f"one {described} {noun}".replace("  ", " ")
    return f"{number_word(n)} {words}"


def _plural(unit: str) -> str:
    return unit + ("es" if unit.endswith(("s", "sh", "ch")) else "s")


def size_phrase(value: str) -> str:
    """A size after a product name: "in size M", "in 50 ml", "in queen size"; "" for one size."""
    if value == "one size":
        return ""
    if value in HEADPHONE_FITS:
        return f"with an {value} fit"
    return f"in {size_words(value)}"


def variant_phrase(category: str, value: str, rng: np.random.Generator) -> str:
    """The `color` value after a category name: "in navy", "with a woody scent"."""
    spec = CATEGORY_BY_NAME.get(category)
    kind = spec.variant if spec is not None else "colour"
    phrase = pick(rng, VARIANT_PHRASES.get(kind, VARIANT_PHRASES["colour"])).format(v=value)
    return fix_articles(phrase)


# ---- composing a prompt: opener x request x closer ---------------------------------------------
# Openers and closers vary register and length (none, a greeting, small talk, terse); composed
# with each scenario's request frames, the surface forms multiply.
OPENERS: tuple[str, ...] = (
    "", "", "", "Hi!", "Hello!", "Hi there.", "Hey,", "Hey there!", "Good morning!",
    "Good evening.", "Hello, hope you're well.", "Hi, quick one.", "Morning!",
    "Hiya!", "Hi, I need a hand.", "Sorry to bother you.", "I hope you can help.", "Hi team,",
    "Hello again!", "Okay, so", "Right,", "Hi, it's me again.", "Good afternoon,",
)  # fmt: skip
CLOSERS: tuple[str, ...] = (
    "", "", "", "Thanks!", "Thank you.", "Thanks a lot.", "Many thanks.", "Appreciate it!",
    "Thanks in advance.", "Cheers.", "Thank you so much!", "Much appreciated.",
    "Let me know, thanks.", "That would be great.", "Thanks for your help!",
    "I'd really appreciate it.", "Thanks, have a nice day.",
)  # fmt: skip
_GREETING = re.compile(r"^(?:hi|hello|hey|good (?:morning|afternoon|evening))\b", re.IGNORECASE)
_THANKS = re.compile(r"\b(?:thanks|thank you)\b[.!]?$", re.IGNORECASE)


def _join(opener: str, request: str, closer: str) -> str:
    # "Hey, can you…" (an opener that runs on), but "I" and names stay capitalised
    runs_on = opener.endswith(",") or opener == "Okay, so"
    if runs_on and not re.match(r"^(?:I\b|I'|[A-Z][a-z]+ [A-Z])", request):
        request = re.sub(r"^\{(\w+)_cap\}", r"{\1}", request)  # "{item_cap}" -> "{item}"
        request = request[:1].lower() + request[1:]
    return " ".join(part for part in (opener, request, closer) if part)


def frame_parts(request: str, rng: np.random.Generator) -> tuple[str, str]:
    """An opener and a closer for `request` (none that would repeat its greeting or thanks)."""
    opener = "" if _GREETING.match(request) else pick(rng, OPENERS)
    closer = "" if _THANKS.search(request.strip()) else pick(rng, CLOSERS)
    return opener, closer


def compose(
    template: str, values: dict[str, Any], rng: np.random.Generator, typo_rate: float
) -> str:
    """A prompt: an opener, the request frame `template` filled with `values`, a closer.

    Typos (at `typo_rate`) touch only the literal words, never the values, as in `render`.
    """
    opener, closer = frame_parts(template, rng)
    return render(_join(opener, template, closer), values, rng, typo_rate)


def frame(text: str, rng: np.random.Generator, typo_rate: float) -> str:
    """An already rendered request with an opener and a closer (their words may get typos)."""
    opener, closer = frame_parts(text, rng)
    opener = add_typos(opener, typo_rate, rng)
    closer = add_typos(closer, typo_rate, rng)
    return _join(opener, text, closer)
