"""What a clause names: the order ids, product ids, brands and product types in a piece of
text (`ProductNames.read` -> `Mentions`), from the catalog's names (`product_names`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ecomrlve.env.shop.products import Catalog

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_WORD = re.compile(r"[A-Za-z0-9&'-]+")


@dataclass(slots=True)
class Mentions:
    orders: set[str] = field(default_factory=set)
    items: set[str] = field(default_factory=set)
    brands: set[str] = field(default_factory=set)
    nouns: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.orders or self.items or self.brands or self.nouns)


class ProductNames:
    """Brands and product types of a catalog, and each product's names (brand, type,
    category), for reading which products a sentence names."""

    def __init__(self, catalog: Catalog | None):
        self.catalog = catalog
        self.brands: frozenset[str] = frozenset()
        self.nouns: dict[str, str] = {}  # spelling (lower case, plural too) -> canonical noun
        self.words: frozenset[str] = frozenset()
        self.shop_words: frozenset[str] = frozenset()
        if catalog is None:
            return
        self.brands = frozenset(catalog._text["brand"].display_vocab)
        nouns = set(catalog._text["category"].display_vocab)
        if "product_type" in catalog._series:
            nouns.update(catalog._series["product_type"].unique().to_list())
        for noun in sorted(nouns):  # a spelling two nouns share goes to the first, always
            canonical = noun.lower()
            for spelling in _spellings(canonical):
                self.nouns.setdefault(spelling, canonical)
        # only n-grams that start with a brand's first word or end with a noun's last word
        # are looked up (a sentence has a few of each)
        self._brand_starts = frozenset(b.split()[0] for b in self.brands if b.strip())
        self._noun_ends = frozenset(s.split()[-1] for s in self.nouns)
        # the words of the shop's names, English in a sentence of any language
        colours = catalog._text["color"].display_vocab
        said = " ".join([*self.brands, *self.nouns, *colours]).lower()
        self.words: frozenset[str] = frozenset(_WORD.findall(said))
        # and for the reply's language, the words of its sizes and titles too ("nubuck", "kg")
        titles = [*catalog._text["size"].display_vocab, *catalog._series["title"].unique()]
        self.shop_words = self.words | frozenset(_WORD.findall(" ".join(titles).lower()))

    def of(self, item_id: str) -> tuple[str, set[str]]:
        """(brand, canonical nouns) of one product; ('', set()) when unknown."""
        catalog = self.catalog
        row = catalog.row_of(item_id) if catalog is not None else None
        if row is None:
            return "", set()
        nouns = {str(catalog.value("category", row)).lower()}
        if "product_type" in catalog._series:
            nouns.add(str(catalog._series["product_type"][row]).lower())
        # in the canonical spelling `read` gives a text's nouns: "laptop" and the category
        # "Laptops" share their spellings, so both sides must name one of them
        return str(catalog.value("brand", row)), {self.nouns.get(n, n) for n in nouns}

    def read(self, text: str, orders: Iterable[str], items: set[str]) -> Mentions:
        """The orders, products, brands and product types `text` names."""
        found = Mentions()
        order_ids = set(orders)
        catalog = self.catalog
        for token in _TOKEN.findall(text):
            if token in order_ids:
                found.orders.add(token)
            elif token in items or (
                catalog is not None and not token.isalpha() and token in catalog
            ):  # an id holds a digit: words are not looked up in the catalog
                found.items.add(token)
        if catalog is None:
            return found
        words = _WORD.findall(text)
        lower = [w.lower() for w in words]
        brand_starts, noun_ends = self._brand_starts, self._noun_ends
        for k, word in enumerate(words):
            if word in brand_starts or ("-" in word and _unjoined(word) in brand_starts):
                for n in (1, 2, 3):
                    part = words[k : k + n]
                    phrase = " ".join(part)
                    if phrase in self.brands:
                        found.brands.add(phrase)
                    elif "-" in part[-1] and (phrase := _unjoined(phrase)) in self.brands:
                        found.brands.add(phrase)  # "the Weiss-made wok", "Jones Labs-brand tee"
            if lower[k] in noun_ends:
                for n in (1, 2, 3):
                    if k + 1 - n >= 0:
                        noun = self.nouns.get(" ".join(lower[k + 1 - n : k + 1]))
                        if noun is not None:
                            found.nouns.add(noun)
        return found


def _unjoined(phrase: str) -> str:
    """`phrase` without the word hyphen-joined to its last ("Jones Labs-made" -> "Jones Labs"):
    no brand holds a hyphen, so a brand joined to a suffix ("-made", "-brand") is the brand."""
    head, _, last = phrase.rpartition(" ")
    return f"{head} {last.partition('-')[0]}" if head else last.partition("-")[0]


def _spellings(noun: str) -> list[str]:
    out = [noun, noun + "s", noun + "es"]
    if noun.endswith("s"):
        out.append(noun[:-1])
    return out


@functools.lru_cache(maxsize=8)
def _names_of(catalog: Any) -> ProductNames:
    return ProductNames(catalog)


def product_names(catalog: Catalog | None) -> ProductNames:
    """The catalog's `ProductNames`, built once per catalog object."""
    return ProductNames(None) if catalog is None else _names_of(catalog)
