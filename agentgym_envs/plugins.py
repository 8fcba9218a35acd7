"""Entry-point groups through which other parts extend the env package without it importing them.

``agentgym.commands`` adds ``agentgym`` subcommands (read by ``cli/main.py``); ``agentgym.envs`` names
modules that register env ids when imported (``meta_envs.register``; a third-party env package can add
its own). The dependency points from those parts to this one: ``import agentgym_envs`` imports each named
module once, after its own families, so ``gymnasium.make`` finds their ids too.

An id may be written ``module:agentgym/Name-v0`` wherever one is taken, as ``gymnasium.make`` allows
(:func:`resolve_id`). From the command line the module is imported; from a file someone else made (a suite)
it must be an installed env package (one with an ``agentgym.envs`` entry point), since an untrusted file must
not choose which code this machine runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from importlib.metadata import EntryPoint, distributions

from .core.errors import UnknownEnvError

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


def env_packages() -> set[str]:
    """Top-level packages of the installed ``agentgym.envs`` entries (``meta_envs``, a scaffolded ``my_env`` …)."""
    return {entry.value.partition(":")[0].split(".")[0] for entry in registered_entries(ENV_GROUP)}


def resolve_id(spec: str, *, trusted: bool = True) -> str:
    """The env id of ``spec``: ``agentgym/Name-v0`` as is, or ``module:agentgym/Name-v0`` with ``module`` imported
    first (it registers the id), as ``gymnasium.make`` does.

    ``trusted=False`` (the id comes from a file someone else made, such as a suite) imports only an installed env
    package (:func:`env_packages`) and raises :class:`UnknownEnvError` for any other module.

    >>> resolve_id("agentgym/Maze-v0"), resolve_id("agentgym_envs:agentgym/Maze-v0")
    ('agentgym/Maze-v0', 'agentgym/Maze-v0')
    >>> resolve_id("os:agentgym/Maze-v0", trusted=False)
    Traceback (most recent call last):
    ...
    agentgym_envs.core.errors.UnknownEnvError: 'os:agentgym/Maze-v0' names module 'os', which is not an installed agentgym env package (none of its agentgym.envs entry points): install the package (pip install -e PATH) or write the bare id
    """
    module, sep, env_id = spec.partition(":")
    if not sep:
        return spec
    if not module or not env_id:
        raise UnknownEnvError(f"expected an env id or module:env_id (e.g. my_env:agentgym/MyEnv-v0), got {spec!r}")
    allowed = env_packages() | {__package__}
    if not trusted and module.split(".")[0] not in allowed:
        raise UnknownEnvError(f"{spec!r} names module {module!r}, which is not an installed agentgym env package (none "
                              f"of its {ENV_GROUP} entry points): install the package (pip install -e PATH) or write "
                              "the bare id")
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or not (module + ".").startswith(e.name + "."):  # a dependency missing: the module's bug
            raise
        raise UnknownEnvError(f"{spec!r}: no module named {module!r} here; install the env package that defines "
                              f"{env_id} (pip install -e PATH)") from None
    return env_id
