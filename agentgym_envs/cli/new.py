"""``agentgym new NAME``: scaffold an env package and a test that passes ``agentgym check``.

Creates ``NAME/__init__.py`` (registration), ``NAME/env.py`` (a small working TextEnv to edit) and
``tests/test_NAME.py``. Check it with ``agentgym check NAME:agentgym/<Name>-v0``.
"""

from __future__ import annotations

import argparse
import re
from importlib import resources
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="python package name for the env (snake_case), e.g. my_env")
    parser.add_argument("--dir", default=".", help="where to create it (default: current directory)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")


def render(name: str) -> dict[str, str]:
    """Files of the scaffold, path -> content."""
    class_name = "".join(part.capitalize() for part in name.split("_"))
    env_id = f"agentgym/{class_name}-v0"
    values = {"name": name, "class_name": class_name, "env_id": env_id}
    files = {}
    for template, target in (("init.py.tmpl", f"{name}/__init__.py"), ("env.py.tmpl", f"{name}/env.py"),
                             ("test.py.tmpl", f"tests/test_{name}.py")):
        text = resources.files("agentgym_envs.cli").joinpath("templates", template).read_text()
        files[target] = text.format(**values)
    return files


def run(args: argparse.Namespace) -> int:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", args.name):
        print(f"agentgym new: NAME must be a snake_case python identifier (e.g. my_env), got {args.name!r}")
        return 2
    root = Path(args.dir)
    files = render(args.name)
    existing = [p for p in files if (root / p).exists()]
    if existing and not args.force:
        print(f"agentgym new: {', '.join(existing)} already exist; use --force to overwrite")
        return 1
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content)
        print(f"created {root / path}")
    class_name = "".join(part.capitalize() for part in args.name.split("_"))
    print(f"\nnext: cd {root} && agentgym check {args.name}:agentgym/{class_name}-v0 && python -m pytest tests/test_{args.name}.py")
    return 0
