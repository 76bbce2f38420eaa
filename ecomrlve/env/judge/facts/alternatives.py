"""Values said as alternatives: two different values of one kind about one subject, with
nothing that gives the second a statement of its own, commit to neither.

"Delivered March 3 if not March 5", "March 3 (alternatively March 5)", "March 3, unless it was
March 5", "March 3 according to one scan, March 5 according to another": whatever joins them,
the second value has no word of its own. A value has one when a content word (a noun, verb or
adjective by `lemminflect`'s lemmas, less the closed class of English grammar words, `GRAMMAR`,
and the words of how sure the speaker is and where the value was read, `MODALITY`, and a
phrase of what it depends on, "depending on the time zone", "according to my notes") that the
first value's clause does not hold leads or follows it in its own clause: "ordered March 3,
delivered March 7", "placed March
3; today is March 5", "your jacket came March 3 and the shoes March 5". Two values joined as a
conjunction or a range ("March 3 and March 5", "between March 3 and March 5") state both; a
value in the cell of a table is its column's; a value with an order id of its own is about
another subject. The second value may open the next sentence ("Delivered March 3. Or was it
March 5?"). Read for dates (`alternative_dates`), "today", "yesterday" and "tomorrow" among
them ("March 3 if not today").
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

from lemminflect import getAllLemmas

# the closed class: pronouns, determiners, prepositions, conjunctions, auxiliaries and modals,
# negation; words a value's clause holds whatever it says
# fmt: off
GRAMMAR = frozenset((
    "i", "me", "my", "you", "your", "it", "its", "we", "us", "our", "they", "them", "their",
    "he", "him", "his", "she", "her", "this", "that", "these", "those", "there", "here", "one",
    "another", "other", "some", "any", "each", "either", "neither", "both", "all", "a", "an",
    "the", "of", "to", "in", "on", "at", "by", "for", "from", "with", "about", "as", "into",
    "than", "then", "and", "or", "nor", "but", "if", "unless", "whether", "though", "although",
    "while", "so", "not", "no", "be", "am", "is", "are", "was", "were", "been", "being",
    "have", "has", "had", "do", "does", "did", "will", "would", "shall", "should", "can",
    "could", "may", "might", "must", "it's", "i'm", "that's", "there's", "what", "which",
    "out",  # a particle ("ruled out")
))
# lemmas of how sure the speaker is and where a value comes from, not of what it is: a value
# whose clause adds only these is another guess at the same thing ("June 10 is also
# possible", "less likely June 10", "my notes show June 10 too", "I'd guess June 10")
MODALITY = frozenset((
    # how likely or sure: adjectives, adverbs and nouns of epistemic modality
    "possible", "impossible", "likely", "unlikely", "probable", "improbable", "plausible",
    "conceivable", "certain", "uncertain", "sure", "unsure", "clear", "unclear", "known",
    "unknown", "doubtful", "correct", "incorrect", "right", "wrong", "real", "actual", "true",
    "false", "exact", "precise", "equal", "alternative", "chance", "possibility", "doubt",
    "guess", "hunch", "idea", "option", "alternatively", "equally", "else", "instead",
    # degree: "less likely", "more probably", "just as possible"
    "less", "more", "much", "least", "most", "quite", "just", "rather", "somewhat", "slightly",
    "very",
    # believing, seeming, telling: the speaker's stance
    "think", "believe", "guess", "reckon", "suppose", "assume", "suspect", "doubt", "seem",
    "appear", "know", "tell", "say", "recall", "remember", "check", "double", "confirm",
    "verify", "show", "mention", "list", "indicate", "suggest", "state", "read", "display",
    # where the value was read: a source, not a role of the value
    "note", "log", "record", "system", "source", "memory", "entry", "data", "information",
    # how far it may be stretched: "today at a push", "today isn't ruled out"
    "push", "stretch", "rule",
))
# fmt: on
# a phrase that names what a value depends on or where it is from, to its clause's end:
# "depending on the time zone", "according to the courier", "based on the last scan"
_ADJUNCT = re.compile(r"\b(?:depending (?:on|upon)|according to|based on|going by)\b.*")
# words that join two values as both stated: a conjunction, a range
BOTH = frozenset(("and", "to", "through", "till", "until", "between", "from", "the", "on"))
_CONTENT = ("NOUN", "VERB", "ADJ")
# where a clause ends inside a sentence: a comma, a semicolon, a colon, a bracket, a dash; a
# value's clause after it goes on past a colon ("June 17: delivered")
_CLAUSE_END = re.compile(r"[,;:()\[\]]|\s-+\s|\s-+$|^-+\s")
_TAIL_END = re.compile(r"[,;()\[\]]|\s-+\s|\s-+$|^-+\s")
# (an ellipsis goes on: "June 3… or today, hard to tell")
_SENTENCE_END = re.compile(r"(?:(?<!\.)\.(?!\.)|[!?\n])[.!?\n]*(?!\d)")
_WORD = re.compile(r"\b(?:o\d{7}|n\d{4})\b|[a-z]+(?:'[a-z]+)?")
_ORDER_ID = re.compile(r"^(?:o\d{7}|n\d{4})$")
# the words of a date itself, read from its start: "march 3rd", "the 3rd of march, 2026",
# "tuesday", "today", "in 3 days"
_DATE_TEXT = re.compile(
    r"(?:(?:the|of|in|this|next|last|coming|today|tomorrow|yesterday|days?|weeks?"
    r"|[a-z]+day|jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march"
    r"|april|june|july|august|september|october|november|december|\d+(?:st|nd|rd|th)?)\b"
    r"(?:\.(?= ?\d))?(?:[ /-]|,(?= \d{4}))*)+"  # (a comma only before a year: "March 3, 2026")
)


@functools.lru_cache(maxsize=16384)
def _content(word: str) -> str:
    """The lemma of a content word, '' for a grammar word, an order id or a word of no class."""
    if word.endswith("'s"):  # "the carrier's"
        word = word[:-2]
    if word in GRAMMAR or word in MODALITY or "'" in word or word[0].isdigit():
        return ""  # "wasn't", "you're": grammar too
    if _ORDER_ID.match(word):
        return ""
    lemmas = getAllLemmas(word)
    return next((lemmas[pos][0] for pos in _CONTENT if pos in lemmas), "")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _own(text: str) -> set[str]:
    """The content lemmas of `text`, less those of a phrase of source or dependence."""
    text = _ADJUNCT.sub("", text)
    return {lemma for w in _words(text) if (lemma := _content(w)) and lemma not in MODALITY}


def _ids(text: str) -> set[str]:
    return {w for w in _words(text) if _ORDER_ID.match(w)}


def _first_clause(text: str) -> str:
    return _TAIL_END.split(text, maxsplit=1)[0]


def _last_clause(text: str) -> str:
    return _CLAUSE_END.split(text)[-1]


def _lead(text: str) -> str:
    """The words that lead a value: its clause's, or where a value opens its clause (an
    apposition: "today (June 20)"), the clause's before it."""
    clauses = _CLAUSE_END.split(text)
    return next((c for c in reversed(clauses) if _WORD.search(c)), "")


