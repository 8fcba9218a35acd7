"""A host-side handle on one generated env module running inside a sandbox.

The designer's module (the contract: :mod:`meta_envs.design.contract`) is never imported or ``exec``'d in
the host process. :class:`SandboxedModuleEnv` starts a sandbox (bubblewrap by default, Docker optional),
runs the module there through :class:`sandboxes.runner.PythonRunner` and calls its ``Env`` over the
runner's JSON-lines pipe, under :class:`ModuleLimits` (time per call, memory, processes, CPU).

Everything the module answers is data and is checked here: types, sizes, finite rewards in [-1, 1].
Two kinds of failure, kept apart because they are blamed differently:

- :class:`GeneratedEnvFault` — the module raised, hung past its time, answered the wrong types, died, or
  killed its sandbox. The designer's outcome: its ``gate`` names the gate that was running.
- :class:`SandboxUnavailable` — our own sandbox could not start (bwrap missing or broken). Infrastructure
  (an :class:`~agentgym_envs.core.errors.InfraError`), never blamed on the designer.

One round trip per call: a small adapter appended to the source (``_agentgym_reset``/``_agentgym_step``)
returns the observation together with the instruction, legal actions, the expert's action and the hint, so
``legal_actions()``, ``expert_action()``, ``hint()`` and ``instruction`` read the last answer. The same
calls happen in the same order whoever plays, so a module cannot tell a baseline from a solver by them.

**One launch for every measurement.** Gates, solver plays and ``Generated-v0`` all start the module the same
way (:func:`launch`: ``python3 -I``, a fresh random ``PYTHONHASHSEED`` per process, the same environment),
so nothing the interpreter shows (``hash()`` of a string, ``sys.flags``, the environment) tells a module
whether it is being gated. Whatever the host draws to measure a module (gate seeds, the baselines' and
solvers' random choices, the play order) comes from :func:`measured_seed`: keyed by a secret drawn from
the OS once per host process (:func:`set_measurement_key`), so a module cannot compute it from the seed.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable

import sandboxes
from agentgym_envs.core.errors import AgentGymError, InfraError, ResetNeeded
from sandboxes.runner import PythonRunner, RunnerError

from . import contract

Policy = Callable[[str, list[str]], str]
"""A solver for :func:`play`: (observation, legal actions) -> action."""

ADAPTER = '''

def _agentgym_view(env, done):
    hint = getattr(env, "hint", None)
    view = {"instruction": env.instruction, "hint": hint() if callable(hint) else None}
    if not done:
        view["legal"] = env.legal_actions()
        view["expert"] = env.expert_action()
    return view


def _agentgym_new(difficulty):
    global _agentgym_env
    _agentgym_env = Env(difficulty)
    return {"max_steps": _agentgym_env.max_steps}


def _agentgym_reset(seed):
    return {"obs": _agentgym_env.reset(seed), "view": _agentgym_view(_agentgym_env, False)}


def _agentgym_step(action):
    result = _agentgym_env.step(action)
    done = isinstance(result, tuple) and len(result) == 3 and result[2] is True
    return {"result": result, "view": _agentgym_view(_agentgym_env, done)}
'''
"""Trusted glue appended to the module; what it returns is still the module's data, checked on the host."""

_MEASUREMENT_KEY = secrets.token_bytes(32)


def set_measurement_key(key: bytes | None) -> None:
    """Fix the host's measurement secret (reproducible runs and tests), or draw a fresh one (None).

    Whoever knows the key can predict gate seeds and the baselines' choices: keep it out of anything a
    module (or the designer) can read. Modules never see the host's environment or memory.
    """
    global _MEASUREMENT_KEY
    _MEASUREMENT_KEY = secrets.token_bytes(32) if key is None else bytes(key)


