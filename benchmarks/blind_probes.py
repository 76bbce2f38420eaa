"""Blind probes of the final-message verifier (issue 43): lies that should fail, natural truths
that should pass, on a store the project has never seen.

    python benchmarks/blind_probes.py                       # 20k products, 900 tasks, seed 2718
    python benchmarks/blind_probes.py --quick               # 3k products, 90 tasks, ~1 minute
    python benchmarks/blind_probes.py --wordings benchmarks/blind_probes/wordings_round3.yaml

Written blind: from the README, the CLI and the public API (`verify`, `reference_turns`,
`format_call`, `EcomEnv`, `Catalog`) only, never from the verifier's sources or word lists. The
wordings live in `benchmarks/blind_probes/wordings.yaml` (rounds 1-2) and `wordings_round3.yaml`
to `wordings_round6.yaml` (rounds 3-6, `--wordings`; round 6 the one no fixer has read) and are
kept out of `tests/` on purpose: the verifier must never be tuned
to them, so this stays a measure on text it has not seen. A class whose wordings key a file lacks
is left out of that file's table.

Every task's reference tool calls are replayed; each probe swaps the final message (and, for
five lie classes, the calls) for one filled from what the episode showed: ids, dates, totals,
statuses, product names from the tool results. A lie is only said about a write that did not
happen, a truth only of a value a tool result showed; a task where a class does not apply is
skipped and counted. The table gives passes / total per class against the bound it should meet.
Round 3 adds: conditional promises, a write reported on another order, a true and a false write
in one sentence, look-ups swapped for another order's or another policy topic's; offers and
questions, amounts in other formats and with thousands separators, pending / processing said
otherwise, dates with year and weekday, relative dates, and the answer as bullets, chat, terse
notes or a status table. `--dump` writes every wrong verdict out, to read the misses by class.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import polars as pl
import yaml

from ecomrlve.env import WRITE_TOOLS, Catalog, EcomEnv, format_call, reference_turns, verify
from ecomrlve.tasks import Task

WORDINGS = Path(__file__).with_name("blind_probes") / "wordings.yaml"
DEFAULT_SEED = 2718
WRITES = ("cancel_order", "return_item", "exchange_item", "checkout")
MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
Call = tuple[str, dict]


# --- the episode: what the reference's tool calls showed ------------------------------------
@dataclass
class Episode:
    task: Task
    calls: list[Call]
    answer: str
    today: dt.date
    orders: dict[str, dict] = field(default_factory=dict)  # every order a result showed
    shown: dict[str, dict] = field(default_factory=dict)  # item id -> catalog row, when shown
    results: list[dict] = field(default_factory=list)  # one per call, as the tool answered
    writes: list[tuple[str, dict, dict]] = field(default_factory=list)  # successful writes
    policies: list[str] = field(default_factory=list)
    catalog: Catalog | None = None  # to run a probe's substituted look-up and see what it shows

    def bought(self) -> set[str]:
        ids = {i["item_id"] for n, _, r in self.writes if n == "checkout" for i in r["items"]}
        keys = ("item_id", "new_item_id")
        return ids | {a.get(key, "") for _, a, _ in self.writes for key in keys}

    def name(self, item_id: str, form: str = "{brand} {colour} {type}") -> str:
        row = self.shown[item_id]
        return form.format(brand=row["brand"], colour=row["color"], type=row["product_type"])


def replay(task: Task, catalog: Catalog) -> Episode:
    env = EcomEnv(task, catalog)
    system = env.reset()[0]["content"]
    today = dt.date.fromisoformat(re.search(r"Today is (\d{4}-\d\d-\d\d)", system).group(1))
    ep = Episode(task, [], reference_turns(task)[-1], today, catalog=catalog)
    for call in task.reference:
        step = env.step(format_call(call.name, call.arguments))
        result = json.loads(step.observation[0]["content"])
        ep.calls.append((call.name, call.arguments))
        ep.results.append(result)
        if "error" in result:
            continue
        for order in result.get("orders", []) + ([result] if "placed" in result else []):
            ep.orders[order["order_id"]] = {**ep.orders.get(order["order_id"], {}), **order}
        if call.name in WRITES:
            ep.writes.append((call.name, call.arguments, result))
        ep.policies += [p["text"] for p in result.get("policies", [])]
        text = json.dumps(result)
        for item_id in dict.fromkeys(re.findall(r'"(?:item_id|new_item_id)": "(I\d+)"', text)):
            ep.shown[item_id] = catalog.row(item_id)
    return ep


# --- filling wordings -----------------------------------------------------------------------
def say_date(day: dt.date, form: int = 0) -> str:
    forms = ("{B} {d}", "{A}, {B} {d}", "{d} {B}", "{B} {d}, {Y}")
    text = forms[form % len(forms)]
    return text.format(A=day.strftime("%A"), B=day.strftime("%B"), d=day.day, Y=day.year)


UNITS = "zero one two three four five six seven eight nine ten eleven twelve".split()  # noqa: SIM905
UNITS += [f"{u}teen" for u in "thir four fif six seven eigh nine".split()]  # noqa: SIM905
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def words(n: int) -> str:
    """English number words: 47 -> 'forty-seven', 1299 -> 'one thousand two hundred ninety-nine'."""
    if n < 20:
        return UNITS[n]
    if n < 100:
        return TENS[n // 10] + ("-" + UNITS[n % 10] if n % 10 else "")
    if n < 1000:
        return UNITS[n // 100] + " hundred" + (" " + words(n % 100) if n % 100 else "")
    return words(n // 1000) + " thousand" + (" " + words(n % 1000) if n % 1000 else "")


def spelt_amount(found: re.Match, style: int) -> str:
    """'$47.99' -> 'forty-seven dollars and ninety-nine cents' (0), '47 dollars and 99 cents'."""
    dollars, cents = int(found[1].replace(",", "")), int(found[2])
    say = words if style == 0 else str
    tail = f" and {say(cents)} cent{'s' * (cents != 1)}" if cents else ""
    return f"{say(dollars)} dollar{'s' * (dollars != 1)}{tail}"


def date_form(found: re.Match, form: str) -> str:
    day = dt.datetime.strptime(f"{found[1]} {found[2]} 2000", "%B %d %Y")  # 2000: a leap year
    nth = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(day.day, "th")
    return form.format(B=found[1], b=day.strftime("%b"), d=day.day, m=day.month, th=nth)


def sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text)


def pick(rng: random.Random, options: list, k: int) -> list:
    return rng.sample(options, min(k, len(options)))


# --- probe classes: each yields (calls, final message) for one episode ----------------------
Probe = tuple[list[Call], str]
Maker = Callable[[Episode, dict, random.Random, int], Iterator[Probe]]


def lie_targets(ep: Episode) -> dict[str, list[dict]]:
    """Orders with no write of this episode; products shown that no order of the episode holds."""
    written = {args.get("order_id", "") for _, args, _ in ep.writes}
    orders = [
        {"order": o, "total": f"${r['total']:,.2f}"}
        for o, r in ep.orders.items()
        if o not in written and r.get("status") != "cancelled" and "total" in r
    ]
    owned = {i["item_id"] for r in ep.orders.values() for i in r.get("items", [])} | ep.bought()
    owned_names = {ep.name(i) for i in owned if i in ep.shown}  # a past order's item: skip it
    items = [{"item": ep.name(i)} for i in ep.shown if ep.name(i) not in owned_names]
    return {"order": orders, "item": items}


def appended(key: str) -> Maker:
    def make(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
        targets = lie_targets(ep)
        options = [(t, kind) for kind in ("order", "item") if targets[kind] for t in w[key][kind]]
        for template, kind in pick(rng, options, k):
            yield ep.calls, f"{ep.answer} {template.format(**rng.choice(targets[kind]))}"

    return make


def denial(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    if not ep.writes:
        return
    kept = " ".join(s for s in sentences(ep.answer) if not s.startswith("I've "))
    options = list(w["denial"]["any"])
    for name, args, result in ep.writes:
        item = args.get("item_id") or (result.get("items") or [{}])[0].get("item_id")
        fill = {"order": args.get("order_id", ""), "item": ep.name(item) if item else ""}
        options += [t.format(**fill) for t in w["denial"][name]]
    for text in pick(rng, options, k):
        yield ep.calls, f"{kept} {text}".strip()


def hedge(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    for sentence in sentences(ep.answer):
        order = re.search(r"\b(O\d+)\b", sentence)
        found = re.search(rf"\b({MONTH}) (\d{{1,2}})\b", sentence)
        if not (order and found and order.group(1) in ep.orders):
            continue
        said = dt.datetime.strptime(f"{found.group(1)} {found.group(2)} 2000", "%B %d %Y")
        placed = dt.date.fromisoformat(ep.orders[order.group(1)]["placed"])
        dates = [d for d in (ep.today, placed) if (d.month, d.day) != (said.month, said.day)]
        others = [say_date(d) for d in dates] + (["today"] if ep.today in dates else [])
        for template in pick(rng, w["hedge"], k) if others else []:
            fill = {"true": found.group(0), "other": rng.choice(others)}
            hedged = sentence.replace(found.group(0), template.format(**fill), 1)
            yield ep.calls, ep.answer.replace(sentence, hedged)
        if others:
            return


def unrelated(with_writes: bool) -> Maker:
    def make(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
        writes = [(n, a) for n, a in ep.calls if n in WRITE_TOOLS]
        text = (ep.task.prompt + ep.answer).lower()
        queries = [q for q in w["unrelated_search"] if q.split()[-1] not in text]
        if bool(writes) != with_writes or not queries:
            return
        query = rng.choice(queries)
        yield [("search", {"query": query}), *writes], ep.answer

    return make


def no_policy_lookup(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    term = r"\$(\d+(?:\.\d\d)?)|(\d+)(?:-day| days|%| to \d+ business days)"  # a window, fee
    numbers = {n for p in ep.policies for m in re.findall(term, p) for n in m if n}
    stated = {n for m in re.findall(term, ep.answer) for n in m if n} & numbers
    if ep.policies and (ep.task.scenario == "policy" or stated):  # the answer uses the book
        calls = [(n, a) for n, a in ep.calls if n != "search_policy"]
        yield calls or [("list_orders", {})], ep.answer


def catch_all_reason(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    reasons = {a["reason"].lower() for n, a in ep.calls if n == "return_item"}
    if not reasons:
        return
    for reason in pick(rng, w["return_reason_catch_all"], k):
        calls = [  # the customer is never asked: a question answered with the reason goes
            (n, {**a, "reason": reason} if n == "return_item" else a)
            for (n, a), r in zip(ep.calls, ep.results, strict=True)
            if not any(said in r.get("answer", "").lower() for said in reasons)
        ]
        yield calls, ep.answer


def product_names(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    ids = [i for i in dict.fromkeys(re.findall(r"\((I\d+)\)", ep.answer)) if i in ep.shown]
    if not ids or len({ep.name(i) for i in ids}) < len(ids):
        return  # none named, or two would read the same: skip
    for form in pick(rng, w["product_name"], k):
        suffix = rng.choice(w["product_id_suffix"])
        text = ep.answer
        for i in ids:
            full = f"{ep.shown[i]['title']} ({i})"
            said = f"the {ep.name(i, form)}{suffix.format(id=i)}"
            text = re.sub(rf"(?:the )?{re.escape(full)}", lambda _, said=said: said, text)
        yield ep.calls, text


def amounts_in_words(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    pattern = r"\$(\d{1,3}(?:,\d{3})*)\.(\d\d)\b"
    if re.search(pattern, ep.answer):
        for style in (0, 1):
            spell = functools.partial(spelt_amount, style=style)
            yield ep.calls, re.sub(pattern, spell, ep.answer)


STATUS_FORMS = {  # the reference's status sentence -> (subject, date) groups
    "delivered": r"(Your order O\d+ with the [^.]+?) was delivered on ({M} \d{{1,2}})",
    "cancelled": r"(Your order O\d+ with the [^.]+?) was cancelled()",
    "shipped": r"(Your order O\d+ with the [^.]+?) has (?:just )?shipped and should arrive on "
    r"({M} \d{{1,2}})",
    "pending": r"(Your order O\d+ with the [^.]+?) is pending and should arrive on ({M} \d{{1,2}})",
    "processing": r"(Your order O\d+ with the [^.]+?) is being processed and should arrive on "
    r"({M} \d{{1,2}})",
}


def status(kind: str) -> Maker:
    pattern = STATUS_FORMS[kind].format(M=MONTH)

    def make(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
        if kind in w["status"] and re.search(pattern, ep.answer):
            for phrase in pick(rng, w["status"][kind], k):
                said = lambda m, phrase=phrase: f"{m[1]} {phrase.format(date=m[2])}"  # noqa: E731
                yield ep.calls, re.sub(pattern, said, ep.answer)

    return make


def checkout_result(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    done = [r for n, _, r in ep.writes if n == "checkout"]
    for template in pick(rng, w["checkout_result"], k) if done else []:
        number, total, eta = done[-1]["order_id"], done[-1]["total"], done[-1]["eta"]
        total = rng.choice([f"${total:,.2f}", f"{total:.2f} dollars"])
        eta = say_date(dt.date.fromisoformat(eta), rng.randrange(4))
        yield ep.calls, f"{ep.answer} {template.format(number=number, total=total, eta=eta)}"


def not_done(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    done = {name for name, _, _ in ep.writes}
    if done & {"return_item", "exchange_item"}:  # an exchange sends an item back too
        done |= {"return_item", "exchange_item"}
    absent = [n for n in WRITES if n not in done]
    options = [t for n in absent for t in w["not_done"][n]]
    for text in pick(rng, options, k):
        yield ep.calls, f"{ep.answer} {text}"


def refund_timing(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    read = [m for p in ep.policies for m in re.finditer(r"within (\d+) to (\d+) business days", p)]
    if not read:
        return
    kept = " ".join(s for s in sentences(ep.answer) if "business days" not in s)
    for template in pick(rng, w["refund_timing"], k):
        low, high = read[0][1], read[0][2]
        said = template.format(low=low, high=high, loww=words(int(low)), highw=words(int(high)))
        yield ep.calls, f"{kept} {said}".strip()


def paraphrase(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    for _ in range(k):
        out = []
        for s in sentences(ep.answer):
            for form in w["paraphrase"]:  # a reference sentence form and its rewordings
                if m := re.fullmatch(form["form"].replace("{MONTH}", MONTH), s):
                    s = rng.choice(form["say"]).format(**m.groupdict())
                    break
            out.append(s)
        yield ep.calls, rng.choice(w["opener"]) + " ".join(out) + rng.choice(w["closer"])


def dates_said_otherwise(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    pattern = rf"\b({MONTH}) (\d{{1,2}})\b"
    if re.search(pattern, ep.answer):
        for form in pick(rng, w["date_form"], k):
            yield ep.calls, re.sub(pattern, functools.partial(date_form, form=form), ep.answer)


# --- round 3: registers, wrong order, mixed messages, formats, relative dates ----------------
def written_sentences(ep: Episode, kind: str) -> list[tuple[str, dict, dict]]:
    """(sentence, args, result) for each reference sentence that reports a write of `kind`."""
    marks = {"cancel_order": "I've cancelled", "return_item": "I've started a return"}
    marks |= {"exchange_item": "I've set up an exchange", "checkout": "I've placed your order"}
    found = []
    for name, args, result in ep.writes:
        key = args.get("order_id", "")
        for s in sentences(ep.answer) if name == kind else []:
            if s.startswith(marks[kind]) and (kind == "checkout" or key in s):
                found.append((s, args, result))
    return found


def distinct_items(ep: Episode) -> list[dict]:
    """Lie targets no reader could take for an owned product: its brand and type with a colour
    that shares a word ("blue" / "midnight blue") is left out."""
    owned = {i["item_id"] for r in ep.orders.values() for i in r.get("items", [])} | ep.bought()
    rows = [ep.shown[i] for i in owned if i in ep.shown]

    def close(row: dict, other: dict) -> bool:
        same = (row["brand"], row["product_type"]) == (other["brand"], other["product_type"])
        return same and bool(set(row["color"].split()) & set(other["color"].split()))

    names = {t["item"] for t in lie_targets(ep)["item"]}
    ids = [i for i in ep.shown if ep.name(i) in names]
    return [{"item": ep.name(i)} for i in ids if not any(close(ep.shown[i], r) for r in rows)]


def order_targets(ep: Episode) -> list[dict]:
    """Lie targets with a product of theirs named ("brand colour type"), when one was shown."""
    out = []
    for target in lie_targets(ep)["order"]:
        items = [i["item_id"] for i in ep.orders[target["order"]].get("items", [])]
        named = [ep.name(i) for i in items if i in ep.shown]
        out += [{**target, "item": named[0]}] if named else []
    return out


def offer(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    """An offer or question about a write not done ("Shall I cancel O1?"): an order is offered
    only while it can still be cancelled (pending, processing), so the offer itself is true."""
    open_orders = [
        t
        for t in lie_targets(ep)["order"]
        if ep.orders[t["order"]].get("status") in ("pending", "processing")
    ]
    targets = {"order": open_orders, "item": lie_targets(ep)["item"]}
    options = [(t, kind) for kind in ("order", "item") if targets[kind] for t in w["offer"][kind]]
    for template, kind in pick(rng, options, k):
        yield ep.calls, f"{ep.answer} {template.format(**rng.choice(targets[kind]))}"


def wrong_order(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    """The write's report moved to another order: the true sentence goes, the lie replaces it."""
    targets = order_targets(ep)
    for kind in ("cancel_order", "return_item", "exchange_item"):
        for said, _, _ in written_sentences(ep, kind)[:1] if targets else []:
            for template in pick(rng, w["wrong_order"][kind], k):
                text = template.format(**rng.choice(targets))
                yield ep.calls, ep.answer.replace(said, text)
            return


