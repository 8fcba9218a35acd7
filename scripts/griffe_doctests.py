"""A griffe extension for the API page (mkdocs.yml): doctest examples (``>>>`` lines and their output) become
fenced ``pycon`` blocks.

Our docstrings are reST-flavoured prose with doctests that ``tests/test_doctests.py`` runs; rendered as Markdown,
a bare ``>>> d[1]["key"]`` line is read as a reference link and the strict build fails on it. Fencing the
example shows it as code, as it is meant to be read.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """Wrap each example (a ``>>>`` line, its ``...`` and output lines, up to a blank line) in a ``pycon`` fence."""
    out: list[str] = []
    in_example = False
    for line in text.splitlines():
        starts = line.lstrip().startswith(">>>")
        if starts and not in_example:
            out.append("```pycon")
            in_example = True
        elif in_example and not line.strip():
            out.append("```")
            in_example = False
        out.append(line)
    if in_example:
        out.append("```")
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
