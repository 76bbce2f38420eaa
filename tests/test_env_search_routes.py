"""Both routes of `Catalog._run_search` for word queries with an exact string filter.

A posting of at most `DIRECT_QUERY_ROWS` rows sends the query straight to tantivy; larger ones
(a category of a 1M catalog) go through the over-fetch + numpy post-filter route. The small test
catalog only has small postings, so the threshold is forced to 0 here to keep the second route
tested too; both must equal the single tantivy query with every filter.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ecomrlve.env.catalog as catalog_module
from ecomrlve.env.catalog import normalise_filters
from ecomrlve.env.search import analyzer_tokens
from ecomrlve.testing import env_tasks as fx

QUERIES = ["cotton tee", "running shoes", "leather boots", "laptop 512", "dress silk", "Phone"]


@pytest.fixture(scope="module")
def catalog():
    return fx.small_catalog()


@st.composite
def string_and_numeric_filters(draw, catalog):
    """At least one exact string filter and at least one numeric / in_stock filter."""
    column = draw(st.sampled_from(["category", "brand", "color", "size"]))
    values = sorted(set(catalog.products[column].to_list()))
    out = {column: draw(st.sampled_from(values))}
    numeric = draw(
        st.lists(
            st.sampled_from(["min_price", "max_price", "min_rating", "max_ship_days", "in_stock"]),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    for key in numeric:
        if key == "min_price":
            out[key] = draw(st.floats(0, 300, allow_nan=False))
        elif key == "max_price":
            out[key] = draw(st.floats(5, 2000, allow_nan=False))
        elif key == "min_rating":
            out[key] = draw(st.sampled_from([1, 3.5, 4.0, 4.5]))
        elif key == "max_ship_days":
            out[key] = draw(st.integers(0, 12))
        else:
            out[key] = draw(st.booleans())
    return out


@pytest.mark.parametrize("direct_rows", [0, catalog_module.DIRECT_QUERY_ROWS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_route_equals_one_tantivy_query(catalog, direct_rows, data):
    f = data.draw(string_and_numeric_filters(catalog))
    tokens = tuple(dict.fromkeys(analyzer_tokens(data.draw(st.sampled_from(QUERIES)))))
    top_k = data.draw(st.integers(1, 50))
    normalised = normalise_filters(f)
    original = catalog_module.DIRECT_QUERY_ROWS
    catalog_module.DIRECT_QUERY_ROWS = direct_rows
    try:
        planned = catalog._run_search(tokens, normalised, top_k)
    finally:
        catalog_module.DIRECT_QUERY_ROWS = original
    assert planned == catalog._index.search(tokens, normalised, top_k)
