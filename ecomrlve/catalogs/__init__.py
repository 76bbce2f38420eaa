"""World synthesis: taxonomy, vocabularies, the vectorised product builder and store policies."""

from ecomrlve.catalogs.build import CatalogSummary, build_catalog, catalog_hash
from ecomrlve.catalogs.policies import CLASSIC_SHOP, PolicyBook, Shop, build_policies
from ecomrlve.catalogs.synth import build_products

__all__ = [
    "CLASSIC_SHOP",
    "CatalogSummary",
    "PolicyBook",
    "Shop",
    "build_catalog",
    "build_policies",
    "build_products",
    "catalog_hash",
]
