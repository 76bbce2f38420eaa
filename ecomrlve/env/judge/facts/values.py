"""Values read from normalised answer text, one extractor per kind: dates, money, percents,
durations, statuses, payment methods, street lines of addresses, verdicts and policy terms.
Each `extract_*` returns (offset, value) pairs; nothing in the text can raise."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from lemminflect import getAllInflections, getAllInflectionsOOV, getAllLemmas

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
# "\b" after the name: "4 decorative pillows" and "3 marbles" state no date
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
_ORD = r"(?:st|nd|rd|th)?"
# a month name written against its day: "june7" (a letter after it is another word: "junk")
_MONTH_JOINED = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")(?![a-z])\.?"
# a year after a day: "June 3, 2026", "3 June 2026", "13-aug-2026"
_YEAR_AFTER = r"(?:(?:,\s*|\s+|-)(\d{4})\b)?"
_DATE_PATTERNS = (
    # "2026-06-16", "2025/12/03", "2025.12.03": the year first, one separator throughout; or
    # "12.12.2025", "29.5.2026", "3-12-2025": the year last, day and month either way (a year
    # of four digits: "4.99" is an amount, "7-10" a range). One pattern: one try per number.
    (
        "ymd",
        re.compile(
            r"(?=\d{1,4}[-/.]\d)(?:\b(\d{4})([-/.])(\d{1,2})\2(\d{1,2})\b(?![-/.]\d)"
            r"|(?<![\d.$/-])(\d{1,2})([.-])(\d{1,2})\6(\d{4})(?![\d]|[.-]\d))"
        ),
    ),
    # "June 3", "June the 3rd", "December, the 3rd", "Mar-05", "Dec. 3"
    (
        "md",
        re.compile(
            rf"\b{_MONTH_JOINED}(?:\s*,\s*the\s+|\s+(?:the\s+)?|\s*-\s*|(?=\d)"
            rf"|\s*,\s*(?=\d\d?(?:st|nd|rd|th)\b))(\d{{1,2}}){_ORD}\b" + _YEAR_AFTER
        ),
    ),
    # "3 June", "the 3rd of June", "13-Aug", "the 21st (March)"
    (
        "dm",
        re.compile(
            rf"\b(\d{{1,2}}){_ORD}[\s(-]\s*\(?\s*(?:(?:day\s+)?of\s+)?{_MONTH}\)?" + _YEAR_AFTER
        ),
    ),
    ("num", re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\d/])")),
)

# a number, a separator, one or two digits, the same separator, a digit: where "ymd" can match
_NUMERIC_DATE = re.compile(r"\d([-/.])\d\d?\1\d")
_MONTH_HINT = re.compile(r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec")
Day = tuple[int | None, int, int]  # (year or None, month, day)

# Roles a sentence gives a value (`AnswerFact.role` names the role of a target): durations
# (below), dates (`date_role`: placed, arrival) and amounts (`money_role`: shipping, order,
# threshold); UNKNOWN where the words around the value say none.
UNKNOWN = "unknown"
PLACED, ARRIVAL = "placed", "arrival"
SHIPPING, ORDER, THRESHOLD = "shipping", "order", "threshold"
PRICE, WAS = "price", "was"  # an item's price (now), and the price it had before a change
BASE = "base"  # the shipping fee of orders under the free-shipping threshold, told as the rule
GAP = "gap"  # what the order lacks to ship free ("you're |$15 away"): threshold minus order


class Dates(frozenset):
    """The readings of one stated date ("6/7" has two), in the `role` its sentence gives it."""

    __slots__ = ("role",)

    def __new__(cls, readings, role: str = UNKNOWN):
        self = super().__new__(cls, readings)
        self.role = role
        return self


class Amount(float):
    """A stated amount in dollars, in the `role` its sentence gives it."""

    __slots__ = ("role",)

    def __new__(cls, dollars: float, role: str = UNKNOWN):
        self = super().__new__(cls, dollars)
        self.role = role
        return self


_SENTENCE_END = re.compile(r"[;!?\n]|\.(?!\d)")  # not the point of "$4.99"


def _around(text: str, start: int, end: int, width: int = 60) -> tuple[str, str]:
    """The words of its sentence before and after `text[start:end]` (up to `width` chars)."""
    after = _SENTENCE_END.split(text[end : end + width], maxsplit=1)[0]
    before = _SENTENCE_END.split(text[max(0, start - width) : start])[-1]
    return before, after


@dataclass(frozen=True)
class Cue:
    """Words that give a stated value `role`: `before` found at the end of the words before it
    ("the window is |21 days"), `after` at the start of the words after it ("21 days| ago") or
    `value` inside the value itself ("5 more days"); any one of them is enough, and `near`, when
    set, must also be somewhere in the sentence around it."""

    role: str
    before: re.Pattern[str] | None = None
    after: re.Pattern[str] | None = None
    value: re.Pattern[str] | None = None
    near: str | None = None

    def reads(self, before: str, after: str, value: str) -> bool:
        said = (
            (self.before is not None and self.before.search(before) is not None)
            or (self.after is not None and self.after.match(after) is not None)
            or (self.value is not None and self.value.search(value) is not None)
        )
        return said and (self.near is None or self.near in before + after)


def read_role(cues: tuple[Cue, ...], text: str, start: int, end: int, width: int) -> str:
    """The role of the first of `cues` (their order is the precedence) that the sentence
    around `text[start:end]` (`width` chars each side) says, else UNKNOWN."""
    before, after = _around(text, start, end, width)
    value = text[start:end]
    return next((c.role for c in cues if c.reads(before, after, value)), UNKNOWN)


# a date right after "placed (on)", "ordered (on)": when the order was placed; after
# "delivered", "arrived", "arrives", "due", "expected", "delivery date": when it arrives
_PLACED_BEFORE = re.compile(
    r"\b(?:placed|ordered|bought|purchased|order date(?: is| was)?|put it in)"
    r"(?: it)?(?: on| back on)?(?: the)?\s*$"
)
_ARRIVAL_BEFORE = re.compile(
    r"\b(?:delivered|arrived|arrives?|arriving|due|expected|delivery(?: date)?(?: is| was)?"
    r"|eta(?: is)?|get there|reach(?:es|ed)? you)(?: to arrive)?(?: on| by| around)?(?: the)?\s*$"
)


DATE_CUES = (Cue(PLACED, before=_PLACED_BEFORE), Cue(ARRIVAL, before=_ARRIVAL_BEFORE))


def date_role(text: str, start: int, end: int) -> str:
    """The role the sentence gives the date at `text[start:end]`: placed, arrival or unknown."""
    return read_role(DATE_CUES, text, start, end, 40)


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


def extract_dates(text: str, today: Day | None = None) -> list[tuple[int, frozenset[Day]]]:
    """(position, readings) for every date mention; "6/7" has two readings, "31/02" none.
    With `today` (year, month, day), dates said relative to it too (`_relative_dates`:
    "tomorrow", "in 3 days", "last Tuesday")."""
    found: list[tuple[int, frozenset[Day]]] = []
    taken: list[tuple[int, int]] = []
    months = [m.start() for m in _MONTH_HINT.finditer(text)]
    digits: list[int] | None = None
    for form, pattern in _DATE_PATTERNS:
        if form == "ymd" and not (
            _has(text, ("-", "/", ".")) and _NUMERIC_DATE.search(text) is not None
        ):
            continue
        if (form == "num" and "/" not in text) or (form in ("md", "dm") and not months):
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
            if form == "ymd" and m[1]:
                readings = {(int(m[1]), int(m[3]), int(m[4]))}
            elif form == "ymd":  # the year last
                a, b, year = int(m[5]), int(m[7]), int(m[8])
                readings = {(year, a, b), (year, b, a)}
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
                role = date_role(text, m.start(), m.end())
                found.append((m.start(), Dates(readings, role)))
    if today is not None:
        found += _relative_dates(text, dt.date(*today), taken)
        found.sort(key=lambda pair: pair[0])
    return found


# ---- dates said relative to today ------------------------------------------------------------
# Every answer has a today (the verifier's `today`): "tomorrow", "in 3 days", "last Tuesday"
# are dates like "June 16", true or not.
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# One scan per form, each run only when the text holds its anchor (one alternation of all the
# forms, tried at every offset, costs most answers ~100 us; these, a few).
# "tomorrow", "the day after tomorrow", "yesterday" ("today's" is no date)
_DAY_WORD = re.compile(r"\b(today|tomorrow|yesterday)\b(?!')")
_DAY_BESIDE = re.compile(r"\bthe day (after|before) $")
# "in 3 days", "in a week" ("in 3 business days" is a refund's time, no date)
# (no "\b" first: a pattern that starts with a literal is scanned for it, several times
# faster; the word boundary before is checked by `_word_starts`)
_IN_DAYS = re.compile(r"in (?:about |around |roughly |just |another )?(\d+|an?|one) (day|week)s?\b")
# "3 days ago", "3 days back", "2 weeks from now", "4 days out" (counted ahead), "3 days away"
_DAYS_AWAY = re.compile(
    r"\b(\d+|an?|one) (day|week)s?'? (ago|back|from (?:now|today)|out|away|(?:from )?hence)\b"
)
# "on Friday", "this coming Sunday", "last Tuesday", "by next Monday" ("Fridays": no day)
_WEEKDAY = re.compile(rf"\b({'|'.join(_WEEKDAYS)})\b(?!s\b|')")
_WEEKDAY_STEMS = ("nday", "sday", "iday", "rday")  # one is in each weekday's name
_WEEKDAY_WHICH = re.compile(
    r"(?:\b(?:on|by|until|till|before|from|since) )?"
    r"(?:\b(this coming|this past|this|coming|next|last|past) )?$"
)
# "on the 21st": a day of a month said with no month, around today's
_NTH = re.compile(r"the (\d{1,2})(?:st|nd|rd|th)\b")
_NTH_AFTER = re.compile(r",?\s+the (\d{1,2})(?:st|nd|rd|th)\b")
# the clause a value is in, up to it: after the last comma, dash, colon or joining word
_CLAUSE_BREAK = re.compile(r".*(?:[,:(]|\s-\s|\b(?:and|but|so|because|which|while|though)\s)")
# an event word that gives a relative date its role when no cue sits right before it ("it
# should be with you in 3 days", "your order got to you 2 days ago")
_EVENT = re.compile(
    r"\b(?:(?P<placed>placed|ordered|bought|purchased)|deliver|arriv|reach|land|due\b|expect"
    r"|eta\b|get (?:there|to you)|got to you|be (?:there|with you)|show(?:s|ed)? up"
    r"|turn(?:s|ed)? up)"
)
_NOT_AN_EVENT = re.compile(r"window|refund|return|clos|expir|business|deadline")
# "no order was placed today", "it hasn't arrived today": no day stated
_NEGATION = re.compile(r"\b(?:no|not|never|none|nothing)\b|n't")
# what sits between a weekday and a date said in full ("Wednesday, December 3", "June 5 (a
# Friday)"): the weekday then names that date, no day of its own
_WEEKDAY_BESIDE = re.compile(r"[\s,.(]*(?:the\s+|an?\s+)?")


def _clause_before(text: str, start: int, end: int) -> str:
    before = _around(text, start, end)[0]
    return before[m.end() :] if (m := _CLAUSE_BREAK.match(before)) else before


def _relative_role(text: str, start: int, end: int) -> str:
    """The role of a relative date: its cue right before it (`date_role`), else an event word
    in its clause with no other value between ("should be with you in 3 days"), else none."""
    role = date_role(text, start, end)
    if role != UNKNOWN:
        return role
    clause = _clause_before(text, start, end)
    if FREE_DIGIT.search(clause) or _NOT_AN_EVENT.search(clause) or _NEGATION.search(clause):
        return UNKNOWN
    event = _EVENT.search(clause)
    if event is None:
        return UNKNOWN
    return PLACED if event["placed"] else ARRIVAL


def _count(said: str) -> int:
    return 1 if said in ("a", "an", "one") else int(said)


def _weekday_days(today: dt.date, weekday: int, which: str | None) -> list[dt.date]:
    """The days a weekday names: "last"/"past" the one before today, "this"/"coming"/"next"
    the one after (next: or the week after), a bare weekday either (or today)."""
    back = (today.weekday() - weekday) % 7 or 7
    ahead = (weekday - today.weekday()) % 7 or 7
    past, future = today - dt.timedelta(back), today + dt.timedelta(ahead)
    if which in ("last", "past", "this past"):
        return [past]
    if which in ("this", "coming", "this coming"):
        return [future]
    if which == "next":
        return [future, future + dt.timedelta(7)]
    return [past, future] + ([today] if back == 7 else [])


def _nth_days(today: dt.date, day: int, shifts: Iterable[int] = (-1, 0, 1)) -> list[dt.date]:
    """ "the 21st": the 21st of today's month, the one before or the one after."""
    out = []
    for shift in shifts:
        year, month = divmod(today.year * 12 + today.month - 1 + shift, 12)
        with contextlib.suppress(ValueError):
            out.append(dt.date(year, month + 1, day))
    return out


