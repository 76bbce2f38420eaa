"""Answer facts read back from free text: the final answer is checked fact by fact, by kind.

A task's `Goal.answer_facts` lists `AnswerFact`s: a *kind*, a canonical *value*, optionally the
order it is about (*subject*, with *cues*: the words that name that order in an answer) and
*allowed* context values. `check_answer` normalises the answer (unicode, dashes, number words
via text2num: "forty-five" -> 45, "sixteenth" -> 16th), extracts every value of each checked
kind and reports which facts were found, which are missing and which conflict.

Kinds and canonical values:

==========  ==========================  ===================================================
kind        value                       read from
==========  ==========================  ===================================================
date        ISO day ``2026-06-16``      "June 16", "Jun 16th, 2026", "16 June", "the 16th of
                                        June", "6/16" (also read as d/m when that is a date)
money       ``4.99`` (dollars)          "$4.99", "4.99 USD", "4.99 dollars", "$0", "free",
                                        "no charge", "free of charge"
percent     ``10``                      "10%", "10 percent", "ten percent", "no restocking
                                        fee" / "0%" for 0
duration    ``30`` or ``5-7`` (days)    "30 days", "30-day", "thirty days", "5 to 7 business
                                        days", "2 weeks"
status      order status                "delivered"/"arrived", "shipped"/"on its way"/"in
                                        transit", "processing"/"being prepared", "pending",
                                        "cancelled"/"canceled" — not after "will be",
                                        "can't be", "to be" or a negation
payment     ``paypal-6458``             "PayPal account ending in 6458", "Visa ****1234"
address     the address text            house number + street (abbreviations folded)
verdict     ``return:yes`` etc.         per clause: a topic (return / exchange / cancel)
                                        with its polarity ("can't", "no longer", "has
                                        closed", "not eligible", "final sale" are no; "can",
                                        "still", "eligible", "you have" are yes); a bare
                                        "Yes"/"No" clause counts when one verdict is asked
term        a policy term               ``final_sale``, ``return_instead``, ``last_day``
text        legacy substring keys       any of `alternatives`, case-insensitive
==========  ==========================  ===================================================

Precision — an answer that states a conflicting value of a checked kind fails:

* Only kinds the goal checks are read; other numbers in the answer are free.
* A value conflicts when it is none of: the targets of that kind (for the same subject), the
  fact's `allowed` values (context the generator knows is legitimate: the order's own placed
  date, the order value the question names, the free-shipping threshold, days since delivery,
  days the window closed ago, the item's price and order total), today's date, or a value the
  user's own request states (the prompt's values of that kind are always allowed).
* With facts about several orders, the answer is split into sentences; a sentence that names
  an order (its id, item id or product noun) and the sentences after it, until another order
  is named, are about that order. A fact must be stated about its own order, and a value
  stated about an order conflicts unless it is that order's target or allowed value (so
  facts attached to the wrong order fail, and so do dumps of every order's dates).
* A verdict conflicts when the answer also asserts the opposite polarity on the same topic;
  dates, durations, percents, money, statuses and payment methods conflict by value;
  addresses conflict when another address the customer has appears; terms never conflict.
* Answers longer than `MAX_ANSWER_CHARS` fail before any reading; nothing in the text can
  raise (unreadable values such as "31/02" or "1e309" are simply not values).
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import functools
import itertools
import operator
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from text_to_num import alpha2digit

from ecomrlve.tasks import AnswerFact

# ---- normalisation ---------------------------------------------------------------------------
_DASHES = dict.fromkeys(
    map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-"
)
_QUOTES = dict.fromkeys(map(ord, "\u2018\u2019\u02bc\u2032"), "'")


def normalise(text: str) -> str:
    """Lower-case ASCII-ish text with number words as digits ("forty-five" -> "45")."""
    if text.isascii():  # the common case: nothing to fold
        text = text.lower()
    else:
        text = unicodedata.normalize("NFKC", text).translate(_DASHES).translate(_QUOTES).lower()
    # alpha2digit costs ~40 us: only when there is a number word. Every number word holds
    # one of `_NUMBER_STEMS` (substring tests: ~4x cheaper than a regex, and most answers
    # hold none), then the hint (a literal first-letter scan, ~3x cheaper than
    # `_NUMBER_WORD`) finds every text `_NUMBER_WORD` matches
    if (
        any(stem in text for stem in _NUMBER_STEMS)
        and _NUMBER_HINT.search(text)
        and _NUMBER_WORD.search(text)
    ):
        with contextlib.suppress(Exception):  # an answer must never crash the verifier
            text = alpha2digit(text, "en")
        text = re.sub(r"\bzero\b", "0", text)
    return text


_NUMBER_WORD = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|twenty"
    r"|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|fourth|fifth|sixth|seventh|eighth"
    r"|ninth|tenth|eleventh|twelfth|\w+teenth|twentieth|thirtieth)\b"
)
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


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-empty sentence; a period between digits is a decimal point,
    and an enumeration "(2)" starts a new sentence."""
    cuts: list[tuple[int, int]] = []
    for m in _BREAK.finditer(text):
        a, b = m.span()
        if m.group() == ".":  # "4.99" is a number, "4." ends a sentence
            if a > 0 and b < len(text) and text[a - 1].isdigit() and text[b].isdigit():
                continue
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


