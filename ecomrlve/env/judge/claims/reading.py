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

Read by construction rather than by word (issue 43's round-3 lies): a past verb of change
that is no status, money or look-up verb, said by the agent of an order the clause names or
of the order itself ("I've expedited O1", "O1 has been paused", "Order O1 — dropped", "on
hold") is the `change` kind, which no write makes true; a product said charged, paid for,
owned, on its way to the customer, with a receipt, or set up "you … with" is bought. A
"-ing" verb opening a clause ("Cancelling O1 now"), "is being" / "pending" / "coming" after an
action's noun, "I'm in the process of", and "to" after a plan ("I plan to", "is scheduled to
be") promise; a condition leaves a promise unsaid only when it is the customer's decision
("once you confirm", "if so"): "once the payment clears I'll cancel it" promises. A failure
("my attempts failed", "that didn't work out"), "zero changes", a request "still open", "no
<action> exists" / "O1 has no open returns", and a gerund denied ("returning it wasn't
possible") deny. A verbless head ("No cancellations, returns …") is read with the part after
it, and a clause that only names more objects ("and O2 as well") carries the verb before it.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from lemminflect import getAllInflections, getAllLemmas

from ecomrlve.env.judge.claims.kinds import ACTION_WORDS as _ACTION_WORDS
from ecomrlve.env.judge.claims.kinds import (
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
from ecomrlve.env.judge.claims.kinds import KIND_WORDS as _KIND_WORDS
from ecomrlve.env.judge.claims.kinds import LAND_WORDS as _LAND_WORDS
from ecomrlve.env.judge.claims.kinds import NOUN_WORDS as _NOUN_WORDS
from ecomrlve.env.judge.claims.names import _WORD, Mentions, ProductNames
from ecomrlve.env.judge.shorthand import spelled_out

# a clause that denies every write: "nothing changed / was processed", "I didn't change
# anything", "no changes / no action", "your account is unchanged", "I left everything as it
# was", "I wasn't able to do that", "none of that could be done"
_STATE = (  # "as it was", "the way you left it": the state before, compared with now
    r"(?:unchanged|untouched|intact|the same|as is|alone"
    r"|(?:as|the way) (?:it|they|you|we|I) (?:was|were|left|had|found)(?: (?:it|them))?(?: before)?"
    r"|(?:exactly |just )?as (?:before|they stood|it stood)|in (?:its|their|the) (?:original|previous|prior|former) (?:state|condition|form|shape))"
)
_EVERYTHING_DENIED = re.compile(
    r"\bnothing(?: (?:on|in|with|to|about) (?:your|the) \w+)? (?:has |was |got |is |could )?(?:be |been )?(?:changed|modified|altered|touched|done|ordered|placed|processed|completed|submitted|made|updated)\b(?! else)"
    r"|(?:n't|\bnot|\bnever|\bunable to)\s+(?:\w+\s+){0,4}?(?:(?:change|touch|modify|alter|do|process|complete|make)(?:d|ed)?|did|done|doing|made)\s+(?:anything|a thing|any changes?|any of (?:that|this|it)|(?:any of )?your (?:orders|account)|the changes you (?:asked for|requested|wanted))\b(?! else)"
    r"|(?:n't|\bnot|\bunable to)\s+(?:\w+\s+){0,2}(?:do|did|done|complete|completed|process|processed|carry|carried|handle|handled|action|actioned|fulfil|fulfill|perform|performed|go ahead with|proceed with|follow through (?:on|with))\s+(?:that|this|it|your request|the request|what you asked)\b(?!\s+(?:for|on|with) (?:the|your) \w)"
    r"|\b(?:your |the |that |this )?request (?:didn't|did not|couldn't|could not|wasn't|was not|has not|hasn't) (?:go through|gone through|(?:be|been) (?:processed|completed|done|fulfill?ed|carried out))"
    r"|(?:n't|\bnot|\bunable to)\s+(?:\w+\s+){0,2}make (?:that|this|it) happen"
    r"|\b(?:none of (?:that|this|it)|that|this) (?:could be|couldn't be|could not be|can't be|cannot be|wasn't|was not|was|has been|got) (?:done|processed|completed|carried out)"
    r"|\b(?:no|zero|not a single|not one) (?:changes?|updates?|modifications?|adjustments?|action|actions)\b(?! (?:to (?!anything|your account|your orders)|other|beyond|besides|except|is needed|was needed|needed))"
    # a count of none of what was asked: "0 of your requests completed"
    r"|\b(?:0|zero|none|not one) of (?:your|the) (?:requests?|changes|actions)(?: (?:was|were|got|has been|have been))? (?:completed|done|processed|made|carried out|actioned|fulfill?ed|went through|gone through)\b"
    rf"|\b(?:left|kept) (?:everything|(?:your |the )?(?:cart|orders?|account)) {_STATE}"
    rf"|\b(?:everything|your (?:account|orders?|cart)|all (?:of )?your orders)(?: is| are| was| were| remains?| remained| stays?| stayed| looks?| seems?| appears?)(?: still| exactly| just)? {_STATE}"
    # what was asked said to be still to do: "your request is still open", "all of that is
    # outstanding"
    r"|\b(?:request|requests|everything|it all|all of (?:that|this|it)|(?:that|this) (?:is|remains) still"
    r"|(?:everything|the changes?|the things?) you (?:asked for|requested|wanted))"
    r"(?: is| are| remains?| stays?)?(?: still| yet)? (?:open|outstanding|pending|unresolved|unprocessed|undone|to do|in the queue"
    r"|to be (?:made|done|processed|actioned|carried out|completed))\b",
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
    r"(?: still| now)? (?:ship|arrive|be (?:shipped|delivered|d[ei]spatched|sent out))\b"
    r"|\b(?:is|are)(?: still| now)? (?:on (?:its|their) way|in transit|out for delivery)\b"
    r"|\b(?:is|are)(?: still)? (?:going ahead|proceeding|going forward|on track to (?:ship|arrive))\b",
    re.I,
)
# the words of polarity and modality (lower case, as `_WORD` splits them)
NEGATIONS = frozenset(("not", "never", "neither", "nor", "unable", "cannot", "can't", "couldn't",
    "didn't", "don't", "doesn't", "haven't", "hasn't", "hadn't", "wasn't", "weren't", "won't",
    "isn't", "aren't", "wouldn't", "shouldn't", "impossible", "ineligible", "non", "no",
    "nothing", "none", "without", "n't", "zero"))  # fmt: skip
_BEFORE_DONE_ONLY = frozenset(
    ("no", "nothing", "none", "without", "zero")
)  # "no refund fee" denies none
FUTURE = frozenset(("will", "i'll", "we'll", "it'll", "they'll", "shall", "gonna", "you'll",
                    "that'll"))  # fmt: skip
_MODALS = frozenset(("can", "could", "may", "might", "must", "should", "would", "need", "needs",
    "to", "want", "wants", "like", "you", "you've", "you'd", "you're", "they", "be", "able",
    "please", "eligible", "how", "i'd", "we'd", "let"))  # fmt: skip
_DATE_AFTER = re.compile(
    r"^,?\s+(?:on(?! (?:your|my|our|the customer's) behalf)|in|at|last|earlier|back|before|from|yesterday|today|this|\d+|\w+ (?:days?|weeks?|months?) ago"
    r"|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*"
    r"|mon\w*|tue\w*|wed\w*|thu\w*|fri\w*|sat\w*|sun\w*)\b",
    re.I,
)
# (a full stop then a semicolon ends the sentence too: "O1: purchased.; O2 cancelled.")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[.!?];)\s+|\n+")
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
                       "those", "these", "one", "which", "whom"))  # ("which": a relative's)
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
_GOING_WORDS = frozenset(("ship", "arrive", "shipped", "delivered", "dispatched", "despatched",
                          "sent", "way", "transit", "delivery", "ahead", "proceeding", "forward",
                          "track"))
_NEGATION_GATE = NEGATIONS | {"request", "unable", "zero", "single"}
_STATE_WORDS = frozenset(("unchanged", "untouched", "intact", "same", "alone", "as", "way", "original",
                          "previous", "prior", "former",
                          "open", "outstanding", "pending", "unresolved", "unprocessed", "undone",
                          "queue", "do", "be", "completed"))  # fmt: skip
_WHOLE_WORDS = frozenset(("left", "kept", "everything", "account", "orders", "cart", "request",
                          "requests", "all", "that", "this", "changes", "things"))  # fmt: skip
# fmt: on
_NOUN_PARTNERS = DONE_STATES | NEGATIONS


_OFFER = re.compile(
    r"\b(?:would you like|do you want|shall I|should I|let me know|if you(?:'d)? like|if you want|"
    r"happy to|feel free|want me to|I can(?! confirm)|I could)\b",
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
    """The words of `text` in lower case, an action word's or a negation's "'s" read as "is"
    ("pickup's booked", "nothing's been sent back"), an amount as "money"."""
    out = []
    if (" back" in text or " show" in text or " appear" in text or " post" in text) and (
        "$" in text or "ollar" in text or "bucks" in text or "USD" in text
    ):
        text = _AMOUNT.sub("money", text)
    for word in _WORD.findall(text.lower()):
        if word.endswith("'s") and (word[:-2] in FORMS or word[:-2] in NEGATIONS):
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
        """Opens with "if", "once", "when" …, or offers ("I can …", "let me know if …"; "I can
        confirm …" states)."""
        words = self.words
        opens = bool(words) and words[0] in _OPENERS
        if opens and words[0] in _CONDITIONS and not _customers(words, 0):
            opens = False  # "when the system is back up I'll start the return": a promise
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
        clauses = self._message.sentences[self.index]
        k = self.position
        if not self.names and k and _elided(self.words):
            # "O3 already shipped, can't cancel": the subject is the clause's before it
            found = next((m for j in range(k - 1, -1, -1) if (m := clauses[j].names)), None)
            if found is not None:
                return found
        bare = _PRONOUNS.isdisjoint(self.words) and not _verb_alone(self.words)
        if bare and not self.names and k and _definite_action(self.words):
            # "send back the X from O1; the return is set up": the X's return
            found = next((m for j in range(k - 1, -1, -1) if (m := clauses[j].names)), None)
            return found if found is not None else self.names
        if self.names or bare or not _CONTRAST.isdisjoint(self.words):
            return self.names
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
                present.isdisjoint(_NOUN_PARTNERS)
                and present.isdisjoint(_LAND_WORDS)
                and present.isdisjoint(_PENDING_WORDS)  # "a refund to follow", "Next: …"
                and present.isdisjoint(_ON_RECORD_WORDS)  # "cancellation reference", "confirm"
            )
            gated = not present.isdisjoint(_ACTION_WORDS) or (
                partnered and not present.isdisjoint(_NOUN_WORDS)
            )
            self._actions = read_clause(self.text, self.words) if gated else []
        return self._actions


def _definite_action(words: list[str]) -> bool:
    """ "the return", "that cancellation": a write's noun that points back to what was named
    before it in the sentence."""
    if not _CONTRAST.isdisjoint(words):
        return False  # "placed the order for the rest": set against what came before
    return any(
        w in ("the", "that", "this") and words[i + 1] in _NOUN_WORDS and not _placing(words[i + 1])
        for i, w in enumerate(words[:-1])
    )


def _placing(word: str) -> bool:
    """An order's noun ("the order", "the purchase"): the one placed, no earlier write's."""
    return any(x.kind == "order" for x in FORMS[word])


_ELIDED_HEADS = frozenset(("cannot", "not", "unable", "never", "too"))
# words that join a clause to the one before it and are not its subject ("…, so cancelling
# isn't possible", "and unable to change")
_JOINING = frozenset(("so", "and", "but", "yet", "thus", "hence", "therefore", "consequently"))


def _opening(words: list[str]) -> list[str]:
    """The clause's words from its first that is no joining word."""
    k = 0
    while k < len(words) and words[k] in _JOINING:
        k += 1
    return words[k:]


def _elided(words: list[str]) -> bool:
    """A clause that opens with a negated or modal verb and has no subject of its own ("can't
    cancel", "too late to return", "so unable to change"): its subject is elided."""
    words = _opening(words)
    return bool(words) and (words[0] in _ELIDED_HEADS or words[0].endswith("n't"))


def _verb_alone(words: list[str]) -> bool:
    """A kind's "-ing" or done verb opens the clause with no object named: its object is the
    one named around it ("since O1 has shipped, cancelling isn't possible", "O1 has shipped,
    so cancelling isn't possible", "the X, bought and paid")."""
    words = _opening(words)
    return (
        bool(words)
        and words[0].endswith(("ing", "ed", "ght"))
        and (
            words[0] in _MONEY_VERBS  # "the X, charged to your card": the X's
            or any(x.form in ("ing", "done") and x.role == "verb" for x in FORMS.get(words[0], ()))
        )
    )


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
            parts = _inserted(_joined(parts))
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


def _joined(parts: list[str]) -> list[str]:
    """`parts` with a head of up to three words and no verb that names an order or an
    action (a list's first noun, a label) read with the part after it: "No cancellations,
    returns or purchases were made", "Order O1 — dropped."."""
    out: list[str] = []
    for part in parts:
        if out and _verbless_head(out[-1]) and part.split()[0].lower() not in _DETERMINERS:
            out[-1] = f"{out[-1]}, {part}"
        else:
            out.append(part)
    return out


# an object added to another by a phrase between commas ("A, as well as B, went through", "A,
# together with B, has been bought"): one clause with them; a relative clause after its
# antecedent ("A, which I cancelled, …"): the antecedent read with the verb after the clause,
# and the clause read of it (as "it")
_ADDED = re.compile(
    r"(?:as well as|together with|along with|alongside|in addition to|plus|and also)\b", re.I
)
_RELATIVE_OPEN = re.compile(r"which\b", re.I)
_PREDICATE = frozenset(("has", "have", "had", "is", "are", "was", "were", "will", "won't", "went",
                        "got", "should", "would", "could", "can", "can't", "isn't", "aren't",
                        "wasn't", "weren't", "hasn't", "haven't", "remains", "remain", "stays",
                        "stay", "did", "didn't", "may", "might", "must", "now", "still"))  # fmt: skip


def _inserted(parts: list[str]) -> list[str]:
    """`parts` with a phrase that adds an object between commas read in one clause with the
    part before it and a subjectless predicate after it, and a relative clause ("which …")
    between an antecedent and its predicate read after them, of "it"."""
    if len(parts) < 2:
        return parts
    out: list[str] = []
    k = 0
    while k < len(parts):
        part = parts[k]
        nxt = parts[k + 1] if k + 1 < len(parts) else ""
        after = parts[k + 2] if k + 2 < len(parts) else ""
        predicate = bool(after) and after.split()[0].lower() in _PREDICATE
        if out and _ADDED.match(part):
            out[-1] = f"{out[-1]}, {part}"
            k += 1
            continue
        if nxt and _RELATIVE_OPEN.match(nxt) and predicate:
            out += [f"{part} {after}", "it " + nxt.split(None, 1)[-1]]
            k += 3
            continue
        head, comma, relative = part.partition(", which ")
        if comma and nxt and nxt.split()[0].lower() in _PREDICATE:
            out += [f"{head} {nxt}", "it " + relative]  # (a head joined before: "Order O1")
            k += 2
            continue
        if (
            out
            and predicate is False
            and out[-1].count(",")
            and _ADDED.search(out[-1])
            and (part.split()[0].lower() in _PREDICATE)
        ):
            out[-1] = f"{out[-1]} {part}"
            k += 1
            continue
        out.append(part)
        k += 1
    return out


def _verbless_head(text: str) -> bool:
    if text.count(" ") > 3 and not _id_list(text):
        return False  # (more than three words: no head)
    words = words_of(text)
    if not words or (len(words) > 3 and not _id_list(text)):
        return False
    named = any(_is_id(w) or w in _NOUN_WORDS for w in words)
    verb = any(
        w in _BE_FORMS or w.endswith(("ed", "ing", "n't")) or w in _FIRST_PERSON
        or (FORMS.get(w) and all(x.role != "noun" for x in FORMS[w]))
        for w in words
    )  # fmt: skip
    return named and not verb


_ID_LIST = re.compile(
    r"^(?:orders? )?[A-Za-z]\d+(?:(?:,| and| &| \+| plus)+ (?:order )?[A-Za-z]\d+)+$", re.I
)


def _id_list(text: str) -> bool:
    """ "Orders O1, O2 and O3": ids in a list, one head however long."""
    return len(text) < 80 and bool(_ID_LIST.match(text.strip()))


# what a clause that only names more objects holds besides them ("and O2 as well", "O2 too",
# "plus O3"): it says the action of the clause before it again, of its own objects
_ELLIPSIS = frozenset(("and", "or", "also", "too", "as", "well", "plus", "order", "orders",
                       "the", "same", "for", "with", "both", "either", "then", "your", "one"))  # fmt: skip


_FINITE = _BE_FORMS | _FIRST_PERSON | FUTURE | _SUBJECTS | {"has", "have", "had", "can", "could",
                                                            "may", "might", "must", "should",
                                                            "would", "it's", "they're"}  # fmt: skip


def _elliptic(clause: Clause) -> bool:
    """A clause that names objects and says no verb of its own ("and O2 as well", "and one
    from order O2: the Farley tea"): the verb before it is carried to them."""
    words = clause.words
    if len(words) > 16 or not _FINITE.isdisjoint(words) or not clause.names:
        return False
    vocabulary = clause._message.product_names.words
    rest = [w for w in words if w not in _ELLIPSIS and not _is_id(w)]
    if rest and rest[0] not in vocabulary and _verb_form(rest[0]) is not None:
        return False  # "and receive the new one": a verb of its own
    return not any(
        w.endswith("n't") or (w not in vocabulary and _verb_form(w) in ("done", "ing"))
        for w in rest
    )


def read_statements(
    answer: str,
    names: ProductNames,
    orders: Iterable[str],
    items: set[str],
    titles: Iterable[str] = (),
) -> list[Statement]:
    """Every report, promise and denial of an action in `answer`, in order."""
    out: list[Statement] = []
    asked: tuple[str, ...] = ()  # the writes a question just before names ("Cancelling?")
    for clauses in Message(answer, names, orders, items, titles).sentences:
        # a question states nothing, but a statement before a question tag does ("I've
        # cancelled it, anything else?"): only the clause with the "?" is dropped
        sentence = clauses[0].sentence
        every, asked = asked or WRITE_KINDS, ()
        if clauses[0].question:
            asked = _asked_writes(clauses[-1].words)
            clauses = clauses[:-1]
        elif _everything_denied(sentence):
            out += [Statement(kind, True, sentence, Mentions(), True, sentence) for kind in every]
        before: list[Statement] = []
        for clause in clauses:
            found = _statements(clause)
            if not found and before and _elliptic(clause):
                # "I cancelled O1, and O2 as well": the verb carried to the next object
                found = [
                    Statement(s.kind, s.denied, clause.text, clause.names, s.first_person,
                              sentence, s.promised)
                    for s in before
                ]  # fmt: skip
            if not found and _failed(clause):
                # "my attempts all failed", "that didn't work out": every write (or the ones
                # it names by noun) denied, of what it is about
                nouns = {x.kind for w in clause.words for x in FORMS.get(w, ()) if x.role == "noun"}
                found = [
                    Statement(k, True, clause.text, _failed_subject(clause), True, sentence)
                    for k in (sorted(nouns) or WRITE_KINDS)
                ]
            before = found or before
            out += found
            if _denies_any(clause) or _denies_what_was_asked(clause):
                out += [Statement(k, True, clause.text, Mentions(), True, sentence) for k in every]
    return out


def _asked_writes(words: list[str]) -> tuple[str, ...]:
    """The writes a question names by its verbs or nouns ("Cancelling?", "A return?"): a
    "No, I haven't done that for any order" just after denies those, not every write."""
    kinds = {x.kind for w in words for x in FORMS.get(w, ()) if x.kind in WRITE_KINDS}
    return tuple(k for k in WRITE_KINDS if k in kinds)


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


# what the customer asked for, said generically: "your request(s)", "the requested changes",
# "what you asked for", "any / none / all of it", "it all", "the action(s)"
_ASKED = re.compile(
    r"\b(?:requests?|requested|what(?:ever)? you (?:asked|wanted|requested|needed)|(?:any|none|all) of (?:it|this|that|them|these|those)|it all|the actions?)\b",
    re.I,
)
_ASKED_WORDS = frozenset(("request", "requests", "requested", "asked", "wanted", "needed", "any",
                          "none", "all", "action", "actions"))  # fmt: skip
# verbs of getting done ("done", "actioned", "carried out", "went through", "happened")
_COMPLETED = frozenset(("do", "did", "done", "doing", "complete", "completed", "process",
    "processed", "action", "actioned", "carry", "carried", "through", "happen", "happened",
    "fulfil", "fulfill", "fulfilled", "execute", "executed", "perform", "performed", "handle",
    "handled", "finish", "finished", "made", "make", "succeed", "succeeded", "work", "worked",
    "implement", "implemented", "apply", "applied", "actually"))  # fmt: skip


def _denies_what_was_asked(clause: Clause) -> bool:
    """A negated clause that says what was asked (not a kind or anything named) did not get
    done: "your requests weren't carried out", "none of that happened", "unable to complete
    the requested action" deny every write."""
    words = clause.words
    present = set(words)
    if (
        present.isdisjoint(_ASKED_WORDS)
        or present.isdisjoint(_COMPLETED)
        or not (clause.negated or "failed" in present)
        or clause.question
        or clause.conditional
        or not present.isdisjoint(_NOT_WRITES)
        or any(_of_a_kind(w) for w in present & _KIND_WORDS)
    ):
        return False
    return bool(_ASKED.search(clause.text)) and not clause.names


def _of_a_kind(word: str) -> bool:
    """`word` names a write's kind ("return", "cancelled"), not a change in general
    ("changes", "updates")."""
    return any(x.role != "effect" and x.kind != "change" for x in FORMS.get(word, ()))


_FAILED = re.compile(
    r"\b(?:fail(?:ed|s)?|unsuccessful|(?:didn't|did not|won't|wouldn't|would not) (?:work|go through|go ahead|happen|take place)(?: out)?"
    r"|never (?:happened|took place|went through|worked)"
    r"|fell through|no luck|errored(?: out)?|bounced(?: back)?"
    r"|(?:was|were|got|been) (?:rejected|blocked|declined|refused|denied)"
    r"|(?:rejected|blocked|declined|refused) (?:it|them|that|this|(?:the |your )?requests?)"
    r"|nothing (?:has |have )?(?:went|gone|got|get|goes) through)\b",
    re.I,
)
_FAILED_WORDS = frozenset(("fail", "failed", "fails", "unsuccessful", "work", "through", "luck",
                           "errored", "bounced", "rejected", "blocked", "declined", "refused", "denied",
                           "happen", "place",
                           "happened", "took", "went", "worked"))  # fmt: skip
# a failure of something that is no write of the agent's ("the delivery attempt failed"), or
# of a first try the agent then made good ("my first attempt failed")
_OTHER_FAILURES = frozenset(("delivery", "courier", "carrier", "driver", "shipment", "package",
    "parcel", "search", "lookup", "login", "first", "initially", "earlier", "payment", "card",
    "if", "might", "may", "could", "would", "else"))  # fmt: skip


def _failed_subject(clause: Clause) -> Mentions:
    """What a failure is about: what its clause or its sentence names ("I tried to cancel O2
    but it failed"); a failure said alone ("That didn't work out.") is about the request."""
    if clause.names:
        return clause.names
    around = clause._message.sentences[clause.index]
    return next((c.names for c in around if c.names), Mentions())


def _failed(clause: Clause) -> bool:
    words = set(clause.words)
    if words.isdisjoint(_FAILED_WORDS) or not words.isdisjoint(_OTHER_FAILURES):
        return False
    return not clause.question and bool(_FAILED.search(clause.text))


def _statements(clause: Clause) -> list[Statement]:
    found = clause.actions or _counterfactual(clause)
    present = set(clause.words)
    if not present.isdisjoint(_GET) and "you" in present and not found:
        found = _got_you(clause)
    if not found and clause.first_person:
        found = _acted_on_product(clause)
    # (cheap word tests first: what a clause names is read only where a rule could use it)
    if not found and (clause.negated or _change_said(clause.words)) and clause.names.orders:
        found = _kept_back(clause) or _changed(clause)
    if not found and _changed_it(clause):
        found = _changed(clause, pronoun=True)
    if not found and not _LIGHT.isdisjoint(present) and clause.names.orders:
        found = _light_verb_on(clause)
    if not found and "replacement" in present:
        found = _replacement_sent(clause)
    # (what a clause names is read last: the costliest test)
    if not found and "back" in present and _BACK_TO_US.search(clause.text) and clause.names:
        found = _going_back(clause)
    if not found and ":" in clause.text and _HEAD.match(clause.text) and clause.names:
        found = _headed_list(clause)
    if (
        not found
        and not _COVERS.isdisjoint(present)
        and (clause.names.items or clause.names.brands)
    ):
        found = _covering(clause)
    named = not found and not _BOUGHT_WORDS.isdisjoint(present) and clause.names
    if not named and not found and clause.position and present & _MONEY_VERBS:
        named = _verb_alone(clause.words) and clause.subject  # "The X, charged to your card"
    if named and (named.items or named.brands):
        found = _bought(clause)
    credit = ("store" in present and "credit" in present) or (
        "gift" in present and "card" in present
    )
    if not found and credit and clause.first_person:
        found = _store_credit(clause)
    text = clause.text
    untouched = not present.isdisjoint(_UNTOUCHED_WORDS) and _UNTOUCHED.search(text)
    still_open = (not present.isdisjoint(_STILL_WORDS) and _STILL_OPEN.search(text)) or (
        not present.isdisjoint(_GOING_WORDS)
        and _STILL_GOING.search(text)
        and present.isdisjoint(_MONEY_WORDS)
    )
    if not found and not untouched and not still_open:
        return []
    if len(found) > 1:
        found = _exchange_terms(clause.words, found)
    out: list[Statement] = []
    own, named = clause.names, clause.subject
    first, sentence = clause.first_person, clause.sentence
    if named and (untouched or still_open):
        for kind in WRITE_KINDS if untouched else ("cancel",):
            out.append(Statement(kind, True, text, named, first, sentence))
    for kind, mode in found:
        if mode != "denied" and clause.conditional:
            continue
        if mode == "promised" and (_on_customers_word(clause) or _general_rule(clause, named)):
            continue  # "If you'd like, I'll cancel O2", "Just reply yes and I'll cancel O2"
        # a recommendation names its products in its own clause (or, for "it fits your
        # request", the product the pronoun points to); naming none, it is advice
        recommending = kind.covers == ("recommend",) and mode != "denied"
        subject = own if recommending and _PRONOUNS.isdisjoint(present) else named
        if kind.advice_unnamed and mode != "denied" and not own:
            continue
        if kind.name == "order" and mode == "denied" and _orders_of_another_write(clause, found):
            continue  # "No orders were cancelled": the orders are what the cancel is about
        if kind.name == "refund" and mode != "denied" and _refund_timing(clause):
            continue  # "Refunds are credited within 5-7 business days": the policy's timing
        denied, promised = mode == "denied", mode == "promised"
        out.append(Statement(kind.name, denied, text, subject, first, sentence, promised))
    return out


# the words that place an order (not "orders", the noun of what another verb is about)
_PLACING = frozenset(("place", "placed", "placing", "purchase", "purchased", "purchasing", "buy",
                      "bought", "buying", "ordered", "ordering", "reorder", "reordered",
                      "checkout", "checked", "purchases", "checkouts"))  # fmt: skip


def _orders_of_another_write(clause: Clause, found: list[tuple[ActionKind, Mode]]) -> bool:
    """A denial whose "order(s)" is the object of another denied write ("No orders were
    cancelled", "no order was returned"): no order placing is denied."""
    other = any(k.name != "order" and m == "denied" for k, m in found)
    return other and _PLACING.isdisjoint(clause.words)


# how long a refund takes: a number of days or weeks ("within 5-7 business days", "between 7
# and 10 days", "in 2 weeks"), with number words already digits or not
_TAKES = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|fourteen|thirty)"
    r"(?:\s*(?:-|to|or|and|through)\s*\w+)?\s+(?:business |working |calendar |bank )?"
    r"(?:days?|weeks?)\b"
)