def _word_starts(m: re.Match[str]) -> bool:
    return m.start() == 0 or not m.string[m.start() - 1].isalnum()


def _relative_said(text: str, today: dt.date) -> list[tuple[int, int, list[dt.date], bool]]:
    """(start, end, the days meant, is it a weekday) of each relative date form in `text`."""
    out = []
    if _has(text, ("today", "tomorrow", "yesterday")):
        for m in _DAY_WORD.finditer(text):
            start, shift = m.start(), {"today": 0, "tomorrow": 1, "yesterday": -1}[m[1]]
            beside = _DAY_BESIDE.search(text, max(0, start - 15), start)
            if beside is not None:  # "the day after tomorrow", "the day after today"
                start, shift = beside.start(), shift + (1 if beside[1] == "after" else -1)
            out.append((start, m.end(), [today + dt.timedelta(shift)], False))
    if "in " in text:
        for m in filter(_word_starts, _IN_DAYS.finditer(text)):
            n = _count(m[1]) * (7 if m[2] == "week" else 1)
            out.append((m.start(), m.end(), [today + dt.timedelta(n)], False))
    if _has(text, (" ago", " back", "from now", "from today", " out", " away", "hence")):
        for m in _DAYS_AWAY.finditer(text):
            past = m[3] in ("ago", "back")
            n = _count(m[1]) * (7 if m[2] == "week" else 1) * (-1 if past else 1)
            out.append((m.start(), m.end(), [today + dt.timedelta(n)], False))
    joined: list[int] = []  # where a "the 25th" said with its weekday starts
    if _has(text, _WEEKDAY_STEMS):
        for m in _WEEKDAY.finditer(text):
            which = _WEEKDAY_WHICH.search(text, max(0, m.start() - 24), m.start())
            days = _weekday_days(today, _WEEKDAYS.index(m[1]), which[1] if which else None)
            nth = _NTH_AFTER.match(text, m.end())
            if nth is not None:  # "Monday the 25th": the 25th that is a Monday
                # (the months of a year back: a weekday picks one or two of them)
                dated = _nth_days(today, int(nth[1]), range(-12, 3))
                weekday = _WEEKDAYS.index(m[1])
                days = [d for d in dated if d.weekday() == weekday] or dated
                joined.append(nth.start(1))
                out.append((which.start() if which else m.start(), nth.end(), days, False))
                continue
            out.append((which.start() if which else m.start(), m.end(), days, True))
    if "the " in text:
        for m in filter(_word_starts, _NTH.finditer(text)):
            if m.start(1) not in joined:
                out.append((m.start(), m.end(), _nth_days(today, int(m[1])), False))
    return out


def _relative_dates(
    text: str, today: dt.date, taken: list[tuple[int, int]]
) -> list[tuple[int, frozenset[Day]]]:
    """Dates said relative to `today` (`_relative_said`), outside the dates said in full
    (`taken`), each read only in a date's role (placed, arrival: `_relative_role`). Words such
    as "today" and "in 5 days" say many things besides ("as of today", "the window closes in 5
    days", "it went out yesterday": a day no fact is about), and a date in no role would have
    to be grounded like any date stated."""
    out = []
    for start, end, days, weekday in _relative_said(text, today):
        if any(a < end and start < b for a, b in taken):
            continue
        role = _relative_role(text, start, end)
        if role == UNKNOWN:
            continue
        if text.startswith("today", start) and _NEGATION.search(_clause_before(text, start, end)):
            continue  # "no order was placed today"
        if weekday and any(
            _WEEKDAY_BESIDE.fullmatch(text[end:a] if a >= end else text[b:start]) for a, b in taken
        ):
            continue  # "Wednesday, December 3": the weekday of a date said in full
        out.append((start, Dates({(d.year, d.month, d.day) for d in days}, role)))
    return out


