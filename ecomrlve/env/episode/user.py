"""The simulated customer: deterministic, template-based, no LLM.

It answers `ask_user` from the task's hidden `goal.user_facts`. A question is read slot by slot:
every fact whose keywords (`ecomrlve.tasks.USER_FACT_KEYWORDS`: synonyms such as brand / make /
label / manufacturer, matched at word starts, case-insensitive) appear in it is answered, so
"which brand and colour?" gets both. Each answer uses one of several paraphrase forms per fact
kind (`FACT_TEMPLATES`, at least six each), chosen by a hash of (task seed and id, fact key, how
many questions came before); the fact values themselves never change, so replies are consistent
across turns.

* A catch-all question ("anything else I should know?", "any other requirements?") is answered
  with every fact the customer has.
* "Doesn't matter" is said only for a product attribute the goal really leaves open: the task
  asks for a recommendation, its facts name the category (so they describe the wanted product
  completely) and that attribute is not among them. Elsewhere an attribute the facts do not
  cover gets "nothing to add beyond my request" — never a claim that the first message said
  something (it may not have), never an answer that could contradict the goal.
* Quantities come from the goal: "how many?" and "keep the one already in your cart?" are
  answered with the number of units the order must end with (of the line whose item id the
  question names, or of every line, in the order of the request).
* A question that matches nothing gets a "don't know" reply.

Confirmations (issue 44): a question that asks leave for a write ("shall I go ahead?", "do you
want me to cancel O1002?", "is it okay if I place the order?", in any of many wordings: a
question asking leave, `CONFIRM_ASK`, about an action, `CONFIRM_ACTION`) is answered yes or no
from the goal: yes when the goal wants that kind of write (and, where the question names ids,
on those orders or products), no otherwise. A bare "shall I go ahead?" is yes when the goal
wants any write. A question that starts with what/which/how…, offers a choice ("… the 42 or the
43?") or asks about keeping a cart line is a clarifying question, answered from the facts.

A customer who talks back (issue 44, from the task's events): asked to confirm a purchase, a
customer with a `change_of_mind` event says their new wish instead of a plain yes (it counts as
yes to the changed order); told of a price rise past their budget (a question that names the new
price or the rise), a customer with a `declined` over-budget event says no, whatever the
question's form (`DECLINE_RISE`). The fact keys a reply stated are kept in `told` (a `clarify`
event needs its fact told before the agent acts).

Persona, per task (from difficulty `PERSONA_FROM` up; below it the replies are today's): terse,
chatty or private, drawn from the task's seed and id. It changes the words, never the facts:
terse replies drop openers and small talk, chatty ones add a friendly aside, private ones say
what they don't know as "I'd rather not say" and add that they share only what is asked.

Noise, per task:
* `goal.typo_rate`: each template word of 4+ letters gets two adjacent inner letters swapped
  with that probability (numpy generator seeded by the task seed, its id and the reply number).
  The fact values themselves are never altered, so a noisy task stays solvable.
* `goal.intent_switch`: the second intent text is revealed once — appended to the reply to the
  first `ask_user`, or, if the agent has not asked by then, as a user message after assistant
  turn `INTENT_SWITCH_TURN` (the env does that part).

Replies never contain item ids or acceptance sets: any token of a fact value (or of the intent
switch text) that is a catalog item id — every acceptance set consists of those — is replaced
by "the one I mentioned". Generators phrase fact values as bare values ("$40", "5 mm",
"4 stars", "3 days"); the templates here add the words around them.
"""

from __future__ import annotations

import functools
import re
import threading
import zlib
from collections.abc import Callable

import numpy as np

from ecomrlve.catalogs.taxonomy import size_words, variant_label
from ecomrlve.tasks import USER_FACT_KEYWORDS, Task, WorldEvent

INTENT_SWITCH_TURN = 2
TYPO_STREAM = 7
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_WORD = re.compile(r"[A-Za-z]{4,}")