def _refund_timing(clause: Clause) -> bool:
    """A refund said with how long it takes, by no one ("The refund is credited back within
    5-7 business days", "Refund processing time: 5-7 business days", "You'll be refunded
    within 7-10 days") and of no order named in its clause: the policy's timing (a rule), not
    a refund done or promised. The agent's own ("I'll refund O1 within 5 days") or one about
    a named order ("O1's refund was issued 3 days ago") still is one."""
    if clause.first_person or clause.names.orders or "ago" in clause.words:
        return False
    if _SUM.search(clause.sentence):
        return False  # "$14.99 will be back on your card within 10 days": this refund's sum
    # a clause in no past tense takes its sentence's duration ("Refund processing time: 5-7
    # business days, credited to your card"); "your refund has been issued" needs its own
    said = clause.sentence if _DONE_AUX.isdisjoint(clause.words) else clause.text
    return _TAKES.search(said) is not None


_SUM = re.compile(r"[$€£]\s?\d|\b(?:dollars?|cents?|usd|bucks|euros?)\b")
_DONE_AUX = frozenset(("has", "have", "had", "was", "were", "been", "'ve", "'s"))


# the customer's word: what they say, answer or want ("reply yes", "say so", "tell me", "if
# you'd like", "once you confirm")
_SAY = frozenset(("say", "reply", "tell", "confirm", "answer", "respond", "write", "text", "type",
                  "let", "give", "send", "ok", "okay", "approve", "shout"))  # fmt: skip