# ---- money, percent, duration ----------------------------------------------------------------
# what makes a number that follows an amount a count, not more of the amount: a percent, a
# hyphen, a noun it counts or a month ("$40 100 days ago", "47 dollars 99 items", "$20 15 june");
# any other word goes on about the amount ("$2 183 for the lamp", "47 dollars 99 while")
_COUNTED = (
    r"\s?%|-|\s+(?:of|items?|units?|pieces?|pcs|pairs?|packs?|times|orders?|products?|people"
    r"|percent|(?:day|week|month|year|hour|minute)s?"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)\b"
)
# a whole number of dollars: thousands grouped by commas ("1,565"), apostrophes ("1'422") or
# spaces ("2 183.99": never before a count, and every form below has its currency mark right
# next to the number, so "2 items 183.99" is never joined), or digits alone
_WHOLE = (
    rf"(\d{{1,3}}(?:,\d{{3}})+|\d{{1,3}}(?:'\d{{3}})+|\d{{1,3}}(?: \d{{3}})+(?!\d|{_COUNTED})|\d+)"
)
_DECIMALS = r"\.(\d{1,2})"
# cents said apart, after a whole amount: "$55 and 99 cents", "$7 and 99¢" (the unit is needed:
# "$7 and 8 items" is $7); after a unit word also "36 dollars, 99 cents"
_SAID_CENTS = r"\s+(?:and|&|plus)\s+(\d{1,2}|one)\s?(?:cents?\b|¢)"
_UNIT_CENTS = r",?\s+(?:(?:and|&|plus)\s+)?(\d{1,2}|one)\s?(?:cents?\b|¢|/100\b)"
# after a unit word the cents may be two bare digits: "47 dollars 99", "47 dollars and 99."
_BARE_CENTS = rf"\s+(\d{{2}})(?!\d|[.,]\d|{_COUNTED})|\s+and\s+(\d{{2}})(?=\s*(?:[.!?;)]|$))"
_UNIT_TAIL = rf"(?:{_UNIT_CENTS}|{_BARE_CENTS})?"
# a number before its mark starts no later than its first digit ("47,99 usd" is never $99), and
# may have a decimal comma ("47,99 $": two digits, where a thousands comma has three)
_BEFORE_MARK = rf"(?<![\d.,'/]){_WHOLE}(?:{_DECIMALS}|,(\d{{2}})(?!\d))?\s?"
_SPACE = r"\s?"
# one pattern per spelling, each run only when its anchor is in the text (a single alternation
# with optional prefixes is tried at every position: several times slower), or where its gate
# pattern is found; groups: the whole dollars, then the decimals, then cents said apart
_MONEY_FORMS = (
    ("$", re.compile(rf"\${_SPACE}{_WHOLE}(?:{_DECIMALS}|,?{_SAID_CENTS})?")),
    # "47.99$", never the "2 " of "2 $5 cards" (this one scans every digit: only where a "$"
    # comes before no digit, 20 us an answer otherwise)
    # ("47.99 US$" too)
    (re.compile(r"\$(?!\s?\d)"), re.compile(rf"{_BEFORE_MARK}(?:us)?\$(?!\s?\d)")),
    ("usd", re.compile(rf"\busd\s?{_WHOLE}(?:{_DECIMALS}|,?{_SAID_CENTS})?")),
    ("usd", re.compile(rf"{_BEFORE_MARK}\(?usd\b")),  # "47.99 USD", "47.99 (USD)"
    # "47 dollars and 99 cents", "101.99 us dollars", "47.99 in US dollars" (number words are
    # digits by now: "forty-seven dollars 99")
    (
        "dollar",
        re.compile(rf"{_BEFORE_MARK}(?:in )?(?:(?:u\.?s\.?|american) )?dollars?\b{_UNIT_TAIL}"),
    ),
    # the currency named first: "US dollars 47.99" (with its cents: "dollars 99" after "47"
    # is cents, never an amount)
    ("dollar", re.compile(r"\b(?:u\.?s\.?|american) dollars? (\d{1,3}(?:,\d{3})+|\d+)\.(\d{2})\b")),
    ("buck", re.compile(rf"{_BEFORE_MARK}bucks\b{_UNIT_TAIL}")),
    # as on a cheque: "47 and 99/100 dollars" (the empty group: no decimals)
    (
        "/100",
        re.compile(r"(?<![\d.,'])(\d+) and ()(\d{2})/100\s?(?:(?:u\.?s\.?|american) )?dollars?\b"),
    ),
)
# the first letters up front and the lookbehinds after "free": a lookbehind first was tried at
# every position (78 us an answer that holds an anchor, now 10)
_MONEY_ZERO = re.compile(
    r"(?=[fnacw])\b(?:free\b(?<!feel free)(?<!-free)(?!\s+to\b)(?!-)"
    r"|no (?:extra |additional )?(?:charge|cost)\b|at no (?:extra |additional )?cost\b"
    r"|costs? (?:you )?nothing\b|no (?:shipping|delivery) (?:fee|charge|cost)s?\b|won't cost\b)"
)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?(?:%|percent\b|per cent\b|pct\b)")
_PERCENT_ZERO = re.compile(
    r"\b(?:no|without(?: an?| any)?|0)\s+(?:restocking\s+)?fees?\b"
    r"|(?:\bnot|n't|\bnever)\s+(?:be\s+)?(?:charged|charge|pay)\s+(?:you\s+)?(?:an?\s+|any\s+)?"
    r"(?:restocking\s+)?fee|\bfee-free\b|\bno restocking\b"
)
# a range however it is said: "7-10", "7 to 10", "7 through 10", "between 7 and 10"
_DURATION = re.compile(
    r"(?=[bn\d])(?:\bbetween (\d+) and |(?:\bno (?:sooner|earlier) than )?(\d+)"
    r"(?:\s?(?:-|to|or|through|thru|and no later than)\s?))?(\d+)[\s-]?"
    r"(?:more |extra |additional |full )?(?:business |working |calendar )?(day|week)s?\b"
)


def _amount(whole: str, decimals: str | None, *said: str | None) -> float:
    """Dollars of a match of `_MONEY_FORMS`: `decimals` after a point ("4.5" is $4.50), or the
    first of the cents `said` apart ("and 5 cents" is $0.05; "one" stays a word)."""
    dollars = float(whole.replace(",", "").replace("'", "").replace(" ", ""))
    cents = decimals.ljust(2, "0") if decimals else next((c for c in said if c), None)
    return dollars + (0 if cents is None else 1 if cents == "one" else int(cents)) / 100


def _has(text: str, words: tuple[str, ...]) -> bool:
    """A cheap prefilter: regexes only run over texts that hold one of their anchors."""
    return any(w in text for w in words)


# an amount right before "threshold", "or more", after "orders over", "at least": the free-
# shipping threshold; before "order", after "order of": the order's value; before "to ship",
# "for shipping", after "shipping is", "costs" (in a sentence about shipping): the shipping cost
_THRESHOLD_AFTER = re.compile(
    r"\s*(?:(?:free[- ])?shipping )?(?:threshold|minimum)\b|\s*(?:or more|and (?:up|above|over))\b"
)
_THRESHOLD_BEFORE = re.compile(
    r"\b(?:threshold(?: is| of)?|orders? (?:over|above|of at least)|over|above|at least"
    r"|(?:under|below) the|(?:orders|purchases) (?:under|below|less than)"
    r"|spend(?:ing)?(?: at least)?)\s*$"
)
_ORDER_AFTER = re.compile(r"\s*(?:order|purchase|basket|cart)\b")
_ORDER_BEFORE = re.compile(
    r"\border (?:total |value )?(?:of|is|was|comes to|came to)\s*$"
    r"|\b(?:order|purchase) (?:total(?:ed|led)?|came to|comes to|cost(?: you)?)\s*$"
    r"|\b(?:in total|altogether|overall|all in)(?: (?:you paid|it was|it came to))?\s*$"
)
_SHIPPING_AFTER = re.compile(
    r"\s*(?:to ship|for (?:standard |express )?shipping|(?:standard )?shipping(?: fee| charge)?"
    r"|to have it shipped)\b"
)
_SHIPPING_BEFORE = re.compile(
    r"\b(?:shipping|delivery)(?: fee| charge| cost)?(?: is| costs?| will be| comes to| runs)"
    r"(?: you)?(?: only| just| a flat)?\s*$|\bcosts?(?: you)?(?: only| just)?\s*$"
)


# "shipping on your $35 order is |$4.99": the shipping cost, though "order is" comes right before
_SHIPPING_ON_ORDER = re.compile(
    r"\b(?:shipping|delivery)(?: fee| charge| cost)? (?:on|for) (?:a |an |your |the |this )?"
    r"(?:\$\s?[\d.,]+ )?(?:order|purchase)(?: total)? (?:is|costs?|will be|comes to|runs)"
    r"(?: you)?(?: only| just| a flat)?\s*$"
)


# an item's price: "you paid |$29.99 for it", "the price is now |$25", "changed from $20 to |$25",
# "$25| each"; the price before a change: "changed from |$20", "|$20 before", "used to be |$20"
_CHANGE = (
    r"(?:changed|went (?:up|down)|gone (?:up|down)|rose|dropped|fell|increased|decreased|raised"
    r"|lowered|reduced|cut|jumped|moved|up|down)(?: in price)?"
)
_WAS_BEFORE = re.compile(
    rf"\b{_CHANGE} from\s*$|\b(?:used to (?:be|cost)|previously|originally|formerly|instead of"
    r"|old price(?: of| was| is)?|was originally|was previously)\s*$"
)
_WAS_AFTER = re.compile(r"\s*(?:before|previously|originally|earlier|to \$)\b")
_PRICE_BEFORE = re.compile(
    rf"\b{_CHANGE} to\s*$|\bfrom \$\s?[\d.,]+ to\s*$|\b(?:you )?paid\s*$"
    r"|\bcharged(?: you)?(?: at)?\s*$"
    r"|\b(?:new )?price (?:is|of|is now|now)\s*$|\bpriced at\s*$|\bnow(?: costs?| is| at)?\s*$"
)
_PRICE_AFTER = re.compile(
    r"\s*(?:each|apiece|per (?:item|unit)|for (?:it|them|each|one|that one|this one"
    r"|the (?!order|purchase|shipping|delivery)))\b"
)


# the fee of the shop's rule, not of this order: "orders under $50 pay |$4.99", "|$4.99 for orders
# under $50", "under that it's |$4.99", "otherwise it's |$4.99"
_BASE_BEFORE = re.compile(
    r"\b(?:orders|purchases) (?:under|below|less than)\b[^,]*$"
    r"|\b(?:under|below) (?:that|it|the threshold)\b[^,]*$|\botherwise\b[^,]*$"
)
_BASE_AFTER = re.compile(r"[^,]*?\b(?:for|on) (?:all |any )?(?:orders|purchases) (?:under|below)\b")


# the amount an order lacks to reach the threshold: "|$15 away", "|$15 short of", "|$15 more to
# qualify", "|$15 to ship free", "add |$15", "spend another |$15"
_FREE_AFTER_GAP = (
    r"(?:to|and) (?:it |you |your order )?(?:ships?|get|qualify for|unlock|reach) free\b"
)
_GAP_AFTER = re.compile(
    rf"\s*(?:more )?(?:away|short|shy)\b|\s*more (?:to|and|for|until|before)\b"
    rf"|\s*(?:more )?{_FREE_AFTER_GAP}"
)
_GAP_BEFORE = re.compile(
    r"\b(?:add(?:ing)?|spend(?:ing)?)(?: another| an extra)?\s*$|\banother\s*$"
)


