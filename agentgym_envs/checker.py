"""``check_env``: gymnasium's own checker plus this project's contract checks, for any text env.

Used by ``agentgym check ID``, by every family's tests and by the scaffold. A new env inherits the whole
battery by being registered: ``tests/test_registered_envs.py`` runs it over every id. The checker never
special-cases an env; an env that cannot do something (no snapshots, no valid-action list) skips only the
checks that need it, and the report says so.

>>> from agentgym_envs.checker import check_env
>>> report = check_env("agentgym/Maze-Easy-v0")
>>> report.passed
True
"""

from __future__ import annotations

import math
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import gymnasium
import numpy as np

from .core.errors import SnapshotError
from .core.hooks import has_expert, has_random_action, valid_actions
from .core.info import OPTIONAL_KEY_TYPES, RESET_KEY_TYPES, STEP_KEY_TYPES, TypeSpec, info_problems
from .fuzz import hostile_actions

EnvFactory = Callable[[], gymnasium.Env]



@dataclass
class CheckResult:
    name: str
    status: str  # "pass" | "fail" | "skip"
    detail: str = ""


@dataclass
class CheckReport:
    """Results of every check; ``passed`` when none failed (skips are fine and listed)."""

    env_id: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.status != "fail" for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    def __str__(self) -> str:
        lines = [f"check_env {self.env_id}"]
        for r in self.results:
            lines.append(f"  {r.status.upper():4}  {r.name:22} {r.detail}".rstrip())
        verdict = "PASSED" if self.passed else f"FAILED ({len(self.failures)} of {len(self.results)} checks)"
        lines.append(f"verdict: {verdict}")
        return "\n".join(lines)


def check_env(env: str | EnvFactory | gymnasium.Env, *, seed: int = 0, max_steps: int = 40, env_kwargs: dict | None = None) -> CheckReport:
    """Run every check on an env given as an id, a zero-argument factory, or an instance with a spec."""
    factory, label = _factory(env, env_kwargs or {})
    report = CheckReport(label)
    context = _Context(factory, seed, max_steps)
    for name, check in CHECKS:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                outcome = check(context)
            status, detail = outcome if isinstance(outcome, tuple) else ("pass", outcome or "")
            if caught and status == "pass":
                detail = (detail + "; " if detail else "") + f"warnings: {_summarise(caught)}"
        except AssertionError as e:
            status, detail = "fail", str(e)
        except Exception as e:  # a check that crashes is a failed check, reported with where it happened
            status, detail = "fail", f"{type(e).__name__}: {e} [{_where(e)}]"
        report.results.append(CheckResult(name, status, detail))
        context.close()
    return report


class _Context:
    """Fresh envs on demand, and the reference trajectory the checks compare against."""

    def __init__(self, factory: EnvFactory, seed: int, max_steps: int):
        self.factory, self.seed, self.max_steps = factory, seed, max_steps
        self._envs: list[gymnasium.Env] = []
        self._actions: list[str] | None = None

    def new(self) -> gymnasium.Env:
        env = self.factory()
        self._envs.append(env)
        return env

    def actions(self) -> list[str]:
        """A deterministic action sequence: the expert's, else valid actions, else space samples."""
        if self._actions is None:
            env = self.factory()
            env.reset(seed=self.seed)
            rng = np.random.default_rng(self.seed)
            self._actions = []
            for _ in range(self.max_steps):
                action = choose_action(env, rng)
                self._actions.append(action)
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    break
            env.close()
        return self._actions

    def close(self) -> None:
        """Close every env made so far (after each check, so heavy envs — browsers — don't pile up)."""
        for env in self._envs:
            try:
                env.close()
            except Exception:  # closing is best effort; a failed close is reported by gymnasium's check
                pass
        self._envs.clear()


def choose_action(env: gymnasium.Env, rng: np.random.Generator) -> str:
    """The expert's action when there is one, else the random rule's (:func:`~agentgym_envs.policies.random_action`)."""
    if has_expert(env):
        return env.unwrapped.expert_action()
    from .policies import random_action

    return random_action(env, rng)


# ----------------------------------------------------------------------------- the checks
def _check_gymnasium(ctx: _Context):
    from gymnasium.utils.env_checker import check_env as gymnasium_check_env

    gymnasium_check_env(ctx.new().unwrapped, skip_render_check=True)


