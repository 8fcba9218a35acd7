"""Shared fixtures for trainer tests: a very small tiny policy, built once per session in a temp cache."""

import pytest
import torch

TINY_TEST_OVERRIDES = [
    "policy.tiny.corpus_episodes=40", "policy.tiny.model.hidden_size=64", "policy.tiny.model.num_heads=1",
    "policy.tiny.model.num_layers=1", "policy.tiny.model.intermediate_size=128", "env.system_prompt=''",
    "progress=false",
]


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    torch.set_num_threads(1)  # tiny models are fastest single-threaded, and CI CPUs are shared


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tiny-cache"))


@pytest.fixture(scope="session")
def tiny_overrides(tiny_cache):
    return TINY_TEST_OVERRIDES + [f"policy.cache_dir={tiny_cache}"]


@pytest.fixture(scope="session")
def tiny_model_and_tokenizer(tiny_cache):
    from trainer.config import load_config
    from trainer.models.tiny import build_tiny

    config = load_config(None, TINY_TEST_OVERRIDES)
    return build_tiny(config.policy.tiny, tiny_cache)


@pytest.fixture()
def tiny_policy(tiny_model_and_tokenizer):
    import copy

    from trainer.models.backends.hf import HFPolicy

    model, tokenizer = tiny_model_and_tokenizer
    return HFPolicy(copy.deepcopy(model), tokenizer)


@pytest.fixture
def make_calls(monkeypatch):
    """Every kwargs dict the trainer passes to agentgym_envs.make."""
    import agentgym_envs

    calls: list[dict] = []
    real = agentgym_envs.make

    def spy(env_id, **kwargs):
        calls.append(kwargs)
        return real(env_id, **kwargs)

    monkeypatch.setattr(agentgym_envs, "make", spy)
    return calls
