"""Verdicts may not depend on Python's string hashing: the same episode is judged the same in
every process (`PYTHONHASHSEED` differs per process unless set). Found in RL: two runs of one
config parted at step 10 on one episode, "I've cancelled your order O… with the smartphone",
because the category "Smartphones" and the product type "smartphone" share spellings and the
noun table kept whichever a set's iteration order gave first."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ecomrlve.env.judge.claims import product_names
from ecomrlve.testing import env_tasks as fx

PROBE = """
import json
from ecomrlve.env.judge.claims import product_names
from ecomrlve.testing import env_tasks as fx
catalog = fx.small_catalog()
names = product_names(catalog)
items = catalog.item_ids[:300]
print(json.dumps({"nouns": sorted(names.nouns.items()),
                  "products": [[i, *names.of(i)[:1], sorted(names.of(i)[1])] for i in items]}))
"""


def _names_under(hash_seed: int) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_product_nouns_are_the_same_under_every_hash_seed():
    first = _names_under(1)
    for seed in (2, 3, 4):
        assert _names_under(seed) == first


def test_a_shared_spelling_names_the_product_whichever_noun_it_came_from():
    catalog = fx.small_catalog()
    names = product_names(catalog)
    shared = {s: c for s, c in names.nouns.items() if s != c}  # plural/singular folded
    assert shared, "the fixture catalog should fold some spellings"
    for item in catalog.item_ids[:300]:
        _, nouns = names.of(item)
        # every noun of a product is written in the table's canonical spelling, so a text
        # naming it by any spelling finds it
        assert all(names.nouns.get(n, n) == n for n in nouns)


OTHER_PROBE = """
import json
from ecomrlve.env.judge.claims import _other_product, product_names
from ecomrlve.testing import env_tasks as fx
catalog = fx.small_catalog()
by_brand = {}
for item in catalog.item_ids:
    by_brand.setdefault(str(catalog.value("brand", catalog.row_of(item))), []).append(item)
pairs = [items[:2] for _, items in sorted(by_brand.items()) if len(items) >= 2][:6]
acted = {a for a, _ in pairs}
said = " and ".join("the " + catalog.title(catalog.row_of(b)) for _, b in pairs)
print(json.dumps(_other_product("I've placed your order for " + said + ".", acted,
                                product_names(catalog))))
"""


def test_the_other_product_reported_is_the_same_under_every_hash_seed():
    """A message naming several acted products' siblings: the violation names one of them, and
    which one may not move with the hash seed (it was the first of a set's iteration)."""
    outputs = set()
    for seed in (1, 2, 3, 4):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        run = subprocess.run(
            [sys.executable, "-c", OTHER_PROBE], env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        outputs.add(json.loads(run.stdout))
    assert len(outputs) == 1 and outputs != {""}
