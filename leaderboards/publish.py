"""Write a leaderboard directory: ``leaderboard.md``, ``index.html`` and ``plots/*.png`` from results stores."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from .html import render_html
from .report import SuiteReport, collect, markdown


@dataclass(frozen=True)
class Published:
    markdown: Path
    html: Path
    plots: list[Path]
    suites: list[SuiteReport]


def write_report(stores: list[str | Path], out_dir: str | Path, *, plots: bool = True) -> Published:
    """Render every run in ``stores`` into ``out_dir`` (created); stores are only read."""
    from .plots import write_plots

    suites = collect(list(stores))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    made = {s.slug: write_plots(s, out) for s in suites if s.runs} if plots else {}
    md_path, html_path = out / "leaderboard.md", out / "index.html"
    md_path.write_text(markdown(suites, made))
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    html_path.write_text(render_html(suites, made, sources=[str(s) for s in stores], generated=generated))
    return Published(md_path, html_path, [out / p for pairs in made.values() for _, p in pairs], suites)
