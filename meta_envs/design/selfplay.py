"""The self-play loop: rounds of design → validate → solve → archive, per-role advantages, and a report.

One run owns one archive directory and one design env (``agentgym/EnvDesign-v0`` by default, or any design
env of ``docs/meta_envs.md``, e.g. ``agentgym/TaskDesign-v0``), made with the solver and the archive as
kwargs. Round ``r``:

1. **Design.** The env is reset with ``derive_seed(seed, r)``: one brief (the contract, the solver's
   success so far, archive exemplars). The designer answers that brief ``group_size`` times, sample ``i``
   with its own sampling seed ``derive_seed(seed, r, i)``, all before any answer is scored. (A
   deterministic scripted designer answers a brief the same way every time: use ``group_size=1``.)
2. **Validate, solve, archive.** Each answer is played as one episode of the design env from the same
   reset seed (repairs, where the env offers them, are further turns of that episode): the gates run in
   the sandbox, the solver plays the env ``k`` times with and without the hint, an accepted env goes into
   the archive. The samples of a round are scored in order, so a later sample that copies an earlier
   accepted one is a near duplicate and has its reward cut, as any repeat would (R-Zero's lesson).
3. **Advantages.** Designer: the group's rewards normalised, ``A_i = (r_i − mean) / (std + 1e-6)`` (zero
   for a group without spread). Samples whose episode hit our own infrastructure (``info["infra_error"]``)
   are left out of the group: they say nothing about the designer. Solver: per accepted env, its ``k``
   plays (wins as 1, losses as 0, from the archive's record) normalised the same way.
4. **Report.** Per round: the samples (reward, outcome, failed gate, reward components, advantage), the
   archive's size, the spread of difficulty (the solver's success ``p̂`` over archived envs: quantiles and a
   five-bin histogram; ``knobs``: the same for the modules' own ``DIFFICULTY`` settings) and the solver's
   success on the round's accepted envs and on the archive.

The loop updates no weights: it produces what a trainer consumes. ``agentgym train`` trains the designer on
``agentgym/EnvDesign-v0``'s reward and the solver on the archive through ``agentgym/Generated-v0``
(``docs/meta_envs.md``, "Training both roles"). Same config, designer and solver ⇒ the same report, except
for the wall-clock fields (``seconds``).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentgym_envs.chat import ChatHistory, Message
from agentgym_envs.seeding import derive_seed

#: Reward components copied from a design env's info into the report, when present.
COMPONENTS = ("S", "B", "R_hint", "dup", "p_hat", "p_hint", "p_expert_eps", "p_random", "n")
#: Edges of the difficulty histogram over p̂ (five bins; the middle one is SPADE's plateau [0.4, 0.6]).
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


class SelfPlayError(ValueError):
    """A self-play run was configured wrongly (the message says what was expected and how to fix it)."""


class DesignerUnavailable(Exception):
    """The designer's own machinery failed (an endpoint down, a timeout): that sample is ``infra``, not scored.

    Raised by a designer's ``design``; the loop records the sample with ``infra_error`` and goes on."""


class Designer(Protocol):
    """Writes one answer (a module, a JSON config, a repair) to the chat so far; ``env`` is the design env."""

    def design(self, messages: list[Message], env: Any, seed: int) -> str: ...


@dataclass(frozen=True)
class SelfPlayConfig:
    """One self-play run."""

    archive: str
    """Directory of the run's archive (created; an existing archive is continued)."""
    rounds: int = 3
    """Rounds of design → validate → solve → archive."""
    group_size: int = 4
    """Designer samples per brief, normalised as one group."""
    k: int = 8
    """Solver plays per generated env (the issue asks for k ≥ 8)."""
    seed: int = 0
    """Seeds every brief and every sample; same seed ⇒ same report."""
    env_id: str = "agentgym/EnvDesign-v0"
    """The design env."""
    backend: str = "bwrap"
    """Sandbox backend for generated code: ``bwrap`` (default) or ``docker``."""
    max_turns: int = 3
    """Designer turns per episode (an answer and up to two repairs where the env offers repairs)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra make kwargs of the design env."""

    def __post_init__(self) -> None:
        for name in ("rounds", "group_size", "k", "max_turns"):
            if int(getattr(self, name)) < 1:
                raise SelfPlayError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.k < 8:
            raise SelfPlayError(f"k must be >= 8 (p̂ from fewer plays is too noisy to reward), got {self.k}")