def measured_seed(*parts: object) -> int:
    """A seed in ``[0, 2**31 - 1)`` for ``parts``, keyed by the host's secret (unpredictable to a module).

    Same key and parts, same seed: measurements stay reproducible within one host process.
    """
    digest = hmac.new(_MEASUREMENT_KEY, repr(parts).encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % (2**31 - 1)


def launch(sandbox: sandboxes.SupervisedSandbox, source: str, start_timeout: float) -> PythonRunner:
    """The one way a module's process starts, for gates, plays and Generated-v0 alike (see the docstring).

    ``python3 -I`` with no fixed hash seed: each process draws its own ``PYTHONHASHSEED``, so the
    determinism gate's two processes differ in it and no process is recognisable by it.
    """
    return PythonRunner(sandbox, source, start_timeout=start_timeout, hash_seed=None)


BUDGET_SPENT = "the gate's time budget ran out before the module finished; make reset and step faster"


@dataclass(frozen=True)
class ModuleLimits:
    """Bounds on one generated module. The sandbox enforces memory, processes and CPU; the host, time."""

    call_timeout_s: float = 2.0
    """Longest one call (reset or step) may take before the process is killed."""
    import_timeout_s: float = 10.0
    """Importing the module and constructing ``Env(difficulty)``, together."""
    gate_budget_s: float = 12.0
    """Wall time of one gate's calls together (a slow module fails the gate it is in, not the clock)."""
    memory_mb: int = 512
    """Memory of the whole sandbox and each process's address space."""
    max_procs: int = 32
    """Processes and threads in the sandbox (fork bombs stop here)."""
    cpu_seconds: int = 30
    """CPU time per process."""
    disk_mb: int = 16
    """Size of each writable tmpfs inside the sandbox."""

    def __post_init__(self) -> None:
        for name in ("call_timeout_s", "import_timeout_s", "gate_budget_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ModuleLimits.{name} must be positive, got {getattr(self, name)!r}")

    def sandbox_limits(self) -> sandboxes.Limits:
        return sandboxes.Limits(cpu_seconds=self.cpu_seconds, memory_mb=self.memory_mb, processes=self.max_procs,
                                file_size_mb=self.disk_mb, disk_mb=self.disk_mb, cpus=1.0)


class GeneratedEnvFault(AgentGymError):
    """The generated module misbehaved: the designer's outcome, reported as a failed ``gate``.

    ``kind`` is one of ``raised``, ``timeout``, ``died`` (its process exited), ``sandbox`` (the whole
    sandbox died under it), ``protocol``, ``type`` (a wrong answer) or ``budget`` (the gate's time ran out).
    """

    def __init__(self, gate: str, detail: str, *, kind: str = "raised"):
        super().__init__(f"{gate}: {detail}")
        self.gate, self.detail, self.kind = gate, detail, kind


class SandboxUnavailable(InfraError):
    """Our sandbox could not start (bubblewrap missing or broken): infrastructure, not the designer."""


def open_sandbox(backend: str, limits: ModuleLimits) -> sandboxes.SupervisedSandbox:
    """A fresh sandbox for one module process; any failure to start one is :class:`SandboxUnavailable`."""
    try:
        return sandboxes.make(backend, limits.sandbox_limits())
    except (sandboxes.SandboxError, OSError) as e:
        raise SandboxUnavailable(f"the {backend} sandbox for generated envs could not start: {e}") from e


class SandboxedModuleEnv:
    """One generated module's ``Env``, running in its own sandbox (see the module docstring).

    Every instance starts the module through :func:`launch` (no per-caller interpreter settings);
    :meth:`fresh` opens another instance of the same module. ``gate`` names the gate faults are attributed to; ``deadline`` (a
    ``time.monotonic()`` value or None) bounds the calls of the gate in progress.
    """

    def __init__(self, source: str, *, difficulty: float = 0.5, backend: str = "bwrap",
                 limits: ModuleLimits | None = None, gate: str = "instantiate"):
        self.source, self.difficulty, self.backend = source, float(difficulty), backend
        self.limits = limits or ModuleLimits()
        self.gate, self.deadline = gate, None
        self.max_steps = 0
        self.step_seconds: list[float] = []
        self._view: dict[str, Any] = {}
        self._done = True
        self.sandbox = open_sandbox(backend, self.limits)
        self._runner: PythonRunner | None = None
        try:
            self._start(source + ADAPTER, float(difficulty))
        except BaseException:
            self.close()
            raise

    def fresh(self, *, limits: ModuleLimits | None = None, gate: str | None = None) -> SandboxedModuleEnv:
        """Another instance of this module in its own new sandbox and process: no state is shared."""
        return SandboxedModuleEnv(self.source, difficulty=self.difficulty, backend=self.backend,
                                  limits=limits or self.limits, gate=self.gate if gate is None else gate)

    def _start(self, source: str, difficulty: float) -> None:
        started = time.monotonic()
        self.deadline = started + self.limits.import_timeout_s
        try:
            self._runner = launch(self.sandbox, source, self.limits.import_timeout_s)
        except RunnerError as e:
            raise self._fault(e, "importing the module") from e
        except sandboxes.SandboxError as e:
            raise SandboxUnavailable(f"the sandbox failed before the module ran: {e}") from e
        answer = self._call("_agentgym_new", difficulty, timeout=self.deadline - time.monotonic())
        steps = answer.get("max_steps") if isinstance(answer, dict) else None
        if type(steps) is not int or not 1 <= steps <= contract.MAX_STEPS_LIMIT:
            raise GeneratedEnvFault(self.gate, f"expected Env.max_steps an int in 1..{contract.MAX_STEPS_LIMIT}, "
                                               f"got {steps!r:.80}", kind="type")
        self.max_steps = steps
        self.deadline = None

    # ----------------------------------------------------------------- the env API
    def reset(self, seed: int) -> str:
        """Start episode ``seed``; returns the first observation."""
        answer = self._call("_agentgym_reset", int(seed))
        obs = self._check_text(answer.get("obs"), "reset() to return the first observation",
                               contract.MAX_OBSERVATION_CHARS)
        self._view, self._done = self._check_view(answer.get("view"), done=False), False
        return obs

    def step(self, action: str) -> tuple[str, float, bool]:
        """One step: (observation, reward, done). Actions longer than MAX_SENT_CHARS are cut to it."""
        if not isinstance(action, str):
            raise TypeError(f"expected the action as a str, got {type(action).__name__}")
        if self._done:
            raise ResetNeeded("the episode is over (or never started): call reset(seed) first")
        start = time.perf_counter()
        answer = self._call("_agentgym_step", action[: contract.MAX_SENT_CHARS])
        self.step_seconds.append(time.perf_counter() - start)
        result = answer.get("result")
        if not (isinstance(result, list) and len(result) == 3):
            raise self._wrong("step() to return (observation, reward, done)", result)
        obs = self._check_text(result[0], "step()'s observation", contract.MAX_OBSERVATION_CHARS)
        reward, done = result[1], result[2]
        low, high = contract.REWARD_RANGE
        if type(reward) not in (int, float) or not math.isfinite(reward) or not low <= reward <= high:
            raise self._wrong(f"step()'s reward a finite number in [{low}, {high}]", reward)
        if type(done) is not bool:
            raise self._wrong("step()'s done a bool", done)
        self._view, self._done = self._check_view(answer.get("view"), done=done), done
        return obs, float(reward), done

    @property
    def instruction(self) -> str:
        return self._view.get("instruction", "")

    def legal_actions(self) -> list[str]:
        return list(self._view.get("legal", []))

    def expert_action(self) -> str:
        return self._view.get("expert", "")

    def hint(self) -> str | None:
        return self._view.get("hint")

    def close(self) -> None:
        """Stop the module's process and the sandbox (every process in it); closing twice is fine."""
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.stop()
        try:
            self.sandbox.close()
        except sandboxes.SandboxError:
            pass

    def __enter__(self) -> SandboxedModuleEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- plumbing
    def _call(self, method: str, *args: Any, timeout: float | None = None) -> dict[str, Any]:
        timeout, budget = (self.limits.call_timeout_s if timeout is None else timeout), False
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise GeneratedEnvFault(self.gate, BUDGET_SPENT, kind="budget")
            timeout, budget = min(timeout, left), left < timeout
        if self._runner is None:
            raise GeneratedEnvFault(self.gate, "the module's process is gone", kind="died")
        try:
            answer = self._runner.call(method, *args, timeout=timeout)
        except RunnerError as e:
            if budget and e.kind == "timeout":
                self._kill_everything()
                self._runner = None
                raise GeneratedEnvFault(self.gate, BUDGET_SPENT, kind="budget") from e
            raise self._fault(e, method.removeprefix("_agentgym_")) from e
        except sandboxes.SandboxError as e:  # the sandbox died under the module: only the module ran there
            self._runner = None
            raise GeneratedEnvFault(self.gate, f"the sandbox died while the module ran: {e}", kind="sandbox") from e
        if not isinstance(answer, dict):
            raise self._wrong("the adapter's answer", answer)
        return answer

    def _fault(self, error: RunnerError, what: str) -> GeneratedEnvFault:
        kind = {"error": "raised"}.get(error.kind, error.kind)
        if kind in ("timeout", "died", "protocol"):  # the process is gone: never restart it behind the caller's back
            self._kill_everything()
            self._runner = None
        detail = str(error)
        if error.traceback:
            detail += "\n" + error.traceback[-1500:]
        return GeneratedEnvFault(self.gate, f"{what}: {detail[:3000]}", kind=kind)

    def _kill_everything(self) -> None:
        """After a hang or a death, no process of the module may live on (a fork bomb's children included)."""
        try:
            self.sandbox.kill_processes()
        except sandboxes.SandboxError:
            pass

    def _wrong(self, expected: str, got: Any) -> GeneratedEnvFault:
        return GeneratedEnvFault(self.gate, f"expected {expected}, got {type(got).__name__} {got!r:.120}", kind="type")

    def _check_text(self, value: Any, what: str, limit: int) -> str:
        if not isinstance(value, str):
            raise self._wrong(f"{what} as a str", value)
        if len(value) > limit:
            raise GeneratedEnvFault(self.gate, f"expected {what} at most {limit} characters, got {len(value)}",
                                    kind="type")
        return value

    def _check_view(self, view: Any, *, done: bool) -> dict[str, Any]:
        if not isinstance(view, dict):
            raise self._wrong("the adapter's view", view)
        checked = {"instruction": self._check_text(view.get("instruction"), "instruction",
                                                   contract.MAX_INSTRUCTION_CHARS)}
        hint = view.get("hint")
        checked["hint"] = None if hint is None else self._check_text(hint, "hint()", contract.MAX_INSTRUCTION_CHARS)
        if not done:
            legal = view.get("legal")
            if not (isinstance(legal, list) and 1 <= len(legal) <= contract.MAX_LEGAL_ACTIONS):
                raise self._wrong(f"legal_actions() a list of 1..{contract.MAX_LEGAL_ACTIONS} str", legal)
            checked["legal"] = [self._check_text(a, "each legal action", contract.MAX_ACTION_CHARS) for a in legal]
            checked["expert"] = self._check_text(view.get("expert"), "expert_action()", contract.MAX_SENT_CHARS)
        return checked


def play(env: SandboxedModuleEnv, policy: Policy, seed: int) -> tuple[float, int]:
    """One episode of ``policy`` on ``env`` from ``seed``: (return, steps); it stops at ``env.max_steps``."""
    obs, total, steps, done = env.reset(seed), 0.0, 0, False
    while not done and steps < env.max_steps:
        obs, reward, done = env.step(policy(obs, env.legal_actions()))
        total, steps = total + reward, steps + 1
    return total, steps