MONEY_CUES = (
    Cue(GAP, after=_GAP_AFTER),  # before the threshold's "spend |$50": "spend |$15 more to ..."
    Cue(THRESHOLD, before=_THRESHOLD_BEFORE, after=_THRESHOLD_AFTER),
    Cue(BASE, before=_BASE_BEFORE, after=_BASE_AFTER),
    Cue(SHIPPING, before=_SHIPPING_ON_ORDER),  # though "order is" comes right before it
    Cue(ORDER, before=_ORDER_BEFORE, after=_ORDER_AFTER),
    Cue(SHIPPING, after=_SHIPPING_AFTER),
    Cue(SHIPPING, before=_SHIPPING_BEFORE, near="ship"),
    Cue(GAP, before=_GAP_BEFORE),  # after the shipping cues: "another |$4.99 for shipping"
    # before the WAS cues: "from $X to |$13.49 before checkout" is the new price
    Cue(PRICE, before=_PRICE_BEFORE),
    Cue(WAS, before=_WAS_BEFORE, after=_WAS_AFTER),
    Cue(PRICE, after=_PRICE_AFTER),
)


def money_role(text: str, start: int, end: int) -> str:
    """The role the sentence gives the amount at `text[start:end]`."""
    return read_role(MONEY_CUES, text, start, end, 50)


def extract_money(text: str) -> list[tuple[int, float]]:
    """(position, amount) for every amount, each an `Amount` in the role its sentence gives it
    ("shipping on a $35 order costs $4.99": $35 the order, $4.99 the shipping)."""
    out = []
    for gate, pattern in _MONEY_FORMS:
        if gate in text if isinstance(gate, str) else gate.search(text):
            out += [
                (m.start(), Amount(round(_amount(*m.groups()), 2), money_role(text, *m.span())))
                for m in pattern.finditer(text)
            ]
    out.sort()
    return out + _money_zero(text)


# "free" in the shop's rule ("orders over $50 ship free", "free shipping starts at $50", "Plus
# members get free shipping", "spend more and you could get free shipping") states no amount of this
# order: read in its clause, it is no $0 (a fee of $4.99 may be told beside it), while "your
# order ships free" and "shipping is free for you" still are
_SAID_AMOUNT = r"\$\s?\d|\busd\s?\d|\d\s?(?:dollars?|bucks|usd)\b"
_NEEDED = r"(?:needs?|needed|required|requires|necessary|minimum|threshold)"
_FOR_FREE = r"(?:for|to (?:get|qualify for|earn|unlock))"
_RULE_FREE_AFTER = re.compile(
    r"\s*(?:shipping\s+|delivery\s+)?(?:(?:on|for) (?:all |any |every )?(?:orders|purchases)"
    r"|(?:over|above|from|at|starting at|starts|kicks in|begins|applies|once|when|if)\b"
    r"|(?:threshold|minimum|cutoff|requires|needs)\b)"  # "the free shipping threshold is $50"
)
_RULE_FREE_BEFORE = re.compile(
    r"\b(?:orders|purchases|members)\b|\b(?:away from|short of|reach|unlock|towards?)\s*$"
    r"|(?:\bcould|\bwould|'d|\bmight) (?:get|have|qualify for)\s*$"
    # "spend $15 more to get free shipping", "add $15 more and it ships free": what the order
    # would do, not what it does ("your order is going to ship free" still says it does)
    r"|\b(?:add|spend|more|enough|another|extra)\b[^,]*\bto (?:get|qualify for|earn|ship)\s*$"
    r"|\b(?:add|spend)\b[^,]*\$\s?[\d.,]+[^,]*\band (?:it|you|your order)(?:'ll| will)?"
    r" (?:ships?|get|qualify for)\s*$"
    # what an amount is needed for: "below the $50 needed for free shipping", "you need $50
    # to get free shipping", "the minimum for free shipping"
    rf"|(?:{_SAID_AMOUNT})[^,]*\b{_NEEDED}\b[^,]*\b{_FOR_FREE}\s*$"
    rf"|\b{_NEEDED}\b[^,]*(?:{_SAID_AMOUNT})[^,]*\b{_FOR_FREE}\s*$"
    rf"|\b(?:minimum|threshold|cutoff)(?: order| spend)? {_FOR_FREE}\s*$"
)
_CONDITION = re.compile(r"\s*(?:for|on|over|above|with) (?:all |any )?(?:orders|purchases)\b"
                        r"|\s*(?:if|once|when|whenever)\b")  # fmt: skip
_CLAUSE_END = re.compile(r"[;:!?\n]|\.(?!\d)")


# "free" of something no fact prices ("free returns", "returns are free", "free exchanges"):
# no amount of shipping, so it is no $0 beside a $4.99 fee ("shipping is free" still is)
_OTHER_FREE_AFTER = re.compile(r"\s+(?:returns?|exchanges?|gift wrap(?:ping)?)\b")
_OTHER_FREE_BEFORE = re.compile(
    r"(?<!shipping and )(?<!shipping & )\b(?:returns?|returning it|exchanges?)"
    r"\s+(?:are|is)\s+(?:always\s+|also\s+)?$"
)


def _other_free(text: str, start: int, end: int) -> bool:
    """Is the "free" at `text[start:end]` about returns or exchanges, not shipping?"""
    return bool(
        _OTHER_FREE_AFTER.match(text, end)
        or _OTHER_FREE_BEFORE.search(text[max(0, start - 40) : start])
    )


def _rule_free(text: str, start: int, end: int) -> bool:
    """Is the "free" at `text[start:end]` the shop's free-shipping rule, not this order's fee?"""
    after = _CLAUSE_END.split(text[end : end + 50], maxsplit=1)[0]
    if _RULE_FREE_AFTER.match(after):
        return True
    clauses = _CLAUSE_END.split(text[max(0, start - 80) : start])[-1].split(",")
    if _RULE_FREE_BEFORE.search(clauses[-1]):
        return True  # "orders over $50 ship free", "away from free shipping"
    return len(clauses) > 1 and bool(_CONDITION.match(clauses[-2]))  # "for orders over $50, ..."


def _money_zero(text: str) -> list[tuple[int, float]]:
    if not _has(text, ("free", "charge", "cost", "nothing")):
        return []
    return [
        (m.start(), Amount(0.0))
        for m in _MONEY_ZERO.finditer(text)
        if m[0] != "free" or not (_rule_free(text, *m.span()) or _other_free(text, *m.span()))
    ]


def extract_percents(text: str) -> list[tuple[int, float]]:
    out = []
    if _has(text, ("%", "percent", "per cent", "pct")):
        out = [(m.start(), float(m[1])) for m in _PERCENT.finditer(text)]
    if "fee" in text or "restocking" in text:
        out += [(m.start(), 0.0) for m in _PERCENT_ZERO.finditer(text)]
    return out


# The role a sentence gives a duration. A window ("the 21-day return window", "a window of 21
# days", "21 days to return it", "returns are accepted within 21 days") and time left ("14 days
# left", "14 more days") must be a target; elapsed time ("delivered 35 days ago", "35 days since
# delivery", "14 days past the window") and anything else may also be context, which is always
# elapsed time (`DurationKind.may_be_context`).
WINDOW, LEFT, ELAPSED = "window", "left", "elapsed"
REFUND = "refund"  # how long a refund takes: said in business days, never a return window


class Duration(NamedTuple):
    """A stated duration: `low` to `high` days (equal for one value), in its `role`."""

    low: int
    high: int
    role: str = UNKNOWN


# cues read in the stated sentence right after the duration ("21 days| ago") or right before it
# ("the window is |21 days"); elapsed cues win, then "left" (days left is no window), then
# window cues
_ELAPSED_AFTER = re.compile(
    r"\s*(?:ago|back|since|late|overdue|past|beyond|outside"
    r"|after (?:the|its|your) (?:return )?window)\b"
)
_ELAPSED_BEFORE = re.compile(r"\bbeen (?:over |more than |about |nearly |almost )?$")
# the days from today to a date ("arrives in 3 days", "3 days from now") say that date
# (`extract_dates`), no duration
OFFSET = "offset"
_OFFSET_AFTER = re.compile(r"\s*(?:from (?:now|today)|out|away)\b")  # ("4 days out": a date)
_OFFSET_BEFORE = re.compile(
    r"\b(?:arrives?|arriving|delivered|there|with you|due|expected|lands?|reach(?:es)? you"
    r"|get to you) in (?:about |around |roughly |just |another )?$"
)
_LEFT_AFTER = re.compile(r"\s*(?:left|remaining|to go)\b")
_WINDOW_AFTER = re.compile(
    r"\s*(?:(?:return|returns|exchange|refund) )?(?:window|period|policy)\b"
    r"|\s*(?:(?:from|after|of) (?:the )?delivery )?"
    r"(?:to (?:return|send|exchange|bring)|for (?:a )?(?:returns?|exchanges?))\b"
)
_WINDOW_BEFORE = re.compile(
    r"(?:\b(?:window|period)\b[^\d.;:!?]{0,40}?\b(?:is|of|was|lasts|runs)"
    r"|\bwithin(?: the (?:first|next))?"
    r"|\b(?:you|customers|members) (?:have|had|get|got)"
    r"|\b(?:give|gives|gave|allow|allows|allowed|offer|offers)(?: you)?)"
    r" (?:only |just |a full |a total of )?$"
)
DURATION_CUES = (
    Cue(REFUND, value=re.compile(r"business|working")),
    Cue(OFFSET, before=_OFFSET_BEFORE, after=_OFFSET_AFTER),
    Cue(ELAPSED, before=_ELAPSED_BEFORE, after=_ELAPSED_AFTER),
    Cue(LEFT, after=_LEFT_AFTER, value=re.compile(r"more|extra|additional")),  # "5 more days"
    Cue(WINDOW, before=_WINDOW_BEFORE, after=_WINDOW_AFTER),
)


