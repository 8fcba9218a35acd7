"""``agentgym/EnvDesign-v0``: the designer writes a whole environment as one Python module.

One episode is one design (``docs/meta_envs.md``, Designing environments and tasks)::

    obs, info = env.reset(seed=s)       # the brief: the contract, the solver's success so far,
                                        # archive exemplars (accepted and rejected), a difficulty target
    obs, r, terminated, truncated, info = env.step(module_source)     # raw, or in a ```python fence

The module runs only in a sandbox, built as ``Env(DIFFICULTY)`` where ``DIFFICULTY`` is the module's own
top-level number literal (the designer's knob, read from the syntax tree: :func:`module_difficulty`;
0.5 without one). It goes through every gate of
:func:`meta_envs.design.gates.validate_module` (``info["gates"]``, in order, stopping at the first
failure), novelty against the archive last; an accepted module is then played by the *solver* (any
policy, :mod:`meta_envs.design.solving`) on ``k >= 8`` seeds, without and with its hint, and by the
epsilon-expert and random baselines on those same seeds (so ``S`` is measured where ``p_hat`` is), each
play in its own fresh sandboxed process, with the gates' determinism and baselines re-checked on two of
them; a module failing that re-check fails a ``play`` gate (-0.5). Gate seeds and play seeds are both
drawn per episode from the reset seed keyed by the host's secret
(:func:`~meta_envs.design.sandboxed.measured_seed`), so a module cannot tell a gate from a play by its seed
(nor by its interpreter: all start alike), and the same reset seed gives the same episode within one host
process but not across processes (a new secret each). The behaviour fingerprint is taken on the archive's
fingerprint seeds (keyed by ``<archive>/.fingerprint_key``, played among the gate seeds), so novelty
compares designs measured in any episode or process against one archive. The reward is :func:`meta_envs.design.reward.designer_reward` (``info["reward_components"]``). Accepted modules
are added to the archive (kwarg ``archive``: a folder; default a fresh temp folder per env instance),
rejected ones are remembered there by their failed gate, and both show up in later briefs.

``info`` after the step: ``outcome`` (ok, unparseable, gate, infra), ``gates`` (name, passed, detail;
timings are left out so the same seed and module give the same info), ``reward_components``,
``sha256`` of the module (as extracted from the stripped reply), ``accepted``. Novelty compares against
the archive as it was at ``reset`` (:class:`ArchiveHorizon`), so snapshots (which leave out the archive,
the solver and the temp folder) replay exactly. Our own sandbox failing
(``SandboxUnavailable``) sets ``info["infra_error"]``, reward 0, and truncates the episode; the designer
is not blamed. ``won`` is a design paid at least :data:`WIN_REWARD`.
"""

from __future__ import annotations

import ast
import math
import re
import tempfile
import threading
from collections import OrderedDict
from typing import Any, ClassVar

import numpy as np

from agentgym_envs.core.errors import InfraError
from agentgym_envs.core.text_env import Step, TextEnv

from ..bounded_return import BoundedReturn
from . import reward as rewards
from .archive import EnvArchive, json_safe, source_sha
from .contract import CONTRACT_BRIEF, MAX_SOURCE_BYTES
from .gates import N_GATE_SEEDS, gate_seeds
from .novelty import duplicate_share, fingerprint_seeds, novelty_gate
from .sandboxed import measured_seed
from .solving import as_solver, measure_solver

WIN_REWARD = 0.5
DEFAULT_DIFFICULTY = 0.5
DIFFICULTY_TARGETS = (0.4, 0.5, 0.6)
KNOB_BRIEF = ("The knob: a top-level `DIFFICULTY = <number in 0..1>` in your module is the difficulty your Env "
              "is built with (`Env(DIFFICULTY)`) for the gates, the solver's plays and the archive; 0.5 "
              "without one.")
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_TIMING_STATS = ("median_step_ms", "seconds", "step_ms")
_REPORTS_LOCK = threading.Lock()
_REPORTS: OrderedDict[tuple, Any] = OrderedDict()
"""Gate reports (without novelty) by (source sha, backend, seeds, limits): the gates are a function of these."""
_REPORTS_KEPT = 32


def extract_module(action: str) -> str:
    """The module in a reply: the first fenced block when there is one, else the whole reply.

    >>> extract_module("Here it is:\\n```python\\nclass Env: pass\\n```\\nDone.")
    'class Env: pass\\n'
    >>> extract_module("class Env: pass")
    'class Env: pass'
    """
    match = _FENCE.search(action)
    return match.group(1) if match else action