def _check_spaces(ctx: _Context):
    env = ctx.new()
    for name in ("observation_space", "action_space"):
        space = getattr(env, name)
        assert isinstance(space, gymnasium.spaces.Text), f"{name} should be a Text space, got {space!r}"
    sample = "put mug 1 in/on coffeemachine 1 — ☕ ü 中文"
    assert env.action_space.contains(sample), f"action_space rejects ordinary unicode text ({env.action_space!r})"


def _check_reset_info(ctx: _Context):
    obs, info = ctx.new().reset(seed=ctx.seed)
    assert isinstance(obs, str), f"reset() observation should be str, got {type(obs).__name__}"
    _assert_info(info, {**RESET_KEY_TYPES, **STEP_KEY_TYPES}, "reset")


def _check_rollout(ctx: _Context):
    env = ctx.new()
    env.reset(seed=ctx.seed)
    low, high = _reward_bounds(env)
    total = 0.0
    for i, action in enumerate(ctx.actions()):
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str), f"step {i}: observation should be str, got {type(obs).__name__}"
        assert isinstance(terminated, bool) and isinstance(truncated, bool), f"step {i}: terminated/truncated must be bool"
        assert low <= reward <= high and not math.isnan(reward), f"step {i}: reward {reward} outside reward_bounds {(low, high)}"
        _assert_info(info, STEP_KEY_TYPES, f"step {i}")
        total += reward
    return f"{len(ctx.actions())} steps, return {total:g}"


def _check_determinism(ctx: _Context):
    a, b = ctx.new(), ctx.new()
    first_a, first_b = a.reset(seed=ctx.seed), b.reset(seed=ctx.seed)
    assert same(first_a, first_b), "two envs reset with the same seed differ"
    for i, action in enumerate(ctx.actions()):
        out_a, out_b = a.step(action), b.step(action)
        assert same(out_a, out_b), f"same seed and actions diverge at step {i} (action {action!r:.60})"
    return f"lockstep over {len(ctx.actions())} steps"


def _check_fuzz(ctx: _Context):
    env = ctx.new()
    env.reset(seed=ctx.seed)
    low, high = _reward_bounds(env)
    for action in hostile_actions():
        obs, reward, terminated, truncated, info = env.step(action)
        label = repr(action)[:40]
        assert isinstance(obs, str), f"hostile action {label}: observation is {type(obs).__name__}"
        assert low <= reward <= high, f"hostile action {label}: reward {reward} outside {(low, high)}"
        _assert_info(info, STEP_KEY_TYPES, f"hostile action {label}")
        assert info["infra_error"] is None, f"hostile action {label} broke the env's infrastructure: {info['infra_error']}"
        if terminated or truncated:
            env.reset(seed=ctx.seed)
    return f"{len(hostile_actions())} hostile actions, none raised"


def _snapshotting_env(ctx: _Context) -> Any:
    """A fresh unwrapped env reset with the context's seed, or ``None`` when it has no ``get_state()``."""
    env = ctx.new().unwrapped
    if not hasattr(env, "get_state"):
        return None
    env.reset(seed=ctx.seed)
    return env


def _check_snapshot(ctx: _Context):
    env = _snapshotting_env(ctx)
    if env is None:
        return "skip", "env has no get_state()/set_state()"
    actions = ctx.actions()
    half = len(actions) // 2
    for action in actions[:half]:
        env.step(action)
    try:
        snapshot = env.get_state()
    except SnapshotError as e:  # envs whose state lives outside Python (a live shell) may refuse, with a reason
        return "skip", f"env does not support snapshots: {e}"
    assert isinstance(snapshot, bytes), f"get_state() should return bytes, got {type(snapshot).__name__}"
    original = [env.step(a) for a in actions[half:]]
    env.set_state(snapshot)
    assert same(original, [env.step(a) for a in actions[half:]]), "replay after set_state() differs (same env)"
    fresh = ctx.new().unwrapped
    fresh.reset(seed=ctx.seed + 1)
    fresh.set_state(snapshot)
    assert same(original, [fresh.step(a) for a in actions[half:]]), "replay after set_state() differs (fresh env)"
    try:
        fresh.set_state(b"not a snapshot")
    except SnapshotError:
        pass
    else:
        raise AssertionError("set_state(garbage) should raise SnapshotError")
    return f"{len(snapshot):,} bytes at step {half}"


