"""Fact kinds: one class per kind, registered in `KINDS` (`register` raises on a duplicate).

A kind says how to read its values from an answer (`extract`), how to parse a fact's canonical
value (`target`), when a stated value states a target (`matches`), how to show a value in a
violation (`show`), and which values of it the episode showed the agent (`shown`). Kinds with
`valued` set are compared by value: a stated value that is no target conflicts (kinds the goal
checks) or must be grounded (`grounded` kinds the goal does not check). `states` and
`conflicts` have generic versions driven by these; a kind overrides them only where its rule
differs (verdicts conflict by polarity, addresses by street line, terms and text never).

Roles: a kind may read each stated value with the role its sentence gives it (`role`: a
duration said as the window, as days left or as elapsed time; an amount as the shipping cost,
the order value or the threshold; a date as placed or arrival). A stated value states a fact,
or is allowed as that fact's target, only when its role `fits` the fact's `role` (a fact
without one takes any role, as rows written before roles do). It is allowed as a context value
when it fits that value's role (`AnswerFact.allowed_roles`), or for a context value without
one, when it is in none of the roles a target of its kind has (`may_be_context`: the kind's
`target_roles`, and the roles the task's facts give): a duration stated as the return window
must be a window target.

Adding a kind is one class decorated with `@register` (here or in a module of its own that
`ecomrlve.env.judge.facts` imports); a checker of claims about the episode (`audit`: extra
violations for every answer, given what the episode showed) is one more entry. The kinds know
the check only by the protocols below (`PlanView`, `ReadingView`, `ShownView`): `check` imports
this module, never the reverse.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from ecomrlve.env.judge.claims import check_claims, customer_language
from ecomrlve.env.judge.facts import values as v
from ecomrlve.env.judge.facts.text import _CLAUSE, normalise, sentence_spans

if TYPE_CHECKING:
    from ecomrlve.tasks import AnswerFact


# ---- what a kind sees of the check (`check.AnswerPlan`, `check.Reading`, `check.Shown`): the
# check drives the kinds, so the kinds know it only by these protocols (no import back) -------
class SegmentView(Protocol):
    text: str
    subjects: frozenset[str]


class PlanView(Protocol):
    """The facts asked (`check.AnswerPlan`): each fact, its parsed target, its allowed values."""

    facts: Sequence[AnswerFact]
    targets: list[Any]
    by_kind: dict[str, list[int]]
    permitted: list[list[tuple[Any, str]]]
    bound_roles: dict[str, frozenset[str]]
    only_topic: str | None

    def about(
        self, kind: str, reading: ReadingView, k: int, fallback: bool = True
    ) -> list[int]: ...
    def targets_in(self, kind: str, reading: ReadingView, k: int) -> list[tuple[Any, str]]: ...
    def context_in(self, kind: str, reading: ReadingView, k: int) -> list[tuple[Any, str]]: ...


class ReadingView(Protocol):
    """The answer as read (`check.Reading`): its text, segments and values by kind."""

    answer: str
    text: str
    prompt: str
    plan: PlanView
    today: Any
    known_addresses: list[str]
    segments: list[SegmentView]
    one: bool

    def spans(self) -> list[tuple[int, int]]: ...
    def values(self, kind: str) -> list[list[Any]]: ...
    def committed(self, kind: str) -> list[list[Any]]: ...
    def address_words(self, k: int | None) -> str: ...
    def lowered(self) -> str: ...
    def in_prompt(self, kind: Kind, value: Any) -> bool: ...


class ShownView(Protocol):
    """What the episode showed the agent (`check.Shown`)."""

    today: dt.date | None
    policies: tuple[str, ...]
    record: Any
    catalog: Any

    def strings(self) -> list[str]: ...
    def string_set(self) -> frozenset[str]: ...
    def numbers(self, keys: tuple[str, ...]) -> list[float]: ...
    def text(self, hints: tuple[str, ...] = ()) -> str: ...
    def values(self, kind: Kind) -> list[Any]: ...
    def shows(self, kind: Kind, want: Any) -> bool: ...
    def about(self, order_id: str) -> ShownView: ...
    def read_policy(self) -> bool: ...


class Kind:
    """The generic kind: values extracted by `extract`, equal when `matches`."""

    name: ClassVar[str] = ""
    valued: ClassVar[bool] = True  # values are read from answers and compared by value
    grounded: ClassVar[bool] = True  # stated values must be grounded when the goal has none
    sentences: ClassVar[bool] = False  # reading needs the answer's sentence spans
    digits: ClassVar[bool] = False  # every value holds a digit outside a word (`FREE_DIGIT`)
    # the `AnswerCheck` list that `audit`'s violations go to ("claims": reported as they are)
    audits_into: ClassVar[str] = "conflicts"
    # roles in which a stated value must be a target, never a context value
    target_roles: ClassVar[frozenset[str]] = frozenset()
    # roles of quantities only a fact without a role is about (the others conflict with none)
    apart: ClassVar[frozenset[str]] = frozenset()
    # substrings one of which every shown text stating a value holds (): read only those
    hints: ClassVar[tuple[str, ...]] = ()
    # roles of values that are read, never worked out from others (`check.Shown.derives`)
    read_only: ClassVar[frozenset[str]] = frozenset()

    def extract(self, text: str, reading: ReadingView | None) -> list[tuple[int, Any]]:
        return []

    def target(self, value: str) -> Any:
        return value

    def matches(self, value: Any, want: Any) -> bool:
        return value == want

    def same(self, a: Any, b: Any) -> bool:
        """Do two values read from texts say the same thing (grounding by the prompt)?"""
        return a == b

    def same_as_said(self, value: Any, said: Any, today: Any) -> bool:
        """Does `value` say what the prompt `said` (on `today`, a parsed date or None)?"""
        return self.same(value, said)

    def show(self, value: Any) -> str:
        return str(value)

    def role(self, value: Any) -> str:
        """The role the answer's words give a stated value (`values.UNKNOWN`: none read)."""
        return getattr(value, "role", v.UNKNOWN)

    def fits(self, value: Any, role: str) -> bool:
        """May this stated value, in the role its sentence gives it, be a target in `role`
        (a fact's `role`; '' takes any)? A value read in no role fits every fact."""
        said = self.role(value)
        return not role or said == v.UNKNOWN or said == role

    def may_be_context(self, value: Any, plan: PlanView | None = None) -> bool:
        """May this stated value be one of the facts' `allowed` context values, or does its
        sentence state it as a target itself (then only a target will do)? A target's role is
        one of `target_roles`, or a role a fact of `plan` gives its target ("shipping": an
        amount stated as the shipping cost must be the shipping cost)."""
        bound = plan.bound_roles.get(self.name, self.target_roles) if plan else self.target_roles
        return self.role(value) not in bound

    def fits_context(self, value: Any, role: str, plan: PlanView) -> bool:
        """May this stated value be an allowed context value in `role` ('' = any role that
        `may_be_context`)? "$50 order" may not be the $50 threshold."""
        return self.fits(value, role) if role else self.may_be_context(value, plan)

    def spellings(self, fact: AnswerFact) -> list[str]:
        return [fact.value]

    def shown(self, seen: ShownView) -> list[Any]:
        """Values of this kind the episode showed (tool results, the customer's details)."""
        return [value for _, value in self.extract(seen.text(self.hints), None)]

    def states(self, plan: PlanView, i: int, reading: ReadingView) -> bool:
        """Does the answer state fact `i` (in a sentence about its subject)?"""
        want = plan.targets[i]
        if want is None:
            return False
        subject, role = plan.facts[i].subject, plan.facts[i].role
        segments = reading.segments
        return any(
            self.matches(value, want) and self.fits(value, role)
            for k, found in enumerate(reading.committed(self.name))
            if reading.one or not subject or subject in segments[k].subjects
            for value in found
        )

    def quick(self, value: Any, seen: ShownView) -> bool:
        """Is `value` (stated, or a parsed target) among the data a tool result showed, found
        without reading texts? False: not found so (the texts may still show it)."""
        return False

    def number(self, value: Any) -> float | None:
        """The value as one number, for values worked out as a difference (None: never)."""
        return None

    def evident(self, plan: PlanView, i: int, reading: ReadingView, seen: ShownView) -> bool:
        """Did the episode make fact `i`, which the answer states, known? A fact about an
        order: its value was shown of that order (or the customer said it); other facts: each
        stated value is grounded (`check._ungrounded`)."""
        subject = plan.facts[i].subject
        if not subject or not (self.valued and self.grounded):
            return True
        want = plan.targets[i]
        if any(self.matches(said, want) for said in prompt_values(reading.prompt, self.name)):
            return True
        records = seen.about(subject)
        if not subject.startswith("O"):  # an item: seen, and its value shown (a fee: read)
            return bool(records.items) and seen.shows(self, want)
        return records.shows(self, want)

    def conflicts(self, plan: PlanView, reading: ReadingView) -> list[str]:
        """Stated values that are none of the targets (in a role they fit) or allowed values
        of the subjects their sentence is about, today's date or a value of the prompt."""
        out = []
        match = self.matches
        # ((target, role) pairs, (context value, role) pairs) per set of subjects a segment is about
        pools: dict[frozenset[str], tuple[list, list]] = {}
        for k, found in enumerate(reading.values(self.name)):
            subjects = reading.segments[k].subjects
            if not found or subjects == OTHER:  # an order no fact is about: evidence only
                continue
            if subjects not in pools:
                pools[subjects] = (
                    plan.targets_in(self.name, reading, k),
                    plan.context_in(self.name, reading, k),
                )
            targets, context = pools[subjects]
            for value in found:
                if self.role(value) in self.apart and all(role for _, role in targets):
                    continue  # a quantity no fact here is about (a refund's days): evidence only
                if any(match(value, w) and self.fits(value, role) for w, role in targets):
                    continue
                if any(match(value, w) and self.fits_context(value, r, plan) for w, r in context):
                    continue
                if reading.in_prompt(self, value):
                    continue
                out.append(f"{self.name} {self.show(value)}")
        return out

    def audit(self, plan: PlanView, reading: ReadingView, seen: ShownView | None) -> list[str]:
        """Violations of this kind in any answer, checked or not (none by default)."""
        return []


