"""Many text envs stepped as one batch, with same-step auto-reset, groups and fault tolerance.

>>> from agentgym_envs.vector import TextVectorEnv
>>> with TextVectorEnv(env_id="agentgym/Maze-Easy-v0", num_envs=2, mode="thread") as venv:
...     obs, infos = venv.reset(seed=0)
...     obs, rewards, terminated, truncated, infos = venv.step(venv.call("expert_action"))
>>> rewards.shape, len(obs)
((2,), 2)

Reading a step's results for env ``i`` (one rule for every case):

* ``terminated[i] or truncated[i]``, unless ``infos[i]`` has ``waiting_for_group``/``episode_over``
  (an end reported before): the episode ended on this step, with ``rewards[i]``. ``skipped`` envs
  (action ``None``) are untouched: last observation, reward 0, not done.
* ``"final_obs" in infos[i]``: ``infos[i]["final_obs"]``/``["final_info"]`` close the finished episode and
  ``obs[i]`` opens the next one, whose reset info is ``infos[i]`` itself. The one exception: an infra
  failure of an env that cannot restart yet (its group still plays, or ``autoreset=False``) also carries
  ``final_obs``, and then ``obs[i]`` is that same final observation.
* ``infos[i]["infra_error"]``: the env's infrastructure failed (a worker died, raised or hung); the episode
  was cut (``truncated``) through no fault of the agent, and the env was rebuilt from scratch.
"""

from __future__ import annotations

import copy
import logging
import operator
import time
import weakref
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import AgentGymError
from ..seeding import derive_seed
from .worker import (STARTUP_TIMEOUT_S, EnvFn, Failure, ProcessWorker, ThreadWorker, close_workers, pickle_env_fn,
                     resolve_env_fns)

logger = logging.getLogger(__name__)

#: A reset that keeps failing (the env breaks on every fresh start) stops the run after this many tries.
MAX_RESET_ATTEMPTS = 3
#: Reset seeds are ``derive_seed(base, stream, index, counter)``: a pure function of the run's seed, so restarts
#: keep runs reproducible; the stream keeps restarts of env ``index`` and episodes of group ``index`` apart.
_RESTART_STREAM, _GROUP_STREAM = 0, 1


class VectorEnvError(AgentGymError):
    """The vector env cannot go on: an env cannot be built, keeps failing to reset, or was closed."""


@dataclass
class _Transition:
    """One env's part of a step, before auto-reset rewrites it; ``note`` holds the vector env's own keys."""

    obs: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    note: dict[str, Any] = field(default_factory=dict)
    infra_error: str | None = None


