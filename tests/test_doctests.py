"""Every docstring example in the library runs (CI runs pytest without ``--doctest-modules``).

The modules are found by walking the package folders for ``.py`` files that contain ``>>>``, so a new
example joins this test by being written; nothing has to be listed. Walking files rather than importing
packages keeps collection free of import side effects. A module that imports ``vllm`` at module level is
marked ``vllm``: it runs in ``.venv-vllm`` (``scripts/test_vllm.sh``) and is deselected where vllm is not
installed (``tests/conftest.py``); likewise ``verifiers`` and ``openenv`` (``scripts/test_interop.sh``). A module
whose examples are all ``+SKIP`` fails here (nothing attempted): an example that cannot run belongs in a test instead.
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agentgym_envs", "trainer", "leaderboards", "sandboxes", "meta_envs")
_IMPORTS_VLLM = re.compile(r"^(import vllm|from vllm[ .])", re.MULTILINE)
# Modules importing these at module level run in the package's own virtualenv (scripts/test_interop.sh).
_OWN_VENV = {name: re.compile(rf"^(import {name}|from {name}[ .])", re.MULTILINE) for name in ("verifiers", "openenv")}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules_with_examples() -> list:
    """One pytest param per library module whose source holds a ``>>>`` example."""
    params = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            if ">>>" not in source:
                continue
            marks = [pytest.mark.vllm] if _IMPORTS_VLLM.search(source) else []
            marks += [getattr(pytest.mark, name) for name, imports in _OWN_VENV.items() if imports.search(source)]
            params.append(pytest.param(_module_name(path), marks=marks, id=_module_name(path)))
    return params


MODULES = _modules_with_examples()


def test_the_walk_finds_the_examples():
    """The walk sees every part (a broken walk would make the test below vacuous)."""
    names = {param.values[0] for param in MODULES}
    assert len(names) >= 60, f"expected at least 60 modules with examples, found {len(names)}"
    for package in ("agentgym_envs", "trainer", "leaderboards", "sandboxes"):
        assert any(name.split(".")[0] == package for name in names), f"no example found in {package}/"


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(verbose=False)
    failures: list[str] = []
    for test in finder.find(module, name):
        out: list[str] = []
        runner.run(test, out=out.append)
        failures.extend(out)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed:\n" + "".join(failures)
    assert result.attempted > 0, f"{name} has '>>>' but no example ran (all +SKIP?): move it into a test"


def test_no_example_is_skipped():
    """``+SKIP`` hides an example from this test; an example that cannot run here belongs in a test."""
    skipped = [f"{path.relative_to(ROOT)}:{number}"
               for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if "doctest: +SKIP" in line]
    assert not skipped, f"expected no skipped examples, got {skipped}"
