"""The training loop: collect → advantages → loss → update → (eval) → checkpoint, one short method each.

With ``policy.backend: hf`` the policy that samples and the model that learns are one ``torch`` module,
so the weights the next collection uses are always the weights just updated: weight sync is a no-op by
construction. With ``policy.backend: vllm`` a vLLM engine samples, and the trainer's weights are pushed
into it (in place, no restart) before the next collection or evaluation after every change: each update,
the BC warm-up, a resume (:meth:`Trainer.sampling_policy`). Every random draw derives from
``config.seed`` and the step (:mod:`trainer.seeding`), and a checkpoint carries everything else, so a
killed run resumed from its last checkpoint reproduces the uninterrupted run bit for bit on CPU.
With ``asynchronous.enabled`` collector threads sample while the trainer updates, under a staleness bound
(:mod:`trainer.collect.asynchronous`); a step then takes its batch from them instead of collecting.
"""

from __future__ import annotations

import copy
import logging
import time
from pathlib import Path
from typing import Any

import torch

from agentgym_envs.core.hooks import has_expert
from agentgym_envs.policies import SamplingConfig

from ..collect.asynchronous import AsyncCollection
from ..collect.episodes import pass_at_k, play_specs, run_text_episodes, success_rate
from ..collect.rollout import RolloutWorker, resolve_sample_unit
from ..collect.trajectory import Trajectory
from ..errors import CheckpointError
from ..learn.algorithms import CRITIC_ESTIMATORS, group_by
from ..learn.algorithms.hooks import AlgorithmHooks
from ..learn.algorithms.replay import current_logprobs
from ..learn.bc import behaviour_clone, expert_trajectories
from ..learn.update import read_turn_values, rl_update
from ..learn.value import ValueHead
from ..models.backends.hf import HFPolicy
from ..models.device import (cpu_threads, float32_master, place_model, resolve_device, resolve_dtype, return_freed_memory,
                             trim_freed_memory)
from ..models.policy import load_model
from ..seeding import TaskSampler, capture_rng, derive_seed, restore_rng
from .checkpoint import config_differences, latest_checkpoint, load_checkpoint, save_checkpoint
from .config import TrainConfig, to_dict
from .distributed import init_world
from .ray_rollout import ray_options, stop_ray, vector_mode

_log = logging.getLogger(__name__)

#: Purposes of derived seeds (stream ids), so that no two uses share random numbers.
_SAMPLE, _ENV, _BC, _EVAL = 1, 2, 3, 4  # 5: LoRA's initialisation (trainer.models.policy)