KINDS: dict[str, Kind] = {}


_K = TypeVar("_K", bound="Kind | type[Kind]")


def register(kind: _K) -> _K:
    """Add a kind to the registry (its `name` must be new): an instance, or a `Kind` class as
    its decorator (`@register` above `class DateKind(Kind)`: one instance of it), so a kind is
    one entry. Kinds are checked in the order they are registered."""
    instance = kind() if isinstance(kind, type) else kind
    if not instance.name or instance.name in KINDS:
        raise ValueError(f"fact kind {instance.name!r} is empty or registered twice")
    KINDS[instance.name] = instance
    return kind


@functools.lru_cache(maxsize=65536)
def parse(kind: str, value: str) -> Any:
    """A canonical value parsed once (targets recur across the episodes of a task); None when
    unreadable (it then matches nothing)."""
    try:
        return KINDS[kind].target(value)
    except (ValueError, KeyError):
        return None


OTHER = frozenset({"?"})  # a segment about an order no fact is about (`check.Reading`)


@functools.lru_cache(maxsize=8192)
def prompt_values(prompt: str, kind: str) -> tuple:
    """The values of `kind` the customer's request states (cached per prompt)."""
    return tuple(value for _, value in KINDS[kind].extract(normalise(prompt), None))


# the keys of tool results whose numbers are amounts, rates and days
MONEY_KEYS = ("price", "total", "refund", "shipping", "fee", "cost", "amount", "credit")
PERCENT_KEYS = ("pct", "percent", "rate", "fee", "discount")
DAY_KEYS = ("day", "window")