@dataclass
class Sample:
    """One designer answer's episode: its return and what the design env reported about it."""

    index: int
    reward: float
    outcome: str
    failed_gate: str | None
    sha256: str | None
    infra_error: str | None
    components: dict[str, float]
    turns: int
    advantage: float | None = None


@dataclass
class RoundReport:
    """One round of the loop (see the module docstring for every field's meaning)."""

    round: int
    brief_seed: int
    samples: list[Sample]
    accepted: int
    archive_size: int
    difficulty: dict[str, Any]
    knobs: dict[str, Any]
    solver_success_round: float | None
    solver_success_archive: float | None
    solver_advantages: dict[str, list[float | None]]
    seconds: float


def group_advantages(rewards: Sequence[float | None]) -> list[float | None]:
    """Rewards of one group normalised to zero mean and unit spread; ``None`` (infra) stays out of it.

    >>> group_advantages([1.0, 0.0, None])
    [0.999998, -0.999998, None]
    >>> group_advantages([0.5, 0.5])
    [0.0, 0.0]
    """
    scored = [r for r in rewards if r is not None]
    if not scored:
        return [None] * len(rewards)
    mean = sum(scored) / len(scored)
    std = math.sqrt(sum((r - mean) ** 2 for r in scored) / len(scored))
    return [None if r is None else round((r - mean) / (std + 1e-6), 6) for r in rewards]


def difficulty_spread(p_hats: Sequence[float]) -> dict[str, Any]:
    """Quantiles and a five-bin histogram of the solver's success over archived envs.

    >>> difficulty_spread([0.0, 0.5, 1.0])["histogram"]
    [1, 0, 1, 0, 1]
    >>> difficulty_spread([])["n"]
    0
    """
    values = sorted(float(p) for p in p_hats)
    counts = [0] * (len(BINS) - 1)
    for p in values:
        counts[min(int(p * (len(BINS) - 1)), len(counts) - 1)] += 1
    out: dict[str, Any] = {"n": len(values), "histogram": counts, "bins": list(BINS)}
    if values:
        pick = lambda q: values[min(int(q * len(values)), len(values) - 1)]  # noqa: E731 (nearest rank)
        mean = sum(values) / len(values)
        out.update(min=values[0], q25=pick(0.25), median=pick(0.5), q75=pick(0.75), max=values[-1],
                   std=round(math.sqrt(sum((p - mean) ** 2 for p in values) / len(values)), 6))
    return out


def summarise(index: int, reward: float, info: dict[str, Any], turns: int) -> Sample:
    """The report's view of one design episode's last info (the design envs' documented keys)."""
    gates = info.get("gates") or []
    failed = next((g.get("name") for g in gates if isinstance(g, dict) and not g.get("passed", True)), None)
    comps = info.get("reward_components") or info
    components = {name: float(comps[name]) for name in COMPONENTS
                  if isinstance(comps.get(name), (int, float)) and not isinstance(comps.get(name), bool)}
    infra = info.get("infra_error") or None
    return Sample(index=index, reward=float(reward), outcome=str(info.get("outcome", "unknown")),
                  failed_gate=failed, sha256=info.get("sha256"), infra_error=infra, components=components,
                  turns=turns)


def design_group(env: Any, designer: Designer, brief_seed: int, sample_seeds: Sequence[int],
                 max_turns: int) -> list[Sample]:
    """The designer's answers to one brief, each then played as an episode of the design env.

    Every first answer is written from the same brief (the chat of one reset), before any is scored: a
    design env remembers its last result across resets, so scoring one answer would change the brief the
    next is written from. Each episode then starts from the same reset seed; its repairs (further turns)
    answer that episode's own gate report."""
    observation, info = env.reset(seed=brief_seed)
    brief = ChatHistory()
    brief.start(observation, info)
    answers = [_ask(designer, brief.messages(), env, derive_seed(seed, 0)) for seed in sample_seeds]
    samples = []
    for index, (answer, seed) in enumerate(zip(answers, sample_seeds)):
        if isinstance(answer, DesignerUnavailable):
            samples.append(Sample(index, 0.0, "infra", None, None, f"designer: {answer}", {}, 0))
            continue
        if index:
            env.reset(seed=brief_seed)
        samples.append(_play_answer(env, designer, brief, answer, seed, max_turns, index))
    return samples


