"""Bring-your-own data: jsonl corpus and QA loaders in the common formats, and an env on them."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.search.data import load_corpus, load_qa

PASSAGES = [
    {"id": "d1", "title": "Oslo", "text": "Oslo is the capital of Norway."},
    {"id": "d2", "title": "Bergen", "text": "Bergen is a city on the west coast of Norway."},
    {"id": "d3", "title": "Norway", "text": "Norway is a country in Northern Europe."},
    {"id": "d4", "title": "Lyon", "text": "Lyon is a city in France."},
]
QUESTIONS = [
    {"_id": "h1", "question": "Which country is Oslo the capital of?", "answer": "Norway",
     "supporting_facts": [["Oslo", 0]]},
    {"id": "n1", "question": "Where is Lyon?", "golden_answers": ["France", "French Republic"]},
    {"question": "What coast is Bergen on?", "answers": {"text": ["west coast"]}},
]


def _write(folder: Path, name: str, records: list[dict]) -> str:
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    return _write(tmp_path, "corpus.jsonl", PASSAGES), _write(tmp_path, "qa.jsonl", QUESTIONS)


def test_loaders_read_both_corpus_styles_and_all_answer_keys(tmp_path: Path, files) -> None:
    contents = [{"id": p["id"], "contents": f'"{p["title"]}"\n{p["text"]}'} for p in PASSAGES]
    a, b = load_corpus(files[0]), load_corpus(_write(tmp_path, "wiki.jsonl", contents))
    assert a.titles == b.titles and a.texts == b.texts and a.ids == ["d1", "d2", "d3", "d4"]
    qa = load_qa(files[1], a)
    assert [q.answers for q in qa] == [("Norway",), ("France", "French Republic"), ("west coast",)]
    assert qa[0].gold == frozenset({"d1"}) and qa[1].gold == frozenset() and qa[2].id == "3"


@pytest.mark.parametrize("line, message", [
    ({"title": "x"}, "expected 'text'"), ("[1, 2]", "expected a JSON object"),
])
def test_bad_corpus_lines_name_the_line(tmp_path: Path, line, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(PASSAGES[0]) + "\n" + (line if isinstance(line, str) else json.dumps(line)) + "\n")
    with pytest.raises(ValueError, match=f"bad.jsonl:2: {message}"):
        load_corpus(path)


def test_bad_qa_lines_name_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "qa.jsonl", [{"question": "Where?"}])
    with pytest.raises(ValueError, match="qa.jsonl:1: expected a non-empty 'golden_answers'"):
        load_qa(path)


def test_env_on_user_data(files) -> None:
    corpus_path, qa_path = files
    env = gymnasium.make("agentgym/Search-v0", corpus_path=corpus_path, qa_path=qa_path, topk=2)
    assert env.unwrapped.num_tasks == 3 and env.unwrapped.split == "all"
    obs, info = env.reset(options={"task_index": 0})
    assert "Oslo" in info["instruction"]
    obs, _, _, _, info = env.step("<search>Oslo capital</search>")
    assert "(Title: Oslo) Oslo is the capital of Norway." in obs and info["metrics"]["all_gold_retrieved"] == 1.0
    obs, reward, terminated, _, info = env.step("<answer>norway</answer>")
    assert terminated and reward == 1.0 and info["won"]


def test_user_data_expert_is_an_oracle_that_searches_once(files) -> None:
    env = gymnasium.make("agentgym/Search-v0", corpus_path=files[0], qa_path=files[1])
    env.reset(options={"task_index": 1})
    assert env.unwrapped.expert_action().endswith("<search>Where is Lyon?</search>")
    env.step(env.unwrapped.expert_action())
    assert env.step(env.unwrapped.expert_action())[4]["won"]
