"""Issue 34 §1: the wheel is the product. Build it, install it (not editable) into fresh virtualenvs outside the
checkout, and use it from an unrelated folder, so a data file missing from the wheel fails here, not for a user.

Nothing is downloaded: each venv gets the wheel with ``--no-deps``, and a ``.pth`` file puts a folder of links
to this environment's installed packages on its path (every one but agentgym's own editable install). The second
venv leaves ``bm25s`` out, as a base install without the ``search``/``web``/``design``/``skills`` extras would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agentgym_envs", "trainer", "leaderboards", "meta_envs", "sandboxes")
SITE = Path(sysconfig.get_paths()["purelib"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a clean copy of the sources (a checkout's stale ``build/`` cannot leak into it)."""
    src = tmp_path_factory.mktemp("src")
    for name in PACKAGES:
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"):
        shutil.copy(REPO / name, src / name)
    dist = tmp_path_factory.mktemp("dist")
    _ok(subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                        str(dist), str(src)], capture_output=True, text=True, timeout=240))
    (built,) = dist.glob("agentgym-*.whl")
    return built


def _ok(out: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def _venv(root: Path, wheel: Path, *, without: tuple[str, ...] = ()) -> Path:
    """A fresh venv with the wheel installed and this environment's packages (less ``without``) on its path."""
    _ok(subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], capture_output=True, text=True))
    python = root / "bin" / "python"
    _ok(subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                        "--no-index", str(wheel)], capture_output=True, text=True, timeout=240))
    deps = root / "deps"
    deps.mkdir()
    for entry in SITE.iterdir():
        name = entry.name.lower()
        if "agentgym" in name or any(name.startswith(w) for w in without):
            continue  # our own editable install, or a package this venv should lack
        (deps / entry.name).symlink_to(entry)
    site = Path(_ok(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True)).stdout.strip())
    (site / "zz_agentgym_test_deps.pth").write_text(f"import site; site.addsitedir({str(deps)!r})\n")
    return root


def _run(venv: Path, cwd: Path, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "HF_HUB_OFFLINE": "1"})


def test_the_installed_wheel_works_from_an_unrelated_folder(wheel, tmp_path):
    venv, elsewhere = _venv(tmp_path / "venv", wheel), tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = json.loads(_ok(_run(venv, elsewhere, "python", "-c", SHIPPED_FILES)).stdout)
    assert all(str(venv) in path for path in where["packages"]), where["packages"]  # not the checkout
    assert where["missing"] == [], f"in the source tree but not in the wheel: {where['missing']}"

    listing = _ok(_run(venv, elsewhere, "agentgym", "list")).stdout
    assert "agentgym/Maze-v0" in listing and "[needs" not in listing, listing
    assert json.loads(_ok(_run(venv, elsewhere, "python", "-c", FIRST_ID_PER_FAMILY)).stdout) == [], "family without an id"
    check = _ok(_run(venv, elsewhere, "agentgym", "check", "--max-steps", "5", *ONE_PER_FAMILY))
    assert f"{len(ONE_PER_FAMILY)} of {len(ONE_PER_FAMILY)} envs passed" in check.stdout

    smoke = _ok(_run(venv, elsewhere, "python", "-c", SMOKE)).stdout
    assert smoke.split() == ["templates", "4", "curated", "household", "quickstart", "agentgym/Maze-Easy-v0"], smoke
    assert "usage: agentgym skills eval" in _ok(_run(venv, elsewhere, "agentgym", "skills", "eval", "--help")).stdout
    recipes = _ok(_run(venv, elsewhere, "agentgym", "configs", "list")).stdout
    assert "household_gigpo" in recipes and "quickstart" in recipes, recipes
    _ok(_run(venv, elsewhere, "agentgym", "configs", "copy", "household_gigpo", "."))
    assert (elsewhere / "household_gigpo.yaml").read_text().startswith("# GiGPO")


def test_a_missing_extra_is_marked_and_named(wheel, tmp_path):
    """Without bm25s: ``list`` marks the ids that need it, making one names the extra in one line."""
    venv, elsewhere = _venv(tmp_path / "venv", wheel, without=("bm25s",)), tmp_path / "elsewhere"
    elsewhere.mkdir()
    listing = _ok(_run(venv, elsewhere, "agentgym", "list")).stdout
    search = next(line for line in listing.splitlines() if line.startswith("agentgym/Search-v0 "))
    assert search.endswith("[needs agentgym[search]]"), search
    assert "[needs" not in next(line for line in listing.splitlines() if line.startswith("agentgym/Maze-v0 "))
    check = _run(venv, elsewhere, "agentgym", "check", "agentgym/Search-v0")
    assert check.returncode == 2 and len(check.stderr.strip().splitlines()) == 1, check.stderr
    assert "pip install 'agentgym[search]'" in check.stderr and "Traceback" not in check.stderr
    make = _run(venv, elsewhere, "python", "-c", "import gymnasium, agentgym_envs; gymnasium.make('agentgym/WebShop-v0')")
    assert make.returncode == 1 and make.stderr.strip().splitlines()[-1] == (
        "agentgym_envs.extras.MissingExtra: agentgym/WebShop-v0 needs the 'web' extra (missing: bm25s): "
        "pip install 'agentgym[web]'"), make.stderr


#: every file under the packages in the source tree (data included) must be in the installed package
SHIPPED_FILES = f"""
import importlib, json, pathlib
src = pathlib.Path({str(REPO)!r})
packages, missing = [], []
for name in {PACKAGES!r}:
    installed = pathlib.Path(importlib.import_module(name).__file__).parent
    packages.append(str(installed))
    for path in (src / name).rglob("*"):
        rel = path.relative_to(src / name)
        if path.is_file() and "__pycache__" not in rel.parts and not (installed / rel).is_file():
            missing.append(f"{{name}}/{{rel}}")
print(json.dumps({{"packages": packages, "missing": missing}}))
"""

#: one fast id per family (the first registered is not always: EnvDesign-v0 runs a sandbox, WebShop-Browser-v0 a browser);
#: a new family fails the test until it has one here
ONE_PER_FAMILY = ["agentgym/Maze-Easy-v0", "agentgym/Wordle-v0", "agentgym/Household-v0", "agentgym/PracticeScheduling-v0",
                  "agentgym/Search-1Hop-v0", "agentgym/WebShop-v0", "agentgym/TextWorld-CoinCollector-v0",
                  "agentgym/Terminal-v0", "agentgym/TaskDesign-v0", "agentgym/SkillLibrary-v0"]
FIRST_ID_PER_FAMILY = f"""
import json
from agentgym_envs.registration import catalogue
family = {{e.id: e.family for e in catalogue()}}
chosen = {{family[i] for i in {ONE_PER_FAMILY!r}}}
print(json.dumps(sorted({{e.family for e in catalogue() if not e.multi_agent}} - chosen)))
"""

SMOKE = """
import tempfile
from trainer.models.build import TEMPLATES, build_random_model
from meta_envs.skills.evaluate import curated_library
from trainer.cli.quickstart import quickstart_config
with tempfile.TemporaryDirectory() as d:
    build_random_model("qwen2", d + "/m", cache_dir=d + "/cache")
print("templates", len(list(TEMPLATES.glob("*.jinja"))))
print("curated", "household" if len(list(curated_library("household"))) == 6 else "?")
print("quickstart", quickstart_config(tempfile.mkdtemp()).env.env_id)
"""
