# ruff: noqa: E501  (the patterns read best one per line)
"""Reading a message once: `Message(answer, names, orders, items, titles)` cuts it into
sentences of `Clause`s, each with its words, polarity and modality (`negated`, `conditional`,
`question`, `first_person`) and, read when asked, what it names (`names`), what it is about
(`subject`, pronouns resolved) and the actions it reports, promises or denies (`actions`);
`read_statements` turns them into the `Statement`s the claim check judges. Facts can read the
same clauses (one splitter, one negation).

A clause is read word by word against `kinds.FORMS` (every inflection of every kind's verbs and
nouns): an action is a kind's verb, or a kind's noun with an effect verb next to it ("pickup
… arranged", "scheduled a collection"; an effect verb right after another action's noun is
that noun's: "Exchange set up on order O1"), a kind's verb used as a noun with one ("put a
stop on O1"), a kind's noun said to be where its result lands ("the credit is now on your
account"), or a kind's noun the customer is told to expect ("Expect a cancellation email").
An order's noun after a preposition ("a refund for order O1") is what a statement is about,
not an order placed. An order taken "off" or "out of" a place by any verb ("knocked O1 off
your account") is cancelled; a product "got" for the customer ("got you the Lam mat") is
bought. Its polarity and modality come from the words before the verb: a negation (up to
`NEGATION_WINDOW` words back, not past a new subject) denies it; a future ("I'll", "will be",
"going to", "about to", "I'll be booking", carried over "and" to the verb joined to it)
promises it; a modal, "to", "you", an article ("the returned item"), an offer, a condition
("if", "once"; not "right after this") or a question leave it unsaid; a done form (past
tense, participle, "Cancellation confirmed") reports it. "anything" / "any of …" under a
negation, "before" or "without" in the agent's words, or "none of …" as the subject, deny
every write ("I couldn't complete any of your requests"), unless the clause is about what
was found, seen or charged.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from lemminflect import getAllInflections, getAllLemmas

from ecomrlve.env.claims.kinds import (
    BASE_TOO,
    CART,
    DONE_STATES,
    EFFECTS,
    FORMS,
    KINDS_BY_NAME,
    PHRASE_KINDS,
    WRITE_KINDS,
    ActionKind,
    Word,
)
from ecomrlve.env.claims.names import _WORD, Mentions, ProductNames

# a clause that denies every write: "nothing changed / was processed", "I didn't change
# anything", "no changes / no action", "your account is unchanged", "I left everything as it
# was", "I wasn't able to do that", "none of that could be done"
_STATE = (  # "as it was", "the way you left it": the state before, compared with now
    r"(?:unchanged|untouched|intact|the same|as is|alone"
    r"|(?:as|the way) (?:it|they|you|we|I) (?:was|were|left|had|found)(?: (?:it|them))?(?: before)?)"
)
_EVERYTHING_DENIED = re.compile(
    r"\bnothing(?: (?:on|in|with|to|about) (?:your|the) \w+)? (?:has |was |got |is |could )?(?:be |been )?(?:changed|modified|altered|touched|done|ordered|placed|processed|completed|submitted|made|updated)\b(?! else)"
    r"|(?:n't|\bnot|\bnever|\bunable to)\s+(?:\w+\s+){0,3}?(?:(?:change|touch|modify|alter|do|process|complete|make)(?:d|ed)?|did|done|doing|made)\s+(?:anything|a thing|any changes?|any of (?:that|this|it))\b(?! else)"
    r"|(?:n't|\bnot|\bunable to)\s+(?:\w+\s+){0,2}(?:do|did|done|complete|completed|process|processed|carry|carried|handle|handled|action|fulfil|fulfill|perform|performed)\s+(?:that|this|it|your request|the request|what you asked)\b(?!\s+(?:for|on|with) (?:the|your) \w)"
    r"|\b(?:your |the |that |this )?request (?:didn't|did not|couldn't|could not|wasn't|was not|has not|hasn't) (?:go through|gone through|(?:be|been) (?:processed|completed|done|fulfill?ed|carried out))"
    r"|(?:n't|\bnot|\bunable to)\s+(?:\w+\s+){0,2}make (?:that|this|it) happen"
    r"|\b(?:none of (?:that|this|it)|that|this) (?:could be|couldn't be|could not be|can't be|cannot be|wasn't|was not|was|has been|got) (?:done|processed|completed|carried out)"
    r"|\bno (?:changes?|updates?|modifications?|adjustments?|action|actions)\b(?! (?:to|other|beyond|besides|except|is needed|was needed|needed))"
    rf"|\b(?:left|kept) (?:everything|(?:your |the )?(?:cart|orders?|account)) {_STATE}"
    rf"|\b(?:everything|your (?:account|orders|cart)|all (?:of )?your orders)(?: is| are| remains?| stays?)(?: still| exactly| just)? {_STATE}",
    re.IGNORECASE,
)
# a named order or product said to be as it was: every write on it denied ("I left order O1
# untouched", "O1 is unchanged"); said to be still open: its cancellation denied
_UNTOUCHED = re.compile(
    r"\b(?:left|kept)\b(?: \w+){0,3} (?:untouched|unchanged|as it was|as they were|as is|alone|in place|intact)\b"
    r"|\b(?:is|are|remains?|stays?)(?: still| exactly| just)? (?:untouched|unchanged|intact|as it was|as they were)\b",
    re.I,
)
# (not a status: "O1 is still being processed" is the status before the cancel; only "active"
# / "open" say the order goes on)
_STILL_OPEN = re.compile(
    r"\b(?:is|are|remains?|stays?)(?: now)? still (?:active|open|in place)\b"
    r"|\b(?:remains?|stays?) (?:active|open|in place)\b",
    re.I,
)
# a named order said to be on its way or yet to ship or arrive: its cancellation denied; a
# clause about a refund or the money is not about the order going on
_STILL_GOING = re.compile(
    r"\b(?:will|should|shall|is going to|is expected to|is set to|is due to|is scheduled to)"
    r"(?: still| now)? (?:ship|arrive|be (?:shipped|delivered|dispatched|sent out))\b"
    r"|\b(?:is|are)(?: still| now)? (?:on (?:its|their) way|in transit|out for delivery)\b",
    re.I,
)
# the words of polarity and modality (lower case, as `_WORD` splits them)
NEGATIONS = frozenset(("not", "never", "neither", "nor", "unable", "cannot", "can't", "couldn't",
    "didn't", "don't", "doesn't", "haven't", "hasn't", "hadn't", "wasn't", "weren't", "won't",
    "isn't", "aren't", "wouldn't", "shouldn't", "impossible", "ineligible", "non", "no",
    "nothing", "none", "without", "n't"))  # fmt: skip
_BEFORE_DONE_ONLY = frozenset(("no", "nothing", "none", "without"))  # "no refund fee" denies none
FUTURE = frozenset(("will", "i'll", "we'll", "it'll", "they'll", "shall", "gonna", "you'll",
                    "that'll"))  # fmt: skip
_MODALS = frozenset(("can", "could", "may", "might", "must", "should", "would", "need", "needs",
    "to", "want", "wants", "like", "you", "you've", "you'd", "you're", "they", "be", "able",
    "please", "eligible", "how", "i'd", "we'd", "let"))  # fmt: skip
_DATE_AFTER = re.compile(
    r"^,?\s+(?:on|in|at|last|earlier|back|before|from|yesterday|today|this|\d+|\w+ (?:days?|weeks?|months?) ago"
    r"|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*"
    r"|mon\w*|tue\w*|wed\w*|thu\w*|fri\w*|sat\w*|sun\w*)\b",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# clause breaks: "," and "and" only where a new statement starts, not inside a list of the
# objects of one ("I've returned the jacket, the coffee and the boots" is one claim)
_NEW_SUBJECT = r"(?=(?:I|I've|I'd|I'm|I'll|we|we've|it|it's|they|you|there|nothing|none|no|your order|order\s+[A-Z]\d|[A-Z]\d)\b)"
_CLAUSE = re.compile(
    # (not before a label: "Order O1 — status: cancelled" is one statement about O1)
    r",\s+(?!(?:and\s+)?(?:the|a|an|your|its|their|plus)\b)|;\s+|\s+[—–]\s+(?!\w+(?:\s\w+)?:\s)"
    r"|\s+(?:but|so|because|since|although|though|while|whereas|however|then)\s+"
    # "as" joins a statement only before its subject ("… as it has shipped"); "shows as
    # cancelled", "marked as delivered" say how the order stands, in one clause
    rf"|\s+and\s+{_NEW_SUBJECT}|\s+as\s+(?!(?:it was|they were)\b){_NEW_SUBJECT}",
    re.IGNORECASE,
)
_COMMA_MASK = "\u201a"  # a title's comma while clauses are split ("grey, size M")
# words that gate a pattern (a clause without any of them cannot match it) and word classes
# fmt: off
_PRONOUNS = frozenset(("it", "its", "it's", "them", "they", "they're", "that", "that's", "this",
                       "those", "these", "one"))
# an object set against what was named before: "the rest", "the other items", "everything else"
_CONTRAST = frozenset(("rest", "other", "others", "remaining", "else"))
_FIRST_PERSON = frozenset(("i", "i've", "i'd", "i'm", "i'll", "we", "we've", "we'd", "we'll"))
_OPENERS = frozenset(("if", "once", "when", "whenever", "unless", "whether", "until", "before",
                      "after"))
_CONDITIONS = frozenset(("once", "after", "if", "when", "unless", "until"))
_DEICTIC = (["this"], ["that"])  # "right after this": now, not a condition
_MONEY_WORDS = frozenset(("refund", "refunds", "refunded", "money", "credit", "payment",
                          "reimburse", "reimbursed", "reimbursement"))
_UNTOUCHED_WORDS = frozenset(("untouched", "unchanged", "intact", "alone", "as", "place"))
_STILL_WORDS = frozenset(("still", "remain", "remains", "stay", "stays"))
_GOING_WORDS = frozenset(("ship", "arrive", "shipped", "delivered", "dispatched", "sent", "way",
                          "transit", "delivery"))
_NEGATION_GATE = NEGATIONS | {"request", "unable"}
_STATE_WORDS = frozenset(("unchanged", "untouched", "intact", "same", "alone", "as", "way"))
_WHOLE_WORDS = frozenset(("left", "kept", "everything", "account", "orders", "cart"))
# fmt: on
_ACTION_WORDS = frozenset(
    [w for w, words in FORMS.items() if any(x.role != "noun" for x in words)]
    + [h for kind in PHRASE_KINDS for h in kind.hints]
)
_NOUN_WORDS = frozenset(w for w, words in FORMS.items() if any(x.role == "noun" for x in words))
_KIND_WORDS = frozenset(w for w, words in FORMS.items() if any(x.role != "effect" for x in words))
_NOUN_PARTNERS = DONE_STATES | NEGATIONS
_LAND_WORDS = frozenset(w for kind in KINDS_BY_NAME.values() for w in kind.lands)


_OFFER = re.compile(
    r"\b(?:would you like|do you want|shall I|should I|let me know|if you(?:'d)? like|if you want|"
    r"happy to|feel free|want me to|I can|I could)\b",
    re.IGNORECASE,
)
_DETERMINERS = frozenset(("the", "a", "an", "your", "my", "this", "that", "these", "those",
                          "any", "each", "its", "their"))  # fmt: skip
_BE_FORMS = frozenset(("is", "are", "was", "were", "be", "been", "now"))
# a kind's word that is a noun too is one after these or before an id ("for order O1")
_PREPOSITIONS = frozenset(("for", "of", "on", "from", "with", "in", "about", "new"))
_REFERENCE_PREPOSITIONS = frozenset(("for", "of", "on", "from", "with", "in", "about", "to",
                                     "under"))  # fmt: skip


def _is_id(word: str) -> bool:
    """An order or product id ("o1001", "i0000005"): a letter then digits."""
    return len(word) > 2 and word[0].isalpha() and word[1:].isdigit()


_SPECIFIC = frozenset(("your", "the", "this", "my", "that"))  # "your return is confirmed"
_SUBJECTS = frozenset(("i", "i've", "i'd", "i'm", "i'll", "we", "we've", "you", "you've", "they"))
NEGATION_WINDOW = 6  # words between a negation and the verb it denies
FUTURE_WINDOW = (
    6  # words between "will" and the verb it promises ("I'll make sure O1 gets cancelled")
)
NOUN_AFTER = (
    10  # words from an action's noun to the effect verb after it ("return … will be processed")
)
NOUN_BEFORE = (
    4  # words from an effect verb to the action's noun after it ("scheduled a collection")
)
PARTICLE_WINDOW = 6  # words between "call" and "off", "sent the jacket (I0012) back"


@dataclass(frozen=True, slots=True)
class Statement:
    """One report (`denied` False), promise (`promised`) or denial of an action kind, with what
    it names."""

    kind: str
    denied: bool
    text: str
    names: Mentions
    first_person: bool
    sentence: str = ""
    promised: bool = False


Mode = str  # "reported", "promised" or "denied"


# an amount said to come back or to show up where the customer keeps money is money paid
# back ("$47.99 back on your card", "the $20 will show up on your statement"): read as the
# word "money" (an amount that costs or totals something is no refund: left as it is)
_AMOUNT = re.compile(
    r"(?:(?:US)?\$\s?\d[\d,]*(?:\.\d+)?|\b(?:\d[\d,]*(?:\.\d+)?|[a-z]+(?:-[a-z]+)?)"
    r" (?:dollars?|bucks|usd)\b(?: and [\w-]+ cents?\b)?)"
    r"(?=(?:\s+[\w']+){0,4}?\s+(?:back|show|shows|appear|appears|post|posts)\b)",
    re.I,
)


def words_of(text: str) -> list[str]:
    """The words of `text` in lower case, an action word's "'s" read as "is" ("pickup's
    booked"), an amount as "money"."""
    out = []
    if (" back" in text or " show" in text or " appear" in text or " post" in text) and (
        "$" in text or "ollar" in text or "bucks" in text or "USD" in text
    ):
        text = _AMOUNT.sub("money", text)
    for word in _WORD.findall(text.lower()):
        if word.endswith("'s") and word[:-2] in FORMS:
            out += [word[:-2], "is"]
        else:
            out.append(word)
    return out


