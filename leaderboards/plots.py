"""Static PNG plots for a suite report (matplotlib, Agg backend: no display needed).

Three per suite: success per family with 95% Wilson intervals, steps per episode and tokens per episode
(means with 95% normal intervals), grouped by family with one bar per policy. PNGs are written without
timestamps so that the same store gives byte-identical files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .report import SuiteReport
from .stats import mean_ci

#: PNG metadata that would otherwise embed the matplotlib version and make files differ between machines.
_METADATA = {"Software": None}


def write_plots(suite: SuiteReport, out_dir: Path) -> list[tuple[str, str]]:
    """Write the suite's plots under ``out_dir/plots``; return ``(caption, path relative to out_dir)`` pairs."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    made = []
    for kind, caption, draw in (
        ("success", f"{suite.title}: success per family (95% Wilson intervals)", _success),
        ("steps", f"{suite.title}: steps per episode (mean, 95% interval)", _steps),
        ("tokens", f"{suite.title}: tokens per episode (mean, 95% interval; hatched = estimated from characters)", _tokens),
    ):
        name = f"{suite.slug}-{kind}.png"
        _figure(suite, draw, plots_dir / name)
        made.append((caption, f"plots/{name}"))
    return made


def _figure(suite: SuiteReport, draw, path: Path) -> None:
    import matplotlib.pyplot as plt

    width = max(6.0, 1.1 * len(suite.families) * max(1, len(suite.runs)) ** 0.5 + 2)
    fig, ax = plt.subplots(figsize=(width, 3.6), dpi=100)
    try:
        draw(suite, ax)
        ax.set_xticks(np.arange(len(suite.families)))
        ax.set_xticklabels(suite.families, rotation=20, ha="right")
        ax.grid(axis="y", alpha=0.3)
        if suite.runs:
            ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        fig.savefig(path, format="png", metadata=_METADATA)
    finally:
        plt.close(fig)


def _bars(suite: SuiteReport, ax, values, errors, hatched=None) -> None:
    """Grouped bars: one group per family, one bar per run; ``errors`` is (2, families) per run."""
    n = max(1, len(suite.runs))
    width = 0.8 / n
    x = np.arange(len(suite.families))
    for i, run in enumerate(suite.runs):
        ax.bar(x - 0.4 + width * (i + 0.5), values[i], width, yerr=errors[i], capsize=3, label=run.label,
               hatch="//" if hatched and hatched[i] else None, edgecolor="black", linewidth=0.4)


def _success(suite: SuiteReport, ax) -> None:
    values, errors = [], []
    for run in suite.runs:
        rates = [run.families.get(f) for f in suite.families]
        v = [r.value if r else 0.0 for r in rates]
        lo_hi = [r.interval if r else (0.0, 0.0) for r in rates]
        values.append(v)
        errors.append(np.array([[max(0.0, a - lo) for a, (lo, _) in zip(v, lo_hi)],
                                [max(0.0, hi - a) for a, (_, hi) in zip(v, lo_hi)]]))
    _bars(suite, ax, values, errors)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate")


def _means(suite: SuiteReport, attr: str) -> tuple[list[list[float]], list[np.ndarray]]:
    values, errors = [], []
    for run in suite.runs:
        stats = [mean_ci(getattr(run, attr).get(f, [])) for f in suite.families]
        values.append([m for m, _ in stats])
        errors.append(np.array([[h for _, h in stats], [h for _, h in stats]]))
    return values, errors


def _steps(suite: SuiteReport, ax) -> None:
    _bars(suite, ax, *_means(suite, "steps"))
    ax.set_ylabel("steps per episode")


def _tokens(suite: SuiteReport, ax) -> None:
    _bars(suite, ax, *_means(suite, "tokens"), hatched=[run.tokens_estimated for run in suite.runs])
    ax.set_ylabel("tokens per episode")
    ax.set_yscale("symlog", linthresh=100)