# a day word ("today's" is no day); one that is the subject of the date after it ("today is
# June 20") or set beside it ("as of today, June 20", "today (June 20)") names that date
_DAY_WORD = re.compile(r"\b(today|tomorrow|yesterday)\b(?!')")
_NAMES_DATE = re.compile(r"\s*(?:,|\(|[—–:])?\s*(?:(?:is|was)\s+)?(?:the\s+)?")
_DAY_OFFSET = {"today": 0, "tomorrow": 1, "yesterday": -1}
# a day word before the agent's act ("today I checked"), not before its guess ("today I think")
_AGENT_TODAY = re.compile(r" (?:i|we) (?!think|guess|believe|reckon|suppose|would|might)\w+ed\b")


def alternative_dates(
    text: str, located: Sequence[tuple[int, Any]], today: tuple[int, int, int] | None
) -> set[int]:
    """`alternatives` of the dates `located` ((position, readings)) and of the day words no
    role made a date ("June 3 if not today": today is a day all the same); two dates are the
    same when a month and day of theirs is ("today (June 20)" on June 20)."""
    if (
        today is not None
        and located
        and ("today" in text or "tomorrow" in text or "yesterday" in text)
    ):
        # a day word after a date of its sentence, or before it in the same sentence ("today,
        # or if not then June 3"; "As of today, …" gives no alternative: `alternatives` reads
        # the words between)
        taken = [k for k, _ in located]
        start = dt.date(*today)
        days = []
        opening = _SENTENCE_END.split(text[: taken[0]])[-1]
        for m in _DAY_WORD.finditer(text, taken[0] - len(opening)):
            k = bisect.bisect_left(taken, m.start())
            if k < len(taken) and taken[k] == m.start():
                continue  # a date already ("delivered today")
            if _AGENT_TODAY.match(text, m.end()):
                continue  # "Today I checked it again": when the agent did something
            named = _NAMES_DATE.match(text, m.end())
            if named and k < len(taken) and taken[k] == named.end():
                continue  # "today is June 20", "as of today, June 20": the date after it
            # in the date's sentence or the next ("June 17? Or today?"), or the sentence's
            # first date's before it
            if not k or len(_SENTENCE_END.findall(text, taken[k - 1], m.start())) <= 1:
                day = start + dt.timedelta(days=_DAY_OFFSET[m[1]])
                days.append((m.start(), {(day.year, day.month, day.day)}))
        located = sorted([*located, *days], key=lambda pair: pair[0])
    if len(located) < 2:
        return set()
    return alternatives(
        text,
        located,
        lambda a, b: not {(m, d) for _, m, d in a}.isdisjoint({(m, d) for _, m, d in b}),
    )