class Clause:
    """One clause of a message, read once: its text and words (lower case), its sentence and
    whether that sentence asks; its polarity and modality (`negated`, `conditional` for "if …"
    and offers, `first_person`); and, read when asked, what it names (`names`), what an unnamed
    "it" in it points to (`subject`) and the actions it reports, promises or denies
    (`actions`). The one reading of the message that claims (and facts) consume."""

    __slots__ = ("_actions", "_message", "_names", "index", "position", "question", "sentence",
                 "text", "words")  # fmt: skip

    def __init__(self, message: Message, text: str, sentence: str, index: int, position: int):
        self._message = message
        self.text = text.replace(_COMMA_MASK, ",")
        self.words = words_of(self.text)
        self.sentence = sentence
        self.index = index  # of its sentence
        self.position = position  # in its sentence
        self.question = sentence.endswith("?")
        self._names: Mentions | None = None
        self._actions: list[tuple[ActionKind, Mode]] | None = None

    @property
    def negated(self) -> bool:
        return any(w in NEGATIONS or w.endswith("n't") for w in self.words)

    @property
    def conditional(self) -> bool:
        """Opens with "if", "once", "when" …, or offers ("I can …", "let me know if …")."""
        opens = bool(self.words) and self.words[0] in _OPENERS
        return opens or bool(_OFFER.search(self.text))

    @property
    def first_person(self) -> bool:
        return not _FIRST_PERSON.isdisjoint(self.words)

    @property
    def names(self) -> Mentions:
        """The orders, products, brands and product types the clause itself names."""
        if self._names is None:
            message = self._message
            self._names = message.product_names.read(self.text, message.orders, message.items)
        return self._names

    @property
    def subject(self) -> Mentions:
        """What the clause is about: what it names, else, for a pronoun ("it", "them" …), the
        nearest clause before it in the sentence that names something, else one after it,
        else the sentence before; a clause naming nothing without a pronoun ("I've placed your
        order") is about anything, and so is one that sets its object against what came before
        ("I took it out and ordered the rest / the other items / everything else")."""
        if self.names or _PRONOUNS.isdisjoint(self.words) or not _CONTRAST.isdisjoint(self.words):
            return self.names
        clauses = self._message.sentences[self.index]
        k = self.position
        around = [*range(k - 1, -1, -1), *range(k + 1, len(clauses))]
        found = next((m for j in around if (m := clauses[j].names)), None)
        return found if found is not None else self._message.sentence_names(self.index - 1)

    @property
    def actions(self) -> list[tuple[ActionKind, Mode]]:
        """The action kinds the clause reports, promises or denies (rules at the top)."""
        if self._actions is None:
            present = set(self.words)
            # a noun with a partner, a place it lands or "back" ("$20 back on your Visa")
            partnered = "back" in present or not (
                present.isdisjoint(_NOUN_PARTNERS) and present.isdisjoint(_LAND_WORDS)
            )
            gated = not present.isdisjoint(_ACTION_WORDS) or (
                partnered and not present.isdisjoint(_NOUN_WORDS)
            )
            self._actions = read_clause(self.text, self.words) if gated else []
        return self._actions