# Per fact kind, the forms of an answer; `{v}` is the fact value, `{label}` (colour slot) the
# name of the category's variant attribute ("colour", "roast", "flavour", "scent").
FACT_TEMPLATES: dict[str, tuple[str, ...]] = {
    "category": (
        "I'm looking for {v}.",
        "It's {v} that I need.",
        "What I want: {v}.",
        "I'm shopping for {v}.",
        "I need {v}.",
        "I'm hoping to find {v}.",
        "Mostly I need {v}.",
    ),
    "brand": (
        "I'd like it from {v}.",
        "The brand should be {v}.",
        "Brand-wise, {v} please.",
        "It has to be made by {v}.",
        "I'm set on {v}.",
        "Only {v}, please.",
        "I want the one by {v}.",
    ),
    "color": (
        "Just {v}, please.",
        "The {label} should be {v}.",
        "I want the {v} one.",
        "As for the {label}: {v}.",
        "I'm after {v}.",
        "I'd go for {v}.",
        "It needs to be {v}.",
    ),
    "size": (
        "Just {sz}, please.",
        "I need {sz}.",
        "It has to be {sz}.",
        "Make it {sz}.",
        "I'm after {sz}.",
        "For the size: {v}.",
        "I'd go with {sz}.",
    ),
    "budget": (
        "I can spend up to {v}.",
        "The most I want to pay is {v}.",
        "Please don't go over {v}.",
        "Up to {v}, please.",
        "Anything up to {v} works.",
        "Price-wise, I can go up to {v}.",
        "My limit is {v}.",
    ),
    # a price range rather than a cap ("within 15% of the original price")
    "budget_range": (
        "The price should be {v}.",
        "Keep it {v}, please.",
        "Price-wise, anything {v} is fine.",
        "It should cost {v}.",
        "I'd like the price to be {v}.",
        "As long as it's priced {v}.",
        "Something {v}, please.",
    ),
    "min_rating": (
        "At least {v}, please.",
        "Only things rated {v} or higher.",
        "I want a rating of {v} or more.",
        "Nothing below {v}, please.",
        "It should have {v} or better.",
        "Reviews matter to me: {v} minimum.",
        "I only buy things with {v} and up.",
    ),
    "max_ship_days": (
        "It has to arrive within {v}.",
        "Delivery within {v}, please.",
        "I need it in {v} at most.",
        "It must be here within {v}.",
        "Shipping can take {v} at the most.",
        "I can't wait more than {v}.",
        "As long as it arrives in {v} or less.",
    ),
    "quantity": (
        "I need {v}.",
        "Just {v}, please.",
        "Make it {v}.",
        "I'd like {v}.",
        "That's {v} in total.",
        "I'm after {v}.",
        "Quantity-wise, {v}.",
    ),
    "order": (
        "It's about {v}.",
        "I mean {v}.",
        "I'm asking about {v}.",
        "I'm talking about {v}.",
        "That would be {v}.",
        "It's {v}.",
        "The one I mean is {v}.",
    ),
    "item": (
        "It's {v}.",
        "I mean {v}.",
        "The item is {v}.",
        "I'm talking about {v}.",
        "That's {v}.",
        "The one I mean is {v}.",
        "It's {v} I'm asking about.",
    ),
    "reason": (
        "Well, {v}.",
        "The reason: {v}.",
        "It's because {v}.",
        "Honestly, {v}.",
        "The thing is, {v}.",
        "Simply put, {v}.",
        "Mainly because {v}.",
    ),
    "preference": (
        "By brand, I'd prefer {v}.",
        "Brand-wise: {v}, in that order.",
        "My brand order is {v}.",
        "I'd go for {v}, in that order.",
        "Ideally {v} — in that order.",
        "In order of preference: {v}.",
        "For the brand, {v}, in that order of preference.",
    ),
    # a value the customer points to instead of saying ("the same brand as the tee I ordered
    # in May"): the agent is to read it in the order history
    "pointer": (
        "It should be {v}.",
        "I'd like {v}.",
        "Go with {v}, please.",
        "Make it {v}.",
        "For the {k}: {v}.",
        "I want {v}.",
    ),
}
GENERIC_TEMPLATES: tuple[str, ...] = ("About the {k}: {v}.", "For the {k}, {v}.")
# Product attributes the goal may leave open, and how the user names each when it does.
OPEN_SLOTS: dict[str, str] = {
    "brand": "brand",
    "color": "{label}",
    "size": "size",
    "budget": "price",
    "min_rating": "rating",
    "max_ship_days": "delivery time",
}
OPEN_TEMPLATES: tuple[str, ...] = (
    "Any {slot} is fine.",
    "The {slot} doesn't matter to me.",
    "I don't mind about the {slot}.",
    "No preference on the {slot}.",
    "I'm flexible on the {slot}.",
    "The {slot} isn't important to me.",
)
ONE_UNIT: tuple[str, ...] = ("Just one.", "Only one, please.", "A single one is enough.")
# for an attribute the goal fixes but no fact states: claims nothing about what was said
NOTHING_TO_ADD: tuple[str, ...] = (
    "I've nothing to add about the {slot} beyond my request.",
    "No more to say on the {slot} than what I asked for.",
    "Nothing further on the {slot}, just what I asked for.",
)
# the units the order must end with (`{n}`: "2 units"; one line or one named line)
QUANTITY_TOTAL: tuple[str, ...] = (
    "I want {n} in the order in total.",
    "{N} in total, please.",
    "The order should end up with {n}.",
)
# several lines: their final quantities, in the order of the request
QUANTITY_LINES: tuple[str, ...] = (
    "In total I want {n}, line by line in the order I asked.",
    "Line by line, in the order I asked: {n} in total.",
)
NOT_THAT_ONE: tuple[str, ...] = (
    "No, I don't want that one in the order.",
    "Please don't keep that one.",
)
# "should I keep the one already in your cart?": a question about the final quantity
KEEP_IN_CART = re.compile(
    r"\bkeep\b|\b(?:already|currently) in (?:your|the) cart\b|\badd (?:another|more|one more)\b",
    re.IGNORECASE,
)
_ITEM_ID = re.compile(r"\bI\d{4,}\b")
DONT_KNOW: tuple[str, ...] = (
    "Sorry, I don't know — I only know what I told you.",
    "I'm not sure about that, sorry.",
    "No idea, honestly.",
)
# A catch-all question: every fact is answered, after one of these openings.
CATCH_ALL = re.compile(
    r"\b(anything else|any other|anything more|what else|other (?:requirement|detail|"
    r"preference|constraint|need)|(?:any|more|all the) (?:details|requirements|preferences|"
    r"constraints)|tell me more|everything (?:I|you)|else I should)",
    re.IGNORECASE,
)
CATCH_ALL_OPENERS: tuple[str, ...] = ("Sure.", "Yes:", "Let me see.", "A few things.", "Right.")
NOTHING_ELSE: tuple[str, ...] = (
    "No, that's everything.",
    "Nothing else, thanks.",
    "That's all I need.",
)
SWITCH_TEMPLATES: tuple[str, ...] = ("Oh, and one more thing: {v}", "Actually, also: {v}")

