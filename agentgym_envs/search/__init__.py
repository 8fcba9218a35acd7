"""Search: contamination-free multi-hop question answering over a local corpus, with Search-R1's protocol.

The questions are about a world invented from a seed, so no model can answer them from memory, and every
hop is checked to be needed. The layers, each its own module:

* :mod:`.names` invented words; :mod:`.world` the graph and its schema; :mod:`.generate` a world from a seed;
* :mod:`.corpus` passages (and which passage states which fact); :mod:`.questions` 1–4-hop questions with
  the no-shortcut checks and fixed splits; :mod:`.data` your own jsonl corpus and QA;
  :mod:`.dataset` the shared, cached datasets and indexes;
* :mod:`.retrieval` the retriever protocol and BM25 (``bm25s``); :mod:`.dense` MiniLM dense retrieval;
  :mod:`.service` a shared HTTP ``/retrieve`` service and its client;
* :mod:`.grammar` the native actions (tags and tool calls); :mod:`.scoring` EM and F1;
  :mod:`.expert` the scripted solver and the no-search baseline;
* :mod:`.config` the env's options; :mod:`.env` the :class:`~agentgym_envs.core.TaskEnv` adapter;
  :mod:`.register` the ids.
"""
