"""The answer check, driven by the kind registry (`kinds.KINDS`): see the package docstring."""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecomrlve.env.judge.facts import values as v
from ecomrlve.env.judge.facts.alternatives import alternative_dates
from ecomrlve.env.judge.facts.kinds import KINDS, OTHER, Kind, parse
from ecomrlve.env.judge.facts.kinds import prompt_values as _prompt_values
from ecomrlve.env.judge.facts.text import SUBJECT_BREAK, _words, fold, normalise, sentence_spans
from ecomrlve.tasks import AnswerFact


@dataclass
class AnswerCheck:
    """Which facts the answer states, which it misses, which values conflict with the facts and
    which stated values nothing grounds. `unstated`: context facts (`required=False`) the answer
    leaves out, which is fine."""

    found: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    ungrounded: list[str] = field(default_factory=list)
    unstated: list[str] = field(default_factory=list)
    # untrue reports or denials of actions (`kinds.ClaimsKind`), each a "claims: …" violation
    claims: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.conflicts or self.ungrounded or self.claims)


def describe(fact: AnswerFact) -> str:
    about = f" ({fact.subject})" if fact.subject else ""
    return f"{fact.kind} {fact.value!r}{about}"


def spellings(fact: AnswerFact) -> list[str]:
    """Common literal spellings of a fact's value ("June 16", "$4.99", "30 days"…), for
    scanning texts that must not give the answer away; [] for statuses, verdicts and terms."""
    return KINDS[fact.kind].spellings(fact)


_SHOWN_ID = re.compile(r"\b(?:O\d{7}|N\d{4}|I\d{7})\b")


