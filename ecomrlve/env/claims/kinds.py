# ruff: noqa: E501  (the action table reads best one pattern per line)
"""Action kinds: what a report or a denial of each action looks like (`ACTION_KINDS`, one
`ActionKind` per action, with its patterns, the episode's kinds that back it and its hint
words), and the hints of all kinds in one pattern."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ActionKind:
    """One action a message can report or deny.

    `done`: the verb in a done form (a report unless negated); `base`: other forms, which
    only count when negated; `denial`: phrases that deny it outright; `covers`: the action
    kinds of the episode that make a report true (default: `name`); `needs_name`: a report
    must name a product acted on; `advice_unnamed`: a report naming no product is advice.
    """

    name: str
    done: str
    base: str = ""
    denial: str = ""
    covers: tuple[str, ...] = ()
    needs_name: bool = False
    advice_unnamed: bool = False  # a report that names no product is advice ("I'd suggest
    # checking back next week"), not a claim
    # lower-case pieces one of which every match of the kind's patterns contains: a clause
    # without any is skipped without running the patterns
    hints: tuple[str, ...] = ()
    done_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    base_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    denial_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "done_re", re.compile(rf"\b(?:{self.done})\b", re.IGNORECASE))
        set_(
            self,
            "base_re",
            re.compile(rf"\b(?:{self.base})\b", re.IGNORECASE) if self.base else None,
        )
        set_(self, "denial_re", re.compile(self.denial, re.IGNORECASE) if self.denial else None)
        if not self.covers:
            set_(self, "covers", (self.name,))
        if not self.hints:
            raise ValueError(f"action kind {self.name!r} needs hints (words its patterns hold)")


_FILED = r"started|filed|set up|initiated|opened|created|submitted|requested|processed|arranged|booked|registered|logged|lodged"
_CHANGE = r"changed|updated|switched|edited|corrected|replaced|set"

# a noun of an action and a word saying it is done, with or without "is" / "has been" or a
# colon between ("Return initiated for O1", "Cancellation confirmed", "Refund issued",
# "**Return**: started", "The exchange is complete", "Your order went through")
_COMPLETE = (
    r"(?:initiated|started|submitted|filed|complete|completed|done|confirmed|processed|approved"
    r"|issued|all set|set up|opened|created|arranged|finali[sz]ed|successful|underway|in progress"
    r"|went through|gone through|placed|taken care of|sorted)"
)
_IS_DONE = rf"(?:\s*:\s*|\s+(?:has been |have been |is |was |has |had been )?(?:now |all |fully |successfully )*){_COMPLETE}"


def _nominal(noun: str) -> str:
    return rf"{noun}(?: request)?{_IS_DONE}"


def _nominal_denied(noun: str) -> str:
    """ "The return wasn't started", "the cancellation didn't go through" (the negation comes
    after the noun, where a negation before the verb is looked for)."""
    return (
        rf"\b{noun}s?(?: request)?(?: (?:of|for|on) (?:the |your )?\w+)? (?:wasn't|was not|hasn't|"
        rf"has not|isn't|is not|didn't|did not|couldn't|could not|won't|will not|never)"
        rf"(?:(?: been| be| go| gone)?(?: \w+)?{_IS_DONE}| go through)"
        rf"|\bno (?:new )?{noun}s?(?: requests?)? (?:was|were|has been|have been) (?:made|{_COMPLETE})"
    )


_ORDER_HINTS = ("plac", "ordered", "purchas", "bought", "buy", "check", "complet", "finish",
                "submit", "process", "n't", "not", "never", "no ", "fail", "went through",
                "gone through", "confirm", "done", "set up", "sorted", "taken care")  # fmt: skip

ACTION_KINDS: tuple[ActionKind, ...] = (
    ActionKind(
        "order",
        hints=_ORDER_HINTS,
        done=r"placed|ordered|purchased|bought|checked out|completed (?:the|your) (?:checkout|purchase)"
        r"|(?:completed|finished|submitted|processed) (?:the |your |a |an )?(?:new )?(?:order|purchase|checkout)"
        rf"|{_nominal('(?:checkout|purchase|order)')}",
        base=r"place|placing|purchase|purchasing|buy|buying|ordering|check(?:ing)? out|(?:complete|finish|submit|process)(?: the| your| an| a)? (?:order|purchase|checkout)",
        denial=r"(?:n't|\bnot|\bnever)\s+(?:\w+\s+)?order(?:ed)?\b|\bno (?:new )?(?:orders?|purchases?) (?:was|were|has been|have been) (?:placed|made)"
        r"|\bwhenever you(?:'re| are)? (?:ready|want|like) to check ?out"
        r"|\b(?:order|purchase|checkout|payment) (?:didn't|did not|couldn't|could not|wouldn't|would not|won't|will not) go through|\b(?:order|purchase|checkout) (?:has |have )?failed",
    ),
    ActionKind(
        "add",
        done=r"(?:added|put)\b[^.;]{0,120}?\b(?:to|in|into) (?:your |the )?(?:shopping )?(?:cart|basket|bag)"
        r"|(?:is|are|it's|they're) (?:now )?(?:in|into) (?:your|the) (?:shopping )?(?:cart|basket|bag)",
        base=r"add\b[^.;]{0,120}?\b(?:to|in|into) (?:your|the) (?:shopping )?(?:cart|basket|bag)",
        hints=("add", "put", "cart", "basket", "bag"),
    ),
    ActionKind(
        "remove",
        hints=("remov", "took", "taken", "take", "delet", "drop"),
        done=r"removed|took (?:\w+ )?out|taken (?:\w+ )?out|deleted|dropped",
        base=r"remove|take (?:\w+ )?out|delete",
    ),
    ActionKind(
        "quantity",
        hints=("quantit",),
        done=rf"(?:{_CHANGE}|adjusted|fixed) (?:the |your )?quantit(?:y|ies)|quantit(?:y|ies) (?:has|have|is|are|was|were) (?:now )?(?:been )?(?:{_CHANGE}|adjusted|fixed)",
        covers=("quantity", "add", "remove"),
    ),
    ActionKind(
        "cancel",
        hints=("cancel", "call"),
        done=rf"cancell?ed|called off|{_nominal('cancell?ation')}"
        rf"|(?:{_FILED}|confirmed|completed) (?:a |the |your |an )?(?:\w+ )?cancell?ation",
        base=r"cancel|cancell?ing|call off|cancell?ation",
        denial=_nominal_denied("cancell?ation"),
    ),
    ActionKind(
        "return",
        hints=("return", "send", "sent"),
        done=rf"returned|(?:{_FILED}) (?:a |the |your |an )?(?:\w+ )?returns?|return (?:request )?(?:has been|is|was) (?:now )?(?:{_FILED}|open|underway|in progress)"
        rf"|{_nominal('return')}|sent (?:it|them|\w+ \w+) back",
        base=r"return|returning|send (?:it |them )?back|sent (?:it |them )?back|returnable",
        denial=_nominal_denied("return"),
    ),
    ActionKind(
        "exchange",
        hints=("exchang", "swap"),
        done=rf"exchanged|swapped|(?:{_FILED}) (?:a |the |your |an )?(?:\w+ )?exchanges?|exchange (?:has been|is|was) (?:now )?(?:{_FILED}|underway|in progress)"
        rf"|{_nominal('exchange')}",
        base=r"exchange|exchanging|swap",
        denial=_nominal_denied("exchange"),
    ),
    ActionKind(
        "refund",
        hints=("refund",),
        done=rf"refunded|(?:issued|processed|{_FILED}) (?:a |the |your |an )?(?:full |partial )?refund|refund (?:has been|is|was) (?:now )?(?:issued|processed|{_FILED}|on its way)"
        rf"|{_nominal('refund')}|(?:you've|you have|you were|you've now) been refunded|being refunded",
        covers=("cancel", "return"),
    ),
    ActionKind(
        "recommend",
        hints=("recommend", "suggest"),
        done=r"recommended|I recommend|I'd recommend|I would recommend|I suggest|I'd suggest|suggested",
        base=r"recommend|suggest",
        advice_unnamed=True,
    ),
    ActionKind(
        "recommendation",
        hints=(
            "these",
            "this",
            "best",
            "top",
            "closest",
            "fit",
            "nothing",
            "find",
            "no ",
            "here",
            "none",
        ),
        done=r"these (?:fit|match|suit)|this (?:fits|matches|suits)|(?:best|top|closest) (?:match|matches|pick|picks|choice|option)|fits? (?:what you asked|your request)|here (?:are|is) (?:my|the|some|a few|two|three) (?:recommendations?|picks|options|suggestions|matches)",
        denial=r"\bnothing (?:\w+ ){0,2}(?:fits?|matche[sd]|match|suits?|suited|works?|worked)\b|\b(?:couldn't|could not|can't|cannot|didn't|did not|wasn't able to|unable to) (?:\w+ )?find (?:anything|any|a |one\b|something)|\bnone (?:of (?:them|these|those|the \w+) )?(?:fits?|matche[sd]|match|suits?|suited|works?|worked)\b|\b(?:have|had|got) no (?:recommendations?|suggestions?|picks?)\b|\bnothing to (?:recommend|suggest)\b"
        r"|\bno (?:products?|items?|options?|matches|match|alternatives?) (?:fits?|matche[sd]|match|suits?|(?:was|were|is|are) (?:found|available))",
        covers=("recommend",),
        needs_name=True,
    ),
    ActionKind(
        "address",
        hints=("address",),
        done=rf"(?:{_CHANGE}) (?:your |the )?(?:shipping |delivery |default |home )?address|address (?:has been |is |was )?(?:now )?(?:{_CHANGE})",
        covers=("address",),
    ),
    ActionKind(
        "payment",
        hints=("payment", "card"),
        done=rf"(?:{_CHANGE}) (?:your |the )?(?:default )?(?:payment(?: method)?|card)|(?:payment method|card) (?:has been |is |was )?(?:now )?(?:{_CHANGE})",
        covers=("payment",),
    ),
)
KINDS_BY_NAME = {kind.name: kind for kind in ACTION_KINDS}
# every kind's hints in one pattern: the kinds a clause may state, in one scan
HINT_KIND: dict[str, set[str]] = {}
for _kind in ACTION_KINDS:
    for _hint in _kind.hints:
        HINT_KIND.setdefault(_hint, set()).add(_kind.name)
_HINTS = re.compile("|".join(re.escape(h) for h in sorted(HINT_KIND, key=len, reverse=True)))
WRITE_KINDS = ("order", "add", "remove", "quantity", "cancel", "return", "exchange")
