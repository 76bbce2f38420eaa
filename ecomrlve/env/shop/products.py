"""The read-only catalog an env episode acts on: columnar arrays, an id index, policies, search.

One `Catalog` is shared by every episode in a process (`Catalog.load` caches it per data
directory and catalog hash), and its columns are memory-mapped files shared by every process on
the machine (`ecomrlve.env.shop.columns`). Everything an episode needs per step is an O(1) look-up
here: `row_of(item_id)` parses the id (or binary-searches a sorted byte array), columns are
numpy / Arrow arrays, and search goes through a tantivy index that is built once and cached on
disk next to the catalog.

Filter semantics (shared by `filter_mask`, the tantivy query and the `search` tool):

* `category`, `brand`, `color`, `size`: exact match after normalising both sides
  (lower case, runs of whitespace collapsed to one space, ends stripped);
* `min_price`, `max_price`, `min_rating`: inclusive bounds on `price` / `rating`;
* `max_ship_days`: inclusive upper bound on `ship_days`;
* `in_stock`: equality (`true` keeps in-stock items, `false` only out-of-stock ones);
* a `None` value means "no filter on this field"; any other key is an error.

In an episode whose world events changed prices or withdrew products, the `search` tool asks
`search_live`: the price bounds and `in_stock` then judge the values in force at that call.
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import math
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from ecomrlve.catalogs.policies import PolicyBook
from ecomrlve.env.shop import columns as column_files
from ecomrlve.env.shop.columns import IdIndex
from ecomrlve.env.shop.search import (
    SearchIndex,
    analyzer_tokens,
    build_lock,
    index_terms,
    valid_utf8,
)
from ecomrlve.store import DataPaths, StoreError

log = logging.getLogger(__name__)

TEXT_FILTERS: tuple[str, ...] = ("category", "brand", "color", "size")
NUMERIC_FILTERS: tuple[str, ...] = ("min_price", "max_price", "min_rating", "max_ship_days")
FILTER_KEYS: tuple[str, ...] = (*TEXT_FILTERS, *NUMERIC_FILTERS, "in_stock")
MAX_TOP_K = 50
MAX_FILTER_TEXT = 500  # characters of a text filter value (catalog values are far shorter)
SEARCH_CACHE_SIZE = 8192
MEMO_SIZE = 65536  # ids / titles memoised per process (of the rows episodes actually touch)
RESULT_FIELDS: tuple[str, ...] = (
    "item_id",
    "title",
    "brand",
    "category",
    "color",
    "size",
    "price",
    "rating",
    "in_stock",
    "ship_days",
)
REQUIRED_COLUMNS: tuple[str, ...] = (
    "item_id",
    "family_id",
    "department",
    "category",
    "brand",
    "title",
    "description",
    "color",
    "size",
    "material",
    "price",
    "rating",
    "review_count",
    "stock",
    "in_stock",
    "ship_days",
)


class FilterError(ValueError):
    """A search filter the agent passed cannot be used (unknown key, wrong type, bad value)."""


def brief(value: Any, limit: int = 60) -> str:
    """`repr(value)` cut to about `limit` characters, for echoing agent input in messages.

    Never raises: ints too long for `str()` (over 4,300 digits) are described by their size.
    """
    try:
        text = repr(value)
    except ValueError:
        return f"<an integer of {value.bit_length():,} bits>"
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def normalise_text(value: str) -> str:
    """The form text filters are compared in: lower case, single spaces, no padding."""
    return " ".join(valid_utf8(value).split()).lower()


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FilterError(f"filter {key!r} must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        raise FilterError(f"filter {key!r} is out of range: {brief(value)}") from None
    if not math.isfinite(number):
        raise FilterError(f"filter {key!r} must be a finite number, got {value!r}")
    return number


_FILTER_MEMO: dict[tuple, tuple[tuple[str, Any], ...]] = {}
FILTER_MEMO_SIZE = 16384


def normalise_filters(filters: dict[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """Validate agent-supplied filters; return a canonical, hashable tuple of (key, value).

    Raises `FilterError` naming the first bad key. `None` values are dropped. Valid filter
    dicts are memoised on their (key, type, value) items (a step checks its filters, then the
    search normalises them again; tasks repeat theirs): the type keeps `1`, `1.0` and `True`
    apart, and whatever raises is never stored.
    """
    if filters is None:
        return ()
    if not isinstance(filters, dict):
        raise FilterError(f"filters must be an object, got {type(filters).__name__}")
    try:
        key = tuple((k, type(v), v) for k, v in filters.items())
        hit = _FILTER_MEMO.get(key)
    except TypeError:  # an unhashable value: validate (and refuse) it below
        key, hit = None, None
    if hit is not None:
        return hit
    out = _normalise_filters(filters)
    if key is not None:
        if len(_FILTER_MEMO) >= FILTER_MEMO_SIZE:
            _FILTER_MEMO.clear()
        _FILTER_MEMO[key] = out
    return out


def _normalise_filters(filters: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    out: list[tuple[str, Any]] = []
    for key, value in filters.items():
        if key not in FILTER_KEYS:
            raise FilterError(f"unknown filter {brief(key)}; allowed: {', '.join(FILTER_KEYS)}")
        if value is None:
            continue
        if key in TEXT_FILTERS:
            if not isinstance(value, str):
                raise FilterError(f"filter {key!r} must be a string, got {type(value).__name__}")
            if len(value) > MAX_FILTER_TEXT:
                raise FilterError(
                    f"filter {key!r} is too long (at most {MAX_FILTER_TEXT} characters)"
                )
            text = normalise_text(value)
            if not text:
                raise FilterError(f"filter {key!r} must not be empty")
            out.append((key, text))
        elif key == "in_stock":
            if not isinstance(value, bool):
                raise FilterError(f"filter 'in_stock' must be true or false, got {brief(value)}")
            out.append((key, value))
        elif key == "max_ship_days":
            number = _number(key, value)
            if number != int(number):
                raise FilterError(f"filter 'max_ship_days' must be a whole number, got {value!r}")
            # clamped into tantivy's i64 range; ship days are small, so the meaning is kept
            out.append((key, max(min(int(number), 2**62), -(2**62))))
        else:
            out.append((key, _number(key, value)))
    return tuple(sorted(out))


@functools.lru_cache(maxsize=16384)
def _query_tokens(query: str) -> tuple[str, ...]:
    """The distinct analyzer tokens of a query, in order (queries recur across episodes)."""
    return tuple(dict.fromkeys(analyzer_tokens(query)))


def _codes(values: pl.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a string column and the sorted vocabulary they index (hash-based)."""
    strings = values.cast(pl.String)
    vocab = strings.unique().sort().to_list()
    return strings.cast(pl.Enum(vocab)).to_physical().to_numpy(), vocab


