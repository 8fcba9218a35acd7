"""Where exported episodes come from: a results store, an env played by a policy SPEC, a training run's rollouts.

Each source is a :class:`~leaderboards.export.Source`: the ids of its records in a fixed order, then the
records after the first ``skip`` (so a resumed export neither plays nor reads what it already wrote).

* :class:`StoreSource` — every stored episode of a results store (or of the runs named), in the store's
  export order (:func:`leaderboards.episodes_view.stored_episodes`), with the start the store keeps. A store
  from before starts were kept has none: an episode's start is then replayed from its seed only where
  :mod:`leaderboards.replay` allows it (a store is untrusted data); the others are left out and listed in
  :attr:`StoreSource.refused`.
* :class:`EnvSource` — ``episodes`` episodes of one env played now by a policy SPEC (``expert``, ``random``,
  ``hf:tiny``, ``openai:…``), exactly as ``agentgym bench`` plays a suite entry (same seeds, same protocol
  wrapper), without a store.
* :class:`TrainRunSource` — the rollouts a training run dumped (``rollout.dump: true``,
  :mod:`trainer.collect.rollout_dump`): ``RUN_DIR/rollouts/step_*.jsonl``, already records, in step order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .episodes_view import (Start, StartReader, StartUnavailable, entry_verdicts, episode_keys, select_runs,
                            stored_episodes, unavailable_reason)
from .export import ExportError, make_record, read_jsonl
from .starts import stored_ids
from .store import open_store
from .suite import BUILTIN_DEFAULTS, BUILTIN_SAMPLING, Entry, _entry


def episode_record(*, id: str, source: str, policy: str, entry: Entry, episode: Any, start: Start,
                   meta: dict[str, Any]) -> dict[str, Any]:
    """The record of a played or stored episode (an :class:`~leaderboards.records.EpisodeRecord` or a
    :class:`~leaderboards.episodes_view.StoredEpisode`: both have the outcome fields and per-turn replies)."""
    steps = getattr(episode, "turns", None) or getattr(episode, "steps", [])
    turns = [{"reply": s.reply, "observation": s.observation, "reward": s.reward, "action": s.action,
              "action_valid": s.action_valid, "parse_error": s.parse_error} for s in steps]
    outcome = {"won": episode.won, "score": episode.score, "return": episode.ret, "terminated": episode.terminated,
               "truncated": episode.truncated}
    return make_record(id=id, source=source, env_id=entry.env_id, policy=policy, seed=episode.seed,
                       task_index=episode.task_index, system_prompt=start.system_prompt,
                       first_observation=start.first_observation, tools=start.tools, turns=turns, outcome=outcome,
                       meta={"entry": entry.key, "episode_index": episode.episode_index, "protocol": start.protocol,
                             "window": entry.window, "max_steps": entry.max_steps, **meta})


class StoreSource:
    """The stored episodes of ``store`` (all runs, or those in ``runs``) as they were when it was opened
    (a runner still writing the store adds none); read-only on the store."""

    def __init__(self, store: str | Path, runs: Sequence[str] | None = None):
        self.store = open_store(store, create=False)
        self.runs = select_runs(self.store, runs)
        self.refused: list[tuple[str, str]] = []
        """``(record id, why)`` of each episode left out: its start is not stored and may not be replayed."""
        self._verdicts = {run.id: entry_verdicts(run) for run in self.runs}
        self._keys = self._exportable(episode_keys(self.store, self.runs))
        self._reader = StartReader()

    def _exportable(self, keys: list[tuple[Any, str, int]]) -> list[tuple[Any, str, int]]:
        """``keys`` less the episodes whose start is neither stored nor allowed to be replayed (into ``refused``)."""
        stored, ids = stored_ids(self.store.db), {}
        for run in self.runs:
            ids.update({(run.id, key, index): episode_id for episode_id, key, index in self.store.db.execute(
                "SELECT id, entry, episode_index FROM episodes WHERE run_id = ? AND suite_version = ?",
                (run.id, run.suite_version))})
        kept = []
        for run, key, index in keys:
            entry, refusal = self._verdicts[run.id].get(key, (None, None))
            reason = None if ids[(run.id, key, index)] in stored else unavailable_reason(entry, refusal)
            if reason is None:
                kept.append((run, key, index))
            else:
                self.refused.append((self._id(run, key, index), reason))
        return kept

    def ids(self) -> list[str]:
        return [self._id(run, entry, index) for run, entry, index in self._keys]

    def records(self, skip: int = 0) -> Iterator[dict[str, Any]]:
        for ep in stored_episodes(self.store, self.runs, keys=self._keys, skip=skip):
            run, refusal = ep.run, self._verdicts[ep.run.id][ep.entry.key][1]
            try:
                start = self._reader.start(self.store.db, ep.episode_id, ep.entry, ep.episode_index, refusal)
            except StartUnavailable as e:  # an allowed replay that failed: the records so far are kept
                raise ExportError(f"{self._id(run, ep.entry.key, ep.episode_index)}: {e}; the records before it "
                                  "are kept") from None
            yield episode_record(id=self._id(run, ep.entry.key, ep.episode_index), source="store", policy=run.policy,
                                 entry=ep.entry, episode=ep, start=start,
                                 meta={"run": run.name, "suite": run.suite, "suite_version": run.suite_version,
                                       "task": ep.task, "repeat": ep.repeat})

    @staticmethod
    def _id(run: Any, entry: str, episode_index: int) -> str:
        return f"store:{run.name}/{run.suite}/v{run.suite_version}/{entry}/{episode_index}"

    def close(self) -> None:
        self._reader.close()
        self.store.close()


class EnvSource:
    """``episodes`` episodes of ``env_id`` played by ``policy`` (a SPEC): task ``t`` resets with ``seed + t``
    (and ``task_index = t`` on envs with a task list), one episode per task, as a one-entry suite would."""

    #: Tries per episode when the env or the policy's endpoint fails (as ``agentgym bench --max-attempts``).
    MAX_ATTEMPTS = 3

    def __init__(self, env_id: str, policy: str, *, episodes: int = 5, seed: int = 0, protocol: str = "react",
                 max_steps: int | None = None, kwargs: dict[str, Any] | None = None,
                 sampling: dict[str, Any] | None = None):
        from agentgym_envs.plugins import resolve_id

        from .policies import parse_spec

        from agentgym_envs.core.errors import UnknownEnvError

        try:
            env_id = resolve_id(env_id)  # module:id from the user's own command line: import the module
        except UnknownEnvError as e:
            raise ExportError(str(e)) from None
        item = {"env": env_id, "tasks": episodes, "seed": seed, "protocol": protocol, "max_steps": max_steps,
                "kwargs": kwargs or {}}
        self.entry = _entry(item, BUILTIN_DEFAULTS, None, "agentgym export --env")
        self.spec = parse_spec(policy)
        self.sampling = {**BUILTIN_SAMPLING, **(sampling or {})}
        self._policy: Any = None
        self._env: Any = None

    def ids(self) -> list[str]:
        return [f"env:{self.entry.key}/{self.spec.text}/seed{self.entry.seed}/{i}" for i in range(self.entry.episodes)]

    def records(self, skip: int = 0) -> Iterator[dict[str, Any]]:
        from agentgym_envs.policies import SamplingConfig

        from .episode import make_env, play_episode

        ids = self.ids()
        for i in range(skip, self.entry.episodes):
            if self._policy is None:  # built only when something is left to play
                self._policy, self._env = self.spec.build(), make_env(self.entry)
            episode = self._play(i, lambda: play_episode(self.entry, i, self._env, self._policy,
                                                         SamplingConfig(**self.sampling)))
            yield episode_record(id=ids[i], source="env", policy=self.spec.text, entry=self.entry, episode=episode,
                                 start=episode.start, meta={"sampling": self.sampling})

    def _play(self, index: int, play: Any) -> Any:
        """``play()``, retried on infrastructure failures as the runner does; a failure that stays is an
        :class:`ExportError` (the episodes written so far stay in the ``.part`` file for a rerun)."""
        from .episode import InfraFailed

        for attempt in range(1, self.MAX_ATTEMPTS + 1):
            try:
                return play()
            except InfraFailed as e:
                if attempt == self.MAX_ATTEMPTS:
                    raise ExportError(f"episode {index} of {self.entry.key} failed {attempt} times for infrastructure "
                                      f"reasons ({e}); the episodes before it are kept: rerun to resume") from e
            except Exception as e:  # the policy's own error (a wrong model name...): it will not fix itself
                raise ExportError(f"episode {index} of {self.entry.key}: {self.spec.text} failed "
                                  f"({type(e).__name__}: {str(e)[:300]}); the episodes before it are kept") from e

    def close(self) -> None:
        if self._env is not None:
            self._env.close()


class TrainRunSource:
    """The rollouts ``agentgym train`` dumped into ``run_dir/rollouts/`` (``rollout.dump: true``), step by step;
    episodes that ended in an infrastructure error (never trained on) are left out."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir) / "rollouts"
        self.files = sorted(self.dir.glob("step_*.jsonl")) if self.dir.is_dir() else []
        if not self.files:
            raise ExportError(f"{self.dir} holds no rollout dumps (step_*.jsonl); train with rollout.dump=true "
                              "(`agentgym train CONFIG rollout.dump=true`) to write them")

    def _lines(self) -> Iterator[dict[str, Any]]:
        for f in self.files:
            for line in read_jsonl(f):
                if line.get("dump_version") != 1:
                    raise ExportError(f"{f}: rollout dump version {line.get('dump_version')!r}, expected 1 "
                                      "(written by another agentgym version)")
                if line["infra_error"] is None:
                    yield line

    def ids(self) -> list[str]:
        return [_train_id(line) for line in self._lines()]

    def records(self, skip: int = 0) -> Iterator[dict[str, Any]]:
        for line in self._lines():
            if skip > 0:
                skip -= 1
                continue
            yield train_record(line)

    def close(self) -> None:
        pass


