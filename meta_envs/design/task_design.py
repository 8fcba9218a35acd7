"""``agentgym/TaskDesign-v0``: the designer writes one JSON task config for an existing family.

Episode. ``reset(seed)`` draws the target family (``family=`` fixes it; ``options={"family": name}``
picks it for one episode) and shows the *brief*: the family, the JSON schema of its configs, an example
of the format, the solver's success so far per family, and archive exemplars (accepted and rejected
configs with their outcome). Each ``step`` is one config (raw JSON, or in a ```json fence). It goes
through the gates, in order, each reported in ``info["gates"]`` as ``{"name", "passed", "detail"}``:

1. ``parse``: the reply holds one JSON object;
2. ``schema``: it conforms to the family's schema (:mod:`.families.schema`) and the family can build it
   (an object the floorplan has no place for, a Sudoku whose givens clash, a product nobody sells fail here);
3. ``held_out``: it is not a copy of a ``valid``/``test`` instance — its *instance hash* (SHA-256 of the
   built instance's content, not of the config's text) is none of theirs — and uses nothing reserved
   for them (``valid_unseen``'s floorplans and pairs);
4. ``expert``: the family's scripted expert solves it within the family's step limit;
5. ``check_env``: :func:`agentgym_envs.checker.check_env` passes on the built env.

A failed gate with repairs left (at most :data:`MAX_REPAIRS`) pays 0 and the episode goes on with the
gate report as the observation; the last failure pays its outcome. A config that passes every gate is
played ``k >= 8`` times by the solver (and again with a hint: the expert's first action), ``k`` times by
the expert with ε = 0.25 random legal actions and ``k`` times by a random policy; the reward is
:func:`meta_envs.design.reward.designer_reward`: −1 unparseable or schema failure, −0.5 another failed
gate, 0 when our own machinery failed (``info["infra_error"]``, the episode truncated), else
``S·[0.6·B(p̂) + 0.4·R̃]·(1 − dup)``. ``dup`` is 1 for a config whose instance is already in the archive,
else the near-duplicate share of its closest archived config of the family (Jaccard of their leaf
values, ramped by :func:`meta_envs.design.novelty.ramp`). Reward bounds [−1, 1]; a reply the base
contract rejects (empty, over-long, not text) costs ``invalid_action_penalty`` = −1 and no repair. Every
reward is cut so the episode's return stays inside the bounds (:mod:`meta_envs.bounded_return`): after such
a reply, a last failed config costs nothing more.

Info (every step): ``family``, ``attempt``, ``repairs_left``, and after a config: ``gates``,
``outcome`` (``ok``/``unparseable``/``schema``/``gate``/``infra``), ``reward_components`` (every term
of the reward; on a repaired failure, what it would have paid), ``config``, ``instance_hash`` and
``sha256`` (the same hash, the key the self-play report uses). ``won`` means accepted. No wall-clock
time enters ``info`` (gate timings are in ``env.unwrapped.last_timings``), so the same seed and
actions give the same rewards and infos.

Kwargs: ``family`` / ``families`` (default all but ``terminal``, see
:data:`~meta_envs.design.families.DEFAULT_FAMILIES`), ``solver`` (what EnvDesign-v0 takes, see
:func:`meta_envs.design.solving.as_solver`: a callable ``(observation, legal_actions) -> action``, an
agentgym ``Policy``, ``"clue"``, ``"noisy-expert"``, ``"random"``, ``"expert"``; default
:class:`~meta_envs.design.families.play.NoisyExpert`, ε = 0.7), ``k`` plays (≥ 8), ``archive`` (a directory:
accepted and rejected configs are appended to ``task_design.jsonl`` there and read back on
construction; the brief's exemplars and success figures and ``dup`` read it as it grows). Without
``archive`` the env keeps no memory between episodes: every episode sees an empty archive, so the env
is stationary (same seed and action on the same instance give the same result, as gymnasium's checker
and the trainer expect). ``expert_action()`` is the scripted good designer: a family example
that builds, copies nothing held out and that the expert solves.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

from agentgym_envs.checker import check_env
from agentgym_envs.core import InfraError, Step, TextEnv
from agentgym_envs.seeding import derive_rng, derive_seed

from ..bounded_return import BoundedReturn
from .families import DEFAULT_FAMILIES, FAMILY_NAMES, ConfigError, family, held_out_hashes, instance_hash
from .families.play import NoisyExpert, expert_solves, success
from .families.schema import validate
from .gates import GateResult as Gate
from .novelty import ramp
from .reward import MIN_PLAYS, PlayStats, designer_reward
from .solving import as_solver

MAX_REPAIRS = 2
ARCHIVE_FILE = "task_design.jsonl"
EXEMPLARS = 2
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
SYSTEM_PROMPT = ("You design tasks for a solver. Reply with exactly one JSON object: a task config that follows "
                 "the schema in the brief. Aim for tasks the solver solves about half the time.")


class TaskDesignError(ValueError):
    """A TaskDesign-v0 kwarg out of range (expected X, got Y)."""


class _Failed(Exception):
    """A gate failed with this outcome; the run's gates so far are in the :class:`_GateRun`."""

    def __init__(self, outcome: str):
        super().__init__(outcome)
        self.outcome = outcome