def _numbers(seen: ShownView, keys: tuple[str, ...], scale: float = 1.0) -> list[float]:
    return [round(x * scale, 2) for x in seen.numbers(keys)]


@register
class DateKind(Kind):
    # no `digits`: "tomorrow", "last Tuesday" are dates too
    name = "date"

    def extract(self, text, reading):
        # an answer's dates said relative to today are read against it; a tool result's or
        # a prompt's (no `reading`) are not
        return v.extract_dates(text, reading.today if reading is not None else None)

    def target(self, value):
        day = dt.date.fromisoformat(value)
        return (day.year, day.month, day.day)

    def matches(self, value, want):
        year, month, day = want
        return any(m == month and d == day and y in (None, year) for y, m, d in value)

    def same(self, a, b):
        return any(
            m1 == m2 and d1 == d2 and (y1 is None or y2 is None or y1 == y2)
            for y1, m1, d1 in a
            for y2, m2, d2 in b
        )

    def quick(self, value, seen):
        readings = (value,) if isinstance(value, tuple) else value  # a target, or readings
        shown = seen.string_set()  # tool results state days as ISO strings
        years = (seen.today.year - 1, seen.today.year, seen.today.year + 1) if seen.today else ()
        return any(
            f"{y:04d}-{m:02d}-{d:02d}" in shown
            for y0, m, d in readings
            for y in ((y0,) if y0 else years)
        )

    def same_as_said(self, value, said, today):
        # "December 30" in a request means one of the nearest December 30ths, not any year's
        if today is not None:
            years = (today[0] - 1, today[0], today[0] + 1)
            said = frozenset((y, m, d) for y0, m, d in said for y in ((y0,) if y0 else years))
        return self.same(value, said)

    def show(self, value):
        return "/".join(sorted(f"{m:02d}-{d:02d}" for _, m, d in value))

    def spellings(self, fact):
        day = dt.date.fromisoformat(fact.value)
        month, abbr = day.strftime("%B"), day.strftime("%b")
        return [fact.value, f"{month} {day.day}", f"{day.day} {month}", f"{abbr} {day.day}",
                f"{day.month}/{day.day}"]  # fmt: skip