class Message:
    """A final message cut into sentences of `Clause`s (`sentences`, and flat in `clauses`),
    read against the episode's `orders` and `items` and the catalog's `product_names`.
    `titles`: product titles whose commas do not break a clause ("… - grey, size M")."""

    def __init__(
        self,
        answer: str,
        product_names: ProductNames,
        orders: Iterable[str] = (),
        items: set[str] | None = None,
        titles: Iterable[str] = (),
    ):
        self.product_names = product_names
        self.orders = set(orders)
        self.items = items if items is not None else set()
        text = _plain(answer)
        for title in titles:
            if "," in title and title in text:
                text = text.replace(title, title.replace(",", _COMMA_MASK))
        self.sentences: list[list[Clause]] = []
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            parts = [c for c in _CLAUSE.split(sentence) if c.strip()] if sentence else []
            if parts:
                said = sentence.replace(_COMMA_MASK, ",")
                index = len(self.sentences)
                self.sentences.append(
                    [Clause(self, part, said, index, k) for k, part in enumerate(parts)]
                )
        self.clauses = [c for clauses in self.sentences for c in clauses]

    def sentence_names(self, i: int) -> Mentions:
        """What sentence `i` names, else the nearest sentence before it that names something."""
        for j in range(i, -1, -1):
            found = Mentions()
            for clause in self.sentences[j]:
                m = clause.names
                found.orders |= m.orders
                found.items |= m.items
                found.brands |= m.brands
                found.nouns |= m.nouns
            if found:
                return found
        return Mentions()


