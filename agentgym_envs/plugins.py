"""Entry-point groups through which other parts extend the env package without it importing them.

``agentgym.commands`` adds ``agentgym`` subcommands (read by ``cli/main.py``); ``agentgym.envs`` names
modules that register env ids when imported (``meta_envs.register``; a third-party env package can add
its own). The dependency points from those parts to this one: ``import agentgym_envs`` imports each named
module once, after its own families, so ``gymnasium.make`` finds their ids too.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from importlib.metadata import EntryPoint, distributions

ENV_GROUP = "agentgym.envs"


def registered_entries(group: str) -> Iterator[EntryPoint]:
    """The group's entries over every distribution on the path, not only the first ``agentgym`` found:
    a stale ``agentgym.egg-info`` in the working directory (left by a legacy build) would otherwise
    shadow the installed metadata and hide the other parts' entries."""
    seen: set[str] = set()
    for dist in distributions():
        for entry in dist.entry_points.select(group=group):
            if entry.value not in seen:
                seen.add(entry.value)
                yield entry


def load_env_plugins() -> list[str]:
    """Import every ``agentgym.envs`` module (each registers its ids); the modules loaded, in name order.

    An entry naming a package that is not installed (stale metadata) is skipped; any other import error is
    a bug in that module and is raised."""
    loaded = []
    for entry in sorted(registered_entries(ENV_GROUP), key=lambda e: e.name):
        module = entry.value.partition(":")[0]
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module.split(".")[0]:
                raise
            continue
        loaded.append(module)
    return loaded
