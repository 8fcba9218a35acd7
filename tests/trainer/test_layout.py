"""The trainer's tree is its architecture (issue 35): a few rooms, each importing only the rooms below it.

The import graph is read from the sources (``ast``), so the test needs nothing installed and cannot be fooled
by lazy imports: an import inside a function counts like one at the top. Only imports under
``if TYPE_CHECKING:`` are left out: they name a type for the reader and load nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import trainer

ROOT = Path(trainer.__file__).parent
SUB_PACKAGES = ("collect", "learn", "models", "serve", "run", "cli")

#: Who may import whom: a room (sub-package) or top-level module -> the rooms and modules it may import. The
#: same table is in each sub-package's ``__init__`` docstring, and in docs/architecture.md.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "seeding": set(),
    "collect": {"errors", "seeding"},
    "learn": {"errors", "seeding", "collect"},
    "models": {"errors", "seeding", "collect"},
    "serve": {"errors", "seeding", "collect", "learn", "models"},
    "run": {"errors", "seeding", "collect", "learn", "models", "serve"},
    "recipes": {"errors"},
    "config": {"run"},  # the config tree as users import it: a re-export of run/config.py
    "cli": {"errors", "seeding", "collect", "learn", "models", "serve", "run", "config", "recipes"},
    "trainer": {"run"},  # trainer/__init__.py: Trainer and fit, loaded on first use
}
MAX_TOP_LEVEL_MODULES = 8
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path) -> list[str]:
    """Every trainer module ``path`` imports (a ``from x import y`` counts ``x.y`` when that is a module)."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.append(module)
            found.extend(f"{module}.{alias.name}" for alias in node.names if _exists(f"{module}.{alias.name}"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return [name for name in found if name.split(".")[0] == "trainer" and _exists(name)]


def _exists(module: str) -> bool:
    path = ROOT.parent / module.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _room(module: str) -> str:
    """The room a module belongs to: its sub-package, its own name at the top level, ``trainer`` for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "trainer"


def _sources() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def _room_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in _sources():
        here = _room(_module_name(path))
        graph.setdefault(here, set()).update(r for r in map(_room, _imports(path)) if r != here)
    return graph


def test_every_room_and_top_level_module_is_in_the_table():
    rooms = {_room(_module_name(path)) for path in _sources()}
    assert rooms == set(ALLOWED), f"not in ALLOWED: {rooms - set(ALLOWED)}; gone: {set(ALLOWED) - rooms}"


def test_rooms_import_only_the_rooms_below_them():
    upward = {f"{room} -> {other}" for room, targets in _room_graph().items() for other in targets
              if other not in ALLOWED[room]}
    assert not upward, f"imports the layering does not allow (see ALLOWED): {sorted(upward)}"


def test_the_allowed_table_and_the_real_graph_have_no_cycle():
    for graph in (ALLOWED, _room_graph()):
        done: set[str] = set()

        def visit(room: str, path: tuple[str, ...]) -> None:
            assert room not in path, f"import cycle between rooms: {' -> '.join(path + (room,))}"
            if room in done:
                return
            for other in graph.get(room, ()):
                visit(other, path + (room,))
            done.add(room)

        for room in graph:
            visit(room, ())


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    """The graph is read from the sources: a loss importing the loop would show as learn -> run."""
    fake = tmp_path / "trainer"
    for path in _sources():
        target = fake / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    loss = fake / "learn" / "loss.py"
    loss.write_text(loss.read_text() + "\n\ndef _upward():\n    from ..run.loop import Trainer\n")
    monkeypatch.setattr(f"{__name__}.ROOT", fake)
    assert "run" in _room_graph()["learn"]
    assert "run" not in ALLOWED["learn"]


def test_sub_package_docstrings_state_what_they_may_import():
    for name in SUB_PACKAGES:
        doc = ast.get_docstring(ast.parse((ROOT / name / "__init__.py").read_text())) or ""
        line = next((line for line in doc.splitlines() if line.startswith("May import:")), None)
        assert line is not None, f"trainer/{name}/__init__.py: no 'May import:' line in its docstring"
        named = {word.strip("`,.;: ") for word in line.removeprefix("May import:").split()} - {"", "and", "nothing"}
        assert named == ALLOWED[name], f"trainer/{name}/__init__.py says {sorted(named)}, the table {sorted(ALLOWED[name])}"


def test_at_most_eight_top_level_modules():
    modules = sorted(path.name for path in ROOT.glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules
    packages = sorted(path.parent.name for path in ROOT.glob("*/__init__.py"))
    assert packages == sorted(SUB_PACKAGES), packages


def test_no_module_over_400_lines():
    long = {str(path.relative_to(ROOT)): n for path in _sources() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
