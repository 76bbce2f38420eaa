"""Vocabularies taken once from Faker's providers (never one Faker call per row).

Reading the providers' word lists gives the same realism as calling Faker per field, at numpy
speed: rows are then sampled by index (see `synth.py`).
"""

from __future__ import annotations

import re
from functools import cache

from faker.providers.color import Provider as ColorProvider
from faker.providers.color.en_US import Provider as UsColorProvider
from faker.providers.company.en_US import Provider as CompanyProvider
from faker.providers.lorem.en_US import Provider as LoremProvider
from faker.providers.person.en_US import Provider as PersonProvider


def _split_camel(name: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()


@cache
def colors() -> tuple[str, ...]:
    """Simple colour names first (black, navy…), then the CSS names split into words."""
    simple = tuple(ColorProvider.safe_colors)
    extended = tuple(_split_camel(n) for n in UsColorProvider.all_colors)
    return tuple(dict.fromkeys(simple + extended))


@cache
def brand_names() -> tuple[str, ...]:
    """Brand names built from Faker's surnames and company suffixes, deterministic order."""
    surnames = list(PersonProvider.last_names)
    suffixes = ("", "", "", " & Co", " Labs", " Works", " Supply", " Studio")
    return tuple(f"{name}{suffixes[i % len(suffixes)]}" for i, name in enumerate(surnames))


@cache
def description_words() -> tuple[str, ...]:
    return tuple(LoremProvider.word_list)


@cache
def buzzwords() -> tuple[str, ...]:
    return tuple(w.lower() for group in CompanyProvider.catch_phrase_words for w in group)
