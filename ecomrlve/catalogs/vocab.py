"""Vocabularies taken once from Faker's providers (never one Faker call per row).

Reading the providers' word lists gives the same realism as calling Faker per field, at numpy
speed: rows are then sampled by index (see `synth.py`). Colours, product types and descriptions
are the shop's own (`taxonomy.py`), not CSS colour names or lorem words.
"""

from __future__ import annotations

from functools import cache

from faker.providers.person.en_US import Provider as PersonProvider


@cache
def brand_names() -> tuple[str, ...]:
    """Brand names built from Faker's surnames and company suffixes, deterministic order."""
    surnames = list(PersonProvider.last_names)
    suffixes = ("", "", "", " & Co", " Labs", " Works", " Supply", " Studio")
    return tuple(f"{name}{suffixes[i % len(suffixes)]}" for i, name in enumerate(surnames))
