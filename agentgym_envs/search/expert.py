"""The scripted solver (one good query per hop) and the no-search baseline.

The solver follows the question's plan, built from the world graph: for each hop it searches
"<entity name> <relation keywords>" for the one fact it lacks. It is honest about what an agent could
know: a hop's query names an entity only after the passage revealing that entity was retrieved (plans are
ordered so), it answers only once every gold passage has been shown, and if a hop's query failed to bring
its passage it gives up (answers "unknown") rather than use knowledge it did not read. Its success rate is
therefore a measure of solvability with this retriever, not a constant 1.

The no-search baseline answers at once from the question alone, as a closed-book model would have to:
a year for "In what year" questions, otherwise a name written in the question. Neither can be right,
since answers are never written in questions, which shows they are not guessable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .data import QA

_NAME = re.compile(r"(?:[A-Z][\w'.-]*\s)*[A-Z][\w'.-]*")


def expert_action(qa: QA, queries: Sequence[str], retrieved: set[str]) -> str:
    """The solver's next reply, in Search-R1's tag format, given the episode so far."""
    if not qa.plan:  # user data: no graph to plan with; search the question, then answer (an oracle)
        if not queries:
            return f"<think>I will look the question up.</think>\n<search>{qa.question}</search>"
        return f"<think>I will answer.</think>\n<answer>{qa.answers[0]}</answer>"
    for query, passage in qa.plan:
        if passage in retrieved:
            continue
        if query in queries:  # asked already and the passage did not come back: stop honestly
            return "<think>The search did not return what I need.</think>\n<answer>unknown</answer>"
        return f"<think>Next I need one more fact.</think>\n<search>{query}</search>"
    return f"<think>I have read every fact the question needs.</think>\n<answer>{qa.answers[0]}</answer>"


def closed_book_guess(question: str) -> str:
    """A guess from the question text alone (no retrieval)."""
    if question.startswith("In what year"):
        return "1800"
    names = [n for n in _NAME.findall(question) if n.split()[0] not in ("Who", "Which", "In", "What")]
    return names[-1] if names else "unknown"


def no_search_agent(env: Any, rng: Any = None) -> str:
    """Baseline agent (``agentgym_envs.baselines`` signature): answer at once, never search."""
    qa = env.unwrapped.qa
    return f"<think>I will answer from memory.</think>\n<answer>{closed_book_guess(qa.question)}</answer>"