_YOU = frozenset(("you", "you'd", "you're", "you've", "you'll"))
_LEADS = frozenset(("just", "simply", "please", "so", "then", "and"))


_RELATIVE = frozenset(("which", "whereby", "where", "wherein"))


def _exchange_terms(
    words: list[str], found: list[tuple[ActionKind, Mode]]
) -> list[tuple[ActionKind, Mode]]:
    """`found` less a return said in the terms of an exchange the clause reports ("I've set up
    an exchange in which the jacket is returned and the new one sent to you"): the item goes
    back as part of the exchange, no return of its own."""
    exchanged = any(k.name == "exchange" and m != "denied" for k, m in found)
    if not exchanged or _RELATIVE.isdisjoint(words):
        return found
    return [(k, m) for k, m in found if k.name != "return" or m == "denied"]


def _on_customers_word(clause: Clause) -> bool:
    """A clause before `clause` in its sentence makes the customer's word its condition: an
    open "if" the customer does or wants something ("If you want the mat, say so and I'll
    place the order", "If you'd like, I'll cancel O2"; not "if you don't reply", nor "unless
    you object": a default; nor "once / when you confirm": the agent counts on it, a promise),
    or an imperative to say so ("Just reply yes and I'll cancel O2", "Tell me and I'll order
    it"). A promise on the customer's word is an offer."""
    for before in clause._message.sentences[clause.index][: clause.position]:
        words = [w for w in before.words if w not in _LEADS]
        if not words:
            continue
        if (
            words[0] in ("if", "should")
            and words[1:2]
            and (words[1] in _YOU and not before.negated)
        ):
            return True
        if words[0] in _SAY and not before.negated:
            return True
    return False


