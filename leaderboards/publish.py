"""Write a leaderboard directory: ``leaderboard.md``, ``index.html``, ``plots/*.png`` and the episode viewer
``episodes.html`` (each run's row in ``index.html`` links to its episodes there) from results stores."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from .html import render_html, viewer_link
from .report import SuiteReport, collect, markdown


VIEWER_PAGE = "episodes.html"


@dataclass(frozen=True)
class Published:
    markdown: Path
    html: Path
    plots: list[Path]
    suites: list[SuiteReport]
    viewer: Path | None = None


def write_report(stores: list[str | Path], out_dir: str | Path, *, plots: bool = True, viewer: bool = True) -> Published:
    """Render every run in ``stores`` into ``out_dir`` (created); stores are only read.

    ``viewer`` also writes ``episodes.html`` (:func:`leaderboards.viewer.write_viewer`; every stored turn
    embedded, so it grows with the stores) and links each run's row to it."""
    from .plots import write_plots
    from .viewer import run_keys, write_viewer

    suites = collect(list(stores))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    made = {s.slug: write_plots(s, out) for s in suites if s.runs} if plots else {}
    md_path, html_path = out / "leaderboard.md", out / "index.html"
    md_path.write_text(markdown(suites, made))
    viewer_path, links = None, {}
    if viewer:
        viewer_path, index = write_viewer(list(stores), out / VIEWER_PAGE)
        links = {where: viewer_link(VIEWER_PAGE, key) for where, key in run_keys(index).items()}
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    html_path.write_text(render_html(suites, made, sources=[str(s) for s in stores], generated=generated, links=links))
    return Published(md_path, html_path, [out / p for pairs in made.values() for _, p in pairs], suites, viewer_path)
