"""The episode viewer: stored episodes, turn by turn, on one self-contained HTML page (``agentgym view``).

The page needs no server: the episode list is one JSON document embedded in the page, and each episode's
turns are a separate inert ``<script type="application/json">`` element, parsed only when that episode is
opened. So a 10k-episode store opens as fast as its list (one page of rows is drawn at a time), however
much text its turns hold. Served by :mod:`leaderboards.viewer_server`, the same page leaves the turns out
and fetches them per episode instead.

Episode text is model output and must be shown, never run. Three layers see to it:

* embedding: JSON with ``<``, ``>``, ``&`` and the JavaScript line separators written as ``\\uXXXX``
  escapes, so nothing in it can close the script element (``</script>``) or open a comment;
* rendering: the page's script writes data only through ``textContent`` (never ``innerHTML``);
* the page's Content-Security-Policy runs only the page's own script (by its SHA-256), loads no images,
  fonts or frames, and lets the served page fetch only from its own origin.

Each text field is cut at ``max_chars`` characters (the page says where and how long the original was); the
store keeps the whole text. The store's ``steps`` table records, per turn, the raw reply, the native action
(a tool call for tool envs, shown as one), the observation that followed, reward, validity, parse error and
the turn's flags and timings, and each episode's start (system prompt, first observation, tools) in its
``starts`` table; the env's full ``info`` dict is not stored. A stored start is always shown. A store written
before starts were kept has none: then, when asked (``starts=True``; the served page always asks, per opened
episode), the start is replayed from its seed, only for entries :mod:`leaderboards.replay` allows (a store is
untrusted data), and the page says why a start was not replayed.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import importlib
import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .episodes_view import StartReader, StartUnavailable, entry_verdicts
from .store import Run, open_store
from .suite import Entry

TEMPLATES = Path(__file__).parent / "templates"
MAX_CHARS = 20_000
"""Default cut per text field in the static page (the served page uses :data:`SERVED_MAX_CHARS`)."""
SERVED_MAX_CHARS = 200_000
EPISODE_FIELDS = ("run", "entry", "env_id", "family", "episode_index", "task", "repeat", "seed", "task_index",
                  "outcome", "won", "score", "return", "steps", "invalid_actions", "terminated", "truncated",
                  "tokens", "wall_s", "attempts")
"""The columns of each row of the page's episode list (``episodes`` is a list of such rows)."""
STEP_TEXT = ("reply", "action", "observation", "parse_error")
STEP_FIELDS = ("t", *STEP_TEXT, "reward", "terminated", "truncated", "action_valid", "finish_reason",
               "prompt_tokens", "completion_tokens", "prompt_chars", "latency_s", "env_s")


@dataclass
class EpisodeIndex:
    """What the page lists: runs, one row per episode, and where each episode's turns live."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    where: list[tuple[int, int]] = field(default_factory=list)
    """Per row: ``(store number, episodes.id)``, to find its turns."""
    entries: list[tuple[Entry | None, int, str | None]] = field(default_factory=list)
    """Per row: its suite entry (``None`` if the stored suite lacks it), episode index, and why its start must
    not be replayed (``None`` if it may), for a store that keeps no start."""
    sources: list[str] = field(default_factory=list)
    unreplayed: dict[str, int] = field(default_factory=dict)
    """Why starts were not shown -> how many (filled as starts are read)."""


def run_key(run: Run, taken: set[str], store: Path) -> str:
    """A readable, unique name for a run across stores: ``suite-vN/run``, then the store's stem if taken."""
    key = f"{run.suite}-v{run.suite_version}/{run.name}"
    if key in taken:
        key = f"{key} ({store.stem})"
    base, n = key, 2
    while key in taken:
        key, n = f"{base} #{n}", n + 1
    taken.add(key)
    return key


def read_index(stores: list[str | Path]) -> EpisodeIndex:
    """Every episode of every store (opened for reading only), in store, run, entry and episode order."""
    index, taken = EpisodeIndex(), set()
    for number, path in enumerate(stores):
        with open_store(path, create=False) as store:
            store.db.text_factory = lenient_text
            index.sources.append(str(store.path))
            for run in store.runs():
                run_number, verdicts = len(index.runs), entry_verdicts(run)
                index.runs.append({"key": run_key(run, taken, store.path), "name": run.name, "policy": run.policy,
                                   "suite": f"{run.suite} v{run.suite_version}", "store": str(store.path),
                                   "id": run.id, "source": number})
                for row in store.episode_rows(run):
                    index.rows.append(_episode_row(run_number, row))
                    index.where.append((number, row["id"]))
                    entry, refusal = verdicts.get(row["entry"], (None, None))
                    index.entries.append((entry, row["episode_index"], refusal))
    return index


