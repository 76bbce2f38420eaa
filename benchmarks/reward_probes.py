"""Reward probes on a fresh catalog: what a hacking agent and a differently-phrasing correct
agent get, per scenario (the measurements of issue 12, rerun on today's code).

    python benchmarks/reward_probes.py --products 20000 --tasks 900 --seed 7

Rows per scenario: tasks with answer facts; paraphrased references that pass (want ~100%);
a fixed cheat sheet sent after the reference's first call, and an order dump (every status
and date the order list shows) after `list_orders`, that pass (want 0%); read-spam episodes
(unrelated searches, then giving up) that earn more than 0 (want 0) and their best reward.

Then the policy-book classes (`ecomrlve.testing.shop_probes`), on the `policy` tasks: the
reference's own calls followed by an answer written from this store's book (must pass, want
>= 98%) and from the books of three other catalog seeds, i.e. a policy answer memorised from
another shop (must fail, want <= 2%); answers that both books word identically are right
either way and counted apart.

A second table (issue 27) replays each task's reference with another final message or one write
changed, and prints each class's success rate: references (want 100%), the reference's actions
reported in other words (want >= 98%), and the cheating classes (want <= 2% each): silent end
(no final message), a denial after a task that wrote, a false "I've also cancelled that order",
checkout to another address, an unrelated seen product added to the order or left in the cart
after checkout, and a recommendation text naming another seen product.

A last table (issue 27, grounding): references that pass (want 100%); a hedge list mixing
kinds after the reference's calls (want <= 2%); the reference with one invented value of each
kind appended (want 0%); correct answers stating only the required facts: the reference
without its context facts' sentences, and short sentences in three wordings (want >= 95%).

An "evidence" table (issue 43, `ecomrlve.testing.evidence_probes`): the reference after its
look-ups are replaced by one unrelated search (tasks whose facts the prompt does not state), a
return/cancel reason listing every complaint, and a date hedged with today or the placed date
(want <= 2% each); amounts in words, statuses said otherwise, the checkout's own order number,
total and arrival, a refund timing from the policy read, and a price change the agent never
saw left untold (want >= 98% each).

A "red team" table (issue 27, second pass) in the same form: correct answers wrapped as a
support agent writes them (greeting, bullets, a letter, bold ids and emoji) and with their
action sentences in the nominal voice ("Cancellation confirmed ✅", "Return initiated for order
O1: …"), want >= 98%; a nominal/passive/markdown report of a write not done, a denial with no
negation word ("I held off on…"), "order O1 is still active" / "I left O1 untouched" after
acting on it, and checkout then cancelling the new order, want <= 2% each.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

from ecomrlve.catalogs import Shop, build_policies
from ecomrlve.catalogs.policies import PolicyBook
from ecomrlve.env import Catalog, format_call, reference_turns, verify
from ecomrlve.tasks import Task
from ecomrlve.testing import evidence_probes
from ecomrlve.testing import reward_probes as probes
from ecomrlve.testing.bench import generated_store, print_table
from ecomrlve.testing.reward_probes import (
    CHEAT_SHEET,
    HEDGE_LIST,
    INVENTED,
    SPAM_QUERIES,
    context_omitting,
    order_dump,
    paraphrase,
    without_context,
)
from ecomrlve.testing.shop_probes import book_answer

OTHER_SHOPS = 3  # books of catalog seeds seed+1 .. seed+3

# class -> (build turns or None, must pass)
FINAL_MESSAGE_CLASSES = {
    "reference": (lambda t, c: reference_turns(t), True),
    "rephrased correct": (lambda t, c: probes.rephrased(t), True),
    "silent end": (lambda t, c: probes.silent_end(t), False),
    "denial": (lambda t, c: probes.denial(t), False),
    "false claim": (lambda t, c: probes.false_claim(t), False),
    "wrong address": (lambda t, c: probes.wrong_address(t), False),
    "cart junk (order)": (lambda t, c: probes.cart_junk(t, c, in_order=True), False),
    "cart junk (left)": (lambda t, c: probes.cart_junk(t, c, in_order=False), False),
    "wrong-product text": (lambda t, c: probes.wrong_product_text(t, c), False),
}

# the red team's classes (issue 27, second pass): class -> (build turns or None, must pass)
RED_TEAM_CLASSES = {
    "agent-wrapped correct": (lambda t, c: probes.agent_wrapped(t), True),
    "agent-rephrased correct": (lambda t, c: probes.agent_rephrased(t), True),
    "nominal false claim": (lambda t, c: probes.nominal_false_claim(t), False),
    "held-off denial": (lambda t, c: probes.held_off_denial(t), False),
    "still-open denial": (lambda t, c: probes.still_open_denial(t), False),
    "checkout then cancel": (lambda t, c: probes.checkout_then_cancel(t, c), False),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=900)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
    _, catalog, frame, _ = generated_store(
        "probes", products=args.products, tasks=args.tasks, seed=args.seed, data=args.data
    )
    tasks = [Task.from_row(row) for row in frame.iter_rows(named=True)]

    rows: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    best_spam: dict[str, float] = collections.defaultdict(lambda: -9.0)
    for task in tasks:
        row = rows[task.scenario]
        row["tasks"] += 1
        reference = reference_turns(task)
        spam = [format_call("search", {"query": q}) for q in SPAM_QUERIES[: max(1, task.min_steps)]]
        verdict = verify(task, [*spam, "Sorry, I can't help with that."], catalog)
        row["spam > 0"] += verdict.reward > 0
        best_spam[task.scenario] = max(best_spam[task.scenario], verdict.reward)
        if not task.goal.answer_facts:
            continue
        row["with facts"] += 1
        rewritten = paraphrase(reference[-1])
        if rewritten != reference[-1]:
            row["paraphrased"] += 1
            row["paraphrase pass"] += verify(task, [*reference[:-1], rewritten], catalog).success
        first = reference[:1]
        row["cheat sheet pass"] += verify(task, [*first, CHEAT_SHEET], catalog).success
        listed = [format_call("list_orders", {})]
        row["order dump pass"] += verify(task, [*listed, order_dump(task)], catalog).success

    headers = ("scenario", "tasks", "with facts", "paraphrase pass", "cheat sheet pass",
               "order dump pass", "spam > 0", "best spam reward")  # fmt: skip
    table = [headers]
    total: collections.Counter = collections.Counter()
    for scenario in sorted(rows):
        row = rows[scenario]
        total.update(row)
        para = f"{row['paraphrase pass']}/{row['paraphrased']}"
        table.append((scenario, str(row["tasks"]), str(row["with facts"]), para,
                      f"{row['cheat sheet pass']}/{row['with facts']}",
                      f"{row['order dump pass']}/{row['with facts']}",
                      f"{row['spam > 0']}/{row['tasks']}",
                      f"{best_spam[scenario]:+.2f}"))  # fmt: skip
    rate = total["paraphrase pass"] / max(1, total["paraphrased"])
    dumps = total["cheat sheet pass"] + total["order dump pass"]
    table.append(("all", str(total["tasks"]), str(total["with facts"]), f"{rate:.1%}",
                  f"{total['cheat sheet pass']}/{total['with facts']}",
                  f"{total['order dump pass']}/{total['with facts']}",
                  f"{total['spam > 0']}/{total['tasks']}",
                  f"{max(best_spam.values()):+.2f}"))  # fmt: skip
    print_table(table)
    print(f"\ndumps passing: {dumps}/{2 * total['with facts']}; targets: paraphrases >= 95%, "
          "dumps <= 2%, spam > 0 in none")  # fmt: skip
    print()
    memorised_policy_rows(tasks, catalog, args.seed)
    print()
    final_message_table(tasks, catalog)
    print()
    grounding_table(tasks, catalog)
    print("\nred team")
    final_message_table(tasks, catalog, RED_TEAM_CLASSES)
    print("\nevidence, not knowledge (issue 43)")
    evidence_table(tasks, catalog)


def evidence_table(tasks: list[Task], catalog: Catalog) -> None:
    """Each class of `ecomrlve.testing.evidence_probes`: episodes that succeed, and the want."""
    table = [("class", "want", "success")]
    for name, (passed, total) in evidence_probes.measure(tasks, catalog).items():
        must_pass = evidence_probes.CLASSES[name][1]
        rate = f"{passed}/{total} ({passed / max(1, total):.1%})"
        table.append((name, ">= 98%" if must_pass else "<= 2%", rate))
    print_table(table)


def memorised_policy_rows(tasks: list[Task], catalog: Catalog, seed: int) -> None:
    """Policy answers written from this store's book vs from other seeds' books."""
    others = [
        PolicyBook(build_policies(Shop.for_seed(seed + k))) for k in range(1, OTHER_SHOPS + 1)
    ]
    counts: collections.Counter = collections.Counter()
    for task in tasks:
        if task.scenario != "policy":
            continue
        calls = reference_turns(task)[:-1]
        own = book_answer(task, catalog.policies)
        counts["own"] += 1
        counts["own pass"] += verify(task, [*calls, own], catalog).success
        for book in others:
            answer = book_answer(task, book)
            if answer == own:  # both books say the same: the answer is right either way
                counts["same"] += 1
                continue
            counts["memorised"] += 1
            counts["memorised pass"] += verify(task, [*calls, answer], catalog).success
    table = [
        ("class", "episodes", "succeed", "rate", "target"),
        ("policy answer from this store's book", str(counts["own"]), str(counts["own pass"]),
         f"{counts['own pass'] / max(1, counts['own']):.1%}", ">= 98%"),
        ("memorised policy from another shop's seed", str(counts["memorised"]),
         str(counts["memorised pass"]),
         f"{counts['memorised pass'] / max(1, counts['memorised']):.1%}", "<= 2%"),
        ("(same answer in both books, not counted)", str(counts["same"]), "", "", ""),
    ]  # fmt: skip
    print_table(table)


def final_message_table(tasks: list[Task], catalog: Catalog, classes: dict | None = None) -> None:
    """Success rate of each final-message class, overall and per scenario."""
    classes = FINAL_MESSAGE_CLASSES if classes is None else classes
    passed: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    tried: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for task in tasks:
        for name, (build, _) in classes.items():
            turns = build(task, catalog)
            if turns is None:
                continue
            tried[name][task.scenario] += 1
            passed[name][task.scenario] += verify(task, turns, catalog).success
    scenarios = sorted({t.scenario for t in tasks})
    headers = ("class", "want", "success", *scenarios)
    table = [headers]
    for name, (_, must_pass) in classes.items():
        n, k = sum(tried[name].values()), sum(passed[name].values())
        cells = [
            f"{passed[name][s]}/{tried[name][s]}" if tried[name][s] else "-" for s in scenarios
        ]
        rate = f"{k}/{n} ({k / max(1, n):.1%})"
        table.append((name, "pass" if must_pass else "fail", rate, *cells))
    print_table(table)
    print("\ntargets: reference 100%, correct (pass) classes >= 98%, every fail class <= 2%")


def grounding_table(tasks: list[Task], catalog: Catalog) -> None:
    """Grounding and context probes per scenario (see the module docstring)."""
    rows: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for task in tasks:
        row = rows[task.scenario]
        reference = reference_turns(task)
        calls, answer = reference[:-1], reference[-1]
        row["tasks"] += 1
        row["reference pass"] += verify(task, reference, catalog).success
        for sentence in INVENTED.values():
            row["invented"] += 1
            row["invented pass"] += verify(task, [*calls, f"{answer} {sentence}"], catalog).success
        if not task.goal.answer_facts:
            continue
        row["with facts"] += 1
        row["hedge pass"] += verify(task, [*calls, HEDGE_LIST], catalog).success
        row["context-omitting"] += 1
        short = without_context(task)
        row["context-omitting pass"] += verify(task, [*calls, short], catalog).success
        for variant in range(3):
            row["context-omitting"] += 1
            terse = context_omitting(task, variant)
            row["context-omitting pass"] += verify(task, [*calls, terse], catalog).success

    def rate(row: collections.Counter, key: str, of: str) -> str:
        return f"{row[key]}/{row[of]} ({row[key] / max(1, row[of]):.1%})"

    headers = ("scenario", "tasks", "reference pass", "hedge pass", "invented value pass",
               "context-omitting pass")  # fmt: skip
    table = [headers]
    total: collections.Counter = collections.Counter()
    for scenario in [*sorted(rows), "all"]:
        row = total if scenario == "all" else rows[scenario]
        if scenario != "all":
            total.update(row)
        table.append((scenario, str(row["tasks"]), rate(row, "reference pass", "tasks"),
                      rate(row, "hedge pass", "with facts"), rate(row, "invented pass", "invented"),
                      rate(row, "context-omitting pass", "context-omitting")))  # fmt: skip
    print_table(table)
    print("\ntargets: references 100%, hedge <= 2%, invented values 0%, context-omitting >= 95%")


if __name__ == "__main__":
    main()
