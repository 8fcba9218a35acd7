"""Which stored entries may be replayed: the trust boundary between a results store and this machine.

A store is a file someone may have sent you. Its ``runs.suite_json`` says which env ids and make kwargs its
episodes were played with, and replaying an episode's start means building that env here, as you. Some
kwargs choose what runs or whom it talks to (``Generated-v0``'s ``backend`` and ``archive``, a meta-env's
``actor`` spec, a path, a URL): replaying them as the store says would run the store's code on the host or
send your prompts and API key to the store's host. So the viewer and the exporter read starts from the
store (:mod:`leaderboards.starts`) and replay only an entry that

* is, field for field, an entry of a suite this installation ships, under the same suite name, version and
  fingerprint (what this installation's own code would play), or
* names a registered env id with only plain settings: the keys in :data:`PLAIN_KWARGS`, each a number, a
  boolean or a short word (no path, no URL, no spec).

Anything else is refused with the reason (:func:`replay_refusal`), and the caller shows it instead of the start.
The store's own fingerprint column is not trusted: the entry itself must equal the shipped one.

>>> from leaderboards.suite import Entry
>>> replay_refusal("mine", 1, "0" * 16, Entry("agentgym/Maze-Easy-v0", "examples", {"split": "test"}))
>>> print(replay_refusal("mine", 1, "0" * 16, Entry("agentgym/Generated-v0", "design", {"backend": "unsafe"}))[:85])
refused to replay this store's entry: its make kwarg 'backend' is not a plain setting
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from typing import Any

from .suite import Entry

PLAIN_KWARGS = frozenset({"split", "difficulty", "level", "size", "sizes", "width", "height", "hops",
                          "num_tasks", "dense_reward", "family", "n_probes", "n_shown", "max_ops"})
"""Make kwargs a store may set for a replay: settings of the shipped envs, never code, paths, hosts or specs."""
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_REFUSED = "refused to replay this store's entry: "
_ADVICE = (" (a results store is data: only entries of a suite this installation ships, or plain settings such as "
           "split and difficulty, are rebuilt from it)")


def replay_refusal(suite: str, version: int, fingerprint: str, entry: Entry) -> str | None:
    """Why ``entry`` of a stored run of ``suite`` v``version`` must not be replayed here, or ``None`` if it may."""
    if _shipped_entry(suite, version, fingerprint, entry):
        return None
    problem = _entry_problem(entry)
    return None if problem is None else _REFUSED + problem + _ADVICE


def _entry_problem(entry: Entry) -> str | None:
    """What makes ``entry`` (not from a shipped suite) unsafe or unusable to rebuild, or ``None``."""
    import gymnasium

    import agentgym_envs  # noqa: F401  (registers the ids)
    from agentgym_envs.protocols import protocol_names

    env_id = entry.env_id
    if not isinstance(env_id, str) or ":" in env_id or env_id not in gymnasium.registry:
        return f"its env id {str(env_id)[:100]!r} is not registered here"  # "module:Id" would import a module
    for name in ("tasks", "repeats", "seed", "max_steps"):
        value = getattr(entry, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"its {name} {str(value)[:40]!r} is not a whole number"
    if entry.protocol not in protocol_names():
        return f"its protocol {str(entry.protocol)[:40]!r} is not one of {', '.join(protocol_names())}"
    if not isinstance(entry.kwargs, dict):
        return "its make kwargs are not a mapping"
    refused = [str(key)[:60] for key in sorted(entry.kwargs, key=str) if key not in PLAIN_KWARGS]
    if refused:
        names = ", ".join(map(repr, refused))
        return (f"its make kwarg {names} is not a plain setting" if len(refused) == 1
                else f"its make kwargs {names} are not plain settings")
    for key, value in entry.kwargs.items():
        if not _plain(value):
            return f"its make kwarg {key!r} = {str(value)[:60]!r} is not a number, a boolean or a short word"
    return None


def _plain(value: Any) -> bool:
    if isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, str):
        return _WORD.fullmatch(value) is not None and ".." not in value
    if isinstance(value, list) and len(value) <= 16:
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    return False


def _shipped_entry(suite: str, version: int, fingerprint: str, entry: Entry) -> bool:
    """Whether ``entry`` is one of the entries of the shipped suite with this name, version and fingerprint."""
    try:
        key = json.dumps(dataclasses.asdict(entry), sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False
    shipped = _shipped_suites().get((suite, version))
    return shipped is not None and shipped[0] == fingerprint and key in shipped[1]


@functools.lru_cache(maxsize=1)
def _shipped_suites() -> dict[tuple[str, int], tuple[str, frozenset[str]]]:
    """``(name, version) -> (fingerprint, entries as JSON)`` of every suite shipped with this installation."""
    from .errors import SuiteError
    from .suite import load_suite, suite_names

    found = {}
    for name in suite_names():
        try:
            suite = load_suite(name)
        except SuiteError:  # a shipped suite naming an env this installation lacks (an extra not installed)
            continue
        entries = frozenset(json.dumps(dataclasses.asdict(e), sort_keys=True) for e in suite.entries)
        found[(suite.name, suite.version)] = (suite.fingerprint, entries)
    return found
