# ruff: noqa: E501  (the word lists and set phrases read best one per line)
"""Action kinds: one entry per action a message can report, promise or deny (`ACTION_KINDS`),
each with its words (verb and noun lemmas), the episode's kinds that back it, and its check's
switches; and the word forms of all of them, built once from the lemmas with `lemminflect`
(`FORMS`: "voided" -> the cancel kind's verb "void", done form).

A clause speaks of an action by one of its verbs in any inflection ("voided", "withdrew",
"called off", "was cancelled") or by one of its nouns with an effect verb ("a pickup was
arranged", "I've scheduled a collection", "cancellation confirmed", "refund: issued"), so a
synonym is one word added to its kind, never a pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from lemminflect import getAllInflections

Form = Literal["done", "base", "ing"]


@dataclass(frozen=True)
class ActionKind:
    """One action a message can report, promise or deny.

    `verbs`: lemmas whose any form speaks of it ("call off": "off" within three words after);
    `nouns`: lemmas that speak of it with an effect verb (`EFFECTS`, or `effects` when given);
    `states`: adjectives (or a phrase ending in one of its words) that report it after a
    form of "be" ("is now void", "is on order");
    `context`: words one of which the clause must hold ("cart" for an addition); `excludes`:
    words that make the clause another kind's; `covers`: the action kinds of the episode that
    make a report true (default: `name`); `needs_name`: a report must name a product acted
    on; `advice_unnamed`: a report naming no product is advice ("I'd suggest waiting");
    `lands`: where its result lands ("on your card"); `phrases` / `denial`: patterns of a kind said in set phrases rather than a verb ("these fit
    what you asked for", "nothing fits")."""

    name: str
    verbs: tuple[str, ...] = ()
    nouns: tuple[str, ...] = ()
    states: tuple[str, ...] = ()  # adjectives of its result after "is" ("the order is void")
    effects: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    covers: tuple[str, ...] = ()
    needs_name: bool = False
    advice_unnamed: bool = False
    phrases: str = ""
    denial: str = ""
    hints: tuple[
        str, ...
    ] = ()  # words one of which a clause holds when `phrases` or `denial` match
    # where its result lands: a noun of it said to be there is done ("the credit is now on
    # your account", "the money is back on your card")
    lands: tuple[str, ...] = ()
    phrases_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    denial_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(
            self,
            "phrases_re",
            re.compile(rf"\b(?:{self.phrases})\b", re.I) if self.phrases else None,
        )
        set_(self, "denial_re", re.compile(self.denial, re.I) if self.denial else None)
        if not self.covers:
            set_(self, "covers", (self.name,))
        if not (self.verbs or self.nouns or self.phrases):
            raise ValueError(f"action kind {self.name!r} needs verbs, nouns or phrases")
        if (self.phrases or self.denial) and not self.hints:
            raise ValueError(f"action kind {self.name!r} needs hints for its phrases")


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
CHANGES = ("change", "update", "switch", "edit", "correct", "replace", "set", "adjust", "fix",
           "modify", "amend", "increase", "decrease", "reduce", "raise", "lower", "bump")  # fmt: skip
CART = ("cart", "basket", "bag", "trolley")

# fmt: off
ACTION_KINDS: tuple[ActionKind, ...] = (
    ActionKind(
        "order",
        verbs=("place", "order", "purchase", "buy", "check out", "reorder"),
        nouns=("order", "purchase", "checkout"),
        states=("on order",),  # "the jacket is on order for you" (not "… on order O1")
        excludes=CART,
        # "I couldn't complete your order", "the payment didn't go through"
        denial=r"\b(?:order|purchase|checkout|payment) (?:didn't|did not|couldn't|could not|wouldn't|would not|won't|will not) go through"
        r"|\b(?:order|purchase|checkout) (?:has |have )?failed|\bwhenever you(?:'re| are)? (?:ready|want|like) to check ?out",
        hints=("through", "failed", "check", "checkout"),
    ),
    ActionKind("add", verbs=("add", "put", "place", "pop", "drop", "throw", "toss", "load"), context=CART),
    ActionKind("remove", verbs=("remove", "delete", "take out", "take off", "clear", "empty")),
    ActionKind("quantity", nouns=("quantity",), effects=CHANGES, covers=("quantity", "add", "remove")),
    ActionKind(
        "cancel",
        verbs=("cancel", "void", "stop", "withdraw", "call off", "annul", "rescind", "revoke", "abort",
               "axe", "kill", "pull the plug", "terminate", "halt", "scrap", "nullify", "nix",
               "scrub", "ditch", "undo", "retract", "countermand", "quash", "invalidate"),
        nouns=("cancellation", "cancelation"),
        states=("void", "null"),
    ),
    ActionKind(
        "return",
        verbs=("return", "send back", "ship back", "mail back", "post back", "pick up", "collect",
               "take back"),
        nouns=("return", "pickup", "pick-up", "collection", "label", "rma", "courier", "returnable"),
    ),
    ActionKind(
        "exchange",
        verbs=("exchange", "swap", "replace", "substitute", "trade in"),
        nouns=("exchange", "swap", "replacement", "substitute"),
        excludes=CART,
    ),
    ActionKind(
        "refund",
        # ("send back" is the return's: "nothing is being sent back" denies no refund; the
        # money sent back is the noun's, "the money was sent back to your card")
        # (an order or a charge "reversed" is paid back: true after a cancel or a return)
        verbs=("refund", "reimburse", "credit", "repay", "pay back", "give back", "compensate",
               "reverse"),
        nouns=("refund", "reimbursement", "credit", "repayment", "compensation", "money"),
        covers=("cancel", "return"),
        lands=("account", "card", "balance", "wallet", "statement", "bank", "method", "paypal"),
    ),
    # a product got for the customer, in verbs of no other kind ("I've secured the Lam mat",
    # and any verb `reading` does not know, with a product as its object): an order or a cart
    ActionKind("obtain", verbs=("obtain", "acquire", "procure", "secure", "reserve"), covers=("order", "add")),
    ActionKind(
        "recommend",
        verbs=("recommend", "suggest"),
        phrases=r"I recommend|I'd recommend|I would recommend|I suggest|I'd suggest|I would suggest",
        advice_unnamed=True,
        hints=("recommend", "suggest"),
    ),
    ActionKind(
        "recommendation",
        phrases=r"these (?:fit|match|suit)|this (?:fits|matches|suits)|(?:best|top|closest) (?:match|matches|pick|picks|choice|option)|fits? (?:what you asked|your request)|here (?:are|is) (?:my|the|some|a few|two|three) (?:recommendations?|picks|options|suggestions|matches)",
        denial=r"\bnothing (?:\w+ ){0,2}(?:fits?|matche[sd]|match|suits?|suited|works?|worked)\b|\b(?:couldn't|could not|can't|cannot|didn't|did not|wasn't able to|unable to) (?:\w+ )?find (?:anything|any|a |one\b|something)|\bnone (?:of (?:them|these|those|the \w+) )?(?:fits?|matche[sd]|match|suits?|suited|works?|worked)\b|\b(?:have|had|got) no (?:recommendations?|suggestions?|picks?)\b|\bnothing to (?:recommend|suggest)\b"
        r"|\bno (?:products?|items?|options?|matches|match|alternatives?) (?:fits?|matche[sd]|match|suits?|(?:was|were|is|are) (?:found|available))",
        covers=("recommend",),
        needs_name=True,
        hints=("these", "this", "best", "top", "closest", "fit", "fits", "here", "nothing", "find",
               "none", "no"),
    ),
    # no tool changes these: a report of one is never true
    ActionKind("address", nouns=("address",), effects=CHANGES),
    ActionKind("payment", nouns=("payment method", "card"), effects=CHANGES),
)
# fmt: on
KINDS_BY_NAME = {kind.name: kind for kind in ACTION_KINDS}
PHRASE_KINDS = tuple(kind for kind in ACTION_KINDS if kind.phrases or kind.denial)
WRITE_KINDS = ("order", "add", "remove", "quantity", "cancel", "return", "exchange")


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


def _build_forms() -> dict[str, list[Word]]:
    forms: dict[str, list[Word]] = {}

    def add(spelling: str, word: Word) -> None:
        if word not in forms.setdefault(spelling, []):
            forms[spelling].append(word)

    for kind in ACTION_KINDS:
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


FORMS = _build_forms()
# done forms that are base forms too ("put", "set"): "I'll put it in your cart" promises
BASE_TOO = frozenset(
    w
    for w, words in FORMS.items()
    if any(x.form == "done" and x.lemma.split()[0] == w for x in words)
)
