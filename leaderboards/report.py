"""From stores to leaderboard numbers, and the Markdown tables that show them.

One :class:`SuiteReport` per suite version found in the stores, with one :class:`RunReport` per run (policy).
Numbers are computed only from scored episodes; infrastructure failures are counted apart and never lower
a success rate. Definitions (also printed under each table):

* success: episodes won (``info["won"]``), averaged per family, then over families (each family counts
  once), with a 95% Agresti–Coull interval for that mean; family columns use 95% Wilson intervals.
* pass@k (k >= 2, when tasks repeat): the unbiased estimator over each task's repeated episodes, averaged
  over tasks per family, then over families (so pass@1 would equal the success column).
* tokens/ep: prompt + completion tokens as the policy reported them; ``≈`` marks an estimate of
  characters / 4 for policies that report none (the env-side baselines).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .stats import macro_rate_ci, mean_pass_at_k, wilson
from .env_versions import clash_line, first_clash, releases, suite_env_ids
from .errors import StoreError
from .store import Run, Store, open_store

CHARS_PER_TOKEN = 4.0


@dataclass
class Rate:
    """Episodes won out of episodes scored."""

    wins: int = 0
    n: int = 0

    @property
    def value(self) -> float:
        return self.wins / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.wins, self.n)


@dataclass
class RunReport:
    """One run's numbers on its suite."""

    label: str
    run: Run
    store: Path
    planned: int
    families: dict[str, Rate] = field(default_factory=dict)
    entries: dict[str, Rate] = field(default_factory=dict)
    steps: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    tokens: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    tokens_estimated: bool = False
    wall_s: list[float] = field(default_factory=list)
    pass_at: dict[int, float | None] = field(default_factory=dict)
    infra_failures: int = 0
    unscored: int = 0
    releases: list[str] = field(default_factory=list)
    """agentgym releases that played the run (``env_versions``); empty for stores written before 0.2.0."""

    @property
    def episodes(self) -> int:
        return sum(r.n for r in self.families.values())

    @property
    def overall(self) -> tuple[float, float, float]:
        return macro_rate_ci([(r.wins, r.n) for r in self.families.values()])

    def mean(self, values: dict[str, list]) -> float:
        flat = [v for vs in values.values() for v in vs]
        return sum(flat) / len(flat) if flat else 0.0


@dataclass
class SuiteReport:
    """Every run of one suite version, best first."""

    name: str
    version: int
    families: list[str]
    entries: list[tuple[str, str]]
    """``(entry key, family)`` in suite order."""
    max_repeats: int
    runs: list[RunReport] = field(default_factory=list)
    fingerprint: str = ""
    """Set only when another definition shares this name and version (then shown in titles)."""

    @property
    def title(self) -> str:
        return f"{self.name} v{self.version}" + (f" [{self.fingerprint}]" if self.fingerprint else "")

    @property
    def slug(self) -> str:
        return f"{self.name}-v{self.version}" + (f"-{self.fingerprint}" if self.fingerprint else "")


def collect(paths: list[str | Path]) -> list[SuiteReport]:
    """Read every run of every store (opened for reading only) into suite reports.

    Runs are grouped by suite, version and fingerprint: two definitions that share a version (an edit
    without a bump) get separate sections, marked with their fingerprints, rather than one misleading table.
    Runs of one suite version on different versions of an env (only stores written before 0.2.0, or several
    stores combined, can hold them) are refused with a :class:`~leaderboards.errors.StoreError`: a suite
    version's numbers are comparable only on the same env versions (:mod:`leaderboards.env_versions`).
    """
    suites: dict[tuple[str, int, str], SuiteReport] = {}
    labels: dict[tuple[str, int, str, str], int] = defaultdict(int)
    for path in paths:
        with open_store(path, create=False) as store:
            for run in store.runs():
                key = (run.suite, run.suite_version, run.suite_fingerprint)
                suite = suites.get(key) or suites.setdefault(key, _suite_report(run))
                labels[key + (run.name,)] += 1
                label = run.name if labels[key + (run.name,)] == 1 else f"{run.name} ({Path(path).stem})"
                suite.runs.append(_run_report(store, run, label, suite))
    _check_env_versions(list(suites.values()))
    for (name, version, fingerprint), suite in suites.items():
        if sum(k[:2] == (name, version) for k in suites) > 1:
            suite.fingerprint = fingerprint
        suite.runs.sort(key=lambda r: (-r.overall[0], r.label))
    return sorted(suites.values(), key=lambda s: (s.name, s.version, s.fingerprint))


def _check_env_versions(suites: list[SuiteReport]) -> None:
    by_version: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)
    for suite in suites:
        for run in suite.runs:
            where = f"run {run.run.name!r} of {run.store}"
            by_version[(suite.name, suite.version)] += [(env_id, where) for env_id in suite_env_ids(run.run.suite_json)]
    for (name, version), ids in by_version.items():
        if clash := first_clash(ids):
            raise StoreError(clash_line(f"{name} v{version}", clash, "a leaderboard table shows one version of each "
                                        "env: report those stores separately (one --store each)"))


def _suite_report(run: Run) -> SuiteReport:
    data = json.loads(run.suite_json)
    entries = [(_key(e), e["family"]) for e in data["entries"]]
    families = list(dict.fromkeys(f for _, f in entries))
    return SuiteReport(run.suite, run.suite_version, families, entries, max(e["repeats"] for e in data["entries"]))


def _key(entry: dict) -> str:
    kwargs = entry.get("kwargs") or {}
    return entry["env_id"] + ("?" + "&".join(f"{k}={kwargs[k]}" for k in sorted(kwargs)) if kwargs else "")


