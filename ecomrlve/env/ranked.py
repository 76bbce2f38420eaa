"""Exact BM25 top-k for word queries, read from postings ranked in advance.

tantivy scores every row a filtered word query matches: block-max pruning does not apply under
`Must` clauses, and at 1M products one category holds ~50k rows, so a query takes ~1.5 ms. But a
row's BM25 score for a term is fixed once the index is built: it depends only on the term's
document frequency, its frequency in the row and the row's (quantised) text length. So this
module keeps every text term's postings twice, each with its score computed the way tantivy
computes it (float32, same formula, same order of operations):

* by row, for looking up the score of given rows (`row_scores`);
* by score within each category, highest first, ties by row, for reading only the best rows of
  a term (in the category the query filters on, or in all of them).

A word query then either scores the rows its exact string filters leave (a brand: a few hundred
rows), or walks the heads of its terms' ranked lists with the threshold algorithm (Fagin, Lotem
and Naor): the rows read so far are filtered and scored exactly, and the walk stops as soon as
the k-th best score beats the best score a row not read yet could still reach. Both give
tantivy's answer: score descending, ties by row ascending.

Exactness, and how it is kept:
* the scores equal tantivy's bit for bit. `Postings.checked_against` compares the best postings of
  terms of every size with tantivy's own scores when the index is built. If they differ (say, a
  tantivy upgrade changed its BM25), the postings are not used and every query goes to tantivy;
* a row matching several terms gets the float32 sum of their scores, and float32 addition is
  not associative. Two terms commute. For three or four, tantivy adds them in query order
  (checked at build on title queries: `clause_order`), except perhaps near the end of the
  shortest posting, where older tantivy versions reorder finished scorers; there every order
  is computed (`_orders`), and a row whose score is unsure and could enter the top k sends the
  query back to tantivy (`None`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl

log = logging.getLogger(__name__)

K1 = np.float32(1.2)  # tantivy's BM25 constants
B = np.float32(0.75)
MAX_TERMS = 4  # more distinct query terms: 4! orders of addition would be too many to check
FIRST_DEPTH = 256  # rows read from each ranked list in the first round
# Rows this close to the end of a query term's postings may get their scores added in another
# order by tantivy versions that drop finished scorers with swap_remove (one buffered window
# is 4,096 rows; twice that, to be safe).
CLAUSE_ORDER_MARGIN = 8192
_ARRAYS = ("offsets", "rows", "scores", "ranked_offsets", "ranked_rows", "ranked_scores")
VOCAB = "vocab.json"

# passes(rows) -> boolean mask of the rows that satisfy the query's filters
RowFilter = Callable[[np.ndarray], np.ndarray]


def fieldnorm_table() -> np.ndarray:
    """The 256 text lengths tantivy's one-byte field-norm codes stand for, ascending.

    Codes 0-23 are the lengths themselves; from 24 on, 24 + a 3-bit mantissa (with its leading
    one) times a power of two: exact for short texts, ~12% steps for long ones.
    """
    codes = np.arange(256, dtype=np.int64)
    rest = codes - 24
    mantissa, shift = rest & 7, rest >> 3
    encoded = np.where(shift == 0, mantissa, (mantissa | 8) << np.maximum(shift - 1, 0))
    return np.where(codes < 24, codes, 24 + encoded)


FIELDNORMS = fieldnorm_table()


def _logf() -> Callable[[float], float] | None:
    """The C library's single-precision log: what Rust's `f32::ln` calls (and tantivy's idf)."""
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name).logf
    except (OSError, AttributeError):
        return None
    function.restype, function.argtypes = ctypes.c_float, [ctypes.c_float]
    return function


def bm25_weights(doc_freq: np.ndarray, n_docs: int) -> np.ndarray | None:
    """idf * (1 + K1) per term, in float32 as tantivy computes it (None without a C logf)."""
    logf = _logf()
    if logf is None:
        return None
    f32 = np.float32
    ratio = ((n_docs - doc_freq).astype(f32) + f32(0.5)) / (doc_freq.astype(f32) + f32(0.5))
    idf = np.array([logf(float(x)) for x in (f32(1) + ratio)], dtype=f32)
    return idf * (f32(1) + K1)


