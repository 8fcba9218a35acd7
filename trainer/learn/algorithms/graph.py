"""Graph credit (GraphGPO): a state-transition graph of a task's rollouts, and each turn's progress on it.

Source: GraphGPO, "Beyond Trajectory-Level Attribution: Graph-Based Credit Assignment for Agentic
Reinforcement Learning" (ICML 2026, arXiv:2605.26684). Only its abstract and summaries were read here, and
they state the idea, not the formula: aggregate the rollouts into one state-transition
graph, estimate each state's distance to the task goal from the whole graph, and credit each edge by how
much the transition reduces that distance. The formulas below are our reading of that idea:

* **Graph.** Nodes are ``state_key`` values (the state each reply was written in). Turn ``t`` of an
  episode is the edge ``s_t → s_{t+1}``. The last turn of a won episode points to one success node
  (:data:`GOAL`); the last turn of an episode the env ended without a win points to a dead end of its own
  (no path to success); the last turn of an episode cut short (turn limit, context budget) has no known
  next state and gets no edge value (0: nothing is claimed about it).
* **Distance.** ``d(s)`` = the fewest edges from ``s`` to :data:`GOAL` (breadth-first search over the
  reversed edges). A state with no path to success gets the sentinel ``D = |V|`` (the graph's node
  count), larger than any finite distance, so a move into a dead end always scores below a move that
  keeps a path open.
* **Edge value.** ``v(s → s') = d(s) − d(s')``: +1 for a step along a shortest path, 0 for a sideways
  move, negative for a move away. ``d(s) ≤ d(s') + 1`` on any edge, so ``v ≤ 1``.
* **Step advantage.** ``A^G`` = the edge values standardised within *same-source-state* groups (every turn
  of the task's rollouts written in state ``s``), the GRPO way; a state seen once gets 0 (GiGPO's rule,
  :func:`~trainer.learn.algorithms.gigpo.step_group_advantages`, which does the grouping).
* **Mix.** ``A(i, t) = A^E(i) + ω · A^G(i, t)`` with ``A^E`` the episode (outcome) advantage.

``extra_edges`` lets the caller add transitions seen before (TIGPO's persistent graph,
:mod:`trainer.learn.algorithms.tigpo`): they change the distances, never the turns that are credited.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Sequence

from .gigpo import step_group_advantages

GOAL = "\x00success"
"""The success node: where the last turn of every won episode leads."""

Edge = tuple[str, str]


def episode_edges(state_keys: Sequence[str], won: bool, terminated: bool, index: int = 0) -> list[Edge | None]:
    """One edge per turn of an episode (``None`` for a last turn whose next state is unknown).

    >>> episode_edges(["a", "b"], won=True, terminated=True)
    [('a', 'b'), ('b', '\\x00success')]
    >>> episode_edges(["a", "b"], won=False, terminated=False)
    [('a', 'b'), None]
    """
    edges: list[Edge | None] = [(s, s_next) for s, s_next in zip(state_keys, state_keys[1:])]
    if state_keys:
        end = GOAL if won else (f"\x00dead-end:{index}" if terminated else None)
        edges.append(None if end is None else (state_keys[-1], end))
    return edges


def goal_distances(edges: Iterable[Edge]) -> tuple[dict[str, int], int]:
    """``(d, D)``: each node's fewest edges to :data:`GOAL` (BFS over reversed edges), and the sentinel
    ``D = |V|`` for nodes with no path (absent from ``d``).

    >>> goal_distances([("a", "b"), ("b", GOAL), ("c", "a"), ("x", "y")])
    ({'\\x00success': 0, 'b': 1, 'a': 2, 'c': 3}, 6)
    """
    into: dict[str, set[str]] = defaultdict(set)
    nodes: set[str] = set()
    for s, s_next in edges:
        into[s_next].add(s)
        nodes.update((s, s_next))
    distance = {GOAL: 0} if GOAL in nodes else {}
    queue = deque(distance)
    while queue:
        node = queue.popleft()
        for previous in sorted(into[node]):  # sorted: the dict's order is deterministic
            if previous not in distance:
                distance[previous] = distance[node] + 1
                queue.append(previous)
    return distance, len(nodes)


def edge_values(edges: Sequence[Sequence[Edge | None]], distance: dict[str, int], sentinel: int) -> list[list[float]]:
    """``d(s) − d(s')`` for every edge (``None`` edges: 0), unreachable nodes at ``sentinel``."""
    d = lambda node: distance.get(node, sentinel)  # noqa: E731
    return [[0.0 if e is None else float(d(e[0]) - d(e[1])) for e in row] for row in edges]


def graph_step_advantages(state_keys: Sequence[Sequence[str]], won: Sequence[bool], terminated: Sequence[bool], *,
                          extra_edges: Iterable[Edge] = (), normalize_std: bool = True) -> list[list[float]]:
    """``A^G`` for the G trajectories of one task: edge values standardised within same-source-state groups.

    >>> # d(a)=2, d(b)=1; c leads to a dead end: d(c)=D=5 (nodes a, b, c, success, dead end); a->b: 1, a->c: -3
    >>> graph_step_advantages([["a", "b"], ["a", "c"]], [True, False], [True, True], normalize_std=False)
    [[2.0, 0.0], [-2.0, 0.0]]
    """
    edges = [episode_edges(keys, w, term, i) for i, (keys, w, term) in enumerate(zip(state_keys, won, terminated))]
    distance, sentinel = goal_distances([*(e for row in edges for e in row if e is not None), *extra_edges])
    values = edge_values(edges, distance, sentinel)
    return step_group_advantages(values, state_keys, normalize_std=normalize_std)


def mix(episode: Sequence[float], step: Sequence[Sequence[float]], omega: float) -> list[list[float]]:
    """``A^E(i) + ω · A^G(i, t)`` for every turn."""
    return [[episode[i] + omega * a for a in turns] for i, turns in enumerate(step)]
