"""How users say things: paraphrase templates, constraint phrases (sizes, variants), dates,
money, typos.

Typos are applied to the template's own words only, never to the values filled in (brands,
sizes, order ids, prices): a typo makes the request messier to read, not unanswerable.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from ecomrlve.catalogs.taxonomy import CATEGORY_BY_NAME, HEADPHONE_FITS, fix_articles, size_words
from ecomrlve.generators.draws import pick

_FORMATTER = string.Formatter()
_WORD = re.compile(r"[A-Za-z]{4,}")


def add_typos(text: str, rate: float, rng: np.random.Generator) -> str:
    """Swap two inner letters in each word of 4+ letters with probability `rate`.

    The draws are, in order, one uniform per word and, after each word that gets a typo, one
    for the letter (`between(rng, 1, len(word) - 2)`). They are read from one vector draw of
    a uniform per word, topped up one at a time when typos take some: `rng.random(n)` is the
    next n scalar draws, so the stream and the text are those of drawing word by word.
    """
    if rate <= 0:
        return text
    n = len(_WORD.findall(text))
    if not n:
        return text
    draws = rng.random(n).tolist()
    if min(draws) >= rate:  # no word gets a typo: the n draws are all the stream holds
        return text
    at, pieces, done = 0, [], 0
    for match in _WORD.finditer(text):
        if at == len(draws):
            draws.append(rng.random())
        u = draws[at]
        at += 1
        if u >= rate:
            continue
        if at == len(draws):
            draws.append(rng.random())
        word, start = match.group(), match.start()
        i = 1 + int(draws[at] * (len(word) - 3))  # between(rng, 1, len(word) - 2)
        at += 1
        pieces += [text[done:start], word[:i], word[i + 1], word[i], word[i + 2 :]]
        done = start + len(word)
    return "".join(pieces) + text[done:]


def render(
    template: str, values: dict[str, Any], rng: np.random.Generator, typo_rate: float
) -> str:
    """Fill `template` (str.format fields); typos touch only the template's literal text."""
    parts: list[str] = []
    for literal, field, spec, conversion in _FORMATTER.parse(template):
        parts.append(add_typos(literal, typo_rate, rng))
        if field is not None:
            value = values[field]
            if conversion:
                value = _FORMATTER.convert_field(value, conversion)
            parts.append(_FORMATTER.format_field(value, spec or ""))
    return " ".join("".join(parts).split())


def money(value: float) -> str:
    """Prices as users write them: "$80" for whole dollars, "$79.99" otherwise."""
    if abs(value - round(value)) < 1e-9:
        return f"${round(value)}"
    return f"${value:.2f}"


def nice_cap(price: float, slack: float) -> float:
    """A round budget cap at least `price * (1 + slack)` (5s under $100, 10s, then 50s)."""
    raw = price * (1.0 + slack)
    step = 5.0 if raw < 100 else 10.0 if raw < 500 else 50.0
    return float(math.ceil(raw / step) * step)


# English month names, fixed (what `strftime('%B')` gives in the C locale, at a third of the
# cost, and never another language whatever locale a caller has set)
MONTHS: tuple[str, ...] = ("January", "February", "March", "April", "May", "June", "July",
                           "August", "September", "October", "November", "December")  # fmt: skip


def spoken_date(day: dt.date) -> str:
    """ "May 3" style, as a shopper would say it."""
    return f"{MONTHS[day.month - 1]} {day.day}"


def month_phrase(day: dt.date) -> str:
    part = "early" if day.day <= 10 else "mid" if day.day <= 20 else "late"
    return f"{part} {MONTHS[day.month - 1]}"


def join_words(words: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    words = [w for w in words if w]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


# ---- product constraints in words --------------------------------------------------------------
CONSTRAINT_PHRASES: dict[str, tuple[str, ...]] = {
    "brand": ("from {v}", "made by {v}", "by {v}"),
    "color": ("in {v}", "in the colour {v}", "in {v} colour"),
    "size": ("in size {v}", "size {v}"),
    "max_price": ("under {v}", "for {v} or less", "that costs no more than {v}"),
    "min_rating": ("rated {v} stars or higher", "with at least {v} stars"),
    "max_ship_days": ("that arrives within {v} days", "that ships in {v} days or less"),
}


def constraint_value(key: str, value: Any) -> str:
    """A constraint value as the user says it (also the `user_facts` value)."""
    if key == "max_price":
        return money(value)
    if key == "min_rating":
        return f"{value:g}"
    if key == "max_ship_days":
        return str(int(value))
    return str(value)


# How the `color` column is phrased after a category name, per variant kind.
VARIANT_PHRASES: dict[str, tuple[str, ...]] = {
    "colour": ("in {v}", "in the colour {v}", "in {v} colour"),
    "roast": ("in a {v}", "as a {v}", "with a {v}"),
    "flavour": ("in {v} flavour", "with {v} flavour", "in the flavour {v}"),
    "scent": ("with a {v} scent", "in a {v} scent", "with {v} notes"),
    "skin type": ("for {v}", "made for {v}", "suited to {v}"),
}


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


def constraint_phrase(key: str, value: Any, rng: np.random.Generator, category: str = "") -> str:
    """A constraint after the category name: "from Smith Labs", "in size M", "in 50 ml",
    "with a woody scent" (the `color` of a category without colour is its variant)."""
    if key == "size":
        return size_phrase(str(value)) or "in one size"
    if key == "color":
        return variant_phrase(category, str(value), rng)
    return pick(rng, CONSTRAINT_PHRASES[key]).format(v=constraint_value(key, value))


def count_words(n: int, singular: str) -> str:
    """ "1 day", "3 days", "4.5 stars"."""
    return f"{n:g} {singular}" if n == 1 else f"{n:g} {singular}s"


def user_fact(key: str, value: Any) -> str:
    """How the simulated user states a constraint when asked: the bare value ("$40", "5 mm",
    "4 stars", "3 days"); the user's reply templates add the words around it."""
    if key == "min_rating":
        return count_words(float(value), "star")
    if key == "max_ship_days":
        return count_words(int(value), "day")
    return constraint_value(key, value)


# Which `USER_FACT_KEYWORDS` key a product constraint is revealed under.
FACT_KEY: dict[str, str] = {
    "category": "category",
    "brand": "brand",
    "color": "color",
    "size": "size",
    "max_price": "budget",
    "min_rating": "min_rating",
    "max_ship_days": "max_ship_days",
}

# Question words per fact key: each contains a keyword from `USER_FACT_KEYWORDS`.
QUESTION_WORDS: dict[str, str] = {
    "category": "what kind of product",
    "brand": "which brand",
    "color": "which colour",
    "size": "what size",
    "budget": "your budget",
    "min_rating": "the minimum rating",
    "max_ship_days": "how soon it must arrive",
    "quantity": "how many units",
    "order": "which order",
    "item": "which item",
    "reason": "the reason",
    "preference": "your brand preference",
}

ASK_TEMPLATES: tuple[str, ...] = (
    "Could you tell me {what}?",
    "Before I search: {what}?",
    "To get this right, could you share {what}?",
)


def ask_question(keys: Sequence[str], rng: np.random.Generator) -> str:
    """An `ask_user` question that names every fact key in `keys` by one of its keywords."""
    what = join_words([QUESTION_WORDS[k] for k in keys])
    return pick(rng, ASK_TEMPLATES).format(what=what)