def length_norms(total_tokens: int, n_docs: int) -> np.ndarray:
    """K1 * (1 - B + B * length / average length) per field-norm code, float32."""
    f32 = np.float32
    average = f32(total_tokens) / f32(max(n_docs, 1))
    return K1 * (f32(1) - B + B * FIELDNORMS.astype(f32) / average)


def text_tokens(texts: pl.Series, analyze: Callable[[str], list[str]]) -> tuple:
    """(row of each token, term code of each token, terms) of `texts` as the index sees them.

    `analyze` works token by token and a space always ends a token, so each distinct
    space-separated chunk is analysed once (a catalog has a few thousand in ~25M) and the
    chunks of every row are expanded into their terms with numpy.
    """
    lists = texts.str.split(" ")
    chunks = lists.explode()
    distinct = chunks.unique().sort()
    chunk_code = chunks.cast(pl.Enum(distinct)).to_physical().to_numpy()
    analysed = [analyze(chunk) if chunk else [] for chunk in distinct.to_list()]
    terms = sorted({term for chunk_terms in analysed for term in chunk_terms})
    code_of = {term: code for code, term in enumerate(terms)}
    code_type = np.uint16 if len(terms) <= np.iinfo(np.uint16).max else np.int32
    flat = np.array([code_of[t] for terms_ in analysed for t in terms_], dtype=code_type)
    per_chunk = np.array([len(chunk_terms) for chunk_terms in analysed], dtype=np.int64)
    most = len(chunks) * max(int(per_chunk.max(initial=0)), 1)  # tokens, at most
    index = np.int32 if most < 2**31 else np.int64  # 4 bytes a token where they fit
    first = (np.cumsum(per_chunk) - per_chunk).astype(index)
    chunk_rows = np.repeat(np.arange(len(texts), dtype=np.int32), lists.list.len().to_numpy())
    count = per_chunk.astype(np.int32)[chunk_code]
    del lists, chunks
    token_rows = np.repeat(chunk_rows, count)
    # token j of an occurrence reads flat[first + j]: shift a running index by each start
    ends = np.cumsum(count, dtype=index)
    shift = np.repeat(first[chunk_code] - (ends - count), count)
    del chunk_rows, chunk_code, ends
    shift += np.arange(len(token_rows), dtype=index)
    return token_rows, flat[shift], terms