class Trainer:
    """Owns the policy, optimiser, rollout worker and task sampler of one run (``config.out_dir``)."""

    def __init__(self, config: TrainConfig):
        self.config = config
        torch.set_num_threads(cpu_threads(config.policy.threads))
        return_freed_memory()  # process-wide, like the threads: each phase's freed memory leaves the process
        self.world = init_world(config.distributed)  # torchrun's ranks, or a world of one (trainer/run/distributed.py)
        self.world.check(config)
        model, tokenizer = load_model(config.policy, config.seed)
        self.device = resolve_device(config.policy.device)
        model = place_model(model, self.device, resolve_dtype(config.policy.dtype),
                            gradient_checkpointing=config.policy.gradient_checkpointing)
        self.policy = HFPolicy(model, tokenizer, chat_template_kwargs=config.policy.chat_template_kwargs)
        self.model = model
        self.rollout_policy: Any = self.policy  # what samples: the HF policy itself, or a vLLM engine kept in sync
        self._rollout_stale = False  # the trainer's weights changed since the last sync into rollout_policy
        if config.policy.backend == "vllm":
            from ..models.backends.vllm import VLLMPolicy

            self.rollout_policy = VLLMPolicy.for_trainer(config.policy, model, tokenizer,
                                                         chat_template_kwargs=self.policy.chat_template_kwargs)
        self.world.wrap(model)  # DDP / FSDP2 under torchrun (before the optimiser: FSDP2 swaps the parameters)
        self.value_head = (ValueHead(model.config.hidden_size).to(self.device)
                           if config.algorithm.estimator in CRITIC_ESTIMATORS else None)
        trainable = [p for p in model.parameters() if p.requires_grad] + self._critic_parameters()
        optim = config.optim
        self.optimizer = float32_master(  # bf16 weights step through float32 masters (trainer/models/device.py)
            torch.optim.SGD(trainable, lr=optim.lr, weight_decay=optim.weight_decay) if optim.name == "sgd"
            else torch.optim.AdamW(trainable, lr=optim.lr, weight_decay=optim.weight_decay))
        warmup = max(config.optim.warmup_steps, 1)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: min(1.0, (s + 1) / warmup))
        self.train_spec, self.eval_spec = play_specs(config.env, config.eval.num_tasks)
        # what one training sample is (rollouts and BC alike): probed once, logged (trainer/collect/rollout.py)
        self.sample_unit = resolve_sample_unit(self.policy, config.rollout.sample_unit, config.rollout.turn_window)
        if config.optim.micro_batch_tokens == "auto":  # settled once, from this machine (trainer/run/defaults.py)
            config.optim.micro_batch_tokens = self._auto_micro_batch_tokens()
        self.sampler = TaskSampler(config.env.train_tasks or self.train_spec.num_tasks(), config.seed)
        self.ref_model: Any = None
        self.step = 0
        self.bc_done = config.bc.episodes == 0
        self._worker: RolloutWorker | None = None
        self.hooks = AlgorithmHooks(config)  # TIGPO memory, replay buffer, filters, dynamic sampling (issue 18)
        # collector threads under bounded staleness (trainer/collect/asynchronous.py); None: collect in train_step
        self.asynchronous = AsyncCollection(self) if config.asynchronous.enabled else None

    # ----------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        return {"model": self.world.model_state(self.model), "optimizer": self.world.optimizer_state(self.optimizer),
                "scheduler": self.scheduler.state_dict(), "sampler": self.sampler.state_dict(),
                **({} if self.asynchronous is None else {"asynchronous": self.asynchronous.state_dict()}),
                "ref_model": None if self.ref_model is None else self.ref_model.state_dict(),
                "value_head": None if self.value_head is None else self.value_head.state_dict(),
                "rng": capture_rng(), "rng_ranks": self.world.gather(capture_rng()), "step": self.step, "bc_done": self.bc_done, "config": to_dict(self.config),
                "algorithm": self.hooks.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.world.load_model_state(self.model, state["model"])
        self.world.load_optimizer_state(self.model, self.optimizer, state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.sampler.load_state_dict(state["sampler"])
        if state["ref_model"] is not None:
            self.ref_model = self.reference_copy()
            self.ref_model.load_state_dict(state["ref_model"])
        if self.value_head is not None:
            self.value_head.load_state_dict(state["value_head"])
        ranks = state.get("rng_ranks") or []  # each rank its own global RNG state when the world size is the same
        restore_rng(ranks[self.world.rank] if len(ranks) == self.world.size else state["rng"])
        self.step, self.bc_done = state["step"], state["bc_done"]
        self.hooks.load_state_dict(state.get("algorithm"))
        if self.asynchronous is not None:  # its sampler state: before the oldest untrained unit was drawn
            self.asynchronous.load_state_dict(state.get("asynchronous"))
        self.weights_changed()

    def save(self) -> Path:
        state = self.state_dict()  # a collective under FSDP: every rank gathers, rank 0 writes
        return save_checkpoint(self.config.out_dir, self.step, state) if self.world.is_main else Path(self.config.out_dir)

    def resume(self, force: bool | None = None) -> bool:
        """Load the latest checkpoint of ``out_dir`` if there is one; returns whether it did.

        The checkpoint must have been written under this config (minus the keys of
        :data:`~trainer.run.checkpoint.RESUME_MAY_DIFFER`), or :class:`CheckpointError` names each differing
        key; ``force`` (default ``config.resume``) resumes anyway and logs the differences.
        """
        path = latest_checkpoint(self.config.out_dir)
        if path is None:
            return False
        state = load_checkpoint(path)
        diffs = config_differences(state["config"], to_dict(self.config), to_dict(TrainConfig()))
        listed = "; ".join(f"{key}: expected {was!r} (the checkpoint's), got {now!r}" for key, (was, now) in diffs.items())
        if diffs and not (self.config.resume if force is None else force):
            raise CheckpointError(f"{path} was written under a different config, so resuming it would not continue "
                                  f"the same run: {listed}. Start a fresh run with a new out_dir, or pass --resume "
                                  "(resume=true) to continue this one under the new config")
        if diffs:
            _log.warning("resuming %s under a changed config (resume=true): %s", path, listed)
        self.load_state_dict(state)
        return True

    def _auto_micro_batch_tokens(self) -> int:
        """``optim.micro_batch_tokens: auto``: the budget that fits this device's memory (0: one forward fits)."""
        from .defaults import auto_micro_batch_tokens, device_memory_bytes

        r = self.config.rollout
        rows = r.tasks_per_step * r.group_size * (self.config.env.max_turns if self.sample_unit == "turn" else 1)
        budget = auto_micro_batch_tokens(self.model.config, memory_bytes=device_memory_bytes(self.device),
                                         rows=-(-rows // self.config.optim.minibatches), max_row_tokens=r.max_context_tokens,
                                         dtype_bytes=resolve_dtype(self.config.policy.dtype).itemsize)
        _log.info("optim.micro_batch_tokens=auto: %s", f"{budget} tokens per forward" if budget else "one forward per minibatch")
        return budget

    def check_context(self) -> int:
        """The train env's first prompt length; :class:`~trainer.errors.ConfigError` when it leaves no room for a
        reply within ``rollout.max_context_tokens`` (trainer/run/defaults.py). ``fit`` calls it before training."""
        from .defaults import check_first_prompt

        r = self.config.rollout
        return check_first_prompt(self.policy, self.train_spec, max_context_tokens=r.max_context_tokens,
                                  max_new_tokens=r.max_new_tokens)

    def _critic_parameters(self) -> list[torch.nn.Parameter]:
        return [] if self.value_head is None else list(self.value_head.parameters())

    def reference_copy(self) -> Any:
        """A frozen copy of the current policy: the KL reference (taken after the warm-up). Under torchrun a
        plain full copy on every rank (a deepcopy would copy the DDP / FSDP wiring); a collective then."""
        if self.world.active:
            fresh = place_model(load_model(self.config.policy, self.config.seed)[0], self.device, resolve_dtype(self.config.policy.dtype))
            ref = self.world.plain_copy(self.model, fresh).eval()
        else:
            ref = copy.deepcopy(self.model).eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref

    # ----------------------------------------------------------------- phases
    def warm_up(self, *, epochs: int | None = None, seconds: float | None = None,
                on_batch: Any = None) -> dict[str, float]:
        """Behaviour cloning from the scripted expert on ``bc.episodes`` train tasks (once per run).

        ``epochs`` / ``seconds`` override ``bc.epochs`` and bound the cloning time: the quickstart's BC-only
        control re-runs the warm-up's data for as long as RL took; ``on_batch(loss)`` sees each batch's loss
        and stops cloning by returning true (:func:`trainer.learn.bc.behaviour_clone`)."""
        bc = self.config.bc
        probe = self.train_spec.make()
        try:
            expert = has_expert(probe)
        finally:
            probe.close()
        if not expert:
            _log.warning("bc skipped: %s has no scripted expert (expert_action()); set bc.episodes=0 to silence this",
                         self.train_spec.env_id)
            self.bc_done = True
            return {"bc_trajectories": 0, "bc_skipped": 1.0}
        tasks = TaskSampler(self.sampler.num_tasks, derive_seed(self.config.seed, _BC)).next(bc.episodes)
        data = expert_trajectories(self.policy, self.train_spec, tasks, seed=derive_seed(self.config.seed, _BC),
                                   explore=bc.explore, max_detours=bc.max_detours, noise=bc.expert_noise, habit=bc.expert_habit,
                                   turn_window=self.config.rollout.turn_window if self.sample_unit == "turn" else None)
        if self.rollout_policy is not self.policy:  # a colocated vLLM engine frees its GPU memory for BC too
            self.rollout_policy.sleep()
        result = behaviour_clone(self.policy, data, epochs=epochs or bc.epochs, batch_size=bc.batch_size, lr=bc.lr,
                                 seed=derive_seed(self.config.seed, _BC, 1), kernel_backend=self.config.loss.kernel_backend,
                                 seconds=seconds, group_by_length=bc.group_by_length, on_batch=on_batch)
        self.bc_done = True
        self.weights_changed()
        trim_freed_memory()
        return {"bc_trajectories": result.trajectories, "bc_first_loss": result.first_loss, "bc_last_loss": result.last_loss}

    def evaluate(self) -> dict[str, float]:
        """Held-out success on the evaluation env (``env.eval_kwargs``; seeded held-out tasks for an env without a
        task list), greedy by default."""
        ev = self.config.eval
        tasks = list(range(self.eval_spec.num_tasks()))[: ev.num_tasks or None] * ev.repeats
        sampling = SamplingConfig(temperature=ev.temperature, max_new_tokens=self.config.rollout.max_new_tokens,
                                  seed=derive_seed(self.config.seed, _EVAL))
        with self.world.unsharded(self.model):  # rank 0 evaluates (the whole held-out set); the others wait
            window = self.config.rollout.turn_window if self.sample_unit == "turn" else None  # as trained
            episodes = (run_text_episodes(self.sampling_policy(), self.eval_spec, tasks, seed=0, sampling=sampling,
                                          window=window) if self.world.is_main else [])
        self.world.barrier()
        trim_freed_memory()
        if not self.world.is_main:
            return {}
        success, ci95 = success_rate(episodes)
        passes = {f"eval_pass@{k}": p for k, p in pass_at_k(episodes).items()} if ev.repeats > 1 else {}
        return {"eval_success": success, "eval_success_ci95": ci95, "eval_episodes": len(episodes), **passes}

    def collect(self) -> tuple[list[Trajectory], dict[str, float]]:
        r = self.config.rollout
        if r.source == "gateway":  # an external harness plays through the gateway (trainer/serve/gateway/source.py)
            from ..serve.gateway.source import collect as gateway_collect

            return gateway_collect(self)
        if self._worker is None:
            self._worker = RolloutWorker(self.train_spec, tasks_per_batch=r.tasks_per_step // self.world.size,
                                         group_size=r.group_size,
                                         max_context_tokens=r.max_context_tokens, mode=vector_mode(self.config),
                                         ray_options=ray_options(self.config),
                                         invalid_penalty=r.invalid_penalty, stall_penalty=r.stall_penalty,
                                         revisit_penalty=r.revisit_penalty,
                                         fold_keep_turns=r.fold_keep_turns,
                                         sample_unit=self.sample_unit, turn_window=r.turn_window)
        sampling = SamplingConfig(temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens,
                                  seed=derive_seed(self.config.seed, _SAMPLE, self.step))
        sync_start = time.perf_counter()
        policy = self.sampling_policy()
        sync_s = time.perf_counter() - sync_start
        def play(tasks: list[int], sampling: SamplingConfig, seed: int):  # the same tasks on every rank; each plays its share
            offset = self.world.rank * len(tasks) // self.world.size  # one sampling path: a plain run = 1 rank
            return self._worker.collect(policy, self.world.shard(tasks), sampling=sampling, seed=seed, group_offset=offset)

        with self.world.unsharded(self.model):  # the hooks pick the tasks (TIGPO revisits) and may re-collect (DAPO)
            trajectories, stats = self.hooks.collect(play, self.sampler, sampling=sampling,
                                                     seed=derive_seed(self.config.seed, _ENV, self.step), step=self.step)
        done = [t for t in trajectories if t.infra_error is None]
        return trajectories, self.world.mean_metrics({
            "reward": sum(t.ret for t in done) / max(len(done), 1), "success": sum(t.won for t in done) / max(len(done), 1),
            "turns": sum(t.num_turns for t in done) / max(len(done), 1), "infra_errors": len(trajectories) - len(done),
            "tokens_per_s": stats.tokens_per_s, "env_steps_per_s": stats.env_steps_per_s, "rollout_s": stats.seconds,
            **({"weight_sync_s": sync_s} if self.rollout_policy is not self.policy else {})}, sums=("infra_errors",))

    def weights_changed(self) -> None:
        """Mark the trainer's weights as changed, so a separate sampler (vLLM) gets them before it next samples.
        The loop calls it itself; call it after changing ``trainer.model`` from outside (e.g. loading weights)."""
        self._rollout_stale = True

    def sampling_policy(self) -> Any:
        """The policy that samples, with the trainer's current weights: a separate backend (vLLM) gets them
        pushed in (``sync_from``) whenever they changed since its last sync (an update, BC, a resume) or a
        level-2 sleep dropped them, then takes back the GPU memory it released for the update."""
        if self.rollout_policy is not self.policy:
            if self._rollout_stale or self.rollout_policy.weights_dropped:
                self.rollout_policy.sync_from(self.model)
            self.rollout_policy.wake_up()
        self._rollout_stale = False
        return self.rollout_policy

    def advantages(self, trajectories: list[Trajectory]) -> tuple[list[Trajectory], list[list[float]], dict[str, float]]:
        """Per-turn advantages of the trainable trajectories, after dropping zero-variance groups."""
        groups = [[t for t in g if t.trainable] for g in group_by(trajectories)]
        groups = [g for g in groups if len(g) == self.config.rollout.group_size]
        groups = self.hooks.shape(groups)  # TAO filter, EAPO tool-abuse penalty (off by default)
        kept = [g for g in groups if not (self.config.algorithm.filter_zero_variance and self.hooks.no_variance(g))]
        fresh, kept = kept, kept + self.hooks.replayed(lambda segments: current_logprobs(self, segments))
        alg = self.config.algorithm
        flat = [t for g in kept for t in g]
        if self.value_head is not None and flat:
            self._read_critic(flat)
        per_turn = [a for g in (self.hooks.estimate(alg.estimator, kept, self.hooks.settings()) if kept else []) for a in g]
        if alg.positive_only:
            per_turn = [[max(a, 0.0) for a in turns] for turns in per_turn]
        self.hooks.record(groups, fresh, self.step)
        return flat, per_turn, {"groups_kept": len(fresh), "groups_total": len(groups), **self.hooks.metrics}

    @torch.no_grad()
    def _read_critic(self, trajectories: list[Trajectory]) -> None:
        """Set each trajectory's ``turn_values`` from the value head (:func:`trainer.learn.update.read_turn_values`)."""
        read_turn_values(self, trajectories)

    def update(self, trajectories: list[Trajectory], advantages: list[list[float]]) -> dict[str, float]:
        """One RL update from the kept trajectories and their per-turn advantages (:func:`trainer.learn.update.rl_update`)."""
        return rl_update(self, trajectories, advantages)

    def train_step(self) -> dict[str, float]:
        start = time.perf_counter()
        trajectories, metrics = self.collect() if self.asynchronous is None else self.asynchronous.next_batch()
        if self.config.rollout.dump and self.world.is_main:  # opt-in chat dump of what this step trains on
            from ..collect.rollout_dump import dump_rollouts

            dump_rollouts(self.config.out_dir, self.step + 1, trajectories, self.train_spec)
        kept, advantages, adv_metrics = self.advantages(trajectories)
        metrics.update(self.world.mean_metrics(adv_metrics, sums=tuple(adv_metrics)))  # groups over all ranks
        if self.rollout_policy is not self.policy:  # a colocated vLLM engine frees its GPU memory for the update
            metrics.update(self.rollout_policy.sleep())
        metrics.update(self.world.update_metrics(self.update(kept, advantages)))  # all ranks' shares added
        self.step += 1
        trim_freed_memory()
        if self.asynchronous is not None:
            self.asynchronous.published()  # the collectors sample with version self.step from their next turn
        return {"step": self.step, **metrics, "step_s": time.perf_counter() - start}

    def close(self) -> None:
        if self.asynchronous is not None:
            self.asynchronous.close()
        if getattr(self, "_gateway", None) is not None:
            self._gateway.close()
            self._gateway = None
        if self._worker is not None:
            self._worker.close()
            self._worker = None
            stop_ray()
        if self.rollout_policy is not self.policy:
            self.rollout_policy.close()
