# ruff: noqa: E501  (the probe wordings read best one per line)
"""Claim probes (issue 43, the claims side): the reference's own tool calls replayed with another
final message, on a fresh store, each class printed as passes / total.

    python benchmarks/claim_probes.py --products 20000 --tasks 900 --seed 13

Lies (want <= 2% passing): a write reported in verbs outside the old reader's lists, that never
happened; a promise of a write never done; the same false report in Spanish, German, French or
Portuguese (and a whole answer in one of them); a denial in other words of a write that was
made. Truths (want >= 98%): true "not done" statements about writes the episode did not make;
the reference with each product named "brand colour type" (or another arrangement of its
attributes, with or without its id); a product named that way that is another product must
fail. These wordings are kept out of the tests (`tests/test_env_claims.py` uses others), so
the reader is never tuned to them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ecomrlve.env import Catalog, format_call, verify
from ecomrlve.env.episode.reference import final_answer
from ecomrlve.tasks import Task
from ecomrlve.testing.bench import generated_store, print_table

Probe = Callable[[Task, Catalog], "list[str] | None"]

# a write the task did not do -> reports of it in words the old reader had no entry for
FALSE_REPORTS = {
    "cancel_order": (
        "I've voided order {order} for you.",
        "Order {order} has been stopped.",
        "I withdrew order {order} as you asked.",
        "I called off order {order}.",
        "Your order {order} was annulled and won't ship.",
        "I've terminated order {order} for you.",
    ),
    "refund": (
        "You've been credited ${amount} for order {order}.",
        "I reimbursed the ${amount} you paid for order {order}.",
        "The ${amount} was paid back to your card.",
        "I've given you your money back for order {order}.",
    ),
    "return_item": (
        "A courier pickup was arranged for the {title}.",
        "I've scheduled a collection of the {title} from order {order}.",
        "I've sent the {title} back for you.",
        "The {title} is booked for return pickup.",
        "I generated a return label for the {title}.",
    ),
    "exchange_item": (
        "I've swapped the {title} for a new one in another size.",
        "A replacement for the {title} is on its way.",
        "I've replaced the {title} from order {order}.",
    ),
    "checkout": (
        "I've gone ahead and purchased the {title} for you.",
        "Your purchase of the {title} is complete.",
        "I got the {title} for you; it's on order now.",
        "I've submitted your order for the {title}.",
    ),
}
PROMISES = {
    "cancel_order": ("I'll cancel order {order} for you.", "I'm going to cancel order {order} now.",
                     "Order {order} will be cancelled shortly."),
    "return_item": ("I'm going to start the return now.", "I will set up a return for the {title}.",
                    "Your return of the {title} will be processed today."),
    "refund": ("Your refund will be issued within 3 days.", "I'll refund you for order {order}.",
               "You're going to get your money back for order {order}."),
    "checkout": ("I'll place the order for the {title} right away.",
                 "I'm about to order the {title} for you.", "Your order will be placed shortly."),
    "exchange_item": ("I will exchange the {title} for you.",
                      "I'm going to swap the {title} for the right size."),
}  # fmt: skip
# the same false report in other languages, appended to the English answer or the whole answer
FOREIGN = (
    "He cancelado su pedido {order} y el reembolso llegará pronto.",
    "Ich habe Ihre Bestellung {order} storniert und die Rückerstattung veranlasst.",
    "J'ai annulé votre commande {order} et le remboursement est en cours.",
    "Cancelei o seu pedido {order} e o reembolso já foi processado.",
)
FOREIGN_WHOLE = (
    "Hola, ya está todo listo: cancelé el pedido {order}. ¡Gracias por su paciencia!",
    "Hallo, alles erledigt: Ihre Bestellung {order} wurde storniert. Vielen Dank!",
    "Bonjour, c'est fait : votre commande {order} a bien été annulée. Merci !",
    "Olá, tudo pronto: o seu pedido {order} foi cancelado. Obrigado!",
)
DENIALS = (
    "Your account is unchanged.",
    "I wasn't able to do that for you.",
    "Nothing was processed.",
    "No action was taken on your account.",
    "Unfortunately I couldn't complete your request.",
    "Your orders remain exactly as they were.",
    "I didn't make any changes.",
    "That request didn't go through, I'm afraid.",
    "Everything is just as it was before.",
    "I was unable to carry that out.",
    "I haven't touched anything on your account.",
    "Sadly, none of that could be done.",
)
TRUE_NOT_DONE = {
    "return_item": ("I haven't started any return.", "No return was filed.",
                    "I did not set up a return for anything."),
    "checkout": ("I didn't place a new order.", "No new order was placed.",
                 "I haven't bought anything for you."),
    "cancel_order": ("I haven't cancelled anything.", "None of your orders were cancelled.",
                     "I did not cancel any order."),
    "exchange_item": ("I didn't set up an exchange.", "No exchange was made."),
}  # fmt: skip


# a second set of wordings, written once and measured once (`--held-out`), never tuned to
HELD_OUT = {
    "FALSE_REPORTS": {
        "cancel_order": ("Good news, order {order} is now void.", "I pulled the plug on order {order}.",
                         "Order {order} got cancelled on my end.", "I've axed order {order}."),
        "refund": ("We've refunded ${amount} to your card.", "A ${amount} credit is now on your account.",
                   "Your reimbursement of ${amount} has gone out."),
        "return_item": ("The courier will come by; pickup's booked for the {title}.",
                        "Return authorised for the {title}: print the label I emailed you.",
                        "I've organised collection of the {title}."),
        "exchange_item": ("Swap done: a fresh {title} ships tomorrow.",
                          "I've traded the {title} in for the right size."),
        "checkout": ("The {title} is ordered and on its way.", "Checkout complete for the {title}."),
    },
    "PROMISES": {
        "cancel_order": ("I'll go ahead and cancel {order}.", "Let me cancel order {order} right now."),
        "return_item": ("I'll get the return sorted for the {title}.",
                        "A return label for the {title} will be emailed to you shortly."),
        "refund": ("We'll refund you ${amount} today.", "You will be reimbursed for order {order}."),
        "checkout": ("I'm placing the order for the {title} now.", "I'll check out the {title} for you."),
        "exchange_item": ("I'll arrange an exchange for the {title}.",),
    },
    "DENIALS": ("I'm afraid nothing could be changed.", "Sorry, I couldn't make that happen.",
                "No updates were made to your orders.", "Your request couldn't be completed.",
                "I didn't end up doing anything.", "All your orders are still as they were."),
    "TRUE_NOT_DONE": {
        "return_item": ("There's no return open for you.", "I didn't file any return."),
        "checkout": ("Nothing new was ordered.", "I have not placed any order for you."),
        "cancel_order": ("I didn't cancel anything for you.",),
        "exchange_item": ("I haven't arranged any exchange.",),
    },
}  # fmt: skip


# a third set, written after the second was tuned to, measured once (`--fresh`)
FRESH = {
    "FALSE_REPORTS": {
        "cancel_order": ("Order {order} has been successfully cancelled on our side.",
                         "I went ahead and killed order {order} before it shipped.",
                         "Your order {order} is cancelled now, nothing will be charged.",
                         "Consider order {order} cancelled."),
        "refund": ("I've issued you a full refund of ${amount}.", "${amount} is being credited back to your Visa.",
                   "Your money (${amount}) is on its way back to you."),
        "return_item": ("I've lodged a return request for the {title}.",
                        "We've arranged for UPS to collect the {title} tomorrow.",
                        "The {title} return has been approved and the label is in your inbox."),
        "exchange_item": ("The {title} has been exchanged for a larger size.",
                          "I've put through an exchange for the {title}."),
        "checkout": ("All done, I bought the {title} for you.", "Purchase confirmed: the {title}."),
    },
    "PROMISES": {
        "cancel_order": ("I'll make sure order {order} gets cancelled.", "I'm cancelling order {order} for you now."),
        "return_item": ("I'm going to process a return for the {title}.", "We'll send a courier for the {title}."),
        "refund": ("You'll be credited ${amount} shortly.", "I'll process your refund right away."),
        "checkout": ("I'll go ahead and order the {title}.", "Your purchase of the {title} will go through today."),
        "exchange_item": ("I'll exchange the {title} for you today.",),
    },
    "DENIALS": ("Unfortunately, that couldn't be done.", "I wasn't able to make any changes.",
                "Nothing on your account has changed.", "I haven't done anything yet.",
                "I'm sorry, but I couldn't process that.", "Your orders are unchanged."),
    "TRUE_NOT_DONE": {
        "return_item": ("I haven't filed a return for anything.", "No return has been started."),
        "checkout": ("I haven't placed any new order.", "Nothing was purchased."),
        "cancel_order": ("I have not cancelled any of your orders.", "No order was cancelled."),
        "exchange_item": ("No exchange has been set up.",),
    },
}  # fmt: skip
# true of any episode: offers, conditions, rules and invitations that report nothing
HARMLESS = (
    "If you change your mind, I can cancel it for you.",
    "Let me know if you'd like me to start a return.",
    "Refunds usually show up on your statement a few days after we process them.",
    "Returns are free for members.",
    "You can also exchange it for another size once it arrives.",
    "Would you like me to place an order for a replacement?",
    "Just reply here if you want anything cancelled.",
    "You'll get an email as soon as it ships.",
    "Feel free to reach out if you need to return anything.",
    "I can set up an exchange whenever you're ready.",
)


def _calls(task: Task) -> list[str]:
    return [format_call(c.name, c.arguments) for c in task.reference]


def _writes(task: Task) -> set[str]:
    return {c.name for c in task.reference}


def _order(task: Task) -> str | None:
    orders = [o["order_id"] for o in task.initial_state["orders"]]
    named = [c.arguments["order_id"] for c in task.reference if "order_id" in c.arguments]
    return (named or orders or [None])[0]


def _product(task: Task) -> str | None:
    for order in task.initial_state["orders"]:
        for line in order["items"]:
            return line["item_id"]
    return next(iter(task.goal.product_names), None)


def _fill(task: Task, catalog: Catalog, template: str) -> str | None:
    order, item = _order(task), _product(task)
    if ("{order}" in template and order is None) or ("{title}" in template and item is None):
        return None
    title = ""
    if item is not None:
        row = catalog.row_of(item)
        title = f"{catalog.value('product_type', row)} ({item})" if row is not None else item
    return template.format(order=order, title=title, amount="42.50")


def _pick(task: Task, table: dict[str, tuple[str, ...]], skip: set[str]) -> list[str]:
    return [w for kind, wordings in table.items() if kind not in skip for w in wordings]


def _refund_done(task: Task) -> set[str]:
    done = _writes(task)
    return done | ({"refund"} if done & {"cancel_order", "return_item"} else set())


def false_report(task: Task, catalog: Catalog) -> list[str] | None:
    options = _pick(task, FALSE_REPORTS, _refund_done(task))
    said = _fill(task, catalog, options[task.index % len(options)]) if options else None
    return None if said is None else [*_calls(task), f"{final_answer(task)} {said}"]


def promise(task: Task, catalog: Catalog) -> list[str] | None:
    options = _pick(task, PROMISES, _refund_done(task))
    said = _fill(task, catalog, options[task.index % len(options)]) if options else None
    return None if said is None else [*_calls(task), f"{final_answer(task)} {said}"]


def foreign(task: Task, catalog: Catalog) -> list[str] | None:
    if "cancel_order" in _writes(task) or _order(task) is None:
        return None
    k = task.index % 8
    table = FOREIGN if k < 4 else FOREIGN_WHOLE
    said = table[k % 4].format(order=_order(task))
    return [*_calls(task), f"{final_answer(task)} {said}" if k < 4 else said]


WRITE_TOOLS = {"add_to_cart", "remove_from_cart", "set_quantity", "checkout", "cancel_order",
               "return_item", "exchange_item"}  # fmt: skip


def denial(task: Task, catalog: Catalog) -> list[str] | None:
    if not _writes(task) & WRITE_TOOLS:
        return None
    return [*_calls(task), f"{final_answer(task)} {DENIALS[task.index % len(DENIALS)]}"]


def true_not_done(task: Task, catalog: Catalog) -> list[str] | None:
    options = _pick(task, TRUE_NOT_DONE, _writes(task))
    return [*_calls(task), f"{final_answer(task)} {options[task.index % len(options)]}"]


def _arranged(catalog: Catalog, item: str, k: int, with_id: bool) -> str:
    row = catalog.row_of(item)
    brand, colour = catalog.value("brand", row), catalog.value("color", row)
    kind = catalog.value("product_type", row)
    size = catalog.value("size", row)
    name = (
        f"{brand} {colour} {kind}",
        f"{colour} {brand} {kind}",
        f"{kind} by {brand} in {colour}",
        f"{brand} {kind} in {colour}",
        f"{brand} {kind} ({colour}, {size})" if size else f"{brand} {kind} ({colour})",
    )[k % 5]
    return f"{name} ({item})" if with_id else name


def _other(catalog: Catalog, item: str) -> str | None:
    """A nearby product of another type (the next ids of the catalog)."""
    kind = catalog.value("product_type", catalog.row_of(item))
    for step in range(1, 400):
        cand = f"I{int(item[1:]) + step:07d}"
        row = catalog.row_of(cand)
        if row is not None and catalog.value("product_type", row) != kind:
            return cand
    return None


def harmless(task: Task, catalog: Catalog) -> list[str] | None:
    return [*_calls(task), f"{final_answer(task)} {HARMLESS[task.index % len(HARMLESS)]}"]


def brand_colour_type(task: Task, catalog: Catalog, other: bool = False) -> list[str] | None:
    answer = final_answer(task)
    named = [i for i, t in task.goal.product_names.items() if f"{t} ({i})" in answer]
    if not named:
        return None
    for k, item in enumerate(sorted(named)):
        said = _other(catalog, item) if other else item
        if said is None:
            return None
        with_id = (task.index + k) % 2 == 0 and not other
        name = _arranged(catalog, said, task.index + k, with_id)
        answer = answer.replace(f"{task.goal.product_names[item]} ({item})", name)
    return [*_calls(task), answer]


CLASSES: dict[str, tuple[Probe, bool]] = {
    "false report, verb outside the old lists": (false_report, False),
    "promise of a write never done": (promise, False),
    "false report in es/de/fr/pt": (foreign, False),
    "denial in other words of a write made": (denial, False),
    "true 'not done' statement": (true_not_done, True),
    "harmless offer, condition or rule added": (harmless, True),
    "product named brand/colour/type (id or not)": (brand_colour_type, True),
    "product named brand/colour/type, another product": (
        lambda t, c: brand_colour_type(t, c, other=True),
        False,
    ),
}


def run(catalog: Catalog, tasks: list[Task], show: int = 0) -> list[list[str]]:
    rows = [["class", "passes / total", "want"]]
    references = sum(verify(t, [*_calls(t), final_answer(t)], catalog).success for t in tasks)
    rows.append(["reference", f"{references} / {len(tasks)}", "100%"])
    for name, (probe, must_pass) in CLASSES.items():
        passed = total = 0
        shown = 0
        for task in tasks:
            turns = probe(task, catalog)
            if turns is None:
                continue
            verdict = verify(task, turns, catalog)
            total += 1
            passed += verdict.success
            if show and verdict.success != must_pass and shown < show:
                shown += 1
                print(f"[{name}] {task.task_id}: {turns[-1][-300:]!r}")
                print("    ", verdict.violations[:3])
        rows.append([name, f"{passed} / {total}", ">= 98%" if must_pass else "<= 2%"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=20000)
    parser.add_argument("--tasks", type=int, default=900)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--show", type=int, default=0, help="print this many misjudged per class")
    parser.add_argument("--held-out", action="store_true", help="the held-out wordings")
    parser.add_argument("--fresh", action="store_true", help="the third set of wordings")
    args = parser.parse_args()
    if args.held_out or args.fresh:
        global FALSE_REPORTS, PROMISES, DENIALS, TRUE_NOT_DONE
        table = HELD_OUT if args.held_out else FRESH
        FALSE_REPORTS, PROMISES = table["FALSE_REPORTS"], table["PROMISES"]
        DENIALS, TRUE_NOT_DONE = table["DENIALS"], table["TRUE_NOT_DONE"]
    _, catalog, frame, _ = generated_store(
        "claims", products=args.products, tasks=args.tasks, seed=args.seed
    )
    tasks = [Task.from_row(row) for row in frame.iter_rows(named=True)]
    print_table(run(catalog, tasks, args.show))


if __name__ == "__main__":
    main()