def duration_role(text: str, start: int, end: int) -> str:
    """The role the sentence gives the duration at `text[start:end]` ("21-day", "21 days")."""
    return read_role(DURATION_CUES, text, start, end, 60)


def extract_durations(text: str) -> list[tuple[int, Duration]]:
    """(position, duration) for every duration mention, each with the role its sentence gives
    it: "no, the 21-day window closed 14 days ago" -> 21 days as the window, 14 elapsed."""
    out = []
    if "day" not in text and "week" not in text:
        return out
    for m in _DURATION.finditer(text):
        scale = 7 if m[4] == "week" else 1
        high = int(m[3]) * scale
        low = int(m[1] or m[2] or m[3]) * scale
        role = duration_role(text, m.start(), m.end())
        if role != OFFSET:
            out.append((m.start(), Duration(low, high, role)))
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
    r"|was dropped off|reached you|being processed|being prepared|being packed|en route|sent out"
    r"|delivered|arrived|shipped|dispatched|despatched|processing|pending|cancell?ed"
    r"|cancell?ation (?:is |has been )?(?:now )?(?:confirmed|complete|completed|processed)"
    r"|cancell?ation went through"
)
_STATUS_OF = {
    "delivered": "delivered", "arrived": "delivered", "was dropped off": "delivered",
    "shipped": "shipped", "dispatched": "shipped", "despatched": "shipped", "on its way": "shipped",
    "on the way": "shipped", "on their way": "shipped", "in transit": "shipped",
    "reached you": "delivered",
    "out for delivery": "shipped", "sent out": "shipped", "en route": "shipped",
    "processing": "processing", "being processed": "processing",
    "being prepared": "processing", "being packed": "processing",
    "pending": "pending", "not yet been processed": "pending", "not yet processed": "pending",
    "not been processed": "pending", "not processed": "pending",
    "awaiting processing": "pending", "cancelled": "cancelled", "canceled": "cancelled",
}  # fmt: skip
# "cancellation confirmed", "the cancellation has been processed": the order is cancelled
_CANCELLATION_DONE = re.compile(r"cancell?ation ")
_MODAL_BEFORE = frozenset({"once", "if", "after", "before", "until", "while", "when"})
_NEGATION_BEFORE = frozenset({"not", "never", "yet"})
_ORDER_NOUNS = frozenset({"order", "orders", "item", "items", "package", "packages", "parcel",
                          "parcels", "purchase", "purchases", "shipment", "shipments",
                          "one"})  # fmt: skip
_SOME = frozenset({"one", "a", "any", "single", "all"})
_WISHED = frozenset({"want", "wants", "wish", "wishes", "like", "prefer", "need"})
_NONE_SUBJECT = frozenset({"none", "nothing", "neither"})  # a subject that says no order is


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
    if words[-1] in ("or", "nor") and any(
        w in _NEGATION_BEFORE or w.endswith("n't") for w in before.split()[-7:]
    ):
        return True  # "isn't being processed or shipped yet": the negation goes on
    if not _NONE_SUBJECT.isdisjoint(before.lower().split()[-6:]):
        return True  # "none of your orders were cancelled", "nothing has shipped"
    said = _SENTENCE_END.split(before.lower())[-1].split()[-6:]
    if any(a == "no" and b in _ORDER_NOUNS for a, b in itertools.pairwise(said)):
        return True  # "no order of yours was cancelled" (not "no issues, it was delivered")
    if any(a == "not" and b in _SOME for a, b in itertools.pairwise(said)):
        return True  # "not one of your orders was cancelled", "not a single one has shipped"
    if not _WISHED.isdisjoint(words):
        return True  # "should you want O2 cancelled": a wish, no status
    if any(w in _MODAL_BEFORE for w in words):
        return True  # "once it has shipped", "if it was delivered"
    if any(a in ("order", "orders", "one") and b == "that" for a, b in itertools.pairwise(words)):
        return True  # "an order that has already shipped", "an order that is still processing"
    return len(words) > 1 and words[-2] == "that" and words[-1] in ("have", "has", "are", "is")


def _whole_word(text: str, start: int, end: int) -> bool:
    return (start == 0 or not text[start - 1].isalnum()) and (
        end == len(text) or not text[end].isalnum()
    )


_STATUS_STEMS = ("deliver", "arriv", "ship", "dispatch", "despatch", "process", "pending", "cancel",
                 "transit", " way", "route", "sent out", "dropped", "being p",
                 "reached")  # fmt: skip


# A status said as a movement: a verb of motion in a done or "-ing" form, then where to or
# from. Done, to the customer's place, the order is delivered ("got to you", "showed up at
# your door", "was left on your porch"); on its way there ("is heading your way", "is coming
# to you") or gone from the shop's place ("has left our warehouse") it has shipped. A verb in
# its base form states nothing ("should get to you on June 16" is an arrival date).
# ("set off", "end up" are motions too, but "set up", "ending in 1234" fill answers: left out)
_MOTION_LEMMAS = ("arrive", "reach", "land", "get", "come", "show", "turn", "make", "leave",
                  "depart", "exit", "go", "head", "drop", "hand", "pull", "move", "travel",
                  "roll", "pop", "wind", "bring", "carry")  # fmt: skip
_MOTION_FORMS = {  # "showed" -> "done", "heading" -> "ing"
    form: ("ing" if tag == "VBG" else "done")
    for lemma in _MOTION_LEMMAS
    for tag, forms in getAllInflections(lemma, upos="VERB").items()
    if tag in ("VBD", "VBN", "VBG")
    for form in forms
}
_CUSTOMER_PLACE = (
    r"to you\b|your way\b|(?:(?P<at>at|on|to|onto|in|into|through|inside) )?(?:your|the) "
    r"(?:front |back )?(?:door|doorstep|porch|home|house|address|mailbox|"
    r"letterbox|hands|building|apartment|flat|step|steps|reception|locker)s?\b"
)
_SHOP_PLACE = (
    r"(?:our|the) (?:warehouse|depot|facility|fulfil?ment cent(?:er|re)|"
    r"distribution cent(?:er|re)|dispatch cent(?:er|re)|stockroom)s?\b"
)
_PLACE = re.compile(
    rf"(?P<to>{_CUSTOMER_PLACE})|(?P<from>(?:(?P<prep>from|out of) )?{_SHOP_PLACE})"
)
# a place right after the verb, with no preposition: reached (the customer's), left (the shop's)
_REACHED = frozenset(f for f, _ in _MOTION_FORMS.items() if f.startswith("reach"))
_LEFT = frozenset(("left", "leaving", "departed", "departing", "exited", "exiting"))
_PLACE_STEMS = ("to you", "your way", "door", "porch", "home", "house", "address", "mailbox",
                "letterbox", "hands", "building", "apartment", "flat", "step", "reception",
                "locker", "warehouse", "depot", "facilit", "center", "centre",
                "stockroom")  # fmt: skip


def _motions(text: str) -> list[tuple[int, str]]:
    """(position of the verb, status) of each status said as a movement (rules above)."""
    out = []
    for m in _PLACE.finditer(text):
        words = text[max(0, m.start() - 30) : m.start()].split()[-3:]
        for k in range(len(words) - 1, -1, -1):  # the nearest verb of motion, 2 words back
            form = _MOTION_FORMS.get(words[k])
            if form is None:
                continue
            # no preposition: "reached your door", "left our warehouse" (not "left your
            # address as it was", "got to the warehouse": a return that came back)
            if m["to"] and m["at"] is None and not m["to"].startswith(("to you", "your way")):
                direct = _REACHED
            elif m["from"] and not m["prep"]:
                direct = _LEFT
            else:
                direct = None
            if direct is not None and (words[k] not in direct or k < len(words) - 1):
                break
            status = "delivered" if m["to"] and form == "done" else "shipped"
            out.append((m.start() - len(" ".join(words[k:])) - 1, status))
            break
    return out


# A status said as the event it is, by the kind of event (its verbs taken by lemma, every
# done or "-ing" form): arrival at the customer (the order "has been with you since", "was
# received / signed for at your address", "came / turned up on June 3", its delivery
# "completed") is delivered; in the carrier's hands or gone from the shop ("is with the
# courier", "is in the mail / on the road", "handed to the carrier", "went out", "has been
# sent", "is out of our warehouse") shipped; not started ("hasn't been processed", "is
# queued", "waiting to be processed") pending; being prepared ("being handled / prepped /
# readied", "in the works") processing; stopped ("called off", "voided", "scrapped", "the
# cancellation of O1 went through") cancelled. The words before each are then read as for
# every status (`_hypothetical`: "will be", "hasn't", "once" state none), and a subject that
# is no order ("your refund is being processed", "the label was sent") states none either.
def _done(*lemmas: str) -> str:
    """Every past and past-participle form of `lemmas`, as a regex alternation."""
    return _forms(lemmas, ("VBD", "VBN"))


def _ing(*lemmas: str) -> str:
    return _forms(lemmas, ("VBG",))


