"""The env catalogue: ids, one-line descriptions, and creation with helpful errors.

Single-agent envs are registered with :func:`gymnasium.register` (so ``gymnasium.make`` finds them) and
recorded here with a family and description (for ``agentgym list`` and the README). Multi-agent
PettingZoo envs are recorded here only and built with :func:`make_multi`.
Entry points are strings so that importing the package stays fast: modules load on first ``make``.
"""

from __future__ import annotations

import difflib
import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import gymnasium

from .core.errors import UnknownEnvError
from .extras import MissingExtra, missing_modules

ID_PATTERN = re.compile(r"^agentgym/[A-Z][A-Za-z0-9]*(-[A-Z0-9][A-Za-z0-9]*)*-v\d+$")


@dataclass(frozen=True)
class CatalogueEntry:
    id: str
    family: str
    description: str
    entry_point: str
    multi_agent: bool = False
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: the optional extra the env needs beyond the base install (``pip install 'agentgym[<extra>]'``), if any
    extra: str | None = None

    def missing(self) -> list[str]:
        """The modules of :attr:`extra` not installed here (empty when the env can be made)."""
        return missing_modules(self.extra) if self.extra else []


_CATALOGUE: dict[str, CatalogueEntry] = {}


def register_env(
    id: str,
    entry_point: str,
    *,
    family: str,
    description: str,
    max_episode_steps: int | None = None,
    kwargs: dict[str, Any] | None = None,
    extra: str | None = None,
) -> None:
    """Register a single-agent text env under ``agentgym/<Family>[-<Variant>]-v<N>``.

    ``extra`` names the optional extra the env needs (:data:`agentgym_envs.extras.EXTRA_MODULES`). Where it is
    not installed, the id stays listed but ``gymnasium.make`` raises :class:`~agentgym_envs.extras.MissingExtra`
    (one line naming the extra) before importing anything of the env."""
    _check_id(id)
    entry = CatalogueEntry(id, family, description, entry_point, False, dict(kwargs or {}), extra)
    creator: str | Callable[..., Any] = _NeedsExtra(id, extra, entry.missing()) if entry.missing() else entry_point
    gymnasium.register(id=id, entry_point=creator, max_episode_steps=max_episode_steps, kwargs=kwargs or {})
    _CATALOGUE[id] = entry


def register_multi(id: str, entry_point: str, *, family: str, description: str, kwargs: dict[str, Any] | None = None,
                   extra: str | None = None) -> None:
    """Record a multi-agent (PettingZoo) env; create it with :func:`make_multi`."""
    _check_id(id)
    _CATALOGUE[id] = CatalogueEntry(id, family, description, entry_point, True, dict(kwargs or {}), extra)


class _NeedsExtra:
    """The entry point of an id whose extra is missing: making it says which extra to install."""

    def __init__(self, id: str, extra: str, missing: list[str]):
        self.id, self.extra, self.missing = id, extra, missing

    def __call__(self, **kwargs: Any) -> Any:
        raise MissingExtra(self.id, self.extra, self.missing)


def catalogue() -> list[CatalogueEntry]:
    """Every registered env, sorted by family then id."""
    return sorted(_CATALOGUE.values(), key=lambda e: (e.family, e.id))


def env_ids(family: str | None = None) -> list[str]:
    """Ids of single-agent envs (optionally of one family)."""
    return [e.id for e in catalogue() if not e.multi_agent and (family is None or e.family == family)]


def multi_ids() -> list[str]:
    """Ids of multi-agent envs."""
    return [e.id for e in catalogue() if e.multi_agent]


