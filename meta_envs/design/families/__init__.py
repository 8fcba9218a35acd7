"""The task families of ``agentgym/TaskDesign-v0``: one module per family, each a :class:`~.base.Family`.

A family says what a designer may write (the JSON schema of its task parameters), how a config becomes a
playable env (a subclass of the family's own env whose every ``reset`` plays the configured instance), who
solves it (the family's scripted expert, ``expert_action()``), and which instances are held out
(``valid``/``test``): the gate compares a config's *instance hash* — a SHA-256 of the built instance's
content, not of the config's text, so a copy written differently is still a copy — with theirs.

Modules load on first use (``family(name)``): naming the families imports nothing heavy.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from .base import ConfigError, Family, instance_hash

FAMILY_MODULES: dict[str, str] = {
    "household": "meta_envs.design.families.household",
    "maze": "meta_envs.design.families.maze",
    "countdown": "meta_envs.design.families.countdown",
    "sudoku": "meta_envs.design.families.sudoku",
    "search": "meta_envs.design.families.search",
    "webshop": "meta_envs.design.families.webshop",
    "terminal": "meta_envs.design.families.terminal",
}
FAMILY_NAMES: tuple[str, ...] = tuple(FAMILY_MODULES)
#: The families a default TaskDesign-v0 draws from: all but ``terminal``, whose every play starts a
#: sandbox (seconds per config instead of milliseconds); ask for it with ``families=`` or ``family=``.
DEFAULT_FAMILIES: tuple[str, ...] = tuple(n for n in FAMILY_NAMES if n != "terminal")


class UnknownFamilyError(ValueError):
    """A family name that is not one of :data:`FAMILY_NAMES`."""


@lru_cache(maxsize=None)
def family(name: str) -> Family:
    """The family called ``name`` (its module imported on first use)."""
    if name not in FAMILY_MODULES:
        raise UnknownFamilyError(f"expected a family among {', '.join(FAMILY_NAMES)}, got {name!r}")
    return importlib.import_module(FAMILY_MODULES[name]).FAMILY


@lru_cache(maxsize=None)
def held_out_hashes(name: str) -> dict[str, str]:
    """Instance hash -> instance id of the family's held-out (``valid``/``test``) instances, once per process."""
    return {instance_hash(name, key): label for label, key in family(name).held_out()}


__all__ = ["ConfigError", "DEFAULT_FAMILIES", "FAMILY_NAMES", "Family", "UnknownFamilyError", "family",
           "held_out_hashes", "instance_hash"]