def _forms(lemmas: tuple[str, ...], tags: tuple[str, ...]) -> str:
    forms = {
        form
        for lemma in lemmas
        for tag, said in (
            getAllInflections(lemma, upos="VERB") or getAllInflectionsOOV(lemma, upos="VERB")
        ).items()
        if tag in tags
        for form in said
    }
    return "(?:" + "|".join(sorted(forms, key=len, reverse=True)) + ")"


_BE = r"(?:is|are|was|were|been|'s|now|already|currently|still|safely)"
_CARRIER = (
    r"(?:the |a |our |your )?(?:carrier|courier|shipping company|delivery company|postal "
    r"service|post office|postman|mail carrier|delivery driver|mail|post|road|truck|van|"
    r"ups|fedex|usps|dhl)s?\b"
)
# ("arrived" is a status word already)
_ARRIVE_DONE = _done("come", "land") + r"|" + _done("turn", "show", "pop") + r" up"
_PREPARE = ("process", "prepare", "prep", "pack", "handle", "ready", "assemble", "fulfil",
            "package", "box", "sort")  # fmt: skip
_STOP = ("void", "annul", "scrap", "abort", "revoke", "rescind", "nix")
_NEGATED = r"(?:\w+n't|not|never)"
_CARRIER_WORDS = ("carrier", "carriers", "courier", "couriers", "company", "postal", "post",
                  "postman", "mail", "road", "truck", "van", "ups", "fedex", "usps", "dhl",
                  "driver")  # fmt: skip
_EVENTS = (  # (status, gate: one of these words is in every match, pattern)
    ("delivered", ("with",), rf"\b{_BE} with you\b"),
    ("delivered", ("completed", "finished", "made"),
     rf"\b{_done('complete', 'finish', 'make')} (?:its|the|their|your) deliver"),
    ("delivered", ("complete", "completed", "finished", "done", "successful", "place", "happened",
                   "made"),
     r"\bdeliver(?:y|ies) (?:(?:of|for) \S+ )?(?:(?:was|were|is|has been|have been) )?"
     r"(?:now )?(?:completed?|finished|done|successful|took place|happened|was made)\b"),
    ("delivered", ("received",),
     r"\b(?:was|were|been|got) (?:safely |successfully )?received (?:at your|at "
     r"(?:the|your) (?:door|address|home|house)|by you|in person)"),
    ("delivered", ("received",),
     # an order as the object: "you received it 62 days ago" in a policy answer restates
     # the customer's words about the item, not a status a tool showed
     r"\byou(?: have|'ve)? (?:already )?received (?:(?:your|the) (?:order|package|parcel|"
     r"shipment)s?|o\d)"),
    ("delivered", ("signed",), rf"\b{_done('sign')} for\b"),
    ("delivered", ("hands", "door", "doorstep", "address", "home", "house", "destination"),
     rf"\b(?:{_BE} (?:now )?(?:in your hands|at your (?:door|doorstep|address|home|house))|"
     rf"{_done('reach', 'arrive', 'get')} (?:at |to )?(?:its|their|the) (?:final )?destination)"),
    ("delivered", ("came", "come", "landed", "turned", "showed", "shown", "popped"),
     rf"\b(?:{_ARRIVE_DONE}) (?:on|last|yesterday|earlier|already|safely)\b"),
    ("shipped", _CARRIER_WORDS,
     rf"\b{_BE} (?:(?:now|already|currently) )?(?:with|in|on|in the hands of) {_CARRIER}"),
    ("shipped", _CARRIER_WORDS,  # moving in the carrier's hands: "moving through the
     # carrier network", "making its way through the postal service"
     rf"\b{_BE} (?:{_ing('move', 'travel', 'pass', 'go', 'progress')}|"
     rf"{_ing('make', 'work', 'wind')} (?:its|their) way) (?:through|in|with|within|via) "
     rf"{_CARRIER}"),
    ("shipped", _CARRIER_WORDS,
     rf"\b{_done('hand', 'pass', 'give', 'turn', 'release', 'transfer')} "
     rf"(?:over |off )?to {_CARRIER}"),
    ("shipped", _CARRIER_WORDS, rf"\b{_done('pick', 'collect')} (?:up )?by {_CARRIER}"),
    ("shipped", _CARRIER_WORDS,  # the carrier as the subject: "the courier has it"
     rf"\b(?:the|your) {_CARRIER} (?:(?:now|already) )?(?:has|have|got|(?:has |have )?"
     rf"{_done('pick', 'collect')}) (?:up )?(?:it|them|your (?:order|package|parcel)|"
     r"the (?:order|package|parcel))\b"),
    ("shipped", ("out",),
     rf"\b{_done('go', 'head', 'roll', 'ship', 'mail', 'post')} out\b(?! of stock)"),
    ("shipped", ("out",), rf"\b{_BE} out (?:of {_SHOP_PLACE}|the door)"),
    ("shipped", ("sent", "mailed", "posted"),
     rf"\b(?:{_BE}|got|have been|has been) {_done('send', 'mail', 'post')}"
     r"(?: off| out| away)?\b(?! to (?:your|the) (?:e-?mail|inbox|phone)| back)"),
    ("shipped", ("being",),
     rf"\bbeing {_done('ship', 'send', 'mail', 'post', 'dispatch', 'deliver')}\b"),
    ("pending", ("processed", "started", "touched", "begun", "began"),
     rf"\b{_NEGATED} (?:yet )?(?:been |being )?{_done('process', 'start', 'touch', 'begin')}"
     r"\b(?! by (?:the |a )?(?:carrier|courier))"),
    ("pending", ("yet",),
     r"\b(?:has|have|is|are) yet to be (?:processed|started|handled)\b"),
    ("pending", ("processing",),
     rf"\bprocessing (?:(?:of|for) \S+ )?{_NEGATED} (?:yet )?(?:start|begin|started|begun)"),
    ("pending", ("queued", "queue", "unprocessed"),
     rf"\b(?:{_done('queue')}|in (?:the|a|our) queue|unprocessed)\b"),
    ("pending", ("waiting", "awaiting", "waits"),
     rf"\b(?:{_ing('wait', 'await')}|waits) (?:for |on )?(?:its turn|processing|"
     r"to be (?:processed|handled|started))\b"),
    ("processing", ("being",),
     rf"\bbeing (?:{_done(*_PREPARE)}|made ready|got ready|gotten ready|put together|"
     r"worked on)\b"),
    ("processing", ("works", "preparation", "ready", "progress", "working"),
     r"\b(?:in the works|in preparation|under preparation|in progress|working on (?:it|your "
     r"order|the order)|getting ready (?:to|for) "
     r"(?:ship|dispatch|shipment|shipping|dispatch))\b"),
    # the events by their meaning, more words for each (round 4 of the blind probes)
    ("delivered", ("journey", "trip", "travels", "route"),  # "finished its journey to you"
     rf"\b{_done('finish', 'complete', 'end', 'conclude')} (?:its|their|the) (?:journey|trip|"
     r"travels|route)\b(?! to (?:the|our|a) (?:carrier|courier|depot|hub|sorting))"),
    ("delivered", ("brought", "dropped", "delivered"),  # "was brought round", "dropped round"
     rf"\b{_BE} (?:{_done('bring', 'drop', 'deliver')}) (?:round|over|by)\b(?! (?:the|a|our) "
     r"(?:carrier|courier|warehouse|depot))"),
    ("delivered", ("confirmed", "verified", "recorded", "logged", "marked"),  # "delivery confirmed"
     r"\bdeliver(?:y|ies) (?:(?:was|were|is|has been|have been) )?(?:now )?(?:confirmed|"
     r"verified|recorded|logged|marked complete)\b"),
    ("delivered", ("completed", "complete", "finished", "made"),  # "completed delivery on May 3"
     rf"\b{_done('complete', 'finish', 'make')} (?:its |their |the )?deliver(?:y|ies)\b"
     r"(?! (?:to|at) (?:the|our|a) (?:carrier|courier|depot|hub|locker))"),

    ("shipped", ("move", "road", "transit", "wing", "journey", "trip"),
     # "is on the move", "on the road to you", "is on its journey to you"
     rf"\b{_BE} (?:now |already |currently )?(?:on the (?:move|road)|on the wing|on (?:its|"
     r"their) (?:journey|trip) (?:to you|your way|to your))"),
    ("pending", ("awaiting", "waiting", "waits", "await"),  # "awaiting fulfilment / packing"
     rf"\b(?:{_ing('wait', 'await')}|waits) (?:for |on )?(?:its |the |our )?(?:fulfill?ment|"
     r"dispatch|preparation|picking|packing|processing|the warehouse|warehouse|to be "
     r"(?:picked|packed|prepared|fulfill?ed|worked on))\b"),
    ("pending", ("worked", "picked", "handled", "touched", "actioned", "fulfilled", "prepared"),
     # "not yet being worked on", "hasn't been picked up by the warehouse yet"
     rf"\b{_NEGATED} (?:yet )?(?:been |being |be )?(?:worked on|{_done('pick')} up by (?:the |"
     rf"our )?(?:warehouse|team|staff|packers?)|{_done('handle', 'action', 'fulfil', 'prepare')})"
     r"\b(?! by (?:the |a )?(?:carrier|courier))"),
    ("processing", ("fulfilment", "fulfillment", "picked", "packed", "prepared", "getting"),
     # "in fulfilment at our warehouse", "being picked and packed", "getting prepared to ship"
     rf"\b(?:in (?:fulfill?ment|the packing|picking)|(?:being|getting) (?:picked(?! up)|packed|"
     rf"{_done(*_PREPARE)})|getting (?:ready|prepped|packed))\b"),
    ("cancelled", ("off", "voided", "annulled", "scrapped", "aborted", "revoked", "rescinded",
                   "nixed"),
     rf"\b(?:{_done('call')} off|{_done(*_STOP)})\b"),
    ("cancelled", ("cancellation", "cancelation"),
     r"\bcancell?ation\b(?P<mid>[^.;!?]{0,48}?)(?:went through|has gone through|"
     r"is complete|was completed|completed|is confirmed|was confirmed|has been confirmed|"
     r"has been processed|was processed|succeeded|was successful|is done|took effect|"
     r"has taken effect|is final)\b"),
)  # fmt: skip
_EVENT_READERS = tuple((status, frozenset(gate), re.compile(p)) for status, gate, p in _EVENTS)
_NOT_A_LETTER = str.maketrans({c: " " for c in "0123456789.,;:!?()[]{}\"'-/$%#*&+=<>|_~`@"})
# words before a status that make its subject no order ("your refund is being processed")
_NOT_AN_ORDER = frozenset({
    "refund", "refunds", "label", "labels", "email", "e-mail", "message", "request", "requests",
    "confirmation", "link", "code", "receipt", "invoice", "notification", "reply", "payment",
    "money", "credit", "voucher", "return", "returns", "replacement", "exchange", "claim",
    "ticket", "complaint", "i", "we", "i'm", "we're", "i've", "we've", "update",
    "coupon", "discount", "promo", "charge", "authorization", "hold", "transaction", "text",
    "sms", "tracking", "number", "info", "information", "details", "note", "instructions",
    "form", "cancellation", "cancellations", "application", "account", "subscription",
})  # fmt: skip
# (the nouns among them: "refund processing" is no status, "I've cancelled" is one)
_NOUN_BEFORE = _NOT_AN_ORDER - {"i", "we", "i'm", "we're", "i've", "we've", "hold"}
_CLAUSE_WORDS = frozenset({"and", "but", "so", "which", "-", "—", "because", "while"})
# between "cancellation" and its "went through": a doubt or a denial states no status
_NOT_DONE = re.compile(r"\b(?:not|never|will|would|should|could|can|may|might|if|once|when|"
                       r"being|to be)\b|n't\b")  # fmt: skip


