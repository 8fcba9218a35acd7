"""Bring your own data: a corpus and a QA file in the jsonl formats the search-agent literature uses.

Corpus lines (one passage each; ``id`` defaults to the line number):

* ``{"id": "12", "title": "Paris", "text": "Paris is the capital ..."}`` (DPR / BEIR style), or
* ``{"id": "12", "contents": "\\"Paris\\"\\nParis is the capital ..."}`` (wiki-18 as Search-R1 and FlashRAG
  ship it: the first line is the title, quotes optional).

QA lines: ``question`` plus the answers under ``golden_answers`` (FlashRAG / Search-R1), ``answers``
(NQ-open, a list or SQuAD's ``{"text": [...]}``) or ``answer`` (HotpotQA, a string or a list). Optional
gold passages: ``gold_ids`` (corpus ids) or HotpotQA's ``supporting_facts`` (``[[title, sentence], ...]``,
mapped to every passage with that title); they feed the retrieval metrics only.

>>> import json, tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "c.jsonl").write_text(json.dumps({"id": "d1", "contents": '"Oslo"\\nOslo is in Norway.'}) + "\\n")
>>> qa = {"question": "Where is Oslo?", "golden_answers": ["Norway"]}
>>> _ = (folder / "q.jsonl").write_text(json.dumps(qa) + "\\n")
>>> corpus = load_corpus(folder / "c.jsonl")
>>> corpus.titles, load_qa(folder / "q.jsonl", corpus)[0].answers
(['Oslo'], ('Norway',))
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .corpus import Corpus


@dataclass(frozen=True)
class QA:
    """One question for the env: answers (aliases included), gold passage ids, and the solver's plan.

    ``plan`` lists ``(query, gold passage id)`` in the order a good searcher needs them; it is empty for
    user data, whose reasoning chain is unknown. ``hops`` and ``shape`` are ``None`` when unknown.
    """

    id: str
    question: str
    answers: tuple[str, ...]
    gold: frozenset[str] = frozenset()
    plan: tuple[tuple[str, str], ...] = ()
    hops: int | None = None
    shape: str | None = None


def _records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: expected one JSON object per line ({e.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
            yield number, record


def load_corpus(path: str | Path) -> Corpus:
    """A :class:`Corpus` from a jsonl file of ``{id, title, text}`` or ``{id, contents}`` records."""
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    for number, record in _records(path):
        if "contents" in record and "text" not in record:
            first, _, rest = str(record["contents"]).partition("\n")
            title, text = first.strip().strip('"'), rest.strip()
        elif "text" in record:
            title, text = str(record.get("title", "")), str(record["text"])
        else:
            raise ValueError(f"{path}:{number}: expected 'text' (with 'title') or 'contents', "
                             f"got keys {sorted(record)}")
        ids.append(str(record.get("id", record.get("_id", number))))
        titles.append(title)
        texts.append(text)
    if not ids:
        raise ValueError(f"{path}: the corpus is empty")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: passage ids must be unique")
    return Corpus(ids, titles, texts)


def _answers(record: dict[str, Any], where: str) -> tuple[str, ...]:
    for key in ("golden_answers", "answers", "answer"):
        value = record.get(key)
        if isinstance(value, dict):  # SQuAD's {"text": [...], "answer_start": [...]}
            value = value.get("text")
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, list) and value:
            return tuple(str(v) for v in value)
    raise ValueError(f"{where}: expected a non-empty 'golden_answers', 'answers' or 'answer'")


def _gold(record: dict[str, Any], corpus: Corpus | None, by_title: dict[str, list[str]]) -> frozenset[str]:
    if isinstance(record.get("gold_ids"), list):
        return frozenset(str(g) for g in record["gold_ids"])
    facts = record.get("supporting_facts")
    if corpus is None or not isinstance(facts, list):
        return frozenset()
    titles = {str(f[0]) for f in facts if isinstance(f, (list, tuple)) and f}
    return frozenset(pid for t in titles for pid in by_title.get(t, ()))


def load_qa(path: str | Path, corpus: Corpus | None = None) -> list[QA]:
    """Questions from a HotpotQA / NQ / FlashRAG-style jsonl file (see the module docstring)."""
    by_title: dict[str, list[str]] = {}
    if corpus is not None:
        for pid, title in zip(corpus.ids, corpus.titles):
            by_title.setdefault(title, []).append(pid)
    items = []
    for number, record in _records(path):
        where = f"{path}:{number}"
        question = record.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"{where}: expected a non-empty string 'question'")
        qid = str(record.get("id", record.get("_id", number)))
        items.append(QA(qid, question.strip(), _answers(record, where), _gold(record, corpus, by_title)))
    if not items:
        raise ValueError(f"{path}: the QA file is empty")
    return items
