"""``agentgym new NAME``: scaffold an env package others can install, and a test that runs ``check_env``.

Creates the project folder ``NAME/`` (or ``--dir``) with ``pyproject.toml`` (its ``agentgym.envs`` entry point
registers the id wherever agentgym is imported, once installed), ``README.md``, ``src/NAME/__init__.py``
(registration), ``src/NAME/env.py`` (a small working TextEnv to edit) and ``tests/test_NAME.py``. Then
``pip install -e NAME`` and the id works in suites, ``agentgym bench``, ``export``, ``check`` and ``play``;
before installing, ``PYTHONPATH=src agentgym check NAME:agentgym/<Name>-v0`` imports the module by name. The
src layout keeps a folder named NAME in the working directory from shadowing the installed package.
"""

from __future__ import annotations

import argparse
import re
from importlib import metadata, resources
from pathlib import Path

#: template -> path in the project folder (``{name}`` is the package name).
FILES = (("pyproject.toml.tmpl", "pyproject.toml"), ("README.md.tmpl", "README.md"),
         ("init.py.tmpl", "src/{name}/__init__.py"), ("env.py.tmpl", "src/{name}/env.py"),
         ("test.py.tmpl", "tests/test_{name}.py"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="python package name for the env (snake_case), e.g. my_env")
    parser.add_argument("--dir", default=None, help="the project folder to create (default: ./NAME)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")


def env_id_of(name: str) -> str:
    """The scaffold's id: ``my_env`` -> ``agentgym/MyEnv-v0``."""
    return f"agentgym/{''.join(part.capitalize() for part in name.split('_'))}-v0"


def render(name: str) -> dict[str, str]:
    """Files of the scaffold, path in the project folder -> content."""
    env_id = env_id_of(name)
    values = {"name": name, "class_name": env_id.removeprefix("agentgym/").removesuffix("-v0"), "env_id": env_id,
              "dist_name": name.replace("_", "-"), "agentgym_version": _agentgym_version()}
    templates = resources.files("agentgym_envs.cli").joinpath("templates")
    return {target.format(name=name): templates.joinpath(template).read_text().format(**values)
            for template, target in FILES}


def _agentgym_version() -> str:
    """The installed agentgym's ``major.minor`` (the scaffold's lower bound), ``0.1`` where no metadata is found."""
    try:
        return ".".join(metadata.version("agentgym").split(".")[:2])
    except metadata.PackageNotFoundError:
        return "0.1"


def run(args: argparse.Namespace) -> int:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", args.name):
        print(f"agentgym new: NAME must be a snake_case python identifier (e.g. my_env), got {args.name!r}")
        return 2
    root = Path(args.dir if args.dir is not None else args.name)
    files = render(args.name)
    existing = [p for p in files if (root / p).exists()]
    if existing and not args.force:
        print(f"agentgym new: {', '.join(existing)} already exist in {root}; use --force to overwrite")
        return 1
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content)
        print(f"created {root / path}")
    env_id = env_id_of(args.name)
    print(f"\nnext: pip install -e {root} && agentgym check {env_id} && python -m pytest {root / 'tests'}"
          f"\n(before installing: cd {root} && PYTHONPATH=src agentgym check {args.name}:{env_id})")
    return 0
