# ruff: noqa: E501  (the patterns read best one per line)
"""Reading a message: sentences and clauses, and in each the reports and denials of an action
kind with what they name (`read_statements` -> `Statement`s)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ecomrlve.env.claims.kinds import _HINTS, ACTION_KINDS, HINT_KIND, WRITE_KINDS, ActionKind
from ecomrlve.env.claims.names import _WORD, Mentions, ProductNames

# "nothing changed", "I didn't change anything", "no changes were made": every write denied
_EVERYTHING_DENIED = re.compile(
    r"\bnothing (?:has |was |got |is )?(?:been )?(?:changed|modified|altered|touched|done|ordered|placed)\b(?! else)"
    r"|(?:n't|\bnot|\bnever)\s+(?:\w+\s+)?(?:(?:order|change|touch|modify|alter|do|place|buy|purchase)(?:d|ed)?|did|done|bought)(?:\s+or\s+\w+)?\s+(?:anything|a thing)\b(?! else)"
    r"|\bno changes?\b(?! (?:to|other|beyond|besides|except))"
    r"|\b(?:left|kept) (?:everything|(?:your |the )?(?:cart|orders?|account)) (?:as it was|as they were|unchanged|the same|as is|alone|untouched)\b"
    r"|\beverything (?:is|stays|remains) (?:as it was|unchanged|the same)\b",
    re.IGNORECASE,
)
_VERB_NEGATION = (
    r"not|never|neither|nor|unable|cannot|can't|couldn't|didn't|don't|doesn't|haven't|hasn't|"
    r"hadn't|wasn't|weren't|won't|isn't|aren't|wouldn't|shouldn't|impossible|ineligible|non"
)
# a done form is also denied by "no"/"nothing" ("nothing was cancelled", "no order was placed");
# a base form only by a negated verb ("no restocking fee on the return" denies nothing)
# words one of which each "everything denied" phrase holds beyond the kinds' hints
_EVERYTHING_HINTS = re.compile(
    r"left|kept|everything|untouched|unchanged|as it was|still|remain|stay"
    r"|ship|arriv|deliver|dispatch|sent out|on its way|on their way|in transit"
)
# a named order or product said to be as it was: every write on it denied ("I left order O1
# untouched", "O1 is unchanged"); said to be still open: its cancellation denied ("your
# order O1 is still active", "O1 remains open")
_UNTOUCHED = re.compile(
    r"\b(?:left|kept)\b(?: \w+){0,3} (?:untouched|unchanged|as it was|as they were|as is|alone|in place)\b"
    r"|\b(?:is|are|remains?|stays?)(?: still)? (?:untouched|unchanged|as it was|as they were)\b",
    re.I,
)
# (not a status: "O1 is still being processed" is the status before the cancel, a context
# fact the answer may state; only "active" / "open" say the order goes on)
_STILL_OPEN = re.compile(
    r"\b(?:is|are|remains?|stays?)(?: now)? still (?:active|open|in place)\b"
    r"|\b(?:remains?|stays?) (?:active|open|in place)\b",
    re.I,
)
# a named order said to be on its way or yet to ship or arrive: its cancellation denied ("your
# order O1 is pending and will ship soon", "it should arrive on June 3", "O1 is in transit");
# a clause about a refund or the money is not about the order going on ("the refund should
# arrive in 5-7 business days")
_STILL_GOING = re.compile(
    r"\b(?:will|should|shall|is going to|is expected to|is set to|is due to|is scheduled to)"
    r"(?: still| now)? (?:ship|arrive|be (?:shipped|delivered|dispatched|sent out))\b"
    r"|\b(?:is|are)(?: still| now)? (?:on (?:its|their) way|in transit|out for delivery)\b",
    re.I,
)
_MONEY_WORDS = re.compile(r"\b(?:refunds?|refunded|money|credit|payment|reimburse\w*)\b", re.I)
_NEGATION = re.compile(rf"\b(?:{_VERB_NEGATION}|no|nothing|none)\b", re.IGNORECASE)
_BASE_NEGATION = re.compile(rf"\b(?:{_VERB_NEGATION})\b", re.IGNORECASE)
_MODAL = re.compile(
    r"\b(?:can|could|may|might|must|should|would|will|shall|need|needs|to|want|wants|like|"
    r"you|you've|you'd|you're|you'll|i'll|we'll|they|they'll|it'll|be|able|please|eligible|how)\b",
    re.IGNORECASE,
)
_CONDITIONAL = re.compile(
    r"^\W*(?:if|once|when|whenever|unless|whether|until|before|after)\b", re.I
)
_DATE_AFTER = re.compile(
    r"^,?\s+(?:on|in|at|last|earlier|back|before|from|yesterday|today|this|\d+|\w+ (?:days?|weeks?|months?) ago"
    r"|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*"
    r"|mon\w*|tue\w*|wed\w*|thu\w*|fri\w*|sat\w*|sun\w*)\b",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# clause breaks: "," and "and" only where a new statement starts, not inside a list of the
# objects of one ("I've returned the jacket, the coffee and the boots" is one claim)
_NEW_SUBJECT = r"(?=(?:I|I've|I'd|I'm|we|we've|it|it's|they|you|there|nothing|none|no|your order|order|[A-Z]\d)\b)"
_CLAUSE = re.compile(
    r",\s+(?!(?:and\s+)?(?:the|a|an|your|its|their|plus)\b)|;\s+|\s+[—–]\s+"
    r"|\s+(?:but|so|because|since|although|though|while|whereas|however|then|as(?! (?:it was|they were|is|before)\b))\s+"
    rf"|\s+and\s+{_NEW_SUBJECT}",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"\b(?:it|its|them|they|that|this|those|these|one)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:I|I've|I'd|I'm|we|we've|we'd)\b")
_OFFER = re.compile(
    r"\b(?:would you like|do you want|shall I|should I|let me know|if you(?:'d)? like|if you want|"
    r"happy to|feel free|want me to|I can|I could)\b",
    re.IGNORECASE,
)
_DETERMINERS = frozenset(("the", "a", "an", "your", "my", "this", "that", "these", "those",
                          "any", "each", "its", "their"))  # fmt: skip
NEGATION_WINDOW = 6  # words between a negation and the verb it denies
_SUBJECTS = frozenset(("i", "i've", "i'd", "i'm", "we", "we've", "you", "you've", "they"))
MODAL_WINDOW = 2


@dataclass(frozen=True, slots=True)
class Statement:
    """One report (`denied` False) or denial of an action kind, with what it names."""

    kind: str
    denied: bool
    text: str
    names: Mentions
    first_person: bool
    sentence: str = ""


def _words_before(text: str, end: int, n: int) -> list[str]:
    return _WORD.findall(text[:end])[-n:]


def _negated(clause: str, start: int, negation: re.Pattern[str] = _NEGATION) -> bool:
    """A negation among the words before `start`, up to `NEGATION_WINDOW` of them and not
    beyond a subject that starts another statement ("not a problem I've cancelled it")."""
    for word in reversed(_words_before(clause, start, NEGATION_WINDOW)):
        if negation.fullmatch(word.rstrip("-")):
            return True
        if word.lower() in _SUBJECTS:
            return False
    return False


def read_statements(
    answer: str, names: ProductNames, orders: Iterable[str], items: set[str]
) -> list[Statement]:
    """Every report and denial of an action in `answer`, in order."""
    text = _plain(answer)
    order_ids = set(orders)
    out: list[Statement] = []
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    split: dict[int, list[str]] = {}

    def clauses_of(i: int) -> list[str]:
        if i not in split:
            split[i] = [c for c in _CLAUSE.split(sentences[i]) if c.strip()]
        return split[i]

    # what each clause names, read only for the sentences that state something (and the
    # ones an unnamed "it" may point back to)
    read: dict[tuple[int, int], Mentions] = {}

    def clause_names(i: int, k: int) -> Mentions:
        key = (i, k)
        if key not in read:
            read[key] = names.read(clauses_of(i)[k], order_ids, items)
        return read[key]

    def sentence_names(i: int) -> Mentions:
        for j in range(i, -1, -1):  # this sentence, else the nearest one before that names
            found = Mentions()
            for k in range(len(clauses_of(j))):
                m = clause_names(j, k)
                found.orders |= m.orders
                found.items |= m.items
                found.brands |= m.brands
                found.nouns |= m.nouns
            if found:
                return found
        return Mentions()

    for i, sentence in enumerate(sentences):
        # a question states nothing, but a statement before a question tag does ("I've
        # cancelled it, anything else?"): only the clause with the "?" is dropped
        question = sentence.endswith("?")
        if question and len(clauses_of(i)) == 1:
            continue
        lower = sentence.lower()
        if not _HINTS.search(lower) and not _EVERYTHING_HINTS.search(lower):
            continue  # no kind's word: nothing reported or denied (most fact sentences)
        if _EVERYTHING_DENIED.search(sentence) and not question:
            for kind in WRITE_KINDS:
                out.append(Statement(kind, True, sentence, Mentions(), True, sentence))
        clauses = clauses_of(i)
        for k, clause in enumerate(clauses[:-1] if question else clauses):
            lower = clause.lower()
            kinds = {k for h in _HINTS.findall(lower) for k in HINT_KIND[h]}
            found = [
                (kind, said)
                for kind in ACTION_KINDS
                if kind.name in kinds and (said := _statement(kind, clause, lower)) is not None
            ]
            untouched = _UNTOUCHED.search(clause)
            still_open = _STILL_OPEN.search(clause) or (
                _STILL_GOING.search(clause) and not _MONEY_WORDS.search(clause)
            )
            if not found and not untouched and not still_open:
                continue
            own = clause_names(i, k)
            # what an unnamed "it" refers to: the nearest clause before it that names
            # something, else one after it in the sentence, else the sentence before; a
            # clause naming nothing without a pronoun ("I've placed your order") is about
            # anything of its kind
            named = own
            if not named and _PRONOUN.search(clause):
                around = [*range(k - 1, -1, -1), *range(k + 1, len(clauses))]
                named = next(
                    (m for j in around if (m := clause_names(i, j))),
                    sentence_names(i - 1) if i else Mentions(),
                )
            first = bool(_FIRST_PERSON.search(clause))
            if named and (untouched or still_open):
                for kind in WRITE_KINDS if untouched else ("cancel",):
                    out.append(Statement(kind, True, clause, named, first, sentence))
            for kind, denied in found:
                if not denied and _is_offer(clause):
                    continue
                # a recommendation names its products in its own clause
                # (or, for "it fits your request", the product the pronoun points to)
                recommending = kind.covers == ("recommend",) and not denied
                subject = own if recommending and not _PRONOUN.search(clause) else named
                if kind.advice_unnamed and not denied and not own:
                    continue
                out.append(Statement(kind.name, denied, clause, subject, first, sentence))
    return out


# markdown emphasis and headings, bullets and emoji: formatting, not words
_MARKUP = re.compile(
    r"\*\*|__|`|^[ \t]*(?:#{1,6}|[-*+\u2022]|\d+[.)])[ \t]+|[\u2600-\u27bf\U0001f300-\U0001faff\ufe0f]",
    re.M,
)
# ways of saying an action was not done that hold no negation word: read as "did not"
_HELD_OFF = re.compile(
    r"\b(?:held|holding|hold) off (?:on|from)|\bdecided (?:against|not to)|\brefrained from"
    r"|\b(?:chose|opted) not to|\bdidn't go (?:ahead )?(?:through )?with|\bdid not go (?:ahead )?(?:through )?with",
    re.I,
)


def _plain(answer: str) -> str:
    """`answer` with curly quotes straightened, markup and emoji dropped, and "held off on"
    / "decided against" read as "did not"."""
    text = answer.replace("\u2019", "'").replace("\u2018", "'")
    text = _MARKUP.sub("", text)
    return _HELD_OFF.sub("did not", text)


def _is_offer(clause: str) -> bool:
    return bool(_OFFER.search(clause)) or bool(_CONDITIONAL.search(clause))


def _statement(kind: ActionKind, clause: str, lower: str) -> bool | None:
    """True: `clause` denies `kind`; False: it reports it; None: neither."""
    if kind.denial_re is not None and kind.denial_re.search(clause):
        return True
    for match in kind.done_re.finditer(clause):
        if _negated(clause, match.start()):
            return True
        before = _words_before(clause, match.start(), MODAL_WINDOW)
        if _MODAL.search(" ".join(before)):
            continue
        if " " not in match.group() and before and before[-1].lower() in _DETERMINERS:
            continue  # "the returned item", "your cancelled order": a description
        if kind.name == "order" and _DATE_AFTER.match(clause[match.end() :]):
            continue  # "your order placed on May 3": a date, not an action
        return False
    if kind.base_re is not None:
        for match in kind.base_re.finditer(clause):
            if _negated(clause, match.start(), _BASE_NEGATION):
                return True
            before = _words_before(clause, match.start(), 2)
            if before and (before[-1].lower() == "did" or before[-2:] == ["did", "indeed"]):
                return False  # "I did cancel it": an emphatic report
    return None
