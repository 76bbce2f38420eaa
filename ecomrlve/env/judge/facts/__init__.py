"""Answer facts read back from free text: the final answer is checked fact by fact, by kind.

A task's `Goal.answer_facts` lists `AnswerFact`s: a *kind*, a canonical *value*, optionally the
order it is about (*subject*, with *cues*: the words that name that order in an answer),
*allowed* context values and the *role* the value has ('' = any; see Roles below).
`check_answer` normalises the answer (unicode, dashes, number words via text2num: "forty-five"
-> 45, "sixteenth" -> 16th, "fourteen-day" -> "14 day"), extracts every value of each checked
kind and reports which facts were found, which are missing and which conflict.

Kinds and canonical values:

==========  ==========================  ===================================================
kind        value                       read from
==========  ==========================  ===================================================
date        ISO day ``2026-06-16``      "June 16", "Jun 16th, 2026", "16 June", "the 16th of
                                        June", "16-Jun", "Jun-16", "the 16th (June)", "June,
                                        the 16th", "2026/06/16", "16.6.2026", "6/16" (also
                                        read as d/m when that is a date); in a date's role,
                                        relative to today: "tomorrow", "in 4 days", "4 days
                                        from now", "3 days ago", "this Friday", "last
                                        Tuesday", "on Friday" (either), "the 16th", "today"
money       ``4.99`` (dollars)          "$4.99", "4.99 USD", "4.99 dollars", "forty-seven
                                        dollars and ninety-nine cents", "$0", "free",
                                        "no charge", "free of charge"
percent     ``10``                      "10%", "10 percent", "ten percent", "no restocking
                                        fee" / "0%" for 0
duration    ``30`` or ``5-7`` (days)    "30 days", "30-day", "thirty days", "5 to 7 business
                                        days", "between 5 and 7 days", "5 through 7 days",
                                        "2 weeks"; each with a role: a window ("the
                                        30-day window", "a window of 30 days", "30 days to
                                        return it"), elapsed ("30 days ago", "30 days since
                                        delivery", "30 days past"), a refund's time (business
                                        days: never a return window), or unknown
status      order status                "delivered"/"arrived", "shipped"/"on its way"/"in
                                        transit", "processing"/"being prepared", "pending",
                                        "cancelled"/"canceled" — not after "will be",
                                        "can't be", "to be", a negation, "not one of" /
                                        "no order", a wish ("should you want O2
                                        cancelled"), in a question ("Do you want O2
                                        cancelled?") or an exchange's terms ("an exchange
                                        in which the new one is sent"); a movement: done
                                        to the customer's place is delivered ("got to you",
                                        "showed up at your door"), under way or from the
                                        shop's place shipped ("has left our warehouse");
                                        an event of its kind, verbs by lemma: arrival
                                        ("has been with you since", "signed for") is
                                        delivered, the carrier's hands ("is in the mail",
                                        "handed to the courier", "went out") shipped, not
                                        started ("is queued") pending, being prepared
                                        ("being prepped", "in the works") processing,
                                        stopped ("called off", "the cancellation of O1
                                        went through") cancelled; not of a subject that is
                                        no order ("your refund is being processed")
payment     ``paypal-6458``             "PayPal account ending in 6458", "Visa ****1234"
address     the address text            house number + street (abbreviations folded);
                                        any "<number> <name> <suffix>" is a street line
verdict     ``return:yes`` etc.         per clause: a topic (return / exchange / cancel)
                                        with its polarity ("can't", "no longer", "has
                                        closed", "not eligible", "final sale" are no; "can",
                                        "still", "eligible", "you have" are yes; "only"
                                        makes a rule, not a verdict); a bare "Yes"/"No"
                                        ("Unfortunately not", "Sure") counts when one
                                        verdict is asked; a clause stating the shop's rule
                                        ("returns are accepted within 21 days", "you can
                                        return items within 30 days") is no verdict
term        a policy term               ``final_sale`` ("final sale", "final-sale"),
                                        ``return_instead``, ``last_day``
text        legacy substring keys       any of `alternatives`, case-insensitive
==========  ==========================  ===================================================

Each kind is one class in `kinds.py` (`KINDS`, `register`): how to read its values, parse a
target, match and conflict; `check_answer` is generic over the registry. One entry states no
value: `claims` audits every answer the verifier checks against the episode's writes
(`ecomrlve.env.judge.claims`; `Shown` carries the record and catalog), into `AnswerCheck.claims`.

Roles: the generators give a fact the role its value has where they know it (`role`) and each
of its allowed context values theirs (`allowed_roles`); rows written before roles hold none and
are checked by value, as before. A stated value fits a role when the role is '', the value was
read in no role (unknown), or the two are equal. It states a fact, or is allowed as its target,
only when it fits the fact's role; it is allowed as a context value when it fits that value's
role, or, for a context value without one, when it was not read in a role a target of its kind
has (the kind's own target roles, e.g. a duration's window and left, or a role a fact of the
task gives its target or context):

==========  ==================  ==============================================================
kind        roles generators    roles read from the words around a stated value
            give (target;
            context)
==========  ==================  ==============================================================
duration    window, left;       window ("the 30-day window", "within 30 days", "you have 30
            (elapsed)           days to return it"), left ("9 more days", "9 days left"),
                                elapsed ("35 days ago", "35 days since delivery")
money       shipping; order,    shipping ("$4.99 to ship", "shipping is $4.99", "costs $4.99"
            threshold           in a sentence about shipping), order ("a $35 order", "order
                                total of $35"), threshold ("the $50 threshold", "orders over
                                $50", "$50 or more")
date        arrival; placed     arrival ("delivered on June 16", "should arrive June 16",
                                "due June 16"), placed ("placed on June 3", "ordered June 3")
==========  ==================  ==============================================================

So "the window is 9 days, so you have 30 more days" fails for a 30-day window with 9 days left,
"the 21-day window closed 21 days ago" fails when it closed 14 days ago (21 is the window, no
elapsed value), "it arrived 30 days ago" states no 30-day window, "your $35 order costs $50 to
ship, under the $4.99 threshold" fails for a $4.99 fee, and "placed June 16, delivered June 3"
fails for an order placed June 3 and delivered June 16.

Required and context facts: a fact with `required=False` (the window length when the question
was yes/no, the days left, the status before a cancel) may be left out (`AnswerCheck.unstated`)
but, like every fact, must not be contradicted.

Evidence — what the answer states, the episode made known (with `shown`; issue 43):

* Every stated value of a valued kind, checked or not, is grounded: today, the prompt, a value
  shown (`Shown`: tool results, the customer's replies, a refused call's message; data are
  looked up first (`Kind.quick`: ISO days, amounts and days by key, statuses, cards), texts
  read only for a value not found so), or the difference of two such values (`Shown.derives`:
  days left = window - days since delivery, what an order lacks to ship free), or for an
  amount the sum of two or three totals shown (what orders of a span came to together).
* A fact the answer states counts only with its evidence (`Kind.evident`): a fact about an
  order needs its target shown *of that order* (`Shown.about`: the dicts with its id, the
  messages naming it); a verdict or policy term needs one of the policy rows the request needs
  (`Shown.policies`) read, and its order or item shown. A fact without evidence is listed in
  `ungrounded`.
* Hedged alternatives state no fact (`hedged`: "either today or June 16", "June 16 or 17",
  "maybe June 16", "June 16/today", "June 16 (possibly June 14)", "June 16, though it might
  have been today"): the fact is missing unless stated plainly; every alternative is still
  checked for conflicts and grounding. Two different dates about one subject, the second with
  no content word of its own whatever joins them, are alternatives too (`alternatives`:
  "June 16 if not June 14", "June 16, unless it was June 14"), while "placed June 3, delivered
  June 16" states both.
* A sentence naming an order no fact is about (an order id no cue names: the order just placed)
  is about that order (`OTHER`): its values are judged by evidence, not as conflicts with the
  facts of the orders the request is about. After an order placed in the episode (an "N" id)
  the sentences that name nothing go on about it ("Order #N0001. Total: $52.98."); after an
  order on file, they do not (a policy answer after "I've started a return from order O1" is
  still held to the policy's facts). An order id names the facts of its order
  (or of its items, the product's words picking among them).

Precision — an answer that states a conflicting value of a checked kind fails:

* Grounding (when the verifier passes what the episode showed, `Shown`): every value — date,
  money, percent, duration, status, payment method, street address, of a kind the goal checks
  or not — must be grounded (see Evidence above): a value of the prompt, today's date, the
  customer's details of the system prompt, or a value a successful tool result of the episode
  showed (its texts, and its numbers under a key of the kind: "price"/"total" for money,
  "day"/"window" for durations; durations also: days between today and an ISO day shown).
  Checked kinds are also held to their targets and allowed values, as below. Ungrounded values
  fail (`AnswerCheck.ungrounded`), so a hedged list ("free, 30 days, 0%") fails unless every
  value in it was shown. Tasks without facts are checked the same way. Verdicts and terms are
  not values: they need their evidence read (`Kind.evident`).
* A value conflicts when it is none of: the targets of that kind (for the same subject), the
  fact's `allowed` values (context the generator knows is legitimate: the order's own placed
  date, the order value the question names, the free-shipping threshold, days since delivery,
  days the window closed ago, the item's price and order total), today's date, or a value the
  user's own request states (the prompt's values of that kind are always allowed). A duration
  stated as a window must be a target (or a window the prompt states): the allowed values are
  elapsed time, so "the 14-day window closed 21 days ago" fails for a 21-day window that
  closed 14 days ago, though 14 and 21 are both values the answer may state.
* With facts about several orders, the answer is split into sentences; a sentence that names
  an order (its id, item id or product noun) and the sentences after it, until another order
  is named, are about that order. A fact must be stated about its own order, and a value
  stated about an order conflicts unless it is that order's target or allowed value (so
  facts attached to the wrong order fail, and so do dumps of every order's dates).
* A verdict conflicts when the answer also asserts the opposite polarity on the same topic;
  dates, durations, percents, money, statuses and payment methods conflict by value (a
  duration stated as a window by value and role);
  addresses conflict when another address the customer has, or any other street line,
  appears; terms never conflict.
* Answers longer than the verifier's `answer_limit` fail before any reading; nothing in the text can
  raise (unreadable values such as "31/02" or "1e309" are simply not values).
"""

