"""agentgym_envs/extras.py names, per extra, the modules the code imports; pyproject.toml installs them. Keep the two
in step: each module must come from a distribution its extra (or an extra it includes) requires."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from agentgym_envs.extras import EXTRA_MODULES, MissingExtra, extra_providing, install_hint

EXTRAS = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _dists(extra: str) -> set[str]:
    out: set[str] = set()
    for requirement in EXTRAS[extra]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")
        nested = re.match(r"agentgym\[(.+)\]", requirement)
        out |= set().union(*(_dists(e) for e in nested.group(1).split(","))) if nested else {name}
    return out


def test_every_extras_module_comes_from_that_extra_in_pyproject():
    providers = packages_distributions()
    for extra, modules in EXTRA_MODULES.items():
        assert extra in EXTRAS, f"extras.py names {extra!r}, which pyproject.toml does not define"
        for module in modules:
            dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
            assert dists & _dists(extra), (extra, module, dists)


def test_triton_is_only_in_the_gpu_extra_and_not_in_all():
    assert [e for e, reqs in EXTRAS.items() if any(r.startswith("triton") for r in reqs)] == ["gpu"]
    assert "gpu" not in _dists_names("all")


def _dists_names(extra: str) -> str:
    return " ".join(EXTRAS[extra])


def test_the_missing_extra_error_is_one_line_naming_the_extra():
    err = MissingExtra("agentgym/Search-v0", "search", ["bm25s"])
    assert isinstance(err, ModuleNotFoundError) and err.name == "bm25s" and "\n" not in str(err)
    assert install_hint("search") in str(err) and extra_providing("torch") == "train"
    assert extra_providing("yaml", prefer=("leaderboards",)) == "leaderboards"