class _GateRun:
    """Runs the gates of one config in order, recording each verdict and its wall time."""

    def __init__(self) -> None:
        self.gates: list[Gate] = []
        self.timings: dict[str, float] = {}
        self.config: dict | None = None

    def __call__(self, name: str, outcome: str, check: Callable[[], tuple[Any, str]]) -> Any:
        """``check()`` returns (value, detail) or raises; a failure stops the run with ``outcome``."""
        start = time.perf_counter()
        try:
            value, detail = check()
        except InfraError as e:  # our own machinery (a sandbox that would not start), never the designer
            value, detail, outcome = None, f"{name}: {e}", "infra"
        except ConfigError as e:
            value, detail = None, str(e)
        except Exception as e:  # the config reached a path the family's code did not expect: its outcome
            value, detail = None, f"{type(e).__name__}: {str(e)[:300]}"
        self.timings[name] = time.perf_counter() - start
        self.gates.append(Gate(name, value is not None, detail, self.timings[name]))
        if value is None:
            raise _Failed(outcome)
        return value


class TaskDesignEnv(BoundedReturn, TextEnv):
    """The designer writes a task config; see the module docstring."""

    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    reward_bounds: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    invalid_action_penalty: ClassVar[float] = -1.0
    #: Under react/tags/tool_calls the protocol says how to reply; an action is still one JSON config.
    reply_format: ClassVar[dict[str, str]] = {
        "Reply with exactly one JSON object: a task config": "A design is exactly one JSON object: a task config",
        "Reply with one JSON object.": "A design is one JSON object.",
    }
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("solver", "archive_path", "last_timings")

    def __init__(self, family: str | None = None, families: Sequence[str] = DEFAULT_FAMILIES, solver: Any = None,
                 k: int = MIN_PLAYS, archive: str | Path | None = None, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        chosen = (family,) if family is not None else tuple(families)
        unknown = [f for f in chosen if f not in FAMILY_NAMES]
        if not chosen or unknown:
            raise TaskDesignError(f"expected families among {', '.join(FAMILY_NAMES)}, got {list(chosen)}")
        if not isinstance(k, int) or k < MIN_PLAYS:
            raise TaskDesignError(f"expected k >= {MIN_PLAYS} solver plays, got {k!r}")
        self.families, self.k = chosen, k
        self.solver = NoisyExpert() if solver is None else as_solver(solver)
        self.archive_path = None if archive is None else Path(archive) / ARCHIVE_FILE
        self.entries: list[dict[str, Any]] = _load(self.archive_path)
        self.last_timings: dict[str, float] = {}
        self.family_name, self.base_seed, self.attempt = chosen[0], 0, 0

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        name = options.get("family")
        if name is None:
            name = self.families[int(self.np_random.integers(len(self.families)))]
        elif name not in self.families:
            raise TaskDesignError(f"expected options['family'] among {', '.join(self.families)}, got {name!r}")
        self.family_name, self.base_seed, self.attempt = name, int(self.np_random.integers(2**31)), 0
        brief = self._brief()
        return brief, {"instruction": brief, **self._progress()}

    def _step(self, action: str) -> Step:
        self.attempt += 1
        run, outcome, stats, dup = _GateRun(), "ok", None, 0.0
        try:
            stats, dup = self._evaluate(action, run)
        except _Failed as failure:
            outcome = failure.outcome
        self.last_timings = run.timings
        gates, config = run.gates, run.config
        reward, components = designer_reward(outcome, stats, dup)
        digest = self._digest(config) if any(g.name == "schema" and g.passed for g in gates) else None
        info = {"gates": [_gate_info(g) for g in gates], "outcome": outcome, "reward_components": components,
                "config": config, "instance_hash": digest, "sha256": digest, **self._progress()}
        if outcome == "infra":
            info["infra_error"] = gates[-1].detail
            return Step(f"Our own machinery failed (not your fault): {gates[-1].detail}", truncated=True,
                        won=False, score=0.0, info=info)
        self._record(config, digest, outcome, gates, components)
        info["metrics"] = self.metrics()
        if outcome == "ok":
            return Step(self._accepted_text(components), reward=reward, terminated=True, won=True, score=reward,
                        info=info)
        last = self.attempt > MAX_REPAIRS
        return Step(self._report(gates, outcome), reward=reward if last else 0.0, terminated=last,
                    won=False if last else None, score=reward if last else None, info=info)

    # ----------------------------------------------------------------- the gates
    def _evaluate(self, action: str, run: _GateRun) -> tuple[PlayStats, float]:
        """Every gate in order (raising :class:`_Failed` at the first failure), then the plays."""
        fam = family(self.family_name)
        run.config = config = run("parse", "unparseable", lambda: _parse(action))
        env = run("schema", "schema", lambda: _schema(fam, config))
        run("held_out", "gate", lambda: _held_out(fam, config))
        run("expert", "gate", lambda: _expert(env, fam, config, self.base_seed))
        run("check_env", "gate", lambda: _check(fam, config, self.base_seed))
        start = time.perf_counter()
        try:
            stats = self._plays(env, fam, config)
        except InfraError as e:
            run.gates.append(Gate("plays", False, f"plays: {e}"))
            raise _Failed("infra") from None
        run.timings["plays"] = time.perf_counter() - start
        return stats, self._dup(config)

    def _digest(self, config: dict) -> str:
        return instance_hash(self.family_name, family(self.family_name).instance_key(config))

    def _plays(self, env: TextEnv, fam, config: dict) -> PlayStats:
        seed, k, steps = self.base_seed, self.k, fam.steps(config)
        seeds = {"solver": derive_seed(seed, 0), "hint": derive_seed(seed, 0), "expert_eps": derive_seed(seed, 1),
                 "random": derive_seed(seed, 2)}
        p = {role: success(env, role, role_seed, k, steps, self.solver) for role, role_seed in seeds.items()}
        return PlayStats(p["solver"], k, p["hint"], p["expert_eps"], p["random"])

    def _dup(self, config: dict) -> float:
        """1 for an instance already accepted; else the ramped similarity of the closest accepted config."""
        digest = self._digest(config)
        mine, best = _leaves(config), 0.0
        for entry in self.entries:
            if entry["family"] != self.family_name or not entry["accepted"]:
                continue
            if entry["instance_hash"] == digest:
                return 1.0
            theirs = _leaves(entry["config"])
            best = max(best, len(mine & theirs) / max(1, len(mine | theirs)))
        return ramp(best)

    # ----------------------------------------------------------------- the expert (a good designer)
    def expert_action(self) -> str:
        """A config of the current family that builds, copies nothing held out and the expert solves."""
        fam = family(self.family_name)
        rng = derive_rng(self.base_seed, self.attempt)
        config = fam.example(rng)
        for _ in range(8):
            try:
                env = _schema(fam, config)[0]
                if _held_out(fam, config)[0] and _expert(env, fam, config, self.base_seed)[0]:
                    break
            except Exception:  # a failed draw: draw again (the gates will judge what is sent)
                pass
            config = fam.example(rng)
        return json.dumps(config, sort_keys=True)

    # ----------------------------------------------------------------- text
    def _brief(self) -> str:
        fam = family(self.family_name)
        example = json.dumps(fam.example(derive_rng(0, 7)), sort_keys=True)
        lines = [f"Design one task for the {fam.name} family. The solver will play it {self.k} times; you are paid "
                 "most when it wins about half of them and a skilled player clearly beats a random one.",
                 f"Family: {fam.description}", f"JSON schema of a config: {json.dumps(fam.schema, sort_keys=True)}",
                 f"Example of the format (not a good answer in itself): {example}",
                 f"Solver's success so far: {self._success_text()}",
                 *self._exemplar_lines(),
                 f"Reply with one JSON object. After a failed gate you may send up to {MAX_REPAIRS} corrected configs."]
        return "\n".join(lines)

    def _success_text(self) -> str:
        parts = []
        for name in self.families:
            hats = [e["p_hat"] for e in self.entries if e["family"] == name and e["accepted"]]
            parts.append(f"{name} {sum(hats) / len(hats):.2f} over {len(hats)} tasks" if hats else f"{name} no tasks yet")
        return "; ".join(parts)

    def _exemplar_lines(self) -> list[str]:
        mine = [e for e in self.entries if e["family"] == self.family_name]
        good = [e for e in mine if e["accepted"]][-EXEMPLARS:]
        bad = [e for e in mine if not e["accepted"]][-EXEMPLARS:]
        lines = [f"Accepted: {json.dumps(e['config'], sort_keys=True)[:400]} (p_hat {e['p_hat']:.2f}, reward "
                 f"{e['reward']:.2f})" for e in good] or ["Accepted: none yet."]
        lines += [f"Rejected: {json.dumps(e['config'], sort_keys=True)[:400]} ({e['failed_gate']}: {e['detail'][:200]})"
                  for e in bad] or ["Rejected: none yet."]
        return lines

    def _report(self, gates: list[Gate], outcome: str) -> str:
        lines = [f"Gate report ({outcome}):"] + [f"  {'PASS' if g.passed else 'FAIL'} {g.name}: {g.detail}" for g in gates]
        left = MAX_REPAIRS + 1 - self.attempt
        lines.append(f"You may send a corrected config ({left} repair{'s' if left != 1 else ''} left)." if left > 0
                     else "No repairs left; the episode is over.")
        return "\n".join(lines)

    def _accepted_text(self, c: dict) -> str:
        return (f"Accepted. Solver success p_hat {c['p_hat']:.2f} (with hint {c['p_hint']:.2f}), expert with "
                f"epsilon {c['p_expert_eps']:.2f}, random {c['p_random']:.2f}; S {c['S']:.2f}, B {c['B']:.2f}, "
                f"R_hint {c['R_hint']:.2f}, dup {c['dup']:.2f}: reward {c['reward']:.3f}.")

    def _progress(self) -> dict[str, Any]:
        left = max(0, min(MAX_REPAIRS, MAX_REPAIRS + 1 - self.attempt))
        return {"family": self.family_name, "attempt": self.attempt, "repairs_left": left}

    def metrics(self) -> dict[str, float]:
        return {"attempt": float(self.attempt), "archived": float(len(self.entries))}

    # ----------------------------------------------------------------- the archive
    def _record(self, config: Any, digest: str | None, outcome: str, gates: list[Gate], components: dict) -> None:
        if self.archive_path is None:  # no archive: no memory between episodes (a stationary env)
            return
        failed = next((g for g in gates if not g.passed), None)
        entry = {"family": self.family_name, "config": config, "instance_hash": digest, "accepted": outcome == "ok",
                 "reward": components["reward"], "p_hat": components["p_hat"], "outcome": outcome,
                 "failed_gate": failed.name if failed else None, "detail": failed.detail if failed else ""}
        self.entries = [*self.entries, entry]
        self.archive_path.parent.mkdir(parents=True, exist_ok=True)
        with self.archive_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


# ----------------------------------------------------------------------------- gate checks
def _parse(action: str) -> tuple[dict, str]:
    fenced = _FENCE.search(action)
    text = (fenced.group(1) if fenced else action).strip()
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"expected one JSON object, got text that does not parse ({str(e)[:120]})") from None
    if not isinstance(config, dict):
        raise ConfigError(f"expected a JSON object, got a JSON {type(config).__name__}")
    return config, "one JSON object"