class Shown:
    """What the episode showed the agent besides the prompt: the customer's details of the
    system prompt and every successful tool result (kept by reference). Read lazily, once per
    kind, and only when an answer states a value nothing else grounds."""

    def __init__(
        self,
        items: Sequence[Any],
        today: str | None = None,
        record: Any = None,
        catalog: Any = None,
        policies: Iterable[str] = (),
    ):
        self.items = items
        self.record = record  # the EpisodeRecord, for kinds that audit the episode's actions
        self.catalog = catalog  # the product names those kinds read (None: ids only)
        self.today = dt.date.fromisoformat(today) if today else None
        # the policy rows the request needs: a verdict counts once one of them was shown
        self.policies = tuple(policies)
        self._strings: list[str] | None = None
        self._numbers: list[tuple[str, float]] = []  # (key, number)
        self._text: str | None = None
        self._values: dict[str, list[Any]] = {}
        self._orders: dict[str, list[dict[str, Any]]] | None = None
        self._about: dict[str, Shown] = {}
        self._differences: dict[str, set[float]] = {}
        self._summed: frozenset[int] | None = None
        self._string_set: frozenset[str] | None = None
        self._by_keys: dict[tuple[str, ...], list[float]] = {}
        self._hinted: dict[tuple[str, ...], str] = {}

    def strings(self) -> list[str]:
        """Every string shown (the walk keeps the numbers, by key, too)."""
        if self._strings is None:
            self._strings = []
            self._walk("", self.items)
        return self._strings

    def _walk(self, key: str, item: Any) -> None:
        # type() tests, not isinstance: this walks every tool result of the episode
        strings, numbers = self._strings, self._numbers
        pairs: Any = item.items() if type(item) is dict else ((key, x) for x in item)
        for k, x in pairs:
            kind = type(x)
            if kind is str:
                strings.append(x)
            elif kind is int or kind is float:
                numbers.append((k, float(x)))
            elif kind is dict or kind is list or kind is tuple:
                self._walk(k, x)

    def _index(self) -> dict[str, list[Any]]:
        """Each order's (item's, policy row's) records: the dicts with its id, in a result or
        in its lists, and the messages naming it ("order O1 is shipped; ...")."""
        if self._orders is None:
            self._orders = orders = {}
            stack = []
            for item in self.items:
                if type(item) is str:
                    for named in _SHOWN_ID.findall(item):
                        orders.setdefault(named, []).append(item)
                else:
                    stack.append(item)
            while stack:  # records sit in lists ("orders", "items", "results", "policies")
                item = stack.pop()
                if type(item) is dict:
                    named = item.get("order_id") or item.get("item_id") or item.get("policy_id")
                    if type(named) is str:
                        orders.setdefault(named, []).append(item)
                    stack.extend(x for x in item.values() if type(x) is list)
                else:
                    stack.extend(x for x in item if type(x) is dict)
        return self._orders

    def numbers(self, keys: tuple[str, ...]) -> list[float]:
        """Numbers shown under a key holding one of `keys` ("price" in "line_price"): a stock
        count or a rating is no price and no duration."""
        out = self._by_keys.get(keys)
        if out is None:
            self.strings()
            out = self._by_keys[keys] = [x for k, x in self._numbers if any(w in k for w in keys)]
        return out

    def text(self, hints: tuple[str, ...] = ()) -> str:
        """The strings shown, folded (with `hints`: only those holding one of them)."""
        if hints:
            text = self._hinted.get(hints)
            if text is None:
                holds = _any_of(hints).search
                said = [s for s in self.strings() if holds(s)]
                text = self._hinted[hints] = fold(" | ".join(said))
            return text
        if self._text is None:
            # tool results state numbers in digits: folding is enough (number words in a
            # product description would cost alpha2digit ~100 us per episode)
            self._text = fold(" | ".join(self.strings()))
        return self._text

    def values(self, kind: Kind) -> list[Any]:
        """The values of `kind` shown (read once per kind)."""
        values = self._values.get(kind.name)
        if values is None:
            values = self._values[kind.name] = kind.shown(self)
        return values

    def has(self, kind: Kind, value: Any) -> bool:
        # tool results state values as data ("2026-06-16", 4.99, "shipped"): looked up there
        # first, the texts are read (`Kind.shown`) only for a value not found so
        return kind.quick(value, self) or any(kind.same(value, w) for w in self.values(kind))

    def shows(self, kind: Kind, want: Any) -> bool:
        """Was a fact's parsed target shown?"""
        return kind.quick(want, self) or any(kind.matches(w, want) for w in self.values(kind))

    def string_set(self) -> frozenset[str]:
        if self._string_set is None:
            self._string_set = frozenset(self.strings())
        return self._string_set

    def about(self, order_id: str) -> Shown:
        """What was shown of one order (or item): the results (and parts of results) with its
        id, such as its entry in the order list, `get_order`, the cancel's or the checkout's
        result (an order line, a search hit)."""
        sub = self._about.get(order_id)
        if sub is None:
            sub = self._about[order_id] = Shown(self._index().get(order_id, []))
            sub.today = self.today
        return sub

    def derives(self, kind: Kind, value: Any, prompt: str) -> bool:
        """Is `value` the difference of two values of `kind` shown or in `prompt`, or an
        amount the sum of two or three totals shown (orders of a span added up)?"""
        number = kind.number(value)
        if number is None or kind.role(value) in kind.read_only:
            return False
        pool = self._differences.get(kind.name)
        if pool is None:
            said = [*self.values(kind), *_prompt_values(prompt, kind.name)]
            numbers = {x for x in map(kind.number, said) if x is not None}
            pool = self._differences[kind.name] = {
                round(a - b, 2) for a in numbers for b in numbers if a > b
            }
        if round(number, 2) in pool:
            return True
        # what two or three orders shown came to together
        return kind.name == "money" and _is_sum(number, self._totals())

    def _totals(self) -> frozenset[int]:
        """The distinct order totals shown, in cents (the `MAX_SUMMED` smallest)."""
        if self._summed is None:
            totals = sorted(set(self.numbers(("total",))))[:MAX_SUMMED]
            self._summed = frozenset(round(t * 100) for t in totals)
        return self._summed

    def read_policy(self) -> bool:
        """Was one of the policy rows the request needs shown (True when it needs none)?"""
        return not self.policies or any(p in self._index() for p in self.policies)