def _ask(designer: Designer, messages: list[Message], env: Any, seed: int) -> str | DesignerUnavailable:
    try:
        return designer.design(messages, env, seed)
    except DesignerUnavailable as e:
        return e


def _play_answer(env: Any, designer: Designer, brief: ChatHistory, answer: str, seed: int, max_turns: int,
                 index: int) -> Sample:
    """Step ``answer``, then let the designer repair while the episode goes on (at most ``max_turns``)."""
    history = ChatHistory()
    history.system_prompt, history.first_observation = brief.system_prompt, brief.first_observation
    total = 0.0
    for turn in range(max_turns):
        if turn:
            answer = _ask(designer, history.messages(), env, derive_seed(seed, turn))
            if isinstance(answer, DesignerUnavailable):  # the repair never came: the episode so far, as infra
                sample = summarise(index, total, info, turn)
                sample.infra_error = f"designer: {answer}"
                return sample
        observation, reward, terminated, truncated, info = env.step(answer)
        total += float(reward)
        history.add(answer, observation)
        if terminated or truncated:
            break
    return summarise(index, total, info, turn + 1)


def make_design_env(config: SelfPlayConfig, solver: Any | None) -> Any:
    """The design env of ``config``: the solver, archive, ``k`` and backend passed where its constructor
    takes them (a design env without an archive, e.g. TaskDesign-v0, simply does not get one)."""
    import inspect

    import gymnasium

    import agentgym_envs  # noqa: F401  (registers the ids)
    from agentgym_envs.registration import load_entry_point

    if config.env_id not in gymnasium.registry:
        from agentgym_envs.registration import unknown_id_message

        raise SelfPlayError(unknown_id_message(config.env_id))
    entry = gymnasium.registry[config.env_id].entry_point
    cls = load_entry_point(entry) if isinstance(entry, str) else entry
    accepted = inspect.signature(cls).parameters
    wanted = {"solver": solver, "archive": config.archive, "k": config.k, "backend": config.backend}
    kwargs = {name: value for name, value in wanted.items() if name in accepted and value is not None}
    return gymnasium.make(config.env_id, **{**kwargs, **config.env_kwargs})


def run_selfplay(config: SelfPlayConfig, designer: Designer, solver: Any | None = None, *,
                 report_path: str | Path | None = None,
                 on_round: Callable[[RoundReport], None] | None = None) -> list[RoundReport]:
    """Run ``config.rounds`` rounds; write the JSON report after every round when ``report_path`` is given
    (a killed run keeps the rounds it finished) and call ``on_round`` with each round's report.

    An existing report at ``report_path`` written with the same config (``rounds`` aside) is continued: its
    rounds are kept and the new ones are numbered after them (seeded by their number, so they are new
    briefs). A fresh design env does not remember its last result, so a continued run is not byte-identical
    to an uninterrupted one. A report of another config is refused rather than overwritten.

    The run holds its archive's and its report's locks throughout (:func:`hold_locks`): a second run on
    either is refused with a :class:`SelfPlayError` at once, before it reads or writes anything."""
    with ExitStack() as locks:
        hold_locks(locks, config, report_path)
        previous = previous_rounds(report_path, config) if report_path is not None else []
        env = make_design_env(config, solver)
        reports: list[RoundReport] = []
        try:
            for r in range(len(previous), len(previous) + config.rounds):
                reports.append(play_round(env, designer, config, r))
                if report_path is not None:
                    write_report(report_path, config, reports, previous)
                if on_round is not None:
                    on_round(reports[-1])
        finally:
            env.close()
    return reports


