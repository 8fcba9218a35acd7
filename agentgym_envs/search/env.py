"""SearchEnv: multi-hop question answering by searching a local corpus, with Search-R1's protocol.

Arguments: see :class:`~agentgym_envs.search.config.SearchConfig` (``split``, ``hops``, ``world_seed``,
``world_size``, ``topk``, ``retriever``, ``retriever_url``, ``reward``, ``format_weight``, ``max_turns``,
``corpus_path``/``qa_path`` for your own data).

Episode: ``reset`` picks question ``i`` of the split (``options={"task_index": i}``, or drawn with
``self.np_random``); the first observation is the question with the rules. Each step is one reply:

* ``<search>query</search>`` (or ``search(query=…)``) returns the top-k passages as
  ``<information>Doc 1(Title: …) …\\nDoc 2(Title: …) …</information>``, exactly Search-R1's text;
* ``<answer>text</answer>`` (or ``answer(text=…)``) ends the episode with the reward;
* anything else is an invalid action whose observation says how to search and answer (reward 0).

Every reply that reaches the env counts as a turn; at ``max_turns`` the episode is truncated.
Reward (``reward=``): ``em`` 1.0 for an exact match after normalisation (any alias); ``f1`` token F1;
``em_format`` exact match with format terms (right and every turn well formed 1.0, right but some turn
ill formed ``1 - format_weight``, wrong but well formed ``format_weight``, else 0). ``won`` is exact match;
``score`` is exact match (F1 under ``reward="f1"``). A retrieval service that fails truncates the episode
with ``info["infra_error"]``.

``info["metrics"]``: ``searches``, ``turns``, ``answered``, ``em``, ``f1``, ``format_ok`` and, when the
gold passages are known, ``gold_passages``, ``gold_retrieved`` (the fraction shown so far) and
``all_gold_retrieved``; generated questions add ``hops``. ``state_key`` is the question and the set of
passages shown, which is what the agent knows.

Protocols: the tags are this env's native grammar, so Search-R1-style rollouts step the env with the raw
model text (no wrapper); ``protocol="tool_calls"`` serves tool-calling models. The ``plain``/``react``/``tags``
protocols remove ``<think>`` before the env sees the reply, so through them ``em_format`` counts every tag
turn as ill formed; use ``em`` or ``f1`` there.

Why one env and not two variants: the env is a :class:`~agentgym_envs.core.ToolEnv` whose ``search`` and
``answer`` tools give the tool-call protocol its schemas, and whose native grammar *also* accepts the tags,
so one id serves Search-R1-style training (raw text, tags) and tool-calling models (``protocol="tool_calls"``)
with identical episodes, rewards and metrics.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..core import InvalidAction, Step, Task, TaskEnv, ToolEnv, tool
from .config import SearchConfig
from .data import QA
from .dataset import USER_SPLIT, build_retriever, load_dataset
from .expert import expert_action
from .grammar import HOW_TO, no_action_message, parse_tags, tool_call_text
from .retrieval import Document, Retriever
from .scoring import exact_match, f1_score
from .service import RemoteRetriever

SYSTEM_PROMPT = (
    "You answer questions about a fictional world by searching its encyclopedia; nothing about it is known "
    "outside the encyclopedia. Reason inside <think> and </think> whenever you get new information. To search, "
    "write <search> query </search>; the top results come back between <information> and </information>. "
    "Search as often as you need, one fact at a time. When you know the answer, write it between <answer> and "
    "</answer>, without explanation, e.g. <answer> Varlonia </answer>."
)
MAX_QUERY_CHARS = 1_000


def format_information(docs: list[Document]) -> str:
    """Search-R1's rendering of retrieved passages."""
    lines = "".join(f"Doc {i}(Title: {d.title}) {d.text}\n" for i, d in enumerate(docs, 1))
    return f"<information>{lines.strip()}</information>"