@functools.lru_cache(maxsize=256)
def _any_of(words: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern finding any of `words` (one scan of a string instead of one per word)."""
    return re.compile("|".join(map(re.escape, words)))


MAX_SUMMED = 40  # distinct totals a sum is drawn from


def _is_sum(amount: float, totals: frozenset[int]) -> bool:
    """Is `amount` the sum of two or three of `totals` (cents), a total taken more than once
    too (two orders of the same total)? Checked per amount, in cents: building every sum of
    40 totals (12,300) cost ~1 ms an episode that asked."""
    cents = round(amount * 100)
    return any(cents - a in totals for a in totals) or any(
        cents - a - b in totals for a in totals for b in totals
    )


class AnswerPlan:
    """What `check_answer` needs from a fact list that does not depend on the answer: kinds,
    subjects and their cues, parsed targets and allowed values, labels. Built once per list:
    the verifier keeps one per `Goal` (`Goal.derived`), shared by all episodes of a task."""

    __slots__ = ("bound_roles", "by_kind", "cue_pairs", "facts", "id_cues", "kinds", "labels",
                 "named", "only_topic", "permitted", "required", "roles", "sentences", "targets",
                 "valued", "word_pairs")  # fmt: skip

    def __init__(self, facts: Iterable[AnswerFact]):
        facts = list(facts)
        self.facts = facts
        self.kinds = frozenset(f.kind for f in facts)
        # the checked kinds compared by value, in registry order
        self.valued = [k for k in KINDS.values() if k.valued and k.name in self.kinds]
        self.named = frozenset(f.subject for f in facts if f.subject)
        # (cue words, subject) pairs, each once: to split answers about 2+ orders, or about
        # one and another no fact is about (the order just placed)
        self.cue_pairs = list(
            dict.fromkeys((_words(c), f.subject) for f in facts if f.subject for c in f.cues)
        )
        # the pairs of cues that are no order id (a product's words, an item id)
        self.word_pairs = [
            (cue, s) for cue, s in self.cue_pairs if not _ORDER_ID.fullmatch(cue.strip())
        ]
        # each order id among the cues -> the subjects it names (the order, or its items)
        self.id_cues: dict[str, set[str]] = {}
        for f in facts:
            for c in (f.subject, *f.cues) if f.subject else ():
                if _ORDER_ID.fullmatch(c.lower()):
                    self.id_cues.setdefault(c, set()).add(f.subject)
        topics = {f.value.partition(":")[0] for f in facts if f.kind == "verdict"}
        self.only_topic = next(iter(topics)) if len(topics) == 1 else None
        self.sentences = len(self.named) > 1 or any(k.sentences for k in self.valued)
        self.labels = [describe(f) for f in facts]
        self.required = [f.required for f in facts]
        # parsed target of each fact (None: unreadable, matches nothing), and the parsed
        # values a stated value may be without conflicting (targets, then allowed context)
        self.targets = [parse(f.kind, f.value) for f in facts]
        self.roles = [f.role for f in facts]  # the role each target has ('' = any)
        # per kind, the roles in which a stated value must be a target (`Kind.may_be_context`)
        self.bound_roles = {
            k: KINDS[k].target_roles
            | {r for f in facts if f.kind == k for r in (f.role, *f.allowed_roles) if r}
            for k in self.kinds
        }
        # (value, role) of each allowed context value ('' = any role)
        self.permitted = [
            [(w, role) for a, role in _with_roles(f) if (w := parse(f.kind, a)) is not None]
            for f in facts
        ]
        self.by_kind = {k: [i for i, f in enumerate(facts) if f.kind == k] for k in self.kinds}

    def about(self, kind: str, reading: Reading, k: int, fallback: bool = True) -> list[int]:
        """Facts of `kind` that segment `k` may state: those about its subjects, or (with
        `fallback`, when none is) all."""
        indexed = self.by_kind[kind]
        subjects = reading.segments[k].subjects
        facts = self.facts
        relevant = [
            i
            for i in indexed
            if not facts[i].subject or not subjects or facts[i].subject in subjects
        ]
        return relevant or (indexed if fallback else [])

    def targets_in(self, kind: str, reading: Reading, k: int) -> list[tuple[Any, str]]:
        """(target, role) of each fact of `kind` segment `k` may state (those it is about)."""
        relevant = self.about(kind, reading, k)
        return [(self.targets[i], self.roles[i]) for i in relevant if self.targets[i] is not None]

    def context_in(self, kind: str, reading: Reading, k: int) -> list[tuple[Any, str]]:
        """(value, role) of the context values segment `k` may state of `kind`: allowed
        values, today."""
        allowed = [pair for i in self.about(kind, reading, k) for pair in self.permitted[i]]
        if kind == "date" and reading.today is not None:
            allowed.append((reading.today, ""))
        return allowed


def _with_roles(fact: AnswerFact) -> list[tuple[str, str]]:
    """(value, role) of each of the fact's `allowed` values, and of what an answer may work out
    from them: an order under the free-shipping threshold is threshold - order away from it
    ("you're $15 away from free shipping"), said in that role only (`MoneyKind.fits`)."""
    roles = fact.allowed_roles
    pairs = [(a, roles[j] if j < len(roles) else "") for j, a in enumerate(fact.allowed)]
    if fact.kind == "money":
        by_role = {role: parse("money", a) for a, role in pairs if role in (v.THRESHOLD, v.ORDER)}
        threshold, order = by_role.get(v.THRESHOLD), by_role.get(v.ORDER)
        gap = threshold - order if threshold is not None and order is not None else 0.0
        if gap > 0:
            pairs.append((f"{gap:.2f}", v.GAP))
    return pairs


# an order id in the normalised answer; a sentence naming an order no fact is about (the one
# the agent just placed) is about that order (`OTHER`): its values are judged by what the
# episode showed, not against the facts of the orders the request is about
_ORDER_ID = re.compile(r"\b(?:o\d{7}|n\d{4})\b")  # an initial order, one placed in the episode
_NEW_ORDER = re.compile(r"\bn\d{4}\b")
# a value offered as one of several alternatives commits to none: it states no fact, though a
# wrong alternative still fails. An alternative is said by "or" ("either today or June 16",
# "June 16 or 17"), a slash ("June 16/today"), or a word of doubt ("maybe June 16", "June 16,
# or possibly today", "June 16 (perhaps June 14)", "June 16, though it might have been
# today"); after a comma a bare "or" is a condition, no doubt ("$4.99, or $0 over $50")
_VALUE_START = (
    r"(?:\$|\d|today|tomorrow|yesterday|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
    r"|(?:(?:this|next|last|coming) )?(?:mon|tues|wednes|thurs|fri|satur|sun)day|in \d)"
)
_DOUBT = (
    r"(?:(?:or )?(?:possibly|perhaps|maybe|probably)|might|(?:may|could) (?:have|also|well)"
    r"|or else|or even)"
)
_HEDGE_BEFORE = re.compile(
    r"(?:\b(?:or(?: else| even)?|either|maybe|perhaps|possibly|probably)\s+|[a-z\d]/\s*"
    r"|\b(?:might|may|could) (?:have been|be) )(?:on |the |around |by |at )?$"
)
_HEDGE_AFTER = re.compile(
    r"(?:[^,.;!?]|\.(?=\d)){0,24}?"
    r"(?:\s(?:or|and/or)\s+|\s?/(?=\s?[a-z$])\s?"
    rf"|[\s,(]+(?:(?:though|although|but) )?(?:it )?{_DOUBT}\s+)"
    rf"(?:(?:on|the|maybe|possibly|have|has|been|be|was|around|by|at) )*{_VALUE_START}"
)


_HEDGE_WORDS = (" or ", "either", "maybe", "perhaps", "possibly", "probably", "might", "/",
                "may have", "could have", "may also", "could also", "may well",
                "could well", "may be", "could be")  # fmt: skip


def hedged(text: str, start: int) -> bool:
    """Is the value stated at `text[start:]` one of several alternatives?"""
    return bool(
        _HEDGE_BEFORE.search(text, max(0, start - 24), start) or _HEDGE_AFTER.match(text, start)
    )


@dataclass
class Segment:
    text: str
    subjects: frozenset[str]  # empty: not about any order in particular
    start: int = 0  # offset in the normalised answer


# "May" capitalised inside a sentence and not a month of a date ("May 3", "the 3rd of May",
# "12 May"): a brand or title word ("the May Works saucepan"), never the modal "may" that the
# verdict reader takes for a yes ("you may return it")
_BRAND_MAY = re.compile(
    r"(?<=[A-Za-z,] )(?<!\bof )May\b(?!\.?\s*(?:\d|the\s+\d)|\s*,\s*(?:the\s+)?\d|-\d)"
)


def mask_brand_modals(answer: str) -> str:
    """`answer` with a mid-sentence capitalised "May" that is no month spelled "Mai"."""
    return _BRAND_MAY.sub("Mai", answer) if "May" in answer else answer


class Reading:
    """One answer as the kinds read it: normalised text, its segments (sentences grouped by
    the order they are about, when the facts concern several orders) and the values of each
    kind per segment, each read once and only when asked for."""

    def __init__(self, answer: str, plan: AnswerPlan, prompt: str, known, today: str | None):
        self.answer = answer
        self.text = text = normalise(mask_brand_modals(answer))
        self.plan = plan
        self.prompt = prompt
        self.known_addresses = known
        self.today = parse("date", today) if today else None
        self._spans: list[tuple[int, int]] | None = None
        self._values: dict[str, list[list[Any]]] = {}
        self._committed: dict[str, list[list[Any]]] = {}
        self._hedged: dict[str, list[tuple[int, Any]]] = {}  # (position, value) said hedged
        self._address_words: dict[int | None, str] = {}
        self._lowered: str | None = None
        ids = {m.upper() for m in _ORDER_ID.findall(text)}
        if len(plan.named) <= 1 and ids <= plan.id_cues.keys():
            self.segments = [Segment(text, plan.named)]
        else:  # a sentence names the subjects whose cue it holds, and so do the ones after it
            self.segments = []
            current = plan.named if len(plan.named) == 1 else frozenset()
            for start, end in sentence_spans(text, SUBJECT_BREAK):
                sentence = text[start:end]
                words = _words(sentence)
                named = frozenset({s for cue, s in plan.cue_pairs if cue in words})
                ids = {m.upper() for m in _ORDER_ID.findall(sentence)}
                if ids:  # an order id names its order (its items), whatever words are near it
                    by_id = frozenset(s for i in ids for s in plan.id_cues.get(i, ()))
                    # and a product's words (or id) pick among the items of one order
                    by_words = {s for cue, s in plan.word_pairs if cue in words}
                    named = (by_id & by_words or by_id) if by_id else OTHER
                if named is OTHER and not _NEW_ORDER.search(sentence):
                    # about an order on file no fact is about, alone: the next sentence is not
                    self.segments.append(Segment(sentence, OTHER, start))
                    continue
                # a sentence naming nothing goes on about the order before it, the one just
                # placed too ("Order N0001 is placed. Total: $52.98.")
                current = named or current
                self.segments.append(Segment(sentence, current, start))
        self.one = len(self.segments) == 1
        self.starts = [seg.start for seg in self.segments]

    def spans(self) -> list[tuple[int, int]]:
        if self._spans is None:
            self._spans = sentence_spans(self.text)
        return self._spans

    def values(self, kind: str) -> list[list[Any]]:
        """The values of `kind` the answer states, bucketed by segment."""
        out = self._values.get(kind)
        if out is None:
            located = KINDS[kind].extract(self.text, self)
            out = self._values[kind] = self._bucket(located)
            text = self.text
            hedging = any(word in text for word in _HEDGE_WORDS)
            # two dates about one subject, the second with no word of its own: alternatives
            apart = alternative_dates(text, located, self.today) if kind == "date" else ()
            committed = [
                (k, value)
                for k, value in located
                if k not in apart and not (hedging and hedged(text, k))
            ]
            self._committed[kind] = (
                out if len(committed) == len(located) else self._bucket(committed)
            )
            kept = {k for k, _ in committed} if len(committed) < len(located) else None
            self._hedged[kind] = [
                pair for pair in located if kept is not None and pair[0] not in kept
            ]
        return out

    def hedged(self, kind: str) -> list[tuple[int, Any]]:
        """(position, value) of the values of `kind` said as one of alternatives."""
        self.values(kind)
        return self._hedged[kind]

    def committed(self, kind: str) -> list[list[Any]]:
        """`values(kind)` less the hedged ones (`hedged`): the values that state a fact."""
        self.values(kind)
        return self._committed[kind]

    def _bucket(self, located: list[tuple[int, Any]]) -> list[list[Any]]:
        if self.one:
            return [[value for _, value in located]]
        out: list[list[Any]] = [[] for _ in self.segments]
        for offset, value in located:
            out[max(0, bisect.bisect_right(self.starts, offset) - 1)].append(value)
        return out

    def address_words(self, k: int | None) -> str:
        words = self._address_words.get(k)
        if words is None:
            text = self.text if k is None else self.segments[k].text
            words = self._address_words[k] = v._address_words(text)
        return words

    def lowered(self) -> str:
        if self._lowered is None:
            self._lowered = self.answer.lower()
        return self._lowered

    def in_prompt(self, kind: Kind, value: Any) -> bool:
        """Does the user's own request state this value (read only for a value that would
        otherwise fail: rare, and cached per prompt)?"""
        # a value in a role only a target has is quoted back only in the role it had there:
        # the prompt's "I received it 14 days ago" licenses no "14-day window"
        return bool(self.prompt) and any(
            kind.same_as_said(value, p, self.today)
            and (kind.may_be_context(value, self.plan) or kind.role(p) == kind.role(value))
            for p in _prompt_values(self.prompt, kind.name)
        )


def check_answer(
    answer: str,
    facts: list[AnswerFact] | AnswerPlan,
    prompt: str = "",
    known_addresses: Iterable[str] = (),
    today: str | None = None,
    shown: Shown | None = None,
) -> AnswerCheck:
    """Check a final answer against `facts` (or their `AnswerPlan`; see the package docstring
    for the rules). `today` (ISO) is a date any answer may mention ("as of today, June 15,
    …"). With `shown` (what the episode showed the agent), every value of a kind the facts do
    not check must be grounded too: a value of the prompt, today, or a value `shown` holds."""
    result = AnswerCheck()
    plan = facts if isinstance(facts, AnswerPlan) else AnswerPlan(facts)
    if not plan.facts and shown is None:
        return result
    reading = Reading(answer, plan, prompt, tuple(known_addresses), today)
    found = []
    for i, fact in enumerate(plan.facts):
        if KINDS[fact.kind].states(plan, i, reading):
            result.found.append(plan.labels[i])
            found.append(i)
        else:
            (result.missing if plan.required[i] else result.unstated).append(plan.labels[i])
    # precision: every value of a checked kind is a target or allowed for its subject
    for kind in plan.valued:
        result.conflicts += kind.conflicts(plan, reading)
    if shown is not None:  # evidence: what the answer states, the episode showed
        evident = [i for i in found if KINDS[plan.facts[i].kind].evident(plan, i, reading, shown)]
        # a value that is the target of a fact about an order, shown of that order, is grounded
        known: dict[str, list[Any]] = {}
        for i in evident:
            if plan.facts[i].subject and plan.targets[i] is not None:
                known.setdefault(plan.facts[i].kind, []).append(plan.targets[i])
        result.ungrounded = _ungrounded(reading, shown, known) + [
            plan.labels[i] for i in found if i not in evident
        ]
        result.conflicts += _hedged_order_dates(reading)
    for kind in KINDS.values():
        if type(kind).audit is not Kind.audit:
            getattr(result, kind.audits_into).extend(kind.audit(plan, reading, shown))
    result.conflicts = list(dict.fromkeys(result.conflicts))
    return result


# a sentence for the order a hedged date is about: a question mark inside it asks the
# alternative ("June 3 - or was it today? (order O1), you paid …")
_STATEMENT_BREAK = re.compile(r"[.!\n]+|\(\d\)")


def _hedged_order_dates(reading: Reading) -> list[str]:
    """A date in a sentence naming one order, said as one of alternatives ("for your purchase
    of June 29 or today (order O1)", "placed June 2, or possibly June 3"): the answer commits to
    no date of that order, and an alternative is untrue of it. A checked date said so is
    missing anyway; this holds the dates no fact checks to the same rule."""
    hedged = reading.hedged("date")
    if not hedged:
        return []
    date, text, out = KINDS["date"], reading.text, []
    spans = sentence_spans(text, _STATEMENT_BREAK)
    for at, value in hedged:
        # the order its sentence names, else the one its segment names
        start, end = next(((a, b) for a, b in spans if a <= at < b), (at, at))
        named = set(_ORDER_ID.findall(text, start, end))
        if not named:
            segment = reading.segments[max(0, bisect.bisect_right(reading.starts, at) - 1)]
            named = set(_ORDER_ID.findall(segment.text))
        if len(named) == 1:
            out.append(f"date {date.show(value)} hedged about order {named.pop().upper()}")
    return out


def _ungrounded(reading: Reading, shown: Shown, known: dict[str, list[Any]]) -> list[str]:
    """Stated values, of every kind compared by value, that nothing grounds: not today, not
    the customer's words, not shown by a tool result of the episode, and not the difference
    of two such values (days left, days since the window closed, what an order lacks to ship
    free)."""
    out = []
    digits = v.FREE_DIGIT.search(reading.text) is not None
    for kind in KINDS.values():
        if not (kind.valued and kind.grounded) or (kind.digits and not digits):
            continue
        targets = known.get(kind.name, ())
        for found in reading.values(kind.name):
            for value in found:
                if kind.name == "date" and reading.today and kind.matches(value, reading.today):
                    continue
                if any(kind.matches(value, want) for want in targets):
                    continue
                if reading.in_prompt(kind, value) or shown.has(kind, value):
                    continue
                if shown.derives(kind, value, reading.prompt):
                    continue
                out.append(f"{kind.name} {kind.show(value)}")
    return list(dict.fromkeys(out))
