"""The training recipes that ship with the package: ``trainer/configs/*.yaml`` (``configs/`` in a checkout links
to them), so a pip-installed package can list and copy them (``agentgym configs list|copy``).

Each recipe's first comment line says what it trains; ``agentgym train FILE`` runs a copy.

>>> "quickstart" in recipes() and recipe_summary("quickstart").startswith("The settings of `agentgym quickstart`")
True
"""

from __future__ import annotations

import shutil
from pathlib import Path

#: where the recipes live, inside the installed package
RECIPES_DIR = Path(__file__).resolve().parent / "configs"


def recipes() -> dict[str, Path]:
    """Every shipped recipe: name (the file's stem) -> path, sorted by name."""
    return {p.stem: p for p in sorted(RECIPES_DIR.glob("*.yaml"))}


def recipe_summary(name: str) -> str:
    """The first comment line of recipe ``name`` (empty if it has none)."""
    for line in recipes()[name].read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


def copy_recipe(name: str, dest: str | Path, *, overwrite: bool = False) -> Path:
    """Copy recipe ``name`` to ``dest`` (a file, or a folder that gets ``NAME.yaml``); the path written.

    Raises ``KeyError`` for an unknown name and ``FileExistsError`` rather than overwrite a file unasked."""
    source = recipes()[name.removesuffix(".yaml")]
    target = Path(dest)
    if target.is_dir():
        target = target / source.name
    if target.exists() and not overwrite:
        raise FileExistsError(str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target
