# ruff: noqa: E501  (the word lists and set phrases read best one per line)
"""Action kinds: one entry per action a message can report, promise or deny (`ACTION_KINDS`),
each with its words (verb and noun lemmas), the episode's kinds that back it, and its check's
switches; and the word forms of all of them, built once from the lemmas with `lemminflect`
(`FORMS`: "voided" -> the cancel kind's verb "void", done form).

A write tool declares its kind beside its method (`Writes.action`, `ecomrlve.env.shop.writes`:
"cancel", "return", "order"…); the kinds no tool does are here (a refund, a product obtained, a
recommendation said in set phrases, address and payment changes). `READING_ORDER` places them
among the tools' kinds.

A clause speaks of an action by one of its verbs in any inflection ("voided", "withdrew",
"called off", "was cancelled") or by one of its nouns with an effect verb ("a pickup was
arranged", "I've scheduled a collection", "cancellation confirmed", "refund: issued"), so a
synonym is one word added to its kind, never a pattern.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lemminflect import getAllInflections

from ecomrlve.env.shop import tools
from ecomrlve.env.shop.writes import CART, CHANGES, ActionKind

__all__ = ["CART", "CHANGES", "ActionKind"]  # with the tables below: the reader imports them here

Form = Literal["done", "base", "ing"]


# verbs that bring an action named by a noun about ("I've arranged a pickup", "the return was
# initiated", "refund: issued", "your order went through")
EFFECTS = ("start", "initiate", "file", "open", "create", "submit", "request", "process",
           "arrange", "book", "register", "log", "lodge", "schedule", "issue", "confirm",
           "complete", "approve", "finalize", "finalise", "make", "generate", "set up", "place",
           "apply", "authorize", "authorise", "grant", "organize", "organise", "trigger",
           "execute", "launch", "activate", "finish", "go through", "put through",
           "take care", "sort", "handle", "send", "print", "email", "go out", "send out", "get back",
           "put")  # fmt: skip
# words after a noun that say its action is done ("the exchange is complete", "Cancellation
# successful", "your refund is on its way", "the return is underway / all set / in progress")
DONE_STATES = frozenset(("complete", "done", "successful", "underway", "way", "set", "progress",
                         "through", "confirmed", "approved", "ready", "active"))  # fmt: skip

# fmt: off
# the reader's own kinds: no tool does them
REFUND = ActionKind(
    "refund",
    # ("send back" is the return's: "nothing is being sent back" denies no refund; the
    # money sent back is the noun's, "the money was sent back to your card")
    # (an order or a charge "reversed" is paid back: true after a cancel or a return)
    verbs=("refund", "reimburse", "credit", "repay", "pay back", "give back", "compensate",
           "reverse"),
    nouns=("refund", "reimbursement", "credit", "repayment", "compensation", "money"),
    covers=("cancel", "return"),
    lands=("account", "card", "balance", "wallet", "statement", "bank", "method", "paypal"),
)
# a product got for the customer, in verbs of no other kind ("I've secured the Lam mat",
# and any verb `reading` does not know, with a product as its object): an order or a cart
OBTAIN = ActionKind("obtain", verbs=("obtain", "acquire", "procure", "secure", "reserve"), covers=("order", "add"))
RECOMMENDATION = ActionKind(
    "recommendation",
    phrases=r"these (?:fit|match|suit)|this (?:fits|matches|suits)|(?:best|top|closest) (?:match|matches|pick|picks|choice|option)|fits? (?:what you asked|your request)|here (?:are|is) (?:my|the|some|a few|two|three) (?:recommendations?|picks|options|suggestions|matches)",
    denial=r"\bnothing (?:\w+ ){0,2}(?:fits?|matche[sd]|match|suits?|suited|works?|worked)\b|\b(?:couldn't|could not|can't|cannot|didn't|did not|wasn't able to|unable to) (?:\w+ )?find (?:anything|any|a |one\b|something)|\bnone (?:of (?:them|these|those|the \w+) )?(?:fits?|matche[sd]|match|suits?|suited|works?|worked)\b|\b(?:have|had|got) no (?:recommendations?|suggestions?|picks?)\b|\bnothing to (?:recommend|suggest)\b"
    r"|\bno (?:products?|items?|options?|matches|match|alternatives?) (?:fits?|matche[sd]|match|suits?|(?:was|were|is|are) (?:found|available))",
    covers=("recommend",),
    needs_name=True,
    hints=("these", "this", "best", "top", "closest", "fit", "fits", "here", "nothing", "find",
           "none", "no"),
)
# a change of an order in a verb of no kind ("I've expedited O1", "O1 has been paused",
# "Order O1 — dropped"): `reading` finds it by construction (a done verb that is no status or
# look-up, on an order the clause names); never true: it cannot be checked ("I've expedited
# O1" after a cancel of O1 is still a lie), and a placed order is not changed by it
CHANGE = ActionKind("change", nouns=("change", "modification", "adjustment", "alteration"), covers=("none",))
# a product said bought by what follows from buying it ("X was charged to your card", "you
# now own X", "X is on its way to you"): `reading` finds it where a product is named; an
# order on file holding the product makes it true too
BOUGHT = ActionKind("bought", verbs=("own",), covers=("order",))
# credit the shop gives in place of money back ("store credit", a voucher): no tool gives
# one, so a report of one is never true
VOUCHER = ActionKind("voucher", nouns=("voucher", "coupon"), covers=("none",))
# no tool changes these: a report of one is never true
ADDRESS = ActionKind("address", nouns=("address",), effects=CHANGES)
PAYMENT = ActionKind("payment", nouns=("payment method", "card"), effects=CHANGES)

# The order kinds are read in (a clause's kinds are reported in it, so the violations are):
# a name is a write tool's kind (declared with its tool: `ecomrlve.env.shop.writes`), an
# `ActionKind` the reader's own; a tool's kind not named here is read after these.
READING_ORDER: tuple[str | ActionKind, ...] = (
    "order", "add", "remove", "quantity", "cancel", "return", "exchange", REFUND, OBTAIN,
    "recommend", RECOMMENDATION, CHANGE, BOUGHT, VOUCHER, ADDRESS, PAYMENT,
)
# fmt: on

# Every table below is derived from the tools' declarations and READING_ORDER by `_build`, and
# built again in place when a tool is added or removed (`tools.add_tool`): importers keep the
# same objects.
ACTION_KINDS: list[ActionKind] = []
KINDS_BY_NAME: dict[str, ActionKind] = {}
PHRASE_KINDS: list[ActionKind] = []
# the kinds of the writes that change the shop ("nothing changed" denies each)
WRITE_KINDS: list[str] = []


def _tool_kinds() -> tuple[dict[str, ActionKind], list[str]]:
    """The write tools' kinds by name, and the names of those that change the shop."""
    kinds: dict[str, ActionKind] = {}
    changes: list[str] = []
    for spec in tools.TOOL_SPECS.values():
        if spec.writes is None:
            continue
        kind = spec.writes.action
        if kinds.get(kind.name, kind) != kind:
            raise ValueError(f"two tools declare different action kinds {kind.name!r}")
        kinds[kind.name] = kind
        if not spec.writes.answer:
            changes.append(kind.name)
    return kinds, changes