def _schema(fam, config: dict) -> tuple[TextEnv, str]:
    problems = validate(config, fam.schema)
    if problems:
        raise ConfigError("; ".join(problems))
    return fam.build(config), "conforms to the schema and builds"


def _held_out(fam, config: dict) -> tuple[bool, str]:
    why = fam.reserved(config)
    if why:
        raise ConfigError(why)
    copied = held_out_hashes(fam.name).get(instance_hash(fam.name, fam.instance_key(config)))
    if copied:
        raise ConfigError(f"expected a new instance, got a copy of the held-out instance {copied}")
    return True, "not a copy of a valid/test instance"


def _expert(env: TextEnv, fam, config: dict, seed: int) -> tuple[bool, str]:
    won, steps = expert_solves(env, seed, fam.steps(config))
    if not won:
        raise ConfigError(f"expected the {fam.name} expert to solve the task within {fam.steps(config)} steps; it did not "
                          f"({steps} steps)")
    return True, f"the expert solves it in {steps} steps"


def _check(fam, config: dict, seed: int) -> tuple[bool, str]:
    report = check_env(lambda: fam.build(config), seed=seed % 1000)
    if not report.passed:
        raise ConfigError("check_env failed: " + "; ".join(f"{r.name}: {r.detail[:160]}" for r in report.failures))
    return True, f"check_env passed ({len(report.results)} checks)"


def _gate_info(gate: Gate) -> dict[str, Any]:
    """A verdict for ``info``: its wall time left out (not deterministic; see ``last_timings``)."""
    return {"name": gate.name, "passed": gate.passed, "detail": gate.detail}


def _leaves(value: Any, path: str = "") -> set[str]:
    """The config's leaf values as ``path=value`` strings (list items keep their position)."""
    if isinstance(value, dict):
        return set().union(*(_leaves(v, f"{path}.{k}") for k, v in value.items())) if value else {f"{path}={{}}"}
    if isinstance(value, list):
        return set().union(*(_leaves(v, f"{path}[{i}]") for i, v in enumerate(value))) if value else {f"{path}=[]"}
    return {f"{path}={json.dumps(value)}"}


def _load(path: Path | None) -> list[dict[str, Any]]:
    """The archive's entries; lines that are not well-formed entries are skipped (a torn last line)."""
    if path is None or not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and {"family", "config", "instance_hash", "accepted", "p_hat"} <= set(entry):
            entries.append(entry)
    return entries