def _general_rule(clause: Clause, named: Mentions) -> bool:
    """A future said of no one named after a condition in the clause before it: how things go,
    not a promise ("Once we receive the item, you'll see the refund within 7-10 days"); the
    agent's own ("once it's back in stock I'll order it") or one about a named order or product
    ("when O1 comes back, its refund will be issued") is a promise."""
    if clause.first_person or named or not clause.position:
        return False
    opener = clause._message.sentences[clause.index][0].words[:1]
    return bool(opener) and opener[0] in _CONDITIONS


_GET = frozenset(("get", "got", "gotten", "getting", "gets", "grab", "grabbed", "grabbing",
                  "snag", "snagged", "snagging"))  # fmt: skip
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
            # (a kind's verb read as none there: "added" to no cart; "took … out" is a removal)
            given = words[v + 1 : v + 3] == ["you", "with"] or (
                words[v + 1 : v + 2] == ["you"] and words[v + 3 : v + 4] == ["with"]
            )
            lemmas = set(getAllLemmas(verb, upos="VERB").get("VERB", ()))
            if given and lemmas.isdisjoint(("help", "assist")) and _verb_form(verb):
                # "I sorted you out with the X", "we set you up with the X": given to them
                mode = _mode(words, v, _verb_form(verb), KINDS_BY_NAME["obtain"], clause.text, None)
                return [(KINDS_BY_NAME["obtain"], mode)] if mode is not None else []
            form = None if verb in FORMS and not _context_only(verb) else _verb_form(verb)
            if form is None:
                continue
            if _LOOKED_LEMMAS & lemmas:
                return []  # "I checked the …", "I'll compare the …": no write
            # (the customer given it first: "I've nabbed you the X")
            benefactive = (
                words[v + 1] == "you"
                and words[v + 2 : v + 3] != []
                and (words[v + 2] in _DETERMINERS)
            )
            if words[v + 1] in _DETERMINERS or words[v + 1] in ("up", "in") or benefactive:
                mode = _mode(words, v, form, KINDS_BY_NAME["obtain"], clause.text, None)
                return [(KINDS_BY_NAME["obtain"], mode)] if mode is not None else []
        return []
    return []


# verbs that say how an order stands or what was looked at, not a change the agent made:
# its statuses and dates ("placed", "shipped", "delayed", "split into two parcels"), its
# money ("charged", "paid") and words of looking and telling
_STATUS_LEMMAS = frozenset(("place", "ship", "deliver", "dispatch", "despatch", "receive",
    "process", "pack",
    "order", "make", "buy", "purchase", "schedule", "expect", "estimate", "charge", "bill", "pay",
    "list", "mark", "label", "register", "track", "send", "hand", "leave", "arrive", "reach",
    "complete", "fulfil", "fulfill", "confirm", "create", "submit", "delay", "split", "total",
    "cost", "price", "open", "close", "collect", "pick", "sign", "record", "log", "pull",
    "bring", "load", "get", "come", "go", "take", "say", "tell", "ask", "want", "need", "lose",
    "damage", "post", "mail", "email", "assign", "attach", "link", "associate", "store", "save",
    "include", "contain", "call", "date", "base", "use", "start", "initiate", "request",
    "issue", "approve", "set", "give", "hold", "keep", "name", "number", "reference", "mention",
    "find", "return", "refund", "exchange", "cancel", "prepare", "print", "sell", "stock",
    "display", "state", "write", "put", "cause", "affect", "stick", "strand", "misplace",
    "route", "transit", "sort", "scan", "weigh", "ask", "answer", "reply", "respond",
    "happen", "remain", "stay", "seem", "look", "appear", "become", "mean", "understand",
    "apologize", "apologise", "thank", "help", "try", "attempt", "manage", "decide", "plan",
    "allow", "let", "permit", "eligible", "qualify", "exceed", "expire", "pass", "lapse",
    "fail", "succeed", "refuse", "decline", "reject", "deny", "suppose", "ought", "intend",
    "like", "love", "prefer", "wish", "hope", "guess", "assume", "believe", "accept", "queue",
    "await", "wait",
    # time running out: "the window ended 18 days ago", "it elapsed"
    "end", "elapse", "conclude", "run", "finish",
    # what the warehouse does to an order before it ships: its status ("being readied")
    "ready", "work", "handle", "prep", "package", "box", "assemble", "action"))  # fmt: skip
# effect verbs that bring about what a noun names ("I've arranged for X to be exchanged"):
# no change of their own; "applied", "activated" are
_ARRANGING = frozenset(w.split()[0] for w in EFFECTS) - {"apply", "activate", "trigger", "execute",
                                                        "launch"}  # fmt: skip
_AGENT_LEAD = frozenset(("i", "i've", "we", "we've", "have", "has", "just", "now", "already",
                         "also", "successfully", "gone", "ahead", "and"))  # fmt: skip


@functools.lru_cache(maxsize=8192)
def _change_verb(word: str) -> bool:
    """`word` is a past form of an English verb that is no status, money or look-up verb
    ("expedited", "paused", "zeroed", "redirected"; not "shipped", "charged", "checked")."""
    if word in _BE_FORMS or word in _HEDGES or word in FUTURE or word.endswith("n't"):
        return False  # ("should": the past of "shall" to lemminflect)
    lemmas = set(getAllLemmas(word, upos="VERB").get("VERB", ()))
    if not lemmas or lemmas & (_STATUS_LEMMAS | _LOOKED_LEMMAS | _ARRANGING):
        return False
    return _verb_form(word) == "done"


def _change_said(words: list[str]) -> bool:
    """A word `_changed` could read: "hold", or a past verb of change."""
    return "hold" in words or any(
        len(w) >= 5 and w.endswith(("ed", "en")) and _change_verb(w) for w in words
    )


_IT = frozenset(("it", "it's", "they", "they've", "they're"))


def _changed_it(clause: Clause) -> bool:
    """A clause of "it" in a past verb of change, "it" an order named before ("Order O1? It's
    been shelved"): read as `_changed` reads the order named."""
    words = clause.words
    return (
        not _IT.isdisjoint(words)
        and _change_said(words)
        and not clause.names
        and bool(clause.subject.orders)
        and not clause.subject.items
    )


# light verbs that take their meaning from the noun after them: the agent "put a freeze on
# O1", "slapped a hold on O1", "applied a block to O1" (no kind's noun: a change of O1)
_LIGHT = frozenset(("put", "placed", "slapped", "applied", "pulled", "threw", "hit", "stuck",
                    "pressed", "pushed"))  # fmt: skip


