"""Ranked postings (`ecomrlve.env.ranked`): tantivy's BM25 reproduced bit for bit, and every
route of `Catalog._ranked_search` equal to the single tantivy query with every filter.

The small catalog has small postings, so each route is forced in turn (the threshold walk
from its first row, tiny walk depths that give up, the query-order sums trusted everywhere).
"""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ecomrlve.env.catalog as catalog_module
import ecomrlve.env.ranked as ranked
from ecomrlve.catalogs import CLASSIC_SHOP, build_policies, build_products
from ecomrlve.env import Catalog
from ecomrlve.env.catalog import normalise_filters
from ecomrlve.testing import env_tasks as fx

ANY_SIZE = {(catalog_module, "RANKED_MIN_POSTINGS"): 0}  # a 3k catalog's words match few rows
ROUTES = {
    "default": {},
    # the postings for every query they can answer: small filter sets scored, else the walk
    "ranked": ANY_SIZE,
    # the threshold walk for every query, read one posting at a time at first
    "walk": {
        **ANY_SIZE,
        (catalog_module, "RANKED_FILTER_ROWS"): -1,
        (ranked, "FIRST_DEPTH"): 1,
    },
    # walks that give up at once: scoring the string-filtered rows, or tantivy
    "shallow": {
        **ANY_SIZE,
        (catalog_module, "RANKED_FILTER_ROWS"): -1,
        (catalog_module, "RANKED_MAX_DEPTH"): 2,
        (ranked, "FIRST_DEPTH"): 1,
    },
    # query-order sums trusted on every row but the last: checks tantivy's order of addition
    "query-order": {**ANY_SIZE, (ranked, "CLAUSE_ORDER_MARGIN"): -1},
}


@pytest.fixture(scope="module")
def catalog():
    return fx.small_catalog()


@pytest.fixture(scope="module")
def postings(catalog):
    assert catalog._index.postings is not None
    return catalog._index.postings


def _tantivy_hits(catalog, tokens, filters, limit):
    query = catalog._index.build_query(tokens, filters)
    hits = catalog._index.searcher.search(query, limit, count=False).hits
    return [(score, address.doc) for score, address in hits]


def test_fieldnorm_table_is_tantivys_length_code():
    table = ranked.FIELDNORMS
    assert table[:41].tolist() == list(range(41))
    assert table[[41, 48, 49, 100, 255]].tolist() == [42, 56, 60, 3096, 2013265944]
    assert (np.diff(table) > 0).all()


def _assert_every_posting_scores_like_tantivy(catalog):
    """Every term, every row: (score, row) in tantivy's order equals ours bit for bit."""
    postings = catalog._index.postings
    assert postings is not None
    for term, code in postings.vocab.items():
        start, end = int(postings.offsets[code]), int(postings.offsets[code + 1])
        scores, rows = postings.scores[start:end].tolist(), postings.rows[start:end].tolist()
        ours = sorted(zip(scores, rows, strict=True), key=lambda hit: (-hit[0], hit[1]))
        assert ours == _tantivy_hits(catalog, (term,), (), end - start), term


def test_every_posting_scores_like_tantivy(catalog):
    _assert_every_posting_scores_like_tantivy(catalog)


@pytest.mark.parametrize("analysed", [True, False])
def test_postings_of_tricky_text_score_like_tantivy(analysed):
    products = build_products(280, 9)
    titles = fx.TRICKY_TEXTS if analysed else [*fx.TRICKY_TEXTS, fx.UNSPLITTABLE_TEXT]
    products = products.with_columns(
        pl.Series("title", [titles[i % len(titles)] for i in range(products.height)])
    )
    catalog = Catalog.from_frames(products, build_policies(CLASSIC_SHOP))
    assert catalog.index_documents()[1] == analysed
    _assert_every_posting_scores_like_tantivy(catalog)
    for query in ("2-in-1 laptop", "double spaces", "café 東京", "runner shoes boots"):
        tokens = catalog_module._query_tokens(query)
        with _patched("ranked"):
            assert catalog._run_search(tokens, (), 30) == catalog._index.search(tokens, (), 30)