# ---- confirmations and personas (issue 44) ---------------------------------------------------
PERSONA_FROM = 3  # difficulties below keep the replies they always had
PERSONAS: tuple[str, ...] = ("terse", "chatty", "private")
# a question asking the customer's leave…
CONFIRM_ASK = re.compile(
    r"\b(?:shall|should|can|may|could) I\b|\b(?:do|would) you (?:want|like) me to\b|"
    r"\bwant me to\b|\bgo ahead\b|\bproceed\b|\bconfirm\b|\bokay\b|\bok\b|"
    r"\b(?:is|are) you (?:sure|happy|fine|ok)\b|"
    r"\b(?:is|would) (?:it|that) be (?:ok|okay|fine|alright)\b|"
    r"\bis (?:it|that) (?:ok|okay|fine|alright)\b|\bgood to go\b|\bgreen light\b",
    re.IGNORECASE,
)
# …about a write: the kind of write it names (none: "shall I go ahead?")
CONFIRM_ACTION: dict[str, re.Pattern[str]] = {
    "cancel": re.compile(r"\bcancel", re.IGNORECASE),
    "return": re.compile(r"\breturn|\brefund|\bsend (?:it|them) back", re.IGNORECASE),
    "exchange": re.compile(r"\bexchang|\bswap", re.IGNORECASE),
    "purchase": re.compile(
        r"\border\b|\bplace\b|\bbuy|\bpurchas|\bcheck ?out|\bpay\b|\badd\b|\bcart\b",
        re.IGNORECASE,
    ),
}
_CLARIFYING = re.compile(r"\s*(?:how|which|what|when|where|who|whose|why)\b", re.IGNORECASE)
# "shall I add the 42 or the 43?" offers a choice: a clarifying question ("… or not?" is not)
_CHOICE = re.compile(r"\bor\b(?!\s+not\b)", re.IGNORECASE)
_ORDER_ID = re.compile(r"\b[A-Z]\d{4,}\b")
YES: dict[str, tuple[str, ...]] = {
    "plain": ("Yes, please go ahead.", "Yes, do that.", "Yes, that's right, go ahead."),
    "terse": ("Yes.", "Go ahead.", "Yes, do it."),
    "chatty": (
        "Yes, please go ahead — thanks for checking with me!",
        "Oh yes, absolutely, that's what I'd like. Thank you!",
        "Yes please! That's exactly what I was hoping for.",
    ),
    "private": ("Yes, go ahead.", "Yes, please proceed.", "That's fine, go ahead."),
}
NO: dict[str, tuple[str, ...]] = {
    "plain": ("No, please don't.", "No, that's not what I asked for.", "No, leave that as it is."),
    "terse": ("No.", "No, don't.", "No thanks."),
    "chatty": (
        "Oh no, please don't — that's not what I'm after at all.",
        "Hmm, no thanks, I'd rather you didn't do that.",
        "No, no — please leave that one alone, thanks!",
    ),
    "private": ("No, please don't.", "No, leave that.", "No, I don't want that."),
}
CHATTY_ASIDES: tuple[str, ...] = (
    "Thanks so much for helping me with this!",
    "Sorry, I know I'm a bit all over the place today.",
    "You're being very patient with me, thank you.",
)
PRIVATE_DONT_KNOW: tuple[str, ...] = (
    "I'd rather not say.",
    "I'd prefer to keep that to myself.",
    "That's not something I want to share.",
)
PRIVATE_ASIDE = "I'd rather only answer what you need to know."
# a question that tells of a price rise (the new price itself is matched too)
_RISE = re.compile(
    r"\bwent up\b|\brose\b|\brisen\b|\bincreas|\bhigher\b|\bmore expensive\b|"
    r"\b(?:over|above|past|beyond|exceed\w*) (?:your|the) (?:\$[\d.]+ )?(?:budget|limit)\b",
    re.IGNORECASE,
)
# a no to the whole order (a `drop` event says its own words: leave that product out)
DECLINE_RISE: tuple[str, ...] = (
    "No — that's more than I want to spend. Please don't place the order at all.",
    "No thanks, not at that price. Leave the order, please; don't buy anything.",
    "Then no, please don't place the order; that's over my budget.",
    "I'll pass at that price — don't place the order.",
    "That's too much for me, so no, don't order anything.",
    "No. If it costs more than my budget I don't want the order at all.",
)