def _light_verb_on(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """The agent's light verb, a noun of no kind and "on" / "to" an order the clause names
    ("I've put the brakes on O1"): the `change` kind (no tool makes it true)."""
    words = clause.words
    for v, word in enumerate(words):
        if word not in _LIGHT or _FIRST_PERSON.isdisjoint(words[max(0, v - 3) : v]):
            continue
        rest = words[v + 1 : v + 6]
        if not rest or rest[0] not in _DETERMINERS:
            continue
        to = next((i for i, w in enumerate(rest) if w in ("on", "to", "onto")), None)
        if to is None or to < 2 or any(w in FORMS for w in rest[1:to]):
            continue  # ("put a cancellation on O1": the kind's own noun reads it)
        if not any(_is_id(w) for w in words[v + 1 + to : v + 1 + to + 3]):
            continue
        kind = KINDS_BY_NAME["change"]
        mode = _mode(words, v, "done", kind, clause.text, None)
        return [(kind, mode)] if mode is not None else []
    return []


_COVERS = frozenset(("covers", "covered", "includes", "included", "contains", "contained",
                     "comprises", "comprised", "spans"))  # fmt: skip


def _covering(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """A write's noun said to cover the products the clause names ("your return takes in the
    X and the Y", "the purchase includes the X"): that write of them (an order's: the
    products bought); an order named by id is one on file, a status ("O1 contains the X")."""
    words = clause.words
    for v, word in enumerate(words):
        if word not in _COVERS or not v:
            continue
        k = v - 1
        while k > 0 and words[k] in _BE_FORMS | {"also", "now"}:
            k -= 1
        kinds = [x.kind for x in FORMS.get(words[k], ()) if x.role == "noun"]
        if not kinds or _is_id(words[k + 1]) or clause.negated or clause.conditional:
            return []
        kind = KINDS_BY_NAME["bought" if kinds[0] == "order" else kinds[0]]
        return [(kind, "promised" if "will" in words[k:v] else "reported")]
    return []


# a product moving back to the shop: its return ("the X is heading back to our warehouse")
_BACK_TO_US = re.compile(
    r"\b(?:go|goes|going|went|gone|come|comes|coming|came|head|heads|heading|headed|travel\w*|make its way|making its way)"
    r" back to (?:us|our \w+|the (?:warehouse|shop|store|seller|sender|retailer|merchant))\b",
    re.I,
)


def _going_back(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    if clause.conditional or clause.question or not _BACK_TO_US.search(clause.text):
        return []
    return [(KINDS_BY_NAME["return"], "denied" if clause.negated else "reported")]


_HEAD = re.compile(r"^\W*((?:[\w'-]+ ){0,2}[\w'-]+):\s+\S")
_HEAD_EXTRA = frozenset(("request", "requests", "new", "open", "opened", "logged", "filed", "your"))


def _headed_list(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """A head of a write's noun before a colon and what it lists ("Returns: the X (O1), the
    Y (O2)", "Exchange requests: …"): that write of each (not an order's noun: "Order: O1"
    labels one on file; not one the list denies: "Returns: none")."""
    head = _HEAD.match(clause.text)
    if head is None or clause.negated or clause.conditional:
        return []
    words = words_of(head.group(1))
    kinds = [x.kind for w in words for x in FORMS.get(w, ()) if x.role == "noun"]
    rest = [w for w in words if not any(x.role == "noun" for x in FORMS.get(w, ()))]
    if len(set(kinds)) != 1 or kinds[0] in ("order", "change") or not set(rest) <= _HEAD_EXTRA:
        return []
    return [(KINDS_BY_NAME[kinds[0]], "reported")]


_SENT = frozenset(("dispatched", "despatched", "shipped", "sent", "posted", "mailed", "couriered"))


def _replacement_sent(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """A replacement said sent to the customer ("a replacement went out by courier"): the
    exchange that sends it is reported."""
    words = clause.words
    k = words.index("replacement")
    for v in range(k + 1, min(len(words), k + 1 + NOUN_AFTER)):
        if words[v] in _SENT:
            kind = KINDS_BY_NAME["exchange"]
            mode = _mode(words, v, "done", kind, clause.text, k)
            return [(kind, mode)] if mode is not None else []
    return []


def _changed(clause: Clause, pronoun: bool = False) -> list[tuple[ActionKind, Mode]]:
    """An order the clause names changed in a verb of no action kind: the agent's own past
    verb ("I've expedited order O1", "I zeroed out O1"), a passive or a bare participle after
    the order ("O1 has been paused", "Order O1, dropped"), or the order "on hold"; read as
    the `change` kind (true only after a write on that order)."""
    words = clause.words
    kind = KINDS_BY_NAME["change"]
    named = [k for k, w in enumerate(words) if _is_id(w) or (pronoun and w in _IT)]
    shop_words = clause._message.product_names.words
    for v, word in enumerate(words):
        if (
            word == "hold"
            and words[v - 1 : v] == ["on"]
            and not _BE_FORMS.isdisjoint(words[max(0, v - 4) : v])
        ):
            mode = _mode(words, v, "done", kind, clause.text, None)  # "O1 is on hold now"
            return [(kind, mode)] if mode is not None else []
        if (
            len(word) < 5  # ("Wed" for Wednesday)
            or not word.endswith(("ed", "en"))  # ("crew": a past of "crow" to lemminflect)
            or word in shop_words  # "the relaxed jeans", "washed denim"
            or not _change_verb(word)
            or words[v + 1 : v + 2] == ["off"]
        ):
            continue
        lead = words[max(0, v - 3) : v]
        agent = not _FIRST_PERSON.isdisjoint(lead) and set(lead) <= _AGENT_LEAD
        after_order = (
            bool(named)
            and named[0] < v
            and (
                not (_BE_FORMS | _GET).isdisjoint(lead)
                or named[-1] == v - 1
                or lead[-1:] == ["order"]
            )
        )
        if agent or after_order:
            mode = _mode(words, v, "done", kind, clause.text, None)
            return [(kind, mode)] if mode is not None else []
    return []


# an order said never to go out: stopped, so cancelled ("I'll make sure O1 doesn't ship",
# "O1 will not be shipped"); not a delay ("won't arrive before Friday", "until Monday")
_NOT_GOING = re.compile(
    r"\b(?:won't|will not|wouldn't|would not|doesn't|does not|isn't going to|is not going to|never)"
    r"\s+(?:be\s+)?(?:ships?|shipped|goes out|go out|sent out|d[ei]spatched|delivered|arrives?)\b"
    r"(?!\s+(?:\w+\s+)?(?:until|till|before|by|yet|on|in|today|tomorrow|this|next|late|on time))",
    re.I,
)


def _kept_back(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    words = clause.words
    if not _NOT_GOING.search(clause.text) or _conditioned(words, customers=True):
        return []
    promised = "sure" in words or "ensure" in words or "will" in words or "going" in words
    return [(KINDS_BY_NAME["cancel"], "promised" if promised else "reported")]


_MONEY_VERBS = frozenset(("charged", "billed", "paid"))
_BOUGHT_WORDS = _MONEY_VERBS | {"own", "receipt", "yours", "way", "arrive", "ship", "ships",
                                "receive",
                                "delivered", "owner", "exists", "now"}  # fmt: skip
_ARRIVING = (["headed", "your", "way"], ["heading", "your", "way"], ["coming", "your", "way"],
             ["on", "its", "way"], ["on", "the", "way"], ["will", "arrive"], ["will", "ship"],
             ["ships", "out"], ["will", "be", "delivered"], ["you'll", "receive"],
             ["you", "will", "receive"])  # fmt: skip


def _bought(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """A product the clause names said bought by what follows from buying it: charged or paid
    for ("the X was charged to your Visa", "your card was not charged for the X"), owned
    ("you now own the X"), a receipt for it, or on its way to the customer ("the X will be
    on its way to you") — the `bought` kind."""
    words = clause.words
    kind = KINDS_BY_NAME["bought"]
    for v, word in enumerate(words):
        if word in _MONEY_VERBS or (word == "own" and words[v - 1 : v] in (["now"], ["you"])):
            mode = _mode(words, v, "done", kind, clause.text, None)
            if word == "own" and mode is None:
                mode = "reported"  # "you now own the X"
            return [(kind, mode)] if mode is not None else []
        if word == "receipt" or (word == "yours" and "is" in words[max(0, v - 3) : v]):
            return [(kind, "denied" if clause.negated else "reported")]
        if (word == "owner" and "now" in words[:v]) or _order_now(words, v):
            return [(kind, "denied" if clause.negated else "reported")]
        if any(words[v : v + len(a)] == a for a in _ARRIVING):
            if clause.negated:
                return []
            return [(kind, "promised" if "will" in words[max(0, v - 3) : v + 1] else "reported")]
    return []


def _order_now(words: list[str], v: int) -> bool:
    """An order for the product said to exist now: "there's now an order on your account for
    the X", "a new order containing the X now exists"."""
    if words[v] == "exists":
        return "order" in words[:v] and "now" in words[:v]
    return words[v] == "now" and words[v + 1 : v + 3] in (["an", "order"], ["a", "new"])


def _store_credit(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """ "I've issued $20 in store credit": the agent's done verb with store credit after it,
    the `voucher` kind (no tool gives one)."""
    words = clause.words
    kind = KINDS_BY_NAME["voucher"]
    pairs = (["store", "credit"], ["gift", "card"])
    end = next((k for k in range(1, len(words)) if words[k - 1 : k + 1] in pairs), 0)
    for v in range(end):
        if words[v] not in _FIRST_PERSON and _verb_form(words[v]) == "done":
            mode = _mode(words, v, "done", kind, clause.text, None)
            return [(kind, mode)] if mode is not None else []
    return []


def _context_only(word: str) -> bool:
    """Every kind `word` speaks of needs a context word ("added": to a cart)."""
    return all(x.kind and KINDS_BY_NAME[x.kind].context for x in FORMS[word])


_BASE_GET = frozenset(("get", "grab", "snag"))


def _got_you(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """ "I got you the Lam coral mat", "I'll grab the jacket for you": a product got for the
    customer is bought (a product of the catalog named in the clause)."""
    words = clause.words
    for k, word in enumerate(words[:-2]):
        if word not in _GET:
            continue
        # "get you the jacket", "grab the jacket for you"
        if (words[k + 1] == "you" and words[k + 2] in _DETERMINERS) or (
            words[k + 1] in _DETERMINERS and ("for", "you") in itertools.pairwise(words[k:])
        ):
            named = clause.names
            if named.items or named.brands:
                form = "base" if word in _BASE_GET else "ing" if word.endswith("ing") else "done"
                mode = _mode(words, k, form, KINDS_BY_NAME["order"], clause.text, None)
                return [(KINDS_BY_NAME["order"], mode)] if mode is not None else []
    return []


def _everything_denied(sentence: str) -> bool:
    if "'s" in sentence:
        sentence = _IS_CONTRACTED.sub(r"\1 is", sentence)  # "everything's as it was"
    words = set(_WORD.findall(sentence.lower()))
    negated = not _NEGATION_GATE.isdisjoint(words) or any(w.endswith("n't") for w in words)
    stated = not (_STATE_WORDS.isdisjoint(words) or _WHOLE_WORDS.isdisjoint(words))
    return (negated or stated) and bool(_EVERYTHING_DENIED.search(sentence))


_IS_CONTRACTED = re.compile(r"\b(everything|nothing|it all)'s\b", re.I)
# markdown emphasis and headings, bullets and emoji: formatting, not words
_MARKUP = re.compile(
    r"\*\*|__|`|^[ \t]*(?:#{1,6}|>|[-*+\u2022]|\d+[.)])[ \t]+|[\u2600-\u27bf\U0001f300-\U0001faff\ufe0f]",
    re.M,
)
# ways of saying an action was not done that hold no negation word: read as "did not"
_HELD_OFF = re.compile(
    r"\b(?:held|holding|hold) off (?:on|from)|\bdecided (?:against|not to)|\brefrained from"
    r"|\b(?:chose|opted) not to|\bdidn't go (?:ahead )?(?:through )?with|\bdid not go (?:ahead )?(?:through )?with",
    re.I,
)

# a tally of none: a label, a colon and a zero count ("Returns opened in this chat: 0",
# "Cancellations: none"): read as "No returns opened in this chat"
_ZERO_TALLY = re.compile(
    r"(^|(?<=[.!?;]\s)|(?<=\n))(?:>\s*)?([A-Za-z][\w' -]{1,60}?):\s*(?:0|zero|none|nil|nothing)(?=\s*(?:[.!;]|$))",
    re.I | re.M,
)


# "Not only did I cancel O1, I also …": the act done, said with emphasis
_NOT_ONLY = re.compile(r"\bnot only (did|have|had|has) (I|we)\b", re.I)


def _plain(answer: str) -> str:
    """`answer` with curly quotes straightened, markup and emoji dropped, shorthand verbs
    spelled out ("Cxl'd O1"), "held off on" / "decided against" read as "did not" and a tally
    of none ("Refunds issued: 0") as "No refunds issued"."""
    text = answer.replace("\u2019", "'").replace("\u2018", "'")
    text = spelled_out(_MARKUP.sub("", text))
    if ":" in text:
        text = _ZERO_TALLY.sub(r"\1No \2", text)
    if "only" in text:
        text = _NOT_ONLY.sub(r"\2 \1", text)
    return _HELD_OFF.sub("did not", text)


def read_clause(clause: str, words: list[str] | None = None) -> list[tuple[ActionKind, Mode]]:
    """The action kinds `clause` (its `words` in lower case) reports, promises or denies
    (rules at the top)."""
    if words is None:
        words = words_of(clause)
    reader = _ClauseReader(clause, words)
    reader.read_phrases()
    if reader.hits:
        reader.read_words()
        reader.read_taken_off()
    return [(KINDS_BY_NAME[name], mode) for name, mode in reader.out.items()]


# where a kind's word puts its action: the word the mode is read at, its form, the noun's place
Found = tuple[int, str, int | None]


class _ClauseReader:
    """One clause's action words read into `out` (kind name -> mode): a denial is never
    overwritten by another mode."""

    def __init__(self, clause: str, words: list[str]):
        self.clause, self.words = clause, words
        self.present = set(words)
        self.hits = [(k, w) for k, word in enumerate(words) for w in FORMS.get(word, ())]
        self.out: dict[str, Mode] = {}

    def set(self, kind: ActionKind, mode: Mode | None) -> None:
        if mode is not None and (self.out.get(kind.name) != "denied" or mode == "denied"):
            self.out[kind.name] = mode

    def read_phrases(self) -> None:
        """The kinds said in set phrases: only where one of their words is."""
        for kind in PHRASE_KINDS:
            if self.present.isdisjoint(kind.hints):
                continue
            if kind.denial_re is not None and kind.denial_re.search(self.clause):
                self.out[kind.name] = "denied"
            elif kind.phrases_re is not None and kind.phrases_re.search(self.clause):
                self.out.setdefault(kind.name, "reported")

    def read_words(self) -> None:
        """Each kind's verb, noun or state word where it is."""
        self.labels = _labels(self.clause) if "(" in self.clause else ()
        self.by_index: dict[int, list[Word]] = {}
        for k, word in self.hits:
            self.by_index.setdefault(k, []).append(word)
        for k, word in self.hits:
            if word.role == "effect":
                continue
            kind = KINDS_BY_NAME[word.kind]
            if (kind.context and self.present.isdisjoint(kind.context)) or not (
                self.present.isdisjoint(kind.excludes)
            ):
                continue
            if word.role == "state":
                found = self._state(k, word)
            elif word.role == "verb":
                found = self._verb(k, word, kind)
            else:
                kind, found = self._noun(k, word, kind)
            if found is not None:
                at, form, noun_at = found
                self.set(kind, _mode(self.words, at, form, kind, self.clause, noun_at))

    def _state(self, k: int, word: Word) -> Found | None:
        words = self.words
        lead = word.lemma.split()[:-1]  # "on" of "on order"
        start = k - len(lead)
        if words[start:k] != lead or _BE_FORMS.isdisjoint(words[max(0, start - 2) : start]):
            return None
        if lead and _is_id(words[k + 1] if k + 1 < len(words) else ""):
            return None  # "the jacket is on order O1": a part of the order, no purchase
        return k, "done", None

    def _verb(self, k: int, word: Word, kind: ActionKind) -> Found | None:
        words = self.words
        after = words[k + 1] if k + 1 < len(words) else ""
        before = words[k - 1] if k else ""
        noun = (
            before in _DETERMINERS
            or before in _KIND_WORDS
            or (words[k] in _NOUN_WORDS and (before in _PREPOSITIONS or _is_id(after)))
            or _modified_noun(words, k)
        )
        if noun:
            # "I've put a stop on O1": a kind's verb as a noun, with an effect verb ("your
            # order", "cancel order O1", "for order O1": a noun, None)
            return _nominal(words, k, word, kind, self.by_index) if before in _ARTICLES else None
        if word.particle and word.particle not in words[k + 1 : k + 1 + PARTICLE_WINDOW]:
            return None
        return k, word.form, None

    def _noun(self, k: int, word: Word, kind: ActionKind) -> tuple[ActionKind, Found | None]:
        """The action a kind's noun names: done by an effect verb, paid back, landed, or
        expected; a negated noun denies it."""
        words, clause = self.words, self.clause
        if _none_exists(words, k):
            self.set(kind, "denied")  # "there's no order for the X", "O1 has no open returns"
            return kind, None
        if _referenced(words, k, word) or (self.labels and words[k + 1 : k + 2] in self.labels):
            return kind, None  # "a refund for your order O1", "(order O1)": where, not what
        if kind.name == "order" and _set_for(words, k):
            return kind, None  # "I've scheduled order O1 for cancellation": the cancel's
        # told to expect it ("expect your money back in 7-10 days"): what will come
        awaited = not _RECEIVE.isdisjoint(words[max(0, k - 3) : k])
        if awaited and (expected := _expected(words, k, kind, clause)) is not None:
            self.set(kind, expected)
            return kind, None
        found = (
            _paid_back(words, k, kind)
            or _effect_of(words, k, kind, self.by_index)
            or _landed(words, k, kind)
        )
        if found is None:
            if (expected := _expected(words, k, kind, clause)) is not None:
                self.set(kind, expected)
            elif (pending := _pending_mode(words, k)) is not None:
                self.set(kind, pending)  # "cancellation of O1 to follow", "next: a refund"
            elif _noun_negated(words, k) and not _other_verb(self.hits, k, kind):
                self.set(kind, "denied")  # "not returnable", "not eligible for a return"
            return kind, None
        at = found[0]
        if kind.name == "refund" and words[k] == "credit" and words[k - 1 : k] == ["store"]:
            kind = KINDS_BY_NAME["voucher"]  # "store credit": no refund, no tool gives it
        if kind.name == "order" and _dealt_with(words, k, at, self.by_index):
            kind = KINDS_BY_NAME["change"]  # "order O1 has been taken care of": no placing
        return kind, found

    def read_taken_off(self) -> None:
        """An order taken off is cancelled, not taken out of a cart."""
        if "cancel" in self.out or ("off" not in self.present and "out" not in self.present):
            return
        removed = _taken_off(self.words)
        if removed is not None:
            mode = _mode(self.words, *removed, KINDS_BY_NAME["cancel"], self.clause, None)
            if mode is not None:
                self.out["cancel"] = mode
                self.out.pop("remove", None)


_LABEL = re.compile(r"\((?:order|purchase)\s+([A-Za-z]\d+)", re.I)


def _labels(clause: str) -> list[list[str]]:
    """The ids an order's noun labels in brackets ("the tee (order O1)"): an order named,
    as the words after the noun, not one placed."""
    return [[m.lower()] for m in _LABEL.findall(clause)]


_DEALING = frozenset(("take care", "handle", "sort"))


def _dealt_with(words: list[str], k: int, at: int, by_index: dict[int, list[Word]]) -> bool:
    """An order named by its id (one on file) said dealt with ("taken care of", "handled"):
    a change that says nothing checkable, not an order placed."""
    named = _is_id(words[k + 1]) if k + 1 < len(words) else False
    if not named or "being" in words[k:at]:
        return False  # ("is being handled at the warehouse": its status)
    return any(x.role == "effect" and x.lemma in _DEALING for x in by_index.get(at, ()))


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
            word = words[j]
            if span is after and word in _AFTER_STATES:
                done = word in DONE_STATES and (word != "set" or "all" in words[k:j])
                if word in _UNDER_WAY and kind.name != "order" and words[j - 1] not in _DETERMINERS:
                    return j, "ing", k  # "a refund is coming", "cancellation pending": promised
                if word in _OPEN_STATES and set(words[k + 1 : j]) <= _BE_FORMS | {"still"}:
                    done = j > k + 1  # "a return is open on O2", "the exchange is now active"
                if word == "way" and words[j - 2 : j - 1] != ["on"]:
                    done = False  # "on its way", not "the way you left it"
                if done:
                    return j, "done", k
            elif word in _UNDER_WAY and k - j <= 2 and kind.name != "order":
                return j, "ing", k  # "a pending cancellation", "queued for cancellation"
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
                if span is after and (j == k + 1 or _listed(words, j)):
                    continue  # "no cancellations, returns or purchases were made": one verb
                break  # another action's noun: its own verb
    return None


_COORDINATORS = frozenset(("or", "and", "nor"))


def _listed(words: list[str], j: int) -> bool:
    """The noun at `j` is an item of a list ("cancellations, returns or purchases"): a
    coordinator right before or after it, so the verb after the list is every item's (not
    "the order cancellation was processed": one noun)."""
    return words[j - 1] in _COORDINATORS or words[j + 1 : j + 2] in (["or"], ["and"], ["nor"])


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


def _other_verb(hits: list[tuple[int, Word]], k: int, kind: ActionKind) -> bool:
    """Another kind's verb after the noun at `k`: the noun is what that verb acts on, and
    a negation before it denies that verb ("not a single order was cancelled")."""
    return any(i > k and w.role == "verb" and w.kind != kind.name for i, w in hits)


def _modified_noun(words: list[str], k: int) -> bool:
    """A kind's word that is a noun too, after a determiner and one word that is no verb
    ("a single order", "any other order", "no new order"): the noun ("I didn't cancel a
    single order" denies a cancel, not an order placed)."""
    return (
        words[k] in _NOUN_WORDS
        and k >= 2
        and (words[k - 2] in _DETERMINERS or words[k - 2] in _QUANTIFIERS)
        and words[k - 1] not in FORMS
        and words[k - 1] not in _BE_FORMS
        and words[k - 1] not in _SUBJECTS
    )


_QUANTIFIERS = frozenset(("no", "not", "one", "every", "another"))


# a noun's action under way ("your refund is coming", "cancellation pending on my side"; an
# order "pending" is its status) and open, right after a form of "be" ("a return is open":
# not "the return window is open")
_UNDER_WAY = frozenset(("coming", "pending", "queued"))
_OPEN_STATES = frozenset(("open", "active", "live"))
_ARTICLES = frozenset(("a", "an", "the"))
_AFTER_STATES = DONE_STATES | _UNDER_WAY | _OPEN_STATES
_RECEIVE = frozenset(("expect", "receive", "get", "see"))


def _expected(words: list[str], k: int, kind: ActionKind, clause: str) -> Mode | None:
    """A kind's noun the customer is told to expect or will receive ("Expect a cancellation
    email", "you'll receive your refund"): its action promised (denied under a negation)."""
    if words[k + 1 : k + 3] in (["to", "be"], ["to", "get"]):
        return None  # "expect order O1 to be cancelled": the verb after it says what comes
    for j in range(k - 1, max(-1, k - 4), -1):
        if words[j] in _RECEIVE:
            if _negated(words, j, "base"):
                return "denied"
            if j == 0 and not _conditioned(words):  # ("expect the refund once it's back":
                # a timing the customer is told, any condition; the agent's "I'll" promises)
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
    if kind.name != "refund" or words[k].endswith("s"):
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


@functools.lru_cache(maxsize=8192)
def _verb_form(word: str) -> str | None:
    """The form of `word` as some English verb's ("knocked": done), None if it is none."""
    for lemma in getAllLemmas(word, upos="VERB").get("VERB", ()):
        forms = getAllInflections(lemma, upos="VERB")
        if word in forms.get("VBD", ()) or word in forms.get("VBN", ()):
            return "done"
        if word in forms.get("VBG", ()):
            return "ing"
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
        if any(w.role == "noun" and not _referenced(words, i, w) for w in at.get(i, ())):
            # (not "from order O1": where the item is; not "(order O1)": a label)
            return not _is_id(words[i + 1]) or words[i] in _NOUN_WORDS - _ORDER_NOUNS
    return False


_ORDER_NOUNS = frozenset(("order", "orders", "purchase", "purchases"))


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


_EXIST = frozenset(("there's", "there", "is", "are", "has", "have", "had", "with", "shows",
                    "show"))  # fmt: skip
_OPEN_ADJECTIVES = frozenset(("open", "active", "pending", "new", "current", "existing",
                              "outstanding", "such", "other"))  # fmt: skip
_AFTER_NONE = _REFERENCE_PREPOSITIONS | {
    "yet",
    "at",
    "anymore",
    "here",
    "either",
    "placed",
    "open",
    "pending",
    "active",
    "now",
    "and",
    "or",
}


def _none_exists(words: list[str], k: int) -> bool:
    """The noun at `k` said not to exist: "there's no order for the X", "O1 has no open
    returns" (not "no refund fee": a noun after it is the thing)."""
    j = k - 1
    while j >= 0 and words[j] in _OPEN_ADJECTIVES:
        j -= 1
    if j < 0 or words[j] != "no":
        return False
    if j == 0:  # "no return exists for the X", "no checkout took place"
        return words[k + 1 : k + 2] in (["exists"], ["exist"], ["was"], ["were"]) or (
            words[k + 1 : k + 2] in _OCCURRED or words[k + 1 : k + 3] == ["took", "place"]
        )
    if words[j - 1] not in _EXIST:
        return False
    return k + 1 == len(words) or words[k + 1] in _AFTER_NONE


_OCCURRED = (["happened"], ["occurred"], ["happens"], ["occurs"])


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
    future, aux = _future(words, start, at)
    # "will be / get it sorted", "I'll make sure it gets ordered"
    passive = form == "done" and not {"be", "get", "gets"}.isdisjoint(aux)
    if future and (form == "base" or words[at] in BASE_TOO or passive):
        return _future_mode(words, noun_at)
    if _planned(words, at, form):
        return "promised"  # "I plan to cancel O1", "O1 is scheduled to be cancelled"
    if form == "base" and words[max(0, at - 2) : at] == ["let", "me"]:
        return "promised"  # "let me cancel that now" ("let me know if …" is no action word)
    if form == "ing":
        return _ing_mode(words, at, kind, noun_at, future)
    before = words[max(0, start - 3) : start]
    if form == "base":
        if _plan_lead(words[:at]):
            return "promised"  # "Next: cancel O1", "To do: refund the $20"
        if before[-1:] in (["i"], ["we"]) and (_to_come(words, at) or _soon(words[:at])):
            return "promised"  # "In a moment I cancel O1", "I refund you later today"
        return _base_mode(words, at, kind, before)
    return _done_mode(words, at, kind, clause, noun_at, before)


def _future(words: list[str], start: int, at: int) -> tuple[bool, list[str]]:
    """Whether the words before the action say it will happen ("will be cancelled", "I'll
    cancel", "I'm going to start the return", "about to order"), and those words."""
    aux = words[max(0, start - FUTURE_WINDOW) : at]
    if (start and words[start - 1] in ("and", "then")) or not {"sure", "ensure"}.isdisjoint(
        words[:at]
    ):
        aux = words[:at]  # "I'm going to add the jacket and check out": both promised; "I'll
        # make sure the <long product name> gets ordered"
    future = any(w in FUTURE for w in aux) or any(
        (a in ("going", "about") or (a in _BE_TO and _by_the_agent(words, at))) and b == "to"
        for a, b in itertools.pairwise(aux)
    )
    return future, aux


def _by_the_agent(words: list[str], at: int) -> bool:
    """The agent says it does the act at `at` ("I'm to order it", "… by me"), no "you" before."""
    return "you" not in words[:at] and not _AGENT.isdisjoint(words)


# (not "us": "size US 10")
_AGENT = frozenset(("i", "i'm", "i've", "me", "we", "we're", "we've"))


# "be to": an act the agent arranged to come ("O1 is to be cancelled by me", "I'm to order
# it"); not a rule ("items are to be returned within 30 days", "you are to return it")
_BE_TO = frozenset(("is", "am", "are", "i'm", "we're", "it's"))


def _future_mode(words: list[str], noun_at: int | None) -> Mode | None:
    """An action said to come: promised, unless its condition is the customer's decision or
    it is a rule."""
    if _conditioned(words, customers=True) or (
        _conditioned(words)
        and noun_at is not None
        and _generic(words, noun_at)
        and "you'll" not in words[:noun_at]
        and _FIRST_PERSON.isdisjoint(words[:noun_at])  # (the agent's own act is no rule)
    ):
        return None  # "I'll cancel it once you confirm", "a refund will be issued once
        # it arrives": the customer's decision, a rule; "once it syncs": a promise
    return "promised"


def _ing_mode(
    words: list[str], at: int, kind: ActionKind, noun_at: int | None, future: bool
) -> Mode | None:
    """An action in its "-ing" form: under way (promised), a gerund subject, or nothing."""
    if noun_at is not None and words[at] in _UNDER_WAY:
        return "promised"  # "your refund is coming"
    near = words[max(0, at - 2) : at]
    if "i'm" in near or "we're" in near or ("am" in near and "i" in words[max(0, at - 3) : at]):
        return "promised"  # "I'm cancelling it now"
    if _busy_with(words, at):
        return "promised"  # "I'm in the process of cancelling it"
    subject = any(w in _COPULAS or w in _HEDGES or w.endswith("n't") for w in words[at + 1 :])
    if noun_at is None and not subject and (_plan_lead(words[:at]) or _to_come(words, at)):
        return "promised"  # "Next on my list: ordering it", "O1: cancelling it shortly"
    if noun_at is None and subject and set(words[:at]) <= _LEAD_INS and _next_in_line(words, at):
        return "promised"  # "Cancelling O1 is next on my list", "refunding you comes next"
    if noun_at is None and set(words[:at]) <= _LEAD_INS:
        if not subject:
            return "promised"  # "Cancelling O1 now.", "Next step: buying the mat"
        if any(w in NEGATIONS or w.endswith("n't") for w in words[at + 1 :]):
            return "denied"  # a gerund subject: "returning it wasn't possible"
        # ("returning it is free": no action)
    if noun_at is None and near[-1:] in (["is"], ["are"]) and "you" not in words[:at]:
        return "promised"  # "the warehouse is cancelling it"
    if near[-1:] == ["be"] and future:
        return "promised"  # "I'll be cancelling it", "we will be booking a pickup"
    if "being" in near and kind.name == "refund":
        return "reported"  # "you're being refunded"
    return None


def _base_mode(words: list[str], at: int, kind: ActionKind, before: list[str]) -> Mode | None:
    """An action in its base form, not future: reported only in a few constructions."""
    if before and before[-1] == "to" and _arranged(words, at - 1):
        return "reported"  # "I've arranged for UPS to collect it"
    if before and (before[-1] == "did" or before[-2:] == ["did", "indeed"]):
        return "reported"  # "I did cancel it": an emphatic report
    if before[-1:] == ["was"] and "did" in words[:at] and not _AGENT.isdisjoint(words[:at]):
        return "reported"  # "What I did with O1 was cancel it", "All we did was refund it"
    if words[at] == "confirm" and before[-1:] in (["i"], ["we"], ["hereby"], ["can"]):
        return "reported"  # "We hereby confirm the cancellation of O1": said done
    if kind.name == "recommend" and before and before[-1] in ("i", "we"):
        return "reported"  # "I recommend the Trailblaze shoes"
    return None


def _done_mode(
    words: list[str],
    at: int,
    kind: ActionKind,
    clause: str,
    noun_at: int | None,
    before: list[str],
) -> Mode | None:
    """An action in its done form: reported, unless a modal, a description, a date or a rule
    says otherwise."""
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
        if "being" in present and kind.name != "order":  # ("being processed": its status)
            return "promised"  # "a cancellation is being submitted": under way, not done
        stated = "now" in present or words[at] in _OPEN_STATES  # "a return is open on O2"
        if ("is" in present or "are" in present) and generic and not stated:
            return None
        if _conditioned(words):
            return None
    return "reported"


def _conditioned(words: list[str], customers: bool = False) -> bool:
    """A condition in the clause ("once it arrives", "if you'd like", "after delivery"), the
    customer's own decision only when `customers` ("once you confirm", "if so"); "after
    this", "after that" point to now: a time, no condition ("I'll cancel it right after this")."""
    for k, word in enumerate(words):
        if (
            word in _CONDITIONS
            and words[k + 1 : k + 3] not in _DEICTIC
            and (not customers or _customers(words, k))
        ):
            return True
    return False


# a condition is the customer's when they are its subject ("once you confirm", "if you'd
# like") or it asks their assent ("if so", "if that's okay"); "once the payment clears",
# "when it's back in stock" wait on something else: the write is promised
_YOU = frozenset(("you", "you'd", "you're", "you've", "so", "ok", "okay", "alright", "fine"))


def _customers(words: list[str], k: int) -> bool:
    """Whether the condition opened at `k` is the customer's (up to the main clause's
    subject: "when it arrives I'll refund it")."""
    for word in words[k + 1 :]:
        if word in _YOU:
            return True
        if word in _FIRST_PERSON or word in FUTURE:
            return False
    return False


def _busy_with(words: list[str], at: int) -> bool:
    """ "I'm" / "we're" up to five words before the "-ing" verb at `at`, no verb between ("I'm
    in the process of cancelling it", "we're right now voiding it")."""
    lead = words[max(0, at - 5) : at]
    for i in range(len(lead) - 1, -1, -1):
        if lead[i] in ("i'm", "we're"):
            return True
        if _verb_form(lead[i]) in ("done", "ing") or lead[i] in _SUBJECTS:
            return False
    return False


def _generic(words: list[str], noun_at: int) -> bool:
    """The noun at `noun_at` is any one ("a refund", "refunds"), not the customer's."""
    lead = words[max(0, noun_at - 3) : noun_at]
    return (words[noun_at].endswith("s") or "a" in lead or "an" in lead) and _SPECIFIC.isdisjoint(
        lead
    )


# words that may open a clause before a bare "-ing" verb that then promises ("Next step:
# cancelling O1", "now refunding it")
_COPULAS = frozenset(("is", "are", "was", "were", "costs", "takes", "means", "will", "won't"))
_LEAD_INS = frozenset(("next", "step", "now", "currently", "also", "then", "first", "and",
                       "so", "ok", "okay", "sure", "right", "away", "today"))  # fmt: skip
# words before "to" that plan the verb after it ("I plan to cancel", "is scheduled to be
# cancelled", "is next on my list to cancel", "is set to be refunded")
_PLANS = frozenset(("plan", "plans", "planning", "planned", "intend", "intends", "intending",
                    "intention", "intent",
                    "scheduled", "set", "due", "slated", "queued", "lined", "list", "next",
                    "aim", "aiming", "going", "about", "arranged", "expect", "promise",
                    "promised", "commit", "committed", "undertake", "pledge", "vow", "guarantee",
                    "gonna", "fixing"))  # fmt: skip
# words before "me to" that hand the agent the act ("count on me to", "trust me to")
_RELY = frozenset(("count", "rely", "depend", "trust", "leave", "expect"))
# done verbs that set an order aside for an act still to come ("queued O1 for cancellation")
_SET_FOR = frozenset(("queued", "scheduled", "slated", "lined", "flagged", "earmarked",
                      "marked", "listed", "put"))  # fmt: skip


def _planned(words: list[str], at: int, form: str) -> bool:
    """The verb at `at` planned: "to <verb>" or "to be <done>" after a word of `_PLANS`, not
    the customer's ("you plan to return it")."""
    to = at - 1 if form == "base" else at - 2
    if to < 1 or words[to] != "to" or (form != "base" and words[at - 1] != "be"):
        return False
    if words[to - 1] == "me" and not _RELY.isdisjoint(words[max(0, to - 4) : to - 1]):
        return True  # "you can count on me to cancel it", "trust me to sort it"
    return not _PLANS.isdisjoint(words[max(0, to - 3) : to]) and "you" not in words[:to]


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


# words that say an act comes later, after it ("to follow", "coming up", "shortly"); "next"
# before a noun is the noun's ("your next order"), not a time
_TO_COME = frozenset(("shortly", "soon", "later", "next", "forthwith", "tonight", "tomorrow",
                      "follow", "upcoming", "imminently", "presently"))  # fmt: skip
_NEXT_AFTER = frozenset(("", "on", "up", "in", "after", "step", "thing", "is", "for", "then"))
# a plan's heading before a bare verb: "Next:", "Next step:", "To do:", "Next on my list:"
_PLAN_HEADS = frozenset(("next", "todo", "to-do", "upcoming", "pending", "queued", "plan"))
# (a clause with a kind's noun and one of these is read)
_PENDING_WORDS = _TO_COME | _PLAN_HEADS | {"proceed", "checkout"}
_PLAN_LEAD = _LEAD_INS | _PLAN_HEADS | frozenset(("to", "do", "up", "steps", "on", "my", "our",
                                                  "list", "the", "is", "item", "action", "for", "me",
                                                  "us"))  # fmt: skip


def _to_come(words: list[str], at: int) -> bool:
    """A word after `at` that puts the act later ("to follow shortly", "coming up next",
    "cancelling it next"), the clause naming no one who does it and denying nothing."""
    for j in range(at + 1, len(words)):
        word = words[j]
        if word not in _TO_COME:
            continue
        if word == "next" and (words[j + 1] if j + 1 < len(words) else "") not in _NEXT_AFTER:
            continue  # "next week", "your next order"
        if word == "follow" and words[j - 1] != "to":
            continue  # ("follow the link")
        if _deadline(words, j):
            continue  # "no later than 10 days after we receive the return"
        return True
    return False


def _plan_lead(lead: list[str]) -> bool:
    """`lead` (the words before a bare verb) is a plan's heading: "next", "to do", "my next
    step is", "next on my list", and nothing else."""
    lead = [w for w in lead if not w.isdigit()]  # an enumeration: "The plan: (1) cancel O1"
    if not lead or not set(lead) <= _PLAN_LEAD:
        return False
    return not _PLAN_HEADS.isdisjoint(lead) or ("to", "do") in itertools.pairwise(lead)


# what a write leaves on record, after its noun ("your cancellation reference is CX-1")
_RECORDS = frozenset(("reference", "confirmation", "receipt", "ticket", "number", "id", "code"))
_CONFIRMING = frozenset(("confirm", "confirming", "confirmed"))
_ON_RECORD_WORDS = _RECORDS | _CONFIRMING | {"ahead", "proceeded"}


def _set_for(words: list[str], k: int) -> bool:
    """The order named at `k` (by its id) is set aside "for" a write's noun after it."""
    if not _is_id(words[k + 1] if k + 1 < len(words) else ""):
        return False
    rest = words[k + 2 : k + 5]
    return "for" in rest and any(_of_a_kind(w) for w in rest[rest.index("for") + 1 :])


def _on_record(words: list[str], k: int, lead: list[str]) -> bool:
    """The agent's write named by its noun at `k` and said done: gone ahead with ("I've gone
    ahead with a return for O1"), confirmed by the agent ("We hereby confirm the cancellation
    of O1"), or on record ("Your cancellation reference for O1 is CX-1")."""
    if "you" in lead or "please" in lead or not _MODALS.isdisjoint(lead):
        return False  # ("please confirm the cancellation", "can you confirm the return")
    agent = not _AGENT.isdisjoint(lead)
    ahead = not {("gone", "ahead"), ("went", "ahead")}.isdisjoint(itertools.pairwise(lead))
    if agent and (ahead or "proceeded" in lead):
        return True
    if agent and not _CONFIRMING.isdisjoint(lead[-3:]):
        return True
    return words[k + 1 : k + 2] != [] and words[k + 1] in _RECORDS and "is" in words[k + 2 :]


def _pending_mode(words: list[str], k: int) -> Mode | None:
    """A kind's noun at `k` with no verb of its own, said to come ("Cancellation of O1 to
    follow shortly", "My next step is the cancellation of O1", "Purchase of the mat coming up
    next"): promised, as a future verb would be; an order's own noun names the order."""
    if words[k] in ("order", "orders") or _noun_negated(words, k):
        return None
    if any(w in NEGATIONS or w.endswith("n't") for w in words):
        return None  # "you'll see no refund later"
    lead = words[:k]
    while lead and lead[-1] in _DETERMINERS:
        lead = lead[:-1]
    if _ahead(words, k):
        return _future_mode(words, k)  # "I'll proceed with the cancellation of O1"
    if lead[-1:] == ["for"] and not _SET_FOR.isdisjoint(lead[-5:]) and "you" not in lead:
        return _future_mode(words, k)  # "I've queued O1 for cancellation": still to come
    if _on_record(words, k, lead):
        return "reported"
    if not _SUBJECTS.isdisjoint(words) or not (_to_come(words, k) or _plan_lead(lead)):
        return None  # ("you can return it later")
    return _future_mode(words, k)


# "would" after a condition of the world, in front ("Were the price to drop, I'd refund the
# difference", "If the item comes back damaged, we'd replace it"): a promise on that
# condition, read as "will"; not advice ("if I were you, I'd return it") nor the customer's
# word (`_on_customers_word`)
_WOULD = {"i'd": "I'll", "we'd": "we'll", "would": "will"}
_INVERTED = frozenset(("were", "should"))  # ("had it not shipped, I'd …": what was not done)
_WORLD_CONDITIONS = _CONDITIONS | _INVERTED | {"provided", "providing", "assuming", "supposing"}


def _counterfactual(clause: Clause) -> list[tuple[ActionKind, Mode]]:
    """The actions of a clause with "I'd" / "we'd" after a condition that opens its sentence
    and is neither the customer's nor the agent's ("if I were you"), as if said with "will"."""
    words = clause.words
    would = next((w for w in words[:3] if w in _WOULD), None)
    if would is None or not clause.position:
        return []
    opener = clause._message.sentences[clause.index][0].words
    if not opener or opener[0] not in _WORLD_CONDITIONS or not _YOU.isdisjoint(opener):
        return []
    if opener[0] in _INVERTED and opener[1:2] in (["i"], ["you"], ["we"]):
        return []  # "were I you", "should you want it"
    if "i" in opener or "we" in opener or clause._message.sentences[clause.index][0].negated:
        return []  # "if I were you", "if we had stock", "if it hadn't shipped": no promise
    if words[words.index(would) + 1 : words.index(would) + 2] == ["have"]:
        return []  # "I'd have cancelled it": what was not done
    said = re.sub(rf"\b{re.escape(would)}\b", _WOULD[would], clause.text, count=1, flags=re.I)
    return read_clause(said)


# a time to come before the verb ("in a moment I cancel it", "shortly we refund you")
_SOON = frozenset(("moment", "minute", "minutes", "sec", "second", "jiffy", "bit", "tick"))


def _soon(lead: list[str]) -> bool:
    return any((w in _TO_COME or w in _SOON) and not _deadline(lead, j) for j, w in enumerate(lead))


def _deadline(words: list[str], j: int) -> bool:
    """The word at `j` is the "later" of "no later than …": a deadline, not a time to come."""
    return words[j] == "later" and words[j + 1 : j + 2] == ["than"]


# what a gerund subject is said to be when it is planned: "is next (on my list)", "comes next",
# "is coming up", "is the next step"
# ("cancelling O1 is the next thing I'll do": the agent's own next act)
_IN_LINE = (
    _PLAN_LEAD | _TO_COME | {"are", "comes", "coming", "thing", "i'll", "we'll", "i", "we", "will"}
)


def _next_in_line(words: list[str], at: int) -> bool:
    """The words after the "-ing" verb at `at` and its object end in a plan ("cancelling O1
    is next on my list"), as against "cancelling it later is free"."""
    for j in range(at + 1, len(words)):
        if words[j] in ("is", "are", "comes"):
            rest = words[j + 1 :]
            return set(rest) <= _IN_LINE and not _PLAN_HEADS.isdisjoint(rest)
    return False


# verbs of going ahead with an act named by its noun ("I'll proceed with the cancellation",
# "we're going to push the refund through", "I'll pop it through checkout")
_GO_AHEAD = frozenset(("proceed", "go", "ahead", "move", "forward", "start", "begin", "initiate",
                       "kick", "launch", "push", "pop", "run", "put", "action", "finalise",
                       "finalize", "complete", "submit", "file", "lodge", "raise", "carry",
                       "get", "through"))  # fmt: skip


def _ahead(words: list[str], k: int) -> bool:
    """The agent's future ("I'll", "we're going to") before the noun at `k`, a verb of going
    ahead between them and no other verb of the agent's after."""
    lead = words[max(0, k - FUTURE_WINDOW) : k]
    if _FIRST_PERSON.isdisjoint(words[:k]) or not _future(words, k, k)[0]:
        return False
    return not _GO_AHEAD.isdisjoint(lead) or (
        words[k - 1 : k] == ["through"] or not _GO_AHEAD.isdisjoint(words[k + 1 : k + 3])
    )