def _ordered_kinds() -> tuple[list[ActionKind], list[str]]:
    declared, changes = _tool_kinds()
    out: list[ActionKind] = []
    for entry in READING_ORDER:
        if isinstance(entry, ActionKind):
            out.append(entry)
        elif entry in declared:
            out.append(declared.pop(entry))
    out += declared.values()
    if len({kind.name for kind in out}) != len(out):
        raise ValueError("a tool's action kind has the name of one of the reader's own")
    return out, [kind.name for kind in out if kind.name in changes]


# ---- word forms, built once ------------------------------------------------------------------

_TAG_FORM: dict[str, Form] = {"VBD": "done", "VBN": "done", "VBG": "ing", "VB": "base",
                              "VBP": "base", "VBZ": "base"}  # fmt: skip


def verb_forms(lemma: str) -> dict[str, Form]:
    """Every inflection of the verb `lemma` (its head word for "call off") and its form."""
    head = lemma.split()[0]
    out: dict[str, Form] = {head: "base"}
    for tag, spellings in getAllInflections(head, upos="VERB").items():
        for spelling in spellings:
            # "cancelled" and "canceled" are both done; a done form wins over a base one
            # ("set", "put": done when read as done)
            if out.get(spelling) != "done":
                out[spelling] = _TAG_FORM.get(tag, "base")
    return out