def _train_id(line: dict[str, Any]) -> str:
    return f"train:{line['run']}/step_{line['step']}/{line['index']}"


def train_record(line: dict[str, Any]) -> dict[str, Any]:
    """The trajectory record of one rollout dump line (:mod:`trainer.collect.rollout_dump`)."""
    messages, replies, rewards = line["messages"], line["replies"], line["rewards"]
    k = 1 if messages and messages[0]["role"] == "system" else 0
    rest = messages[k + 1:]
    pairs = [(rest[j]["content"], rest[j + 1]["content"]) for j in range(0, len(rest) - 1, 2)]
    valid = line["turn_valid"]
    turns = [{"reply": reply, "observation": observation, "reward": reward, "action": None,
              "action_valid": valid[j] if valid else None, "parse_error": None}
             for j, (reply, (_, observation), reward) in enumerate(zip(replies, pairs, rewards))]
    finish = line["finish"]
    outcome = {"won": line["won"], "score": None, "return": sum(t["reward"] for t in turns),
               "terminated": finish == "terminated", "truncated": finish in ("truncated", "context")}
    return make_record(id=_train_id(line), source="train", env_id=line["env_id"], policy=f"train:{line['run']}/step_"
                       f"{line['step']}", seed=line["reset_seed"], task_index=line["task_index"],
                       system_prompt=messages[0]["content"] if k else None,
                       first_observation=messages[k]["content"] if messages else "", tools=line["tools"], turns=turns,
                       outcome=outcome, meta={"run": line["run"], "step": line["step"], "index": line["index"],
                                              "group": line["group"], "protocol": line["protocol"], "finish": finish,
                                              "kwargs": line["kwargs"]})
