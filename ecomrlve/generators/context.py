"""What generators read, loaded once per process: the env's catalog, columns, policies, a world.

`GenContext.load(data_dir)` is cached per (path, catalog_hash): a worker process pays the load
(and the search-index open) once, then every task is numpy look-ups. The same `Catalog` object
the env uses answers `search` and `filter_mask`, so the acceptable sets the generators compute
are, by construction, what the verifier and the tools see.

Synthesised people and orders live here too: user ids ("U" + 6 digits), order ids ("O" + 7
digits), names and addresses from Faker's word lists, and dates relative to the task's own
`today()`: a day drawn per task from its key within `TODAY_RANGE` (`dated` sets it around a
build), so "days since delivery" never depends on the wall clock and no date can be memorised
across tasks.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import polars as pl
from faker.providers.address.en_US import Provider as AddressProvider
from faker.providers.person.en_US import Provider as PersonProvider

from ecomrlve.catalogs.policies import MEMBERSHIPS, PolicyBook
from ecomrlve.catalogs.taxonomy import CATEGORIES, CATEGORY_BY_NAME
from ecomrlve.env.shop.products import Catalog, normalise_filters, normalise_text
from ecomrlve.generators.draws import below
from ecomrlve.generators.errors import GenerationError
from ecomrlve.store import DataPaths

# the first and last day a task's `today` can be (a year: the dates of two tasks do not tell
# each other's, and every weekday, month and year boundary turns up)
TODAY_RANGE: tuple[dt.date, dt.date] = (dt.date(2025, 7, 1), dt.date(2026, 6, 30))
_TODAY: contextvars.ContextVar[dt.date] = contextvars.ContextVar("today")
PAYMENT_METHODS: tuple[str, ...] = ("visa", "mastercard", "amex", "paypal", "gift card")

_FIRST = tuple(PersonProvider.first_names)
_LAST = tuple(PersonProvider.last_names)
_STREETS = tuple(PersonProvider.last_names)
_SUFFIXES = tuple(AddressProvider.street_suffixes)
_STATES = tuple(AddressProvider.states)
_CITY_PREFIX = tuple(AddressProvider.city_prefixes)
_CITY_SUFFIX = tuple(AddressProvider.city_suffixes)


def iso(day: dt.date) -> str:
    return day.isoformat()


def today_of(entropy: np.random.SeedSequence) -> dt.date:
    """The day `entropy` picks in `TODAY_RANGE` (uniform)."""
    first, last = TODAY_RANGE
    span = (last - first).days + 1
    return first + dt.timedelta(days=int(np.random.default_rng(entropy).integers(span)))


@contextlib.contextmanager
def dated(day: dt.date) -> Iterator[dt.date]:
    """Build a task as of `day`: `today()` and every date helper read it inside the block."""
    token = _TODAY.set(day)
    try:
        yield day
    finally:
        _TODAY.reset(token)


def today() -> dt.date:
    """The current task's date (set by `dated`; raises outside a task build)."""
    try:
        return _TODAY.get()
    except LookupError:
        raise RuntimeError("today() outside a task build: wrap the build in dated(day)") from None


def days_ago(n: int) -> dt.date:
    return today() - dt.timedelta(days=int(n))


_ISO_CACHE: dict[tuple[dt.date, int], str] = {}


def _iso_days_ago(n: int) -> str:
    """ISO date `n` days before today (negative: after), memoised: orders need thousands."""
    key = (today(), n)
    text = _ISO_CACHE.get(key)
    if text is None:
        if len(_ISO_CACHE) > 200_000:  # a year of todays x a few hundred offsets
            _ISO_CACHE.clear()
        text = _ISO_CACHE[key] = days_ago(n).isoformat()
    return text


def _codes(series: pl.Series) -> tuple[np.ndarray, list[str]]:
    """Dense integer codes of a string column and the vocabulary they index (sorted)."""
    frame = series.to_frame("v").with_columns(code=pl.col("v").rank("dense").cast(pl.Int32) - 1)
    vocab = frame.unique("code").sort("code")["v"].to_list()
    return frame["code"].to_numpy(), vocab


