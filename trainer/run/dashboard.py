"""Training dashboards: the curves of one or more runs' ``metrics.jsonl`` as PNGs and one self-contained HTML page.

``agentgym plot RUN_DIR [RUN_DIR …]`` (``trainer/cli/plot.py``) calls :func:`write_dashboard`. One PNG per
panel of :data:`PANELS` — reward, success (train batch, and held-out success with its 95% intervals),
entropy, KL, clip fraction, log-prob gap, throughput, loss — drawn from whichever of its keys the logs have.
A key no run logged is skipped with a note saying which config key turns it on; a panel with no key at all
is not drawn. Several run directories are overlaid: one colour per run, one line style per key.

The reader forgives what a killed run leaves: a truncated or corrupt line (typically the last one) is skipped
with a note, never an exception; ``null`` (a non-finite number, :class:`trainer.run.log.JsonlLogger`) is a gap.
Held-out results measured outside the loop (``agentgym quickstart``'s before / after / control) are
``"phase": "held_out"`` records of ``metrics.jsonl`` itself (:func:`write_held_out`; a ``held_out.jsonl``
beside it, where older quickstarts kept them, is read too).

An update of several gradient steps (``optim.epochs`` × ``optim.minibatches``) logs the first step's
``approx_kl_old`` and ``clip_fraction`` (≡ 0 by construction: the policy still is the sampler) and the last
step's as ``<key>_last``; the KL and clip panels plot the last where a run logged it. The page embeds the PNGs as
``data:`` URIs, so it can be mailed or attached as one file; PNGs carry no timestamps or version metadata,
so the same logs give byte-identical files.
"""

from __future__ import annotations

import base64
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TrainerError

METRICS_FILE = "metrics.jsonl"
HELD_OUT_FILE = "held_out.jsonl"
#: PNG metadata matplotlib would otherwise fill with its version (files would differ between machines).
_PNG_METADATA = {"Software": None}
_STYLES = ("-", "--", ":", "-.")


class DashboardError(TrainerError):
    """A run directory has no metrics to plot, or matplotlib is missing."""


@dataclass(frozen=True)
class Panel:
    """One figure: the keys it overlays (first key first), its title and y axis."""

    name: str
    title: str
    ylabel: str
    keys: tuple[str, ...]
    ylim: tuple[float, float] | None = None


PANELS: tuple[Panel, ...] = (
    Panel("reward", "Reward (train batch mean return)", "return", ("reward",)),
    Panel("success", "Success: train batch, and held-out with 95% intervals", "success rate",
          ("success", "eval_success"), (-0.02, 1.02)),
    Panel("entropy", "Policy entropy (token mean)", "nats", ("entropy",)),
    Panel("kl", "KL to the reference policy and to the sampling policy", "nats", ("kl_ref", "approx_kl_old")),
    Panel("clip_fraction", "Clip fraction (tokens whose ratio was clipped)", "fraction", ("clip_fraction", "clip_fraction_dual")),
    Panel("logprob_gap", "Log-prob gap: trainer vs sampler on the sampled tokens", "nats",
          ("logprob_gap_max", "logprob_gap_mean", "rollout_gap_old_mean")),
    Panel("throughput", "Rollout throughput", "per second", ("tokens_per_s", "env_steps_per_s")),
    Panel("loss", "Loss", "loss", ("loss", "pg_loss")),
)

#: Keys measured at each gradient step of an update: a run that logged ``<key>_last`` (several steps) is
#: plotted by it, since the first step's value is ≡ 0 by construction (the policy is still the sampler).
LAST_OF_STEPS = {"approx_kl_old": "approx_kl_old_last", "clip_fraction": "clip_fraction_last"}
HELD_OUT_PHASE = "held_out"

#: Why a key can be missing: the config that makes the trainer log it.
KEY_HINTS = {
    "eval_success": "logged every eval.every updates (eval.every > 0)",
    "kl_ref": "logged when loss.kl_coef > 0",
    "clip_fraction_dual": "logged with a dual-clip loss",
    "rollout_gap_old_mean": "logged with policy.backend=vllm",
    "entropy": "logged once an update ran (groups with reward variance)",
}


