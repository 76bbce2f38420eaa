"""Scalar draws from a task's numpy generator, cheap enough for the hot path.

`Generator.integers` costs ~2.7 µs per scalar call and a task makes dozens; one uniform draw
(`Generator.random`, ~1 µs) scaled to the range gives the same distribution. Everything stays
a pure function of the task's `SeedSequence`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def below(rng: np.random.Generator, n: int) -> int:
    """A uniform integer in [0, n)."""
    if n <= 0:
        raise ValueError(f"cannot draw below {n}")
    return int(rng.random() * n)


def between(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform integer in [low, high)."""
    return low + below(rng, high - low)


def pick(rng: np.random.Generator, options: Sequence[T]) -> T:
    """One element of `options`."""
    return options[below(rng, len(options))]


_WORD = 1 << 32


def seed_sequence(entropy: list[int]) -> np.random.SeedSequence:
    """`SeedSequence(entropy)`, the same state, cheaper: numpy turns a list into uint32 words
    one int at a time (~7 us); ints below 2**32 are one word each, so a uint32 array of them
    is the same entropy, read in one step (~2 us). Larger ints keep the list form."""
    if all(0 <= x < _WORD for x in entropy):
        return np.random.SeedSequence(np.array(entropy, dtype=np.uint32))
    return np.random.SeedSequence(entropy)