def lenient_text(raw: bytes) -> str:
    """SQLite text as str, a byte that is not UTF-8 (another tool wrote the file) shown as U+FFFD, never raised."""
    return raw.decode("utf-8", "replace")


def run_keys(index: EpisodeIndex) -> dict[tuple[str, int], str]:
    """``(store path, run id) -> run key``: what the leaderboard report links to (``viewer#run=KEY``)."""
    return {(r["store"], r["id"]): r["key"] for r in index.runs}


def outcome_of(row: sqlite3.Row | dict[str, Any]) -> str:
    """``won``, ``truncated``, ``draw`` (a game that ended level: a self-play env's score 0, neither side
    won) or ``lost``. A draw is not a loss: the page shows it in its own colour."""
    if row["won"]:
        return "won"
    if row["truncated"]:
        return "truncated"
    if row["terminated"] and row["score"] == 0 and is_game_env(row["env_id"]):
        return "draw"
    return "lost"


def _episode_row(run_number: int, row: sqlite3.Row) -> list[Any]:
    outcome = outcome_of(row)
    tokens = (row["prompt_tokens"] + row["completion_tokens"]
              if row["prompt_tokens"] is not None and row["completion_tokens"] is not None else None)
    values = {"run": run_number, "outcome": outcome, "tokens": tokens, **{k: row[k] for k in row.keys()}}
    values.update(won=bool(row["won"]), terminated=bool(row["terminated"]), truncated=bool(row["truncated"]))
    return [_plain(values[f]) for f in EPISODE_FIELDS]


def read_steps(db: sqlite3.Connection, episode_ids: list[int] | None = None, *,
               max_chars: int = MAX_CHARS) -> dict[int, list[dict[str, Any]]]:
    """Turns per ``episodes.id`` (all of them, or those given), each cut to ``max_chars`` per text field."""
    db.text_factory = lenient_text
    query = "SELECT s.*, e.env_id AS env_id FROM steps s JOIN episodes e ON e.id = s.episode_id"
    args: tuple[int, ...] = ()
    if episode_ids is not None:
        query += f" WHERE s.episode_id IN ({','.join('?' * len(episode_ids))})"
        args = tuple(episode_ids)
    found: dict[int, list[dict[str, Any]]] = {}
    for row in db.execute(query + " ORDER BY s.episode_id, s.t", args):
        found.setdefault(row["episode_id"], []).append(step_payload(row, max_chars, tools=is_tool_env(row["env_id"])))
    return found


def step_payload(row: sqlite3.Row | dict[str, Any], max_chars: int, *, tools: bool = False) -> dict[str, Any]:
    """One turn as the page reads it: text fields cut (``cut`` holds original lengths), a tool call parsed."""
    step: dict[str, Any] = {name: row[name] for name in STEP_FIELDS}
    cut: dict[str, int] = {}
    for name in STEP_TEXT:
        value = step[name]
        if isinstance(value, str) and len(value) > max_chars:
            cut[name], step[name] = len(value), value[:max_chars]
    for name in ("reward", "latency_s", "env_s"):
        step[name] = _plain(step[name])
    for flag in ("terminated", "truncated", "action_valid"):
        step[flag] = bool(step[flag])
    if cut:
        step["cut"] = cut
    call = tool_call(row["action"]) if tools and row["action_valid"] else None
    if call is not None:
        step["tool_call"] = call
    return step


@functools.lru_cache(maxsize=None)
def env_class(env_id: str) -> type | None:
    """The class ``env_id`` is registered with on this machine, or ``None`` (an id unknown here, or not a
    class). Only registered ids are looked up: a stored id never names a module to import."""
    import agentgym_envs  # noqa: F401  (registers the ids)
    import gymnasium

    try:
        entry_point = gymnasium.spec(env_id).entry_point
        if isinstance(entry_point, str):
            module, _, name = entry_point.partition(":")
            entry_point = getattr(importlib.import_module(module), name)
    except (gymnasium.error.Error, ImportError, AttributeError, TypeError):
        return None
    return entry_point if isinstance(entry_point, type) else None


def is_tool_env(env_id: str) -> bool:
    """Whether ``env_id`` is registered as a :class:`~agentgym_envs.core.ToolEnv` (its actions are tool calls)."""
    from agentgym_envs.core import ToolEnv

    cls = env_class(env_id)  # an id unknown here: its actions are shown as text
    return cls is not None and issubclass(cls, ToolEnv)


def is_game_env(env_id: str) -> bool:
    """Whether ``env_id`` is a two-sided game played as a single-agent env (its score 0 at the end is a draw)."""
    cls = env_class(env_id)
    if cls is None:
        return False
    from agentgym_envs.games.multiagent.selfplay import SelfPlayEnv

    return issubclass(cls, SelfPlayEnv)


