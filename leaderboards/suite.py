"""Benchmark suites: versioned YAML files naming env ids, splits, task counts, seeds and step limits.

A suite is data, not code, so that a result can say exactly what it measured: the runner stores the suite's
name, version and :attr:`Suite.fingerprint` (a hash of the fully resolved entries) with every run, and refuses
to resume a run whose suite changed without a version bump. A suite names one version of each env: two
(``X-v0`` and ``X-v1``) are refused (why: :mod:`leaderboards.env_versions`).

File shape (``leaderboards/suites/<name>.yaml``)::

    name: household
    version: 1
    family: household                 # family suites only
    defaults: {split: valid_unseen, tasks: 10, max_steps: 40}
    sampling: {temperature: 0.0, max_new_tokens: 128}
    entries:
      - {env: agentgym/Household-v0, core: true}
      - {env: agentgym/Household-PickTwo-v0, max_steps: 50}

A suite may instead (or also) list ``families``: each named family suite contributes its ``core: true``
entries (all of them if none is marked), with the including suite's ``override`` in place of the family
suite's ``defaults`` (values an entry sets itself win). That is how ``core`` covers every family: adding a
family is one line under ``families:``.

Entry keys: ``env`` (required), ``split``, ``kwargs`` (make kwargs), ``tasks`` (distinct tasks), ``repeats``
(episodes per task, for pass@k), ``seed``, ``max_steps``, ``protocol``, ``window`` (chat turns kept), ``core``.
Task ``t`` of an entry resets with ``seed + t`` and, on envs with a finite task set, ``task_index = t``
(the first ``tasks`` tasks of the split); its repeats differ only in the policy's sampling seed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentgym_envs.seeding import episode_seed

from .env_versions import first_clash
from .errors import SuiteError

SUITES_DIR = Path(__file__).parent / "suites"
ENTRY_KEYS = ("env", "split", "kwargs", "tasks", "repeats", "seed", "max_steps", "protocol", "window", "core",
              "system_prompt")
SUITE_KEYS = ("name", "version", "description", "family", "defaults", "sampling", "entries", "families", "override")
SAMPLING_KEYS = ("temperature", "top_p", "max_new_tokens")
#: Values an entry gets when neither it nor its suite says otherwise.
#: ``max_steps: None`` means the env's registered ``max_episode_steps`` (or :data:`FALLBACK_MAX_STEPS`).
BUILTIN_DEFAULTS: dict[str, Any] = {"tasks": 5, "repeats": 1, "seed": 0, "max_steps": None, "protocol": "react",
                                    "window": None, "kwargs": {}, "system_prompt": None}
FALLBACK_MAX_STEPS = 50
BUILTIN_SAMPLING: dict[str, Any] = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 256}


@dataclass(frozen=True)
class Entry:
    """One env of a suite, fully resolved: ``tasks × repeats`` episodes."""

    env_id: str
    family: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    tasks: int = 5
    repeats: int = 1
    seed: int = 0
    max_steps: int = 30
    protocol: str = "react"
    window: int | None = None
    #: Replaces the env's system prompt (``None``: the env's; ``""``: none; ``" "``: an empty system turn).
    system_prompt: str | None = None

    @property
    def key(self) -> str:
        """The entry's name in the store: the env id, plus its make kwargs when there are any."""
        if not self.kwargs:
            return self.env_id
        return self.env_id + "?" + "&".join(f"{k}={self.kwargs[k]}" for k in sorted(self.kwargs))

    @property
    def episodes(self) -> int:
        return self.tasks * self.repeats

    def task_of(self, episode_index: int) -> tuple[int, int]:
        """``(task, repeat)`` of an episode index (episodes of one task are adjacent)."""
        return divmod(episode_index, self.repeats)

    def reset_seed(self, episode_index: int) -> int:
        return episode_seed(self.seed, self.task_of(episode_index)[0])

    def stream(self) -> int:
        """A stable 32-bit id of this entry, mixed into the policy's sampling seeds."""
        return zlib.crc32(self.key.encode())


@dataclass(frozen=True)
class Suite:
    """A resolved suite: what the runner plays and the store records."""

    name: str
    version: int
    entries: tuple[Entry, ...]
    sampling: dict[str, Any]
    description: str = ""
    source: str = ""

    @property
    def fingerprint(self) -> str:
        """A hash of everything that affects results (not the description or the file path)."""
        payload = {"name": self.name, "version": self.version, "sampling": self.sampling,
                   "entries": [asdict(e) for e in self.entries]}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def episodes(self) -> int:
        return sum(e.episodes for e in self.entries)

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "version": self.version, "sampling": self.sampling,
                           "entries": [asdict(e) for e in self.entries]}, sort_keys=True)


