"""How customers phrase products in prompts: counts, mass nouns, sizes and variants.

Shared by the scenario modules' prompt-building lines, so that "two bottles of woody
fragrance", "a pair of black sneakers" and "size M" / "50 ml" / "queen size" come out right in
every scenario (never "two of the black fragrance" or "in size one size").
"""

from __future__ import annotations

import numpy as np

from ecomrlve.catalogs.taxonomy import CATEGORY_BY_NAME, HEADPHONE_FITS, size_words
from ecomrlve.generators.draws import pick

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
    return pick(rng, VARIANT_PHRASES.get(kind, VARIANT_PHRASES["colour"])).format(v=value)