def test_ranked_lists_are_sorted_within_each_category(catalog, postings):
    groups, n_groups = catalog.category_groups()
    assert postings.groups == n_groups
    for code in range(len(postings.vocab)):
        start, end = int(postings.offsets[code]), int(postings.offsets[code + 1])
        seen = []
        for group in range(n_groups):
            lo = int(postings.ranked_offsets[code * n_groups + group])
            hi = int(postings.ranked_offsets[code * n_groups + group + 1])
            rows = postings.ranked_rows[lo:hi]
            scores = postings.ranked_scores[lo:hi]
            assert (groups[rows] == group).all()
            assert (np.diff(scores) <= 0).all()
            ties = np.diff(scores) == 0
            assert (np.diff(rows)[ties] > 0).all()  # equal scores: rows ascending
            seen.append(rows)
        merged = np.sort(np.concatenate(seen))
        assert merged.tolist() == postings.rows[start:end].tolist()


@st.composite
def searches(draw, catalog, postings):
    vocab = sorted(postings.vocab)
    words = draw(st.lists(st.sampled_from(vocab), min_size=1, max_size=5, unique=True))
    if draw(st.integers(0, 5)) == 0:
        words.insert(draw(st.integers(0, len(words))), "zzqxnotaword")
    filters = {}
    for column in ("category", "brand", "color", "size"):
        if draw(st.integers(0, 2)) == 0:
            values = sorted(set(catalog.products[column].to_list()))
            filters[column] = draw(st.sampled_from(values))
    if draw(st.booleans()):
        filters["max_price"] = draw(st.floats(5, 800, allow_nan=False))
    if draw(st.booleans()):
        filters["min_rating"] = draw(st.sampled_from([2.0, 3.5, 4.0, 4.5]))
    if draw(st.booleans()):
        filters["in_stock"] = draw(st.booleans())
    if draw(st.integers(0, 3)) == 0:
        filters["max_ship_days"] = draw(st.integers(1, 7))
    return tuple(words), normalise_filters(filters), draw(st.integers(1, 50))


@contextlib.contextmanager
def _patched(route):
    with pytest.MonkeyPatch.context() as patch:
        for (module, name), value in ROUTES[route].items():
            patch.setattr(module, name, value)
        yield


@pytest.mark.parametrize("route", sorted(ROUTES))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_route_equals_one_tantivy_query(catalog, postings, route, data):
    tokens, filters, top_k = data.draw(searches(catalog, postings))
    expected = catalog._index.search(tokens, filters, top_k)
    with _patched(route):
        answered = catalog._ranked_search(tokens, filters, top_k)
        planned = catalog._run_search(tokens, filters, top_k)
    assert answered is None or answered == expected
    assert planned == expected


@pytest.mark.parametrize(
    ("route", "words"), [("ranked", (1, 2)), ("walk", (1, 2)), ("query-order", (3, 4))]
)
def test_most_word_queries_are_answered_from_the_postings(catalog, postings, route, words):
    """Not a vacuous route: on title words with the usual filters, the postings answer
    (rather than sending the query back to tantivy) and agree. (Sums of three or four terms
    are trusted in query order only away from the end of the postings: a 3k catalog is all
    "end", so its 3-4 word queries are checked with that margin removed.)"""
    rng = np.random.default_rng(np.random.SeedSequence([5, 17]))
    answered = 0
    with _patched(route):
        for row in rng.integers(0, catalog.size, 200).tolist():
            tokens = catalog_module._query_tokens(catalog.title(row))[: words[row % 2]]
            filters = normalise_filters(
                {"category": catalog.value("category", row), "in_stock": bool(row % 2)}
            )
            found = catalog._ranked_search(tokens, filters, 10)
            if found is not None:
                answered += 1
                assert found == catalog._index.search(tokens, filters, 10)
    assert answered >= 180, answered


def test_five_words_and_rare_words_go_to_tantivy(catalog, postings):
    tokens = tuple(sorted(postings.vocab)[:5])
    with _patched("ranked"):
        assert catalog._ranked_search(tokens, (), 10) is None
    assert catalog._run_search(tokens, (), 10) == catalog._index.search(tokens, (), 10)
    rare = min(postings.vocab, key=lambda term: postings.size([postings.vocab[term]]))
    assert catalog._ranked_search((rare,), (), 10) is None  # tantivy is as quick for these
    with _patched("ranked"):
        assert catalog._ranked_search((rare,), (), 10) == catalog._index.search((rare,), (), 10)