_ORDER_WORDS = frozenset({"it", "it's", "its", "they", "they're", "order", "orders", "package",
                          "parcel", "shipment", "item", "items", "everything"})  # fmt: skip
_ORDER_ID = re.compile(r"#?[on]\d+$")


def _subject_is_no_order(text: str, start: int) -> bool:
    """Is the subject of the clause before `start` something other than an order? Read back
    to the nearest word naming an order (no) or one naming something else (yes)."""
    clause = re.split(r"[,;:()]", text[max(0, start - 50) : start])[-1].split()
    for word in reversed(clause[-6:]):
        word = word.strip("\"'")
        if word in _CLAUSE_WORDS or word in _ORDER_WORDS or _ORDER_ID.match(word):
            return False
        if word in _NOT_AN_ORDER:
            return True
    return False


def _events(text: str) -> list[tuple[int, int, str]]:
    """(start, end, status) of each status said as the event it is (rules above)."""
    words = set(text.translate(_NOT_A_LETTER).split())
    out = []
    for status, gate, pattern in _EVENT_READERS:
        if gate.isdisjoint(words):  # a set test first: most answers open few gates
            continue
        for m in pattern.finditer(text):
            if m.groupdict().get("mid") and _NOT_DONE.search(m["mid"]):
                continue
            if not _subject_is_no_order(text, m.start()):
                out.append((m.start(), m.end(), status))
    return out


# a status said in the terms of an exchange or a return set up ("an exchange in which the
# old one is returned and the new one is sent to you"): what the arrangement does, no status
_ARRANGED = re.compile(
    r"\b(?:exchange|swap|replacement|return)\b.*\b(?:in which|whereby|under which|where)\b"
)
_DASH = re.compile(r"\s-\s")


def _own_clause(before: str) -> str:
    """The words of `before` in the status word's own sentence, and after a dash that opens a
    clause ("hasn't shipped yet - it's being processed"; not "it has not - sadly - shipped")."""
    before = _SENTENCE_END.split(before)[-1]
    after_dash = _DASH.split(before)[-1]
    return after_dash if after_dash.strip() else before


_QUESTION_OPENERS = frozenset({"do", "does", "did", "would", "shall", "should", "want", "is",
    "are", "was", "were", "has", "have", "had", "can", "could", "will", "may", "what", "which",
    "how", "why", "where"})  # fmt: skip
_ASK_START = re.compile(r"[.!?\n]\s*")


def _asked(text: str, at: int) -> bool:
    """Whether the word at `at` is in a question: a sentence that opens with an auxiliary or a
    question word and ends with "?" ("Do you want O2 cancelled too?", "Has it shipped?")."""
    end = _SENTENCE_END.search(text, at)
    if end is None or end.group() != "?":
        return False
    starts = [m.end() for m in _ASK_START.finditer(text, 0, at)]
    first = text[starts[-1] if starts else 0 : at].split(maxsplit=1)
    return bool(first) and first[0].strip("\"'(*").lower() in _QUESTION_OPENERS


