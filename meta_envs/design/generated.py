"""``agentgym/Generated-v0``: an archived generated env, played inside its sandbox as an ordinary text env.

An env accepted by EnvDesign-v0 is stored in an archive (:mod:`meta_envs.design.archive`). This env plays
one of them behind the repo's text-env contract, so any policy, the trainer and the leaderboard runner use
generated envs like any other::

    env = agentgym_envs.make("agentgym/Generated-v0", archive="runs/sp/archive", rule="learnable")
    obs, info = env.reset(seed=3)          # picks an env by the rule (seeded), starts module episode 3
    obs, r, terminated, truncated, info = env.step(info["valid_actions"][0])

kwargs: ``archive`` (a folder; default a small built-in archive of the good parametric family at three
difficulties, so ``agentgym check`` runs offline), ``sha`` (play exactly that env) or ``rule``
(``uniform``, ``newest``, ``learnable``: drawn per reset from the reset seed), ``backend``, ``limits``.

The module runs only in a sandbox (:class:`~meta_envs.design.sandboxed.SandboxedModuleEnv`), a fresh one
(new sandbox, new process) for every episode, started exactly as the gates and the solver's plays start it
(:func:`~meta_envs.design.sandboxed.launch`): a module cannot tell this env from its gates by the
interpreter or by counting the episodes it has played. The observation on reset is the module's
instruction and first observation; ``valid_actions`` are its legal actions; ``expert_action()`` is its
expert; the reward is the module's; ``won`` when the episode's return reaches
:data:`~meta_envs.design.contract.SUCCESS_RETURN`; an episode reaching ``max_steps`` without ending is
truncated. What the module does with an agent's action is the agent's outcome: a module that raises on it
makes the action invalid, one that hangs or dies ends the episode (lost); only our own sandbox failing is
``infra_error``. ``info["generated_sha"]`` names the env played (on reset). Snapshots hold the sha, the
seed and the actions so far and are restored by replaying them (the module passed the determinism gate).
"""

from __future__ import annotations

import tempfile
from typing import Any, ClassVar

from agentgym_envs.core.errors import InfraError, InvalidAction, SnapshotError
from agentgym_envs.core.text_env import Step, TextEnv

from .archive import ArchiveError, EnvArchive
from .contract import is_success

BUILTIN_DIFFICULTIES = (0.2, 0.4, 0.6)
"""Knob settings of the good parametric family in the built-in archive."""


def builtin_archive(path: str) -> EnvArchive:
    """The built-in archive at ``path``: the good family at :data:`BUILTIN_DIFFICULTIES` (unvalidated here:
    they are our own modules, and they still run only in the sandbox)."""
    from .designers import good_module

    archive = EnvArchive(path)
    for difficulty in BUILTIN_DIFFICULTIES:
        archive.add(good_module(difficulty), {"builtin": True, "difficulty": difficulty, "play_stats": None})
    return archive


