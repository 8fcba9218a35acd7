"""``rollout.source=gateway``: the trainer collects each step's trajectories from sessions an external harness plays.

The first collection starts a :class:`~trainer.serve.gateway.server.GatewayServer` on the trainer's sampling policy (and,
with ``gateway.harness``, the harness command, ``AGENTGYM_GATEWAY_URL`` in its environment). Each step then:

1. picks the step's tasks as any collection does (the algorithm hooks: TIGPO revisits, dynamic sampling) and
   queues one *assignment* per rollout: ``task_index``, ``group``, ``member``, ``env_seed`` (the same for every
   member of a group, so the G rollouts of a task start from one state) and ``seed`` (the sampler's, keyed by the
   rollout's slot, not by which harness worker takes it);
2. waits until every assignment's session has ended (reward posted, or the env ended it) or
   ``gateway.step_timeout_s`` passes; a slot still missing then is a lost rollout (``infra_error``: counted, not
   trained on) and its late session is dropped when it ends;
3. assembles the sessions into trajectories (:mod:`trainer.serve.gateway.assemble`) in slot order.

Sampling runs at ``rollout.temperature`` / ``top_p`` whatever a request asks, with ``max_tokens`` capped at
``rollout.max_new_tokens`` and prompts at ``rollout.max_context_tokens``: the update's log-prob ratio assumes
exactly these. No session is handed out while the trainer updates (the next step's assignments are queued only
after it), so every token of a step is sampled by the weights of that step (``policy_version``): on-policy.
One process only (no torchrun: ranks would each need a gateway and a share of the harness).
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import threading
import time
from typing import Any

from agentgym_envs.policies import SamplingConfig

from ...collect.episodes import has_task_list, task_seed
from ...collect.rollout import RolloutStats
from ...collect.trajectory import Trajectory
from ...errors import ConfigError, TrainerError
from ...seeding import derive_seed
from .assemble import to_trajectory
from .envs import EnvDriver
from .server import GatewayLimits, GatewayServer
from .sessions import Session

_log = logging.getLogger(__name__)
#: Seconds the harness gets to exit by itself once the gateway says there is no more work (410).
HARNESS_EXIT_S = 30.0


class GatewaySource:
    """The trainer's gateway, its harness process and the sessions of the step being collected."""

    def __init__(self, trainer: Any):
        c, r, g = trainer.config, trainer.config.rollout, trainer.config.gateway
        if trainer.world.size > 1:
            raise ConfigError(f"rollout.source=gateway runs in one process; expected 1 rank, got {trainer.world.size}")
        self.trainer, self.group_size = trainer, r.group_size
        limits = GatewayLimits(max_sessions=g.max_sessions, session_ttl_s=g.session_ttl_s, max_calls=g.max_calls,
                               max_context_tokens=r.max_context_tokens, max_tokens_limit=max(r.max_new_tokens, 4096),
                               max_held_tokens=g.max_held_tokens)
        sampling = SamplingConfig(temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens)
        envs = EnvDriver(trainer.train_spec, invalid_penalty=r.invalid_penalty,
                         stall_penalty=r.stall_penalty, revisit_penalty=r.revisit_penalty) if g.env_driven else None
        self.server = GatewayServer(trainer.sampling_policy(), model_name=g.model_name, host=g.host, port=g.port,
                                    limits=limits, sampling=sampling, envs=envs, on_finish=self._finished, seed=c.seed,
                                    max_batch=g.max_batch)
        probe = trainer.train_spec.make()
        try:
            self._task_list = has_task_list(probe)
        finally:
            probe.close()
        self.server.start()
        self._done: dict[int, Session] = {}
        self._want: tuple[int, int] = (-1, 0)  # (step, slots) being collected
        self._cond = threading.Condition()
        self.harness: subprocess.Popen | None = None
        _log.info("gateway serving at %s (POST /sessions, then the OpenAI API under /sessions/{sid}/v1)", self.server.url)
        if g.harness:
            self.harness = subprocess.Popen(shlex.split(g.harness), env={**os.environ, "AGENTGYM_GATEWAY_URL": self.server.url})

    def _reset(self, task: int, env_seed: int) -> dict[str, Any]:
        """The ``env.reset`` keyword arguments that start ``task`` for a harness that makes the env itself: the task
        index (and the group's seed) for an env with a task list, the task's seed (:func:`task_seed`) otherwise."""
        if self._task_list:
            return {"seed": env_seed, "options": {"task_index": task}}
        return {"seed": task_seed(task, self.trainer.train_spec.seed_stream), "options": None}

    def _finished(self, session: Session) -> None:
        """``on_finish``: keep the session if it belongs to the step being collected, else drop it (a late one)."""
        slot = session.meta.get("slot")
        with self._cond:
            step, slots = self._want
            if session.meta.get("step") == step and isinstance(slot, int) and 0 <= slot < slots:
                self._done[slot] = session
                self._cond.notify_all()
                return
        self.server.release(session.sid)  # a late session (its step timed out): counted lost already, forgotten

    def play(self, tasks: list[int], sampling: SamplingConfig, seed: int) -> tuple[list[Trajectory], RolloutStats]:
        """One collection through the gateway (the ``play`` the algorithm hooks call)."""
        start, G, spec, step = time.perf_counter(), self.group_size, self.trainer.train_spec, self.trainer.step
        assignments = [{"step": step, "slot": g * G + j, "task_index": int(t), "group": g, "member": j,
                        "env_seed": seed + g, "seed": derive_seed(sampling.seed, g * G + j),
                        "reset": self._reset(int(t), seed + g), "env_id": spec.env_id, "env_kwargs": spec.kwargs,
                        "protocol": spec.protocol, "max_turns": spec.max_turns, "system_prompt": spec.system_prompt,
                        "model": self.server.model_name}
                       for g, t in enumerate(tasks) for j in range(G)]
        with self._cond:
            self._done, self._want = {}, (step, len(assignments))
        self.server.version = step
        self.server.assign(assignments)
        _log.info("step %d: waiting for %d gateway sessions at %s", step + 1, len(assignments), self.server.url)
        self._wait(len(assignments))
        self.server.clear_work()  # nothing left over is handed out after the step
        with self._cond:
            done, self._want = dict(self._done), (-1, 0)
        trajectories = []
        for a in assignments:
            session = done.get(a["slot"])
            trajectories.append(to_trajectory(session) if session is not None else _lost(a, self.trainer.config.gateway.step_timeout_s))
            if session is not None:
                self.server.release(session.sid)
        stats = RolloutStats(sum(t.num_turns for t in trajectories), sum(t.num_generated for t in trajectories),
                             time.perf_counter() - start)
        return trajectories, stats

    def _wait(self, slots: int) -> None:
        deadline = time.monotonic() + self.trainer.config.gateway.step_timeout_s
        with self._cond:
            while len(self._done) < slots and time.monotonic() < deadline:
                if self.harness is not None and self.harness.poll() is not None:
                    raise TrainerError(f"the gateway's harness ({self.trainer.config.gateway.harness!r}) exited with "
                                       f"code {self.harness.returncode} before step {self.trainer.step + 1}'s "
                                       f"{slots} sessions ended ({len(self._done)} did); see its output above")
                self._cond.wait(min(1.0, max(deadline - time.monotonic(), 0.01)))
                self._cond.release()  # expiring calls _finished, which takes the condition: not while holding it
                try:
                    self.server.expire()  # a session its harness abandoned ends after gateway.session_ttl_s
                finally:
                    self._cond.acquire()

    def close(self) -> None:
        """Tell the harness there is no more work (410), give it time to exit, then stop the server."""
        self.server.close_work()
        if self.harness is not None:
            try:
                self.harness.wait(HARNESS_EXIT_S)
            except subprocess.TimeoutExpired:
                _log.warning("the gateway's harness did not exit within %g s of the end of training; stopping it",
                             HARNESS_EXIT_S)
                self.harness.terminate()
                self.harness.wait(10)
        self.server.shutdown()
        self.server.server_close()


