"""Issue 34 §3: the docs site builds from ``docs/`` with warnings as errors, and its pages cannot drift.

``mkdocs build --strict`` fails on any broken link or anchor between pages and on a page left out of the nav
(``mkdocs.yml`` turns each of those into a warning). The README's links into ``docs/`` are checked against the
built site too, since the README is read on GitHub and PyPI, outside the site.
"""

from __future__ import annotations

import os
import re
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
