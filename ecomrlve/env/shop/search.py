"""Full-text + exact-filter search over the catalog with tantivy.

Why these choices:
* one writer thread, documents added in item_id order, one segment: tantivy breaks score ties
  by document order, so ties come out by item_id ascending and two builds agree exactly;
* exact filters are `Must` clauses wrapped in `const_score_query(..., 0.0)` so they restrict
  without changing the text score; numeric bounds are fast-field range queries;
* free text goes through the index's own analyzer (simple tokenizer, lower case, English
  stemmer) and becomes term queries: nothing the agent types is ever parsed as query syntax;
* the build analyses the catalog's text with that analyzer once per distinct chunk
  (`index_terms`) instead of once per token in tantivy: the same index bytes, ~5 s less.

The index is built once per catalog hash into `DIR/catalog/search-<catalog_hash>/` (written to a
temp folder, then renamed) and opened read-only afterwards; `from_frames` catalogs get one in RAM.
Every search is one tantivy query (BM25 over the words, every filter a `Must` clause);
`Catalog` keeps an LRU cache of results in front of it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import polars as pl
import tantivy

from ecomrlve.store import StoreError

log = logging.getLogger(__name__)


class Catalog(Protocol):
    """What the index reads of a catalog (`ecomrlve.env.shop.products.Catalog` is one): its size,
    its hash (the index is rebuilt when it changes) and one document per row."""

    size: int
    catalog_hash: str

    def index_documents(self) -> tuple[list[str], bool]: ...


INDEX_VERSION = 4  # 2: price / rating / ship_days fast fields only; 4: no ranked postings
TOKENIZER = "shop"
MARKER = "ecomrlve-index.json"
_STRING_FIELDS = ("category", "brand", "color", "size")


def _analyzer(*filters: tantivy.Filter) -> tantivy.TextAnalyzer:
    """Simple tokenizer (split on non-alphanumerics), dropping terms over 40 bytes, lowercased,
    then `filters`."""
    builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    for step in (tantivy.Filter.remove_long(40), tantivy.Filter.lowercase(), *filters):
        builder = builder.filter(step)
    return builder.build()


def _shop_analyzer() -> tantivy.TextAnalyzer:
    return _analyzer(tantivy.Filter.stemmer("english"))


def _terms_analyzer() -> tantivy.TextAnalyzer:
    """What the index build tokenizes `index_terms` output with: its terms are already analysed."""
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).build()


POLICY_TOKENIZER = "policy"
# Question words a customer wraps around the topic ("how long do refunds take?"), on top of
# tantivy's English stop words: they would otherwise match every document a little.
POLICY_STOP_WORDS: tuple[str, ...] = (
    "how", "what", "when", "where", "which", "who", "why", "do", "does", "did", "can", "could",
    "would", "should", "i", "me", "my", "mine", "you", "your", "we", "our", "us", "am", "get",
    "got", "have", "has", "had", "any", "some", "about", "please", "tell", "know", "want",
    "need", "there", "here", "s", "t", "d", "ll", "m", "re", "ve", "still", "much", "many",
    "policy", "policies", "rule", "rules", "store", "shop", "hi", "hello", "thanks",
)  # fmt: skip


def _policy_analyzer() -> tantivy.TextAnalyzer:
    return _analyzer(
        tantivy.Filter.stopword("english"),
        tantivy.Filter.custom_stopword(list(POLICY_STOP_WORDS)),
        tantivy.Filter.stemmer("english"),
    )


class _Analyzers(threading.local):
    """tantivy's analyzers, one set per thread.

    `TextAnalyzer.analyze` takes `&mut self`, so pyo3 refuses it ("RuntimeError: Already
    borrowed") while another borrow of the same object is alive, and a tantivy call holding one
    across a GIL release lets a second thread in. One shared analyzer failed that way in CI (a
    Prefect generation thread building the index while another thread analysed).
    A thread builds its own set on first use (~30 µs), so no analyzer is ever shared.
    """

    def __init__(self) -> None:
        self.shop = _shop_analyzer()
        self.terms = _terms_analyzer()
        self.policy = _policy_analyzer()


ANALYZERS = _Analyzers()


def valid_utf8(text: str) -> str:
    """`text` with lone surrogates (valid in Python, not in UTF-8) replaced by '?'."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def analyzer_tokens(text: str) -> list[str]:
    """The index terms of `text` (what a query word has to equal to match)."""
    return ANALYZERS.shop.analyze(valid_utf8(text)) if text else []


def index_terms(texts: pl.Series) -> pl.Series | None:
    """`texts` rewritten as their index terms, so that `ANALYZERS.terms` on a result gives
    exactly what `ANALYZERS.shop` gives on the original; None where a term could not be kept apart.

    The analyzer's filters work token by token and a space always ends a token, so each
    space-separated chunk is analysed once (a catalog has a few thousand distinct chunks in
    ~25M) and replaced where analysing changes it (" Bike " -> " bike ", " gearing, " ->
    " gear "). Spaces are doubled first so that every chunk has a space of its own on each
    side. At 1M rows this costs ~4 s and saves ~9 s of tantivy's stemmer.

    >>> index_terms(pl.Series(["Bike gearing, 2-in-1"])).to_list()
    [' bike  gear  2-in-1 ']
    """
    chunks = texts.str.split(" ").explode().drop_nulls().unique().to_list()
    shop, plain = ANALYZERS.shop, ANALYZERS.terms
    patterns, replacements = [], []
    for chunk in chunks:
        if not chunk:
            continue
        terms = shop.analyze(chunk)
        if plain.analyze(chunk) == terms:
            continue
        replacement = " " + " ".join(terms) + " "
        if plain.analyze(replacement) != terms:
            return None  # a term the plain tokenizer would split (not seen in our catalogs)
        patterns.append(f" {chunk} ")
        replacements.append(replacement)
    spaced = pl.concat_str(
        [pl.lit(" "), texts.str.replace_all(" ", "  ", literal=True), pl.lit(" ")]
    )
    if patterns:
        spaced = spaced.str.replace_many(patterns, replacements)
    return pl.select(spaced).to_series()


def build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", tokenizer_name=TOKENIZER, index_option="freq")
    for name in _STRING_FIELDS:
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    # numeric bounds are fast-field range queries: no postings needed for these
    builder.add_float_field("price", fast=True)
    builder.add_float_field("rating", fast=True)
    builder.add_integer_field("ship_days", fast=True)
    builder.add_boolean_field("in_stock", fast=True, indexed=True)
    return builder.build()


def _writer_heap(n_docs: int) -> int:
    # Big enough that one thread never flushes mid-build: a flush would create a second
    # segment and break the item_id tie order.
    return int(min(max(64_000_000, 700 * n_docs), 3_000_000_000))


@contextlib.contextmanager
def build_lock(index_dir: Path) -> Iterator[None]:
    """An exclusive flock on `.<name>.lock` next to `index_dir` (none if the folder cannot be
    written): one process builds a cache folder while the others wait, then open it."""
    try:
        index_dir.parent.mkdir(parents=True, exist_ok=True)
        handle = open(index_dir.with_name(f".{index_dir.name}.lock"), "a")  # noqa: SIM115
    except OSError:
        yield
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _remove_stale_siblings(index_dir: Path) -> None:
    """Drop indexes of older catalogs (`search-<other hash>`) next to a freshly built one.

    Processes still reading an old index keep working: their files stay mapped until closed.
    """
    if not index_dir.name.startswith("search-"):
        return
    for sibling in index_dir.parent.glob("search-*"):
        if sibling != index_dir and sibling.is_dir():
            log.info("removing the search index of an older catalog: %s", sibling)
            shutil.rmtree(sibling, ignore_errors=True)
            sibling.with_name(f".{sibling.name}.lock").unlink(missing_ok=True)


class SearchIndex:
    """A tantivy index whose document ids equal catalog row numbers."""

    def __init__(self, index: tantivy.Index, n_docs: int):
        index.register_tokenizer(TOKENIZER, ANALYZERS.shop)
        index.reload()
        self.index = index
        self.schema = index.schema
        self.searcher = index.searcher()
        if self.searcher.num_segments != 1 or self.searcher.num_docs != n_docs:
            raise StoreError(
                f"search index has {self.searcher.num_segments} segments and "
                f"{self.searcher.num_docs} documents; expected 1 and {n_docs}"
            )
        self._all = tantivy.Query.all_query()

    # ---- build / open -----------------------------------------------------------------------
    @classmethod
    def open_or_build(cls, catalog: Catalog, index_dir: Path | None) -> SearchIndex:
        """Open the cached index in `index_dir`, building it first if missing or stale.

        `None` (or a folder that cannot be written, e.g. a read-only data set) gives an index
        in RAM. Processes that load the same catalog at once build it once: the builder holds
        an `flock` on a sibling lock file, the others wait and then open its index (the build
        itself also goes through a temp folder + rename, so a killed builder leaves nothing).
        """
        if index_dir is None:
            return cls._in_memory(catalog)
        existing = cls._open_existing(index_dir, catalog)
        if existing is not None:
            return existing
        with build_lock(index_dir):
            return cls._build(catalog, index_dir)

    @classmethod
    def _build(cls, catalog: Catalog, index_dir: Path) -> SearchIndex:
        existing = cls._open_existing(index_dir, catalog)  # built while we waited?
        if existing is not None:
            return existing
        corrupt = cls._marker_ok(index_dir, catalog)  # marker fine, index unreadable
        tmp = index_dir.with_name(f".{index_dir.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        trash = tmp.with_name(tmp.name + "-stale")
        try:
            tmp.mkdir(parents=True)
            index = tantivy.Index(build_schema(), path=str(tmp))
            cls._fill(index, catalog)
            (tmp / MARKER).write_text(json.dumps(cls._marker(catalog), sort_keys=True))
            del index
            if not corrupt and cls._marker_ok(index_dir, catalog):
                log.info("search index %s appeared concurrently; keeping it", index_dir)
            else:
                if index_dir.exists():  # stale or incompatible: move it aside, then replace
                    os.replace(index_dir, trash)
                os.replace(tmp, index_dir)
        except OSError as err:
            log.warning("cannot cache the search index in %s (%s); using RAM", index_dir, err)
            return cls._in_memory(catalog)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(trash, ignore_errors=True)
        opened = cls._open_existing(index_dir, catalog)
        if opened is None:
            raise StoreError(f"search index in {index_dir} could not be opened after building")
        _remove_stale_siblings(index_dir)
        return opened

    @classmethod
    def _in_memory(cls, catalog: Catalog) -> SearchIndex:
        index = tantivy.Index(build_schema())
        cls._fill(index, catalog)
        return cls(index, catalog.size)

    @staticmethod
    def _marker(catalog: Catalog) -> dict[str, Any]:
        return {
            "version": INDEX_VERSION,
            "catalog_hash": catalog.catalog_hash,
            "n_docs": catalog.size,
        }

    @classmethod
    def _marker_ok(cls, index_dir: Path, catalog: Catalog) -> bool:
        """Whether the index folder's marker describes `catalog`'s current index."""
        try:
            marker = json.loads((index_dir / MARKER).read_text())
        except (OSError, ValueError):
            return False
        expected = cls._marker(catalog)
        return isinstance(marker, dict) and all(marker.get(k) == v for k, v in expected.items())

    @classmethod
    def _open_existing(cls, index_dir: Path, catalog: Catalog) -> SearchIndex | None:
        if not cls._marker_ok(index_dir, catalog):
            return None
        try:
            return cls(tantivy.Index.open(str(index_dir)), catalog.size)
        except (ValueError, RuntimeError, OSError, StoreError) as err:
            log.warning("rebuilding search index %s: %s", index_dir, err)
            return None

    @staticmethod
    def _fill(index: tantivy.Index, catalog: Catalog) -> None:
        # the text field's tokenizer is only used here (queries are analysed in Python and
        # made of term queries): pre-analysed text gets the plain tokenizer, same index bytes
        documents, analysed = catalog.index_documents()
        index.register_tokenizer(TOKENIZER, ANALYZERS.terms if analysed else ANALYZERS.shop)
        writer = index.writer(heap_size=_writer_heap(catalog.size), num_threads=1)
        add = writer.add_json  # ~20% faster than building Document objects in Python
        for document in documents:
            add(document)
        writer.commit()
        writer.wait_merging_threads()

    # ---- query ------------------------------------------------------------------------------
    def _filter_query(self, key: str, value: Any) -> tantivy.Query:
        schema, q = self.schema, tantivy.Query
        if key in _STRING_FIELDS:
            return q.term_query(schema, key, value)
        if key == "in_stock":
            return q.term_query(schema, "in_stock", value)
        if key == "min_price":
            return q.range_query(schema, "price", tantivy.FieldType.Float, lower_bound=value)
        if key == "max_price":
            return q.range_query(schema, "price", tantivy.FieldType.Float, upper_bound=value)
        if key == "min_rating":
            return q.range_query(schema, "rating", tantivy.FieldType.Float, lower_bound=value)
        if key == "max_ship_days":
            return q.range_query(
                schema, "ship_days", tantivy.FieldType.Integer, upper_bound=int(value)
            )
        raise ValueError(f"unknown filter {key!r}")

    def build_query(
        self, tokens: tuple[str, ...], filters: tuple[tuple[str, Any], ...]
    ) -> tantivy.Query:
        q, occur = tantivy.Query, tantivy.Occur
        clauses: list[tuple[Any, tantivy.Query]] = []
        if tokens:
            text = q.boolean_query(
                [(occur.Should, q.term_query(self.schema, "text", tok)) for tok in tokens]
            )
            clauses.append((occur.Must, text))
        for key, value in filters:
            clauses.append((occur.Must, q.const_score_query(self._filter_query(key, value), 0.0)))
        if not clauses:
            return self._all
        return q.boolean_query(clauses)

    def search(
        self, tokens: tuple[str, ...], filters: tuple[tuple[str, Any], ...], top_k: int
    ) -> tuple[int, ...]:
        result = self.searcher.search(self.build_query(tokens, filters), top_k, count=False)
        return tuple(address.doc for _score, address in result.hits)

    def scored(
        self, tokens: tuple[str, ...], filters: tuple[tuple[str, Any], ...], top_k: int
    ) -> list[tuple[float, int]]:
        """`search` with each hit's score: (score, row), best first (filters score 0)."""
        result = self.searcher.search(self.build_query(tokens, filters), top_k, count=False)
        return [(score, address.doc) for score, address in result.hits]


# ---- policy documents: BM25 over section titles and texts ------------------------------------
POLICY_TITLE_BOOST = 2.0


def policy_tokens(text: str) -> tuple[str, ...]:
    """The distinct policy-index terms of `text`, in order (stop words dropped, stemmed)."""
    return tuple(dict.fromkeys(ANALYZERS.policy.analyze(valid_utf8(text)))) if text else ()


class PolicyIndex:
    """BM25 (tantivy) over the policy rows: each row's section `title` (boosted) and `text`.

    Built in RAM (a few dozen documents, milliseconds), one writer thread and rows added in
    policy_id order, so one segment and ties broken by policy_id. `search` answers row
    positions of the frame it was built from.
    """

    def __init__(self, rows: list[dict[str, Any]]):
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("title", tokenizer_name=POLICY_TOKENIZER, index_option="freq")
        builder.add_text_field("text", tokenizer_name=POLICY_TOKENIZER, index_option="freq")
        self.schema = builder.build()
        index = tantivy.Index(self.schema)
        index.register_tokenizer(POLICY_TOKENIZER, ANALYZERS.policy)
        writer = index.writer(heap_size=15_000_000, num_threads=1)
        for row in rows:
            writer.add_json(json.dumps({"title": row.get("title") or "", "text": row["text"]}))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        self.searcher = index.searcher()

    def search(self, tokens: tuple[str, ...], limit: int) -> list[int]:
        """Row positions ranked by BM25 of `tokens` (analysed terms), best first."""
        if not tokens or limit <= 0:
            return []
        q, occur = tantivy.Query, tantivy.Occur
        clauses = []
        for tok in tokens:
            title = q.boost_query(q.term_query(self.schema, "title", tok), POLICY_TITLE_BOOST)
            clauses.append((occur.Should, title))
            clauses.append((occur.Should, q.term_query(self.schema, "text", tok)))
        result = self.searcher.search(q.boolean_query(clauses), limit, count=False)
        return [address.doc for _score, address in result.hits]
