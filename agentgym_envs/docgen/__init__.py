"""One documentation page per registered env id, generated from the registry and the env itself.

As gymnasium and PettingZoo do, every id gets a page (``docs/envs/<slug>.md``): what it is, how to make it and
its make kwargs, the action grammar and tools, reward and termination, spaces, info keys, the extra it needs, a
real sample episode (seed 0, a few expert turns), random and expert baselines and its version history.

    python -m agentgym_envs.docgen                 # write docs/envs/
    python -m agentgym_envs.docgen --check         # exit 1 if a committed page differs from its env

Pages are deterministic (envs are, and nothing timed is written), so :func:`check` can regenerate them and
compare; ``baselines=False`` leaves the baseline sections out of the comparison, which is what CI runs
(``tests/test_docs_site.py``): the baselines are the only slow part.
"""

from __future__ import annotations

from pathlib import Path

from ..registration import catalogue
from .facts import SLOW, EnvFacts, collect
from .render import index, page, slug, split_page

__all__ = ["EnvFacts", "collect", "generate", "check", "missing_and_stale", "page", "slug"]


def _entries(ids: list[str] | None):
    entries = catalogue()
    return [e for e in entries if e.id in ids] if ids is not None else entries


def generate(out: Path, ids: list[str] | None = None) -> list[Path]:
    """Write one page per id (every registered id by default) and, for the whole catalogue, the index."""
    out.mkdir(parents=True, exist_ok=True)
    written, all_facts = [], []
    for entry in _entries(ids):
        facts = collect(entry)
        all_facts.append(facts)
        path = out / f"{slug(entry.id)}.md"
        path.write_text(page(facts))
        written.append(path)
    if ids is None:
        (out / "index.md").write_text(index(all_facts))
        written.append(out / "index.md")
    return written


def check(pages: Path, ids: list[str] | None = None, *, baselines: bool = False) -> list[str]:
    """Differences between the committed pages under ``pages`` and freshly collected facts (empty: in sync).

    Every registered id must have a page and every page an id. Each section is compared as regenerated;
    with ``baselines=False`` the baseline section is not rerun and not compared."""
    entries = _entries(ids)
    problems = missing_and_stale(pages) if ids is None else []
    entries = [e for e in entries if (pages / f"{slug(e.id)}.md").exists()]
    all_facts = []
    for entry in entries:
        facts = collect(entry, baselines=baselines)
        all_facts.append(facts)
        committed = split_page((pages / f"{slug(entry.id)}.md").read_text())
        fresh = split_page(page(facts))
        for title in fresh:
            if title == "Baselines" and not baselines and entry.id not in SLOW:
                continue
            if committed.get(title) != fresh[title]:
                problems.append(f"{slug(entry.id)}.md: section {title or '(lead)'!r} differs from the env")
    if ids is None and (pages / "index.md").exists() and (pages / "index.md").read_text() != index(all_facts):
        problems.append("index.md differs from the registry")
    return problems


def missing_and_stale(pages: Path) -> list[str]:
    """Registered ids without a page, and pages of ids no longer registered."""
    expected = {f"{slug(e.id)}.md" for e in catalogue()} | {"index.md"}
    present = {p.name for p in pages.glob("*.md")}
    return ([f"{name}: no page (run python -m agentgym_envs.docgen)" for name in sorted(expected - present)]
            + [f"{name}: a page for no registered id" for name in sorted(present - expected)])
