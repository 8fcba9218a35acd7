"""Trajectory datasets: episodes as chat-format JSONL, Parquet and Hugging Face ``datasets``, and back.

One record per episode (``format: agentgym.trajectory/1``)::

    id          a stable name of the episode within its source (e.g. ``store:<run>/<suite>/v1/<entry>/3``)
    source      ``store``, ``env`` (played for the export) or ``train`` (a training run's rollout dump)
    env_id, policy, seed, task_index
    messages    system / user / assistant / tool messages in OpenAI chat format: with the ``tool_calls``
                protocol an assistant reply holding a call carries it as ``tool_calls`` (``arguments`` a JSON
                string, ids ``call_<k>``) with the text around it as ``content``, and the env's answer is a
                ``tool`` message with the call's ``tool_call_id``; otherwise replies are the assistant content
                exactly as sampled and observations are ``user`` messages
    tools       the OpenAI function schemas the protocol offered (``None`` without tools)
    rewards     the env reward of each turn (one per assistant message)
    turns       per turn: ``action`` (native action or ``None``), ``action_valid``, ``parse_error``,
                ``reply`` (the raw reply when a call moved it out of ``content``, else ``None``)
    outcome     ``won``, ``score`` (``None`` for training rollouts), ``return``, ``steps``, ``terminated``, ``truncated``
    meta        where it came from (run, suite, entry, episode index, training step, ...)

Files are deterministic: the same inputs give byte-identical files. JSONL lines are ``json.dumps`` with sorted
keys and compact separators, valid UTF-8: a lone surrogate (not encodable) becomes U+FFFD, and U+2028, U+2029
and U+0085 (line breaks to some readers) are written as ``\\u`` escapes; lines end with ``\\n`` only. In
Parquet and ``datasets`` (``save_to_disk``) the columns are the same, but ``tools`` and ``meta`` are JSON
strings (free-form nesting has no fixed Arrow type) and absent message keys are nulls; :func:`load_trajectories`
reads every form back into the JSONL records.

Writing is resumable (:func:`write_jsonl`): records go to ``<file>.part``, flushed one line at a time; a
killed export, run again with the same inputs, keeps the complete lines, checks their ids against the
source and continues after them, so the finished file equals an uninterrupted export's.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from .errors import LeaderboardError
from .records import utf8_text

FORMAT = "agentgym.trajectory/1"
JSONL, PARQUET, HF_DIR = "trajectories.jsonl", "trajectories.parquet", "hf"
FORMATS = ("jsonl", "parquet", "hf")
_LINE_BREAKS = {0x2028: "\\u2028", 0x2029: "\\u2029", 0x85: "\\u0085"}
_JSON_COLUMNS = ("tools", "meta")


class ExportError(LeaderboardError):
    """An export cannot proceed (a partial file from other inputs, an unreadable dataset)."""


class Source(Protocol):
    """What an export reads: the ids of its records in order, then the records after the first ``skip``."""

    def ids(self) -> list[str]: ...

    def records(self, skip: int = 0) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------------------------- records
def chat_messages(system_prompt: str | None, first_observation: str, turns: Sequence[tuple[str, str]],
                  tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The episode's messages in OpenAI chat format (tool calls moved to ``tool_calls`` when ``tools``).

    >>> [m["role"] for m in chat_messages("Be brief.", "start", [("go", "ok")], None)]
    ['system', 'user', 'assistant', 'user']
    >>> m = chat_messages(None, "hi", [('<tool_call>{"name": "act", "arguments": {"action": "go"}}</tool_call>', "ok")],
    ...                   [{"type": "function", "function": {"name": "act"}}])
    >>> m[1]["tool_calls"][0]["function"], m[2]
    ({'name': 'act', 'arguments': '{"action": "go"}'}, {'role': 'tool', 'content': 'ok', 'tool_call_id': 'call_1'})
    """
    from agentgym_envs.chat import episode_messages

    messages = episode_messages(system_prompt, first_observation, turns, tools=tools)
    if tools is None:
        return [dict(m) for m in messages]
    from trainer.models.backends.openai_http import wire_messages  # the one place replies become API tool calls

    return wire_messages(list(messages))


