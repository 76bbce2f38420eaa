"""The shop's taxonomy: categories with their own attribute schemas, sizes and price models.

Each category fixes which sizes make sense (EU shoe sizes for sneakers, S–XXL for t-shirts,
storage in GB for phones, ml for skincare), a log-normal price model, the materials used and the
product nouns that titles are built from. Vocabularies that are not domain-specific (colours,
brand surnames, description words) come from Faker's providers, see `vocab.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    name: str
    department: str
    nouns: tuple[str, ...]
    sizes: tuple[str, ...]
    size_system: str  # how `sizes` are measured: alpha, EU, US, GB, ml, g, cm, bed, one
    materials: tuple[str, ...]
    price_median: float
    price_sigma: float
    ship_days: tuple[int, int]  # inclusive range
    size_price_step: float = 0.0  # relative price increase per size rank (storage, volume)
    # what the `color` column means here: "colour", or the variant of a category without one
    # ("roast" for coffee, "flavour" for tea, "scent" for fragrance)
    variant: str = "colour"
    palette: str = "neutral"  # which `vocab.PALETTES` entry the variants come from
    # counter word for a mass noun ("bottle": "two bottles of eau de parfum"); "" = countable
    unit: str = ""
    singular: str = ""  # one of them: "t-shirt", "pair of jeans", "bag of coffee"


BED_SIZES = ("twin", "full", "queen", "king")
APPAREL_SIZES = ("XS", "S", "M", "L", "XL", "XXL")
EU_SHOE_SIZES = tuple(str(s) for s in range(36, 48))
US_SHOE_SIZES = ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12")

CATEGORIES: tuple[Category, ...] = (
    Category(
        "t-shirts",
        "apparel",
        ("t-shirt", "tee", "crew neck shirt", "v-neck tee"),
        APPAREL_SIZES,
        "alpha",
        ("cotton", "organic cotton", "linen", "modal", "polyester"),
        22.0,
        0.45,
        (2, 6),
        singular="t-shirt",
        palette="apparel",
    ),
    Category(
        "jeans",
        "apparel",
        ("jeans", "slim jeans", "straight jeans", "denim pants"),
        ("W28", "W30", "W32", "W34", "W36", "W38"),
        "waist",
        ("denim", "stretch denim"),
        55.0,
        0.40,
        (2, 7),
        singular="pair of jeans",
        unit="pair",
        palette="denim",
    ),
    Category(
        "jackets",
        "apparel",
        ("jacket", "rain jacket", "puffer jacket", "windbreaker"),
        APPAREL_SIZES,
        "alpha",
        ("nylon", "down", "wool", "softshell", "polyester"),
        110.0,
        0.55,
        (3, 8),
        singular="jacket",
        palette="outdoor",
    ),
    Category(
        "dresses",
        "apparel",
        ("dress", "midi dress", "wrap dress", "maxi dress"),
        APPAREL_SIZES,
        "alpha",
        ("silk", "viscose", "cotton", "chiffon"),
        65.0,
        0.50,
        (2, 7),
        singular="dress",
        palette="apparel",
    ),
    Category(
        "sneakers",
        "footwear",
        ("sneakers", "running shoes", "trainers", "court shoes"),
        EU_SHOE_SIZES,
        "EU",
        ("mesh", "leather", "suede", "knit"),
        85.0,
        0.45,
        (2, 6),
        singular="pair of sneakers",
        unit="pair",
        palette="footwear",
    ),
    Category(
        "boots",
        "footwear",
        ("boots", "hiking boots", "chelsea boots", "ankle boots"),
        US_SHOE_SIZES,
        "US",
        ("leather", "suede", "rubber", "gore-tex"),
        130.0,
        0.45,
        (3, 9),
        singular="pair of boots",
        unit="pair",
        palette="footwear",
    ),
    Category(
        "headphones",
        "electronics",
        ("headphones", "earbuds", "wireless headset"),
        ("one size",),
        "one",
        ("plastic", "aluminium"),
        120.0,
        0.80,
        (1, 5),
        singular="pair of headphones",
        unit="pair",
        palette="tech",
    ),
    Category(
        "smartphones",
        "electronics",
        ("smartphone", "phone", "5G phone"),
        ("64 GB", "128 GB", "256 GB", "512 GB", "1 TB"),
        "GB",
        ("glass", "aluminium"),
        520.0,
        0.60,
        (1, 4),
        size_price_step=0.18,
        singular="smartphone",
        palette="tech",
    ),
    Category(
        "laptops",
        "electronics",
        ("laptop", "ultrabook", "notebook computer"),
        ("256 GB", "512 GB", "1 TB", "2 TB"),
        "GB",
        ("aluminium", "magnesium", "plastic"),
        980.0,
        0.50,
        (2, 6),
        size_price_step=0.15,
        singular="laptop",
        palette="tech",
    ),
    Category(
        "bedding",
        "home",
        ("duvet cover", "sheet set", "quilt", "pillowcase set"),
        BED_SIZES,
        "bed",
        ("cotton", "linen", "bamboo", "flannel"),
        60.0,
        0.50,
        (3, 9),
        size_price_step=0.12,
        singular="bedding set",
        unit="set",
        palette="home",
    ),
    Category(
        "cookware",
        "home",
        ("frying pan", "saucepan", "dutch oven", "wok"),
        ("20 cm", "24 cm", "28 cm", "32 cm"),
        "cm",
        ("stainless steel", "cast iron", "ceramic", "non-stick aluminium"),
        45.0,
        0.60,
        (2, 8),
        size_price_step=0.10,
        singular="piece of cookware",
        unit="piece",
        palette="cookware",
    ),
    Category(
        "skincare",
        "beauty",
        ("moisturizer", "serum", "cleanser", "face cream"),
        ("30 ml", "50 ml", "100 ml", "200 ml"),
        "ml",
        ("vegan", "fragrance-free", "organic"),
        28.0,
        0.55,
        (1, 5),
        size_price_step=0.25,
        singular="bottle of skincare",
        unit="bottle",
        variant="formula",
        palette="skincare",
    ),
    Category(
        "fragrance",
        "beauty",
        ("eau de parfum", "eau de toilette", "cologne"),
        ("30 ml", "50 ml", "100 ml"),
        "ml",
        ("floral", "woody", "citrus", "oriental"),
        75.0,
        0.45,
        (1, 5),
        size_price_step=0.35,
        singular="bottle of fragrance",
        unit="bottle",
        variant="scent",
        palette="scent",
    ),
    Category(
        "yoga mats",
        "sports",
        ("yoga mat", "exercise mat", "travel mat"),
        ("3 mm", "5 mm", "8 mm"),
        "mm",
        ("TPE", "natural rubber", "cork", "PVC"),
        35.0,
        0.45,
        (2, 6),
        size_price_step=0.10,
        singular="yoga mat",
        palette="sport",
    ),
    Category(
        "bicycles",
        "sports",
        ("road bike", "mountain bike", "city bike", "gravel bike"),
        ("S", "M", "L", "XL"),
        "frame",
        ("aluminium", "carbon", "steel"),
        750.0,
        0.55,
        (4, 10),
        singular="bicycle",
        palette="sport",
    ),
    Category(
        "coffee",
        "grocery",
        ("coffee beans", "ground coffee", "espresso blend"),
        ("250 g", "500 g", "1 kg"),
        "g",
        ("arabica", "robusta", "decaf", "single origin"),
        14.0,
        0.35,
        (1, 4),
        size_price_step=0.8,
        singular="bag of coffee",
        unit="bag",
        variant="roast",
        palette="roast",
    ),
    Category(
        "tea",
        "grocery",
        ("green tea", "black tea", "herbal tea", "loose leaf tea"),
        ("50 g", "100 g", "250 g"),
        "g",
        ("organic", "fair trade", "caffeine-free"),
        9.0,
        0.40,
        (1, 4),
        size_price_step=0.7,
        singular="pack of tea",
        unit="pack",
        variant="flavour",
        palette="tea",
    ),
)

CATEGORY_BY_NAME: dict[str, Category] = {c.name: c for c in CATEGORIES}
DEPARTMENTS: tuple[str, ...] = tuple(dict.fromkeys(c.department for c in CATEGORIES))


_UNIT_SIZE = re.compile(r"^\d[\d.]*\s*[A-Za-z]+$")


def size_words(value: str) -> str:
    """A size as said in a sentence: "size M", "size 42", "queen size", "5 mm", "one size"."""
    if value == "one size" or value.startswith("size ") or _UNIT_SIZE.match(value):
        return value
    if value.isalpha() and value.islower():  # bed sizes (twin, queen) and fits (over-ear)
        return f"{value} size" if value in BED_SIZES else value
    return f"size {value}"


def variant_label(category: str) -> str:
    """What the `color` column is called in `category` ("colour" unless it has no colour)."""
    found = CATEGORY_BY_NAME.get(category)
    return found.variant if found is not None else "colour"


# Title adjectives: domain words that make titles read like a shop, not lorem ipsum.
ADJECTIVES: tuple[str, ...] = (
    "classic",
    "essential",
    "premium",
    "everyday",
    "lightweight",
    "pro",
    "ultra",
    "eco",
    "vintage",
    "modern",
    "comfort",
    "sport",
    "travel",
    "signature",
    "urban",
    "compact",
    "deluxe",
    "heritage",
    "performance",
    "soft",
)