@register
class MoneyKind(Kind):
    name = "money"
    hints = ("$", "ree", "REE", "ollar", "USD", "usd", "harge", "ost", "othing", "uck")

    def extract(self, text, reading):
        return v.extract_money(text)

    def target(self, value):
        return float(value)

    def matches(self, value, want):
        return abs(value - want) < 0.005

    def same(self, a, b):
        return self.matches(a, b)

    def shown(self, seen):
        return super().shown(seen) + _numbers(seen, MONEY_KEYS)

    def number(self, value):
        return float(value)

    def quick(self, value, seen):
        return any(abs(value - x) < 0.005 for x in seen.numbers(MONEY_KEYS))

    def fits(self, value, role):
        if role == v.GAP:  # worked out, never a bare amount: only when said as what is lacking
            return self.role(value) == v.GAP
        # the fee of the shop's rule ("orders under $50 pay $4.99") states an order's fee too
        return super().fits(value, role) or (role == v.SHIPPING and self.role(value) == v.BASE)

    def spellings(self, fact):
        amount = float(fact.value)
        return [f"${amount:.0f}" if amount == round(amount) else f"${amount:.2f}"]


@register
class PercentKind(MoneyKind):
    name = "percent"
    hints = ("%", "percent", "ercent", "fee", "Fee")

    def extract(self, text, reading):
        return v.extract_percents(text)

    def quick(self, value, seen):
        return False

    def shown(self, seen):
        # a rate may be stored as a fraction (0.1) or a percent (10)
        numbers = _numbers(seen, PERCENT_KEYS) + _numbers(seen, PERCENT_KEYS, 100.0)
        # the policy the request needs, read, says what fee there is: none where it names none
        none = [0.0] if seen.policies and seen.read_policy() else []
        return Kind.shown(self, seen) + numbers + none

    def spellings(self, fact):
        return [f"{fact.value}%", f"{fact.value} percent"]


_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
ROLE_WORDS = {v.WINDOW: "the window", v.LEFT: "days left", v.ELAPSED: "elapsed time",
              v.REFUND: "a refund's time"}  # fmt: skip


@register
class DurationKind(Kind):
    """Durations in days, each read with the role its sentence gives it (`values.Duration`):
    one stated as the window ("the 14-day window", "a window of 14 days", "14 days to return
    it") or as time left ("7 more days", "7 days left") must be a target, never a context
    value (context durations are elapsed time: days since delivery, since the window closed),
    so "the 14-day window closed 21 days ago" fails for a 21-day window closed 14 days ago.
    With the facts' roles (`AnswerFact.role`: "window", "left") it must be the target *in that
    role*: "the window is 9 days, so you have 30 more days" fails for a 30-day window with 9
    days left; elapsed time ("21 days ago") is context, or a target of a fact without a role
    ("the 21-day window closed 21 days ago" fails when the window fact has its role). Unknown
    roles ("that's 21 days") may be any target or context value."""

    digits = True
    name = "duration"
    hints = ("day", "week", "Day", "Week")
    target_roles = frozenset({v.WINDOW, v.LEFT})
    apart = frozenset({v.REFUND})
    read_only = frozenset({v.WINDOW})  # a window is the policy's, no difference of two days

    def extract(self, text, reading):
        return v.extract_durations(text)

    def target(self, value):
        low, _, high = value.partition("-")
        return int(low), int(high or low)

    def matches(self, value, want):
        return value[:2] == want[:2]  # (low, high): the role is how it was said, not its value

    def same(self, a, b):
        # elapsed time states no window and no days left: the days since a date shown are no
        # evidence of a return window ("135 days to return t-shirts" needs the policy read)
        roles = {self.role(a), self.role(b)}
        return self.matches(a, b) and not (v.ELAPSED in roles and roles & self.target_roles)

    def number(self, value):
        return float(value[0]) if value[0] == value[1] else None

    def quick(self, value, seen):
        return value[0] == value[1] and value[0] in seen.numbers(DAY_KEYS)

    def show(self, value):
        low, high = value[:2]
        days = f"{low} days" if low == high else f"{low}-{high} days"
        role = ROLE_WORDS.get(value.role)
        return f"{days} as {role}" if role else days

    def shown(self, seen):
        # whole numbers shown (a window in days), and days between today and a date shown
        out = super().shown(seen)
        out += [(int(x), int(x)) for x in seen.numbers(DAY_KEYS) if x == int(x) and 0 <= x < 1000]
        if seen.today is not None:  # tool results state dates as ISO days
            for found in _ISO_DAY.findall(seen.text()):
                year, month, day = map(int, found)
                with contextlib.suppress(ValueError):
                    days = abs((seen.today - dt.date(year, month, day)).days)
                    out.append(v.Duration(days, days, v.ELAPSED))
        return out

    def evident(self, plan, i, reading, seen):
        # a window fact is the policy's, however the answer words it ("accepted for 75 days
        # after delivery"): shown as a window or the customer's, never days since a date shown
        if plan.facts[i].role not in self.read_only:
            return super().evident(plan, i, reading, seen)
        want, prompt = plan.targets[i], prompt_values(reading.prompt, self.name)
        return any(
            self.matches(said, want) and self.role(said) != v.ELAPSED
            for said in (*prompt, *seen.values(self))
        )

    def spellings(self, fact):
        return [f"{fact.value} days", f"{fact.value}-day"]


