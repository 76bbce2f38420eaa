"""The shop's taxonomy: categories with their own attribute schemas, sizes and price models.

Each category fixes what its attributes mean and which values make sense:
* product types (`nouns`: "crew neck shirt", "ground coffee") that titles are built from;
* sizes in the category's own system (EU / US shoe sizes, S–XXL, W30 waists, GB of storage,
  ml, g, cm, mm, bed sizes, headphone fits);
* the `color` column's meaning (`variant`): a colour from a curated palette of shop colour names
  where the product has one, else the variant that distinguishes it — roast for coffee, flavour
  for tea, scent family for fragrance, skin type for skincare;
* materials (or the bean, key note, certification), title adjectives and description features;
* a log-normal price model, shipping days, and how a count of it is said ("two bags of …").

Brand surnames come from Faker's providers (`vocab.py`); everything else is here, so a product
reads like a shop's ("Smith Labs everyday organic cotton crew neck shirt - navy, size M").
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    name: str
    department: str
    nouns: tuple[str, ...]  # product types
    sizes: tuple[str, ...]
    size_system: str  # how `sizes` are measured: alpha, EU, US, waist, GB, ml, g, cm, mm, bed, fit
    materials: tuple[str, ...]
    price_median: float
    price_sigma: float
    ship_days: tuple[int, int]  # inclusive range
    size_price_step: float = 0.0  # relative price increase per size rank (storage, volume)
    # what the `color` column means here: "colour", or the variant of a category without one
    # ("roast" for coffee, "flavour" for tea, "scent" for fragrance, "skin type" for skincare)
    variant: str = "colour"
    palette: str = "apparel"  # which `PALETTES` entry the `color` values come from
    # counter word for a mass noun ("bottle": "two bottles of fragrance"); "" = countable
    unit: str = ""
    singular: str = ""  # one of them: "t-shirt", "pair of jeans", "bag of coffee"
    features: tuple[str, ...] = ()  # description sentences that fit every product type here


BED_SIZES = ("twin", "full", "queen", "king")
HEADPHONE_FITS = ("in-ear", "on-ear", "over-ear")
APPAREL_SIZES = ("XS", "S", "M", "L", "XL", "XXL")
EU_SHOE_SIZES = tuple(str(s) for s in range(36, 48))
US_SHOE_SIZES = ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12")

# Curated colour names a shop uses, per category family (common colours first: variants favour
# them). Categories without a colour have their own variant lists.
PALETTES: dict[str, tuple[str, ...]] = {
    "apparel": (
        "black", "white", "navy", "grey", "beige", "olive", "burgundy", "light blue", "pink",
        "red", "forest green", "charcoal", "cream", "mustard", "lavender", "brown", "sky blue",
        "rust", "teal", "ivory", "khaki", "coral",
    ),
    "denim": (
        "dark wash", "mid wash", "light wash", "black", "grey", "white", "indigo", "stone wash",
        "ecru",
    ),
    "outdoor": (
        "black", "navy", "olive", "khaki", "red", "grey", "forest green", "orange", "sand",
        "royal blue", "yellow", "teal", "burgundy", "charcoal",
    ),
    "footwear": (
        "black", "white", "grey", "navy", "brown", "tan", "beige", "red", "olive", "burgundy",
        "cream", "khaki", "sand", "green",
    ),
    "tech": (
        "black", "white", "silver", "space grey", "graphite", "midnight blue", "rose gold",
        "blue", "green", "purple",
    ),
    "home": (
        "white", "ivory", "grey", "charcoal", "sage", "navy", "blush pink", "taupe", "sky blue",
        "mustard", "terracotta", "dusty rose",
    ),
    "cookware": (
        "black", "graphite", "silver", "red", "cream", "sage", "navy", "copper", "teal", "mint",
    ),
    "sport": (
        "black", "purple", "teal", "blue", "pink", "grey", "green", "orange", "red", "white",
        "lime", "coral", "yellow",
    ),
    "roast": ("medium roast", "dark roast", "light roast", "espresso roast", "french roast"),
    "tea": ("classic", "jasmine", "lemon", "mint", "ginger", "berry", "vanilla", "honey"),
    "scent": ("woody", "floral", "citrus", "fresh", "oriental", "aquatic", "spicy", "gourmand"),
    "skin": ("normal skin", "dry skin", "oily skin", "combination skin", "sensitive skin"),
}  # fmt: skip

CATEGORIES: tuple[Category, ...] = (
    Category(
        "t-shirts",
        "apparel",
        ("t-shirt", "crew neck shirt", "v-neck tee", "pocket tee", "long sleeve tee"),
        APPAREL_SIZES,
        "alpha",
        ("cotton", "organic cotton", "linen", "modal", "polyester"),
        22.0,
        0.45,
        (2, 6),
        singular="t-shirt",
        features=("Soft and breathable.", "A relaxed, true-to-size fit.", "Pre-shrunk fabric."),
    ),
    Category(
        "jeans",
        "apparel",
        ("slim jeans", "straight jeans", "relaxed jeans", "bootcut jeans", "skinny jeans"),
        ("W28", "W30", "W32", "W34", "W36", "W38"),
        "waist",
        ("denim", "stretch denim", "organic denim"),
        55.0,
        0.40,
        (2, 7),
        palette="denim",
        unit="pair",
        singular="pair of jeans",
        features=("Five-pocket styling.", "A mid-rise waist.", "Reinforced seams."),
    ),
    Category(
        "jackets",
        "apparel",
        ("rain jacket", "puffer jacket", "windbreaker", "fleece jacket", "bomber jacket"),
        APPAREL_SIZES,
        "alpha",
        ("nylon", "down", "wool", "softshell", "polyester"),
        110.0,
        0.55,
        (3, 8),
        palette="outdoor",
        singular="jacket",
        features=("A zip front and two hand pockets.", "Packs down small.", "Wind resistant."),
    ),
    Category(
        "dresses",
        "apparel",
        ("midi dress", "wrap dress", "maxi dress", "shirt dress", "slip dress"),
        APPAREL_SIZES,
        "alpha",
        ("silk", "viscose", "cotton", "chiffon", "linen"),
        65.0,
        0.50,
        (2, 7),
        singular="dress",
        features=("Fully lined.", "A flattering A-line cut.", "Machine washable."),
    ),
    Category(
        "sneakers",
        "footwear",
        ("running shoes", "court shoes", "trail shoes", "slip-on sneakers", "high-top sneakers"),
        EU_SHOE_SIZES,
        "EU",
        ("mesh", "leather", "suede", "knit", "canvas"),
        85.0,
        0.45,
        (2, 6),
        palette="footwear",
        unit="pair",
        singular="pair of sneakers",
        features=("A cushioned midsole.", "A removable insole.", "A grippy rubber outsole."),
    ),
    Category(
        "boots",
        "footwear",
        ("hiking boots", "chelsea boots", "ankle boots", "work boots", "rain boots"),
        US_SHOE_SIZES,
        "US",
        ("leather", "suede", "rubber", "waterproof nubuck"),
        130.0,
        0.45,
        (3, 9),
        palette="footwear",
        unit="pair",
        singular="pair of boots",
        features=("A padded collar.", "A lugged outsole for grip.", "Easy to break in."),
    ),
    Category(
        "headphones",
        "electronics",
        ("wireless headphones", "gaming headphones", "sports headphones", "headset"),
        HEADPHONE_FITS,
        "fit",
        ("plastic", "aluminium", "memory foam"),
        120.0,
        0.80,
        (1, 5),
        palette="tech",
        unit="pair",
        singular="pair of headphones",
        features=("Up to 30 hours of battery.", "A built-in microphone.", "USB-C charging."),
    ),
    Category(
        "smartphones",
        "electronics",
        ("smartphone", "5G phone", "compact phone", "camera phone"),
        ("64 GB", "128 GB", "256 GB", "512 GB", "1 TB"),
        "GB",
        ("glass", "aluminium", "titanium"),
        520.0,
        0.60,
        (1, 4),
        size_price_step=0.18,
        palette="tech",
        singular="smartphone",
        features=("A 6.1-inch OLED display.", "All-day battery life.", "A triple camera."),
    ),
    Category(
        "laptops",
        "electronics",
        ("laptop", "ultrabook", "gaming laptop", "2-in-1 laptop"),
        ("256 GB", "512 GB", "1 TB", "2 TB"),
        "GB",
        ("aluminium", "magnesium", "plastic"),
        980.0,
        0.50,
        (2, 6),
        size_price_step=0.15,
        palette="tech",
        singular="laptop",
        features=("A backlit keyboard.", "16 GB of memory.", "Two USB-C ports."),
    ),
    Category(
        "bedding",
        "home",
        ("duvet cover", "sheet set", "quilt", "pillowcase set", "comforter"),
        BED_SIZES,
        "bed",
        ("cotton", "linen", "bamboo", "flannel", "percale cotton"),
        60.0,
        0.50,
        (3, 9),
        size_price_step=0.12,
        palette="home",
        unit="set",
        singular="bedding set",
        features=("Machine washable.", "Soft from the first wash.", "Hidden button closure."),
    ),
    Category(
        "cookware",
        "home",
        ("frying pan", "saucepan", "dutch oven", "wok", "saute pan"),
        ("20 cm", "24 cm", "28 cm", "32 cm"),
        "cm",
        ("stainless steel", "cast iron", "enamelled cast iron", "non-stick aluminium"),
        45.0,
        0.60,
        (2, 8),
        size_price_step=0.10,
        palette="cookware",
        unit="piece",
        singular="piece of cookware",
        features=("Works on induction.", "Oven safe.", "A stay-cool handle."),
    ),
    Category(
        "skincare",
        "beauty",
        ("moisturizer", "serum", "cleanser", "face cream", "toner"),
        ("30 ml", "50 ml", "100 ml", "200 ml"),
        "ml",
        ("vegan", "fragrance-free", "organic", "hyaluronic"),
        28.0,
        0.55,
        (1, 5),
        size_price_step=0.25,
        variant="skin type",
        palette="skin",
        unit="bottle",
        singular="bottle of skincare",
        features=("Dermatologist tested.", "Absorbs quickly.", "Use morning and night."),
    ),
    Category(
        "fragrance",
        "beauty",
        ("eau de parfum", "eau de toilette", "cologne", "body mist"),
        ("30 ml", "50 ml", "100 ml"),
        "ml",
        ("sandalwood", "bergamot", "rose", "vanilla", "vetiver", "amber"),
        75.0,
        0.45,
        (1, 5),
        size_price_step=0.35,
        variant="scent",
        palette="scent",
        unit="bottle",
        singular="bottle of fragrance",
        features=("Long-lasting.", "A refillable glass bottle.", "Unisex."),
    ),
    Category(
        "yoga mats",
        "sports",
        ("yoga mat", "exercise mat", "travel mat", "pilates mat"),
        ("3 mm", "5 mm", "8 mm"),
        "mm",
        ("TPE", "natural rubber", "cork", "PVC"),
        35.0,
        0.45,
        (2, 6),
        size_price_step=0.10,
        palette="sport",
        singular="yoga mat",
        features=("Non-slip on both sides.", "Comes with a carry strap.", "Easy to wipe clean."),
    ),
    Category(
        "bicycles",
        "sports",
        ("road bike", "mountain bike", "city bike", "gravel bike", "hybrid bike"),
        ("S", "M", "L", "XL"),
        "frame",
        ("aluminium", "carbon", "steel"),
        750.0,
        0.55,
        (4, 10),
        palette="sport",
        singular="bicycle",
        features=("Hydraulic disc brakes.", "Shimano gearing.", "Puncture-resistant tyres."),
    ),
    Category(
        "coffee",
        "grocery",
        ("coffee beans", "ground coffee", "espresso blend", "filter coffee"),
        ("250 g", "500 g", "1 kg"),
        "g",
        ("arabica", "robusta", "decaf", "single origin"),
        14.0,
        0.35,
        (1, 4),
        size_price_step=0.8,
        variant="roast",
        palette="roast",
        unit="bag",
        singular="bag of coffee",
        features=("Notes of chocolate and caramel.", "Roasted in small batches.", "Resealable."),
    ),
    Category(
        "tea",
        "grocery",
        ("green tea", "black tea", "herbal tea", "loose leaf tea", "white tea"),
        ("50 g", "100 g", "250 g"),
        "g",
        ("organic", "fair trade", "caffeine-free"),
        9.0,
        0.40,
        (1, 4),
        size_price_step=0.7,
        variant="flavour",
        palette="tea",
        unit="pack",
        singular="pack of tea",
        features=("Whole leaves.", "Steep for three minutes.", "Makes about 40 cups."),
    ),
)

CATEGORY_BY_NAME: dict[str, Category] = {c.name: c for c in CATEGORIES}
DEPARTMENTS: tuple[str, ...] = tuple(dict.fromkeys(c.department for c in CATEGORIES))

# Title adjectives per department: words that make titles read like a shop's.
DEPARTMENT_ADJECTIVES: dict[str, tuple[str, ...]] = {
    "apparel": ("classic", "essential", "everyday", "relaxed", "vintage", "heritage", "premium"),
    "footwear": ("classic", "everyday", "lightweight", "all-weather", "heritage", "premium"),
    "electronics": ("pro", "lite", "max", "plus", "ultra", "essential"),
    "home": ("classic", "everyday", "hotel", "luxe", "heritage", "essential"),
    "beauty": ("daily", "gentle", "intense", "pure", "signature", "essential"),
    "sports": ("pro", "travel", "all-day", "performance", "essential", "urban"),
    "grocery": ("house", "reserve", "signature", "daily", "classic", "estate"),
}
ADJECTIVES: tuple[str, ...] = tuple(
    dict.fromkeys(a for group in DEPARTMENT_ADJECTIVES.values() for a in group)
)

# How a size reads after "in": per size system, the words around the value.
SIZE_WORDS: dict[str, tuple[str, str]] = {
    "alpha": ("size ", ""),
    "waist": ("size ", ""),
    "frame": ("frame size ", ""),
    "EU": ("size ", ""),
    "US": ("size ", ""),
    "bed": ("", " size"),
    "fit": ("", " fit"),
}
# How the `color` value reads in a description, per variant kind.
VARIANT_WORDS: dict[str, tuple[str, str]] = {
    "colour": ("in ", ""),
    "roast": ("in a ", ""),
    "flavour": ("with ", " flavour"),
    "scent": ("with a ", " scent"),
    "skin type": ("for ", ""),
}

_UNIT_SIZE = re.compile(r"^\d[\d.]*\s*[A-Za-z]+$")


def size_words(value: str) -> str:
    """A size as said in a sentence: "size M", "size 42", "queen size", "over-ear fit",
    "5 mm", "one size"."""
    if value == "one size" or value.startswith("size ") or _UNIT_SIZE.match(value):
        return value
    if value in BED_SIZES:
        return f"{value} size"
    if value in HEADPHONE_FITS:
        return f"{value} fit"
    return f"size {value}"


_A_BEFORE_VOWEL = re.compile(r"\b([Aa]) (?=[aeioAEIO])(?!one\b)")


def fix_articles(text: str) -> str:
    """ "a aquatic scent" -> "an aquatic scent" (vowel-initial words after "a")."""
    return _A_BEFORE_VOWEL.sub(lambda m: m.group(1) + "n ", text)


def variant_label(category: str) -> str:
    """What the `color` column is called in `category` ("colour" unless it has no colour)."""
    found = CATEGORY_BY_NAME.get(category)
    return found.variant if found is not None else "colour"