# ---- dates -----------------------------------------------------------------------------------
_MONTHS = {
    name: k
    for k, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATE_PATTERNS = (
    ("ymd", re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("md", re.compile(rf"\b{_MONTH}\s+(?:the\s+)?(\d{{1,2}}){_ORD}\b(?:,?\s+(\d{{4}})\b)?")),
    ("dm", re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MONTH}(?:,?\s+(\d{{4}})\b)?")),
    ("num", re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\d/])")),
)

_MONTH_HINT = re.compile(r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec")
Day = tuple[int | None, int, int]  # (year or None, month, day)


def _valid(year: int | None, month: int, day: int) -> bool:
    try:
        dt.date(year or 2000, month, day)  # 2000 is a leap year: "Feb 29" without a year is ok
    except ValueError:
        return False
    return True


def _year(text: str | None) -> int | None:
    if not text:
        return None
    year = int(text)
    return year + 2000 if year < 100 else year


_DIGITS = re.compile(r"\d+")


def _matches_at(pattern: re.Pattern[str], text: str, starts: list[int]) -> list[re.Match[str]]:
    """`list(pattern.finditer(text))` for a pattern whose matches can only start at one of
    `starts` (ascending): the leftmost match from each offset on, never overlapping."""
    out = []
    end = 0
    for start in starts:
        if start < end:
            continue
        m = pattern.match(text, start)
        if m is not None:
            out.append(m)
            end = m.end()
    return out


def extract_dates(text: str) -> list[tuple[int, frozenset[Day]]]:
    """(position, readings) for every date mention; "6/7" has two readings, "31/02" none."""
    found: list[tuple[int, frozenset[Day]]] = []
    taken: list[tuple[int, int]] = []
    months = [m.start() for m in _MONTH_HINT.finditer(text)]
    digits: list[int] | None = None
    for form, pattern in _DATE_PATTERNS:
        if (form == "ymd" and "-" not in text) or (form == "num" and "/" not in text):
            continue
        if form in ("md", "dm") and not months:
            continue
        # "md" matches start at a month name, "ymd" and "dm" at the first digit of a number
        # (after a word boundary): trying those offsets is several times cheaper than a scan
        if form == "md":
            matches = _matches_at(pattern, text, months)
        elif form in ("ymd", "dm"):
            if digits is None:
                digits = [m.start() for m in _DIGITS.finditer(text)]
            matches = _matches_at(pattern, text, digits)
        else:
            matches = pattern.finditer(text)
        for m in matches:
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            if form == "ymd":
                readings = {(int(m[1]), int(m[2]), int(m[3]))}
            elif form == "md":
                readings = {(_year(m[3]), _MONTHS[m[1]], int(m[2]))}
            elif form == "dm":
                readings = {(_year(m[3]), _MONTHS[m[2]], int(m[1]))}
            else:
                a, b, year = int(m[1]), int(m[2]), _year(m[3])
                readings = {(year, a, b), (year, b, a)}
            readings = {r for r in readings if _valid(*r)}
            if readings:
                taken.append(m.span())
                found.append((m.start(), frozenset(readings)))
    return found


# ---- money, percent, duration ----------------------------------------------------------------
_AMOUNT = r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?"
_SPACE = r"\s?"
# one pattern per spelling, each run only when its anchor is in the text (a single alternation
# with optional prefixes is tried at every position: several times slower)
_MONEY_FORMS = (
    ("$", re.compile(rf"\${_SPACE}{_AMOUNT}")),
    ("usd", re.compile(rf"\busd\s?{_AMOUNT}")),
    ("usd", re.compile(rf"{_AMOUNT}\s?usd\b")),
    ("dollar", re.compile(rf"{_AMOUNT}\s?dollars?\b")),
    ("buck", re.compile(rf"{_AMOUNT}\s?bucks\b")),
)
_MONEY_ZERO = re.compile(
    r"(?<!feel )(?<!-)\bfree\b(?!\s+to\b)(?!-)|\bno (?:extra |additional )?(?:charge|cost)\b"
    r"|\bat no (?:extra |additional )?cost\b|\bcosts? (?:you )?nothing\b"
    r"|\bno (?:shipping|delivery) (?:fee|charge|cost)s?\b|\bwon't cost\b"
)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?(?:%|percent\b|per cent\b|pct\b)")
_PERCENT_ZERO = re.compile(
    r"\b(?:no|without(?: an?| any)?|0)\s+(?:restocking\s+)?fees?\b"
    r"|(?:\bnot|n't|\bnever)\s+(?:be\s+)?(?:charged|charge|pay)\s+(?:you\s+)?(?:an?\s+|any\s+)?"
    r"(?:restocking\s+)?fee|\bfee-free\b|\bno restocking\b"
)
_DURATION = re.compile(
    r"(\d+)(?:\s?(?:-|to|or)\s?(\d+))?[\s-]?(?:more |extra |additional |full )?"
    r"(?:business |working |calendar )?(day|week)s?\b"
)


def _amount(whole: str, cents: str | None) -> float:
    return float(whole.replace(",", "")) + (float(cents.ljust(2, "0")) / 100 if cents else 0.0)


def _has(text: str, words: tuple[str, ...]) -> bool:
    """A cheap prefilter: regexes only run over texts that hold one of their anchors."""
    return any(w in text for w in words)


def extract_money(text: str) -> list[tuple[int, float]]:
    out = []
    for anchor, pattern in _MONEY_FORMS:
        if anchor in text:
            out += [(m.start(), round(_amount(m[1], m[2]), 2)) for m in pattern.finditer(text)]
    out.sort()
    return out + _money_zero(text)


def _money_zero(text: str) -> list[tuple[int, float]]:
    if not _has(text, ("free", "charge", "cost", "nothing")):
        return []
    return [(m.start(), 0.0) for m in _MONEY_ZERO.finditer(text)]


def extract_percents(text: str) -> list[tuple[int, float]]:
    out = []
    if _has(text, ("%", "percent", "per cent", "pct")):
        out = [(m.start(), float(m[1])) for m in _PERCENT.finditer(text)]
    if "fee" in text or "restocking" in text:
        out += [(m.start(), 0.0) for m in _PERCENT_ZERO.finditer(text)]
    return out


def extract_durations(text: str) -> list[tuple[int, tuple[int, int]]]:
    out = []
    if "day" not in text and "week" not in text:
        return out
    for m in _DURATION.finditer(text):
        scale = 7 if m[3] == "week" else 1
        low = int(m[1]) * scale
        high = int(m[2]) * scale if m[2] else low
        out.append((m.start(), (low, high)))
    return out


def _duration_value(value: str) -> tuple[int, int]:
    low, _, high = value.partition("-")
    return int(low), int(high or low)


# ---- statuses --------------------------------------------------------------------------------
# Status words are found with one plain alternation (no \\b or named groups: ~8x faster in
# CPython's re), then checked for word boundaries and classified here.
_STATUS_CANDIDATE = re.compile(
    r"not yet been processed|not yet processed|not been processed|not processed"
    r"|awaiting processing|out for delivery|on its way|on the way|on their way|in transit"
    r"|was dropped off|being processed|being prepared|being packed|en route|sent out"
    r"|delivered|arrived|shipped|dispatched|processing|pending|cancell?ed"
)
_STATUS_OF = {
    "delivered": "delivered", "arrived": "delivered", "was dropped off": "delivered",
    "shipped": "shipped", "dispatched": "shipped", "on its way": "shipped",
    "on the way": "shipped", "on their way": "shipped", "in transit": "shipped",
    "out for delivery": "shipped", "sent out": "shipped", "en route": "shipped",
    "processing": "processing", "being processed": "processing",
    "being prepared": "processing", "being packed": "processing",
    "pending": "pending", "not yet been processed": "pending", "not yet processed": "pending",
    "not been processed": "pending", "not processed": "pending",
    "awaiting processing": "pending", "cancelled": "cancelled", "canceled": "cancelled",
}  # fmt: skip
_MODAL_BEFORE = frozenset({"once", "if", "after", "before", "until"})
_NEGATION_BEFORE = frozenset({"not", "never", "yet"})


def _hypothetical(before: str) -> bool:
    """Do the words before a status word make it not a status ("will be", "hasn't", "once")?"""
    words = before.split()[-4:]
    if not words:
        return False
    if words[-1] == "be" or (len(words) > 1 and words[-2] == "be"):
        return True  # "will be delivered", "can't be fully shipped"
    last3 = words[-3:]
    if any(w in _NEGATION_BEFORE or w.endswith("n't") for w in last3):
        return True  # "has not shipped", "hasn't been processed", "not yet shipped"
    if any(w in _MODAL_BEFORE for w in words):
        return True  # "once it has shipped", "if it was delivered"
    if any(a in ("order", "orders", "one") and b == "that" for a, b in itertools.pairwise(words)):
        return True  # "an order that has already shipped", "an order that is still processing"
    return len(words) > 1 and words[-2] == "that" and words[-1] in ("have", "has", "are", "is")


def _whole_word(text: str, start: int, end: int) -> bool:
    return (start == 0 or not text[start - 1].isalnum()) and (
        end == len(text) or not text[end].isalnum()
    )


def extract_statuses(text: str) -> list[tuple[int, str]]:
    out = []
    for m in _STATUS_CANDIDATE.finditer(text):
        if not _whole_word(text, m.start(), m.end()):
            continue
        status = _STATUS_OF[m.group()]
        if status != "pending" and _hypothetical(text[max(0, m.start() - 40) : m.start()]):
            continue
        out.append((m.start(), status))
    return out


# ---- payment methods and addresses -----------------------------------------------------------
_BRANDS = {
    "visa": "visa",
    "mastercard": "mastercard",
    "master card": "mastercard",
    "amex": "amex",
    "american express": "amex",
    "paypal": "paypal",
    "pay pal": "paypal",
    "gift card": "gift card",
    "giftcard": "gift card",
}
_LAST4 = re.compile(r"(?<![\d.,$])\d{4}(?![\d.,]\d|\d)")
_BRAND = re.compile(r"\b(" + "|".join(_BRANDS) + r")\b")
_CARD_CUE = re.compile(r"ending|ends|last (?:4|four)|\*|-\s*$|x{2,}|card|account|#")


def extract_payments(text: str) -> list[tuple[int, tuple[str | None, str]]]:
    """(brand or None, last four digits) for each payment mention: four digits with a brand
    ("paypal-6458", "Visa ending in 1234") or a card cue ("ending in 1234") just before."""
    out = []
    for m in _LAST4.finditer(text):
        before = text[max(0, m.start() - 40) : m.start()]
        brands = _BRAND.findall(before)
        brand = _BRANDS[brands[-1]] if brands else None
        if brand is None and not _CARD_CUE.search(before[-25:] or " "):
            continue
        out.append((m.start(), (brand, m[0])))
    return out


def _payment_value(value: str) -> tuple[str, str]:
    brand, _, last4 = value.rpartition("-")
    return brand, last4


_STREET_ABBR = {
    "street": "st",
    "avenue": "ave",
    "road": "rd",
    "drive": "dr",
    "boulevard": "blvd",
    "lane": "ln",
    "court": "ct",
    "place": "pl",
    "square": "sq",
    "terrace": "ter",
    "parkway": "pkwy",
    "highway": "hwy",
    "apartment": "apt",
    "suite": "ste",
}


def _address_words(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return " " + " ".join(_STREET_ABBR.get(w, w) for w in words) + " "


@functools.lru_cache(maxsize=4096)
def _street_line(address: str) -> str:
    """The house number and street of an address, normalised ("4120 oak st")."""
    return _address_words(address.split(",")[0]).strip()


# ---- verdicts and terms ----------------------------------------------------------------------
# Verdicts are read from a clause's words (a split and set look-ups, no regex per cue).
_TOKEN = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_NEGATIVE_WORDS = frozenset(
    {
        "not",
        "cannot",
        "unable",
        "ineligible",
        "never",
        "closed",
        "expired",
        "lapsed",
        "ended",
        "non-returnable",
        "nonreturnable",
    }
)
_NEGATIVE_PAIRS = frozenset(
    {
        ("no", "longer"),
        ("too", "late"),
        ("final", "sale"),
        ("has", "passed"),
        ("have", "passed"),
        ("had", "passed"),
        ("is", "passed"),
        ("was", "passed"),
        ("already", "passed"),
    }
)
_BEYOND = frozenset({"outside", "beyond", "past"})
_OWNERS = frozenset({"the", "your", "its", "their"})
_POSITIVE_WORDS = frozenset(
    {
        "can",
        "could",
        "may",
        "able",
        "eligible",
        "allowed",
        "possible",
        "still",
        "qualifies",
        "qualify",
        "accepted",
    }
)
_POSITIVE_PAIRS = frozenset(
    {
        ("welcome", "to"),
        ("go", "ahead"),
        ("is", "open"),
        ("are", "open"),
        ("have", "until"),
        ("you", "have"),
    }
)
_ADVICE_WORDS = frozenset({"instead", "once"})
_ADVICE_PAIRS = frozenset({("after", "it"), ("after", "delivery"), ("after", "they"),
                           ("when", "it")})  # fmt: skip


_VERDICT_HINT = re.compile(r"return|exchang|swap|cancel|send|call|yes|\bno\b|final sale")


def _topics(clause: str, words: list[str], pairs: set[tuple[str, str]]) -> set[str]:
    found = set()
    # a word can only start with a stem the clause contains: most clauses skip the word loop
    if "return" in clause and any(w.startswith("return") for w in words):
        found.add("return")
    if ("exchang" in clause or "swap" in clause) and any(
        w.startswith(("exchang", "swap")) for w in words
    ):
        found.add("exchange")
    if "cancel" in clause and any(w.startswith("cancel") for w in words):
        found.add("cancel")
    if ("call", "off") in pairs or ("called", "off") in pairs:
        found.add("cancel")
    if (("send", "it") in pairs and ("it", "back") in pairs) or ("them", "back") in pairs:
        found.add("return")
    return found


def extract_verdicts(clause: str) -> list[tuple[str, bool]]:
    """(topic, polarity) asserted by one clause; [("", p)] for a bare "Yes"/"No"."""
    words = _TOKEN.findall(clause)
    if not words:
        return []
    pairs = set(itertools.pairwise(words))
    out = []
    final_sale = ("final", "sale") in pairs or "non-returnable" in words
    if final_sale:
        out.append(("return", False))
    topics = _topics(clause, words, pairs)
    bare = words[0] in ("yes", "no")
    if not topics and not bare:
        return out
    negative = (
        words[0] == "no"
        or not _NEGATIVE_WORDS.isdisjoint(words)
        or ("n't" in clause and any(w.endswith("n't") for w in words))
        or not _NEGATIVE_PAIRS.isdisjoint(pairs)
        or (not _BEYOND.isdisjoint(words) and any(a in _BEYOND and b in _OWNERS for a, b in pairs))
    )
    positive = not negative and (
        words[0] == "yes"
        or not _POSITIVE_WORDS.isdisjoint(words)
        or not _POSITIVE_PAIRS.isdisjoint(pairs)
    )
    if negative or positive:
        advice = not _ADVICE_WORDS.isdisjoint(words) or not _ADVICE_PAIRS.isdisjoint(pairs)
        for topic in ("return", "exchange", "cancel"):
            if topic in topics and not (topic == "return" and (advice or final_sale)):
                out.append((topic, positive))
        if not out and bare:
            out.append(("", positive))
    return out


TERMS: dict[str, re.Pattern[str]] = {
    "final_sale": re.compile(
        r"\bfinal sale\b|\bnon-?returnable\b|\bnot returnable\b|\b(?:cannot|can't|can not) be "
        r"returned\b|\bno returns\b"
    ),
    "return_instead": re.compile(r"\breturn\w*|\bsend (?:it|them) back\b|\bsent back\b"),
    "last_day": re.compile(r"\blast day\b|\btoday is the (?:final|last)\b|\b0 days\b"),
}


# ---- the check -------------------------------------------------------------------------------
@dataclass
class AnswerCheck:
    """Which facts the answer states, which it misses, and which values conflict."""

    found: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.conflicts


def describe(fact: AnswerFact) -> str:
    about = f" ({fact.subject})" if fact.subject else ""
    return f"{fact.kind} {fact.value!r}{about}"


@dataclass
class _Segment:
    text: str
    subjects: frozenset[str]  # empty: not about any order in particular
    start: int = 0  # offset in the normalised answer


def _segments(
    text: str, plan: AnswerPlan, spans: list[tuple[int, int]] | None = None
) -> list[_Segment]:
    if len(plan.named) <= 1:
        return [_Segment(text, plan.named)]
    # a sentence names the subjects whose cue it contains, and so do the ones after it
    out: list[_Segment] = []
    current: frozenset[str] = frozenset()
    for start, end in sentence_spans(text) if spans is None else spans:
        sentence = text[start:end]
        words = _words(sentence)
        named = frozenset({subject for cue, subject in plan.cue_pairs if cue in words})
        if named:
            current = named
        out.append(_Segment(sentence, current, start))
    return out


@functools.lru_cache(maxsize=16384)
def _words(text: str) -> str:
    """Words separated by single spaces, padded: `_words(cue) in _words(sentence)` is a
    whole-word match."""
    return " " + " ".join(_WORD_CHARS.findall(text.lower())) + " "


_WORD_CHARS = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=8192)
def _prompt_values(prompt: str, kind: str) -> tuple:
    """Values of `kind` the user's own request states (a task's prompt recurs across its
    episodes, so this is cached)."""
    return tuple(_values(kind, normalise(prompt), {}))


def _values(kind: str, text: str, context: dict) -> list:
    return [v for _, v in _located(kind, text, context)]


_EXTRACTORS = {
    "date": extract_dates,
    "money": extract_money,
    "percent": extract_percents,
    "duration": extract_durations,
    "status": extract_statuses,
    "payment": extract_payments,
}


def _located(kind: str, text: str, context: dict) -> list[tuple[int, Any]]:
    """(offset, value) of every value of `kind` in `text`."""
    if kind in _EXTRACTORS:
        return _EXTRACTORS[kind](text)
    if kind != "verdict":
        return []
    verdicts = []
    for start, end in context.get("spans") or sentence_spans(text):
        sentence = text[start:end]
        if not _VERDICT_HINT.search(sentence):
            continue  # no topic, no yes/no, no final sale: nothing to read
        for clause in _CLAUSE.split(sentence):
            for topic, polarity in extract_verdicts(clause):
                verdicts.append((start, (topic or context.get("only_topic", ""), polarity)))
    return verdicts


@functools.lru_cache(maxsize=65536)
def _target(kind: str, target: str) -> Any:
    """A canonical value parsed once (targets recur across the episodes of a task)."""
    if kind == "date":
        try:
            day = dt.date.fromisoformat(target)
        except ValueError:
            return None
        return (day.year, day.month, day.day)
    if kind in ("money", "percent"):
        try:
            return float(target)
        except ValueError:
            return None
    if kind == "duration":
        try:
            return _duration_value(target)
        except ValueError:
            return None
    if kind == "payment":
        return _payment_value(target)
    if kind == "verdict":
        topic, _, polarity = target.partition(":")
        return (topic, polarity == "yes")
    return target


def _date_matches(value: frozenset[Day], want: Day) -> bool:
    year, month, day = want
    return any(m == month and d == day and y in (None, year) for y, m, d in value)


def _near(value: float, want: float) -> bool:
    return abs(value - want) < 0.005


def _payment_matches(value: tuple[str | None, str], want: tuple[str, str]) -> bool:
    return value[1] == want[1] and value[0] in (None, want[0])


# does one extracted value state a parsed target (`_target`)? per kind
_MATCH: dict[str, Callable[[Any, Any], bool]] = {
    "date": _date_matches,
    "money": _near,
    "percent": _near,
    "payment": _payment_matches,
    "duration": operator.eq,
    "status": operator.eq,
    "verdict": operator.eq,
}


_VALUE_KINDS = ("date", "money", "percent", "duration", "status", "payment", "verdict")
_VALUE_KIND_SET = frozenset(_VALUE_KINDS)


class AnswerPlan:
    """What `check_answer` needs from a fact list that does not depend on the answer: kinds,
    subjects and their cues, parsed targets and allowed values, labels. Built once per list:
    the verifier keeps one per `Goal` (`Goal.derived`), shared by all episodes of a task."""

    __slots__ = (
        "address_lines",
        "by_kind",
        "cue_pairs",
        "facts",
        "kinds",
        "labels",
        "named",
        "only_topic",
        "permitted",
        "street_lines",
        "targets",
        "value_kinds",
    )

    def __init__(self, facts: Iterable[AnswerFact]):
        facts = list(facts)
        self.facts = facts
        self.kinds = frozenset(f.kind for f in facts)
        self.value_kinds = sorted(self.kinds & _VALUE_KIND_SET)
        self.named = frozenset(f.subject for f in facts if f.subject)
        # (cue words, subject) pairs, each once; only needed to split answers about 2+ orders
        self.cue_pairs = (
            list(dict.fromkeys((_words(c), f.subject) for f in facts if f.subject for c in f.cues))
            if len(self.named) > 1
            else []
        )
        topics = {f.value.partition(":")[0] for f in facts if f.kind == "verdict"}
        self.only_topic = next(iter(topics)) if len(topics) == 1 else None
        self.labels = [describe(f) for f in facts]
        # parsed target of each value fact (None: unreadable, matches nothing), and the parsed
        # values a stated value may be without conflicting (targets, then allowed context)
        self.targets = [
            _target(f.kind, f.value) if f.kind in _VALUE_KIND_SET else None for f in facts
        ]
        self.permitted = [
            [w for w in (_target(f.kind, a) for a in f.allowed) if w is not None]
            if f.kind in _VALUE_KIND_SET
            else []
            for f in facts
        ]
        self.street_lines = [
            f" {_street_line(f.value)} " if f.kind == "address" else "" for f in facts
        ]
        self.address_lines = {_street_line(f.value) for f in facts if f.kind == "address"}
        self.by_kind = {k: [i for i, f in enumerate(facts) if f.kind == k] for k in self.kinds}


def check_answer(
    answer: str,
    facts: list[AnswerFact] | AnswerPlan,
    prompt: str = "",
    known_addresses: Iterable[str] = (),
    today: str | None = None,
) -> AnswerCheck:
    """Check a final answer against `facts` (or their `AnswerPlan`; see the module docstring
    for the rules); `today` (ISO) is a date any answer may mention ("as of today, June 15,
    …")."""
    result = AnswerCheck()
    plan = facts if isinstance(facts, AnswerPlan) else AnswerPlan(facts)
    facts = plan.facts
    if not facts:
        return result
    text = normalise(answer)
    kinds = plan.kinds
    context: dict = {}
    if plan.only_topic is not None:
        context["only_topic"] = plan.only_topic
    # sentences matter to verdicts and to answers about several orders; the rest skip them
    if "verdict" in kinds or len(plan.named) > 1:
        context["spans"] = sentence_spans(text)
    segments = _segments(text, plan, context.get("spans"))
    one = len(segments) == 1
    # values per kind, read once over the whole answer, then bucketed by segment
    per_segment: list[dict[str, list]] = [{} for _ in segments]
    starts = [seg.start for seg in segments]
    for kind in plan.value_kinds:
        located = _located(kind, text, context)
        if one:
            per_segment[0][kind] = [v for _, v in located]
            continue
        for buckets in per_segment:
            buckets[kind] = []
        for offset, value in located:
            per_segment[max(0, bisect.bisect_right(starts, offset) - 1)][kind].append(value)
    # about[i][k]: may segment k state fact i (a fact about an order, in a sentence about it)
    by_subject = {
        subject: [not subject or not seg.subjects or subject in seg.subjects for seg in segments]
        for subject in {f.subject for f in facts}
    }
    about = [by_subject[f.subject] for f in facts]

    lowered = None
    address_words: list[str | None] = [None] * len(segments)
    for i, fact in enumerate(facts):
        kind = fact.kind
        on = about[i]
        if kind == "text":
            if lowered is None:
                lowered = answer.lower()
            ok = any(a.lower() in lowered for a in fact.alternatives or [fact.value])
        elif kind == "term":
            pattern = TERMS.get(fact.value)
            ok = pattern is not None and any(
                pattern.search(seg.text) for seg, yes in zip(segments, on, strict=True) if yes
            )
        elif kind == "address":
            line = plan.street_lines[i]
            ok = False
            for k, seg in enumerate(segments):
                if on[k]:
                    words = address_words[k]
                    if words is None:
                        words = address_words[k] = _address_words(seg.text)
                    if line in words:
                        ok = True
                        break
        else:
            # a subject fact must be stated in a sentence about its subject
            want = plan.targets[i]
            match = _MATCH[kind]
            subject = fact.subject
            ok = want is not None and any(
                match(value, want)
                for seg, values in zip(segments, per_segment, strict=True)
                if one or not subject or subject in seg.subjects
                for value in values.get(kind, ())
            )
        (result.found if ok else result.missing).append(plan.labels[i])

    # precision: every value of a checked kind must be a target or allowed for its subject
    today_date = _target("date", today) if today else None
    for kind in plan.value_kinds:
        match = _MATCH[kind]
        exact = match is operator.eq
        indexed = plan.by_kind[kind]
        # what a segment may state depends only on the subjects it is about: one list each
        allowed_for: dict[frozenset[str], list] = {}
        for k, values in enumerate(per_segment):
            found = values.get(kind)
            if not found:
                continue
            subjects = segments[k].subjects
            allowed = allowed_for.get(subjects)
            if allowed is None:
                relevant = [i for i in indexed if about[i][k]] or indexed
                if kind == "verdict":
                    allowed = relevant
                else:
                    allowed = [plan.targets[i] for i in relevant if plan.targets[i] is not None]
                    for i in relevant:
                        allowed += plan.permitted[i]
                    if kind == "date" and today_date is not None:
                        allowed.append(today_date)
                allowed_for[subjects] = allowed
            if kind == "verdict":
                for value in found:
                    # a verdict conflicts with a target of its own topic that it does not state
                    prefix = f"{value[0]}:"
                    wanted = [plan.targets[i] for i in allowed if facts[i].value.startswith(prefix)]
                    if wanted and value not in wanted:
                        said = "yes" if value[1] else "no"
                        result.conflicts.append(f"verdict {value[0] or '?'}:{said}")
                continue
            for value in found:
                if value in allowed if exact else any(match(value, w) for w in allowed):
                    continue
                # read the prompt only for a value that would conflict (rare, and cached)
                if prompt and any(_same(kind, value, p) for p in _prompt_values(prompt, kind)):
                    continue
                result.conflicts.append(f"{kind} {_show(kind, value)}")
    if "address" in kinds:
        words = _address_words(text)
        for other in known_addresses:
            line = _street_line(other)
            if line not in plan.address_lines and f" {line} " in words:
                result.conflicts.append(f"address {other!r}")
    result.conflicts = list(dict.fromkeys(result.conflicts))
    return result


def _same(kind: str, a, b) -> bool:
    """Do two extracted values say the same thing? Dates: one reading of each agrees on
    month and day, and on the year when both state one."""
    if kind == "date":
        return any(
            m1 == m2 and d1 == d2 and (y1 is None or y2 is None or y1 == y2)
            for y1, m1, d1 in a
            for y2, m2, d2 in b
        )
    return a == b


def _show(kind: str, value) -> str:
    if kind == "date":
        return "/".join(sorted(f"{m:02d}-{d:02d}" for _, m, d in value))
    if kind == "duration":
        low, high = value
        return f"{low} days" if low == high else f"{low}-{high} days"
    if kind == "payment":
        return f"{value[0] or 'card'} ending {value[1]}"
    return str(value)


def spellings(fact: AnswerFact) -> list[str]:
    """Common literal spellings of a fact's value ("June 16", "$4.99", "30 days"…), for
    scanning texts that must not give the answer away; [] for statuses, verdicts and terms."""
    value = fact.value
    if fact.kind == "text":
        return list(fact.alternatives or [value])
    if fact.kind == "date":
        day = dt.date.fromisoformat(value)
        month, abbr = day.strftime("%B"), day.strftime("%b")
        return [value, f"{month} {day.day}", f"{day.day} {month}", f"{abbr} {day.day}",
                f"{day.month}/{day.day}"]  # fmt: skip
    if fact.kind == "money":
        amount = float(value)
        return [f"${amount:.0f}" if amount == round(amount) else f"${amount:.2f}"]
    if fact.kind == "percent":
        return [f"{value}%", f"{value} percent"]
    if fact.kind == "duration":
        return [f"{value} days", f"{value}-day"]
    if fact.kind in ("payment", "address"):
        return [value]
    return []