@register
class StatusKind(Kind):
    name = "status"

    def extract(self, text, reading):
        return v.extract_statuses(text)

    def quick(self, value, seen):
        return value in seen.string_set()

    def shown(self, seen):
        statuses = set(v._STATUS_OF.values())
        return super().shown(seen) + [s for s in seen.strings() if s in statuses]

    def spellings(self, fact):
        return []


@register
class PaymentKind(Kind):
    digits = True
    name = "payment"

    def extract(self, text, reading):
        return v.extract_payments(text)

    def target(self, value):
        return v._payment_value(value)

    def matches(self, value, want):
        return value[1] == want[1] and value[0] in (None, want[0])

    def same(self, a, b):
        return a[1] == b[1] and (a[0] is None or b[0] is None or a[0] == b[0])

    def show(self, value):
        return f"{value[0] or 'card'} ending {value[1]}"

    def quick(self, value, seen):
        brand, last4 = value
        strings = seen.string_set()
        if brand is not None:
            return f"{brand}-{last4}" in strings
        return any(s.endswith(f"-{last4}") for s in strings)


@register
class AddressKind(Kind):
    """Stated when the fact's street line is in a sentence about its subject; conflicts when
    another address the customer has appears, or a street line that is no target."""

    name = "address"
    digits = True

    def extract(self, text, reading):
        return v.extract_streets(text)

    def target(self, value):
        return v._street_line(value)

    def shown(self, seen):
        # a street line in a text, and the first line of every address shown whole
        lines = [line for s in seen.strings() for _, line in v.extract_streets(s.lower())]
        return lines + [v._street_line(s) for s in seen.strings() if s[:1].isdigit() and "," in s]

    def states(self, plan, i, reading):
        line = f" {plan.targets[i]} "
        subject = plan.facts[i].subject
        return any(
            line in reading.address_words(k)
            for k, seg in enumerate(reading.segments)
            if reading.one or not subject or subject in seg.subjects
        )

    def conflicts(self, plan, reading):
        lines = {plan.targets[i] for i in plan.by_kind[self.name]}
        lines.update(p for i in plan.by_kind[self.name] for p, _ in plan.permitted[i])
        words = reading.address_words(None)
        out = [
            f"address {other!r}"
            for other in reading.known_addresses
            if (line := v._street_line(other)) not in lines and f" {line} " in words
        ]
        out += [
            f"address {line!r}"
            for _, line in self.extract(reading.text, reading)
            if line not in lines and not reading.in_prompt(self, line)
        ]
        return out


_FINAL_SALE = re.compile(r"\bfinal[- ]sale\b")  # the claim itself ("can't be returned" is not)


