"""The static HTML leaderboard: the Markdown's tables and the PNG plots on one self-contained page.

No JavaScript and no external resources (inline CSS, plots beside the page), so it opens from disk in any
browser, offline, and can be published as is (e.g. on GitHub Pages). With ``links`` each policy's name links
to its episodes in the episode viewer written beside it (``episodes.html#run=KEY``, :mod:`leaderboards.viewer`).
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from .report import NOTES, SuiteReport, entry_rows, main_rows

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 78rem; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.8rem 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f3f3f3; }
tbody tr:nth-child(even) { background: #fafafa; }
.notes { color: #555; font-size: 12px; max-width: 60rem; }
figure { display: inline-block; margin: 0.5rem 1rem 0.5rem 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
.scroll { overflow-x: auto; }
"""


def render_html(suites: list[SuiteReport], plots: dict[str, list[tuple[str, str]]], *, sources: list[str],
                generated: str, links: dict[tuple[str, int], str] | None = None) -> str:
    """The page; ``plots`` maps a suite slug to ``(caption, relative path)`` pairs written beside it;
    ``links`` maps ``(store path, run id)`` to a viewer URL for that run's row."""
    body = ["<h1>agentgym leaderboard</h1>",
            f"<p class=\"notes\">Generated {escape(generated)} from {', '.join(escape(s) for s in sources)}.</p>"]
    if not suites:
        body.append("<p>No runs in the store yet: run <code>agentgym bench --suite smoke --policy random</code> first.</p>")
    for suite in suites:
        body += _suite_section(suite, plots.get(suite.slug, []), links or {})
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n<title>agentgym leaderboard</title>\n"
            f"<style>{CSS}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def _suite_section(suite: SuiteReport, plots: list[tuple[str, str]], links: dict[tuple[str, int], str]) -> list[str]:
    header, rows = main_rows(suite)
    hrefs = [links.get((str(run.store), run.run.id)) for run in suite.runs]
    parts = [f"<section id=\"{escape(suite.slug)}\">", f"<h2>{escape(suite.title)}</h2>",
             _table(header, rows, css_class="leaderboard", row_attr="data-policy", hrefs=hrefs),
             f"<p class=\"notes\">{escape(NOTES)}</p>"]
    for caption, path in plots:
        parts.append(f"<figure><img src=\"{escape(path)}\" alt=\"{escape(caption)}\">"
                     f"<figcaption>{escape(caption)}</figcaption></figure>")
    entry_header, entry_table = entry_rows(suite)
    parts += [f"<h3>{escape(suite.title)}: success per env (won / scored episodes)</h3>",
              _table(entry_header, entry_table, css_class="per-env", row_attr="data-env"), "</section>"]
    return parts


def viewer_link(page: str, run_key: str) -> str:
    """The viewer URL that opens with one run's episodes listed."""
    return f"{page}#run={quote(run_key, safe='')}"


def _table(header: list[str], rows: list[list[str]], *, css_class: str, row_attr: str,
           hrefs: list[str | None] | None = None) -> str:
    head = "".join(f"<th scope=\"col\">{escape(h)}</th>" for h in header)
    body = "\n".join(f"<tr {row_attr}=\"{escape(r[0])}\">" + _first_cell(r[0], href)
                     + "".join(f"<td>{escape(c)}</td>" for c in r[1:]) + "</tr>"
                     for r, href in zip(rows, hrefs or [None] * len(rows)))
    return (f"<div class=\"scroll\"><table class=\"{css_class}\">\n<thead><tr>{head}</tr></thead>\n"
            f"<tbody>\n{body}\n</tbody>\n</table></div>")


def _first_cell(text: str, href: str | None) -> str:
    if href is None:
        return f"<td>{escape(text)}</td>"
    return f"<td><a href=\"{escape(href)}\" title=\"its episodes, turn by turn\">{escape(text)}</a></td>"