def tool_call(action: str | None) -> dict[str, Any] | None:
    """A valid tool env action as ``{"name", "args", "kwargs"}`` (JSON-safe), or ``None`` if it is no call."""
    from agentgym_envs.core import InvalidAction, parse_call

    if not action or len(action) > 100_000:
        return None
    try:
        name, args, kwargs = parse_call(action)
        return json.loads(json.dumps({"name": name, "args": args, "kwargs": kwargs}, default=repr))
    except (InvalidAction, ValueError, RecursionError):
        return None


def read_start(reader: StartReader, index: EpisodeIndex, row: int, max_chars: int,
               db: sqlite3.Connection) -> dict[str, Any]:
    """Row ``row``'s start (system prompt, first observation, tools) from its store ``db``; or why there is none.

    A store from before starts were kept has none: an allowed replay of the seeded reset recovers it
    (:class:`~leaderboards.episodes_view.StartReader`). A refused or failed replay is reported on the page
    (and counted in ``index.unreplayed``), never raised.
    """
    entry, episode_index, refusal = index.entries[row]
    try:
        start = reader.start(db, index.where[row][1], entry, episode_index, refusal)
    except StartUnavailable as e:
        index.unreplayed[str(e)] = index.unreplayed.get(str(e), 0) + 1
        return {"error": str(e)}
    text = {"system_prompt": start.system_prompt or "", "first_observation": start.first_observation}
    payload: dict[str, Any] = {k: v[:max_chars] for k, v in text.items()}
    payload["cut"] = {k: len(v) for k, v in text.items() if len(v) > max_chars}
    payload["tools"] = [t.get("function", {}).get("name", "?") for t in start.tools or []]
    payload["protocol"] = start.protocol
    return payload


def _plain(value: Any) -> Any:
    """JSON-safe: non-finite floats (an env may return inf) become their text, so the JSON stays valid."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


# ----------------------------------------------------------------------------- the page
def script_json(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` can end or escape it.

    >>> script_json({"reply": "</script><img src=x onerror=alert(1)>"})
    '{"reply":"\\\\u003c/script\\\\u003e\\\\u003cimg src=x onerror=alert(1)\\\\u003e"}'
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def render_viewer(index: EpisodeIndex, steps: dict[int, dict[str, Any]] | None, *,
                  served: bool = False, max_chars: int = MAX_CHARS) -> str:
    """The page. ``steps`` maps a row number to ``{"turns": [...], "start": {...}}`` (embedded, the start
    optional); ``None`` (served) leaves them out."""
    script = (TEMPLATES / "viewer.js").read_text()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    connect = "'self'" if served else "'none'"
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
           f"connect-src {connect}; base-uri 'none'; form-action 'none'")
    data = {"fields": list(EPISODE_FIELDS), "runs": [{k: r[k] for k in ("key", "name", "policy", "suite", "store")}
                                                     for r in index.runs],
            "episodes": index.rows, "sources": index.sources, "served": served, "max_chars": max_chars,
            "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    turns = "" if steps is None else "\n".join(
        f'<script type="application/json" id="s{n}">{script_json(s)}</script>' for n, s in sorted(steps.items()))
    page = (TEMPLATES / "viewer.html").read_text()
    # In template order; none of the inserted values can hold a later marker (the JSON has no "<" left).
    for name, value in (("CSP", csp), ("DATA", script_json(data)), ("SCRIPT", script), ("TURNS", turns)):
        page = page.replace(f"<!--{name}-->", value, 1)
    return page


def write_viewer(stores: list[str | Path], out: str | Path, *, max_chars: int = MAX_CHARS,
                 starts: bool = False) -> tuple[Path, EpisodeIndex]:
    """Write the static page for ``stores`` to ``out`` (a file); returns it and the index it shows.

    Each episode's start the store keeps is embedded (no env is built). With ``starts``, one the store lacks
    (a store from before starts were kept) is replayed where allowed: one env reset per episode, 2.5 minutes
    for the 1,076 episodes of ``results/core-baselines.sqlite`` on 2 cores; without, the page says how.
    """
    index = read_index(stores)
    steps: dict[int, dict[str, Any]] = {}
    reader = StartReader(replay=starts)
    try:
        for number, path in enumerate(stores):
            rows = {episode_id: n for n, (source, episode_id) in enumerate(index.where) if source == number}
            with open_store(path, create=False) as store:
                for episode_id, turns in read_steps(store.db, max_chars=max_chars).items():
                    if episode_id in rows:
                        steps[rows[episode_id]] = {"turns": turns}
                for row in rows.values():
                    steps.setdefault(row, {"turns": []})["start"] = read_start(reader, index, row, max_chars, store.db)
    finally:
        reader.close()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_viewer(index, steps, max_chars=max_chars), encoding="utf-8")
    return out, index
