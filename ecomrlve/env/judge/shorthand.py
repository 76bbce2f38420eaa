"""Shop shorthand spelled out before the answer is read: "O1 dlvd May 3", "shpd", "Cxl'd O2".

A terse note drops a done verb's vowels ("dlvd", "shpd", "rtnd", "rcvd") or writes "cancel" as
"cx" ("cxld", "cxl'd"). A word is read as such a shorthand only when it is no English word
(`wordfreq`'s list), holds four letters or more, ends in "d" like the verb's done form, and its
letters are, in order, the letters of exactly one of the verbs below with the same first
letter, and not of its stem ("rfnd" is "refund" as well as "refunded"): "prcd" could be
"processed" or "purchased" and stays as it is. The verb then stands in
the answer, so the facts and the claims read it (and check it) as they read the word itself.
"""

from __future__ import annotations

import functools
import re

# the done forms a status or a write is said in
DONE_VERBS = ("delivered", "shipped", "dispatched", "cancelled", "returned",
              "refunded", "exchanged", "processed", "ordered", "received", "arrived",
              "purchased", "placed", "confirmed")  # fmt: skip
# a candidate: a letter, then two to eight consonants (an apostrophe allowed), then "d"
_CANDIDATE = re.compile(r"\b[a-z][b-df-hj-np-tv-xz']{2,8}d\b", re.I)
_RARE = 2.0  # wordfreq's zipf: an English word is written at least once per 10 million words


def spelled_out(text: str) -> str:
    """`text` with each shorthand done verb written out in full (lower case)."""
    return _CANDIDATE.sub(_spelled, text)


def _spelled(match: re.Match[str]) -> str:
    return _verb_of(match.group().lower()) or match.group()


@functools.lru_cache(maxsize=4096)
def _verb_of(word: str) -> str | None:
    letters = word.replace("'", "")
    if letters.startswith("cx"):  # "cx" is "cancel" in shop and travel notes
        letters = "canc" + letters[2:]
    if len(letters) < 4 or letters in DONE_VERBS or not _is_rare(word):
        return None
    found = [
        verb
        for verb in DONE_VERBS
        if verb[0] == letters[0]
        and _in_order(letters, verb)
        and not _in_order(letters, verb.removesuffix("ed"))
    ]
    return found[0] if len(found) == 1 else None


def _in_order(letters: str, word: str) -> bool:
    """Every letter of `letters` stands in `word`, in the same order."""
    rest = iter(word)
    return all(c in rest for c in letters)


def _is_rare(word: str) -> bool:
    from wordfreq import zipf_frequency  # imported on first use (the language check loads it)

    return zipf_frequency(word, "en") < _RARE