@dataclass(frozen=True, repr=False)
class Postings:
    """Every term's postings with BM25 scores, by row and by score (see the module doc).

    By row, term `c` owns `[offsets[c], offsets[c + 1])` of `rows` / `scores`. By score, the
    postings are split by group (the category: nearly every search filters on one, and a
    ranked list of only that category's rows lets the walk stop early): term `c` in group `g`
    owns `[ranked_offsets[c * groups + g], ranked_offsets[c * groups + g + 1])`.
    """

    vocab: dict[str, int]
    groups: int
    offsets: np.ndarray  # int64 [terms + 1]
    rows: np.ndarray  # int32, ascending within a term
    scores: np.ndarray  # float32, aligned with rows
    ranked_offsets: np.ndarray  # int64 [terms * groups + 1]
    ranked_rows: np.ndarray  # int32, by score descending, then row ascending, in a (term, group)
    ranked_scores: np.ndarray  # float32, aligned with ranked_rows
    # tantivy adds a row's term scores in query order (checked on the built index, see
    # `checked_against`): then 3-4 term sums need no order-independence, except near the end of
    # the shortest posting, where an older tantivy reorders its scorers
    clause_order: bool = False

    def __repr__(self) -> str:
        return f"Postings({len(self.vocab):,} terms, {len(self.rows):,} postings)"

    # ---- build / store ----------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        texts: pl.Series,
        analyze: Callable[[str], list[str]],
        row_groups: np.ndarray,
        groups: int,
    ) -> Postings | None:
        """Postings of the text field `texts` (row i = document i), ranked within the group
        `row_groups[i]` (0 .. groups - 1) of each row; None without a C logf."""
        n_docs = len(texts)
        token_rows, token_codes, terms = text_tokens(texts, analyze)
        lengths = np.bincount(token_rows, minlength=n_docs)
        order = np.argsort(token_codes, kind="stable")  # radix sort: rows stay ascending
        rows = token_rows[order]
        del order
        token_offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.bincount(token_codes, minlength=len(terms)), out=token_offsets[1:])
        # one posting per (term, row): a row repeated inside a term's run adds to its frequency
        first = np.ones(len(rows), dtype=bool)
        first[1:] = rows[1:] != rows[:-1]
        first[token_offsets[:-1][token_offsets[:-1] < len(rows)]] = True
        starts = np.flatnonzero(first)
        frequency = np.diff(np.append(starts, len(rows))).astype(np.float32)
        rows = rows[starts]
        offsets = np.searchsorted(starts, token_offsets).astype(np.int64)
        doc_freq = np.diff(offsets)
        weights = bm25_weights(doc_freq, n_docs)
        if weights is None:
            log.warning("no C logf: word queries go to tantivy only")
            return None
        norms = length_norms(int(lengths.sum()), n_docs)
        codes = (np.searchsorted(FIELDNORMS, lengths, side="right") - 1).astype(np.uint8)
        norm = norms[codes[rows]]
        scores = np.repeat(weights, doc_freq) * (frequency / (frequency + norm))
        group_type = np.uint8 if groups <= 256 else np.int32  # a radix sort for few groups
        ranked = np.empty(len(rows), dtype=np.int64)
        ranked_offsets = np.empty(len(terms) * groups + 1, dtype=np.int64)
        ranked_offsets[-1] = len(rows)
        for term in range(len(terms)):
            start, end = offsets[term], offsets[term + 1]
            by_score = np.argsort(-scores[start:end], kind="stable")  # ties stay by row
            group = row_groups[rows[start:end]].astype(group_type)
            by_group = by_score[np.argsort(group[by_score], kind="stable")]
            ranked[start:end] = start + by_group
            counts = np.bincount(group, minlength=groups)
            ranked_offsets[term * groups : (term + 1) * groups] = start + np.cumsum(counts) - counts
        return cls(
            vocab={term: code for code, term in enumerate(terms)},
            groups=groups,
            offsets=offsets,
            rows=rows.astype(np.int32),
            scores=scores.astype(np.float32),
            ranked_offsets=ranked_offsets,
            ranked_rows=rows[ranked].astype(np.int32),
            ranked_scores=scores[ranked].astype(np.float32),
        )

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in _ARRAYS:
            np.save(folder / f"{name}.npy", getattr(self, name), allow_pickle=False)
        terms = sorted(self.vocab, key=self.vocab.__getitem__)
        meta = {"terms": terms, "groups": self.groups, "clause_order": self.clause_order}
        (folder / VOCAB).write_text(json.dumps(meta))

    @classmethod
    def open(cls, folder: Path) -> Postings:
        """Memory-mapped read-only (every worker on a machine shares the pages)."""
        arrays = {  # plain ndarray views of the maps: slicing a np.memmap costs ~5 µs
            name: np.asarray(np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False))
            for name in _ARRAYS
        }
        try:
            meta = json.loads((folder / VOCAB).read_text())
            terms, groups, clause_order = meta["terms"], int(meta["groups"]), meta["clause_order"]
        except (KeyError, TypeError) as err:
            raise ValueError(f"postings in {folder} have a damaged {VOCAB}: {err!r}") from err
        if (
            len(arrays["offsets"]) != len(terms) + 1
            or len(arrays["ranked_offsets"]) != len(terms) * groups + 1
        ):
            raise ValueError(f"postings in {folder} do not match their vocabulary")
        vocab = {term: code for code, term in enumerate(terms)}
        return cls(vocab=vocab, groups=groups, clause_order=bool(clause_order), **arrays)

    # ---- agreement with tantivy ---------------------------------------------------------------
    def checked_against(
        self,
        top: Callable[[tuple[str, ...], int], list[tuple[float, int]]],
        queries: Sequence[tuple[str, ...]],
        n: int = 24,
    ) -> Postings | None:
        """These postings if the best 50 rows of `n` terms spread over all posting sizes,
        read from the ranked lists, equal tantivy's (score, row) hits (`top(tokens, limit)`)
        bit for bit, else None; `clause_order` is set if tantivy's scores for the multi-term
        `queries` are their terms' scores added in query order."""
        size = np.diff(self.offsets)
        by_size = sorted(self.vocab, key=lambda term: (size[self.vocab[term]], term))
        spread = np.linspace(0, len(by_size) - 1, min(n, len(by_size))).astype(int)
        for term in sorted({by_size[i] for i in spread}):
            code = self.vocab[term]
            rows = self.top_k([code], None, None, 50, max_depth=1 << 62) or ()
            scores = self.row_scores([code], np.array(rows, dtype=np.int32))[0].tolist()
            if list(zip(scores, rows, strict=True)) != top((term,), len(rows)):
                log.warning("ranked postings disagree with tantivy on %r", term)
                return None
        ordered = replace(self, clause_order=True)
        for tokens in queries:
            codes = self.codes(tokens)
            if len(codes) != len(tokens):
                continue
            hits = top(tokens, 20)
            rows = np.array([row for _, row in hits], dtype=np.int32)
            order = np.argsort(rows)
            lowest, highest = ordered.row_scores(codes, rows[order], ordered=True)
            expected = np.array([score for score, _ in hits], dtype=np.float32)[order]
            if (
                not ((lowest <= expected) & (expected <= highest)).all()
                or not ((lowest != highest) | (lowest == expected)).all()
            ):
                log.info("tantivy adds term scores in another order: %r", tokens)
                return self
        return ordered

    # ---- queries ----------------------------------------------------------------------------
    def _span(self, code: int) -> tuple[int, int]:
        return int(self.offsets[code]), int(self.offsets[code + 1])

    def size(self, codes: Sequence[int]) -> int:
        """How many postings the terms `codes` have together."""
        return sum(int(self.offsets[code + 1] - self.offsets[code]) for code in codes)

    def codes(self, tokens: Sequence[str]) -> list[int]:
        """The distinct term codes of `tokens` that occur in the index, in order."""
        vocab = self.vocab
        return list(dict.fromkeys(vocab[t] for t in tokens if t in vocab))

    def row_scores(
        self, codes: Sequence[int], rows: np.ndarray, ordered: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) float32 BM25 score of each of `rows` over the orders in which
        tantivy may add its terms' scores: equal for one or two terms, and for more when the
        query is `ordered` (every query word is a term of the index, so tantivy's scorers
        are `codes` in this order) and tantivy keeps that order (`clause_order`)."""
        parts = []
        for code in codes:
            start, end = self._span(code)
            posted = self.rows[start:end]
            at = np.minimum(np.searchsorted(posted, rows), len(posted) - 1)
            hit = posted[at] == rows
            parts.append(np.where(hit, self.scores[start:end][at], np.float32(0)))
        lowest, highest = _orders(parts)
        if len(parts) <= 2 or not (ordered and self.clause_order):
            return lowest, highest
        in_order = parts[0]
        for part in parts[1:]:
            in_order = in_order + part
        last = min(int(self.rows[self._span(code)[1] - 1]) for code in codes)
        safe = rows < last - CLAUSE_ORDER_MARGIN
        return np.where(safe, in_order, lowest), np.where(safe, in_order, highest)

    def top_k_of_rows(
        self, codes: Sequence[int], rows: np.ndarray, top_k: int, ordered: bool = False
    ) -> tuple[int, ...] | None:
        """The best `top_k` of `rows` (ascending, filters already applied) that match a term."""
        lowest, highest = self.row_scores(codes, rows, ordered)
        return _select(rows, lowest, highest, top_k)

    def _ranked_spans(self, code: int, group: int | None) -> list[tuple[int, int]]:
        """The non-empty ranked lists of term `code`: in `group`, or in every group."""
        base, offsets = code * self.groups, self.ranked_offsets
        picked = range(self.groups) if group is None else (group,)
        spans = [(int(offsets[base + g]), int(offsets[base + g + 1])) for g in picked]
        return [(start, end) for start, end in spans if start < end]

    def top_k(
        self,
        codes: Sequence[int],
        group: int | None,
        passes: RowFilter | None,
        top_k: int,
        max_depth: int,
        ordered: bool = False,
    ) -> tuple[int, ...] | None:
        """The best `top_k` rows (of `group`, if given) that match a term and pass `passes`,
        by the threshold algorithm over the ranked lists. None if that would read more than
        `max_depth` postings of a list (the caller asks tantivy) or if the order of addition
        could matter near the cut."""
        lists = [self._ranked_spans(code, group) for code in codes]
        depth = FIRST_DEPTH
        while True:
            heads, cuts = [], []
            for spans in lists:
                cut = None  # the best score a row not read yet can have for this term
                for start, end in spans:
                    stop = min(end, start + depth)
                    heads.append(self.ranked_rows[start:stop])
                    if stop < end:
                        following = self.ranked_scores[stop]
                        cut = following if cut is None else max(cut, following)
                if cut is not None:
                    cuts.append(np.array([cut], dtype=np.float32))
            seen = np.concatenate(heads) if heads else np.empty(0, dtype=np.int32)
            seen.sort()
            if len(heads) > 1 and len(seen) > 1:
                seen = seen[np.concatenate(([True], seen[1:] != seen[:-1]))]
            if passes is not None:
                seen = seen[passes(seen)]
            lowest, highest = self.row_scores(codes, seen, ordered)
            if not cuts:  # every posting read
                return _select(seen, lowest, highest, top_k)
            if len(seen) >= top_k:
                kth = np.partition(lowest, len(seen) - top_k)[len(seen) - top_k]
                if kth > _orders(cuts)[1][0]:  # no unseen row can reach the top k
                    return _select(seen, lowest, highest, top_k)
            # deeper: 4x, or as deep as the rows passing so far say `top_k` of them need
            wanted = depth * top_k // max(len(seen), 1) if len(seen) < top_k else 0
            depth = max(4 * depth, wanted)
            if depth > max_depth:
                return None


def _orders(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) over the orders of adding `parts` left to right (float32 is not associative;
    the first two commute, so 3 orders for three terms and 12 for four)."""
    if len(parts) == 1:
        return parts[0], parts[0]
    if len(parts) == 2:
        total = parts[0] + parts[1]
        return total, total
    sums = []
    for order in itertools.permutations(range(len(parts))):
        if order[0] > order[1]:
            continue
        total = parts[order[0]] + parts[order[1]]
        for index in order[2:]:
            total = total + parts[index]
        sums.append(total)
    return np.minimum.reduce(sums), np.maximum.reduce(sums)