def _check_valid_actions(ctx: _Context):
    env = _snapshotting_env(ctx)
    if env is None:
        return "skip", "env has no get_state()/set_state() to try listed actions from"
    tried = 0
    for action in ctx.actions()[:5]:
        listed = valid_actions(env) or []
        try:
            snapshot = env.get_state()
        except SnapshotError as e:
            return "skip", f"env does not support snapshots: {e}"
        for candidate in listed[:12]:
            _, _, _, _, info = env.step(candidate)
            assert info["action_valid"], f"listed valid action {candidate!r} was rejected: {info.get('parse_error')}"
            env.set_state(snapshot)
            tried += 1
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    return ("skip", "env lists no valid actions") if tried == 0 else f"{tried} listed actions accepted"


def _check_random_action(ctx: _Context):
    env = ctx.new().unwrapped
    if not has_random_action(env):
        return "skip", "env has no random_action()"
    env.reset(seed=ctx.seed)
    rng = np.random.default_rng(ctx.seed)
    for i in range(20):
        action = env.random_action(rng)
        assert isinstance(action, str), f"random_action() should return str, got {type(action).__name__}"
        _, _, terminated, truncated, info = env.step(action)
        assert info["action_valid"], f"random_action() gave a rejected action {action!r:.60}: {info.get('parse_error')}"
        if terminated or truncated:
            env.reset(seed=ctx.seed + i + 1)
    return "20 random actions accepted"


def _check_task_index(ctx: _Context):
    env = ctx.new()
    n = getattr(env.unwrapped, "num_tasks", None)
    if n is None:
        return "skip", "env has no finite task set (num_tasks)"
    assert isinstance(n, int) and n > 0, f"num_tasks should be a positive int, got {n!r}"
    first = env.reset(seed=1, options={"task_index": n - 1})
    again = ctx.new().reset(seed=1, options={"task_index": n - 1})
    assert same(first, again), "reset(options={'task_index': i}) is not deterministic"
    return f"{n} tasks"


def _check_expert(ctx: _Context):
    env = ctx.new()
    if not has_expert(env):
        return "skip", "env has no expert_action()"
    env.reset(seed=ctx.seed)
    won, steps = False, 0
    limit = env.spec.max_episode_steps if env.spec and env.spec.max_episode_steps else ctx.max_steps * 5
    for steps in range(1, limit + 1):
        action = env.unwrapped.expert_action()
        _, _, terminated, truncated, info = env.step(action)
        assert info["action_valid"], f"expert action {action!r} was rejected: {info.get('parse_error')}"
        won = info["won"]
        if terminated or truncated:
            break
    return f"expert {'won' if won else 'did not win'} in {steps} steps"


CHECKS: list[tuple[str, Callable[[_Context], Any]]] = [
    ("gymnasium_check_env", _check_gymnasium),
    ("text_spaces", _check_spaces),
    ("reset_info", _check_reset_info),
    ("rollout_and_info", _check_rollout),
    ("determinism", _check_determinism),
    ("fuzzed_actions", _check_fuzz),
    ("snapshot_roundtrip", _check_snapshot),
    ("valid_actions", _check_valid_actions),
    ("random_action", _check_random_action),
    ("task_index", _check_task_index),
    ("expert", _check_expert),
]


# ----------------------------------------------------------------------------- helpers
def same(a: Any, b: Any) -> bool:
    """Deep equality over tuples, lists, dicts, numpy arrays and floats (NaN equals NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _assert_info(info: dict, expected: dict[str, TypeSpec], where: str) -> None:
    problems = info_problems(info, expected, OPTIONAL_KEY_TYPES)
    assert not problems, f"{where}: " + "; ".join(problems)


def _reward_bounds(env: gymnasium.Env) -> tuple[float, float]:
    return tuple(getattr(env.unwrapped, "reward_bounds", (-math.inf, math.inf)))


def _factory(env: Any, kwargs: dict) -> tuple[EnvFactory, str]:
    if isinstance(env, str):
        from .registration import make

        return (lambda: make(env, **kwargs)), env
    if isinstance(env, gymnasium.Env):
        if env.spec is None:
            raise ValueError("check_env needs an id, a factory, or an env made by gymnasium.make (with a spec)")
        spec = env.spec
        return (lambda: gymnasium.make(spec, **kwargs)), spec.id
    return (lambda: env(**kwargs)), getattr(env, "__name__", repr(env))


def _summarise(caught: list) -> str:
    messages = sorted({str(w.message).splitlines()[0][:100] for w in caught})
    return " | ".join(messages[:3])


def _where(e: Exception) -> str:
    frame = traceback.extract_tb(e.__traceback__)[-1]
    return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}"
