"""Many ranks on CPU gloo (trainer/run/distributed.py): 2 ranks train what 1 rank trains, with DDP and FSDP2; a
2-rank run killed after a checkpoint resumes to the straight run's weights; checkpoints cross world sizes;
FSDP2 sampling survives ranks that decode different numbers of tokens; an indivisible task count is refused.

Four ``torchrun`` launches (tests/trainer/distributed_runs.py runs several trainings in each), shared by the
tests through one module fixture, in this order: two ranks (DDP-SGD, FSDP-SGD, FSDP-AdamW straight runs, the
uneven-generation check, an update where rank 1 has no data), two ranks that SIGKILL themselves right after the step-1 checkpoint (a hard kill at a
fixed point, so the test cannot race the run), one rank (the references, and the
killed run's step-1 checkpoint resumed on one rank), two ranks (the killed run resumed; the one-rank step-1
checkpoint resumed on two; the indivisible config).

Tolerances. Two ranks and one rank run the same episodes (same tasks, env seeds and per-episode sampling seeds
keyed by global index), so their gradients differ only by float32 summation order (each rank sums its share,
then the shares are added): measured, the two runs' weight *updates* differ by ~1e-5 of their norm (that is
the weights' own float32 rounding: |W| ~ 1 against updates ~1e-5 per weight). We allow 1e-3. A gradient that
is averaged instead of summed (DDP's and FSDP2's default) halves every SGD update: a relative difference of
0.5; sampling that depends on the batch row changes the episodes: O(1). A same-size resume repeats the same
arithmetic on CPU, so it must be bit-identical.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trainer.run.checkpoint import latest_checkpoint, load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "trainer" / "distributed_runs.py"
UPDATE_TOLERANCE = 1e-3


def _launch(ranks: int, plan: str, out: Path, cache: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}", str(WORKER),
               plan, str(out), cache]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _finish(process: subprocess.Popen, timeout: float = 240) -> None:
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # a deadlock among the ranks: end the launch (torchrun ends its ranks)
        process.terminate()
        try:
            output, _ = process.communicate(timeout=30)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"torchrun launch timed out after {timeout}s:\n{output[-4000:]}") from None
    assert process.returncode == 0, output[-4000:]


def _copy_step(source: Path, step: int, target: Path) -> None:
    """``target``'s checkpoint directory holding only ``source``'s step ``step`` as its latest."""
    name = f"step_{step:08d}"
    (target / "checkpoints").mkdir(parents=True)
    shutil.copytree(source / "checkpoints" / name, target / "checkpoints" / name)
    (target / "checkpoints" / "latest").write_text(name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_cache):
    out = tmp_path_factory.mktemp("distributed")
    _finish(_launch(2, "two", out, tiny_cache))

    killed = _launch(2, "killed", out, tiny_cache)  # every rank SIGKILLs itself after the step-1 checkpoint
    output, _ = killed.communicate(timeout=300)
    assert killed.returncode != 0 and "SIGKILL" in output, output[-4000:]
    at_kill = latest_checkpoint(out / "killed_fsdp_adam").name

    _copy_step(out / "killed_fsdp_adam", 1, out / "to_one")
    _finish(_launch(1, "one", out, tiny_cache))
    _copy_step(out / "one_fsdp_adam", 1, out / "to_two")
    _finish(_launch(2, "resume", out, tiny_cache))
    results = {plan: json.loads((out / f"{plan}.json").read_text()) for plan in ("two", "resume")}
    return out, at_kill, results


def _final(out: Path, run: str) -> dict:
    state = load_checkpoint(latest_checkpoint(out / run))
    assert state["step"] == 2, f"{run} ended at step {state['step']}"
    return state


def _relative_update_difference(a: dict, b: dict, initial: dict) -> tuple[float, float]:
    """``|ΔW_a - ΔW_b| / |ΔW_b|`` over all weights, and ``|ΔW_b|`` (ΔW: final minus initial weights)."""
    diff = sum(float(((a[k] - b[k]) ** 2).sum()) for k in b) ** 0.5
    norm = sum(float(((b[k] - initial[k]) ** 2).sum()) for k in b) ** 0.5
    return diff / norm, norm


@pytest.fixture(scope="module")
def initial(tiny_model_and_tokenizer):
    model, _ = tiny_model_and_tokenizer
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_ranks_train_what_one_rank_trains(runs, initial, strategy):
    out, _, _ = runs
    one, two = _final(out, "one_ddp_sgd")["model"], _final(out, f"two_{strategy}_sgd")["model"]
    assert one.keys() == two.keys() == initial.keys()  # the single-process keys, tied output projection included
    relative, norm = _relative_update_difference(two, one, initial)
    assert norm > 1e-3  # the runs did move the weights
    assert relative < UPDATE_TOLERANCE, f"2-rank {strategy} update differs from 1 rank's by {relative:.2e} of its norm"


def test_killed_two_rank_run_resumes_to_the_straight_runs_weights(runs):
    out, at_kill, _ = runs
    assert at_kill == "step_00000001"  # killed mid-run, after the step-1 checkpoint
    straight, resumed = _final(out, "two_fsdp_adam"), _final(out, "killed_fsdp_adam")
    assert straight["model"].keys() == resumed["model"].keys()
    assert all(torch.equal(straight["model"][k], resumed["model"][k]) for k in straight["model"])
    a, b = straight["optimizer"]["state"], resumed["optimizer"]["state"]
    assert a.keys() == b.keys() and len(a) == len(straight["model"]) - 1  # AdamW state per parameter (tied: one)
    assert all(torch.equal(a[i][name], b[i][name]) for i in a for name in a[i])
    assert len(resumed["rng_ranks"]) == 2


def test_checkpoints_resume_at_another_world_size(runs, initial):
    out, _, _ = runs
    two_straight, one_straight = _final(out, "two_fsdp_adam")["model"], _final(out, "one_fsdp_adam")["model"]
    for resumed, straight in ((_final(out, "to_one")["model"], two_straight),  # 2-rank checkpoint, 1 rank on
                              (_final(out, "to_two")["model"], one_straight)):  # 1-rank checkpoint, 2 ranks on
        relative, norm = _relative_update_difference(resumed, straight, initial)
        assert norm > 1e-3 and relative < UPDATE_TOLERANCE, relative


def test_fsdp_sampling_with_uneven_lengths_matches_the_unsharded_model(runs):
    uneven = runs[2]["two"]["uneven"]
    assert uneven["equal"] and uneven["tokens"] > 0 and uneven["updated"] == 1.0


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_a_rank_without_data_still_joins_the_update(runs, strategy):
    lopsided = runs[2]["two"]["lopsided"][strategy]  # rank 0's view: its micro-batches, the weights' change
    assert lopsided["updated"] == 1.0 and lopsided["micro_batches"] >= 2
    assert lopsided["moved"] > 0 and lopsided["finite"]
    # the logged record adds rank 1's missing shares as 0: all of the batch's tokens are rank 0's
    assert lopsided["train_tokens"] == lopsided["local_train_tokens"] > 0


def test_tasks_per_step_not_divisible_by_the_world_size_is_refused(runs):
    result = runs[2]["resume"]["indivisible"]
    assert result["code"] == 2
    assert "rollout.tasks_per_step must be divisible by the world size: expected a multiple of 2, got 3" in result["printed"]


def test_per_prompt_seeds_make_a_completion_independent_of_its_batch_and_row(tiny_policy):
    """What distributed collection relies on: with ``seeds`` a prompt's draws are its own (old: one generator
    for the batch, so a row's tokens depended on the rows before it and on the batch it was in)."""
    from agentgym_envs.policies import SamplingConfig

    a, b = tiny_policy.encode("you are in the middle of a room"), tiny_policy.encode("go to desk 1")
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=12, seed=0)
    together = tiny_policy.generate([a, b], sampling=sampling, seeds=[11, 22])
    alone = tiny_policy.generate([b], sampling=sampling, seeds=[22])
    swapped = tiny_policy.generate([b, a], sampling=sampling, seeds=[22, 11])
    assert together[1].token_ids == alone[0].token_ids == swapped[0].token_ids
    assert together[1].logprobs == pytest.approx(alone[0].logprobs, abs=1e-5)
    assert together[0].token_ids == swapped[1].token_ids
    with pytest.raises(ValueError, match="expected one seed per prompt"):
        tiny_policy.generate([a, b], sampling=sampling, seeds=[1])


def test_nccl_without_cuda_is_a_config_error(monkeypatch):
    from trainer.config import DistributedConfig
    from trainer.run.distributed import init_world
    from trainer.errors import ConfigError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ConfigError, match="distributed.backend=nccl needs CUDA"):
        init_world(DistributedConfig(backend="nccl"))
    assert not torch.distributed.is_initialized()