class _LowCardinality:
    """A string column as codes: the original spelling for display, normalised for filters.

    Normalising the vocabulary instead of the column keeps loading a million rows fast. The
    arrays may be memory-mapped (`ecomrlve.env.shop.columns`); `derive` computes them.
    """

    ARRAYS = ("display_codes", "codes")

    def __init__(self, arrays: dict[str, np.ndarray], vocab: dict[str, list[str]]):
        self.display_codes = arrays["display_codes"]
        self.codes = arrays["codes"]
        self.display_vocab: list[str] = vocab["display"]
        self.normalised_vocab: list[str] = vocab["normalised"]
        self.code_of = {v: i for i, v in enumerate(self.normalised_vocab)}

    @staticmethod
    def derive(values: pl.Series) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
        display_codes, display_vocab = _codes(values)
        display_codes = display_codes.astype(np.int32)
        normalised_vocab = sorted({normalise_text(v) for v in display_vocab})
        code_of = {v: i for i, v in enumerate(normalised_vocab)}
        to_normalised = np.array(
            [code_of[normalise_text(v)] for v in display_vocab], dtype=np.int32
        )
        arrays = {"display_codes": display_codes, "codes": to_normalised[display_codes]}
        return arrays, {"display": display_vocab, "normalised": normalised_vocab}

    def display(self, row: int) -> str:
        return self.display_vocab[self.display_codes[row]]