def alternatives(
    text: str, located: Sequence[tuple[int, Any]], same: Callable[[Any, Any], bool]
) -> set[int]:
    """The positions (in `text`, normalised) of the values of `located` ((position, value),
    one kind, in order) said as alternatives of another value about the same subject; `same`
    tells two values that say the same."""
    out: set[int] = set()
    stops = [m.span() for m in _SENTENCE_END.finditer(text)]
    starts = [0, *(b for _, b in stops)]  # sentence i runs from starts[i] to ends[i]
    ends = [*(a for a, _ in stops), len(text)]
    for (s1, first), (s2, second) in itertools.pairwise(located):
        i, j = bisect.bisect_right(starts, s1) - 1, bisect.bisect_right(starts, s2) - 1
        if same(first, second) or j - i > 1:
            continue  # the same date, or a sentence between them: not beside each other
        value1, value2 = _DATE_TEXT.match(text, s1), _DATE_TEXT.match(text, s2)
        after = value1.end() if value1 else s1
        between = text[after:s2]
        if "|" in between:
            continue  # two cells of a table: two columns
        # the first value's clause: its words before it, and those after it when a clause
        # (or its sentence) ends before the second value; the second's: those before it in
        # its clause and sentence, and those after it up to its clause's end
        cut = _TAIL_END.search(between)
        cuts = [cut.start()] if cut else []
        if j > i:
            cuts.append(ends[i] - after)
        after1 = between[: min(cuts)] if cuts else ""
        lead = _lead(text[starts[j] : s2] if j > i else between)
        said = _words(lead)
        if said and set(said) <= BOTH:
            continue  # "March 3 and March 5", "from March 3 to March 5": both stated
        rest = text[value2.end() if value2 else s2 : ends[j]]
        # about another order: the second's sentence names another than the first's, or an
        # id between them is one of two its sentence names ("O1 on June 3, O2 on June 5")
        first_ids = _ids(text[starts[i] : s1] + " " + (after1 if j > i else between))
        if j > i and (second_ids := _ids(text[starts[j] : ends[j]])) and second_ids != first_ids:
            continue
        if j == i and _ids(between) and len(first_ids | _ids(rest)) > 1:
            continue
        context = _own(_last_clause(text[starts[i] : s1])) | _own(after1)
        if _own(lead) | _own(_first_clause(rest)) <= context:
            out.update((s1, s2))
    return out