from __future__ import annotations

from ecomrlve.env.judge.facts.check import (
    AnswerCheck,
    AnswerPlan,
    Shown,
    check_answer,
    describe,
    spellings,
)
from ecomrlve.env.judge.facts.kinds import KINDS, Kind, register
from ecomrlve.env.judge.facts.text import (
    _NUMBER_HINT,
    _NUMBER_STEMS,
    _NUMBER_WORD,
    normalise,
    sentence_spans,
    sentences,
)
from ecomrlve.env.judge.facts.values import (
    TERMS,
    extract_dates,
    extract_durations,
    extract_money,
    extract_payments,
    extract_percents,
    extract_statuses,
    extract_streets,
    extract_verdicts,
)

__all__ = [
    "KINDS",
    "TERMS",
    "_NUMBER_HINT",
    "_NUMBER_STEMS",
    "_NUMBER_WORD",
    "AnswerCheck",
    "AnswerPlan",
    "Kind",
    "Shown",
    "check_answer",
    "describe",
    "extract_dates",
    "extract_durations",
    "extract_money",
    "extract_payments",
    "extract_percents",
    "extract_statuses",
    "extract_streets",
    "extract_verdicts",
    "normalise",
    "register",
    "sentence_spans",
    "sentences",
    "spellings",
]