def hold_locks(locks: ExitStack, config: SelfPlayConfig, report_path: str | Path | None) -> None:
    """Take the archive's writer lock and the report's lock (``.<report>.lock`` beside it) into ``locks``.

    Two runs on one archive would interleave their rounds and the last writer's report would replace the
    other's (which then could not continue it), so one run owns both; a second is refused in one line."""
    from .archive import ArchiveBusy, EnvArchive, exclusive

    try:
        locks.enter_context(EnvArchive(config.archive).writer())
        if report_path is not None:
            path = Path(report_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            locks.enter_context(exclusive(path.with_name(f".{path.name}.lock"), f"self-play report {path}"))
    except ArchiveBusy as e:
        raise SelfPlayError(str(e)) from None


def play_round(env: Any, designer: Designer, config: SelfPlayConfig, r: int) -> RoundReport:
    """One round: ``group_size`` answers to one brief, their advantages, and the archive afterwards."""
    began = time.perf_counter()
    brief_seed = derive_seed(config.seed, r)
    samples = design_group(env, designer, brief_seed, [derive_seed(config.seed, r, i) for i in
                                                       range(config.group_size)], config.max_turns)
    advantages = group_advantages([None if s.infra_error else s.reward for s in samples])
    for sample, advantage in zip(samples, advantages):
        sample.advantage = advantage
    accepted = [s for s in samples if s.outcome == "ok" and not s.infra_error]
    p_round = [s.components["p_hat"] for s in accepted if "p_hat" in s.components]
    view = archive_view(config.archive)
    p_archive = [v["p_hat"] for v in view.values()]
    return RoundReport(
        round=r, brief_seed=brief_seed, samples=samples, accepted=len(accepted), archive_size=len(view),
        difficulty=difficulty_spread(p_archive), solver_success_round=_mean(p_round),
        knobs=difficulty_spread([v["difficulty"] for v in view.values() if isinstance(v["difficulty"], (int, float))]),
        solver_success_archive=_mean(p_archive),
        solver_advantages={s.sha256: group_advantages([float(w) for w in view[s.sha256]["wins"]])
                           for s in accepted if s.sha256 in view},
        seconds=round(time.perf_counter() - began, 3))


def archive_view(path: str | Path) -> dict[str, dict[str, Any]]:
    """sha256 → the solver's success ``p_hat``, per-play ``wins`` and the module's ``difficulty`` knob, for
    every env in the archive at ``path`` whose record has play statistics (``record.json``'s ``play_stats``)."""
    from .archive import EnvArchive

    view: dict[str, dict[str, Any]] = {}
    for entry in EnvArchive(path).entries():
        play = entry.record.get("play_stats") or {}
        if isinstance(play.get("p_solver"), (int, float)):
            view[entry.sha] = {"p_hat": float(play["p_solver"]), "wins": [bool(w) for w in play.get("wins") or []],
                               "difficulty": entry.record.get("difficulty")}
    return dict(sorted(view.items()))


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def report_dict(config: SelfPlayConfig, reports: Sequence[RoundReport],
                previous: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The JSON report: the config and every round (``growth``: the archive's size after each round)."""
    rounds = [*previous, *(json.loads(json.dumps(asdict(r), default=str)) for r in reports)]
    return {"config": {**asdict(config), "rounds": len(rounds)}, "rounds": rounds,
            "growth": [r["archive_size"] for r in rounds],
            "solver_success": [r["solver_success_archive"] for r in rounds]}


def write_report(path: str | Path, config: SelfPlayConfig, reports: Sequence[RoundReport],
                 previous: Sequence[dict[str, Any]] = ()) -> None:
    """Write the JSON report atomically: a temp file of this writer's own (never shared with another
    process writing beside it) renamed over the old one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(report_dict(config, reports, previous), indent=1, sort_keys=True))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def previous_rounds(path: str | Path, config: SelfPlayConfig) -> list[dict[str, Any]]:
    """The rounds of the report at ``path`` if it was written with ``config`` (``rounds`` aside); [] if none."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        old, rounds = dict(data["config"]), list(data["rounds"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SelfPlayError(f"expected {path} to be a self-play report to continue, got an unreadable file "
                            f"({type(e).__name__}); move it away or pass another report path") from None
    new = json.loads(json.dumps(asdict(config), default=str))
    differ = sorted(k for k in set(old) | set(new) if k != "rounds" and old.get(k) != new.get(k))
    if differ:
        raise SelfPlayError(f"expected the config of the report {path} to continue it, got different "
                            f"{', '.join(differ)}; use the same options or another report path")
    return rounds


def format_round(report: RoundReport) -> str:
    """One printed line per round."""
    rewards = " ".join(f"{s.reward:+.2f}" + (f"[{s.failed_gate}]" if s.failed_gate else "") for s in report.samples)
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    return (f"round {report.round}: rewards {rewards} | accepted {report.accepted} | archive {report.archive_size} "
            f"| p̂ round {fmt(report.solver_success_round)} archive {fmt(report.solver_success_archive)} "
            f"| p̂ histogram {report.difficulty['histogram']} | {report.seconds:.1f} s")