@dataclass(frozen=True, slots=True)
class Word:
    """What one word form is to the reader: the kind's verb or noun, or an effect verb."""

    kind: str  # an action kind's name, or "" for an effect verb
    role: Literal["verb", "noun", "effect", "state"]
    form: Form | Literal["noun"]
    particle: str = ""  # "off" of "call off": must follow within three words
    lemma: str = ""


def _build_forms(kinds: list[ActionKind]) -> dict[str, list[Word]]:
    forms: dict[str, list[Word]] = {}

    def add(spelling: str, word: Word) -> None:
        if word not in forms.setdefault(spelling, []):
            forms[spelling].append(word)

    for kind in kinds:
        for lemma in kind.verbs:
            particle = lemma.split()[-1] if " " in lemma else ""
            for spelling, form in verb_forms(lemma).items():
                add(spelling, Word(kind.name, "verb", form, particle, lemma))
        for state in kind.states:
            add(state.split()[-1], Word(kind.name, "state", "done", lemma=state))
        for noun in kind.nouns:
            head = noun.split()[-1]
            for spelling in {
                head,
                head + "s",
                *getAllInflections(head, upos="NOUN").get("NNS", ()),
            }:
                add(spelling, Word(kind.name, "noun", "noun", lemma=noun))
    for lemma in {*EFFECTS, *CHANGES}:
        particle = lemma.split()[-1] if " " in lemma else ""
        for spelling, form in verb_forms(lemma).items():
            add(spelling, Word("", "effect", form, particle, lemma))
    return forms


FORMS: dict[str, list[Word]] = {}
# done forms that are base forms too ("put", "set"): "I'll put it in your cart" promises
BASE_TOO: set[str] = set()
# what gates the reading of a clause (`reading.Clause.actions`): a word of an action (a verb, an
# effect, a state or a set phrase's hint), a kind's noun, a kind's word (no effect verb), a
# place a result lands
ACTION_WORDS: set[str] = set()
NOUN_WORDS: set[str] = set()
KIND_WORDS: set[str] = set()
LAND_WORDS: set[str] = set()


def _build() -> None:
    """(Re)build every table of this module from the tools' declarations, in place."""
    kinds, changes = _ordered_kinds()
    forms = _build_forms(kinds)
    for table, value in (
        (ACTION_KINDS, kinds),
        (PHRASE_KINDS, [kind for kind in kinds if kind.phrases or kind.denial]),
        (WRITE_KINDS, changes),
    ):
        table[:] = value
    KINDS_BY_NAME.clear()
    KINDS_BY_NAME.update((kind.name, kind) for kind in kinds)
    FORMS.clear()
    FORMS.update(forms)
    derived = (
        (BASE_TOO, [w for w, words in forms.items()
                    if any(x.form == "done" and x.lemma.split()[0] == w for x in words)]),
        (ACTION_WORDS, [w for w, words in forms.items() if any(x.role != "noun" for x in words)]
                       + [h for kind in PHRASE_KINDS for h in kind.hints]),
        (NOUN_WORDS, [w for w, words in forms.items() if any(x.role == "noun" for x in words)]),
        (KIND_WORDS, [w for w, words in forms.items() if any(x.role != "effect" for x in words)]),
        (LAND_WORDS, [w for kind in kinds for w in kind.lands]),
    )  # fmt: skip
    for table, words in derived:
        table.clear()
        table.update(words)


_build()
tools.ON_TOOLS_CHANGED.append(_build)