@register
class VerdictKind(Kind):
    """Per clause: (topic, yes/no); conflicts when the answer asserts the opposite polarity of
    a target on the same topic. Never grounded: a verdict is not a value a tool shows."""

    name = "verdict"
    grounded = False
    sentences = True

    def extract(self, text, reading):
        out = []
        only_topic = reading.plan.only_topic if reading is not None else None
        # "Sure!" / "Certainly!" opening an answer that then states its verdict on a topic is
        # a greeting, not a yes ("Sure! Unfortunately it can't be returned")
        greetings, topical = [], False
        for start, end in reading.spans() if reading is not None else sentence_spans(text):
            sentence = text[start:end]
            if not v._VERDICT_HINT.search(sentence):
                continue  # no topic, no yes/no, no final sale: nothing to read
            for clause in _CLAUSE.split(sentence):
                for topic, polarity in v.extract_verdicts(clause):
                    topical = topical or bool(topic)
                    if not topic and v.is_greeting(clause):
                        greetings.append(len(out))
                    out.append((start, (topic or only_topic or "", polarity)))
        if topical and greetings:
            out = [found for k, found in enumerate(out) if k not in greetings]
        return out

    def target(self, value):
        topic, _, polarity = value.partition(":")
        return (topic, polarity == "yes")

    def conflicts(self, plan, reading):
        out = []
        for k, found in enumerate(reading.values(self.name)):
            if reading.segments[k].subjects == OTHER:
                continue
            # a "yes" about an item no verdict is about ("yes, there's a 5% fee on the jeans")
            # is no verdict on another item of its order (the final-sale coffee)
            relevant = plan.about(self.name, reading, k, fallback=False)
            for topic, polarity in found:
                wanted = [plan.targets[i] for i in relevant if plan.targets[i][0] == topic]
                if wanted and (topic, polarity) not in wanted:
                    out.append(f"verdict {topic or '?'}:{'yes' if polarity else 'no'}")
            if self._false_final_sale(plan, reading, k, relevant):
                out.append("term final_sale")
        return out

    def evident(self, plan, i, reading, seen):
        return _decided(plan, i, seen)

    @staticmethod
    def _false_final_sale(
        plan: PlanView, reading: ReadingView, k: int, relevant: list[int]
    ) -> bool:
        """Calling an item final sale when the goal asks whether it can be returned or exchanged
        and has no final-sale fact about it: a reason read from another shop's policy book."""
        subjects = {
            plan.facts[i].subject
            for i in relevant
            if plan.targets[i] is not None and plan.targets[i][0] in ("return", "exchange")
        }
        if not subjects:
            return False
        final_sale = [
            i for i in plan.by_kind.get("term", ()) if plan.facts[i].value == "final_sale"
        ]
        if any(not plan.facts[i].subject or plan.facts[i].subject in subjects for i in final_sale):
            return False
        return _FINAL_SALE.search(reading.segments[k].text) is not None

    def spellings(self, fact):
        return []


def _decided(plan: PlanView, i: int, seen: ShownView) -> bool:
    """A verdict or policy term counts once what decides it was read: the policy the request
    needs and, for one about an order, that order."""
    subject = plan.facts[i].subject
    return seen.read_policy() and (not subject or bool(seen.about(subject).items))


@register
class TermKind(Kind):
    """A policy term (`values.TERMS`) stated in a sentence about the fact's subject."""

    name = "term"
    valued = False

    def evident(self, plan, i, reading, seen):
        return _decided(plan, i, seen)

    def states(self, plan, i, reading):
        pattern = v.TERMS.get(plan.facts[i].value)
        subject = plan.facts[i].subject
        return pattern is not None and any(
            pattern.search(seg.text)
            for seg in reading.segments
            if reading.one or not subject or subject in seg.subjects
        )

    def spellings(self, fact):
        return []


@register
class TextKind(Kind):
    """Legacy substring keys: any of the alternatives, case-insensitive, anywhere."""

    name = "text"
    valued = False

    def states(self, plan, i, reading):
        fact = plan.facts[i]
        return any(a.lower() in reading.lowered() for a in fact.alternatives or [fact.value])

    def spellings(self, fact):
        return list(fact.alternatives or [fact.value])


@register
class ClaimsKind(Kind):
    """The final message's reports and denials of actions, against the writes the episode
    made (`ecomrlve.env.judge.claims`): no value to state, an audit of every answer the verifier
    checks (it needs the episode's record, and the catalog for product names)."""

    name = "claims"
    valued = False
    grounded = False
    audits_into = "claims"

    def audit(self, plan, reading, seen):
        if seen is None or seen.record is None:
            return []
        # the customer's language is the one their request is written in
        language = customer_language(reading.prompt)
        return check_claims(reading.answer, seen.record, seen.catalog, language)