def make(id: str, *, protocol: Any = None, max_turns: int | None = None, system_prompt: str | None = None,
         **kwargs: Any) -> gymnasium.Env:
    """The one constructor of envs for play: ``gymnasium.make`` with a did-you-mean error, behind an action
    protocol when asked. The trainer's ``PlaySpec.make`` and the leaderboards' ``make_env`` call it.

    ``protocol`` is a protocol name (``"plain"``, ``"react"``, ``"tags"``, ``"tool_calls"``) or instance:
    the env is wrapped in :class:`~agentgym_envs.protocols.ActionProtocolWrapper`, which parses raw model
    replies and reports the native action it passed on as ``info["native_action"]``. ``max_turns`` caps the
    replies per episode, parsed or not (the wrapper truncates at the cap; default: the id's registered
    ``max_episode_steps``); it needs a protocol, since the wrapper counts the turns. ``system_prompt`` replaces
    the env's prompt before the protocol's format instructions (``""``: no system message; whitespace only:
    an empty system turn, which keeps a chat template's default system turn out); it needs a protocol too.
    Every other keyword
    goes to ``gymnasium.make`` (``split=``, ``max_episode_steps=`` …).

    >>> env = make("agentgym/Maze-Easy-v0", protocol="tags", max_turns=3)
    >>> env.max_turns, env.reset(seed=0)[1]["system_prompt"].count("<action>") > 0
    (3, True)
    """
    if ":" not in id and id not in gymnasium.registry:
        raise UnknownEnvError(unknown_id_message(id))
    if max_turns is not None and protocol is None:
        raise ValueError(f"max_turns={max_turns} is counted by the protocol wrapper: expected protocol= as well "
                         "(e.g. protocol='plain'), got protocol=None")
    if system_prompt is not None and protocol is None:
        raise ValueError("system_prompt= is set by the protocol wrapper: expected protocol= as well (e.g. protocol='plain')")
    env = gymnasium.make(id, **kwargs)
    if protocol is not None:
        from .protocols import ActionProtocolWrapper

        env = ActionProtocolWrapper(env, protocol, max_turns=max_turns, system_prompt=system_prompt)
    return env


def make_multi(id: str, *, parallel: bool = False, **kwargs: Any) -> Any:
    """Create a registered multi-agent env: a PettingZoo AEC env, or with ``parallel=True`` a Parallel env.

    A simultaneous-move game has its own ``parallel_env`` beside its ``env`` entry point; an AEC env whose
    metadata says ``is_parallelizable`` is converted with PettingZoo's ``aec_to_parallel``; a turn-based game
    has no Parallel form (every agent must act at each parallel step) and raises ``ValueError``.

    >>> env = make_multi("agentgym/RockPaperScissors-v0", parallel=True, rounds=3)
    >>> observations, infos = env.reset(seed=0)
    >>> sorted(observations), env.metadata["is_parallelizable"]
    (['player_0', 'player_1'], True)
    """
    entry = _CATALOGUE.get(id)
    if entry is None or not entry.multi_agent:
        raise UnknownEnvError(unknown_id_message(id, multi_ids()))
    if entry.missing():
        raise MissingExtra(id, entry.extra or "", entry.missing())
    kwargs = {**entry.kwargs, **kwargs}
    if not parallel:
        return load_entry_point(entry.entry_point)(**kwargs)
    module, _, _ = entry.entry_point.partition(":")
    own = getattr(importlib.import_module(module), "parallel_env", None)
    if own is not None:
        return own(**kwargs)
    aec = load_entry_point(entry.entry_point)(**kwargs)
    if not aec.metadata.get("is_parallelizable", False):
        aec.close()
        raise ValueError(f"{id} is turn-based: PettingZoo's Parallel API needs every agent to act at each step; "
                         f"expected parallel=False (the AEC env), got parallel=True")
    from pettingzoo.utils.conversions import aec_to_parallel

    return aec_to_parallel(aec)


def load_entry_point(entry_point: str) -> Callable[..., Any]:
    module, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module), attr)


def unknown_id_message(id: str, known: list[str] | None = None) -> str:
    known = known if known is not None else [e.id for e in catalogue()]
    # Compare without the shared "agentgym/" prefix, which would make every id look close.
    by_name = {k.removeprefix("agentgym/"): k for k in known}
    close = [by_name[n] for n in difflib.get_close_matches(id.removeprefix("agentgym/"), list(by_name), n=3, cutoff=0.6)]
    hint = f" Did you mean {', '.join(close)}?" if close else " Run `agentgym list` to see every id."
    return f"No env registered as {id!r}.{hint}"


def _check_id(id: str) -> None:
    if not ID_PATTERN.match(id):
        raise ValueError(f"env ids look like agentgym/<Family>[-<Variant>]-v<N> (e.g. agentgym/Maze-Easy-v0), got {id!r}")