def _select(
    rows: np.ndarray, lowest: np.ndarray, highest: np.ndarray, top_k: int
) -> tuple[int, ...] | None:
    """The best `top_k` of `rows` (ascending) by score, ties by row; rows scoring 0 match no
    term. A row whose score depends on the order of addition (lowest < highest) must not be
    able to enter the top k of the others: else None."""
    matched = highest > 0
    if not matched.all():
        rows, lowest, highest = rows[matched], lowest[matched], highest[matched]
    certain = None if lowest is highest else lowest == highest
    if certain is not None and not certain.all():
        unsure = ~certain
        unsure_rows, unsure_highest = rows[unsure], highest[unsure]
        rows, lowest = rows[certain], lowest[certain]
        best = _best(rows, lowest, top_k)
        if len(best) < top_k:
            return None
        score, row = lowest[best[-1]], rows[best[-1]]
        if ((unsure_highest > score) | ((unsure_highest == score) & (unsure_rows < row))).any():
            return None
        return tuple(rows[best].tolist())
    return tuple(rows[_best(rows, lowest, top_k)].tolist())


def _best(rows: np.ndarray, scores: np.ndarray, top_k: int) -> np.ndarray:
    """Positions of the best `top_k` of `rows` (ascending): score descending, then row."""
    if len(rows) == 0:
        return np.empty(0, dtype=np.int64)
    cut = len(rows) - min(top_k, len(rows))
    kth = np.partition(scores, cut)[cut]
    near = np.flatnonzero(scores >= kth)
    return near[np.argsort(-scores[near], kind="stable")[:top_k]]
