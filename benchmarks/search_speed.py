"""Speed and retrieval quality of the search env's generated corpus and BM25 index, on one core.

Measures, in one run (default: the ``large`` world, more than 100,000 passages):

* world generation + rendering time, question generation time, BM25 index build time;
* BM25 queries per second for single queries (``k=3``, one call per query, as an env step makes them),
  with the scripted solver's queries and with whole questions as queries;
* recall@3 of gold passages: for each hop of each question, is the hop's gold passage in the top 3 of the
  solver's query for it (per hop level); and, as a contrast, how many gold passages a search for the
  whole question text brings back;
* scripted solver episodes per second through ``gymnasium.make`` on the default (small) world.

The process is pinned to one CPU and BLAS/OpenMP threads are set to 1 before NumPy loads.

    python benchmarks/search_speed.py [--size large] [--seed 0] [--queries 3000] [--questions 500]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import gymnasium  # noqa: E402

import agentgym_envs  # noqa: E402,F401  (registers the ids)
from agentgym_envs.search.corpus import render_world  # noqa: E402
from agentgym_envs.search.generate import generate_world  # noqa: E402
from agentgym_envs.search.questions import generate_questions  # noqa: E402
from agentgym_envs.search.retrieval import BM25Retriever  # noqa: E402


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def queries_per_second(retriever: BM25Retriever, queries: list[str], count: int) -> float:
    for q in queries[:50]:  # warm-up
        retriever.search(q, 3)
    start = time.perf_counter()
    for i in range(count):
        retriever.search(queries[i % len(queries)], 3)
    return count / (time.perf_counter() - start)


def recall_at_3(retriever: BM25Retriever, corpus, questions) -> tuple[float, float]:
    """(solver's per-hop recall@3, fraction of gold passages a whole-question search returns)."""
    hop_hits = hops = question_hits = golds = 0
    for q in questions:
        for hop in q.plan:
            hop_hits += corpus.ids[hop.passage] in {d.id for d in retriever.search(hop.query, 3)}
            hops += 1
        shown = {d.id for d in retriever.search(q.text, 3)}
        question_hits += sum(corpus.ids[p] in shown for p in q.gold_passages)
        golds += len(q.gold_passages)
    return hop_hits / hops, question_hits / golds


def expert_episodes_per_second(seconds: float = 2.0) -> tuple[float, float]:
    env = gymnasium.make("agentgym/Search-v0", split="test")
    episodes = wins = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.reset(options={"task_index": episodes % env.unwrapped.num_tasks})
        while True:
            _, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
            if terminated or truncated:
                break
        episodes, wins = episodes + 1, wins + info["won"]
    return episodes / (time.perf_counter() - start), wins / episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="large", help="tiny, small, medium, large or an entity count")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=int, default=3000, help="single queries timed")
    parser.add_argument("--questions", type=int, default=500, help="questions per hop level for recall")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    size = int(args.size) if args.size.isdigit() else args.size

    rendered, t_world = timed(lambda: render_world(generate_world(args.seed, size)))
    corpus = rendered.corpus
    by_hops, t_questions = timed(lambda: {h: generate_questions(rendered, h, args.questions) for h in (1, 2, 3, 4)})
    retriever, t_index = timed(lambda: BM25Retriever(corpus))
    solver_queries = [hop.query for qs in by_hops.values() for q in qs for hop in q.plan]
    question_queries = [q.text for qs in by_hops.values() for q in qs]
    qps_solver = queries_per_second(retriever, solver_queries, args.queries)
    qps_question = queries_per_second(retriever, question_queries, args.queries)
    recalls = {h: recall_at_3(retriever, corpus, qs) for h, qs in by_hops.items()}
    eps, expert_won = expert_episodes_per_second()

    rows = [
        ("passages", f"{len(corpus):,} ({len(rendered.world.entities):,} entities)"),
        ("world generation + rendering", f"{t_world:.2f} s"),
        ("question generation (4 levels)", f"{t_questions:.2f} s ({sum(map(len, by_hops.values())):,} questions)"),
        ("BM25 index build", f"{t_index:.2f} s"),
        ("BM25 queries/s, solver queries (k=3)", f"{qps_solver:,.0f}"),
        ("BM25 queries/s, whole questions (k=3)", f"{qps_question:,.0f}"),
        *[(f"recall@3 of gold, solver queries, {h}-hop", f"{r[0]:.3f}") for h, r in recalls.items()],
        *[(f"gold found by one whole-question search, {h}-hop", f"{r[1]:.3f}") for h, r in recalls.items()],
        ("solver episodes/s, Search-v0 (small world)", f"{eps:,.0f} (won {expert_won:.1%})"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"| {'measure':{width}} | value |\n|{'-' * (width + 2)}|-------|")
    for name, value in rows:
        print(f"| {name:{width}} | {value} |")


if __name__ == "__main__":
    main()