@dataclass
class RunMetrics:
    """One run's update records (``step`` set, not the BC warm-up's ``phase`` record) and what reading it noted."""

    label: str
    path: Path
    records: list[dict[str, Any]]
    held_out: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def series(self, key: str) -> tuple[list[float], list[float]]:
        """``(steps, values)`` of the records where ``key`` is a finite number."""
        pairs = [(float(r["step"]), float(r[key])) for r in self.records if _finite(r.get(key))]
        return [s for s, _ in pairs], [v for _, v in pairs]

    def intervals(self, key: str) -> list[float] | None:
        """The ``<key>_ci95`` half-widths aligned with :meth:`series`, or ``None`` if the log has none."""
        rows = [r for r in self.records if _finite(r.get(key))]
        if not any(_finite(r.get(f"{key}_ci95")) for r in rows):
            return None
        return [float(r[f"{key}_ci95"]) if _finite(r.get(f"{key}_ci95")) else 0.0 for r in rows]

    def has(self, key: str) -> bool:
        return any(_finite(r.get(key)) for r in self.records)

    def plotted(self, key: str) -> str:
        """The key drawn for ``key``: its last-gradient-step value where the run logged one (:data:`LAST_OF_STEPS`)."""
        last = LAST_OF_STEPS.get(key)
        return last if last is not None and self.has(last) else key


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_jsonl(text: str, source: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects of ``text``, one per line, and a note per line that is not one (never raises).

    >>> parse_jsonl('{"step": 1}\\n{"step": 2, "rew', "metrics.jsonl")
    ([{'step': 1}], ['metrics.jsonl line 2: not a JSON object (the last line is cut short: a killed run?); skipped'])
    """
    lines = text.splitlines()
    last = max((n for n, line in enumerate(lines) if line.strip()), default=-1)
    records, notes = [], []
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
            continue
        why = " (the last line is cut short: a killed run?)" if n == last else ""
        notes.append(f"{source} line {n + 1}: not a JSON object{why}; skipped")
    return records, notes


def read_run(run_dir: str | Path, label: str | None = None) -> RunMetrics:
    """Read ``<run_dir>/metrics.jsonl`` (or a JSONL file given directly) and ``held_out.jsonl`` if present."""
    path = Path(run_dir)
    metrics = path if path.is_file() else path / METRICS_FILE
    if not metrics.is_file():
        raise DashboardError(f"expected {metrics} (written by agentgym train / agentgym quickstart), got no such "
                             "file: pass a run directory (the config's out_dir)")
    raw, notes = parse_jsonl(metrics.read_text(errors="replace"), metrics.name)
    updates = [r for r in raw if "phase" not in r and _finite(r.get("step"))]
    held = [r for r in raw if r.get("phase") == HELD_OUT_PHASE]
    skipped = len(raw) - len(updates) - len(held)
    if skipped:
        notes.append(f"{skipped} record(s) without a step or from a warm-up phase: not plotted")
    held_path = metrics.parent / HELD_OUT_FILE  # where quickstarts before held-out records kept them
    if not held and held_path.is_file():
        held, held_notes = parse_jsonl(held_path.read_text(errors="replace"), HELD_OUT_FILE)
        notes += held_notes
    held = [h for h in held if _finite(h.get("step")) and _finite(h.get("eval_success"))]
    return RunMetrics(label or metrics.parent.name or str(metrics.parent), metrics.parent, updates, held, notes)


def write_held_out(run_dir: str | Path, results: list[tuple[str, int, dict[str, Any]]]) -> Path:
    """Append held-out evaluations made outside the loop, ``(label, step, Trainer.evaluate() dict)`` each, to
    ``<run_dir>/metrics.jsonl`` as ``"phase": "held_out"`` records, so the run's one log holds every figure it
    reports; the dashboard draws them as points with their intervals."""
    keys = ("eval_success", "eval_success_ci95", "eval_episodes")
    rows = [{"phase": HELD_OUT_PHASE, "label": label, "step": step, **{k: result[k] for k in keys if k in result}}
            for label, step, result in results]
    path = Path(run_dir) / METRICS_FILE
    with path.open("a") as f:
        f.write("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
    return path


def unique_labels(paths: list[Path]) -> list[str]:
    """Run labels: each directory's name, or more of its path where two names clash."""
    labels = [p.resolve().name for p in paths]
    for depth in range(2, 6):
        clash = {lab for lab in labels if labels.count(lab) > 1}
        if not clash:
            break
        labels = ["/".join(p.resolve().parts[-depth:]) if lab in clash else lab for p, lab in zip(paths, labels)]
    return labels


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as e:
        raise DashboardError("agentgym plot needs matplotlib: pip install 'agentgym[plot]'") from e
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _rolling(values: list[float], window: int) -> list[float]:
    return [sum(values[max(0, i - window + 1):i + 1]) / len(values[max(0, i - window + 1):i + 1]) for i in range(len(values))]


def _draw_key(ax: Any, run: RunMetrics, key: str, color: str, style: str, label: str) -> None:
    """One key of one run: error bars if it has ``_ci95`` half-widths, else a line (and a 5-update mean when long)."""
    steps, values = run.series(key)
    errors = run.intervals(key)
    if errors is not None:
        ax.errorbar(steps, values, yerr=errors, fmt="o" + style, color=color, capsize=3, markersize=4, label=label + " ±95%")
    elif len(values) >= 10:
        ax.plot(steps, values, style, color=color, alpha=0.3, linewidth=1)
        ax.plot(steps, _rolling(values, 5), style, color=color, linewidth=1.8, label=label + " (5-update mean)")
    else:
        ax.plot(steps, values, style, color=color, marker=".", label=label)


def _draw_held_out(ax: Any, run: RunMetrics, color: str, prefix: str) -> None:
    markers = "sD^v<>p*"
    for i, row in enumerate(run.held_out):
        same = sum(earlier["step"] == row["step"] for earlier in run.held_out[:i])  # side by side, not on top
        ax.errorbar([row["step"] + 0.12 * same], [row["eval_success"]], yerr=[row.get("eval_success_ci95") or 0.0], fmt=markers[i % 8],
                    color=color if prefix else f"C{i + 2}", capsize=4, markersize=6,
                    label=f"{prefix}held-out: {row.get('label', 'eval')} ±95%")


def draw_panel(panel: Panel, runs: list[RunMetrics], path: Path) -> list[str]:
    """Draw ``panel`` for ``runs`` into ``path``; return the keys drawn (nothing is written when none is): a
    key of :data:`LAST_OF_STEPS` is drawn as its ``_last`` where a run logged that."""
    keys = [k for k in panel.keys if any(run.has(k) for run in runs)]
    drawn = list(dict.fromkeys(run.plotted(k) for k in keys for run in runs if run.has(k)))
    held = panel.name == "success" and any(run.held_out for run in runs)
    if not keys and not held:
        return []
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4), dpi=100)
    try:
        many = len(runs) > 1
        for r, run in enumerate(runs):
            for k, key in enumerate(keys):
                if run.has(key):
                    color, style = (f"C{r}", _STYLES[k % 4]) if many else (f"C{k}", "-")
                    source = run.plotted(key)
                    name = f"{key} (last gradient step)" if source != key else key
                    _draw_key(ax, run, source, color, style, f"{run.label}: {name}" if many else name)
            if panel.name == "success" and run.held_out:
                _draw_held_out(ax, run, f"C{r}", f"{run.label}: " if many else "")
        ax.set(title=panel.title, xlabel="update (step)", ylabel=panel.ylabel)
        ax.xaxis.get_major_locator().set_params(integer=True)
        if panel.ylim:
            ax.set_ylim(*panel.ylim)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        fig.savefig(path, format="png", metadata=_PNG_METADATA)
    finally:
        plt.close(fig)
    return drawn + (["held-out"] if held else [])