def _lost(assignment: dict[str, Any], timeout: float) -> Trajectory:
    return Trajectory([], [], [], [], 0, finish="infra_error", task_index=assignment["task_index"],
                      group=assignment["group"], infra_error=f"no session for slot {assignment['slot']} ended within "
                                                             f"gateway.step_timeout_s={timeout:g} s")


def collect(trainer: Any) -> tuple[list[Trajectory], dict[str, float]]:
    """``Trainer.collect`` for ``rollout.source=gateway``: the same hooks, seeds and metrics, sessions for envs."""
    if getattr(trainer, "_gateway", None) is None:
        trainer._gateway = GatewaySource(trainer)
    r, c = trainer.config.rollout, trainer.config
    sampling = SamplingConfig(temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens,
                              seed=derive_seed(c.seed, 1, trainer.step))  # loop.py's _SAMPLE stream
    trainer._gateway.server.policy = trainer.sampling_policy()
    trajectories, stats = trainer.hooks.collect(lambda tasks, s, seed: trainer._gateway.play(tasks, s, seed),
                                                trainer.sampler, sampling=sampling,
                                                seed=derive_seed(c.seed, 2, trainer.step), step=trainer.step)
    done = [t for t in trajectories if t.infra_error is None]
    n = max(len(done), 1)
    return trajectories, {
        "reward": sum(t.ret for t in done) / n, "success": sum(t.won for t in done) / n,
        "turns": sum(t.num_turns for t in done) / n, "infra_errors": len(trajectories) - len(done),
        "gateway_segments": sum(len(t.segments) for t in done) / n,
        "tokens_per_s": stats.tokens_per_s, "env_steps_per_s": stats.env_steps_per_s, "rollout_s": stats.seconds}