def read_statements(
    answer: str,
    names: ProductNames,
    orders: Iterable[str],
    items: set[str],
    titles: Iterable[str] = (),
) -> list[Statement]:
    """Every report, promise and denial of an action in `answer`, in order."""
    out: list[Statement] = []
    for clauses in Message(answer, names, orders, items, titles).sentences:
        # a question states nothing, but a statement before a question tag does ("I've
        # cancelled it, anything else?"): only the clause with the "?" is dropped
        sentence = clauses[0].sentence
        if clauses[0].question:
            clauses = clauses[:-1]
        elif _everything_denied(sentence):
            out += [
                Statement(kind, True, sentence, Mentions(), True, sentence) for kind in WRITE_KINDS
            ]
        for clause in clauses:
            out += _statements(clause)
            if _denies_any(clause):
                out += [
                    Statement(k, True, clause.text, Mentions(), True, sentence) for k in WRITE_KINDS
                ]
    return out


# "anything", "any of it", "any of your requests" (words that live under a negation) after a
# negation, "before" or "without", said by the agent or of "none of …": every write denied
# ("I couldn't complete any of your requests", "none of the updates went through", "I stopped
# before changing anything"); not what was looked for or charged ("I couldn't find anything")
_LICENSORS = NEGATIONS | {"before", "without"}
_NOT_WRITES = frozenset(("find", "found", "see", "saw", "seen", "locate", "located", "charge",
    "charged", "pay", "paid", "cost", "owe", "need", "needed", "know", "knew", "recommend",
    "suggest", "suggested", "recommended", "notice", "noticed", "spot", "spotted", "miss",
    "missed", "match", "matched", "fit", "fits", "show", "showed", "shown", "hear", "heard",
    "else", "wrong",
    "more", "extra", "further", "other"))  # fmt: skip


def _denies_any(clause: Clause) -> bool:
    words = clause.words
    if clause.question or clause.conditional or clause.actions or not _NOT_WRITES.isdisjoint(words):
        return False
    for k, word in enumerate(words):
        universal = word == "anything" or (
            word in ("any", "none") and words[k + 1 : k + 2] == ["of"]
        )
        if not universal:
            continue
        if word == "none":
            return k == 0  # "none of the updates went through"
        licensed = any(w in _LICENSORS or w.endswith("n't") for w in words[:k])
        return licensed and clause.first_person
    return False


def _statements(clause: Clause) -> list[Statement]:
    found = clause.actions
    present = set(clause.words)
    if not present.isdisjoint(_GET) and "you" in present and not found:
        found = _got_you(clause)
    if not found and clause.first_person:
        found = _acted_on_product(clause)
    text = clause.text
    untouched = not present.isdisjoint(_UNTOUCHED_WORDS) and _UNTOUCHED.search(text)
    still_open = (not present.isdisjoint(_STILL_WORDS) and _STILL_OPEN.search(text)) or (
        not present.isdisjoint(_GOING_WORDS)
        and _STILL_GOING.search(text)
        and present.isdisjoint(_MONEY_WORDS)
    )
    if not found and not untouched and not still_open:
        return []
    out: list[Statement] = []
    own, named = clause.names, clause.subject
    first, sentence = clause.first_person, clause.sentence
    if named and (untouched or still_open):
        for kind in WRITE_KINDS if untouched else ("cancel",):
            out.append(Statement(kind, True, text, named, first, sentence))
    for kind, mode in found:
        if mode != "denied" and clause.conditional:
            continue
        # a recommendation names its products in its own clause (or, for "it fits your
        # request", the product the pronoun points to); naming none, it is advice
        recommending = kind.covers == ("recommend",) and mode != "denied"
        subject = own if recommending and _PRONOUNS.isdisjoint(present) else named
        if kind.advice_unnamed and mode != "denied" and not own:
            continue
        denied, promised = mode == "denied", mode == "promised"
        out.append(Statement(kind.name, denied, text, subject, first, sentence, promised))
    return out