def _run_report(store: Store, run: Run, label: str, suite: SuiteReport) -> RunReport:
    planned = sum(e["tasks"] * e["repeats"] for e in json.loads(run.suite_json)["entries"])
    report = RunReport(label, run, store.path, planned)
    tasks: dict[str, dict[tuple[str, int], list[bool]]] = defaultdict(lambda: defaultdict(list))
    for row in store.episode_rows(run):
        family, won = row["family"], bool(row["won"])
        report.families.setdefault(family, Rate())
        report.entries.setdefault(row["entry"], Rate())
        for rate in (report.families[family], report.entries[row["entry"]]):
            rate.wins, rate.n = rate.wins + won, rate.n + 1
        report.steps[family].append(row["steps"])
        report.tokens[family].append(_tokens(row, report))
        report.wall_s.append(row["wall_s"])
        tasks[family][(row["entry"], row["task"])].append(won)
    report.pass_at = {k: _macro_pass_at_k(tasks, k) for k in range(2, suite.max_repeats + 1)}
    failed = {(r["entry"], r["episode_index"]) for r in store.infra_rows(run)}
    report.infra_failures = len(store.infra_rows(run))
    report.unscored = len(failed - store.finished(run))
    report.releases = releases(store.db, run.id)
    return report


def _macro_pass_at_k(tasks: dict[str, dict[tuple[str, int], list[bool]]], k: int) -> float | None:
    """pass@k per family (mean over its tasks), then the mean over families, like the success column."""
    values = [v for by_task in tasks.values() if (v := mean_pass_at_k(list(by_task.values()), k)) is not None]
    return sum(values) / len(values) if values else None


def _tokens(row, report: RunReport) -> float:
    if row["prompt_tokens"] is not None and row["completion_tokens"] is not None:
        return float(row["prompt_tokens"] + row["completion_tokens"])
    report.tokens_estimated = True
    return (row["prompt_chars"] + row["completion_chars"]) / CHARS_PER_TOKEN


# ----------------------------------------------------------------------------- Markdown
NOTES = ("success: mean over env families of the share of episodes won, with a 95% Agresti–Coull "
         "interval; family columns: share won [95% Wilson interval]; pass@k: unbiased estimator over each task's "
         "repeated episodes, averaged like success (pass@1 = success); tokens/ep: prompt + completion tokens "
         "summed over the episode's turns (≈: characters / 4, for policies that report no tokens); infra: failed "
         "attempts, never scored; env versions: each env id ends in its version (-vN), the same for every run of a "
         "suite version; agentgym: the release(s) that played the run (— for stores written before 0.2.0).")


def fmt_rate(value: float, lo: float, hi: float) -> str:
    return f"{value:.2f} [{lo:.2f}, {hi:.2f}]"


def fmt_tokens(run: RunReport) -> str:
    value = run.mean(run.tokens)
    text = f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"
    return ("≈" if run.tokens_estimated else "") + text


def main_rows(suite: SuiteReport) -> tuple[list[str], list[list[str]]]:
    """The leaderboard table: header and one row per run (shared by the Markdown and HTML renderers)."""
    ks = list(range(2, suite.max_repeats + 1))
    header = (["policy", "success (95% CI)"] + [f"pass@{k}" for k in ks] + suite.families
              + ["steps/ep", "tokens/ep", "s/ep", "episodes", "infra", "agentgym"])
    rows = []
    for run in suite.runs:
        passes = [("—" if run.pass_at.get(k) is None else f"{run.pass_at[k]:.2f}") for k in ks]
        families = [fmt_rate(r.value, *r.interval) if (r := run.families.get(f)) else "—" for f in suite.families]
        wall = sum(run.wall_s) / len(run.wall_s) if run.wall_s else 0.0
        rows.append([run.label, fmt_rate(*run.overall), *passes, *families, f"{run.mean(run.steps):.1f}",
                     fmt_tokens(run), f"{wall:.3g}", f"{run.episodes}/{run.planned}",
                     f"{run.infra_failures}" + (f" ({run.unscored} unscored)" if run.unscored else ""),
                     ", ".join(run.releases) or "—"])
    return header, rows


def entry_rows(suite: SuiteReport) -> tuple[list[str], list[list[str]]]:
    """Per-env success (won/scored) of every run, in suite order."""
    header = ["env", "family"] + [run.label for run in suite.runs]
    rows = []
    for key, family in suite.entries:
        cells = [f"{r.wins}/{r.n}" if (r := run.entries.get(key)) else "—" for run in suite.runs]
        rows.append([key, family, *cells])
    return header, rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header)] + [line(r) for r in rows])


def markdown(suites: list[SuiteReport], plots: dict[str, list[tuple[str, str]]] | None = None) -> str:
    """The whole leaderboard as Markdown; ``plots`` maps a suite slug to ``(caption, relative path)`` pairs."""
    parts = ["# agentgym leaderboard", ""]
    if not suites:
        parts.append("No runs in the store yet: run `agentgym bench --suite smoke --policy random` first.")
    for suite in suites:
        parts += [f"## {suite.title}", "", markdown_table(*main_rows(suite)), "", f"_{NOTES}_", ""]
        for caption, path in (plots or {}).get(suite.slug, []):
            parts += [f"![{caption}]({path})", ""]
        parts += [f"### {suite.title}: success per env (won / scored episodes)", "",
                  markdown_table(*entry_rows(suite)), ""]
    return "\n".join(parts)