def module_difficulty(source: str) -> float:
    """The knob a module asks to be played at: its top-level ``DIFFICULTY = <number>``, clipped to [0, 1].

    Read from the syntax tree (``ast.literal_eval`` of one literal; nothing runs); 0.5 when absent or
    not a plain number, and for source that does not parse (the ``parse`` gate reports that).

    >>> module_difficulty("DIFFICULTY = 0.25\\nclass Env: ...")
    0.25
    >>> module_difficulty("DIFFICULTY = __import__('os')"), module_difficulty("x = (")
    (0.5, 0.5)
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return DEFAULT_DIFFICULTY
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "DIFFICULTY" and isinstance(node.value, ast.Constant)):
            value = node.value.value
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                return min(1.0, max(0.0, float(value)))
    return DEFAULT_DIFFICULTY


def stable_gates(gates: list[dict]) -> list[dict]:
    """The gate results as ``info`` shows them: name, passed, detail (no timings)."""
    return [{"name": g.get("name"), "passed": bool(g.get("passed")), "detail": str(g.get("detail", ""))}
            for g in gates]


def gate_report(source: str, backend: str, seeds: tuple[int, ...], limits: Any, difficulty: float,
                fingerprint_seeds: tuple[int, ...] | None = None) -> Any:
    """:func:`~meta_envs.design.gates.validate_module` without novelty, cached while it did not hit infra."""
    from .gates import validate_module

    key = (source_sha(source), backend, seeds, fingerprint_seeds, repr(limits), difficulty)
    with _REPORTS_LOCK:  # vector envs in thread mode share this cache
        if key in _REPORTS:
            _REPORTS.move_to_end(key)
            return _REPORTS[key]
    report = validate_module(source, backend=backend, seeds=seeds, limits=limits, novelty=None,
                             difficulty=difficulty, fingerprint_seeds=fingerprint_seeds)
    if report.infra_error is None:
        with _REPORTS_LOCK:
            _REPORTS[key] = report
            while len(_REPORTS) > _REPORTS_KEPT:
                _REPORTS.popitem(last=False)
    return report


class EnvDesignEnv(BoundedReturn, TextEnv):
    """The designer's env: one module per episode, validated, played by the solver, rewarded, archived."""

    system_prompt: ClassVar[str] = (
        "You design text environments for a solver to learn from. Reply with one Python module that follows "
        "the contract in the brief (raw, or in one ```python block). You are paid for environments the "
        "solver wins about half the time, that reward skill over luck, and that are new.")
    reward_bounds: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    invalid_action_penalty: ClassVar[float] = -1.0
    #: One design per episode: a reply with no module (or, under a protocol, no parseable reply) ends it at −1.
    invalid_action_ends_episode: ClassVar[bool] = True
    #: Under react/tags/tool_calls the protocol says how to reply; the action is still one Python module.
    reply_format: ClassVar[dict[str, str]] = {
        "Reply with one Python module that follows": "A design is one Python module that follows"}
    max_action_chars: ClassVar[int] = 2 * MAX_SOURCE_BYTES
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("solver", "archive", "_temp", "_fingerprint_seeds")

    def __init__(self, solver: Any = None, archive: str | None = None, k: int = 8, backend: str = "bwrap",
                 limits: Any = None, play_seeds: tuple[int, ...] | None = None, render_mode: str | None = None):
        super().__init__(render_mode)
        if not isinstance(k, int) or k < rewards.MIN_PLAYS:
            raise ValueError(f"k: expected at least {rewards.MIN_PLAYS} solver plays per env, got {k!r}")
        if play_seeds is not None and len(play_seeds) < rewards.MIN_PLAYS:
            raise ValueError(f"play_seeds: expected at least {rewards.MIN_PLAYS} seeds, got {len(play_seeds)}")
        self.solver, self.k, self.backend, self.limits = as_solver(solver), k, backend, limits
        self.play_seeds = None if play_seeds is None else tuple(int(s) for s in play_seeds)
        self._temp = None if archive is not None else tempfile.TemporaryDirectory(prefix="envdesign-")
        self.archive = EnvArchive(archive if archive is not None else self._temp.name)
        self._fingerprint_seeds = tuple(fingerprint_seeds(key=self.archive.fingerprint_key()))
        """The archive's (:meth:`EnvArchive.fingerprint_key`): every design against it is fingerprinted alike."""
        self.last_result: dict | None = None
        self._target, self._seeds, self._gate_seeds, self._round, self._horizon = 0.5, (), (), 0, 0

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        rng: np.random.Generator = self.np_random
        self._target = DIFFICULTY_TARGETS[int(rng.integers(len(DIFFICULTY_TARGETS)))]
        token = int(rng.integers(0, 2**63 - 1))  # keyed below: the module cannot compute the seeds from it
        self._seeds = self.play_seeds or tuple(measured_seed("play-seed", token, i) for i in range(self.k))
        self._gate_seeds = tuple(gate_seeds(N_GATE_SEEDS, salt=token))
        self._horizon = len(self.archive.entries())
        brief = self.brief()
        return brief, {"instruction": "Design one environment as a Python module (the contract is below)."}

    def brief(self) -> str:
        """The observation of a new episode: contract, target, solver's success, exemplars, last result."""
        entries, rejected = self.archive.entries(), self.archive.rejected()
        p_hats = [e.p_hat for e in entries if e.p_hat is not None]
        lines = ["# Design an environment", "",
                 f"Difficulty target: the solver should win about {self._target:.0%} of episodes "
                 "(pay is highest for 40%-60%, nothing below 15% or above 85%).",
                 f"Solver's success so far: {len(entries)} archived envs"
                 + (f", mean p_hat {sum(p_hats) / len(p_hats):.3f}" if p_hats else "") + "."]
        if self.last_result is not None:
            lines.append("Last design: " + ", ".join(f"{k}={v}" for k, v in self.last_result.items()) + ".")
        if entries:
            lines += ["", "Accepted exemplars (newest last):"]
            lines += [f"- {e.sha[:12]}: p_hat={e.p_hat}, reward={e.record.get('reward')}" for e in entries[-3:]]
        if rejected:
            lines += ["", "Rejected exemplars (newest last):"]
            lines += [f"- {r['sha256'][:12]}: failed {r['failed_gate']}: {r['detail'][:160]}" for r in rejected[-3:]]
        return "\n".join(lines + ["", CONTRACT_BRIEF, "", KNOB_BRIEF])

    def _step(self, action: str) -> Step:
        source = extract_module(action)
        if not source.strip():  # an invalid design ends the episode, as unparseable source does
            value, components = rewards.designer_reward("unparseable")
            reason = "no module found (one Python module defining class Env, raw or in one ```python block)"
            info = {"outcome": "unparseable", "gates": [], "reward_components": components, "sha256": None,
                    "accepted": False, "action_valid": False, "parse_error": reason}
            return Step(f"Invalid design: {reason}; the episode is over.", value, terminated=True, won=False,
                        score=value, info=info)
        try:
            verdict = self._judge(source)
        except InfraError as e:
            verdict = self._verdict(source, "infra", [], infra_error=str(e))
        return self._finish(source, verdict)

    def _judge(self, source: str) -> dict:
        """Gates, novelty, solver plays and the reward of one module (raises InfraError for our failures)."""
        difficulty = module_difficulty(source)
        report = gate_report(source, self.backend, self._gate_seeds, self.limits, difficulty, self._fingerprint_seeds)
        gates = report.to_info()["gates"]
        if report.infra_error is not None:
            return self._verdict(source, "infra", gates, infra_error=report.infra_error)
        if not report.passed:
            failed = report.failed_gate
            name = failed if isinstance(failed, str) else getattr(failed, "name", "gate")
            return self._verdict(source, "unparseable" if name == "parse" else "gate", gates)
        seen = ArchiveHorizon(self.archive, self._horizon)
        near = duplicate_share(source, report.stats.get("fingerprint"), seen)
        novelty = novelty_gate(seen)(source, report.stats)
        gates = [g for g in gates if g.get("name") != "novelty"]
        gates.append({"name": "novelty", "passed": novelty.passed, "detail": novelty.detail})
        if not novelty.passed:
            return self._verdict(source, "gate", gates, near=near)
        play, failure = self._play(source, difficulty)
        if failure is not None:
            gates.append({"name": "play", "passed": False, "detail": failure})
            return self._verdict(source, "gate", gates, near=near)
        stats = rewards.PlayStats(p_solver=play.p_solver, n=len(play.seeds), p_hint=play.p_hint,
                                  p_expert_eps=play.p_expert_eps, p_random=play.p_random)
        return self._verdict(source, "ok", gates, stats=stats, near=near, report=report, play=play)

    def _play(self, source: str, difficulty: float) -> tuple[Any, str | None]:
        """The solver on this episode's seeds; a module fault is the designer's (detail), ours raises."""
        from .sandboxed import GeneratedEnvFault, SandboxedModuleEnv

        try:
            with SandboxedModuleEnv(source, difficulty=difficulty, backend=self.backend, limits=self.limits,
                                    gate="play") as env:
                env.gate = "play"
                return measure_solver(env, self.solver, self._seeds), None
        except GeneratedEnvFault as e:
            return None, f"the module failed while the solver played: {e.detail}"[:2000]

    def _verdict(self, source: str, outcome: str, gates: list[dict], *, stats: Any = None, near: dict | None = None,
                 report: Any = None, play: Any = None, infra_error: str | None = None) -> dict:
        dup = float(near["dup"]) if near else 0.0
        value, components = rewards.designer_reward(outcome, stats, dup=dup if outcome == "ok" else 0.0)
        components["nearest"] = near["sha"] if near else None
        return {"outcome": outcome, "reward": value, "components": components, "gates": stable_gates(gates),
                "report": report, "play": play, "infra_error": infra_error}

    def _finish(self, source: str, verdict: dict) -> Step:
        sha, outcome, value = source_sha(source), verdict["outcome"], verdict["reward"]
        accepted = outcome == "ok"
        try:
            if accepted:
                self._archive(source, sha, verdict)
            elif outcome != "infra":
                failed = next((g for g in verdict["gates"] if not g["passed"]), {"name": outcome, "detail": ""})
                self.archive.add_rejected(source, failed["name"], failed["detail"])
        except OSError as e:  # our archive folder failed (gone, full, read-only): ours, not the designer's
            verdict = {**verdict, "outcome": "infra", "reward": 0.0,
                       "infra_error": f"the archive at {self.archive.path} could not be written: {e}"}
            outcome, value, accepted = "infra", 0.0, False
            verdict["components"] = {**verdict["components"], "outcome": "infra", "reward": 0.0}
        self.last_result = {"outcome": outcome, "reward": round(value, 4),
                            "p_hat": verdict["components"]["p_hat"]}
        info = {"outcome": outcome, "gates": verdict["gates"], "reward_components": json_safe(verdict["components"]),
                "sha256": sha, "accepted": accepted}
        if outcome == "infra":
            info["infra_error"] = verdict["infra_error"]
            return Step(f"Our machinery failed (not your fault): {verdict['infra_error']}", 0.0, truncated=True,
                        won=False, score=0.0, info=info)
        return Step(self._report_text(verdict), value, terminated=True, won=value >= WIN_REWARD, score=value,
                    info=info)

    def _archive(self, source: str, sha: str, verdict: dict) -> None:
        report, play = verdict["report"], verdict["play"]
        self._round += 1
        self.archive.add(source, {
            "gates": report.to_info(timings=True)["gates"], "stats": report.stats, "reward": verdict["reward"],
            "difficulty": module_difficulty(source),
            "reward_components": verdict["components"], "round": self._round, "parent": None,
            "play_stats": {"p_solver": play.p_solver, "p_hint": play.p_hint, "n": len(play.seeds),
                           "p_expert_eps": play.p_expert_eps, "p_random": play.p_random,
                           "seeds": list(play.seeds), "wins": list(play.wins),
                           "hint_wins": None if play.hint_wins is None else list(play.hint_wins)}})

    @staticmethod
    def _report_text(verdict: dict) -> str:
        c = verdict["components"]
        lines = [f"Outcome: {verdict['outcome']}; reward {verdict['reward']:.4f}."]
        for gate in verdict["gates"]:
            lines.append(f"- {gate['name']}: {'passed' if gate['passed'] else 'FAILED'} {gate['detail'][:300]}")
        if verdict["outcome"] == "ok":
            lines.append(f"Solver p_hat={c['p_hat']}, with hint {c['p_hint']}; S={c['S']}, B={c['B']}, "
                         f"R_hint={c['R_hint']}, dup={c['dup']}.")
        return "\n".join(lines)

    # ----------------------------------------------------------------- hooks
    def expert_action(self) -> str:
        """The scripted good designer's module (the good parametric family at its middle setting)."""
        from .designers import good_module

        return good_module()

    def close(self) -> None:
        if self._temp is not None:
            self._temp.cleanup()
            self._temp = None
        super().close()



class ArchiveHorizon:
    """The archive as it was when an episode began: entries added later are invisible to its novelty.

    This keeps an episode a function of its snapshot (the archive itself lives on disk, outside it).
    """

    def __init__(self, archive: EnvArchive, horizon: int):
        self.archive, self.horizon = archive, horizon

    def entries(self) -> list:
        return [e for e in self.archive.entries() if int(e.record.get("index", 0)) < self.horizon]

    def fingerprint_key(self) -> bytes:
        return self.archive.fingerprint_key()