def _checked_products(products: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in REQUIRED_COLUMNS if c not in products.columns]
    if missing:
        raise StoreError(f"products table lacks column(s) {missing}")
    if products.height == 0:
        raise StoreError("products table is empty")
    if not products["item_id"].is_sorted():
        products = products.sort("item_id")
    if products["item_id"].n_unique() != products.height:
        raise StoreError("products table has duplicate item_id values")
    return products


def derive_columns(
    products: pl.DataFrame, catalog_hash: str
) -> tuple[pl.DataFrame, dict[str, np.ndarray], dict[str, Any]]:
    """(products sorted by item_id, derived arrays, meta) — what `columns.save` stores."""
    products = _checked_products(products)
    arrays: dict[str, np.ndarray] = {
        "price": products["price"].cast(pl.Float64).to_numpy(),
        "rating": products["rating"].cast(pl.Float64).to_numpy(),
        "ship_days": products["ship_days"].cast(pl.Int64).to_numpy(),
        "stock": products["stock"].cast(pl.Int64).to_numpy(),
        "in_stock": products["in_stock"].cast(pl.Boolean).to_numpy(),
    }
    vocab: dict[str, dict[str, list[str]]] = {}
    for name in TEXT_FILTERS:
        text_arrays, vocab[name] = _LowCardinality.derive(products[name])
        arrays.update({f"{name}.{key}": value for key, value in text_arrays.items()})
    family_codes, family_vocab = _codes(products["family_id"])
    family_order = np.argsort(family_codes, kind="stable")
    sorted_codes = family_codes[family_order]
    families = np.arange(len(family_vocab))
    arrays["family.codes"] = family_codes
    arrays["family.order"] = family_order
    arrays["family.start"] = np.searchsorted(sorted_codes, families)
    arrays["family.end"] = np.searchsorted(sorted_codes, families, side="right")
    ids = products["item_id"].cast(pl.String)
    scheme = IdIndex.scheme_of(ids)
    if scheme is None:
        arrays["ids"] = _id_bytes(ids)
    meta = {
        "catalog_hash": catalog_hash,
        "size": products.height,
        "arrays": sorted(arrays),
        "vocab": vocab,
        "id_scheme": scheme,
    }
    return products, arrays, meta


def _id_bytes(ids: pl.Series) -> np.ndarray:
    """Sorted ids as a fixed-width UTF-8 byte array (what `IdIndex` binary-searches)."""
    encoded = [value.encode("utf-8") for value in ids.to_list()]
    return np.array(encoded, dtype=np.bytes_)


