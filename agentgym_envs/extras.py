"""Optional extras: which importable modules each ``pip install 'agentgym[EXTRA]'`` brings, and the error a
person gets when one is missing.

The base install is gymnasium, PettingZoo and numpy. A family that needs more registers its ids with
``extra=`` (:func:`agentgym_envs.registration.register_env`): ``agentgym list`` then marks the ids whose extra is
not installed, and making one raises :class:`MissingExtra`, one line naming the extra, instead of a raw
``No module named 'bm25s'`` from deep inside a constructor. ``pyproject.toml`` is the source of the
requirements; ``tests/test_extras.py`` checks that every module named here comes from its extra there.

>>> install_hint("search")
"pip install 'agentgym[search]'"
"""

from __future__ import annotations

import importlib.util

from .core.errors import AgentGymError

#: extra -> the top-level modules it provides that the code imports (not every transitive dependency).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "web": ("bm25s",),  # and selenium, which only WebShop-Browser-v0 imports (it reports a missing browser itself)
    "games": ("textworld",),
    "search": ("bm25s",),
    "design": ("bm25s",),
    "skills": ("yaml", "bm25s"),
    "train": ("torch", "transformers", "tokenizers", "peft", "yaml", "rich", "jinja2"),
    "leaderboards": ("yaml", "matplotlib", "platformdirs", "rich"),
    "sandbox": ("docker", "yaml"),
    "plot": ("matplotlib",),
    "export": ("datasets", "rich"),
    "gateway": ("openai",),
    "models": ("gguf", "accelerate"),
    "ray": ("ray",),
    "wandb": ("wandb",),
    "gpu": ("triton",),
}


class MissingExtra(AgentGymError, ModuleNotFoundError):
    """Something needs an optional extra that is not installed; the message names the extra to install."""

    def __init__(self, what: str, extra: str, missing: list[str]):
        super().__init__(f"{what} needs the {extra!r} extra (missing: {', '.join(missing)}): {install_hint(extra)}")
        self.name, self.extra, self.missing = missing[0] if missing else None, extra, missing


def install_hint(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'agentgym[{extra}]'"


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (found without importing them: cheap)."""
    return [m for m in EXTRA_MODULES[extra] if importlib.util.find_spec(m) is None]


def require_extra(extra: str, what: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` is installed."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtra(what, extra, missing)


def extra_providing(module: str, prefer: tuple[str, ...] = ()) -> str | None:
    """The extra that installs ``module`` (a top-level name), the first of ``prefer`` that does if any."""
    for extra in (*prefer, *EXTRA_MODULES):
        if module in EXTRA_MODULES.get(extra, ()):
            return extra
    return None