_GET = frozenset(("get", "got", "gotten", "getting", "gets"))
# verbs of looking, choosing and telling: what an agent does to a product without a write
_LOOKED = frozenset(("found", "checked", "looked", "searched", "compared", "saw", "seen",
    "noticed", "viewed", "reviewed", "verified", "confirmed", "picked", "chose", "chosen",
    "selected", "shortlisted", "pulled", "located", "spotted", "considered", "included",
    "listed", "mentioned", "flagged", "linked", "noted", "shared", "matched", "filtered",
    "narrowed", "sorted", "ranked", "rated", "liked", "loved", "thought", "felt", "read",
    "explored", "browsed", "tried", "double-checked", "tracked", "traced", "asked", "told",
    "showed", "shown", "highlighted", "described", "kept", "left", "paid", "charged"))  # fmt: skip


_LOOKED_LEMMAS = frozenset(
    lemma for word in _LOOKED for lemma in getAllLemmas(word, upos="VERB").get("VERB", ())
) | {"have", "be", "do", "let", "help", "need", "want", "hope", "think", "see", "make"}


def _acted_on_product(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """ "I snapped up the Lam coral mat", "I've grabbed the jacket for you": a done verb of no
    kind the reader knows, right after the agent, with a catalog product as its object, gets
    the product (the `obtain` kind: true after an order or a cart addition of it)."""
    names = clause.names
    if not (names.items or names.brands):
        return []
    words = clause.words
    for k, word in enumerate(words[:-1]):
        if word not in _FIRST_PERSON:
            continue
        for v in range(k + 1, min(len(words) - 1, k + 4)):
            verb = words[v]
            form = None if verb in FORMS else _verb_form(verb)
            if form is None:
                continue
            if _LOOKED_LEMMAS & set(getAllLemmas(verb, upos="VERB").get("VERB", ())):
                return []  # "I checked the …", "I'll compare the …": no write
            if words[v + 1] in _DETERMINERS or words[v + 1] in ("up", "in"):
                mode = _mode(words, v, form, KINDS_BY_NAME["obtain"], clause.text, None)
                return [(KINDS_BY_NAME["obtain"], mode)] if mode is not None else []
        return []
    return []


def _got_you(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """ "I got you the Lam coral mat", "I'll get you the jacket": a product got for the
    customer is bought (a product of the catalog named in the clause)."""
    words = clause.words
    for k, word in enumerate(words[:-2]):
        if word in _GET and words[k + 1] == "you" and words[k + 2] in _DETERMINERS:
            named = clause.names
            if named.items or named.brands:
                form = "base" if word == "get" else "ing" if word == "getting" else "done"
                mode = _mode(words, k, form, KINDS_BY_NAME["order"], clause.text, None)
                return [(KINDS_BY_NAME["order"], mode)] if mode is not None else []
    return []


def _everything_denied(sentence: str) -> bool:
    words = set(_WORD.findall(sentence.lower()))
    negated = not _NEGATION_GATE.isdisjoint(words) or any(w.endswith("n't") for w in words)
    stated = not (_STATE_WORDS.isdisjoint(words) or _WHOLE_WORDS.isdisjoint(words))
    return (negated or stated) and bool(_EVERYTHING_DENIED.search(sentence))


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


def read_clause(clause: str, words: list[str] | None = None) -> list[tuple[ActionKind, Mode]]:
    """The action kinds `clause` (its `words` in lower case) reports, promises or denies
    (rules at the top)."""
    if words is None:
        words = words_of(clause)
    present = set(words)
    hits = [(k, w) for k, word in enumerate(words) for w in FORMS.get(word, ())]
    out: dict[str, Mode] = {}
    for kind in PHRASE_KINDS:  # said in set phrases: only where one of their words is
        if present.isdisjoint(kind.hints):
            continue
        if kind.denial_re is not None and kind.denial_re.search(clause):
            out[kind.name] = "denied"
        elif kind.phrases_re is not None and kind.phrases_re.search(clause):
            out.setdefault(kind.name, "reported")
    if not hits:
        return [(KINDS_BY_NAME[name], mode) for name, mode in out.items()]
    by_index: dict[int, list[Word]] = {}
    for k, word in hits:
        by_index.setdefault(k, []).append(word)
    for k, word in hits:
        if word.role == "effect":
            continue
        kind = KINDS_BY_NAME[word.kind]
        if (kind.context and present.isdisjoint(kind.context)) or not present.isdisjoint(
            kind.excludes
        ):
            continue
        if word.role == "state":
            lead = word.lemma.split()[:-1]  # "on" of "on order"
            start = k - len(lead)
            if words[start:k] != lead or _BE_FORMS.isdisjoint(words[max(0, start - 2) : start]):
                continue
            if lead and _is_id(words[k + 1] if k + 1 < len(words) else ""):
                continue  # "the jacket is on order O1": a part of the order, no purchase
            at, form, noun_at = k, "done", None
        elif word.role == "verb":
            after = words[k + 1] if k + 1 < len(words) else ""
            before = words[k - 1] if k else ""
            noun = (
                before in _DETERMINERS
                or before in _KIND_WORDS
                or (words[k] in _NOUN_WORDS and (before in _PREPOSITIONS or _is_id(after)))
            )
            if noun:
                # "I've put a stop on O1": a kind's verb as a noun, with an effect verb
                found = _nominal(words, k, word, kind, by_index) if before in _ARTICLES else None
                if found is None:
                    continue  # "your order", "cancel order O1", "for order O1": a noun
                at, form, noun_at = found
                mode = _mode(words, at, form, kind, clause, noun_at)
                if mode is not None and (out.get(kind.name) != "denied" or mode == "denied"):
                    out[kind.name] = mode
                continue
            if word.particle and word.particle not in words[k + 1 : k + 1 + PARTICLE_WINDOW]:
                continue
            at, form, noun_at = k, word.form, None
        else:
            if _referenced(words, k, word):
                continue  # "a refund for your order O1": the order is where, not what
            found = (
                _paid_back(words, k, kind)
                or _effect_of(words, k, kind, by_index)
                or _landed(words, k, kind)
            )
            if found is None and (expected := _expected(words, k, kind, clause)) is not None:
                if out.get(kind.name) != "denied":
                    out[kind.name] = expected
                continue
            if found is None:
                if _noun_negated(words, k):
                    out[kind.name] = "denied"  # "not returnable", "not eligible for a return"
                continue
            at, form, noun_at = found
        mode = _mode(words, at, form, kind, clause, noun_at)
        if mode is not None and (out.get(kind.name) != "denied" or mode == "denied"):
            out[kind.name] = mode
    if "cancel" not in out and ("off" in present or "out" in present):
        removed = _taken_off(words)
        if removed is not None:
            mode = _mode(words, *removed, KINDS_BY_NAME["cancel"], clause, None)
            if mode is not None:
                out["cancel"] = mode  # an order taken off is cancelled, not taken out of a cart
                out.pop("remove", None)
    return [(KINDS_BY_NAME[name], mode) for name, mode in out.items()]


def _effect_of(
    words: list[str], k: int, kind: ActionKind, at: dict[int, list[Word]]
) -> tuple[int, str, int] | None:
    """The effect verb that brings the noun at `k` about, as (its index, its form, k): one
    after the noun ("the pickup was arranged", "refund issued", "the exchange is complete")
    or before it with no other action noun between ("I've scheduled a collection"). `at`:
    the words of `FORMS` by index."""
    allowed = kind.effects or EFFECTS
    after = range(k + 1, min(len(words), k + 1 + NOUN_AFTER))
    before = range(k - 1, max(-1, k - 1 - NOUN_BEFORE), -1)
    for span in (after, before):
        for j in span:
            done = words[j] in DONE_STATES and (words[j] != "set" or "all" in words[k:j])
            if words[j] == "way" and words[j - 2 : j - 1] != ["on"]:
                done = False  # "on its way", not "the way you left it"
            if span is after and done:
                return j, "done", k
            here = at.get(j, ())
            if span is after and _noun_phrase_head(words, j):
                continue  # "the sheet set", "a gift set": a product's noun, not a verb
            for w in here:
                if w.role != "effect" or w.lemma not in allowed or not _particle_ok(words, j, w):
                    continue
                if span is after and w.form == "base" and words[j - 1] not in FUTURE:
                    continue  # "a return request": a noun ("the order will go through": a verb)
                if w.lemma == "make" and words[j + 1 : j + 2] == ["sure"]:
                    continue  # "make sure": no action
                if span is before and _noun_before(words, j, at):
                    continue  # "Exchange set up on order O1": the exchange's verb
                return j, w.form, k
            if any(w.role == "noun" and not _referenced(words, j, w) for w in here):
                break  # another action's noun: its own verb
    return None


def _noun_phrase_head(words: list[str], j: int) -> bool:
    """Whether the word at `j` ends a noun phrase: a determiner right before it ("the set
    would come to $20"), or two words back with a word between that is no action's word and no
    form of "be" ("the sheet set would cost $20", "your gift set"), as against "the refund was
    set up" or "the card updated"."""
    if j >= 1 and words[j - 1] in _DETERMINERS:
        return True  # "the set would come to $20"
    return (
        j >= 2
        and words[j - 2] in _DETERMINERS
        and words[j - 1] not in FORMS
        and words[j - 1] not in _BE_FORMS
    )


_ARTICLES = frozenset(("a", "an", "the"))
_RECEIVE = frozenset(("expect", "receive", "get", "see"))


def _expected(words: list[str], k: int, kind: ActionKind, clause: str) -> Mode | None:
    """A kind's noun the customer is told to expect or will receive ("Expect a cancellation
    email", "you'll receive your refund"): its action promised (denied under a negation)."""
    for j in range(k - 1, max(-1, k - 4), -1):
        if words[j] in _RECEIVE:
            if _negated(words, j, "base"):
                return "denied"
            if j == 0 and not _conditioned(words):
                return "promised"  # told to expect it: an imperative
            return _mode(words, j, "base", kind, clause, None) if j else None
        if words[j] not in _DETERMINERS and words[j] not in FORMS:
            return None
    return None


def _nominal(
    words: list[str], k: int, word: Word, kind: ActionKind, at: dict[int, list[Word]]
) -> tuple[int, str, int] | None:
    """A kind's verb in its base form used as a noun after an article, with an effect verb
    ("I've put a stop on O1", "we did a swap"), as `_effect_of` finds it; None when the word
    is the kind's noun too (read as one) or no effect verb is near."""
    if word.form != "base" or any(x.role == "noun" and x.kind == kind.name for x in at[k]):
        return None
    return _effect_of(words, k, kind, at)


# the words of a verb between a noun and where it lands ("is now", "has gone", "landed")
_LAND_VERBS = frozenset(("is", "are", "was", "were", "be", "been", "has", "have", "had", "went",
                         "gone", "got", "came", "come", "now", "show", "shows", "appear",
                         "appears", "post", "posts"))  # fmt: skip
_LAND_PREPOSITIONS = frozenset(("on", "in", "into", "onto", "back"))
_HEDGES = frozenset(("can", "could", "may", "might", "must", "should", "would"))


def _landed(words: list[str], k: int, kind: ActionKind) -> tuple[int, str, int] | None:
    """Where the result of the noun at `k` is said to be (`kind.lands`): "the credit is now
    on your account", "the money went back to your card" (as (the place's index, "done", k));
    None when no verb says so, or a modal hedges it ("should be on your card")."""
    if not kind.lands:
        return None
    said = False
    for j in range(k + 1, min(len(words), k + 1 + NOUN_AFTER)):
        word = words[j]
        if word in _HEDGES:
            return None
        if word in _LAND_VERBS or word.endswith(("ed", "n't")):
            said = True
        elif word in kind.lands and said:
            lead = words[max(k + 1, j - 3) : j]
            if not _LAND_PREPOSITIONS.isdisjoint(lead) or lead[-2:-1] == ["back"]:
                return j, "done", k
    return None


def _paid_back(words: list[str], k: int, kind: ActionKind) -> tuple[int, str, int] | None:
    """The noun at `k` (money: an amount is read as "money") said to come back, as ("back"'s
    index, "done", k): "your money back", "$20 is going back to your card", "you're getting
    $20 back on your Visa". None for a kind whose result lands nowhere, or no "back" next."""
    if not kind.lands or words[k].endswith("s"):
        return None  # (plural: "refunds go back to the card": the rule)
    j, end = k + 1, min(len(words), k + 4)
    while j < end:
        word = words[j]
        if word == "back":
            return j, "done", k
        if words[j : j + 3] in (["on", "its", "way"], ["on", "the", "way"]):
            j, end = j + 3, min(len(words), end + 3)  # "is on its way back to your card"
            continue
        if word in _PLACES or word in _LAND_PREPOSITIONS or word in kind.lands:
            return None
        if word.endswith("s") and word not in ("is", "was", "has"):
            return None  # "the money goes back to your card within 7 days": the rule
        j += 1
    return None


# a verb's object taken "off" or "out of" somewhere: removed ("I took O1 off your account",
# "O1 was pulled out of the queue"); an order removed is cancelled. The particle must lead to
# a place ("off your account"), not a time or a door ("dropped off on May 3", "at your door")
_ORDER_WORDS = frozenset(("order", "orders", "your", "the", "that", "this"))
CART_WORDS = frozenset(CART)
_PLACES = frozenset(("your", "the", "our", "my", "its", "their", "this", "that"))


def _taken_off(words: list[str]) -> tuple[int, str] | None:
    """(the verb's index, its form) of an order taken off or out of a place, or None."""
    for p, word in enumerate(words):
        place = words[p + 1 : p + 2] if word == "off" else words[p + 2 : p + 3]
        if word not in ("off", "out") or (word == "out" and words[p + 1 : p + 2] != ["of"]):
            continue
        if not place or place[0] not in _PLACES or not CART_WORDS.isdisjoint(words[p:]):
            continue  # (out of the cart: the remove kind's)
        # active: a verb, its order (1-3 words), the particle ("knocked order O1 off")
        for v in range(max(0, p - 4), p - 1):
            between = words[v + 1 : p]  # the order and nothing else: "your order O1", "it"
            named = any(_is_id(w) or w in ("order", "orders") for w in between)
            if named and all(_is_id(w) or w in _ORDER_WORDS for w in between):
                form = _verb_form(words[v])
                if form is not None:
                    return v, form
        # passive: an order named before "was / got <verb> off"
        v = p - 1
        named = any(_is_id(w) or w in ("order", "orders") for w in words[:v])
        passive = v > 0 and named and words[v - 1] in ("was", "were", "got", "been", "be", "is")
        if passive and _verb_form(words[v]) == "done":
            return v, "done"
    return None


def _verb_form(word: str) -> str | None:
    """The form of `word` as some English verb's ("knocked": done), None if it is none."""
    for lemma in getAllLemmas(word, upos="VERB").get("VERB", ()):
        forms = getAllInflections(lemma, upos="VERB")
        if word in forms.get("VBD", ()) or word in forms.get("VBN", ()):
            return "done"
        if word == lemma:
            return "base"
    return None


def _referenced(words: list[str], k: int, word: Word) -> bool:
    """An order's noun after a preposition ("for order O1", "of your order"): the order a
    statement is about, not an order being placed."""
    if word.kind != "order":
        return False
    before = words[max(0, k - 2) : k]
    if before and before[-1] in _SPECIFIC:
        before = before[:-1]
    return bool(before) and before[-1] in _REFERENCE_PREPOSITIONS


def _noun_before(words: list[str], j: int, at: dict[int, list[Word]]) -> bool:
    """An action noun up to `NOUN_BEFORE` words before the effect verb at `j`, its subject
    ("Exchange set up on order O1", "the refund was issued for your order"), with no subject
    between ("the return is open and I've booked a pickup")."""
    for i in range(j - 1, max(-1, j - 1 - NOUN_BEFORE), -1):
        if words[i] in _SUBJECTS:
            return False
        if any(w.role == "noun" for w in at.get(i, ())):
            return True
    return False


def _particle_ok(words: list[str], j: int, word: Word) -> bool:
    return not word.particle or word.particle in words[j + 1 : j + 1 + PARTICLE_WINDOW]


def _negated(words: list[str], at: int, form: str) -> bool:
    """A negation among the words before `at`, up to `NEGATION_WINDOW` of them and not beyond
    a subject that starts another statement ("not a problem I've cancelled it"); "no",
    "nothing" deny only a done form."""
    for word in reversed(words[max(0, at - NEGATION_WINDOW) : at]):
        if word in NEGATIONS or word.endswith("n't"):
            return form == "done" or word not in _BEFORE_DONE_ONLY
        if word in _SUBJECTS:
            return False
    return False


def _noun_negated(words: list[str], k: int) -> bool:
    """A negation right before the noun at `k` (up to three words, no verb between): "not
    returnable", "ineligible for a return"; not "I did not cancel any order"."""
    for word in reversed(words[max(0, k - 3) : k]):
        if word in FORMS or word in _SUBJECTS:
            return False
        if word in NEGATIONS or word.endswith("n't"):
            return word not in _BEFORE_DONE_ONLY
    return False


def _mode(
    words: list[str], at: int, form: str, kind: ActionKind, clause: str, noun_at: int | None
) -> Mode | None:
    """Whether the action whose verb (or effect verb) is at `at` is reported, promised, denied
    or left unsaid (None)."""
    start = min(at, noun_at) if noun_at is not None else at
    if _negated(words, at, "done" if noun_at is not None else form) or (
        noun_at is not None and noun_at < at and _negated(words, noun_at, form)
    ):
        return "denied"
    before = words[max(0, start - 3) : start]
    # "will be cancelled", "I'll cancel", "I'm going to start the return", "about to order"
    aux = words[max(0, start - FUTURE_WINDOW) : at]
    if start and words[start - 1] in ("and", "then"):
        aux = words[:at]  # "I'm going to add the jacket and check out": both promised
    future = any(w in FUTURE for w in aux) or any(
        a in ("going", "about") and b == "to" for a, b in itertools.pairwise(aux)
    )
    passive = form == "done" and not {"be", "get"}.isdisjoint(aux)  # "will be / get it sorted"
    if future and (form == "base" or words[at] in BASE_TOO or passive):
        if _conditioned(words):
            return None  # "you'll be refunded once it arrives": a condition, not a promise
        return "promised"
    if form == "base" and words[max(0, at - 2) : at] == ["let", "me"]:
        return "promised"  # "let me cancel that now" ("let me know if …" is no action word)
    if form == "ing":
        near = words[max(0, at - 2) : at]
        if "i'm" in near or "we're" in near or ("am" in near and "i" in words[max(0, at - 3) : at]):
            return "promised"  # "I'm cancelling it now"
        if near[-1:] == ["be"] and future:
            return "promised"  # "I'll be cancelling it", "we will be booking a pickup"
        if "being" in near and kind.name == "refund":
            return "reported"  # "you're being refunded"
        return None
    if form == "base":
        if before and before[-1] == "to" and _arranged(words, at - 1):
            return "reported"  # "I've arranged for UPS to collect it"
        if before and (before[-1] == "did" or before[-2:] == ["did", "indeed"]):
            return "reported"  # "I did cancel it": an emphatic report
        if kind.name == "recommend" and before and before[-1] in ("i", "we"):
            return "reported"  # "I recommend the Trailblaze shoes"
        return None
    near = words[max(0, at - 2) : at]
    passive = bool(near) and near[-1] in ("been", "was", "were")
    if not passive and any(w in _MODALS for w in near):
        return None  # "it can be returned", "needs to be cancelled", "you ordered" (but
        # "you've been credited", "you were refunded" say it was done)
    if noun_at is None and before and before[-1] in _DETERMINERS:
        return None  # "the returned item", "your cancelled order": a description
    if kind.name == "order" and _DATE_AFTER.match(_after(clause, words[at])):
        return None  # "your order placed on May 3": a date, not an action
    if noun_at is not None and noun_at < at:
        # "Returns are processed within 5 days", "a refund is issued once …": a rule, not a report
        lead = words[max(0, noun_at - 3) : noun_at]
        generic = (
            words[noun_at].endswith("s") or "a" in lead or "an" in lead
        ) and _SPECIFIC.isdisjoint(lead)
        present = words[noun_at + 1 : at]
        if ("is" in present or "are" in present) and generic and "now" not in present:
            return None
        if _conditioned(words):
            return None
    return "reported"


def _conditioned(words: list[str]) -> bool:
    """A condition in the clause ("once it arrives", "if you'd like", "after delivery"); "after
    this", "after that" point to now: a time, no condition ("I'll cancel it right after this")."""
    for k, word in enumerate(words):
        if word in _CONDITIONS and words[k + 1 : k + 3] not in _DEICTIC:
            return True
    return False


def _arranged(words: list[str], to: int) -> bool:
    """An effect verb in a done form up to four words before the "to" at `to` ("arranged for
    the courier to", "booked UPS to")."""
    for word in words[max(0, to - 4) : to]:
        if any(w.role == "effect" and w.form == "done" for w in FORMS.get(word, ())):
            return True
    return False


def _after(clause: str, word: str) -> str:
    """The text of `clause` after the first occurrence of `word` (case-insensitive)."""
    found = re.search(rf"\b{re.escape(word)}\b", clause, re.I)
    return clause[found.end() :] if found else ""