class Catalog:
    """Products + policies, read-only, with O(1) id look-ups, exact filters and search."""

    _cache: ClassVar[dict[tuple[str, str], Catalog]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        products: pl.DataFrame,
        policies: pl.DataFrame,
        *,
        catalog_hash: str,
        index_dir: Path | None = None,
        columns_dir: Path | None = None,
    ):
        if columns_dir is None:
            parts = derive_columns(products, catalog_hash)
        else:
            parts = column_files.open_folder(columns_dir, catalog_hash)
            if parts is None:
                with build_lock(columns_dir):  # workers starting together write it once
                    parts = column_files.open_folder(columns_dir, catalog_hash)
                    if parts is None:
                        parts = derive_columns(products, catalog_hash)
                        try:
                            column_files.save(columns_dir, *parts)
                            parts = column_files.open_folder(columns_dir, catalog_hash) or parts
                        except OSError as err:
                            log.warning("cannot keep catalog columns in %s (%s)", columns_dir, err)
        products, arrays, meta = parts
        self.products = products
        self.policies = PolicyBook(policies)
        self.catalog_hash = catalog_hash
        self.size = products.height
        self._ids = IdIndex(self.size, meta["id_scheme"], arrays.get("ids"))
        self._title_series = products["title"]
        # the few ids/titles episodes touch, memoised (bounded: no per-process copy of all 1M)
        self._row_memo: dict[str, int | None] = {}
        self._title_memo: dict[int, str] = {}
        self.price = arrays["price"]
        self.rating = arrays["rating"]
        self.ship_days = arrays["ship_days"]
        self.stock = arrays["stock"]
        self.in_stock = arrays["in_stock"]
        self._text = {
            name: _LowCardinality(
                {key: arrays[f"{name}.{key}"] for key in _LowCardinality.ARRAYS},
                meta["vocab"][name],
            )
            for name in TEXT_FILTERS
        }
        self._numeric = {
            "price": self.price,
            "rating": self.rating,
            "ship_days": self.ship_days,
            "in_stock": self.in_stock,
        }
        self._family_codes = arrays["family.codes"]
        self._family_order = arrays["family.order"]
        self._family_start = arrays["family.start"]
        self._family_end = arrays["family.end"]
        self._series = {name: products[name] for name in products.columns}
        self._index = SearchIndex.open_or_build(self, index_dir)
        self._search_cache: OrderedDict[tuple, list] = OrderedDict()
        self._search_lock = threading.Lock()

    @functools.cached_property
    def item_ids(self) -> list[str]:
        """Every item id in row order, as a list (built on first use: generators and tests
        want one; env workers never build it — `item_id(row)` / `row_of(id)` need none)."""
        return self.products["item_id"].cast(pl.String).to_list()

    @functools.cached_property
    def titles(self) -> list[str]:
        """Every title in row order, as a list (built on first use)."""
        return self._title_series.cast(pl.String).to_list()

    # ---- construction ---------------------------------------------------------------------
    @classmethod
    def from_frames(
        cls,
        products: pl.DataFrame,
        policies: pl.DataFrame,
        index_dir: str | os.PathLike | None = None,
    ) -> Catalog:
        """A catalog from in-memory frames; the search index lives in RAM unless `index_dir`."""
        # products and policies: the policy book is part of the world a task runs in
        digest = hashlib.sha256()
        for frame in (products, policies):
            buffer = io.BytesIO()
            frame.write_ipc(buffer, compression="uncompressed")
            digest.update(len(buffer.getbuffer()).to_bytes(8, "little"))
            digest.update(buffer.getbuffer())
        catalog_hash = digest.hexdigest()[:16]
        return cls(
            products,
            policies,
            catalog_hash=catalog_hash,
            index_dir=Path(index_dir) if index_dir is not None else None,
        )

    @classmethod
    def load(cls, data_dir: str | os.PathLike) -> Catalog:
        """The catalog of a data directory, loaded once per (path, catalog_hash) per process.

        The search index is cached on disk in `DIR/catalog/search-<catalog_hash>/`, the columns
        in `DIR/catalog/columns-<catalog_hash>/` (memory-mapped: workers share one copy).
        """
        from ecomrlve.catalogs.build import catalog_hash as stored_hash

        paths = DataPaths.of(data_dir)
        if not paths.products.exists():
            raise StoreError(f"no catalog at {paths.catalog}: run `ecomrlve catalog` first")
        if not paths.policies.exists():
            raise StoreError(f"no policies at {paths.policies}: run `ecomrlve catalog` first")
        digest = stored_hash(paths.root)
        key = (str(paths.root), digest)
        with cls._cache_lock:
            cached = cls._cache.get(key)
            if cached is not None:
                return cached
            columns_dir = paths.catalog / f"columns-{digest}"
            mapped = column_files.open_folder(columns_dir, digest)
            products = mapped[0] if mapped else pl.read_parquet(paths.products)
            policies = pl.read_parquet(paths.policies)
            catalog = cls(
                products,
                policies,
                catalog_hash=digest,
                index_dir=paths.catalog / f"search-{digest}",
                columns_dir=columns_dir,
            )
            cls._cache[key] = catalog
            return catalog

    # ---- look-ups ---------------------------------------------------------------------------
    def __contains__(self, item_id: object) -> bool:
        return isinstance(item_id, str) and self.row_of(item_id) is not None

    def row_of(self, item_id: str) -> int | None:
        """The row index of `item_id`, or None when it is not in the catalog."""
        memo = self._row_memo
        row = memo.get(item_id, -1)
        if row == -1:
            row = self._ids.row_of(item_id)
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[item_id] = row
        return row

    def title(self, row: int) -> str:
        """The title of `row`."""
        memo = self._title_memo
        title = memo.get(row)
        if title is None:
            title = self._title_series[row]
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[row] = title
        return title

    def item_id(self, row: int) -> str:
        """The item id of `row`."""
        return self._ids.item_id(row)

    def value(self, column: str, row: int) -> Any:
        text = self._text.get(column)
        if text is not None:
            return text.display(row)
        if column == "title":
            return self.title(row)
        return self._series[column][row]

    def row(self, item_id: str) -> dict[str, Any]:
        """Every column of one product; raises KeyError for an unknown id."""
        index = self.row_of(item_id)
        if index is None:
            raise KeyError(item_id)
        return self.products.row(index, named=True)

    def result(self, row: int) -> dict[str, Any]:
        """The short product record search results carry."""
        text = self._text
        return {
            "item_id": self._ids.item_id(row),
            "title": self.title(row),
            "brand": text["brand"].display(row),
            "category": text["category"].display(row),
            "color": text["color"].display(row),
            "size": text["size"].display(row),
            "price": float(self.price[row]),
            "rating": float(self.rating[row]),
            "in_stock": bool(self.in_stock[row]),
            "ship_days": int(self.ship_days[row]),
        }

    def family_rows(self, row: int) -> np.ndarray:
        """Rows of every variant in the same family as `row` (itself included), in id order."""
        code = self._family_codes[row]
        return self._family_order[self._family_start[code] : self._family_end[code]]

    def same_family(self, item_a: str, item_b: str) -> bool:
        a, b = self.row_of(item_a), self.row_of(item_b)
        if a is None or b is None:
            return False
        return bool(self._family_codes[a] == self._family_codes[b])

    # ---- filters and search -----------------------------------------------------------------
    def filter_mask(self, filters: dict[str, Any] | None) -> np.ndarray:
        """The exact boolean mask of products that satisfy `filters` (the search reference)."""
        return self._mask(normalise_filters(filters))

    def _mask(self, normalised: tuple[tuple[str, Any], ...]) -> np.ndarray:
        mask = np.ones(self.size, dtype=bool)
        for key, value in normalised:
            if key in TEXT_FILTERS:
                text = self._text[key]
                code = text.code_of.get(value)
                if code is None:
                    return np.zeros(self.size, dtype=bool)
                mask &= text.codes == code
            elif key == "min_price":
                mask &= self.price >= value
            elif key == "max_price":
                mask &= self.price <= value
            elif key == "min_rating":
                mask &= self.rating >= value
            elif key == "max_ship_days":
                mask &= self.ship_days <= value
            elif key == "in_stock":
                mask &= self.in_stock == value
        return mask

    def _search_key(
        self, query: str, filters: dict[str, Any] | None, top_k: int
    ) -> tuple[tuple[str, ...], tuple[tuple[str, Any], ...], int]:
        """Validate a search; return its cache key (analyzer tokens, filters, top_k)."""
        if not isinstance(query, str):
            raise FilterError(f"query must be a string, got {type(query).__name__}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise FilterError(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {brief(top_k)}")
        return _query_tokens(query), normalise_filters(filters), top_k

    def search_rows(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int = 10
    ) -> tuple[int, ...]:
        """Row indices of the best `top_k` matches: score desc, ties by item_id asc.

        Free text is tokenised by the index's own analyzer and turned into term queries, so
        quotes, colons, parentheses, `*` or `AND` in the query are just words.
        """
        return self._cached_search(*self._search_key(query, filters, top_k))[0]

    def search(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int = 10
    ) -> list[dict[str, Any]]:
        """Search results as dicts (the function the `search` tool calls); fresh copies."""
        entry = self._cached_search(*self._search_key(query, filters, top_k))
        return [dict(result) for result in entry[1]]

    def search_live(
        self,
        query: str,
        filters: dict[str, Any] | None,
        top_k: int,
        prices: dict[str, float],
        withdrawn: set[str],
    ) -> list[dict[str, Any]]:
        """`search` in a shop whose world events changed `prices` and `withdrew` products:
        the price bounds judge each product by its price now, and `in_stock: true` leaves the
        withdrawn out; the ranking is `search`'s (score desc, ties by item_id). Results carry
        catalog values (the caller shows the live ones).

        A product whose new price leaves the bounds is dropped from an over-fetched result; one
        whose new price enters them is scored by the same words under the same filters with
        the bounds pinned to its catalog price, and merged in at its rank.
        """
        tokens, normalised, top_k = self._search_key(query, filters, top_k)
        given = dict(normalised)
        bounded = "min_price" in given or "max_price" in given

        def fits(price: float) -> bool:
            low, high = given.get("min_price"), given.get("max_price")
            return (low is None or price >= low) and (high is None or price <= high)

        hidden = set(withdrawn) if given.get("in_stock") is True else set()
        if bounded:
            hidden |= {item_id for item_id, price in prices.items() if not fits(price)}
        hits = [
            (score, row)
            for score, row in self._index.scored(tokens, normalised, top_k + len(hidden))
            if self.item_id(row) not in hidden
        ]
        if bounded:
            others = tuple((k, v) for k, v in normalised if k not in ("min_price", "max_price"))
            for item_id in sorted(prices):
                row = self.row_of(item_id)
                if row is None or item_id in hidden or fits(float(self.price[row])):
                    continue  # unknown, out of the bounds now, or already in the result
                catalog_price = float(self.price[row])
                pinned = tuple(sorted((*others, ("min_price", catalog_price),
                                       ("max_price", catalog_price))))  # fmt: skip
                hits += [h for h in self._index.scored(tokens, pinned, self.size) if h[1] == row]
        hits.sort(key=lambda hit: (-hit[0], hit[1]))
        return [dict(self.result(row)) for _, row in hits[:top_k]]

    def _cached_search(
        self, tokens: tuple[str, ...], normalised: tuple[tuple[str, Any], ...], top_k: int
    ) -> list:
        """[rows, result dicts]: an LRU entry keyed on (tokens, filters, top_k)."""
        key = (tokens, normalised, top_k)
        with self._search_lock:
            entry = self._search_cache.get(key)
            if entry is not None:
                self._search_cache.move_to_end(key)
                return entry
        # one tantivy query: BM25 over the words under every filter, ties by item_id
        rows = self._index.search(tokens, normalised, top_k)
        entry = [rows, tuple(self.result(row) for row in rows)]
        with self._search_lock:
            self._search_cache[key] = entry
            if len(self._search_cache) > SEARCH_CACHE_SIZE:
                self._search_cache.popitem(last=False)
        return entry

    def index_text(self) -> pl.Series:
        """The text field of the search index, one string per row: title, description,
        category."""
        return self.products.select(
            pl.concat_str(["title", "description", "category"], separator=" ")
        ).to_series()

    def index_documents(self) -> tuple[list[str], bool]:
        """One JSON document per row, in row order, for building the search index: the text
        (title, description, category), the normalised string filters and the numbers; and
        whether that text is already given as its index terms (`search.index_terms`).

        Encoded by polars in one pass (a Python `json` call per row cost ~5 s at 1M rows).
        """
        text = self.index_text()
        terms = index_terms(text)
        columns: dict[str, Any] = {"text": text if terms is None else terms}
        for name in TEXT_FILTERS:
            low = self._text[name]
            columns[name] = pl.Series(low.normalised_vocab, dtype=pl.String).gather(low.codes)
        columns["price"] = pl.Series(self.price, dtype=pl.Float64)
        columns["rating"] = pl.Series(self.rating, dtype=pl.Float64)
        columns["ship_days"] = pl.Series(self.ship_days, dtype=pl.Int64)
        columns["in_stock"] = pl.Series(self.in_stock, dtype=pl.Boolean)
        frame = pl.DataFrame(columns)
        if frame.select(pl.any_horizontal(pl.all().is_null().any())).item():
            raise StoreError("the products table has missing values the search index needs")
        for name in ("price", "rating"):
            if not np.isfinite(self._numeric[name]).all():
                raise StoreError(f"the products table has a non-finite {name}")
        encoded = frame.select(pl.struct(list(columns)).struct.json_encode()).to_series()
        return encoded.to_list(), terms is not None

    def __repr__(self) -> str:
        return f"Catalog({self.size:,} products, catalog_hash={self.catalog_hash})"