def persona_of(task: Task) -> str:
    """The customer's manner: "plain" below `PERSONA_FROM`, else terse, chatty or private,
    drawn from the task's seed and id (the same in every process)."""
    if task.difficulty < PERSONA_FROM:
        return "plain"
    return _pick(PERSONAS, task.seed, task.task_id, "persona")


def is_confirmation(question: str) -> bool:
    """Whether `question` asks the customer's leave for a write (not a clarifying question)."""
    if _CLARIFYING.match(question) or KEEP_IN_CART.search(question) or _CHOICE.search(question):
        return False
    if not CONFIRM_ASK.search(question):
        return False
    return bool(
        re.search(r"\bgo ahead\b|\bproceed\b|\bconfirm\b|\bgood to go\b", question, re.IGNORECASE)
    ) or any(p.search(question) for p in CONFIRM_ACTION.values())


def _pick(options: tuple[str, ...], *key: object) -> str:
    digest = zlib.crc32(":".join(str(k) for k in key).encode())
    return options[digest % len(options)]


# Phrases in which a keyword does not name its slot ("make sure" is not about the brand).
NOT_A_SLOT: dict[str, str] = {"make": r"(?!\s+sure)", "label": r"(?!\s+(?:for|to print))"}


def _keyword_pattern(keywords: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(
        "|".join(r"\b" + re.escape(k) + NOT_A_SLOT.get(k, "") for k in keywords), re.IGNORECASE
    )


KEYWORD_PATTERNS: dict[str, re.Pattern[str]] = {
    key: _keyword_pattern(words) for key, words in USER_FACT_KEYWORDS.items()
}


def _pattern(key: str) -> re.Pattern[str]:
    pattern = KEYWORD_PATTERNS.get(key)
    if pattern is None:  # a fact key without keywords is asked for by its own name
        pattern = KEYWORD_PATTERNS[key] = _keyword_pattern(_keywords(key))
    return pattern


def _keywords(key: str) -> tuple[str, ...]:
    return USER_FACT_KEYWORDS.get(key) or (key.replace("_", " "),)


@functools.lru_cache(maxsize=1024)
def _folded_keywords(key: str) -> tuple[str, ...]:
    return tuple(k.lower() for k in _keywords(key))


def _asks(key: str, question: str, folded: str | None) -> bool:
    """Does `question` ask about `key` (one of its keywords as a word)? `folded` is the
    question lower-cased when it is ASCII: a keyword that is not a substring of it cannot
    match, which rules most keys out without a regex (a non-ASCII question has case folds
    such as "ſ" -> "s" that `lower()` does not make, so it always runs the regex)."""
    if folded is not None and not any(k in folded for k in _folded_keywords(key)):
        return False
    return _pattern(key).search(question) is not None


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fill(template: str, value: str, key: str, label: str) -> str:
    # a pointer ("the same size as the boots I ordered…") is said as it is
    sz = size_words(value) if key == "size" and not value.startswith("the same ") else value
    return template.format(
        v=value,
        sz=sz,
        k=key.replace("_", " "),
        label=label,
    )


_TYPO_GENERATOR = threading.local()  # one reusable generator per thread


@functools.lru_cache(maxsize=16384)
def _typo_state(seed: int, task_crc: int, reply: int) -> dict:
    return np.random.PCG64(np.random.SeedSequence([seed, TYPO_STREAM, task_crc, reply])).state


def _typo_rng(seed: int, task_crc: int, reply: int) -> np.random.Generator:
    """The generator of one reply's typos: `default_rng(SeedSequence([seed, TYPO_STREAM,
    crc32(task_id), reply]))`, as a state memoised per reply and loaded into a per-thread
    generator (1.5 us instead of 16 us for the episodes of a task that say the same reply)."""
    rng = getattr(_TYPO_GENERATOR, "rng", None)
    if rng is None:
        rng = _TYPO_GENERATOR.rng = np.random.Generator(np.random.PCG64(0))
    rng.bit_generator.state = _typo_state(seed, task_crc, reply)
    return rng


class SimulatedUser:
    """Answers questions from one task's hidden facts; deterministic per task."""

    def __init__(self, task: Task, is_item_id: Callable[[str], bool]):
        self.task = task
        self.goal = task.goal
        self._is_item_id = is_item_id
        self.questions = 0
        self.replies = 0
        self.intent_revealed = self.goal.intent_switch is None
        self._key = f"{task.seed}:{task.task_id}"  # reply forms vary by task, not only by seed
        self.persona = persona_of(task)
        self.confirmed = 0  # questions answered yes to (a shop rule may ask for one)
        self.told: set[str] = set()  # the fact keys a reply has stated
        self._mind = next((e for e in task.events if e.kind == "change_of_mind"), None)
        self._declined = [e for e in task.events if e.over_budget and e.declined]

    def _scrub(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            token = match.group(0)
            if self._is_item_id(token):  # every acceptance set holds catalog item ids
                return "the one I mentioned"
            return token

        return _TOKEN.sub(replace, str(text))

    def _typos(self, text: str, protected: list[str]) -> str:
        rate = float(self.goal.typo_rate)
        if rate <= 0.0:
            return text
        rng = _typo_rng(abs(self.task.seed), zlib.crc32(self.task.task_id.encode()), self.replies)
        spans = []
        for value in protected:
            start = text.find(value)
            while start >= 0:
                spans.append((start, start + len(value)))
                start = text.find(value, start + len(value))

        def swap(match: re.Match[str]) -> str:
            word = match.group(0)
            draw = rng.random()
            if any(a < match.end() and match.start() < b for a, b in spans) or draw >= rate:
                return word
            i = 1 + int(rng.integers(0, len(word) - 2))
            if i + 1 >= len(word):
                return word
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

        return _WORD.sub(swap, text)

    def answer(self, question: str) -> str:
        """The reply to one `ask_user` question."""
        self.questions += 1
        told = [e for e in self._declined if self._tells_rise(question, e)]
        if told:
            reply = told[0].reply or _pick(DECLINE_RISE, self._key, "decline", self.questions)
            self.confirmed += told[0].drop  # "order the rest": a yes to the smaller order
            return self._finish(reply, [reply])
        if is_confirmation(question):
            reply = self._confirm(question)
            return self._finish(reply, [reply])  # a yes or no is never garbled
        facts = self.goal.user_facts
        catch_all = bool(CATCH_ALL.search(question))
        folded = question.lower() if question.isascii() else None
        parts: list[str] = []
        values: list[str] = []
        for key, raw_value in facts.items():
            keep = key == "quantity" and KEEP_IN_CART.search(question) is not None
            if not (catch_all or keep or _asks(key, question, folded)):
                continue
            value = self._scrub(raw_value)  # only facts that are said get scrubbed
            kind = "budget_range" if key == "budget" and not value.startswith("$") else key
            if value.startswith("the same "):
                kind = "pointer"
            template = _pick(
                FACT_TEMPLATES.get(kind, GENERIC_TEMPLATES), self._key, key, self.questions
            )
            parts.append(_fill(template, value, key, self._label()))
            values.append(value)
            self.told.add(key)
        if not catch_all:
            parts += self._uncovered(question, folded)
        if catch_all:
            opener = _pick(CATCH_ALL_OPENERS, self._key, "catch-all", self.questions)
            parts = (
                [opener, *parts]
                if parts
                else [_pick(NOTHING_ELSE, self._key, "nothing-else", self.questions)]
            )
        if not parts:
            dont_know = PRIVATE_DONT_KNOW if self.persona == "private" else DONT_KNOW
            parts.append(_pick(dont_know, self._key, "dont-know", self.questions))
        if catch_all and self.persona == "terse" and len(parts) > 1:
            parts = parts[1:]  # no opener
        elif self.persona == "chatty":
            parts.append(_pick(CHATTY_ASIDES, self._key, "aside", self.questions))
        elif self.persona == "private" and catch_all:
            parts.append(PRIVATE_ASIDE)
        return self._finish(" ".join(parts), values)

    def _finish(self, text: str, values: list[str]) -> str:
        reply = self._typos(text, values)
        self.replies += 1
        if not self.intent_revealed:
            reply = f"{reply} {self.reveal_intent()}"
        return reply

    def wants(self, action: str | None, ids: list[str]) -> bool:
        """Whether the goal wants a write of kind `action` (None: any write), on `ids` where
        the question names some (order or item ids)."""
        goal = self.goal
        purchase_ids = (
            {i for s in goal.purchase.slots for i in s.acceptable} if goal.purchase else set()
        )
        targets: dict[str, tuple[bool, set[str]]] = {
            "cancel": (bool(goal.cancel), set(goal.cancel)),
            "return": (
                bool(goal.returns),
                {x for r in goal.returns for x in (r.order_id, r.item_id)},
            ),
            "exchange": (
                bool(goal.exchanges),
                {x for e in goal.exchanges for x in (e.order_id, e.item_id, *e.acceptable_new)},
            ),
            "purchase": (goal.purchase is not None, purchase_ids),
        }  # fmt: skip
        kinds = [action] if action else list(targets)
        for kind in kinds:
            wanted, known = targets[kind]
            # a new order's id (N0001) is not the goal's to know: it names no target
            named = [i for i in ids if not (kind == "purchase" and i.startswith("N"))]
            if wanted and (not named or any(i in known for i in named)):
                return True
        return False

    @staticmethod
    def _tells_rise(question: str, event: WorldEvent) -> bool:
        """Whether `question` tells of `event`'s price rise (its new price, or in words)."""
        return bool(_RISE.search(question)) or f"{event.price:.2f}" in question

    def _confirm(self, question: str) -> str:
        """Yes or no to a question asking leave for a write, from the goal (the first about a
        purchase gets a `change_of_mind` event's new wish instead, a yes to the changed order)."""
        actions = [kind for kind, pattern in CONFIRM_ACTION.items() if pattern.search(question)]
        # "cancel the order": the order is what is cancelled, not a purchase
        if len(actions) > 1 and "purchase" in actions:
            actions.remove("purchase")
        if self._mind is not None and (not actions or "purchase" in actions):
            reply, self._mind = self._mind.reply, None
            self.confirmed += 1
            return reply
        ids = _ORDER_ID.findall(question)
        yes = any(self.wants(a, ids) for a in actions) if actions else self.wants(None, ids)
        if yes:
            self.confirmed += 1
        forms = (YES if yes else NO)[self.persona]
        return _pick(forms, self._key, "confirm", self.questions)

    def _label(self) -> str:
        return variant_label(self.goal.user_facts.get("category", ""))

    def _uncovered(self, question: str, folded: str | None) -> list[str]:
        """Replies for the product attributes the question asks about that no fact covers
        (`folded`: see `_asks`)."""
        facts = self.goal.user_facts
        complete = self.goal.recommend is not None and "category" in facts
        asked = [
            key
            for key in (*OPEN_SLOTS, "quantity")
            if key not in facts
            and not (key == "brand" and "preference" in facts)
            and _asks(key, question, folded)
        ]
        purchase = self.goal.purchase
        if "quantity" not in facts and purchase is not None and KEEP_IN_CART.search(question):
            asked = [*asked, "quantity"] if "quantity" not in asked else asked
        if not asked:
            return []
        replies = []
        if "quantity" in asked and purchase is not None:
            replies.append(self._quantity(question))
            asked = [k for k in asked if k != "quantity"]
            if not asked:
                return replies
        if not complete:
            slots = [OPEN_SLOTS.get(k, k).format(label=self._label()) for k in asked]
            slot = " or ".join(dict.fromkeys(slots))
            template = _pick(NOTHING_TO_ADD, self._key, "nothing-to-add", self.questions)
            return [*replies, template.format(slot=slot)]
        for key in asked:
            if key == "quantity":
                replies.append(_pick(ONE_UNIT, self._key, key, self.questions))
                continue
            slot = OPEN_SLOTS[key].format(label=self._label())
            template = _pick(OPEN_TEMPLATES, self._key, key, self.questions)
            replies.append(_capitalise(template.format(slot=slot)))
        return replies

    def _quantity(self, question: str) -> str:
        """The units the order must end with, from the goal's purchase lines: of the line
        whose item id the question names, else of the one line, else of every line."""
        slots = self.goal.purchase.slots if self.goal.purchase else []
        named = _ITEM_ID.findall(question)
        if named:
            wanted = [s for s in slots if any(i in s.acceptable for i in named)]
            if not wanted:
                return _pick(NOT_THAT_ONE, self._key, "not-that-one", self.questions)
            slots = wanted[:1]
        units = [f"{s.quantity} unit{'s' if s.quantity > 1 else ''}" for s in slots]
        if len(units) == 1:
            template = _pick(QUANTITY_TOTAL, self._key, "quantity", self.questions)
            return template.format(n=units[0], N=_capitalise(units[0]))
        listed = ", ".join(units[:-1]) + f" and {units[-1]}"
        return _pick(QUANTITY_LINES, self._key, "quantity", self.questions).format(n=listed)

    def reveal_intent(self) -> str:
        """The second intent as the user says it (once); empty when there is none or it's out."""
        if self.intent_revealed or not self.goal.intent_switch:
            return ""
        self.intent_revealed = True
        text = self._scrub(self.goal.intent_switch)
        return _pick(SWITCH_TEMPLATES, self._key, "switch").format(v=text)
