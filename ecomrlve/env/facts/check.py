"""The answer check, driven by the kind registry (`kinds.KINDS`): see the package docstring."""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecomrlve.env.facts import values as v
from ecomrlve.env.facts.kinds import KINDS, Kind, parse
from ecomrlve.env.facts.text import _words, fold, normalise, sentence_spans
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
    ):
        self.items = items
        self.record = record  # the EpisodeRecord, for kinds that audit the episode's actions
        self.catalog = catalog  # the product names those kinds read (None: ids only)
        self.today = dt.date.fromisoformat(today) if today else None
        self._strings: list[str] | None = None
        self._numbers: list[tuple[str, float]] = []  # (key, number)
        self._text: str | None = None
        self._values: dict[str, list[Any]] = {}

    def strings(self) -> list[str]:
        if self._strings is None:
            self._strings = []
            stack: list[tuple[str, Any]] = [("", item) for item in self.items]
            while stack:
                key, item = stack.pop()
                if isinstance(item, str):
                    self._strings.append(item)
                elif isinstance(item, bool):
                    continue
                elif isinstance(item, int | float):
                    self._numbers.append((key, float(item)))
                elif isinstance(item, dict):
                    stack.extend(item.items())
                elif isinstance(item, list | tuple):
                    stack.extend((key, x) for x in item)
        return self._strings

    def numbers(self, keys: tuple[str, ...]) -> list[float]:
        """Numbers shown under a key holding one of `keys` ("price" in "line_price"): a stock
        count or a rating is no price and no duration."""
        self.strings()
        return [x for key, x in self._numbers if any(k in key for k in keys)]

    def text(self) -> str:
        if self._text is None:
            # tool results state numbers in digits: folding is enough (number words in a
            # product description would cost alpha2digit ~100 us per episode)
            self._text = fold(" | ".join(self.strings()))
        return self._text

    def has(self, kind: Kind, value: Any) -> bool:
        values = self._values.get(kind.name)
        if values is None:
            values = self._values[kind.name] = kind.shown(self)
        return any(kind.same(value, w) for w in values)


class AnswerPlan:
    """What `check_answer` needs from a fact list that does not depend on the answer: kinds,
    subjects and their cues, parsed targets and allowed values, labels. Built once per list:
    the verifier keeps one per `Goal` (`Goal.derived`), shared by all episodes of a task."""

    __slots__ = ("bound_roles", "by_kind", "cue_pairs", "facts", "kinds", "labels", "named",
                 "only_topic", "permitted", "required", "roles", "sentences", "targets",
                 "valued")  # fmt: skip

    def __init__(self, facts: Iterable[AnswerFact]):
        facts = list(facts)
        self.facts = facts
        self.kinds = frozenset(f.kind for f in facts)
        # the checked kinds compared by value, in registry order
        self.valued = [k for k in KINDS.values() if k.valued and k.name in self.kinds]
        self.named = frozenset(f.subject for f in facts if f.subject)
        # (cue words, subject) pairs, each once; only needed to split answers about 2+ orders
        self.cue_pairs = (
            list(dict.fromkeys((_words(c), f.subject) for f in facts if f.subject for c in f.cues))
            if len(self.named) > 1
            else []
        )
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

    def about(self, kind: str, reading: Reading, k: int) -> list[int]:
        """Facts of `kind` that segment `k` may state: those about its subjects, or all."""
        indexed = self.by_kind[kind]
        subjects = reading.segments[k].subjects
        facts = self.facts
        relevant = [
            i
            for i in indexed
            if not facts[i].subject or not subjects or facts[i].subject in subjects
        ]
        return relevant or indexed

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


@dataclass
class Segment:
    text: str
    subjects: frozenset[str]  # empty: not about any order in particular
    start: int = 0  # offset in the normalised answer


# "May" capitalised inside a sentence and not a month of a date ("May 3", "the 3rd of May",
# "12 May"): a brand or title word ("the May Works saucepan"), never the modal "may" that the
# verdict reader takes for a yes ("you may return it")
_BRAND_MAY = re.compile(r"(?<=[A-Za-z,] )(?<!\bof )May\b(?!\s*(?:\d|the\s+\d|,\s*\d))")


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
        self._address_words: dict[int | None, str] = {}
        self._lowered: str | None = None
        if len(plan.named) <= 1:
            self.segments = [Segment(text, plan.named)]
        else:  # a sentence names the subjects whose cue it holds, and so do the ones after it
            self.segments, current = [], frozenset()
            for start, end in self.spans():
                sentence = text[start:end]
                words = _words(sentence)
                named = frozenset({s for cue, s in plan.cue_pairs if cue in words})
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
            if self.one:
                out = [[value for _, value in located]]
            else:
                out = [[] for _ in self.segments]
                for offset, value in located:
                    out[max(0, bisect.bisect_right(self.starts, offset) - 1)].append(value)
            self._values[kind] = out
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


@functools.lru_cache(maxsize=8192)
def _prompt_values(prompt: str, kind: str) -> tuple:
    return tuple(value for _, value in KINDS[kind].extract(normalise(prompt), None))


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
    for i, fact in enumerate(plan.facts):
        if KINDS[fact.kind].states(plan, i, reading):
            result.found.append(plan.labels[i])
        else:
            (result.missing if plan.required[i] else result.unstated).append(plan.labels[i])
    # precision: every value of a checked kind is a target or allowed for its subject
    for kind in plan.valued:
        result.conflicts += kind.conflicts(plan, reading)
    if shown is not None:
        result.ungrounded = _ungrounded(plan, reading, shown)
    for kind in KINDS.values():
        if type(kind).audit is not Kind.audit:
            getattr(result, kind.audits_into).extend(kind.audit(plan, reading, shown))
    result.conflicts = list(dict.fromkeys(result.conflicts))
    return result


def _ungrounded(plan: AnswerPlan, reading: Reading, shown: Shown) -> list[str]:
    """Values of kinds the facts do not check that nothing grounds."""
    out = []
    digits = v.FREE_DIGIT.search(reading.text) is not None
    for kind in KINDS.values():
        if not (kind.valued and kind.grounded) or kind.name in plan.kinds:
            continue
        if kind.digits and not digits:
            continue
        for _, value in kind.extract(reading.text, reading):
            if kind.name == "date" and reading.today and kind.matches(value, reading.today):
                continue
            if reading.in_prompt(kind, value) or shown.has(kind, value):
                continue
            out.append(f"{kind.name} {kind.show(value)}")
    return list(dict.fromkeys(out))
