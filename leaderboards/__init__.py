"""Benchmark suites, a resumable runner for any policy, an SQLite results store and reports (``docs/architecture.md``).

The tree is the architecture:

* ``suite.py`` and ``suites/*.yaml`` — what is measured: versioned suites of env ids, splits, task counts,
  seeds and step limits (``smoke``, ``core``, one per env family); ``env_versions.py`` — the env-version policy
  (one version of each env per suite version) that suites, the store and reports enforce.
* ``policies/`` — what is measured *with*: ``--policy`` SPECs (``random``, ``expert``, ``hf:``, ``vllm:``,
  ``openai:``, ``checkpoint:``) parsed and built into :class:`~agentgym_envs.policies.Policy` objects.
* ``episode.py`` — one episode: env → protocol wrapper → chat → policy, every step recorded; infrastructure
  failures told apart from the agent's.
* ``runner.py`` — a suite in parallel and resumably; ``workers.py`` — the threads or processes that play
  episodes, tied to the runner's life by ``lifeline.py``; ``ray_workers.py`` — the same as Ray actors across a
  cluster (``agentgym bench --ray``); ``leases.py`` — how several runners share one run;
  ``store.py`` — the SQLite results store; ``records.py`` — the plain data between them.
* ``stats.py``, ``report.py``, ``plots.py``, ``html.py``, ``publish.py`` — intervals, pass@k, tables, plots, pages.
* ``viewer.py``, ``templates/``, ``viewer_server.py`` — the episode viewer: stored episodes turn by turn on one
  static page, or served on loopback (``agentgym view``); ``episodes_view.py`` — stored episodes as turns, starts
  replayed from their seeds (the viewer's and the exporter's one reader).
* ``export.py``, ``export_sources.py`` — trajectory datasets: episodes (stored, played by a policy, training
  rollouts) as chat-format JSONL, Parquet and ``datasets``, deterministic and resumable (``agentgym export``).
* ``cli/`` — ``agentgym bench``, ``agentgym leaderboard``, ``agentgym view`` and ``agentgym export``.

>>> from leaderboards import load_suite
>>> load_suite("smoke").name
'smoke'

Programmatic use: ``run_bench("core", "openai:http://127.0.0.1:8000/v1#qwen", "results.sqlite")`` then
``write_report(["results.sqlite"], "leaderboard/")``.
"""

from .errors import LeaderboardError, PolicyLoadError, PolicySpecError, RunAborted, StoreError, SuiteError
from .policies import parse_spec
from .publish import write_report
from .runner import BenchOptions, BenchSummary, run_bench
from .store import default_store_path, open_store
from .suite import Entry, Suite, load_suite, suite_names

__all__ = [
    "BenchOptions", "BenchSummary", "Entry", "LeaderboardError", "PolicyLoadError", "PolicySpecError", "RunAborted",
    "StoreError", "Suite", "SuiteError", "default_store_path", "load_suite", "open_store", "parse_spec", "run_bench",
    "suite_names", "write_report",
]