class SearchEnv(ToolEnv, TaskEnv):
    """Multi-hop QA over a local corpus; see the module docstring."""

    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format: ClassVar[dict[str, str]] = {
        "Reason inside <think> and </think> whenever you get new information.": "",
        "To search, write <search> query </search>;": "To search, act with <search> query </search>;",
        "When you know the answer, write it between <answer> and </answer>,":
            "When you know the answer, act with <answer> your answer </answer>,",
        HOW_TO: "",
    }
    #: The dataset and the index are shared, static and large: never part of a snapshot.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("tasks", "data", "retriever")

    def __init__(self, render_mode: str | None = None, **kwargs: Any):
        config = SearchConfig(**kwargs)
        data = load_dataset(world_seed=config.world_seed, world_size=config.world_size,
                            corpus_path=config.corpus_path, qa_path=config.qa_path)
        split = config.split or (USER_SPLIT if config.corpus_path else "train")
        questions = data.qa(split, config.hops)
        if not questions:
            raise ValueError(f"no questions in split {split!r} with hops={config.hops} for {data.name}")
        super().__init__([Task(f"search/{split}/{q.id}", q.question, {"qa": q}) for q in questions],
                         render_mode=render_mode)
        self.config, self.split, self.data = config, split, data
        self.retriever: Retriever = (RemoteRetriever(config.retriever_url) if config.retriever_url
                                     else build_retriever(data, config.retriever))
        self._clear()

    @property
    def qa(self) -> QA:
        """The current question (answers and gold passages included: for analysis, not for agents)."""
        return self.task.data["qa"]

    def _clear(self) -> None:
        self._turns = 0
        self._queries: list[str] = []
        self._shown: list[str] = []  # ids of passages shown, first-seen order
        self._format_ok = True
        self._answered = False
        self._em = self._f1 = 0.0

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        _, info = super()._reset(options)
        self._clear()
        observation = (f"Answer the question, searching the encyclopedia as needed. {HOW_TO}\n"
                       f"Question: {self.qa.question}")
        info["metrics"] = {**self.metrics(), "task_index": float(self.task_index)}
        return observation, info

    def _step(self, action: str) -> Step:
        self._turns += 1
        try:
            step = self._act(action)
        except InvalidAction as e:
            self._format_ok = False
            if self._turns < self.config.max_turns:
                raise
            # ``InvalidAction`` cannot end an episode, so the last allowed turn reports itself invalid here.
            return Step(f"{e.reason}\n{self._limit_text()}", truncated=True, won=False, score=0.0,
                        info={"action_valid": False, "parse_error": e.reason})
        if not step.terminated and self._turns >= self.config.max_turns:
            step.observation, step.truncated = f"{step.observation}\n{self._limit_text()}", True
        return step

    def _act(self, action: str) -> Step:
        tagged = parse_tags(action)
        if tagged is not None:
            self._format_ok = self._format_ok and tagged.well_formed
            return self._search(tagged.argument) if tagged.verb == "search" else self._answer(tagged.argument)
        call = tool_call_text(action)
        if call is None:
            raise InvalidAction(no_action_message(action))
        return super()._step(call)  # ToolEnv: parse, bind and dispatch to a @tool method

    def _limit_text(self) -> str:
        return f"Turn limit reached ({self.config.max_turns} turns) without an answer; the episode is over."

    # ----------------------------------------------------------------- tools
    @tool
    def search(self, query: str) -> Step:
        """Search the encyclopedia and return the top passages.

        Args:
            query: what to look for; a name and a few keywords work best.
        """
        return self._search(query)

    @tool
    def answer(self, text: str) -> Step:
        """Give the final answer and end the episode.

        Args:
            text: the answer alone, e.g. a name or a year.
        """
        return self._answer(text)

    def _search(self, query: str) -> Step:
        query = " ".join(query.split())
        if not query:
            raise InvalidAction("Invalid action: the search query is empty; write a few keywords.")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidAction(f"Invalid action: the query is {len(query):,} characters; "
                                f"keep it under {MAX_QUERY_CHARS:,}.")
        docs = self.retriever.search(query, self.config.topk)  # InfraError propagates to the base class
        self._queries.append(query)
        for doc in docs:
            if doc.id not in self._shown:
                self._shown.append(doc.id)
        return Step(format_information(docs))

    def _answer(self, text: str) -> Step:
        text = " ".join(text.split())
        if not text:
            raise InvalidAction("Invalid action: the answer is empty; write it between <answer> and </answer>.")
        answers = self.qa.answers
        self._answered, self._em, self._f1 = True, exact_match(text, answers), f1_score(text, answers)
        reward = self._reward()
        won = self._em == 1.0
        verdict = "Correct." if won else f"Incorrect. The expected answer was {answers[0]!r}."
        score = self._f1 if self.config.reward == "f1" else self._em
        return Step(f"Your answer: {text!r}. {verdict}", reward=reward, terminated=True, won=won, score=score)

    def _reward(self) -> float:
        mode, weight = self.config.reward, self.config.format_weight
        if mode == "f1":
            return self._f1
        if mode == "em":
            return self._em
        if self._em == 1.0:
            return 1.0 if self._format_ok else 1.0 - weight
        return weight if self._format_ok else 0.0

    # ----------------------------------------------------------------- contract hooks
    def expert_action(self) -> str:
        """The scripted solver's next reply (see :mod:`.expert`)."""
        return expert_action(self.qa, self._queries, set(self._shown))

    def as_tool_call(self, action: str) -> dict[str, Any] | None:
        """A ``<search>``/``<answer>`` tag reply as the ``search(query)`` / ``answer(text)`` call (its reasoning dropped)."""
        tag = parse_tags(action)
        if tag is None:
            return None
        return {"name": tag.verb, "arguments": {"query" if tag.verb == "search" else "text": tag.argument}}

    def metrics(self) -> dict[str, float]:
        m = {"searches": float(len(self._queries)), "turns": float(self._turns), "answered": float(self._answered),
             "em": self._em, "f1": self._f1, "format_ok": float(self._format_ok)}
        gold = self.qa.gold
        if gold:
            found = len(gold.intersection(self._shown))
            m.update(gold_passages=float(len(gold)), gold_retrieved=found / len(gold),
                     all_gold_retrieved=float(found == len(gold)))
        if self.qa.hops is not None:
            m["hops"] = float(self.qa.hops)
        return m

    def state_key_material(self) -> str:
        return f"{self.task.id}\x1f{','.join(sorted(self._shown))}\x1f{int(self._answered)}"

