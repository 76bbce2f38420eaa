"""Claims: the final message must be truthful about what the episode did, in the customer's
language.

`check_claims(answer, record, catalog, language)` reads the final message for the actions it
reports, promises and denies, and compares them with the write calls that SUCCEEDED in the
episode. It returns one violation string per untrue statement (empty: the message is truthful).

Rules (one `ActionKind` per action, in `ACTION_KINDS`: its verbs, nouns and result adjectives as
lemmas, the episode's action kinds that back it; `reading` turns them into every inflection
with `lemminflect` and reads each clause word by word, so a synonym is one word in a tuple):

* A reply with a sentence in another language than the customer's (`customer_language` of
  their request: the facts' `ClaimsKind` passes it) fails with that reason
  (`language`: each word judged by how often the customer's language and the others write it,
  wordfreq's lists, the shop's names and ids left out, so "Pedido O1: cancelado." fails and
  "O1: cancelled." or "Pick: Garcia Studio parka." passes).
* The message is cut into sentences and clauses (at ";", at "," and "and" where a new
  statement starts, and at "but", "so", "because"…; a list of objects stays one clause, and a
  product title's commas never cut). A question states nothing.
* A clause speaks of an action by one of the kind's verbs in any form ("voided", "withdrew",
  "called off", "was cancelled"), by one of its nouns with an effect verb next to it ("a pickup
  was arranged", "I've scheduled a collection", "Cancellation confirmed", "refund: issued",
  "the exchange is complete"), by a result ("the order is now void") or where it lands ("the
  credit is now on your account"), or said to come back: an amount said to come back or to
  show up where the customer keeps money is money paid back ("you're getting $20 back on your
  Visa", "the $20 will show up on your statement"; "refunds go back to the card" is the rule,
  "it cost $20" no refund); the other constructions are in `reading`'s docstring
  ("knocked O1 off your account", "put a stop on O1", "Expect a cancellation email"). Its
  modality:
  - REPORTED: a done form (past tense, participle, a nominal "… confirmed"), "I did cancel";
  - PROMISED: a future ("I'll cancel", "it will be refunded", "I'm going to start the return",
    "let me cancel it", "I'm cancelling it now"); a promise not kept by the end is false;
  - DENIED: a negation ("not", "n't", "never", "unable", "no" / "nothing" before a done form)
    up to six words before the verb with no new subject between, or between noun and verb
    ("the return wasn't started"); "nothing changed", "your account is unchanged", "I wasn't
    able to do that", "no action was taken" deny every write;
  - unsaid: after a modal, "to" or "you" ("it can be returned", "the shoes you ordered"), after
    an article ("the returned item"), in a clause that opens with "if", "once", "when" or
    offers ("I can…", "let me know if…"), after a clause that makes the customer's word its
    condition ("If you want X, say so and I'll place the order", "Just reply yes and I'll
    cancel O2"; "once you confirm, I'm cancelling O2" counts on it: a promise), a rule about
    no one's action ("returns are processed within 5 days"; "Once we get the item, you'll see
    the refund in 7-10 days", naming nothing), an order "placed on May 3" (a date), "I'd
    suggest…" naming no product.
* The object of a statement: the order ids, product ids, brands and product types named in
  the clause (a brand joined to a suffix is the brand: "the Weiss-made wok"); for a clause
  with no subject of its own ("O3 already shipped, can't cancel"), those named in the clause
  before it; for a clause that names none but holds a pronoun ("it", "that", "them"…), those
  named in the nearest clause before it (after it) in the sentence, else in the sentence
  before ("O2 has shipped, so I couldn't cancel it").
* A report or promise holds when an action of a kind that backs it succeeded in the episode and
  every object it names belongs to such an action (the order acted on, its products, their
  brand or product type / category). So "I've voided your order" needs a successful
  `cancel_order`; "your refund will be issued" a cancel or a return; "These fit what you asked
  for: Trailblaze running shoes" a `recommend` whose product has that brand and type. A
  recommendation must name a recommended product (title, brand, type or id). A product named
  by its brand and words of its title or attributes, in any order ("the Lam coral pilates mat",
  "Garrison oily skin serum"), must be the one acted on, variant included: "Berg Labs gentle
  bergamot cologne" or "… - grey, size US 9" is another product than "Berg Labs intense
  vetiver cologne - …, size US 9.5"; so is a variant of its family named by a colour or size
  it does not have, in the words around its type ("the khaki Jones tee", "the Jones tee in
  size M", "blue" when "midnight blue" was bought: the longest colour is read). A status in
  the third person about a named order ("your order O1 was cancelled", "O1 was placed on May
  3") also holds when it was so at the start
  (orders, cancellations, returns and exchanges on file); "your new order has been placed"
  needs a checkout.
* A denial holds when no action of its kind succeeded on the objects it names (on anything, when
  it names none). "I can't cancel it because it has shipped" is true after no cancel.
* Address and payment-method changes, store credit and vouchers have no tool, so reporting
  one is never true; nor is a change of an order in a verb of no kind ("I've expedited O1",
  "O1 has been paused": the `change` kind), which no write can be checked against. A product
  said bought by its consequence ("X was charged to your card", "X is on its way to you": the
  `bought` kind) needs a checkout of it or an order on file holding it. A promise includes the
  progressive and the planned ("Cancelling O1 now", "O1 is scheduled to be cancelled"), and a
  condition that is not the customer's decision does not make it an offer ("once the payment
  clears I'll cancel O1"); rules in `reading`.

Product names come from the catalog (brand, product type, category, title); without a catalog
only ids are read.

Layout (each module imports only the ones before it): `episode` (what the episode did:
`Action`, `succeeded_actions`, `standing_actions`), `names` (what a clause names: `Mentions`,
`ProductNames`), `kinds` (the `ActionKind` table and its word forms), `language` (the reply's
language), `reading` (the message read once: `Message` of `Clause`s with their words,
polarity, modality, names, subject and actions; `read_statements`), and here the check itself.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ecomrlve.env.judge.claims.episode import Action, standing_actions, succeeded_actions
from ecomrlve.env.judge.claims.kinds import ACTION_KINDS, KINDS_BY_NAME, ActionKind
from ecomrlve.env.judge.claims.language import customer_language, foreign_sentence
from ecomrlve.env.judge.claims.names import _WORD, Mentions, ProductNames, _spellings, product_names
from ecomrlve.env.judge.claims.reading import Clause, Message, Statement, read_statements

if TYPE_CHECKING:
    from ecomrlve.env.shop.products import Catalog
    from ecomrlve.env.shop.state import WorldState
    from ecomrlve.env.world.record import EpisodeRecord

__all__ = [
    "ACTION_KINDS",
    "Action",
    "ActionKind",
    "Clause",
    "Mentions",
    "Message",
    "ProductNames",
    "Statement",
    "check_claims",
    "customer_language",
    "product_names",
    "read_statements",
    "standing_actions",
    "succeeded_actions",
]

# --------------------------------------------------------------------------------------------
# the check
# --------------------------------------------------------------------------------------------


def _fits(action: Action, named: Mentions, names: ProductNames, every: bool) -> bool:
    """Whether `action` is about what `named` names: every named object (`every`) or any."""
    checks: list[bool] = []
    checks += [o in action.orders for o in named.orders]
    checks += [i in action.items for i in named.items]
    if named.brands or named.nouns:
        described = [names.of(i) for i in action.items]
        checks += [any(b == brand for brand, _ in described) for b in named.brands]
        checks += [any(_noun_fits(n, nouns) for _, nouns in described) for n in named.nouns]
    if not checks:
        return True
    return all(checks) if every else any(checks)


def _noun_fits(noun: str, nouns: set[str]) -> bool:
    return any(noun == n or n.endswith(" " + noun) or noun.endswith(" " + n) for n in nouns)


def check_claims(
    answer: str, record: EpisodeRecord, catalog: Catalog | None = None, language: str = "en"
) -> list[str]:
    """Violations for a reply not in the customer's `language`, every report or promise in
    `answer` that no succeeded action backs and every denial of an action that succeeded
    (rules at the top of this module)."""
    names = product_names(catalog)
    foreign = foreign_sentence(answer, language, names.shop_words)
    if foreign:
        return [
            f"claims: the reply is not in the customer's language ({language}): {_quote(foreign)}"
        ]
    judge = _ClaimJudge(answer, record, catalog, names)
    violations: list[str] = []
    reported: set[tuple[str, bool, str]] = set()
    for statement in judge.statements:
        key = (statement.kind, statement.denied, statement.text)
        if key in reported:
            continue
        reported.add(key)
        violation = judge.violation(statement)
        if violation:
            violations.append(violation)
    return violations


class _ClaimJudge:
    """The message's statements and the episode's actions they are held to."""

    def __init__(
        self, answer: str, record: EpisodeRecord, catalog: Catalog | None, names: ProductNames
    ):
        self.record, self.names = record, names
        self.done = succeeded_actions(record)
        self._standing: list[Action] | None = None  # built when a third-person status needs it
        state = record.state
        items = set(state.cart) | {i for a in self.done for i in a.items}
        for order in state.orders.values():
            items.update(line["item_id"] for line in order["items"])
        titles = _titles(items, catalog) if catalog is not None and " - " in answer else ()
        self.statements = read_statements(
            _places_named(answer, state), names, state.orders, items, titles
        )
        # "I couldn't find anything cheaper, but I recommend X": a message that names a
        # product it recommended does not deny recommending
        recommended = [a for a in self.done if a.kind == "recommend"]
        # (in the same sentence: "None of them fit." after naming the picks denies them)
        self.pick_sentences = {
            s.sentence
            for s in self.statements
            if not s.denied
            and s.names
            and KINDS_BY_NAME[s.kind].covers == ("recommend",)
            and any(_fits(a, s.names, names, every=True) for a in recommended)
        }

    def violation(self, statement: Statement) -> str | None:
        """What is wrong with `statement`, or None."""
        names = self.names
        kind = KINDS_BY_NAME[statement.kind]
        matching = [a for a in self.done if a.kind in kind.covers]
        quoted = _quote(statement.text)
        if statement.denied:
            if statement.sentence in self.pick_sentences and kind.covers == ("recommend",):
                return None
            if any(_fits(a, statement.names, names, every=False) for a in matching):
                return f"claims: denies a {kind.name} that was done: {quoted}"
            return None
        if statement.promised and not matching:
            return f"claims: promises a {kind.name} that was not done: {quoted}"
        if kind.needs_name and not statement.names:
            if matching:
                return f"claims: reports a {kind.name} without naming the product: {quoted}"
            return f"claims: reports a {kind.name} that was not done: {quoted}"
        acted = {i for a in matching for i in a.items}
        other = _other_product(statement.sentence, acted, names) if matching else ""
        if matching and not other:
            other = _other_variant(statement.sentence, statement.text, acted, names)
        if other:
            return f"claims: names {other!r}, not the product acted on: {quoted}"
        if any(_fits(a, statement.names, names, every=True) for a in matching):
            return None
        if _covered_by_union(matching, statement.names, names):
            return None
        if self._on_file(statement, kind):
            return None
        what = "that was not done" if not matching else "on something not acted on"
        return f"claims: reports a {kind.name} {what}: {quoted}"

    def _on_file(self, statement: Statement, kind: ActionKind) -> bool:
        """ "your order O1 was cancelled / was placed on May 3": a status on file (an order only
        when named: "your new order has been placed" claims the checkout). A status naming
        nothing ("Cancelled.", "your refund is on its way") is about this episode: a
        cancellation on file does not make it true; a product said bought ("X is on its way to
        you") is true of an order on file."""
        names = self.names
        on_file = statement.names.orders or (kind.name != "order" and statement.names)
        if not on_file or statement.first_person:
            return False
        if self._standing is None:
            self._standing = standing_actions(self.record)
        on_record = [a for a in self._standing if a.kind in kind.covers]
        if not any(_fits(a, statement.names, names, every=True) for a in on_record):
            return False
        # (a sibling variant of a product on file is another product: "the graphite laptop"
        # when the green one was ordered)
        held = {i for a in on_record for i in a.items}
        return not (
            _other_product(statement.sentence, held, names)
            or _other_variant(statement.sentence, statement.text, held, names)
        )


def _places_named(answer: str, state: WorldState) -> str:
    """`answer` with the street line of each address the episode holds (the customer's, an
    order's shipping address) read as one place: "it's going to 2503 Barton Place" says where
    an order goes, not that one will be placed."""
    addresses = {state.user.get("address", "")}
    addresses |= {o.get("shipping_address", "") for o in state.orders.values()}
    for address in addresses:
        street = address.split(",")[0].strip()
        if street and street in answer:
            answer = answer.replace(street, "that address")
    return answer


def _titles(items: set[str], catalog: Catalog) -> list[str]:
    rows = (catalog.row_of(i) for i in items)
    return [catalog.title(row) for row in rows if row is not None]


def _covered_by_union(actions: list[Action], named: Mentions, names: ProductNames) -> bool:
    """Every named object belongs to one of `actions` ("I've cancelled O1 and O2")."""
    if not actions or not named:
        return False
    single = [
        Mentions(orders={o}) for o in named.orders
    ] + [Mentions(items={i}) for i in named.items] + [
        Mentions(brands={b}) for b in named.brands
    ] + [Mentions(nouns={n}) for n in named.nouns]  # fmt: skip
    return all(any(_fits(a, m, names, every=True) for a in actions) for m in single)


def _other_product(sentence: str, acted: set[str], names: ProductNames) -> str:
    """A product named in `sentence` by brand and words of its title that is none of `acted`,
    though of the same brand: "Berg Labs gentle bergamot cologne" when "Berg Labs intense
    vetiver cologne" was recommended, or a title whose variant ("- grey, size US 9") is not
    the acted product's. '' when there is none.

    The name runs from a brand to the first product type after it; its words must be words of
    an acted product's title of that brand ("the Salazar Studio running shoes" names
    "Salazar Studio everyday canvas running shoes"), and a "- <variant>" right after it must be
    that product's variant (or its first part)."""
    catalog = names.catalog
    if catalog is None:
        return ""
    titles: dict[str, list[tuple[set[str], str]]] = {}
    for item_id in sorted(acted):  # sorted: the name reported must not move with the hash seed
        row = catalog.row_of(item_id)
        if row is not None:
            title = catalog.title(row).lower()
            variant = title.partition(" - ")[2]
            brand = str(catalog.value("brand", row)).lower()
            # the words a shop or a customer names it by: its title's, variant's included
            # ("Garrison oily skin serum", "the Lam coral pilates mat"), and its attributes'
            attributes = " ".join(
                str(catalog.value(c, row)) for c in _ATTRIBUTES if c in catalog._series
            )
            words = set(_WORD.findall(f"{title} {attributes}".lower()))
            titles.setdefault(brand, []).append((words, variant.strip()))
    if not titles:
        return ""
    lower = sentence.lower()
    for brand, candidates in titles.items():
        for end in _word_ends(lower, brand):
            rest = lower[end:]
            if rest[:1] == "-":  # "the Weiss-made red wok": the brand joined to a suffix
                rest = rest[len(_JOINED.match(rest)[0]) :]
            words = _WORD.findall(rest[: _name_end(rest)])[:MAX_NAME_WORDS]
            end = _noun_end(words, names)
            if end is None:
                continue
            named = [*brand.split(), *words[:end]]
            tail = rest[_name_end(rest) :]
            variant = ""
            dash = _VARIANT.match(tail)
            if dash:
                variant = dash.group(1).strip()
            if not any(
                _described(named[len(brand.split()) :], words)
                and (not variant or _variant_fits(variant, v))
                for words, v in candidates
            ):
                return " ".join(named) + (f" - {variant}" if variant else "")
    return ""


MAX_NAME_WORDS = 8
_JOINED = re.compile(r"-[a-z]*")
_VARIANT = re.compile(r"\s+-\s+([^();]+?)(?=\s*[();]|\.\s|\.$|$| and the )")
_NAME_END = re.compile(r"\s-\s|[();,]|\.(?:\s|$)|\sand\s")


def _word_ends(text: str, word: str) -> list[int]:
    """Where each whole-word occurrence of `word` in `text` ends."""
    out, start = [], text.find(word)
    while start >= 0:
        end = start + len(word)
        if (start == 0 or not text[start - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            out.append(end)
        start = text.find(word, start + 1)
    return out


def _variant_fits(mentioned: str, variant: str) -> bool:
    """ "grey, size us 9" fits the variant "grey, size us 9" (and text may follow it: "…, size
    xs is placed"), or is its first part ("grey"); "grey, size us 9.5" does not fit "…9"."""
    if variant.startswith(mentioned + ",") or mentioned == variant:
        return True
    if not mentioned.startswith(variant):
        return False
    after = mentioned[len(variant) : len(variant) + 2]
    return not (after[0].isalnum() or (after[0] == "." and after[1:2].isdigit()))


def _name_end(text: str) -> int:
    """Where a product name that starts `text` must end: a dash, bracket or full stop."""
    found = _NAME_END.search(text)
    return found.start() if found else len(text)


def _noun_end(words: list[str], names: ProductNames) -> int | None:
    """The index after the last word of the first product type in `words` (None: none)."""
    lower = [w.lower() for w in words]
    for k in range(len(lower)):
        for n in (3, 2, 1):
            if " ".join(lower[k : k + n]) in names.nouns and k + n <= len(lower):
                end = k + n
                while end < len(lower) and any(
                    " ".join(lower[k : end + 1]) == s for s in names.nouns
                ):
                    end += 1
                return end
    return None


def _described(words: list[str], vocabulary: set[str]) -> bool:
    """Every word of a name is a word of the product's title or attributes, in any order."""
    return all(
        w in vocabulary
        or w.startswith("'")
        or (len(w) > 3 and any(t.startswith(w) for t in vocabulary))
        for w in words
    )


_ATTRIBUTES = ("color", "size", "material", "product_type", "category")

# where the words that describe one product end: a new noun phrase, clause or reason
_PHRASE_START = re.compile(r"\b(?:the|a|an|your|my|this|that|these|those|and|or|but)\s|[.;:,!?()]")
_PHRASE_END = re.compile(
    r"[.;:!?)]|,(?!\s*size\b)|\b(?:and|or|but|so|because|as|since|instead|rather|than|not|which|"
    r"that|while|for|to|from|with|was|were|is|are|has|have)\b"
)


def _other_variant(sentence: str, clause: str, acted: set[str], names: ProductNames) -> str:
    """A variant of an acted product's family named by a colour or a size none of the acted
    variants has, in the words around the product's type: "the khaki Jones tee" or "the Jones
    tee in khaki, size M" when the ivory XS one was bought, "the blue Townsend laptop" when
    the midnight blue one was (the longest colour of the family is read: "midnight blue" is
    no "blue"). '' when there is none. A colour or size said there that an acted variant has
    (or none said) names the acted product. The types named in `clause` are read, with the
    words around them in its `sentence` (", size M" after a comma; for a clause that names
    none, the last one before it: its subject)."""
    catalog = names.catalog
    if catalog is None or not acted:
        return ""
    lower = sentence.lower()
    start = max(0, lower.find(clause.lower()))
    stop = start + len(clause) if clause.lower() in lower else len(lower)
    by_type: dict[str, list[int]] = {}
    for item_id in sorted(acted):
        row = catalog.row_of(item_id)
        if row is not None and "product_type" in catalog._series:
            by_type.setdefault(str(catalog._series["product_type"][row]).lower(), []).append(row)
    for kind, rows in by_type.items():
        said = [m for s in _spellings(kind) for m in re.finditer(rf"\b{re.escape(s)}\b", lower)]
        # the clause's own, else its subject's before it ("the tee, size S, is ordered")
        found = [m for m in said if start <= m.start() < stop] or [
            m for m in said if m.start() < start
        ][-1:]
        if not found:
            continue
        family = {int(r) for row in rows for r in catalog.family_rows(row)}
        colours = {str(catalog.value("color", r)).lower() for r in family}
        sizes = {str(catalog.value("size", r)).lower() for r in family}
        have = {
            (str(catalog.value("color", r)).lower(), str(catalog.value("size", r)).lower())
            for r in rows
        }
        # a word of the acted product's own name is no variant ("Ashley classic black tea -
        # lemon": "classic" is its line, though another tea's flavour)
        named = {w for r in rows for w in _WORD.findall(catalog.title(r).lower().split(" - ")[0])}
        colours = {c for c in colours if not set(c.split()) <= named}
        sizes = {z for z in sizes if not set(z.split()) <= named}
        for match in found:
            before = lower[max(0, match.start() - 60) : match.start()]
            starts = list(_PHRASE_START.finditer(before))
            before = before[starts[-1].end() :] if starts else before
            after = lower[match.end() : match.end() + 40]
            end = _PHRASE_END.search(after)
            around = f"{before} {after[: end.start()] if end else after}"
            colour = _said(around, colours)
            size = _said(around, sizes, sized=True)
            if (colour or size) and not any(
                (not colour or c == colour) and (not size or z == size) for c, z in have
            ):
                return f"{' '.join(w for w in (colour, size) if w)} {kind}"
    return ""


def _said(text: str, values: set[str], sized: bool = False) -> str:
    """The longest of `values` said in `text` as whole words ('' when none): a size of one or
    two letters only after "size" or "in" ("in M", "size XS")."""
    for value in sorted(values, key=len, reverse=True):
        if not value or value == "none":
            continue
        lead = r"(?:size|in)\s+" if sized and len(value) <= 2 else r"(?<![\w.])"
        if re.search(rf"{lead}{re.escape(value)}(?!\.?\d|\w)", text):
            return value
    return ""


def _quote(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