def suite_names() -> list[str]:
    """Names of the suites shipped with the package."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))


def load_suite(name_or_path: str | Path) -> Suite:
    """A suite by name (``core``, ``smoke``, a family) or by path to a YAML file, resolved and validated."""
    return _resolve(_read(name_or_path), stack=())


def _read(name_or_path: str | Path) -> tuple[dict[str, Any], Path]:
    path = Path(name_or_path)
    if not (path.suffix in (".yaml", ".yml") or path.is_file()):  # a folder named like a suite is not one
        path = SUITES_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            close = difflib.get_close_matches(str(name_or_path), suite_names(), n=2)
            hint = f" Did you mean {' or '.join(close)}?" if close else ""
            raise SuiteError(f"no suite named {str(name_or_path)!r}; expected one of {', '.join(suite_names())} "
                             f"or a path to a .yaml file.{hint}")
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise SuiteError(f"cannot read suite file {path}: {e}") from None
    if not isinstance(data, dict):
        raise SuiteError(f"expected a YAML mapping at the top of {path}, got {type(data).__name__}")
    return data, path


def _resolve(raw: tuple[dict[str, Any], Path], stack: tuple[str, ...]) -> Suite:
    data, path = raw
    where = str(path)
    _check_keys(data, SUITE_KEYS, where)
    name, version = data.get("name"), data.get("version")
    if not isinstance(name, str) or not name:
        raise SuiteError(f"{where}: expected a non-empty string 'name', got {name!r}")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SuiteError(f"{where}: expected an integer 'version' >= 1 (bump it whenever results would change), "
                         f"got {version!r}")
    if name in stack:
        raise SuiteError(f"{where}: suite {name!r} includes itself (through {' -> '.join(stack)})")
    defaults = {**BUILTIN_DEFAULTS, **_mapping(data, "defaults", where)}
    _check_keys(defaults, ENTRY_KEYS, f"{where}: defaults")
    entries = [_entry(item, defaults, data.get("family"), where) for item in _list(data, "entries", where)]
    for family in _list(data, "families", where):
        entries.extend(_included(family, _mapping(data, "override", where), stack + (name,), where))
    if not entries:
        raise SuiteError(f"{where}: a suite needs 'entries' or 'families'; it has neither")
    _check_unique(entries, where)
    _check_one_version_each(entries, where)
    sampling = {**BUILTIN_SAMPLING, **_mapping(data, "sampling", where)}
    _check_keys(sampling, SAMPLING_KEYS, f"{where}: sampling")
    return Suite(name, version, tuple(entries), sampling, str(data.get("description", "")).strip(), where)


def _included(family: Any, override: dict[str, Any], stack: tuple[str, ...], where: str) -> list[Entry]:
    """The entries a family suite contributes to an including suite (its ``core: true`` ones, else all).

    ``override`` replaces the family suite's ``defaults``, not what an entry sets itself: an entry that
    says ``tasks: 9`` (a split with nine tasks) keeps it.
    """
    if not isinstance(family, str):
        raise SuiteError(f"{where}: 'families' lists suite names, got {family!r}")
    _check_keys(override, ENTRY_KEYS, f"{where}: override")
    data, path = _read(family)
    marked = [e for e in data.get("entries") or [] if isinstance(e, dict) and e.get("core")]
    defaults = {**_mapping(data, "defaults", str(path)), **{k: v for k, v in override.items() if k != "core"}}
    data = {**data, "defaults": defaults, "entries": marked or data.get("entries")}
    return list(_resolve((data, path), stack).entries)


def _entry(item: Any, defaults: dict[str, Any], family: str | None, where: str) -> Entry:
    """An :class:`Entry` from a YAML item (a mapping or a bare env id) on top of ``defaults``, validated."""
    if isinstance(item, str):
        item = {"env": item}
    if not isinstance(item, dict):
        raise SuiteError(f"{where}: each entry is a mapping like {{env: agentgym/Maze-v0, tasks: 5}}, got {item!r}")
    _check_keys(item, ENTRY_KEYS + ("family", "env_id"), f"{where}: entry {item.get('env')!r}")
    values = {**defaults, **item}
    env_id = _check_env(values.get("env") or values.get("env_id"), where)
    kwargs = dict(values.get("kwargs") or {})
    if values.get("split") is not None:
        kwargs["split"] = values["split"]
    if values["max_steps"] is None:
        values["max_steps"] = _registered_limit(env_id)
    for key in ("tasks", "repeats", "max_steps"):
        _positive(values[key], key, f"{where}: {env_id}")
    if not isinstance(values["seed"], int) or values["seed"] < 0:
        raise SuiteError(f"{where}: {env_id}: seed must be an integer >= 0, got {values['seed']!r}")
    if values["window"] is not None:
        _positive(values["window"], "window", f"{where}: {env_id}")
    _check_protocol(values["protocol"], f"{where}: {env_id}")
    if values["system_prompt"] is not None and not isinstance(values["system_prompt"], str):
        raise SuiteError(f"{where}: {env_id}: system_prompt must be a string, got {values['system_prompt']!r}")
    return Entry(env_id=env_id, family=values.get("family") or _family_of(env_id, family), kwargs=kwargs,
                 tasks=values["tasks"], repeats=values["repeats"], seed=values["seed"], max_steps=values["max_steps"],
                 protocol=values["protocol"], window=values["window"], system_prompt=values["system_prompt"])


def _check_env(env_id: Any, where: str) -> str:
    import gymnasium

    import agentgym_envs  # noqa: F401  (registers the ids)
    from agentgym_envs.core.errors import UnknownEnvError
    from agentgym_envs.plugins import resolve_id
    from agentgym_envs.registration import catalogue, unknown_id_message

    if not isinstance(env_id, str) or not env_id:
        raise SuiteError(f"{where}: every entry needs 'env: <env id>', got {env_id!r}")
    try:  # module:id names an installed env package (a suite may not pick any other module to import)
        env_id = resolve_id(env_id, trusted=False)
    except UnknownEnvError as e:
        raise SuiteError(f"{where}: {e}") from None
    multi = {e.id for e in catalogue() if e.multi_agent}
    if env_id in multi:
        raise SuiteError(f"{where}: {env_id} is a multi-agent env; list its single-agent -VsScripted/-VsRandom id instead")
    if env_id not in gymnasium.registry:
        raise SuiteError(f"{where}: {unknown_id_message(env_id)}")
    return env_id


def _registered_limit(env_id: str) -> int:
    import gymnasium

    return gymnasium.registry[env_id].max_episode_steps or FALLBACK_MAX_STEPS


def _family_of(env_id: str, suite_family: str | None) -> str:
    from agentgym_envs.registration import catalogue

    for e in catalogue():
        if e.id == env_id:
            return e.family
    return suite_family or "other"


def _check_protocol(name: Any, where: str) -> None:
    from agentgym_envs.protocols import protocol_names

    names = protocol_names()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1) if isinstance(name, str) else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SuiteError(f"{where}: unknown action protocol {name!r}{hint}; protocol must be one of {', '.join(names)}")


def _positive(value: Any, key: str, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SuiteError(f"{where}: {key} must be an integer >= 1, got {value!r}")


def _check_keys(data: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else f" Known keys: {', '.join(allowed)}."
            raise SuiteError(f"{where}: unknown key {key!r}.{hint}")


def _check_unique(entries: list[Entry], where: str) -> None:
    seen: set[str] = set()
    for e in entries:
        if e.key in seen:
            raise SuiteError(f"{where}: {e.key} appears twice; give the copies different kwargs or merge them")
        seen.add(e.key)


def _check_one_version_each(entries: list[Entry], where: str) -> None:
    """Refuse two versions of one env (``X-v0`` and ``X-v1``): they are different tasks, and a suite's numbers
    pool its entries (:mod:`leaderboards.env_versions`)."""
    clash = first_clash((e.env_id, where) for e in entries)
    if clash:
        (old, _), (new, _) = clash
        raise SuiteError(f"{where}: names {old} and {new}, two versions of one env; a suite measures one version of "
                         "each env (results of different versions must not mix): keep one of them")


def _mapping(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise SuiteError(f"{where}: '{key}' must be a mapping, got {type(value).__name__}")
    return dict(value)


def _list(data: dict[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise SuiteError(f"{where}: '{key}' must be a list, got {type(value).__name__}")
    return value