def extract_statuses(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    if _has(text, _STATUS_STEMS):  # a substring test first: the alternation is slow
        for m in _STATUS_CANDIDATE.finditer(text):
            if _whole_word(text, m.start(), m.end()):
                said = m.group()
                status = "cancelled" if _CANCELLATION_DONE.match(said) else _STATUS_OF[said]
                found.append((m.start(), status))
    # (a verb of motion first: a split and a set test; few answers hold one, fewer a place)
    if not _MOTION_FORMS.keys().isdisjoint(text.split()) and _has(text, _PLACE_STEMS):
        found = found + _motions(text)
    events = _events(text)  # an event wins over the status words inside it
    if events:  # ("waiting for processing" is pending, not processing)
        found = [f for f in found if not any(a <= f[0] < b for a, b, _ in events)]
        found += [(a, status) for a, _, status in events]
    found = sorted(set(found))
    out = []
    asks = "?" in text
    arranged = " which " in text or " where" in text
    for start, status in found:
        before = text[max(0, start - 40) : start]
        if "." in before or "\n" in before or " - " in before:
            before = _own_clause(before)
        if status != "pending" and _hypothetical(before):
            continue
        if before.endswith(" ") and before.split()[-1:] and before.split()[-1] in _NOUN_BEFORE:
            continue  # "refund processing time": a noun's modifier, no order's status
        if asks and _asked(text, start):
            continue  # "Do you want O2 cancelled too?": a question states no status
        if arranged and _ARRANGED.search(
            _SENTENCE_END.split(text[max(0, start - 300) : start])[-1]
        ):
            continue  # "an exchange in which the new one is sent to you": its terms
        if status == "delivered" and before.endswith("being "):
            continue  # "is being delivered": on the way (an event, above), not there yet
        if status == "pending" and not _MODAL_BEFORE.isdisjoint(before.split()[-4:]):
            continue  # "can be cancelled while they are pending": a rule, not a status
        out.append((start, status))
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
# not in "2026-06-16", nor an id's digits ("order n0001"; a mask "xxxx1234" still reads)
_LAST4 = re.compile(r"(?<![a-wyz\d.,$/])\d{4}(?![\d.,]\d|\d|-\d)")
_BRAND = re.compile(r"\b(" + "|".join(_BRANDS) + r")\b")
_CARD_CUE = re.compile(r"\bending|\bends\b|last (?:4|four)|\*|-\s*$|x{2,}|card|account|#")
# the digits left unmasked after a mask of any kind: "...6118", "•••• 6118", "**** 6118"
# (a lone middle dot "·" joins phrases: a mask has two or more)
_MASKED_LAST4 = re.compile(r"(?:\.{2,}|[•●∙*]+|·{2,}|x{2,})\s?(\d{4})(?![\d.,]\d|\d|-\d)")
# a year beside its month or day ("november 11, 2026", "7-jun-2026", "2026-06-07") is a date's
_DATE_BEFORE_YEAR = re.compile(
    rf"(?:{_MONTH}[\s,.\-/]*(?:\d{{1,2}}{_ORD}\b[\s,.\-/]*)?"
    rf"|\b\d{{1,2}}{_ORD}[\s,.\-/]+(?:of\s+)?{_MONTH}[\s,.\-/]*"
    r"|\b\d{1,2}[-/.]\d{1,2}[-/.])$"
)
_DATE_AFTER_YEAR = re.compile(r"[-/.]\d{1,2}[-/.]\d{1,2}\b")


def _a_year(text: str, start: int, end: int) -> bool:
    """Whether the four digits at `start` are a date's year ("June 7, 2026", "2026-06-07")."""
    if not 1900 <= int(text[start:end]) <= 2100:
        return False
    return bool(
        _DATE_BEFORE_YEAR.search(text[max(0, start - 30) : start])
        or _DATE_AFTER_YEAR.match(text, end)
    )


def extract_payments(text: str) -> list[tuple[int, tuple[str | None, str]]]:
    """(brand or None, last four digits) for each payment mention: four digits with a brand
    ("paypal-6458", "Visa ending in 1234") or a card cue ("ending in 1234") just before."""
    out = []
    # (a mask right before the digits is their cue: a bullet "•" further back is none)
    masked = {m.start(1) for m in _MASKED_LAST4.finditer(text)} if _has(text, _MASKS) else set()
    starts = set(masked)
    for m in _LAST4.finditer(text):
        starts.discard(m.start())
        out.append(m)
    out += [_DIGITS.match(text, start) for start in starts]
    found = []
    for m in sorted(out, key=lambda m: m.start()):
        if _a_year(text, m.start(), m.end()):
            continue
        before = text[max(0, m.start() - 40) : m.start()]
        brands = _BRAND.findall(before)
        brand = _BRANDS[brands[-1]] if brands else None
        if brand is None and m.start() not in masked and not _CARD_CUE.search(before[-25:] or " "):
            continue
        found.append((m.start(), (brand, m[0][:4])))
    return found


_MASKS = ("..", "•", "●", "··", "∙", "*", "xx")


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


# common street suffixes, abbreviated as `_address_words` folds them: a house number, one or two
# name words and one of these (or its long form) is read as a street line, e.g. an address an
# answer invents. The normalised text is scanned as is and only a match is folded.
_SUFFIXES = frozenset({
    "st", "ave", "rd", "dr", "blvd", "ln", "ct", "pl", "sq", "ter", "pkwy", "hwy", "way",
    "trail", "loop", "alley", "circle", "crescent", "crossing", "grove", "heights", "hill",
    "hills", "landing", "park", "path", "pike", "plaza", "point", "ridge", "route", "row",
    "run", "summit", "valley", "view", "village", "vista", "walk", "gardens", "meadow",
    "meadows", "springs"
})  # fmt: skip
_STREET = re.compile(
    r"(?<![\w.,$/-])\d{1,5}(?: [a-z]+){1,2} (?:"
    + "|".join(sorted({*_SUFFIXES, *_STREET_ABBR} - {"apartment", "suite"}, key=len, reverse=True))
    + r")\b\.?"
)


# a digit that is not inside a word (an id such as "O1234567"): dates, durations, payment
# methods and street lines all need one
FREE_DIGIT = re.compile(r"(?<![a-z0-9])\d")


def extract_streets(text: str) -> list[tuple[int, str]]:
    """Street lines ("4120 oak st") of the addresses a text states."""
    return [(m.start(), _address_words(m[0]).strip()) for m in _STREET.finditer(text)]


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
        "final-sale",
        "impossible",
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


_VERDICT_HINT = re.compile(
    r"return|exchang|swap|cancel|send|call|yes|\bno\b|nope|final.sale|unfortunately|sadly|afraid"
    r"|sure|certainly|absolutely|yep|yeah"
)
# a clause that opens like a bare "No"/"Yes" ("Unfortunately not", "I'm afraid not", "Sure")
_BARE_NO = frozenset(
    {
        ("unfortunately", "not"),
        ("unfortunately", "no"),
        ("sadly", "not"),
        ("sadly", "no"),
        ("afraid", "not"),
    }
)
_BARE_YES = frozenset({"sure", "certainly", "absolutely", "yep", "yeah"})
# a positive clause with one of these states a rule ("exchanges are only possible within the
# window"), not a verdict about this item
_RULE_WORDS = frozenset({"only", "provided", "whenever"})
# ... and so does one that states the shop's window for things in general ("returns are
# accepted within 21 days", "you can return items within 30 days of delivery"): a general
# subject, a window condition, and no word about the customer's own item ("it", "yours") or
# its time left ("still", "5 more days")
_GENERAL_WORDS = frozenset({"returns", "exchanges", "items", "products", "purchases", "orders"})
_CONDITION_WORDS = frozenset({"within", "window", "period", "day", "days"})
_OWN_ITEM_WORDS = frozenset({"it", "its", "yours", "your", "them", "this", "still", "left",
                             "remaining", "more"})  # fmt: skip


def _states_rule(words: list[str]) -> bool:
    """Does a positive clause about a topic state a rule rather than a verdict on this item?"""
    said = set(words)
    if not _RULE_WORDS.isdisjoint(said):
        return True  # "only possible while the window is open"
    return (
        not _GENERAL_WORDS.isdisjoint(said)
        and not _CONDITION_WORDS.isdisjoint(said)
        and _OWN_ITEM_WORDS.isdisjoint(said)
    )


def is_greeting(clause: str) -> bool:
    """A clause that is only "Sure" / "Certainly" / "Absolutely" (not "yes"): an opener."""
    words = _TOKEN.findall(clause)
    return bool(words) and words[0] in _BARE_YES and len(words) <= 2


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


_AGENT = frozenset({"i", "we", "i've", "we've"})
_DID_NOT = frozenset({("didn't",), ("haven't",), ("hadn't",), ("never",), ("did", "not"),
                      ("have", "not"), ("had", "not")})  # fmt: skip
_ABILITY = frozenset({"can", "can't", "cannot", "could", "couldn't", "unable", "able", "possible",
                      "impossible", "eligible", "allowed", "may", "too", "longer"})  # fmt: skip
_EVENT_AUX = frozenset({"was", "were", "has", "have", "had", "got"})
_NOT_A_NOUN = frozenset({"it", "that", "this", "they", "you", "i", "we", "there", "sorry",
                         "unfortunately", "sadly", "not", "but", "the", "your"})  # fmt: skip


_EVENT_HEADS = _AGENT | {"no", "not", "none", "zero", "neither"}


def _event_said(words: list[str]) -> bool:
    """A clause that says what was or was not done, not what can be: the agent's "I didn't
    cancel a single order", or "no" as a noun's determiner before a done form ("No return was
    requested", "no order has been placed today"). A verdict says what can be done ("it can't
    be cancelled", "I couldn't cancel it", "No, it was too late"): never one of these."""
    if not _ABILITY.isdisjoint(words):
        return False
    if words[0] in _AGENT and (tuple(words[1:2]) in _DID_NOT or tuple(words[1:3]) in _DID_NOT):
        return True
    # the subject no order: "no <noun>", "not one / a single <noun>", "none of …"
    if words[0] in ("none", "zero", "neither"):
        start = 1
    elif words[0] == "not" and words[1:2] and words[1] in ("one", "a", "any", "single"):
        start = 2
    elif words[0] == "no" and words[1:2] and words[1] not in _NOT_A_NOUN:
        start = 1
    else:
        return False
    for j in range(start + 1, min(len(words) - 1, start + 5)):  # "no return was", "none of …has"
        if j + 1 < len(words) and words[j] in _EVENT_AUX:
            verb = words[j + 2] if words[j + 1] == "been" and j + 2 < len(words) else words[j + 1]
            return _past_participle(verb)
    return False


@functools.lru_cache(maxsize=512)
def _past_participle(word: str) -> bool:
    forms = (
        getAllInflections(lemma, upos="VERB")
        for lemma in getAllLemmas(word, upos="VERB").get("VERB", ())
    )
    # (lemminflect lists a participle that is the past tense under VBD only: "placed")
    return any(word in f.get("VBN", ()) or word in f.get("VBD", ()) for f in forms)


# "no worries", "no problem at all", "no trouble": a courtesy, never a "No" to the question
_COURTESIES = frozenset({"worries", "worry", "problem", "problems", "trouble", "bother", "rush",
                         "stress", "hassle", "need", "pressure", "prob", "probs"})  # fmt: skip


def _no_trouble(words: list[str]) -> bool:
    return len(words) > 1 and words[1] in _COURTESIES


def extract_verdicts(clause: str) -> list[tuple[str, bool]]:
    """(topic, polarity) asserted by one clause; [("", p)] for a bare "Yes"/"No"."""
    words = _TOKEN.findall(clause)
    if not words:
        return []
    pairs = set(itertools.pairwise(words))
    out = []
    final_sale = ("final", "sale") in pairs or "non-returnable" in words or "final-sale" in words
    if final_sale:
        out.append(("return", False))
    topics = _topics(clause, words, pairs)
    if (topics or words[0] == "no") and words[0] in _EVENT_HEADS and _event_said(words):
        return out  # what happened ("No return was requested"), not what can be done
    opening = tuple(words[:3])
    bare_no = (words[0] in ("no", "nope") and not _no_trouble(words)) or not _BARE_NO.isdisjoint(
        itertools.pairwise(opening)
    )
    bare = bare_no or words[0] == "yes" or (words[0] in _BARE_YES and len(words) <= 2)
    if not topics and not bare:
        return out
    negative = (
        bare_no
        or not _NEGATIVE_WORDS.isdisjoint(words)
        or ("n't" in clause and any(w.endswith("n't") for w in words))
        or not _NEGATIVE_PAIRS.isdisjoint(pairs)
        or (not _BEYOND.isdisjoint(words) and any(a in _BEYOND and b in _OWNERS for a, b in pairs))
    )
    positive = not negative and (
        words[0] in ("yes", *_BARE_YES)
        or not _POSITIVE_WORDS.isdisjoint(words)
        or not _POSITIVE_PAIRS.isdisjoint(pairs)
    )
    if positive and topics and _states_rule(words):
        # a rule, not a verdict; a bare "Yes" opening it still answers the question
        return out + ([("", True)] if bare and not bare_no else [])
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
        r"\bfinal[- ]sale\b|\bnon-?returnable\b|\bnot returnable\b|\b(?:cannot|can't|can not) be "
        r"returned\b|\bno returns\b"
    ),
    "return_instead": re.compile(r"\breturn\w*|\bsend (?:it|them) back\b|\bsent back\b"),
    "last_day": re.compile(r"\blast day\b|\btoday is the (?:final|last)\b|\b0 days\b"),
}