def make_record(*, id: str, source: str, env_id: str, policy: str, seed: int | None, task_index: int | None,
                system_prompt: str | None, first_observation: str, tools: list[dict[str, Any]] | None,
                turns: Sequence[dict[str, Any]], outcome: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """One episode's record. ``turns``: dicts with ``reply``, ``observation``, ``reward``, ``action``,
    ``action_valid``, ``parse_error``. Strings and numbers are normalised so that the record serialises."""
    messages = chat_messages(system_prompt, first_observation, [(t["reply"], t["observation"]) for t in turns], tools)
    replies = [m for m in messages if m["role"] == "assistant"]
    record = {
        "format": FORMAT, "id": id, "source": source, "env_id": env_id, "policy": policy, "seed": seed,
        "task_index": task_index, "messages": messages, "tools": tools,
        "rewards": [float(t["reward"]) for t in turns],
        "turns": [{"action": t.get("action"), "action_valid": t.get("action_valid"), "parse_error": t.get("parse_error"),
                   "reply": None if m.get("content") == t["reply"] and "tool_calls" not in m else t["reply"]}
                  for t, m in zip(turns, replies)],
        "outcome": {"won": bool(outcome["won"]), "score": _float(outcome["score"]), "return": float(outcome["return"]),
                    "steps": len(turns), "terminated": bool(outcome["terminated"]),
                    "truncated": bool(outcome["truncated"])},
        "meta": meta,
    }
    return clean(record)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def clean(value: Any) -> Any:
    """``value`` made serialisable the same way every time: lone surrogates → U+FFFD, non-finite floats → ``None``,
    tuples → lists.

    >>> clean({"a": "x\\ud800y", "b": (1, float("nan"))})
    {'a': 'x�y', 'b': [1, None]}
    """
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def dumps(record: dict[str, Any]) -> bytes:
    """One JSONL line (with its ``\\n``): deterministic, valid UTF-8, no line breaks but the last."""
    text = json.dumps(clean(record), ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return (text.translate(_LINE_BREAKS) + "\n").encode("utf-8")


# ---------------------------------------------------------------------------------------------- JSONL
def write_jsonl(source: Source, path: str | Path, *, progress: Any = None) -> Path:
    """Write ``source`` to ``path``, resuming a ``<path>.part`` left by a killed export; returns ``path``.

    A finished file whose ids are the source's is left as it is (running an export twice is a no-op); one
    with other ids, or a partial file from other inputs, raises :class:`ExportError`. ``progress(done, total)``
    is called after each record.
    """
    path = Path(path)
    ids = source.ids()
    if path.exists():
        found = _line_ids(path)
        if found != ids:
            raise ExportError(f"{path} exists and holds other episodes ({len(found)} records, expected {len(ids)} "
                              "from these inputs); remove it or pick another --out")
        return path
    part = path.with_name(path.name + ".part")
    path.parent.mkdir(parents=True, exist_ok=True)
    done = _resume_part(part, ids)
    with open(part, "ab") as f:
        if progress is not None:
            progress(done, len(ids))
        for record in source.records(skip=done):
            if record["id"] != ids[done]:
                raise ExportError(f"source yielded {record['id']!r} where {ids[done]!r} was expected (not deterministic?)")
            f.write(dumps(record))
            f.flush()  # a killed process loses at most the line being written
            done += 1
            if progress is not None:
                progress(done, len(ids))
        if done != len(ids):
            raise ExportError(f"source ended after {done} of its {len(ids)} records; {part} keeps them: rerun to resume")
        os.fsync(f.fileno())
    os.replace(part, path)
    return path


def _resume_part(part: Path, ids: list[str]) -> int:
    """How many complete records ``part`` holds (0 if none), after cutting a torn last line off."""
    if not part.exists():
        return 0
    data = part.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep != len(data):
        with open(part, "r+b") as f:
            f.truncate(keep)
    found = _line_ids(part)
    if found != ids[:len(found)]:
        raise ExportError(f"{part} is a partial export of other inputs (its record {len(found)} ids do not match); "
                          "remove it to start over, or rerun with the inputs it was started with")
    return len(found)


def _line_ids(path: Path) -> list[str]:
    try:
        return [json.loads(line)["id"] for line in _lines(path)]
    except (ValueError, KeyError, TypeError) as e:
        raise ExportError(f"{path} is not a trajectory JSONL file ({type(e).__name__}: {e}); remove it") from None


def _lines(path: Path) -> Iterator[bytes]:
    """The lines of a JSONL file split on ``\\n`` only (never on U+2028 and the like)."""
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                yield line


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a trajectory JSONL file, in order."""
    for line in _lines(Path(path)):
        yield json.loads(line)


class RecordsSource:
    """Already-built records as a :class:`Source` (re-exporting what :func:`load_trajectories` returned)."""

    def __init__(self, records: Iterable[dict[str, Any]]):
        self._records = list(records)

    def ids(self) -> list[str]:
        return [r["id"] for r in self._records]

    def records(self, skip: int = 0) -> Iterator[dict[str, Any]]:
        return iter(self._records[skip:])

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------- Arrow forms
def arrow_schema() -> Any:
    """The Arrow schema of the Parquet and ``datasets`` forms."""
    import pyarrow as pa

    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.list_(call)),
                         ("tool_call_id", pa.string())])
    turn = pa.struct([("action", pa.string()), ("action_valid", pa.bool_()), ("parse_error", pa.string()),
                      ("reply", pa.string())])
    outcome = pa.struct([("won", pa.bool_()), ("score", pa.float64()), ("return", pa.float64()), ("steps", pa.int64()),
                         ("terminated", pa.bool_()), ("truncated", pa.bool_())])
    return pa.schema([("format", pa.string()), ("id", pa.string()), ("source", pa.string()), ("env_id", pa.string()),
                      ("policy", pa.string()), ("seed", pa.int64()), ("task_index", pa.int64()),
                      ("messages", pa.list_(message)), ("tools", pa.string()), ("rewards", pa.list_(pa.float64())),
                      ("turns", pa.list_(turn)), ("outcome", outcome), ("meta", pa.string())])


def _to_row(record: dict[str, Any]) -> dict[str, Any]:
    row = dict(record)
    for key in _JSON_COLUMNS:
        row[key] = None if row[key] is None else json.dumps(row[key], ensure_ascii=False, sort_keys=True)
    return row


def _from_row(row: dict[str, Any]) -> dict[str, Any]:
    record = dict(row)
    for key in _JSON_COLUMNS:
        record[key] = None if record[key] is None else json.loads(record[key])
    record["messages"] = [{k: v for k, v in m.items() if v is not None} for m in record["messages"]]
    return record


def write_parquet(jsonl: str | Path, path: str | Path, *, rows_per_group: int = 256) -> Path:
    """The Parquet form of a finished JSONL export, streamed in row groups (deterministic; replaces ``path``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, schema = Path(path), arrow_schema()
    tmp = path.with_name(path.name + ".part")
    with pq.ParquetWriter(str(tmp), schema, compression="zstd") as writer:
        batch: list[dict[str, Any]] = []
        for record in read_jsonl(jsonl):
            batch.append(_to_row(record))
            if len(batch) == rows_per_group:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    os.replace(tmp, path)
    return path


def write_hf(parquet: str | Path, path: str | Path) -> Path:
    """A ``datasets.Dataset`` saved with ``save_to_disk`` from the Parquet form; its fingerprint is the
    Parquet file's hash, so the directory is deterministic too. Load it with ``datasets.load_from_disk``."""
    import shutil

    import datasets
    import pyarrow.parquet as pq

    path, parquet = Path(path), Path(parquet)
    digest = hashlib.sha256(parquet.read_bytes()).hexdigest()[:16]
    table = pq.read_table(str(parquet), memory_map=True)
    if path.exists():
        shutil.rmtree(path)
    quiet = datasets.utils.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # the export's own progress bar is the one shown
    try:
        datasets.Dataset(table, fingerprint=digest).save_to_disk(str(path))
    finally:
        if not quiet:
            datasets.enable_progress_bars()
    return path


# ---------------------------------------------------------------------------------------------- loading
def load_trajectories(path: str | Path) -> list[dict[str, Any]]:
    """The records of an export, whatever its form: an export directory (its JSONL), a ``.jsonl`` file, a
    ``.parquet`` file, or a ``save_to_disk`` directory. Always the JSONL records (see the module docstring)."""
    path = Path(path)
    if path.is_dir() and (path / JSONL).exists():
        path = path / JSONL
    if path.is_dir():
        if not (path / "dataset_info.json").exists():
            raise ExportError(f"{path} is neither an export directory (with {JSONL}) nor a datasets directory")
        import datasets

        return [_from_row(row) for row in datasets.load_from_disk(str(path))]
    if not path.exists():
        raise ExportError(f"no trajectories at {path}; expected an export directory, a .jsonl or a .parquet file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return [_from_row(row) for row in pq.read_table(str(path)).to_pylist()]
    return list(read_jsonl(path))


# ---------------------------------------------------------------------------------------------- all forms
def export(source: Source, out_dir: str | Path, formats: Sequence[str] = ("jsonl",), *,
           progress: Any = None) -> list[Path]:
    """Export ``source`` into ``out_dir``: always ``trajectories.jsonl`` (resumable), then, as asked,
    ``trajectories.parquet`` and ``hf/`` (``save_to_disk``), rebuilt from the JSONL. Returns the paths written."""
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ExportError(f"unknown export format {', '.join(unknown)}; expected some of {', '.join(FORMATS)}")
    if "parquet" in formats or "hf" in formats:
        _require_datasets()
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"--out {out_dir} is a file; an export writes a directory")
    jsonl = write_jsonl(source, out_dir / JSONL, progress=progress)
    written = [jsonl]
    if "parquet" in formats or "hf" in formats:
        parquet = write_parquet(jsonl, out_dir / PARQUET)
        written.append(parquet)
        if "hf" in formats:
            written.append(write_hf(parquet, out_dir / HF_DIR))
    return written


def _require_datasets() -> None:
    try:
        import datasets  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        raise ExportError("the parquet and hf formats need pyarrow and datasets: pip install 'agentgym[export]' "
                          "(or export jsonl only)") from None