def test_a_repeated_word_goes_to_tantivy(catalog, postings):
    word = max(postings.vocab, key=lambda term: postings.size([postings.vocab[term]]))
    with _patched("ranked"):
        assert catalog._ranked_search((word, word), (), 10) is None
        assert catalog._run_search((word, word), (), 10) == catalog._index.search(
            (word, word), (), 10
        )


def test_words_the_index_lacks_match_nothing(catalog):
    assert catalog._ranked_search(("zzqxnotaword",), (), 10) == ()
    assert catalog._index.search(("zzqxnotaword",), (), 10) == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.5, 30, width=32), min_size=3, max_size=4))
def test_orders_bound_every_order_of_addition(values):
    parts = [np.array([v], dtype=np.float32) for v in values]
    lowest, highest = ranked._orders(parts)
    for order in itertools.permutations(range(len(parts))):
        total = np.float32(0)
        for index in order:
            total = np.float32(total + parts[index][0])
        assert lowest[0] <= total <= highest[0]


def test_select_refuses_only_when_an_unsure_row_could_enter():
    rows = np.array([1, 2, 3], dtype=np.int32)
    lowest = np.array([3.0, 2.0, 1.0], dtype=np.float32)
    highest = np.array([3.0, 2.5, 1.0], dtype=np.float32)  # row 2's sum depends on the order
    assert ranked._select(rows, lowest, highest, 1) == (1,)
    assert ranked._select(rows, lowest, highest, 2) is None
    tie = np.array([3.0, 1.0, 1.0], dtype=np.float32)
    unsure = np.array([3.0, 0.5, 1.0], dtype=np.float32)
    # row 2 can at best tie row 3's 1.0 and then wins on the lower row: unsure
    assert ranked._select(rows, unsure, tie, 2) is None
    later = np.array([3.0, 1.0, 0.5], dtype=np.float32)
    # row 3 can at best tie row 2 and loses the tie on the higher row: sure
    assert ranked._select(rows, later, tie, 2) == (1, 2)


def test_postings_that_disagree_with_tantivy_are_not_used(monkeypatch):
    products, policies = build_products(400, 2), build_policies(CLASSIC_SHOP)
    reference = Catalog.from_frames(products, policies)
    monkeypatch.setattr(ranked, "K1", np.float32(1.3))  # not tantivy's BM25 any more
    off = Catalog.from_frames(products, policies)
    assert off._index.postings is None
    for query in ("cotton shirt", "boots", "laptop 512 pro"):
        assert off.search_rows(query, {"in_stock": True}, 20) == reference.search_rows(
            query, {"in_stock": True}, 20
        )


def test_without_a_c_logf_every_query_goes_to_tantivy(monkeypatch):
    monkeypatch.setattr(ranked, "_logf", lambda: None)
    catalog = Catalog.from_frames(build_products(300, 4), build_policies(CLASSIC_SHOP))
    assert catalog._index.postings is None
    assert len(catalog.search("shoes", None, 5)) <= 5


def test_postings_are_stored_mapped_and_rebuilt_when_damaged(tmp_path):
    products, policies = build_products(600, 8), build_policies(CLASSIC_SHOP)
    ram = Catalog.from_frames(products, policies)._index.postings
    Catalog.from_frames(products, policies, index_dir=tmp_path / "idx")
    folder = tmp_path / "idx" / "ranked"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{name}.npy" for name in ranked._ARRAYS] + [ranked.VOCAB]
    )
    reopened = Catalog.from_frames(products, policies, index_dir=tmp_path / "idx")._index.postings
    assert isinstance(reopened.ranked_rows.base, np.memmap)
    for name in ranked._ARRAYS:
        assert np.array_equal(getattr(reopened, name), getattr(ram, name)), name
    assert (reopened.vocab, reopened.clause_order) == (ram.vocab, ram.clause_order)
    for damage in ("scores.npy", ranked.VOCAB):
        if damage == ranked.VOCAB:
            (folder / damage).write_text('{"terms": []}')
        else:
            (folder / damage).unlink()
        rebuilt = Catalog.from_frames(products, policies, index_dir=tmp_path / "idx")
        assert rebuilt._index.postings is not None
        assert np.array_equal(rebuilt._index.postings.scores, ram.scores)
