"""Registers the search family: all hop levels mixed, and one id per hop level.

Every id takes the :class:`~agentgym_envs.search.config.SearchConfig` kwargs through ``gymnasium.make``
(``split=``, ``topk=``, ``retriever=``, ``retriever_url=``, ``reward=``, ``world_size=``, ``corpus_path=`` and
``qa_path=`` for your own data, …). The env counts turns itself (``max_turns``, default 12); the registered
step limit is a safety net for replies the env never sees (empty or over-long ones).
"""

from ..registration import register_env

_ENTRY = "agentgym_envs.search.env:SearchEnv"
_STEPS = 24

register_env(
    "agentgym/Search-v0", _ENTRY, family="search", extra="search", max_episode_steps=_STEPS,
    description="Multi-hop QA (1-4 hops, bridge and comparison) over an invented encyclopedia with BM25 search, "
                "Search-R1 tags or search/answer tools; contamination-free, offline.",
)
for _hops in range(1, 5):
    register_env(
        f"agentgym/Search-{_hops}Hop-v0", _ENTRY, family="search", extra="search", max_episode_steps=_STEPS,
        kwargs={"hops": _hops}, description=f"Search, {_hops}-hop questions only.",
    )