def _postings(groups: np.ndarray, codes: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    """(group, code) -> the rows with that group and code, ascending."""
    order = np.lexsort((codes, groups))  # by group, then code, then row (lexsort is stable)
    pairs = groups[order].astype(np.int64) * (int(codes.max(initial=0)) + 1) + codes[order]
    cuts = np.flatnonzero(np.diff(pairs)) + 1
    starts = np.concatenate(([0], cuts)) if len(order) else np.empty(0, dtype=np.int64)
    ends = np.concatenate((cuts, [len(order)])) if len(order) else starts
    return {
        (int(groups[order[a]]), int(codes[order[a]])): order[a:b].astype(np.int64)
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    }


@dataclass(frozen=True)
class Column:
    """A string column as codes + vocabulary (for fast sampling and equality masks)."""

    codes: np.ndarray
    vocab: list[str]

    def value(self, row: int) -> str:
        return self.vocab[self.codes[row]]


class GenContext:
    """Catalog, columns, policies and world helpers shared by every task of a process."""

    _cache: ClassVar[dict[tuple[str, str], GenContext]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, catalog: Catalog):
        self._columns_of(catalog)
        self._index_categories()
        self._filter_index()
        self._scalar_lookups()
        self._categories_and_policies()

    def _columns_of(self, catalog: Catalog) -> None:
        """The catalog's columns: numbers as arrays, strings as codes + vocabulary."""
        self.catalog = catalog
        self.catalog_hash = catalog.catalog_hash
        self.policies: PolicyBook = catalog.policies
        products = catalog.products
        self.size = catalog.size
        self.item_ids = catalog.item_ids
        self._id_array = np.array(self.item_ids, dtype=object)
        self.titles: list[str] = products["title"].to_list()
        # a full title (brand, name, colour, size) that no other variant shares
        self.title_unique = (~products["title"].is_duplicated()).to_numpy()
        self.price = catalog.price
        self.rating = catalog.rating
        self.ship_days = catalog.ship_days
        self.stock = catalog.stock
        self.in_stock = catalog.in_stock
        self.category = Column(*_codes(products["category"]))
        self.brand = Column(*_codes(products["brand"]))
        self.color = Column(*_codes(products["color"]))
        self.size_col = Column(*_codes(products["size"]))
        self.family = Column(*_codes(products["family_id"]))
        self.material = Column(*_codes(products["material"]))
        # the product type ("crew neck shirt"); catalogs written before it was a column derive
        # it from the title (see `noun`)
        self.product_type: Column | None = (
            Column(*_codes(products["product_type"]))
            if "product_type" in products.columns
            else None
        )

    def _index_categories(self) -> None:
        """Each category's rows, and its in-stock and sold-out ones."""
        # rows of each category, and the in-stock subset (sampling targets is an index draw)
        order = np.argsort(self.category.codes, kind="stable")
        bounds = np.searchsorted(
            self.category.codes[order], np.arange(len(self.category.vocab) + 1)
        )
        self.rows_by_category: dict[str, np.ndarray] = {
            name: order[bounds[i] : bounds[i + 1]] for i, name in enumerate(self.category.vocab)
        }
        self.in_stock_by_category: dict[str, np.ndarray] = {
            name: rows[self.in_stock[rows]] for name, rows in self.rows_by_category.items()
        }
        self.sold_out_by_category: dict[str, np.ndarray] = {
            name: rows[~self.in_stock[rows]] for name, rows in self.rows_by_category.items()
        }

    def _filter_index(self) -> None:
        """What `rows_where` filters with."""
        # for `rows_where`: every column permuted so that each category is one contiguous
        # slice (sorted by row within it), and the env's normalised text values -> our codes
        self._no_rows = np.empty(0, dtype=np.int64)
        perm = np.argsort(self.category.codes, kind="stable")
        self._by_category: dict[str, np.ndarray] = {
            "row": perm,
            "brand": self.brand.codes[perm],
            "color": self.color.codes[perm],
            "size": self.size_col.codes[perm],
            "price": self.price[perm],
            "rating": self.rating[perm],
            "ship_days": self.ship_days[perm],
            "in_stock": self.in_stock[perm],
        }
        starts = np.searchsorted(self.category.codes[perm], np.arange(len(self.category.vocab) + 1))
        self._category_span: dict[str, tuple[int, int]] = {
            normalise_text(name): (int(starts[i]), int(starts[i + 1]))
            for i, name in enumerate(self.category.vocab)
        }
        self._norm_codes: dict[str, dict[str, list[int]]] = {}
        # (category, code) -> that category's rows with that brand / colour / size, ascending:
        # a product need's exact filters start from one of these (tens of rows), not from the
        # category's thousands
        self._postings: dict[str, dict[tuple[int, int], np.ndarray]] = {}
        self._global: dict[str, np.ndarray] = {
            "brand": self.brand.codes,
            "color": self.color.codes,
            "size": self.size_col.codes,
            "price": self.price,
            "rating": self.rating,
            "ship_days": self.ship_days,
            "in_stock": self.in_stock,
        }
        for key, column in (("brand", self.brand), ("color", self.color), ("size", self.size_col)):
            codes: dict[str, list[int]] = {}
            for code, value in enumerate(column.vocab):
                codes.setdefault(normalise_text(value), []).append(code)
            self._norm_codes[key] = codes
            self._postings[key] = _postings(self.category.codes, column.codes)
        self._category_code = {
            normalise_text(name): i for i, name in enumerate(self.category.vocab)
        }

    def _scalar_lookups(self) -> None:
        """Memos and plain-Python copies for per-row look-ups."""
        # memo of `noun(row)` (a pure function of the row; a task asks for dozens)
        self._nouns: dict[int, str] = {}
        self._nouns_longest_first: dict[str, list[str]] = {
            name: sorted(CATEGORY_BY_NAME[name].nouns, key=len, reverse=True)
            if name in CATEGORY_BY_NAME
            else []
            for name in self.category.vocab
        }
        # Python floats / ints for the scalar look-ups of `order` (numpy scalar indexing costs
        # several times more per element)
        self._price_list: list[float] = self.price.tolist()
        self._ship_days_list: list[int] = self.ship_days.tolist()

    def _categories_and_policies(self) -> None:
        """The categories tasks draw from and the policy look-ups of their references."""
        self.categories: list[str] = [
            c.name for c in CATEGORIES if len(self.in_stock_by_category.get(c.name, ())) >= 4
        ]
        if not self.categories:
            raise ValueError("the catalog has too few in-stock products to generate tasks")
        # (topic, category, membership) -> policy_id, for reference `search_policy` checks
        self.policy_ids: dict[tuple[str, str, str], str] = {
            (r["topic"], r["category"], r["membership"]): r["policy_id"]
            for r in self.policies.frame.iter_rows(named=True)
        }
        self._policy_hits: dict[str, frozenset[str]] = {}
        self._category_brands: dict[str, np.ndarray] = {}
        self.returnable_categories = [
            c for c in self.categories if self.policies.return_rule(c, "standard").returnable
        ]
        self.final_sale_categories = [
            c for c in self.categories if not self.policies.return_rule(c, "standard").returnable
        ]

    # ---- loading ------------------------------------------------------------------------------
    @classmethod
    def load(cls, data_dir: str | os.PathLike) -> GenContext:
        """The context of a data directory, built once per process (raises StoreError)."""
        catalog = Catalog.load(data_dir)
        key = (str(DataPaths.of(data_dir).root), catalog.catalog_hash)
        with cls._lock:
            ctx = cls._cache.get(key)
            if ctx is None:
                ctx = cls(catalog)
                cls._cache[key] = ctx
            return ctx

    # ---- product look-ups ----------------------------------------------------------------------
    def product(self, row: int) -> dict[str, Any]:
        """The fields generators phrase prompts from (original spelling, not normalised)."""
        title = self.titles[row]
        return {
            "item_id": self.item_ids[row],
            "title": title,
            "name": title.split(" - ")[0],
            "category": self.category.value(row),
            "brand": self.brand.value(row),
            "color": self.color.value(row),
            "size": self.size_col.value(row),
            "material": self.material.value(row),
            "price": float(self.price[row]),
            "rating": float(self.rating[row]),
            "ship_days": int(self.ship_days[row]),
            "stock": int(self.stock[row]),
        }

    def noun(self, row: int) -> str:
        """The product type of a row ("running shoes")."""
        row = int(row)
        if self.product_type is not None:
            return self.product_type.value(row)
        noun = self._nouns.get(row)
        if noun is None:
            noun = self._nouns[row] = self._find_noun(row)
        return noun

    def _find_noun(self, row: int) -> str:
        name = self.titles[row].split(" - ")[0]
        category = self.category.value(row)
        for noun in self._nouns_longest_first[category]:
            if name.endswith(noun):
                return noun
        return category

    def rows_where(self, filters: dict[str, Any]) -> np.ndarray:
        """Rows of the whole catalog that satisfy `filters`, ascending, with the env's exact
        semantics (`ProductNeed.search` relies on the order).

        With a category filter (every product need has one) only that category's rows are
        tested, ~20x faster than a full `Catalog.filter_mask` on 100k products, and with an
        exact brand / colour / size only the rows of its (category, value) posting; the tests
        check both give the same rows. Without one, `Catalog.filter_mask` itself answers.
        """
        normalised = normalise_filters(filters)
        category = next((v for k, v in normalised if k == "category"), None)
        if category is None:
            return np.flatnonzero(self.catalog.filter_mask(filters))
        span = self._category_span.get(category)
        if span is None:
            return self._no_rows
        exact = [
            (key, self._norm_codes[key].get(value))
            for key, value in normalised
            if key in self._norm_codes
        ]
        if any(wanted is None for _, wanted in exact):
            return self._no_rows
        single = [(key, wanted[0]) for key, wanted in exact if wanted and len(wanted) == 1]
        if single:
            return self._rows_from_posting(normalised, self._category_code[category], single)
        lo, hi = span
        by_cat = self._by_category  # columns permuted so each category is one slice
        keep = np.ones(hi - lo, dtype=bool)
        for key, value in normalised:
            if key == "category":
                continue
            if key in self._norm_codes:
                wanted = self._norm_codes[key].get(value)
                if wanted is None:
                    return self._no_rows
                codes = by_cat[key][lo:hi]
                keep &= codes == wanted[0] if len(wanted) == 1 else np.isin(codes, wanted)
            elif key == "min_price":
                keep &= by_cat["price"][lo:hi] >= value
            elif key == "max_price":
                keep &= by_cat["price"][lo:hi] <= value
            elif key == "min_rating":
                keep &= by_cat["rating"][lo:hi] >= value
            elif key == "max_ship_days":
                keep &= by_cat["ship_days"][lo:hi] <= value
            elif key == "in_stock":
                keep &= by_cat["in_stock"][lo:hi] == value
        return by_cat["row"][lo:hi][keep]

    def _rows_from_posting(
        self,
        normalised: tuple[tuple[str, Any], ...],
        category: int,
        single: list[tuple[str, int]],
    ) -> np.ndarray:
        """`rows_where` from the smallest (category, exact value) posting: the other filters
        are tested on its rows only (same rows, same ascending order)."""
        postings = self._postings
        start_key, rows = None, None
        for key, code in single:
            posting = postings[key].get((category, code))
            if posting is None:
                return self._no_rows
            if rows is None or len(posting) < len(rows):
                start_key, rows = key, posting
        if rows is None or len(rows) == 0:
            return self._no_rows
        columns = self._global
        keep = None
        for key, value in normalised:
            if key == "category" or key == start_key:
                continue
            if key in self._norm_codes:
                wanted = self._norm_codes[key][value]
                codes = columns[key][rows]
                test = codes == wanted[0] if len(wanted) == 1 else np.isin(codes, wanted)
            elif key == "min_price":
                test = columns["price"][rows] >= value
            elif key == "max_price":
                test = columns["price"][rows] <= value
            elif key == "min_rating":
                test = columns["rating"][rows] >= value
            elif key == "max_ship_days":
                test = columns["ship_days"][rows] <= value
            elif key == "in_stock":
                test = columns["in_stock"][rows] == value
            else:
                continue
            keep = test if keep is None else keep & test
        return rows if keep is None else rows[keep]

    def ids(self, rows: np.ndarray | list[int]) -> list[str]:
        return self._id_array[np.asarray(rows, dtype=np.int64)].tolist()

    def family_rows(self, row: int) -> np.ndarray:
        return self.catalog.family_rows(row)

    def search_rows(self, query: str, filters: dict[str, Any], top_k: int) -> tuple[int, ...]:
        return self.catalog.search_rows(query, filters, top_k)

    def brands_in(self, category: str) -> np.ndarray:
        """A mask over the brand vocabulary: the brands with a row in `category` (memoised:
        one pass over the category's thousands of rows)."""
        mask = self._category_brands.get(category)
        if mask is None:
            rows = self.rows_by_category[category]
            counts = np.bincount(self.brand.codes[rows], minlength=len(self.brand.vocab))
            mask = self._category_brands[category] = counts > 0
            mask.flags.writeable = False  # shared by every task of the process
        return mask

    def policy_hits(self, query: str) -> frozenset[str]:
        """Ids of the policies the env's `search_policy` returns for `query`. Memoised: the
        generators ask a few hundred fixed questions (topic x category x membership) again
        and again, and each answer is a pure function of the policy book."""
        hits = self._policy_hits.get(query)
        if hits is None:
            from ecomrlve.env.shop.tools import policy_search

            found = policy_search(self.catalog, query)
            hits = self._policy_hits[query] = frozenset(p["policy_id"] for p in found)
        return hits

    def pick_in_stock(
        self, rng: np.random.Generator, category: str | None = None, min_stock: int = 1
    ) -> int:
        """A random in-stock row (of `category` when given) with at least `min_stock` units."""
        cat = category or self.categories[below(rng, len(self.categories))]
        rows = self.in_stock_by_category[cat]
        for _ in range(16):
            row = int(rows[below(rng, len(rows))])
            if self.stock[row] >= min_stock:
                return row
        deep = rows[self.stock[rows] >= min_stock]
        if len(deep) == 0:
            raise GenerationError(f"no {cat} item with {min_stock}+ units in stock")
        return int(deep[below(rng, len(deep))])

    def pick_any(self, rng: np.random.Generator, category: str | None = None) -> int:
        cat = category or self.categories[below(rng, len(self.categories))]
        rows = self.rows_by_category[cat]
        return int(rows[below(rng, len(rows))])

    # ---- people and orders ---------------------------------------------------------------------
    def make_user(self, rng: np.random.Generator, membership: str | None = None) -> dict[str, Any]:
        """A shopper: id, name, membership, address and one or two saved payment methods."""
        u = rng.random(14)  # one vector draw: a dozen scalar draws cost more than the rest

        def choose(options: tuple[str, ...], k: int) -> str:
            return options[int(u[k] * len(options))]

        city = choose(_CITY_PREFIX, 0) + " " + choose(_LAST, 1) + choose(_CITY_SUFFIX, 2)
        address = (
            f"{1 + int(u[3] * 9998)} {choose(_STREETS, 4)} {choose(_SUFFIXES, 5)}, {city}, "
            f"{choose(_STATES, 6)}"
        )
        first = int(u[7] * len(PAYMENT_METHODS))
        methods = [f"{PAYMENT_METHODS[first]}-{1000 + int(u[8] * 9000)}"]
        if u[9] < 0.5:
            second = (first + 1 + int(u[10] * (len(PAYMENT_METHODS) - 1))) % len(PAYMENT_METHODS)
            methods.append(f"{PAYMENT_METHODS[second]}-{1000 + int(u[11] * 9000)}")
        return {
            "user_id": f"U{100_000 + int(u[12] * 900_000)}",
            "name": f"{choose(_FIRST, 13)} {choose(_LAST, 1)}",
            "membership": membership or MEMBERSHIPS[int(u[0] * 7919) % len(MEMBERSHIPS)],
            "address": address,
            "payment_methods": methods,
        }

    def order_ids(self, rng: np.random.Generator, n: int) -> list[str]:
        """`n` distinct order ids ("O" + 7 digits)."""
        numbers = rng.choice(9_000_000, size=n, replace=False) + 1_000_000
        return [f"O{int(x)}" for x in numbers]

    def order(
        self,
        order_id: str,
        rows: list[int],
        quantities: list[int],
        status: str,
        placed_days_ago: int,
        *,
        transit_days: int | None = None,
        user: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One past order in the env's schema. Delivered orders carry `delivered`, open ones an
        `eta` after today, cancelled ones neither."""
        placed = int(placed_days_ago)
        if transit_days is None:
            transit_days = max(max(self._ship_days_list[r] for r in rows), 1)
        lines = [
            {"item_id": self.item_ids[r], "quantity": int(q), "price": self._price_list[r]}
            for r, q in zip(rows, quantities, strict=True)
        ]
        subtotal = sum(line["price"] * line["quantity"] for line in lines)
        membership = (user or {}).get("membership", "standard")
        order: dict[str, Any] = {
            "order_id": order_id,
            "status": status,
            "placed": _iso_days_ago(placed),
            "delivered": None,
            "eta": None,
            "items": lines,
            "total": round(subtotal + self.policies.shipping_fee(subtotal, membership), 2),
        }
        if user is not None:
            order["shipping_address"] = user["address"]
            order["payment_method"] = user["payment_methods"][0]
        arrival = placed - int(transit_days)  # days ago (negative: in the future)
        if status == "delivered":
            order["delivered"] = _iso_days_ago(max(arrival, 0))
        elif status in ("pending", "processing", "shipped"):
            order["eta"] = _iso_days_ago(min(arrival, -1))
        return order
