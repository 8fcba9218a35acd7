"""Issue 34 §3: the docs site builds from ``docs/`` with warnings as errors, and its pages cannot drift.

``mkdocs build --strict`` fails on any broken link or anchor between pages and on a page left out of the nav
(``mkdocs.yml`` turns each of those into a warning). The README's links into ``docs/`` are checked against the
built site too, since the README is read on GitHub and PyPI, outside the site.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built strictly into a temp dir (never into the checkout)."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=150,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(warnings or [proc.stderr[-3000:]])
    return out


def test_site_builds_strictly_with_every_page(site: Path):
    for page in sorted((REPO / "docs").glob("*.md")):
        assert (site / page.stem / "index.html").exists() or page.stem == "index", f"{page.name} is not in the site"
    assert (site / "index.html").exists()


def test_readme_links_into_docs_resolve(site: Path):
    """Every ``docs/X.md#anchor`` link in the README names a page of the site and a heading on it."""
    links = re.findall(r"\]\(docs/([\w/.-]+?)\.md(?:#([\w.-]+))?\)", (REPO / "README.md").read_text())
    assert links, "the README links into docs/"
    for page, anchor in links:
        html_file = site / ("" if page == "index" else page) / "index.html"
        assert html_file.exists(), f"README links to docs/{page}.md, which is not in the site"
        if anchor:
            assert f'id="{anchor}"' in html_file.read_text(), f"README links to docs/{page}.md#{anchor}: no such heading"


# --- the generated env pages (agentgym_envs.docgen) -------------------------------------------------------------
# CI compares every section of every page except the baselines with a fresh read of its env (about 30 s for the
# whole catalogue); the baselines are regenerated and compared in full for a few fast ids, and
# `python -m agentgym_envs.docgen --check --baselines` compares all of them (about 2 minutes on 2 cores).

FULL_IDS = ["agentgym/Maze-v0", "agentgym/GuessNumber-v0", "agentgym/Wordle-v0", "agentgym/TicTacToe-VsRandom-v0",
            "agentgym/TicTacToe-v0"]


def test_every_env_page_matches_its_env():
    from agentgym_envs.docgen import check

    problems = check(REPO / "docs" / "envs")
    assert not problems, "env pages drifted from the envs; run `python -m agentgym_envs.docgen`:\n" + "\n".join(problems)


def test_full_regeneration_is_byte_identical(tmp_path):
    """Baselines and all: generation is deterministic, so a fresh page equals the committed one."""
    from agentgym_envs.docgen import generate

    for path in generate(tmp_path, FULL_IDS):
        assert path.read_text() == (REPO / "docs" / "envs" / path.name).read_text(), f"{path.name} differs"


def test_check_catches_a_drifted_missing_or_stale_page(tmp_path):
    from agentgym_envs.docgen import check, missing_and_stale

    pages = tmp_path / "envs"
    shutil.copytree(REPO / "docs" / "envs", pages)
    maze = pages / "maze-v0.md"
    maze.write_text(maze.read_text().replace("`UnicodeText(0, 16384)`", "`UnicodeText(0, 99)`", 1))
    (pages / "wordle-v0.md").unlink()
    (pages / "retired-v0.md").write_text("# agentgym/Retired-v0\n")
    assert check(pages, ["agentgym/Maze-v0"]) == ["maze-v0.md: section 'Spaces' differs from the env"]
    assert missing_and_stale(pages) == ["wordle-v0.md: no page (run python -m agentgym_envs.docgen)",
                                        "retired-v0.md: a page for no registered id"]


def test_every_registered_id_has_a_page_in_the_site(site: Path):
    import agentgym_envs
    from agentgym_envs.docgen import slug

    ids = [e.id for e in agentgym_envs.catalogue()]
    assert len(ids) >= 74
    for env_id in ids:
        html_file = site / "envs" / slug(env_id) / "index.html"
        assert html_file.exists(), f"{env_id} has no page in the site"
    index_html = (site / "envs" / "index.html").read_text()
    assert all(f'href="{slug(i)}/"' in index_html for i in ids), "the env index links every page"


# --- the API page (docs/api.md, mkdocstrings) ----------------------------------------------------------------------

API_OBJECTS = ["agentgym_envs.registration.make", "agentgym_envs.core.text_env.TextEnv", "agentgym_envs.core.tool_env.ToolEnv",
               "agentgym_envs.core.task_env.TaskEnv", "agentgym_envs.protocols.wrapper.ActionProtocolWrapper",
               "agentgym_envs.protocols.base.ActionProtocol", "agentgym_envs.vector.text_vector_env.TextVectorEnv",
               "leaderboards.runner.run_bench", "trainer.config.TrainConfig", "trainer.config.RolloutConfig"]


def test_api_page_documents_the_public_surface(site: Path):
    html_text = (site / "api" / "index.html").read_text()
    for name in API_OBJECTS:
        assert f'id="{name}"' in html_text, f"{name} is not on the API page"
    assert 'class="gp">&gt;&gt;&gt; </span>' in html_text, "doctest examples are rendered as code"


def test_fence_doctests_wraps_examples_only():
    import importlib.util

    spec = importlib.util.spec_from_file_location("griffe_doctests", REPO / "scripts" / "griffe_doctests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = 'Use it:\n\n>>> d = {"k": 1}\n>>> d["k"]\n1\n\nDone.'
    assert module.fence_doctests(text) == 'Use it:\n\n```pycon\n>>> d = {"k": 1}\n>>> d["k"]\n1\n```\n\nDone.'
    assert module.fence_doctests("no examples here") == "no examples here"
