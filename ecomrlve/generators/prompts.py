"""How customers phrase prompts: counts, mass nouns, and the frame around a request.

Shared by the scenario modules' prompt-building lines, so that "two bottles of woody
fragrance" and "a pair of black sneakers" come out right in every scenario (never "two of the
black fragrance"; sizes and variants, "size M" / "50 ml" / "queen size", are `phrasing`'s),
and every prompt is composed as opener x request frame x closer (`compose`, `frame`; seeded
like everything else).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from faker.providers.job.en_US import Provider as JobProvider

from ecomrlve.catalogs.taxonomy import CATEGORY_BY_NAME, fix_articles
from ecomrlve.generators.draws import pick
from ecomrlve.generators.phrasing import add_typos, render

NUMBER_WORDS: dict[int, str] = {
    1: "one",
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    7: "seven",
    8: "eight",
    9: "nine",
}


def number_word(n: int) -> str:
    return NUMBER_WORDS.get(n, str(n))


def counted(n: int | None, category: str, described: str = "") -> str:
    """`n` items of `category` with `described` words before the noun: "two black t-shirts",
    "one pair of black jeans", "three bags of dark roast coffee"; `n=None` is "some …"."""
    spec = CATEGORY_BY_NAME.get(category)
    words = f"{described} {category}".strip()
    if n is None:
        return f"some {words}"
    if spec is not None and spec.unit:
        unit = spec.unit if n == 1 else _plural(spec.unit)
        return f"{number_word(n)} {unit} of {words}"
    if n == 1:
        noun = spec.singular if spec is not None and spec.singular else category
        return f"one {described} {noun}".replace("  ", " ")
    return f"{number_word(n)} {words}"


def _plural(unit: str) -> str:
    return unit + ("es" if unit.endswith(("s", "sh", "ch")) else "s")


# ---- composing a prompt: opener x request x closer ---------------------------------------------
# Openers and closers vary register and length (none, a greeting, small talk, terse); composed
# with each scenario's request frames, the surface forms multiply.
OPENERS: tuple[str, ...] = (
    "", "", "", "Hi!", "Hello!", "Hi there.", "Hey,", "Hey there!", "Good morning!",
    "Good evening.", "Hello, hope you're well.", "Hi, quick one.", "Morning!",
    "Hiya!", "Hi, I need a hand.", "Sorry to bother you.", "I hope you can help.", "Hi team,",
    "Hello again!", "Okay, so", "Right,", "Hi, it's me again.", "Good afternoon,",
)  # fmt: skip
CLOSERS: tuple[str, ...] = (
    "", "", "", "Thanks!", "Thank you.", "Thanks a lot.", "Many thanks.", "Appreciate it!",
    "Thanks in advance.", "Cheers.", "Thank you so much!", "Much appreciated.",
    "Let me know, thanks.", "That would be great.", "Thanks for your help!",
    "I'd really appreciate it.", "Thanks, have a nice day.",
)  # fmt: skip
_GREETING = re.compile(r"^(?:hi|hello|hey|good (?:morning|afternoon|evening))\b", re.IGNORECASE)
_THANKS = re.compile(r"\b(?:thanks|thank you)\b[.!]?$", re.IGNORECASE)


# Who is writing and in what situation: a sentence of context about the customer (never about
# the request: no products, numbers, dates or policy words), drawn for some prompts. Faker's job
# titles give the customers their trades, and with them a wide everyday vocabulary.
_JOBS: tuple[str, ...] = tuple(
    job if job.split()[0].isupper() else job[0].lower() + job[1:]  # "IT trainer" stays
    for job in JobProvider.jobs
    if not any(c in job for c in ",()/")
)
JOB_SENTENCES: tuple[str, ...] = (
    "I'm {job} and I'm between meetings, so I'll keep this short.",
    "I work as {job}, so my time is tight this week.",
    "Writing from work — I'm {job} — on a short break.",
    "As {job}, I rarely get a quiet moment to shop.",
    "I'm {job}, and my shifts have been long lately.",
    "Sending this on my lunch break; I'm {job}.",
)
MOMENTS: tuple[str, ...] = (
    "It's been a hectic week.",
    "I'm typing this on my phone on the train.",
    "The kids are finally asleep, so I'm catching up on errands.",
    "I'm trying to get my chores sorted before the weekend.",
    "We just moved house, so everything is chaotic.",
    "I'm recovering from a cold and doing everything online.",
    "My neighbour recommended your shop.",
    "I'm not very good with websites, sorry.",
    "I'm organising things before my holiday.",
    "My partner usually handles this, but they're travelling.",
    "I'm a longtime customer and usually very happy.",
    "I'm sorting this out during a rainy afternoon at home.",
    "Apologies in advance if this is confusing.",
    "I tried the app first but got lost in the menus.",
    "Our renovation is finally finished, so I'm catching up on shopping.",
    "My calendar is packed, so I appreciate a quick answer.",
    "I'm at the airport waiting for a delayed flight.",
    "My grandmother taught me to keep receipts, so I'm tidying my accounts.",
    "I'm a student, so I watch every penny.",
    "Our basement flooded last month and we're still replacing things.",
    "I'm volunteering at the community garden all weekend.",
    "The office printer jammed again, so I'm doing admin from home.",
    "My sister is visiting and borrowed half my wardrobe.",
    "We're expecting twins soon, so I'm getting organised.",
    "I've just started a new job across town.",
    "I'm training for a half marathon and short on spare time.",
    "The weather here has been miserable, so I'm shopping indoors.",
    "My landlord is repainting the flat, so things are upside down.",
    "I'm planning a surprise party for a friend.",
    "My dog keeps chewing everything, which explains a lot.",
    "I'm a bit of a perfectionist about these things.",
    "I'm writing during halftime of my son's football match.",
    "Our wifi keeps dropping, so bear with me.",
    "I'm helping my elderly father with his shopping too.",
    "I've been meaning to deal with this for weeks.",
    "I'm on night shifts, so apologies for the odd hour.",
    "We're hosting relatives over the holidays.",
    "I just got back from a conference and I'm catching up.",
    "I'm decluttering the whole apartment this month.",
    "My budget spreadsheet told me to sort this out.",
    "I'm not in a rush, but I'd like clarity.",
    "I'm usually patient, but this has dragged on.",
    "A colleague said your support is quick, so here I am.",
    "I'm restoring an old cottage in the countryside.",
    "The holidays snuck up on me this year.",
    "I'm juggling three projects at once right now.",
    "My previous message might have gone astray, so I'm writing again.",
    "I'm doing this between school pickups.",
    "Our choir rehearses tonight, so I'm squeezing this in.",
    "I'm fairly new to online shopping.",
    "My physiotherapist says I should sit less, so I'll be brief.",
    "I'm on a boat trip with patchy signal.",
    "The garden shed is finally built, so I'm back to normal errands.",
    "I'm preparing for exams and need this off my plate.",
    "My flatmates and I share an account, which gets confusing.",
    "It's my first week back after parental leave.",
)
CONTEXT_PROB = 0.45


def context(rng: np.random.Generator) -> str:
    """A sentence about the customer (their trade or situation), or "" for most prompts."""
    if rng.random() >= CONTEXT_PROB:
        return ""
    if rng.random() < 0.6:
        return pick(rng, JOB_SENTENCES).format(job=fix_articles(f"a {pick(rng, _JOBS)}"))
    return pick(rng, MOMENTS)


# A request with details left out says so: what the verifier checks is stated, signalled or
# readable through a tool (issue 13: discoverable goals).
HIDDEN_SIGNALS: dict[int, tuple[str, ...]] = {
    1: (
        "There's one more requirement — ask me about it.",
        "I also have one more preference, so check with me before you pick.",
        "One more detail matters to me; just ask.",
    ),
    2: (
        "I have a couple more requirements — ask me about them.",
        "There are a few more details that matter to me, so check with me first.",
        "Ask me about my other requirements before you choose.",
    ),
}


def hidden_signal(n_hidden: int, rng: np.random.Generator) -> str:
    """A sentence telling the agent that `n_hidden` requirements are not stated yet."""
    return pick(rng, HIDDEN_SIGNALS[1 if n_hidden == 1 else 2]) if n_hidden else ""


def _join(opener: str, request: str, closer: str) -> str:
    # "Hey, can you…" (an opener that runs on), but "I" and names stay capitalised
    runs_on = opener.endswith(",") or opener == "Okay, so"
    if runs_on and not re.match(r"^(?:I\b|I'|[A-Z][a-z]+ [A-Z])", request):
        request = re.sub(r"^\{(\w+)_cap\}", r"{\1}", request)  # "{item_cap}" -> "{item}"
        request = request[:1].lower() + request[1:]
    return " ".join(part for part in (opener, request, closer) if part)


def frame_parts(request: str, rng: np.random.Generator) -> tuple[str, str]:
    """An opener and a closer for `request` (none that would repeat its greeting or thanks)."""
    opener = "" if _GREETING.match(request) else pick(rng, OPENERS)
    closer = "" if _THANKS.search(request.strip()) else pick(rng, CLOSERS)
    return opener, closer


def compose(
    template: str, values: dict[str, Any], rng: np.random.Generator, typo_rate: float
) -> str:
    """A prompt: an opener, the request frame `template` filled with `values`, a closer.

    Typos (at `typo_rate`) touch only the literal words, never the values, as in `render`.
    """
    opener, closer = frame_parts(template, rng)
    about = "" if _GREETING.match(template) else context(rng)  # context never precedes a "Hi"
    about = about.replace("{", "{{").replace("}", "}}")
    opener = " ".join(part for part in (opener, about) if part)
    return render(_join(opener, template, closer), values, rng, typo_rate)


def frame(text: str, rng: np.random.Generator, typo_rate: float) -> str:
    """An already rendered request with an opener and a closer (their words may get typos)."""
    opener, closer = frame_parts(text, rng)
    about = "" if _GREETING.match(text) else context(rng)
    opener = " ".join(part for part in (opener, about) if part)
    opener = add_typos(opener, typo_rate, rng)
    closer = add_typos(closer, typo_rate, rng)
    return _join(opener, text, closer)