@dataclass
class Dashboard:
    """What :func:`write_dashboard` wrote: the page, one ``(panel, png path, keys drawn)`` per figure, the notes."""

    html: Path
    figures: list[tuple[Panel, Path, list[str]]]
    notes: list[str]


def write_dashboard(runs: list[RunMetrics], out_dir: str | Path) -> Dashboard:
    """Write one PNG per drawable panel and ``index.html`` (PNGs embedded) under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    notes = [f"{run.label}: {note}" for run in runs for note in run.notes]
    notes += [f"{run.label}: no update records in {run.path / METRICS_FILE} yet" for run in runs if not run.records]
    figures = []
    for panel in PANELS:
        for key in panel.keys:
            missing = [run.label for run in runs if run.records and not run.has(key)]
            if missing and len(missing) == len([run for run in runs if run.records]):
                notes.append(f"{panel.name}: no run logged {key!r}" + (f" ({KEY_HINTS[key]})" if key in KEY_HINTS else ""))
        path = out / f"{panel.name}.png"
        drawn = draw_panel(panel, runs, path)
        if drawn:
            figures.append((panel, path, drawn))
        else:
            path.unlink(missing_ok=True)  # a stale figure from an earlier plot of this folder would mislead
            notes.append(f"{panel.name}: nothing to draw, skipped")
    page = out / "index.html"
    page.write_text(render_html(runs, figures, notes))
    return Dashboard(page, figures, notes)


def summary_rows(run: RunMetrics) -> list[str]:
    """The table cells of one run: updates, final reward / success, last and best held-out success, tokens/s."""
    def last(key: str) -> str:
        values = run.series(key)[1]
        return f"{values[-1]:.3g}" if values else "—"

    values = run.series("eval_success")[1]
    evals = list(zip(values, run.intervals("eval_success") or [0.0] * len(values)))
    evals += [(row["eval_success"], row.get("eval_success_ci95") or 0.0) for row in run.held_out]
    held = f"{evals[-1][0]:.3f} ± {evals[-1][1]:.3f}" if evals else "—"
    best = f"{max(evals)[0]:.3f}" if evals else "—"
    steps = run.series("step")[1]
    return [run.label, str(run.path), str(len(run.records)), f"{steps[-1]:g}" if steps else "—",
            last("reward"), last("success"), held, best, last("tokens_per_s")]


def render_html(runs: list[RunMetrics], figures: list[tuple[Panel, Path, list[str]]], notes: list[str]) -> str:
    """One static page, no external resources: a summary table per run, the notes, the figures inline."""
    head = ["run", "directory", "updates", "last step", "reward", "success", "held-out (last)", "held-out (best)", "tokens/s"]
    table = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in summary_rows(run)) + "</tr>" for run in runs)
    items = "".join(f"<li>{html.escape(note)}</li>" for note in notes) or "<li>none</li>"
    blocks = []
    for panel, path, drawn in figures:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        blocks.append(f'<figure id="{panel.name}"><img alt="{html.escape(panel.title)}" src="data:image/png;base64,{data}">'
                      f"<figcaption>{html.escape(panel.title)} — {html.escape(', '.join(drawn))}</figcaption></figure>")
    title = "Training dashboard: " + ", ".join(run.label for run in runs)
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><table><tr>{''.join(f'<th>{h}</th>' for h in head)}</tr>{table}</table>"
            f"<h2>Notes</h2><ul>{items}</ul><h2>Curves</h2>{''.join(blocks)}</body></html>\n")


_CSS = ("body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;font-size:.9em}th{background:#f3f3f3}"
        "figure{display:inline-block;margin:.5em}img{max-width:100%}figcaption{font-size:.85em;color:#555}")