class TextVectorEnv:
    """``num_envs`` text envs in worker processes (``mode="process"``), threads (``mode="thread"``) or Ray
    actors (``mode="ray"``, across a cluster: ``pip install 'agentgym[ray]'``).

    Args:
        env_fns: zero-argument callables that build one env each (pickled with cloudpickle in process mode).
        env_id, env_kwargs, num_envs: instead of ``env_fns``: ``gymnasium.make(env_id, **env_kwargs)`` per env.
        mode: ``"process"`` survives segfaults and hangs and runs envs in parallel; ``"thread"`` is cheap.
        group_size: ``k > 1`` makes envs ``[g*k, (g+1)*k)`` group ``g``, whose members start every episode
            from one identical state (GRPO-style groups); a group restarts when all its members finished.
            The first member's snapshot seeds the others; an env without ``get_state`` or whose
            ``get_state`` raises ``SnapshotError`` instead has every member reset with one derived seed.
        autoreset: start the next episode in the same step as one ends (``False``: finished envs stay so).
        step_timeout: seconds one env may take for a step, reset or call before it is killed and rebuilt.
        ray_options: with ``mode="ray"`` (Ray actors hosting K envs each, one batched call per actor and
            step; see ``ray_mode.py``): a :class:`~agentgym_envs.vector.ray_options.RayOptions` or its dict.

    Process workers are daemons started with ``forkserver`` (``spawn`` where that is missing), so the
    host may run threads; they are stopped by :meth:`close`, garbage collection or interpreter exit.
    """

    def __init__(
        self,
        env_fns: Sequence[EnvFn] | None = None,
        *,
        env_id: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
        num_envs: int | None = None,
        mode: str = "process",
        group_size: int = 1,
        autoreset: bool = True,
        step_timeout: float | None = None,
        ray_options: Any = None,
    ):
        self._env_fns = resolve_env_fns(env_fns, env_id, env_kwargs, num_envs)
        _check_config(len(self._env_fns), mode, group_size, step_timeout)
        if ray_options is not None and mode != "ray":
            raise ValueError(f"ray_options goes with mode='ray', got mode={mode!r}")
        self.num_envs, self.group_size = len(self._env_fns), group_size
        self.num_groups = self.num_envs // group_size
        self.mode, self.autoreset, self.step_timeout = mode, autoreset, step_timeout
        n = self.num_envs
        self._payloads = [pickle_env_fn(i, fn) for i, fn in enumerate(self._env_fns)] if mode != "thread" else []
        self._fleet = _ray_fleet(n, ray_options) if mode == "ray" else None
        self._workers: list[Any] = [None] * n
        self._finalizer = weakref.finalize(self, close_workers, self._workers)  # must not reference self
        self._last_obs, self._last_info = [""] * n, [{} for _ in range(n)]
        self._ended: list[tuple[bool, bool] | None] = [None] * n  # (terminated, truncated) until reset
        self._fresh = [True] * n  # a new env that has never been reset: it has no RNG stream yet
        self._pending: list[str | None] = [None] * n  # infra failures found outside step, reported next step
        self._restarts, self._group_episodes = [0] * n, [0] * self.num_groups
        self._base_seed: int | None = None
        self._started = False
        try:
            self._start_workers(range(n))
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- public API
    def reset(self, seed: int | None = None, options: dict | Sequence[dict] | None = None) -> tuple[list[str], list[dict]]:
        """Start an episode in every env: env ``i`` (group ``g`` in group mode) gets ``seed + i`` (``seed + g``).

        ``options`` is one dict for all envs or a list with one per env (a group uses its first member's).
        Later auto-resets pass no seed and no options: each env continues its own RNG stream.
        """
        self._check_open()
        per_env = self._options_per_env(options)
        if seed is not None:
            self._base_seed = seed = operator.index(seed)
        groups = list(range(self.num_groups))
        starts = self._reset_groups(groups, {g: None if seed is None else seed + g for g in groups}, per_env)
        self._pending = [None] * self.num_envs
        self._started = True
        return [starts[i][0] for i in range(self.num_envs)], [self._tag(i, starts[i][1]) for i in range(self.num_envs)]

    def step(self, actions: Sequence[str | None]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Step every env whose action is not ``None``; see the module docstring for how to read results."""
        self._check_open()
        if not self._started:
            raise VectorEnvError("step() was called before reset(); call venv.reset(seed=...) first")
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions (None to skip an env), got {len(actions)}")
        out: list[_Transition] = [self._without_stepping(i, a) for i, a in enumerate(actions)]  # type: ignore[misc]
        requests = {i: ("step", a) for i, a in enumerate(actions) if out[i] is None}
        for i, reply in self._roundtrip(requests).items():
            if isinstance(reply, Failure):
                out[i] = self._infra_transition(i, self._recover(i, "step", reply))
            else:
                out[i] = self._record(i, _Transition(*reply))
        starts = self._autoreset() if self.autoreset else {}
        infos = [self._tag(i, self._final_info(out[i], starts.get(i))) for i in range(self.num_envs)]
        obs = [starts[i][0] if i in starts else t.obs for i, t in enumerate(out)]
        rewards = np.array([t.reward for t in out], dtype=np.float64)
        terminated = np.array([t.terminated for t in out], dtype=bool)
        truncated = np.array([t.truncated for t in out], dtype=bool)
        return obs, rewards, terminated, truncated, infos

    def call(self, name: str, *args: Any, **kwargs: Any) -> list[Any]:
        """Call ``name(*args, **kwargs)`` on every ``env.unwrapped`` (or read it, if not callable).

        An env whose worker dies or hangs gives ``None`` here and reports the failure on the next step;
        an exception from the method itself (a bug in the caller or the env) raises :class:`VectorEnvError`.
        Results are copies in process mode but the env's own objects in thread mode: do not mutate them.
        """
        self._check_open()
        replies = self._roundtrip({i: ("call", (name, args, kwargs)) for i in range(self.num_envs)})
        results, errors = [], []
        for i, reply in replies.items():
            if isinstance(reply, Failure) and reply.kind == "raised":
                errors.append(f"env {i}: {reply.detail}")
            elif isinstance(reply, Failure):
                message = self._recover(i, f"call({name!r})", reply)
                if self._ended[i] is None:  # an episode was running: it is lost
                    self._pending[i] = message
            results.append(None if isinstance(reply, Failure) else reply)
        if errors:
            raise VectorEnvError(f"call({name!r}) raised in {len(errors)} env(s): " + "; ".join(errors))
        return results

    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (they change when a worker is restarted; in Ray mode, the
        ids of the actors' processes, on whichever node each runs)."""
        if self.mode == "thread":
            raise VectorEnvError("worker_pids() needs mode='process': thread-mode envs run in this process")
        return [w.pid for w in self._workers]

    def close(self) -> None:
        """Stop every worker; the vector env cannot be used afterwards. Safe to call twice."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self) -> TextVectorEnv:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TextVectorEnv(num_envs={self.num_envs}, mode={self.mode!r}, group_size={self.group_size})"

    # ----------------------------------------------------------------- stepping
    def _without_stepping(self, i: int, action: str | None) -> _Transition | None:
        """The result of env ``i`` when it must not be stepped, or ``None`` when it must."""
        if self._pending[i] is not None:
            message, self._pending[i] = self._pending[i], None
            return self._infra_transition(i, message)
        if action is None:
            return _Transition(self._last_obs[i], note={"skipped": True})
        if self._ended[i] is not None:
            waiting = self.group_size > 1 and self.autoreset
            return _Transition(self._last_obs[i], 0.0, *self._ended[i],
                               note={"waiting_for_group" if waiting else "episode_over": True})
        return None

    def _record(self, i: int, t: _Transition) -> _Transition:
        self._last_obs[i], self._last_info[i] = t.obs, t.info
        if t.terminated or t.truncated:
            self._ended[i] = (t.terminated, t.truncated)
        return t

    def _infra_transition(self, i: int, message: str) -> _Transition:
        """Cut env ``i``'s episode: last known observation, reward 0, truncated, ``infra_error`` set."""
        info = {**self._last_info[i], "infra_error": message}
        return self._record(i, _Transition(self._last_obs[i], 0.0, False, True, info, infra_error=message))

    def _autoreset(self) -> dict[int, tuple[str, dict]]:
        """Restart every group whose members have all finished; returns (obs, info) of the restarted envs."""
        done = [g for g in range(self.num_groups) if all(self._ended[i] is not None for i in self._members(g))]
        if not done:
            return {}
        finals = {i: (self._last_obs[i], self._last_info[i]) for g in done for i in self._members(g)}
        starts = self._reset_groups(done, {g: None for g in done}, [None] * self.num_envs)
        for i, (obs, info) in starts.items():
            starts[i] = (obs, {**info, "final_obs": finals[i][0], "final_info": finals[i][1]})
        return starts

    def _final_info(self, t: _Transition, start: tuple[str, dict] | None) -> dict:
        if start is None and t.infra_error is not None:
            return {**t.info, **t.note, "final_obs": t.obs, "final_info": t.info}
        if start is None:
            return {**t.info, **t.note}
        info = {**start[1], **t.note}
        errors = [e for e in (t.infra_error, start[1].get("infra_error")) if e]
        if errors:
            info["infra_error"] = "; then ".join(errors)
        return info

    def _tag(self, i: int, info: dict) -> dict:
        if self.group_size > 1:
            info["group"] = i // self.group_size
        return info

    # ----------------------------------------------------------------- resetting
    def _members(self, g: int) -> range:
        return range(g * self.group_size, (g + 1) * self.group_size)

    def _snapshot_group(self, g: int) -> bool:
        return self.group_size > 1 and all(self._workers[i].snapshots for i in self._members(g))

    def _group_seed(self, g: int, seed: int | None) -> int | None:
        """An explicit seed wins; a group without snapshots needs one seed for all its members; a fresh
        env has no RNG stream to continue. Otherwise ``None``: the env continues its own stream."""
        leader = g * self.group_size
        if seed is not None:
            return seed
        if self.group_size > 1 and not self._snapshot_group(g):
            return derive_seed(self._base_seed, _GROUP_STREAM, g, self._group_episodes[g])
        if self._fresh[leader]:
            return derive_seed(self._base_seed, _RESTART_STREAM, leader, self._restarts[leader])
        return None

    def _reset_groups(self, groups: list[int], seeds: dict[int, int | None], options: list[dict | None]) -> dict[int, tuple[str, dict]]:
        """Start a new episode in each group: the first member resets, the others copy its state.

        Returns ``{env index: (obs, info)}``; an env that had to be rebuilt on the way has ``infra_error``.
        """
        errors: dict[int, list[str]] = defaultdict(list)
        seeds = {g: self._group_seed(g, seeds[g]) for g in groups}
        starts = self._reset_first(groups, seeds, options, errors)
        self._copy_to_members([g for g in groups if self._snapshot_group(g)], starts, seeds, options, errors)
        for g in groups:
            self._group_episodes[g] += 1
            for i in self._members(g):
                obs, info = starts[i]
                self._last_obs[i], self._last_info[i], self._ended[i], self._fresh[i] = obs, info, None, False
                if errors[i]:
                    info["infra_error"] = "; then ".join(errors[i])
        return starts

    def _reset_first(self, groups: list[int], seeds: dict[int, int | None], options: list[dict | None],
                     errors: dict[int, list[str]]) -> dict[int, Any]:
        """Phase 1: reset (and snapshot) each group's first member, or every member of a group that has no
        snapshots (same seed, so the determinism contract makes them equal). Failed groups retry with a seed
        derived from the failed env's restart count."""
        starts: dict[int, Any] = {}
        todo = dict(seeds)
        for _ in range(MAX_RESET_ATTEMPTS):
            requests = {}
            for g, seed in todo.items():
                leader, opts = g * self.group_size, options[g * self.group_size]
                snapshot = self._snapshot_group(g)
                for i in [leader] if snapshot else self._members(g):
                    requests[i] = ("reset_snapshot" if snapshot else "reset", (seed, opts))
            failed: dict[int, int] = {}
            refused: list[int] = []
            for i, reply in self._roundtrip(requests).items():
                if isinstance(reply, Failure):
                    errors[i].append(self._recover(i, "reset", reply))
                    failed[i // self.group_size] = i
                elif requests[i][0] == "reset_snapshot" and reply[2] is None:
                    refused.append(i // self.group_size)
                else:
                    starts[i] = reply
            for g in refused:  # get_state() raised SnapshotError: this group resets every member with one seed
                for i in self._members(g):
                    self._workers[i].snapshots = False
            seeds.update({g: derive_seed(self._base_seed, _RESTART_STREAM, i, self._restarts[i]) for g, i in failed.items()})
            seeds.update({g: self._group_seed(g, None) for g in refused})
            todo = {g: seeds[g] for g in [*failed, *refused]}
            if not todo:
                return starts
        raise VectorEnvError(f"envs {sorted(failed.values())} failed {MAX_RESET_ATTEMPTS} times in a row on reset: "
                             + "; ".join(errors[i][-1] for i in failed.values()))

    def _copy_to_members(self, groups: list[int], starts: dict[int, Any], seeds: dict[int, int | None],
                         options: list[dict | None], errors: dict[int, list[str]]) -> None:
        """Phase 2: put each snapshot group's start state into its other members (retrying rebuilt ones)."""
        states = {}
        for g in groups:
            obs, info, states[g] = starts[g * self.group_size]
            starts[g * self.group_size] = (obs, info)
        todo = {i: g for g in groups for i in self._members(g)[1:]}
        for _ in range(MAX_RESET_ATTEMPTS):
            requests = {i: ("reset_to", (states[g], seeds[g], options[g * self.group_size])) for i, g in todo.items()}
            failed = {}
            for i, reply in self._roundtrip(requests).items():
                if isinstance(reply, Failure):
                    errors[i].append(self._recover(i, "reset", reply))
                    failed[i] = todo[i]
                else:  # same state, so the first member's observation and info are this member's too
                    obs, info = starts[todo[i] * self.group_size]
                    starts[i] = (obs, copy.deepcopy(info))
            todo = failed
            if not todo:
                return
        raise VectorEnvError(f"envs {sorted(todo)} failed {MAX_RESET_ATTEMPTS} times in a row on reset: "
                             + "; ".join(errors[i][-1] for i in todo))

    # ----------------------------------------------------------------- workers
    def _start_workers(self, indices: Sequence[int]) -> None:
        """Start workers side by side, then wait for each to report that its env is built."""
        for i in indices:
            name = f"TextVectorEnv-worker-{i}"
            self._workers[i] = (ProcessWorker(self._payloads[i], name) if self.mode == "process"
                                else self._fleet.start(i, self._payloads[i]) if self.mode == "ray"
                                else ThreadWorker(self._env_fns[i], name))
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        for i in indices:
            failure = self._workers[i].wait_ready(deadline)
            if failure is not None:
                hint = (" (a script that starts workers must do so under `if __name__ == \"__main__\":`, since "
                        "workers re-import the main module)" if failure.kind == "died" else "")
                raise VectorEnvError(
                    f"env {i} could not be built in its worker ({failure.kind}: {failure.detail}){hint}. Check that "
                    f"env_fns[{i}]() (or gymnasium.make(env_id)) works when called directly.\n{failure.traceback}")

    def _roundtrip(self, requests: dict[int, tuple[str, Any]]) -> dict[int, Any]:
        """Send every request, then collect the replies under one shared ``step_timeout`` deadline."""
        for i, (command, payload) in requests.items():
            self._workers[i].send(command, payload)
        deadline = None if self.step_timeout is None else time.monotonic() + self.step_timeout
        return {i: self._workers[i].recv(deadline) for i in requests}

    def _recover(self, i: int, command: str, failure: Failure) -> str:
        """Replace env ``i``'s worker by a fresh one and say what happened (the ``infra_error`` text)."""
        message = f"{failure.describe(i, command, self.step_timeout)}; it was restarted with a fresh env"
        logger.warning("%s\n%s", message, failure.traceback)
        close_workers([self._workers[i]])  # a worker that only raised may still close its env cleanly
        self._restarts[i] += 1
        self._fresh[i] = True
        self._start_workers([i])
        return message

    def _options_per_env(self, options: dict | Sequence[dict] | None) -> list[dict | None]:
        if options is None or isinstance(options, dict):
            return [options] * self.num_envs
        options = list(options)
        if len(options) != self.num_envs:
            raise ValueError(f"options must be one dict or a list of {self.num_envs} (one per env), got a list of {len(options)}")
        return options

    def _check_open(self) -> None:
        if self.closed:
            raise VectorEnvError("this TextVectorEnv is closed; create a new one")


def _ray_fleet(num_envs: int, ray_options: Any) -> Any:
    """The Ray actors' driver side, imported only here: the other modes work without Ray installed."""
    from .ray_mode import RayFleet

    return RayFleet(num_envs, ray_options)


def _check_config(num_envs: int, mode: str, group_size: int, step_timeout: float | None) -> None:
    if mode not in ("process", "thread", "ray"):
        raise ValueError(f"mode must be 'process', 'thread' or 'ray', got {mode!r}")
    if group_size < 1 or num_envs % group_size:
        raise ValueError(f"num_envs ({num_envs}) must be a positive multiple of group_size, got group_size={group_size}")
    if step_timeout is not None and not step_timeout > 0:
        raise ValueError(f"step_timeout must be a positive number of seconds or None, got {step_timeout!r}")
