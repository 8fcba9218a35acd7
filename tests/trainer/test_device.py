"""``policy.device``, ``policy.dtype``, ``policy.gradient_checkpointing`` and the Triton dispatch (issue 17 §4)."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trainer.config import load_config
from trainer.models.device import float32_master, resolve_device, resolve_dtype
from trainer.errors import ConfigError
from trainer.learn.kernels import pick_backend
from trainer.learn.logprobs import token_logprobs
from trainer import Trainer, fit
from trainer.learn.update import accumulate_gradients, pack_minibatch

RUN = ["env.max_turns=2", "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=6",
       "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01",
       "optim.shared_prefix=false"]  # one forward per batch: the checkpointing test counts a layer's calls


def test_auto_device_is_cuda_when_present_and_the_local_rank_under_torchrun():
    assert resolve_device("auto", cuda_available=False, local_rank="") == torch.device("cpu")
    assert resolve_device("auto", cuda_available=True, local_rank="") == torch.device("cuda")
    assert resolve_device("auto", cuda_available=True, local_rank="3") == torch.device("cuda:3")
    assert resolve_device("cuda:1", cuda_available=True) == torch.device("cuda:1")
    assert resolve_device("cpu", cuda_available=True) == torch.device("cpu")
    with pytest.raises(ConfigError, match="needs CUDA"):
        resolve_device("cuda", cuda_available=False)


def test_device_and_dtype_are_validated(tiny_overrides):
    for bad in ("gpu", "cuda:x", "CUDA", "mps"):
        with pytest.raises(ConfigError, match="policy.device"):
            load_config(None, tiny_overrides + [f"policy.device={bad}"])
    with pytest.raises(ConfigError, match="policy.dtype"):
        load_config(None, tiny_overrides + ["policy.dtype=float16"])
    for bad in ("optim.epochs=0", "optim.micro_batch_tokens=-1"):
        with pytest.raises(ConfigError, match=bad.split("=")[0]):
            load_config(None, tiny_overrides + [bad])
    assert resolve_dtype("bfloat16") is torch.bfloat16
    config = load_config(None, tiny_overrides + ["policy.device=cuda:0", "policy.dtype=bfloat16"])
    assert (config.policy.device, config.policy.dtype) == ("cuda:0", "bfloat16")


def test_auto_kernel_reaches_triton_exactly_for_cuda_tensors():
    assert pick_backend("auto", on_cuda=True, has_triton=True) == "triton"
    assert pick_backend("auto", on_cuda=True, has_triton=False) == "torch"
    assert pick_backend("auto", on_cuda=False, has_triton=True) == "torch"
    assert pick_backend("torch", on_cuda=True, has_triton=True) == "torch"
    with pytest.raises(ValueError, match="triton package"):
        pick_backend("triton", on_cuda=True, has_triton=False)


def test_the_trainers_kernel_call_asks_with_the_tensors_device(monkeypatch):
    """``linear_logprob_entropy`` decides from ``hidden.is_cuda``: a CUDA hidden state reaches Triton."""
    import trainer.learn.kernels as kernels

    class CudaHidden:
        is_cuda = True

    monkeypatch.setattr(kernels, "triton_available", lambda: True)
    assert kernels.resolve_backend("auto", CudaHidden()) == "triton"
    assert kernels.resolve_backend("auto", torch.zeros(1)) == "torch"


def _grads_of_one_batch(trainer, kept):
    advantages = [[(-1.0) ** k] * t.num_turns for k, t in enumerate(kept)]
    micro = pack_minibatch(trainer, kept, advantages, None, list(range(len(kept))))
    assert all(b.input_ids.device == trainer.device for b in micro)
    trainer.model.train()  # as rl_update does: HF checkpoints only in training mode
    trainer.optimizer.zero_grad(set_to_none=True)
    metrics = accumulate_gradients(trainer, micro)
    return metrics, {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("lora", [0, 4])
def test_gradient_checkpointing_recomputes_and_keeps_the_gradient(tiny_overrides, tmp_path, lora):
    runs = {}
    for on in (False, True):
        trainer = Trainer(load_config(None, tiny_overrides + RUN + [f"policy.gradient_checkpointing={on}",
                                                                    f"policy.lora.rank={lora}", f"out_dir={tmp_path / str(on)}"]))
        try:
            if not on:
                kept = trainer.advantages(trainer.collect()[0])[0]
            inner = trainer.model.get_decoder().layers[0].mlp  # inside the checkpointed layer's forward
            calls: list[int] = []
            inner.register_forward_pre_hook(lambda *_: calls.append(1))  # pre: the replay stops early, inside it
            runs[on] = (*_grads_of_one_batch(trainer, kept), len(calls))
        finally:
            trainer.close()
    (m_off, g_off, calls_off), (m_on, g_on, calls_on) = runs[False], runs[True]
    assert (calls_off, calls_on) == (1, 2)  # checkpointing re-ran the layer in the backward pass
    assert g_off.keys() == g_on.keys() and g_off
    assert all(("lora_" in n) == bool(lora) for n in g_off)  # with LoRA only the adapters learn
    assert max(float((g_off[n] - g_on[n]).abs().max()) for n in g_off) <= 1e-5
    assert m_on["loss"] == pytest.approx(m_off["loss"], abs=1e-6)


def test_bfloat16_weights_train_on_cpu_with_float32_loss_maths(tiny_overrides, tmp_path):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + ["policy.dtype=bfloat16", "policy.device=auto",
                                                                "optim.micro_batch_tokens=64", f"out_dir={tmp_path}"]))
    try:
        assert trainer.device == torch.device("cuda" if torch.cuda.is_available() else "cpu")
        assert {p.dtype for p in trainer.model.parameters()} == {torch.bfloat16}
        kept = trainer.advantages(trainer.collect()[0])[0]
        micro = pack_minibatch(trainer, kept, [[1.0] * t.num_turns for t in kept], None, [0])
        logp, entropy = token_logprobs(trainer.model, micro[0])
        assert logp.dtype == entropy.dtype == torch.float32
        before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
        metrics = trainer.update(kept, [[(-1.0) ** k] * t.num_turns for k, t in enumerate(kept)])
        assert metrics["updated"] == 1.0 and torch.isfinite(torch.tensor([metrics["loss"], metrics["grad_norm"]])).all()
        assert metrics["logprob_gap_mean"] < 0.5  # bf16 rounding, not a different policy
        assert any(not torch.equal(p.detach(), before[n]) for n, p in trainer.model.named_parameters())
        for p in trainer.model.parameters():  # each bf16 weight is its float32 master, rounded
            master = trainer.optimizer.state[p]["master"]
            assert master.dtype == torch.float32 and torch.equal(p.detach(), master.to(torch.bfloat16))
    finally:
        trainer.close()


def _bf16_steps(optimizer_class, master: bool, steps: int = 200, lr: float = 1e-6):
    weight = torch.nn.Parameter(torch.full((8,), 0.02, dtype=torch.bfloat16))
    optimizer = optimizer_class([weight], lr=lr)
    if master:
        float32_master(optimizer)
    for _ in range(steps):
        weight.grad = torch.ones_like(weight)
        optimizer.step()
    return weight, optimizer


@pytest.mark.parametrize("optimizer_class", [torch.optim.SGD, torch.optim.AdamW])
def test_bf16_weights_learn_at_small_lr_through_float32_masters(optimizer_class):
    """200 steps of ~1e-6 move a weight of 0.02 by ~2e-4 (more than a bf16 step there, ~1.5e-4): plain bf16
    rounds every step away and never moves; the float32 master does."""
    plain, _ = _bf16_steps(optimizer_class, master=False)
    kept, optimizer = _bf16_steps(optimizer_class, master=True)
    start = torch.tensor(0.02, dtype=torch.bfloat16)
    assert torch.equal(plain.detach(), torch.full_like(plain, start))
    assert float(kept[0]) < float(start) and float(kept[0]) == pytest.approx(0.02 - 200 * 1e-6, abs=1.5e-4)
    state = next(iter(optimizer.state.values()))
    assert {v.dtype for k, v in state.items() if k != "step"} == {torch.float32}


def test_float32_masters_resume_exactly_and_leave_float32_runs_alone():
    weight, optimizer = _bf16_steps(torch.optim.AdamW, master=True, steps=50)
    saved = copy.deepcopy(optimizer.state_dict())
    twin = torch.nn.Parameter(weight.detach().clone())
    resumed = float32_master(torch.optim.AdamW([twin], lr=1e-6))
    resumed.load_state_dict(saved)  # load_state_dict would cast the state to bf16; the masters stay float32
    assert resumed.state[twin]["master"].dtype == torch.float32
    for _ in range(20):
        for w, o in ((weight, optimizer), (twin, resumed)):
            w.grad = torch.ones_like(w)
            o.step()
    assert torch.equal(weight.detach(), twin.detach())
    assert torch.equal(optimizer.state[weight]["master"], resumed.state[twin]["master"])
    a, b = (torch.nn.Parameter(torch.linspace(-1, 1, 8)) for _ in range(2))
    plain, wrapped = torch.optim.AdamW([a], lr=1e-2), float32_master(torch.optim.AdamW([b], lr=1e-2))
    for _ in range(5):
        for w, o in ((a, plain), (b, wrapped)):
            w.grad = torch.sin(w.detach() * 3)
            o.step()
    assert torch.equal(a, b) and "master" not in wrapped.state[b]


def test_a_killed_bf16_run_resumes_to_the_straight_runs_weights(tiny_overrides, tmp_path):
    run = tiny_overrides + RUN + ["policy.dtype=bfloat16", "steps=2", "checkpoint_every=1", "optim.lr=1e-5"]
    straight = Trainer(load_config(None, run + [f"out_dir={tmp_path / 'a'}"]))
    fit(straight, echo=None)
    straight.close()
    first = Trainer(load_config(None, run + [f"out_dir={tmp_path / 'b'}"]))
    fit(first, stop_after=1, echo=None)
    first.close()
    resumed = Trainer(load_config(None, run + [f"out_dir={tmp_path / 'b'}"]))
    fit(resumed, echo=None)
    resumed.close()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    masters = [(straight.optimizer.state[p]["master"], resumed.optimizer.state[q]["master"])
               for p, q in zip(straight.model.parameters(), resumed.model.parameters())]
    assert all(x.dtype == torch.float32 and torch.equal(x, y) for x, y in masters)


def test_policy_threads_zero_means_every_core_this_process_may_use():
    """policy.threads: a positive count is taken as is; 0 is the process's affinity mask (what taskset or a
    container allows), not the machine's core count."""
    import os

    from trainer.models.device import cpu_threads

    assert cpu_threads(3) == 3
    allowed = os.sched_getaffinity(0)
    assert cpu_threads(0) == len(allowed) >= 1
    os.sched_setaffinity(0, {min(allowed)})  # as under `taskset -c <one core>`
    try:
        assert cpu_threads(0) == 1
    finally:
        os.sched_setaffinity(0, allowed)


