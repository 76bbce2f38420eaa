"""Answer text: normalisation (unicode, dashes, number words as digits) and sentence spans."""

from __future__ import annotations

import contextlib
import functools
import re
import unicodedata

from text_to_num import alpha2digit

from ecomrlve.env.judge.shorthand import spelled_out

# ---- normalisation ---------------------------------------------------------------------------
_DASHES = dict.fromkeys(
    map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-"
)
_QUOTES = dict.fromkeys(map(ord, "\u2018\u2019\u02bc\u2032"), "'")


def fold(text: str) -> str:
    """Lower-case ASCII-ish text (unicode, dashes and quotes folded), number words left as
    they are: for machine-written text such as tool results, which states numbers in digits."""
    if text.isascii():  # the common case: nothing to fold
        return text.lower()
    return unicodedata.normalize("NFKC", text).translate(_DASHES).translate(_QUOTES).lower()


def normalise(text: str) -> str:
    """Lower-case ASCII-ish text with number words as digits ("forty-five" -> "45") and
    shorthand done verbs spelled out ("dlvd" -> "delivered")."""
    text = spelled_out(fold(text))
    # alpha2digit costs ~40 us: only when there is a number word. Every number word holds
    # one of `_NUMBER_STEMS` (substring tests: ~4x cheaper than a regex, and most answers
    # hold none), then the hint (a literal first-letter scan, ~3x cheaper than
    # `_NUMBER_WORD`) finds every text `_NUMBER_WORD` matches
    if (
        any(stem in text for stem in _NUMBER_STEMS)
        and _NUMBER_HINT.search(text)
        and _NUMBER_WORD.search(text)
    ):
        # alpha2digit leaves "fourteen-day" as it is: "fourteen day" becomes "14 day", a
        # duration ("the fourteen-day window" must not hide its value from the check)
        text = _NUMBER_WORD_DAY.sub(" ", text)
        if "-" in text:
            text = _WORD_RANGE.sub(_range, text)
        with contextlib.suppress(Exception):  # an answer must never crash the verifier
            text = alpha2digit(text, "en")
        text = re.sub(r"\bzero\b", "0", text)
        # alpha2digit leaves a lone small number a word ("one of them"): before a unit it is one
        text = _SMALL_UNIT.sub(lambda m: f"{_SMALL[m[1]]} {m[2]}", text)
    return text


_NUMBER_WORD = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|twenty"
    r"|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|fourth|fifth|sixth|seventh|eighth"
    r"|ninth|tenth|eleventh|twelfth|\w+teenth|twentieth|thirtieth)\b"
)
_SMALL = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
          "seven": "7", "eight": "8", "nine": "9"}  # fmt: skip
# (and the dollars of a cheque's "one and 99/100 dollars")
_SMALL_UNIT = re.compile(
    rf"\b({'|'.join(_SMALL)}) (dollars?|cents?|days?|weeks?|and(?= \d\d/100))\b"
)
# two number words joined by a dash, a range ("seven-ten business days" is 7 to 10), unless
# they are one number ("twenty-one")
_SMALL_WORDS = (*_SMALL, "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                "sixteen", "seventeen", "eighteen", "nineteen")  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_WORD_RANGE = re.compile(
    rf"\b({'|'.join((*_SMALL_WORDS, *_TENS))})-({'|'.join((*_SMALL_WORDS, *_TENS))})\b"
)


def _range(m: re.Match[str]) -> str:
    if m[1] in _TENS and m[2] in _SMALL:
        return m[0]  # "twenty-one": one number
    return f"{m[1]} to {m[2]}"


# the hyphen of "fourteen-day", "twenty-one-week" (a letter before it, "day"/"week" after)
_NUMBER_WORD_DAY = re.compile(r"(?<=[a-z])-(?=(?:day|week)s?\b)")
# a substring of every word `_NUMBER_HINT` matches (checked in the tests)
_NUMBER_STEMS = ("zero", "one", "two", "thr", "thir", "four", "fort", "fi", "six", "seven",
                 "eigh", "nin", "ten", "elev", "twel", "twen", "hundred", "teen")  # fmt: skip
_NUMBER_HINT = re.compile(
    r"(?<!\w)(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty"
    r"|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|fourth|fifth|sixth|seventh|eighth"
    r"|ninth|tenth|eleventh|twelfth|twentieth|thirtieth)(?!\w)|teen"
)


# sentences (a period between digits is a decimal point) and enumerations "(2)"
_CLAUSE = re.compile(
    r",?\s+(?:but|however|although|though|whereas|while|so|since|because|as|and)\s+"
    r"|\s+-\s+|:\s+"
)


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def sentence_spans(text: str, breaks: re.Pattern[str] | None = None) -> list[tuple[int, int]]:
    """(start, end) of each non-empty sentence; a period between digits is a decimal point,
    and an enumeration "(2)" starts a new sentence. `breaks`: other sentence ends
    (`SUBJECT_BREAK`: a semicolon goes on about the same order)."""
    cuts: list[tuple[int, int]] = []
    for m in (breaks or _BREAK).finditer(text):
        a, b = m.span()
        if m.group() == ".":  # "4.99" is a number, "4." ends a sentence
            if a > 0 and b < len(text) and text[a - 1].isdigit() and text[b].isdigit():
                continue
            if _NUMBER_ABBREVIATION.search(text, max(0, a - 4), a) and _ID_NEXT.match(text, b):
                continue  # "order no. N0001": an abbreviation, the number goes with it
        elif m.group().startswith("("):
            b = a  # the enumeration belongs to the next sentence
        cuts.append((a, b))
    out, start = [], 0
    for a, b in [*cuts, (len(text), len(text))]:
        lo, hi = start, a
        while lo < hi and text[lo].isspace():
            lo += 1
        while hi > lo and text[hi - 1].isspace():
            hi -= 1
        if lo < hi:
            out.append((lo, hi))
        start = b
    return out


_BREAK = re.compile(r"[.!?;\n]+|\(\d\)")
_NUMBER_ABBREVIATION = re.compile(r"(?:^|(?<=\W))(?:no|nr|num)$", re.I)
_ID_NEXT = re.compile(r"\s*(?:#\s*\w|[a-z]\d)", re.I)
SUBJECT_BREAK = re.compile(r"[.!?\n]+|\(\d\)")


@functools.lru_cache(maxsize=16384)
def _words(text: str) -> str:
    """Words separated by single spaces, padded: `_words(cue) in _words(sentence)` is a
    whole-word match."""
    return " " + " ".join(_WORD_CHARS.findall(text.lower())) + " "


_WORD_CHARS = re.compile(r"[a-z0-9]+")
