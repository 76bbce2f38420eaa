"""Shared fixtures. Each area may add its own fixture block below; keep them session-scoped
where building data is costly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SMALL_CATALOG = 3_000


@pytest.fixture(scope="session")
def small_catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding a 3k-product catalog (seed 7). Treat it as read-only."""
    from ecomrlve.catalogs import build_catalog

    data = tmp_path_factory.mktemp("catalog")
    build_catalog(data, SMALL_CATALOG, seed=7)
    return data