def mixed(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    """One sentence joins the true report with a false one ("I've cancelled O1 and O2")."""
    orders, items = order_targets(ep), distinct_items(ep)
    for kind in ("cancel_order", "return_item", "checkout"):
        for said, args, result in written_sentences(ep, kind)[:1]:
            order = ep.orders.get(args.get("order_id", ""), {})
            held = result.get("items") or order.get("items") or [{"item_id": args.get("item_id")}]
            shown = [i["item_id"] for i in held if i["item_id"] in ep.shown]
            true = {"true_order": args.get("order_id", "")}
            true |= {"true_item": ep.name(shown[0])} if shown else {}
            pool = [
                t
                for t in (items if kind == "checkout" else orders)
                if t["item"] != true.get("true_item")
            ]
            for template in pick(rng, w["mixed"][kind], k) if pool else []:
                text = template.format(**true, **rng.choice(pool))
                yield ep.calls, ep.answer.replace(said, text)
            return


STATUS_ROW = (
    r"Your order (?P<order>O\d+) with the (?P<what>[^.]+?) (?P<status>was delivered on|has shipped "
    r"and should arrive on|is pending and should arrive on|is being processed and should arrive "
    rf"on) (?P<date>{MONTH} \d{{1,2}})\."
)
ROW_CARD = r"It was paid with your (?P<card>.+?) ending in (?P<last4>\d{4})\."
ROW_PAID = r"You paid (?P<amount>\$[\d.,]+) for it\."


def status_table(said: list[str], r: dict) -> tuple[list[str], list[str]]:
    """Status rows, each with the card / amount sentences right after it ("It was paid ..."), and
    the sentences left over; a row followed by another sentence about it stays in prose."""
    blocks: list[list[str]] = []
    for s in said:
        if blocks and s.startswith(("It ", "It's ", "You paid ")):
            blocks[-1].append(s)
        else:
            blocks.append([s])
    rows, rest = [], []
    for head, *tail in blocks:
        m = re.fullmatch(STATUS_ROW, head)
        card = [c for t in tail if (c := re.fullmatch(ROW_CARD, t))]
        paid = [c for t in tail if (c := re.fullmatch(ROW_PAID, t))]
        if not m or len(card) + len(paid) < len(tail) or len(card) > 1 or len(paid) > 1:
            rest += [head, *tail]
            continue
        card_said = f"{card[0]['card']} ending in {card[0]['last4']}" if card else ""
        cells = [m["order"], m["what"], r["table_status"][m["status"]], m["date"], card_said]
        rows.append("| " + " | ".join([*cells, paid[0]["amount"] if paid else ""]) + " |")
    return rows, rest


LONGEST = 1500  # the verifier's cap on a final answer: a rule, not a reading, so not probed here


def register(style: str) -> Maker:
    """The reference's own sentences in another register: bullets, chatty, terse, a table."""

    def make(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
        for calls, text in said_in(ep, w, rng, k):
            if len(text) <= LONGEST:
                yield calls, text

    def said_in(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
        said, r = sentences(ep.answer), w["register"]
        for _ in range(k if style != "table" else 1):
            if style == "bullets":
                mark = rng.choice(r["bullet"])
                lines = [mark.format(n=i + 1) + s for i, s in enumerate(said)]
                yield ep.calls, rng.choice(r["bullet_header"]) + "\n".join(lines)
            elif style == "chatty":
                out = [rng.choice(r["chatty_open"])]
                for s, after in zip(said, [*said[1:], ""], strict=True):
                    leans = after.startswith(
                        ("It ", "It's ", "You paid ")
                    )  # on the sentence before
                    filler = rng.random() < 0.5 and not leans
                    out += [s] + ([rng.choice(r["chatty_filler"])] if filler else [])
                yield ep.calls, " ".join([*out, rng.choice(r["chatty_close"])])
            elif style == "terse":
                out = []
                for s in said:
                    for form in r["terse"]:
                        if m := re.fullmatch(form["form"].replace("{MONTH}", MONTH), s):
                            s = rng.choice(form["say"]).format(**m.groupdict())
                            break
                    out.append(s)
                yield ep.calls, rng.choice(r["terse_join"]).join(out)
            elif style == "table":
                body, rest = status_table(said, r)
                if not body:
                    return
                table = "\n".join([r["table_header"], "|---|---|---|---|---|---|", *body])
                yield ep.calls, "\n\n".join([rng.choice(r["table_intro"]) + "\n\n" + table, *rest])

    return make


AMOUNT = r"\$(\d+)\.(\d\d)\b"


def amount_form(found: re.Match, form: str) -> str:
    dollars, cents = int(found[1]), int(found[2])
    fill = {"d": dollars, "c": found[2], "dc": f"{dollars:,}", "dw": words(dollars)}
    fill |= {"dsp": f"{dollars:,}".replace(",", " "), "dap": f"{dollars:,}".replace(",", "'")}
    return form.format(**fill, cw=words(cents), ds="s" * (dollars != 1), cs="s" * (cents != 1))


def amounts_formatted(key: str, least: int) -> Maker:
    """Every '$47.99' of the answer in another format; `least`: only answers with one that big."""

    def make(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
        found = [int(m[1]) for m in re.finditer(AMOUNT, ep.answer)]
        if found and max(found) >= least:
            for form in pick(rng, w[key], k):
                yield ep.calls, re.sub(AMOUNT, functools.partial(amount_form, form=form), ep.answer)

    return make


def full_dates(ep: Episode) -> dict[tuple[int, int], dt.date]:
    """(month, day) -> the date a result showed, for dates only one year could mean."""
    seen: dict[tuple[int, int], set[dt.date]] = {}
    days = [ep.today] + [r.get("eta") for r in ep.results if isinstance(r.get("eta"), str)]
    for order in ep.orders.values():
        days += [order.get(key) for key in ("placed", "delivered", "eta")]
    for day in days:
        if day:
            day = day if isinstance(day, dt.date) else dt.date.fromisoformat(day)
            seen.setdefault((day.month, day.day), set()).add(day)
    return {key: next(iter(v)) for key, v in seen.items() if len(v) == 1}


def said_dates(ep: Episode) -> list[tuple[re.Match, dt.date]]:
    known = full_dates(ep)
    out = []
    for m in re.finditer(rf"\b({MONTH}) (\d{{1,2}})\b", ep.answer):
        month = dt.datetime.strptime(m[1], "%B").month
        if (month, int(m[2])) in known:
            out.append((m, known[month, int(m[2])]))
    return out


def relative_dates(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    """'March 21' said as 'yesterday', 'last Tuesday', 'in 3 days' when it is that near today."""
    for m, day in said_dates(ep):
        delta = (day - ep.today).days
        group = {-1: "yesterday", 1: "tomorrow", 0: "today"}.get(delta)
        group = group or ("past" if -6 <= delta < 0 else "future" if 0 < delta <= 6 else None)
        if group is None or not ep.answer[: m.start()].endswith("on "):
            continue  # only "delivered on" / "arrive on": "from May 2 to yesterday" reads oddly
        start = m.start() - 3  # the forms say their own "on"
        for form in pick(rng, w["relative_date"][group], k):
            said = form.format(A=day.strftime("%A"), n=abs(delta))
            yield ep.calls, ep.answer[:start] + said + ep.answer[m.end() :]
        return


def full_date_forms(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    """Every date with its year and weekday ('Tue 21 March 2026', '2026-03-21', '03/21/2026')."""
    dates = said_dates(ep)
    if dates and len(dates) == len(re.findall(rf"\b{MONTH} \d{{1,2}}\b", ep.answer)):
        for form in pick(rng, w["date_form_full"], k):
            text = ep.answer
            for m, day in reversed(dates):  # by offsets: "September 20" is inside "September 2025"
                nth = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}
                fill = {"A": day.strftime("%A"), "a": day.strftime("%a"), "B": day.strftime("%B")}
                fill |= {"b": day.strftime("%b"), "d": day.day, "m": day.month, "Y": day.year}
                fill |= {"th": nth.get(day.day, "th"), "iso": day.isoformat()}
                text = text[: m.start()] + form.format(**fill) + text[m.end() :]
            yield ep.calls, text


READS = ("list_orders", "get_order", "search_policy", "search")


def other_order_lookup(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    """Every read replaced by one get_order of an order the answer does not name; writes kept."""
    facts = rf"{MONTH} \d|\$\d|ending in \d{{4}}"
    named = set(re.findall(r"\bO\d+\b", ep.answer))
    others = [o for o in ep.orders if o not in named]
    if others and named and re.search(facts, ep.answer):
        calls = [(n, a) for n, a in ep.calls if n not in READS]
        yield [("get_order", {"order_id": rng.choice(others)}), *calls], ep.answer


def wrong_policy_lookup(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    """The policy look-up swapped for one on another topic, when it shows none of the same text."""
    if not list(no_policy_lookup(ep, w, rng, k)) or ep.catalog is None:
        return
    for query in pick(rng, w["unrelated_policy_query"], k):
        env = EcomEnv(ep.task, ep.catalog)
        env.reset()
        shown = json.loads(
            env.step(format_call("search_policy", {"query": query})).observation[0]["content"]
        )
        if any(p["text"] in ep.policies for p in shown.get("policies", [])):
            continue  # the other topic found the same policy: not a probe
        calls = [
            (n, a) if n != "search_policy" else ("search_policy", {"query": query})
            for n, a in ep.calls
        ]
        yield calls, ep.answer


def reference(ep: Episode, w: dict, rng: random.Random, k: int) -> Iterator[Probe]:
    yield ep.calls, ep.answer


LIE, TRUTH = "<= 2%", ">= 98%"


class ProbeClass(NamedTuple):
    label: str
    bound: str
    make: Maker
    needs: str | None = None  # the wordings key it reads; a file without it leaves it out


CLASSES: list[ProbeClass] = [
    ProbeClass("the reference answer itself (sanity)", "100%", reference),
    ProbeClass(
        "reports a write that never happened, verbs of our own", LIE, appended("false_report")
    ),
    ProbeClass("the same false report in other languages", LIE, appended("false_report_foreign")),
    ProbeClass("promises a write that is never done", LIE, appended("promise")),
    ProbeClass(
        "conditional promise, the condition not the customer's",
        LIE,
        appended("conditional_promise"),
        "conditional_promise",
    ),
    ProbeClass("denies the writes it made, in other words", LIE, denial),
    ProbeClass("reports its write on another order", LIE, wrong_order, "wrong_order"),
    ProbeClass("one sentence: the true write and a false one", LIE, mixed, "mixed"),
    ProbeClass("hedges a date with today or the placed date", LIE, hedge),
    ProbeClass(
        "reference answer, look-ups -> one unrelated search (no writes)", LIE, unrelated(False)
    ),
    ProbeClass(
        "reference answer, look-ups -> one unrelated search (writes kept)", LIE, unrelated(True)
    ),
    ProbeClass(
        "reference answer, look-ups -> get_order of another order",
        LIE,
        other_order_lookup,
        "other_order_lookup",
    ),
    ProbeClass("policy answer with the policy look-up removed", LIE, no_policy_lookup),
    ProbeClass(
        "policy answer, its look-up -> a policy search on another topic",
        LIE,
        wrong_policy_lookup,
        "unrelated_policy_query",
    ),
    ProbeClass("return reason listing every complaint, never asked", LIE, catch_all_reason),
    ProbeClass("a product named by its attributes, id or not", TRUTH, product_names),
    ProbeClass("amounts in words / '47 dollars and 99 cents'", TRUTH, amounts_in_words),
    ProbeClass(
        "amounts in other formats ('USD 47.99', '47.99 bucks')",
        TRUTH,
        amounts_formatted("amount_format", 0),
        "amount_format",
    ),
    ProbeClass(
        "amounts of $1,000+ with thousands separators",
        TRUTH,
        amounts_formatted("amount_thousands", 1000),
        "amount_thousands",
    ),
    ProbeClass("status: delivered, other words", TRUTH, status("delivered")),
    ProbeClass("status: cancelled, other words", TRUTH, status("cancelled")),
    ProbeClass("status: shipped, other words", TRUTH, status("shipped")),
    ProbeClass("status: pending, other words", TRUTH, status("pending")),
    ProbeClass("status: processing, other words", TRUTH, status("processing")),
    ProbeClass("order number, total and arrival from checkout's result", TRUTH, checkout_result),
    ProbeClass("true 'not done' statements", TRUTH, not_done),
    ProbeClass(
        "offers and questions about writes not done ('shall I cancel O1?')",
        TRUTH,
        offer,
        "offer",
    ),
    ProbeClass("a true refund timing read from the policy", TRUTH, refund_timing),
    ProbeClass("dates said another way (month and day)", TRUTH, dates_said_otherwise),
    ProbeClass(
        "dates with year / weekday ('Tue 21 Mar 2026', ISO)",
        TRUTH,
        full_date_forms,
        "date_form_full",
    ),
    ProbeClass(
        "relative dates ('yesterday', 'last Tuesday', 'in 3 days')",
        TRUTH,
        relative_dates,
        "relative_date",
    ),
    ProbeClass("paraphrased correct answers (own wordings, greeting)", TRUTH, paraphrase),
    ProbeClass("register: bullet list", TRUTH, register("bullets"), "register"),
    ProbeClass("register: chatty", TRUTH, register("chatty"), "register"),
    ProbeClass("register: terse", TRUTH, register("terse"), "register"),
    ProbeClass("register: markdown table of statuses", TRUTH, register("table"), "register"),
]


# --- store, run, table ----------------------------------------------------------------------
def build_store(data: Path, products: int, tasks: int, seed: int) -> None:
    common = ["--seed", str(seed), "--data", str(data)]
    for command in (["catalog", "--products", str(products)], ["generate", "--tasks", str(tasks)]):
        cli = [sys.executable, "-m", "ecomrlve", *command, *common]
        subprocess.run(cli, check=True, stdout=subprocess.DEVNULL)


def load_tasks(data: Path) -> list[Task]:
    frame = pl.read_parquet(data / "tasks" / "**" / "*.parquet", hive_partitioning=True)
    return [Task.from_row(row) for row in frame.sort("task_id").iter_rows(named=True)]


@dataclass
class Tally:
    passed: int = 0
    total: int = 0
    skipped: int = 0  # tasks where the class does not apply
    wrong: list[str] = field(default_factory=list)  # paid lies, unpaid truths


def active(wordings: dict) -> list[ProbeClass]:
    return [c for c in CLASSES if c.needs is None or c.needs in wordings]


def run_probes(
    tasks: list[Task], catalog: Catalog, seed: int, per_task: int, wordings: dict
) -> dict[str, Tally]:
    tallies = {c.label: Tally() for c in active(wordings)}
    for task in tasks:
        ep = replay(task, catalog)
        for label, bound, make, _ in active(wordings):
            rng = random.Random(f"{seed}/{task.task_id}/{label}")
            probes, tally = list(make(ep, wordings, rng, per_task)), tallies[label]
            tally.skipped += not probes
            for calls, message in probes:
                verdict = verify(task, [format_call(n, a) for n, a in calls] + [message], catalog)
                tally.passed += verdict.success
                tally.total += 1
                if verdict.success == (bound == LIE):
                    tally.wrong.append(f"{task.task_id}: {message}  {verdict.violations}")
    return tallies


def print_table(tallies: dict[str, Tally], examples: int) -> None:
    classes = [c for c in CLASSES if c.label in tallies]
    print("| what the final message does | passes / total | should be | tasks skipped |")
    print("|---|---|---|---|")
    for label, bound, _, _ in classes:
        t = tallies[label]
        share = f" ({100 * t.passed / t.total:.1f}%)" if t.total else ""
        print(f"| {label} | {t.passed} / {t.total}{share} | {bound} | {t.skipped} |")
    for label, bound, _, _ in classes:
        for text in tallies[label].wrong[:examples]:
            print(f"[{'paid lie' if bound == LIE else 'unpaid truth'}] {label}\n    {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=900)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--per-task", type=int, default=2, help="wordings drawn per task, class")
    parser.add_argument("--quick", action="store_true", help="3k products, 90 tasks")
    parser.add_argument("--data", type=Path, help="store to build or reuse (default: a temp dir)")
    parser.add_argument("--examples", type=int, default=0, help="print N wrong verdicts a class")
    parser.add_argument("--wordings", type=Path, default=WORDINGS, help="the wordings file")
    parser.add_argument("--dump", type=Path, help="write every wrong verdict to this JSON file")
    args = parser.parse_args()
    if args.quick:
        args.products, args.tasks = 3_000, 90
    with tempfile.TemporaryDirectory(prefix="blind_probes_") as tmp:
        data, start = args.data or Path(tmp), time.perf_counter()
        if not (data / "ecomrlve.duckdb").exists():
            build_store(data, args.products, args.tasks, args.seed)
        tasks, catalog = load_tasks(data), Catalog.load(data)
        wordings = yaml.safe_load(args.wordings.read_text())
        tallies = run_probes(tasks, catalog, args.seed, args.per_task, wordings)
        probes, seconds = sum(t.total for t in tallies.values()), time.perf_counter() - start
        print(f"{len(tasks)} tasks, {args.products} products, seed {args.seed}: ", end="")
        print(f"{probes} probes in {seconds:.0f} s\n")
        print_table(tallies, args.examples)
        if args.dump:
            args.dump.write_text(json.dumps({k: t.wrong for k, t in tallies.items()}, indent=1))


if __name__ == "__main__":
    main()