_FREED = """
import sys, torch
from trainer.models.device import return_freed_memory, trim_freed_memory
def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096
print(return_freed_memory() if sys.argv[1] != "default" else False)
x = torch.empty(20 << 20, dtype=torch.uint8); x.fill_(1); del x  # a large free raises glibc's own threshold
before, keep, big = rss(), [], []
for _ in range(50):  # 4 MiB activations freed under 64 KiB tensors that stay (carved from the top: no free chunk fits)
    big.append(torch.ones(4 << 20, dtype=torch.uint8)); keep.append(torch.ones(64 << 10, dtype=torch.uint8))
del big
if sys.argv[1] == "trim":
    trim_freed_memory()  # the trainer's phase end
print((rss() - before) >> 20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt; a no-op elsewhere")
def test_freed_activations_leave_the_process_at_the_end_of_a_phase(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    kept = {}
    for mode in ("trim", "set", "default"):
        out = subprocess.run([sys.executable, "-c", _FREED, mode], capture_output=True, text=True, env=env,
                             cwd=Path(__file__).resolve().parents[2], timeout=120, check=True).stdout.split()
        kept[mode] = (out[0], int(out[1]))
    assert kept["trim"][0] == "True" and kept["trim"][1] < 50  # MiB still held after the 200 MiB were freed
    # Within a phase the threshold keeps them in the heap for the next activations to reuse (at 1 MiB each
    # one was a fresh mapping the kernel zeroed: ~15% of a SmolLM2 update's CPU time), as glibc's default does
    assert kept["set"][1] > 150 and kept["default"][1] > 150
    env["MALLOC_MMAP_THRESHOLD_"] = "4096"  # the user's own setting wins
    out = subprocess.run([sys.executable, "-c", _FREED, "set"], capture_output=True, text=True, env=env, timeout=120,
                         cwd=Path(__file__).resolve().parents[2], check=True).stdout.split()
    assert out[0] == "False"


def test_the_trainer_trims_freed_memory_after_each_phase(tiny_overrides, tmp_path, monkeypatch):
    from trainer import Trainer

    phases = []
    monkeypatch.setattr("trainer.run.loop.trim_freed_memory", lambda: phases.append("trim"))
    trainer = Trainer(load_config(None, tiny_overrides + [
        "env.env_id=agentgym/Maze-Easy-v0", "bc.episodes=2", "rollout.tasks_per_step=2", "rollout.group_size=2",
        "env.max_turns=3", "rollout.max_new_tokens=4", "checkpoint_every=0", "eval.num_tasks=2", f"out_dir={tmp_path}"]))
    try:
        trainer.warm_up()
        assert phases == ["trim"]
        trainer.evaluate()
        assert phases == ["trim"] * 2
        trainer.train_step()
        assert phases == ["trim"] * 3
    finally:
        trainer.close()
