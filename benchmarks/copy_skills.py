"""Which copying skills the tiny CPU model learns, and how fast: why the demo learns the policy
scenario but not the scenarios that copy ids (docs/training.md, "The CPU demo"; the runs are in
benchmarks/RESULTS.md).

    python benchmarks/copy_skills.py                        # 3 probes at width 128 (~6 min)
    python benchmarks/copy_skills.py --widths 128 256 --steps 1000

Each probe is a family of synthetic sequences, trained from scratch on a fresh tiny Qwen3
(`build_tiny_qwen3`, the demo's architecture) with the project's own SFT step (`train_sft`: loss
on the generated part only), with a tiny tokenizer built like the demo's (byte-level BPE, one
token per run of up to three digits) on catalog titles:

* `repeat`: 24 random tokens (words and ids), then the same 24 again: induction heads, every
  generated token a copy with its position known;
* `one_record`: ``<key> O1234567`` then ``? <key> ->`` and the id: copying seven digits from the
  context when there is nothing to choose;
* `recall`: 2 to 6 such records and one asked for by its key: choose the record, then copy its
  id. This is what order_status, cancel and return ask of the model when it matches the
  customer's words to one of the orders `list_orders` shows and writes that order's id.

Printed per probe and width: the training loss (mean of the last 20 steps), exact-match
accuracy of greedy generation on 100 fresh sequences, and seconds. Measured on the 2-core VM
(RESULTS.md): `one_record` reaches ~100% within a few hundred steps; `recall` stays near
chance with one token per digit and with digit runs alike, so the id-copying scenarios beyond
d0-1 fail on choosing the record, not on copying digits.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ecomrlve.catalogs.synth import build_products
from ecomrlve.config import TrainingConfig
from ecomrlve.testing.bench import print_table
from ecomrlve.train.chat import TokenSequence
from ecomrlve.train.model import TinySpec, build_tiny_qwen3, build_tiny_tokenizer
from ecomrlve.train.sft import train_sft

BATCH = 32
PROBE_SEQUENCES = 100


@dataclass
class Vocabulary:
    """The tokens the probes draw from: whole-word tokens for keys (ids are encoded text)."""

    tokenizer: object
    words: list[int]

    @classmethod
    def build(cls, products: int, seed: int) -> Vocabulary:
        titles = build_products(products, seed)["title"].to_list()
        tokenizer = build_tiny_tokenizer(titles, TinySpec().vocab_size)
        vocab = tokenizer.get_vocab()
        special = set(tokenizer.all_special_ids)
        words = sorted(
            i
            for text, i in vocab.items()
            if i not in special and text.strip("Ġ").isalpha() and len(text.strip("Ġ")) >= 3
        )
        return cls(tokenizer, words)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)


Probe = Callable[[Vocabulary, np.random.Generator], TokenSequence]


def _id(vocab: Vocabulary, rng: np.random.Generator) -> list[int]:
    """An order id spelled as the tokenizer spells it everywhere: `O` and seven digits in runs
    of up to three (`O|870|724|9`)."""
    return vocab.encode("O" + "".join(map(str, rng.integers(0, 10, 7))))


def _key(vocab: Vocabulary, rng: np.random.Generator) -> list[int]:
    return rng.choice(vocab.words, int(rng.integers(1, 3))).tolist()


def repeat(vocab: Vocabulary, rng: np.random.Generator) -> TokenSequence:
    segment: list[int] = []
    while len(segment) < 24:
        segment += _id(vocab, rng) if rng.random() < 0.3 else _key(vocab, rng)
    sequence = TokenSequence()
    sequence.add_context(segment)
    sequence.add_generated(segment)
    return sequence


def _records(vocab: Vocabulary, rng: np.random.Generator, count: int) -> TokenSequence:
    keys = [_key(vocab, rng) for _ in range(count)]
    ids = [_id(vocab, rng) for _ in range(count)]
    context: list[int] = []
    for key, order_id in zip(keys, ids, strict=True):
        context += key + vocab.encode(" ") + order_id + vocab.encode("\n")
    asked = int(rng.integers(count))
    sequence = TokenSequence()
    sequence.add_context(context + vocab.encode("? ") + keys[asked] + vocab.encode(" ->"))
    sequence.add_generated(ids[asked])
    return sequence


def one_record(vocab: Vocabulary, rng: np.random.Generator) -> TokenSequence:
    return _records(vocab, rng, 1)


def recall(vocab: Vocabulary, rng: np.random.Generator) -> TokenSequence:
    return _records(vocab, rng, int(rng.integers(2, 7)))


PROBES: dict[str, Probe] = {"repeat": repeat, "one_record": one_record, "recall": recall}


def exact_match(model: torch.nn.Module, sequences: list[TokenSequence]) -> float:
    """Share of `sequences` whose generated part greedy decoding reproduces exactly."""
    model.eval()
    right = 0
    with torch.no_grad():
        for sequence in sequences:
            start = sequence.loss_mask.index(1)
            target = sequence.token_ids[start:]
            prompt = torch.tensor([sequence.token_ids[:start]])
            out = model.generate(prompt, max_new_tokens=len(target), do_sample=False)
            right += out[0, start:].tolist() == target
    model.train()
    return right / len(sequences)


def run_probe(
    name: str, vocab: Vocabulary, width: int, steps: int, lr: float, seed: int
) -> dict[str, float | int | str]:
    rng = np.random.default_rng(np.random.SeedSequence([seed, width, len(name)]))
    probe = PROBES[name]
    train = [probe(vocab, rng) for _ in range(steps * BATCH)]
    held_out = [probe(vocab, rng) for _ in range(PROBE_SEQUENCES)]
    spec = TinySpec(
        hidden_size=width,
        intermediate_size=4 * width,
        num_attention_heads=width // 32,
        num_key_value_heads=max(1, width // 64),
        seed=seed,
    )
    model = build_tiny_qwen3(vocab.tokenizer, spec)
    config = TrainingConfig.model_validate(
        {
            "seed": seed,
            "sft": {"steps": steps, "batch_size": BATCH, "learning_rate": lr,
                    "warmup_steps": 20, "lr_schedule": "constant"},
            "scale": {"mini_batch_size": BATCH},
        }
    )  # fmt: skip
    started = time.perf_counter()
    result = train_sft(model, train, config, pad_token_id=vocab.tokenizer.pad_token_id)
    return {
        "probe": name,
        "width": width,
        "steps": steps,
        "loss": float(np.mean(result.losses[-20:])),
        "exact": exact_match(model, held_out),
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", nargs="+", choices=list(PROBES), default=list(PROBES))
    parser.add_argument("--widths", nargs="+", type=int, default=[128])
    parser.add_argument("--steps", type=int, default=600, help="SFT steps per probe (x32 seqs)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if any(w % 64 for w in args.widths):
        parser.error("--widths must be multiples of 64 (heads of 32 dimensions, 2 per kv head)")
    torch.manual_seed(args.seed)
    vocab = Vocabulary.build(products=2000, seed=args.seed)
    table = [["probe", "width", "steps", "loss", "exact", "seconds"]]
    for width in args.widths:
        for name in args.probes:
            row = run_probe(name, vocab, width, args.steps, args.lr, args.seed)
            table.append(
                [name, str(width), str(args.steps), f"{row['loss']:.3f}", f"{row['exact']:.0%}",
                 f"{row['seconds']:.0f}"]
            )  # fmt: skip
            print("done:", *table[-1], file=sys.stderr, flush=True)  # minutes per probe
    print_table(table, numeric=True)


if __name__ == "__main__":
    main()