class GeneratedEnv(TextEnv):
    """One archived generated env per episode, played in the sandbox (see the module docstring)."""

    system_prompt: ClassVar[str] = ("You play a small generated text game. Reply with exactly one of the legal "
                                    "actions.")
    reward_bounds: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    #: Under react/tags/tool_calls the protocol says how to reply; an action is still one legal action.
    reply_format: ClassVar[dict[str, str]] = {
        "Reply with exactly one of the legal actions.": "An action is exactly one of the legal actions."}

    def __init__(self, archive: str | None = None, sha: str | None = None, rule: str = "uniform",
                 backend: str = "bwrap", limits: Any = None, render_mode: str | None = None):
        super().__init__(render_mode)
        self._temp = None
        if archive is None:
            self._temp = tempfile.TemporaryDirectory(prefix="generated-builtin-")
            self.archive = builtin_archive(self._temp.name)
        else:
            self.archive = EnvArchive(archive)
        if sha is not None:
            self.archive.get(sha)  # fail at construction on an unknown sha, with the remedy
        from .archive import SAMPLING_RULES

        if rule not in SAMPLING_RULES:
            raise ArchiveError(f"rule: expected one of {', '.join(SAMPLING_RULES)}, got {rule!r}")
        self.sha, self.rule, self.backend, self.limits = sha, rule, backend, limits
        self._module: Any = None
        self._module_sha: str | None = None
        self._entry: Any = None
        self._episode: dict[str, Any] = {"sha": None, "seed": 0, "actions": [], "return": 0.0, "steps": 0}

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        entry = self.archive.get(self.sha) if self.sha is not None else self.archive.sample(self.np_random, self.rule)
        seed = int(self.np_random.integers(0, 2**31 - 1))
        first = self._start(entry, seed)
        self._episode = {"sha": entry.sha, "seed": seed, "actions": [], "return": 0.0, "steps": 0}
        instruction = self._module.instruction
        return f"{instruction}\n\n{first}", {"instruction": instruction, "generated_sha": entry.sha}

    def _start(self, entry: Any, seed: int) -> str:
        """The module's first observation of episode ``seed``, in a fresh sandbox (nothing kept from the last)."""
        from .sandboxed import GeneratedEnvFault, SandboxedModuleEnv

        try:
            self._close_module()
            knob = entry.record.get("difficulty")
            difficulty = float(knob) if isinstance(knob, (int, float)) and not isinstance(knob, bool) else 0.5
            self._module = SandboxedModuleEnv(entry.source, difficulty=difficulty, backend=self.backend,
                                              limits=self.limits, gate="play")
            self._module_sha, self._entry = entry.sha, entry
            return self._module.reset(seed)
        except GeneratedEnvFault as e:  # an archived env that cannot even start: our archive's problem
            self._close_module()
            raise InfraError(f"archived env {entry.sha[:12]} failed to start: {e.detail[:300]}") from e

    def _step(self, action: str) -> Step:
        from .sandboxed import GeneratedEnvFault

        try:
            obs, reward, done = self._module.step(action)
        except GeneratedEnvFault as e:
            if e.kind == "raised":
                raise InvalidAction(f"The game rejected that action ({e.detail[:200]}). "
                                    f"Reply with one of the legal actions.") from e
            self._close_module()  # hung or died: its state is gone, and the episode with it
            return Step(f"The game stopped answering after that action ({e.kind}); the episode is over.",
                        0.0, terminated=True, won=False, score=self._episode["return"])
        self._episode["actions"].append(action)
        self._episode["return"] += reward
        self._episode["steps"] += 1
        won = is_success(self._episode["return"])
        truncated = not done and self._episode["steps"] >= self._module.max_steps
        return Step(obs, reward, terminated=done, truncated=truncated, won=won, score=self._episode["return"])

    # ----------------------------------------------------------------- hooks
    def valid_actions(self) -> list[str] | None:
        if self._module is None or self._episode_over:
            return []
        return self._module.legal_actions()

    def expert_action(self) -> str:
        if self._module is None:
            return ""
        return self._module.expert_action()

    def metrics(self) -> dict[str, float]:
        return {"return": float(self._episode["return"])}

    def _get_state(self) -> Any:
        if self._episode["sha"] is None:
            raise SnapshotError("no episode has started: call reset() before get_state()")
        return {**self._episode, "actions": list(self._episode["actions"]), "over": self._episode_over,
                "flags": self._end_flags, "won": self._won, "score": self._score,
                "instruction": self._instruction, "last": self._last_observation}

    def _set_state(self, state: Any) -> None:
        try:
            entry = self.archive.get(state["sha"])
        except ArchiveError as e:
            raise SnapshotError(f"the snapshot's env is not in this archive: {e}") from e
        observation = self._start(entry, state["seed"])
        self._episode = {"sha": entry.sha, "seed": state["seed"], "actions": [], "return": 0.0, "steps": 0}
        for action in state["actions"]:
            observation, reward, done = self._module.step(action)
            self._episode["actions"].append(action)
            self._episode["return"] += reward
            self._episode["steps"] += 1
        self._episode_started = True
        self._episode_over, self._end_flags = state["over"], tuple(state["flags"])
        self._won, self._score, self._instruction = state["won"], state["score"], state["instruction"]
        self._last_observation = state["last"]

    def _close_module(self) -> None:
        module, self._module, self._module_sha = self._module, None, None
        if module is not None:
            module.close()

    def close(self) -> None:
        self._close_module()
        if self._temp is not None:
            self._temp.cleanup()
            self._temp = None
        super().close()
