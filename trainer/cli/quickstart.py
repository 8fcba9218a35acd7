"""``agentgym quickstart``: build the tiny policy, warm it up on a few expert games, improve it with RL, and
show that RL beat both its own warm-up and more behaviour cloning, on held-out tasks.

On a CPU in a few minutes (settings: :data:`QUICKSTART_CONFIG`, ``trainer/configs/quickstart.yaml``):

1. the tiny tokenizer and model are built locally (cached);
2. behaviour cloning (BC) on a few scripted-expert episodes: the warm-up;
3. RL on train tasks for ``steps`` updates (its wall time is measured);
4. the BC-only control: the warm-up's weights and expert data again, cloned for as long as RL took;
5. held-out success of the warm-up, the RL policy and the control, each sampled at the rollout temperature
   (``eval.repeats`` × ``eval.num_tasks`` episodes, 95% normal intervals, and pass@k for k = 1, 4, 8 up to
   ``eval.repeats``) and greedy.

``agentgym quickstart --model smollm2-135m-instruct`` runs the same five steps on a pretrained LLM with its
own recipe (:data:`MODEL_RECIPES`; ``trainer/configs/smollm2_maze.yaml``).

Held-out tasks are never trained on (seeded envs: odd reset seeds, training uses even ones). The RL
checkpoint is saved in the run directory with a learning-curve PNG. The summary line is
``held-out success: before=<p±ci> after=<p±ci> bc_control=<p±ci> …`` (sampled figures first, greedy after),
then, where ``eval.repeats > 1``, ``held-out pass@1/4 … → …`` (before → after, the control's in brackets).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..run.config import TrainConfig
    from ..run.loop import Trainer

#: The quickstart's settings, the one copy: package data, so an installed (non-editable) package finds it
#: too; ``configs/quickstart.yaml`` in a checkout is a link to this file.
QUICKSTART_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"

#: ``--model NAME``: the recipe that warms up and trains that pretrained model (package data beside
#: :data:`QUICKSTART_CONFIG`; each is also ``agentgym train configs/<file>``).
MODEL_RECIPES = {"smollm2-135m-instruct": QUICKSTART_CONFIG.with_name("smollm2_maze.yaml")}


def quickstart_config(out_dir: str, overrides: list[str] = (), model: str | None = None) -> TrainConfig:
    """The quickstart's :class:`~trainer.config.TrainConfig`: :data:`QUICKSTART_CONFIG` (or the recipe of
    ``model``, :data:`MODEL_RECIPES`), run in ``out_dir``, then the user's ``key=value`` overrides."""
    from ..errors import ConfigError
    from ..run.config import load_config

    if model is not None and model not in MODEL_RECIPES:
        raise ConfigError(f"expected --model to be one of {', '.join(sorted(MODEL_RECIPES))}, got {model!r}; "
                          f"other models train with `agentgym train <recipe> policy.path=<model>`")
    recipe = QUICKSTART_CONFIG if model is None else MODEL_RECIPES[model]
    return load_config(recipe, [f"out_dir={out_dir}", *overrides])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="changes to the quickstart settings")
    parser.add_argument("--out-dir", default=None, help="run directory (default: a fresh temporary one)")
    parser.add_argument("--model", default=None, choices=sorted(MODEL_RECIPES),
                        help="a pretrained model and its recipe instead of the tiny policy (CPU, about an hour)")


def held_out(trainer: Trainer) -> dict[str, dict[str, float]]:
    """Held-out success sampled at the rollout temperature (``eval.repeats`` per task) and greedy (once per
    task): ``{"sampled": evaluate(), "greedy": evaluate()}``. The config's ``eval`` is restored after."""
    ev = trainer.config.eval
    results = {}
    try:
        for name, temperature, repeats in (("sampled", trainer.config.rollout.temperature, ev.repeats), ("greedy", 0.0, 1)):
            trainer.config.eval = dataclasses.replace(ev, temperature=temperature, repeats=repeats)
            results[name] = trainer.evaluate()
    finally:
        trainer.config.eval = ev
    return results


def bc_control(trainer: Trainer, bc_weights: dict[str, Any], seconds: float) -> dict[str, float]:
    """The BC-only control: reload the warm-up's weights and clone the same expert episodes for ``seconds``
    (RL's wall time; a fresh AdamW at ``bc.lr``), so "RL beat BC" is measured at an equal budget."""
    trainer.model.load_state_dict(bc_weights)
    return trainer.warm_up(epochs=10**6, seconds=seconds)


def run(args: argparse.Namespace) -> int:
    from ..run.dashboard import write_held_out
    from ..run.fit import fit
    from ..run.loop import Trainer
    from . import quiet_transformers

    quiet_transformers()
    start = time.perf_counter()
    say = lambda line: print(f"[{_clock(start)}] {line}", flush=True)  # noqa: E731
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="agentgym-quickstart-")
    model = getattr(args, "model", None)
    config = quickstart_config(out_dir, list(args.overrides), model)
    say(f"loading {model} (dequantised once, then cached)" if model
        else "building the tiny policy (tokenizer + model, cached after the first run)")
    trainer = Trainer(config)
    try:
        say(f"warm-up: behaviour cloning on {config.bc.episodes} scripted-expert episodes of {config.env.env_id}")
        say(f"warm-up done: {trainer.warm_up()}")
        if config.checkpoint_last:  # step 0: the warmed-up policy (``agentgym train`` on this out_dir resumes here)
            trainer.save()
        bc_weights = copy.deepcopy(trainer.model.state_dict())
        before = held_out(trainer)
        say(f"held-out after warm-up: {_both(before)}")
        say(f"RL ({config.algorithm.estimator}) for {config.steps} updates of {config.rollout.tasks_per_step}×"
            f"{config.rollout.group_size} episodes; log in {out_dir}/metrics.jsonl")
        rl_start = time.perf_counter()
        records = fit(trainer, echo=say)
        rl_seconds = time.perf_counter() - rl_start
        after = held_out(trainer)
        say(f"held-out after RL ({rl_seconds:.0f} s): {_both(after)}")
        say(f"BC-only control: the warm-up's weights, behaviour cloning for {rl_seconds:.0f} s more")
        say(f"control done: {bc_control(trainer, bc_weights, rl_seconds)}")
        control = held_out(trainer)
        say(f"held-out after the BC control: {_both(control)}")
    finally:
        trainer.close()
    write_held_out(out_dir, [("warm-up (BC)", 0, before["sampled"]), ("BC + RL", config.steps, after["sampled"]),
                             ("BC-only control", config.steps, control["sampled"])])  # drawn by `agentgym plot`
    png = plot_learning_curve(Path(out_dir) / "learning_curve.png", records, before, after, control, caption_of(config))
    say(f"learning curve: {png}" if png else "learning curve: matplotlib is not installed, no PNG written")
    print(f"held-out success: before={_ci(before['sampled'])} after={_ci(after['sampled'])} "
          f"bc_control={_ci(control['sampled'])} (T={config.rollout.temperature:g}, "
          f"{after['sampled']['eval_episodes']} episodes each; greedy {before['greedy']['eval_success']:.3f} / "
          f"{after['greedy']['eval_success']:.3f} / {control['greedy']['eval_success']:.3f}; RL {rl_seconds:.0f} s)")
    if _passes(before["sampled"]):
        print(f"held-out {_passes(before['sampled'])} → {_passes(after['sampled']).split(' ', 1)[1]} "
              f"(control {_passes(control['sampled']).split(' ', 1)[1]}; eval.repeats={config.eval.repeats})")
    return 0


def caption_of(config: TrainConfig) -> dict[str, Any]:
    """What the learning curve's title and caption name: the env, the seed, the held-out temperature and size."""
    ev = config.eval
    return {"env": config.env.env_id, "seed": config.seed, "temperature": config.rollout.temperature,
            "episodes": ev.repeats * ev.num_tasks, "estimator": config.algorithm.estimator}


def plot_learning_curve(path: Path, records: list[dict[str, Any]], before: dict, after: dict, control: dict,
                        caption: dict[str, Any] | None = None) -> Path | None:
    """Two panels sharing the success axis: left, train-batch success per RL update (and its 5-update mean)
    with the held-out warm-up (update 0) and BC + RL (last update); right, the three held-out results side by
    side at labelled positions (the BC-only control is not an RL update, so it gets its own place). A title
    and a caption name the env, seed, temperature and episodes (:func:`caption_of`). ``None`` when matplotlib
    is missing (``pip install agentgym[plot]``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig = learning_curve_figure(plt, records, before, after, control, caption)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def learning_curve_figure(plt: Any, records: list[dict[str, Any]], before: dict, after: dict, control: dict,
                          caption: dict[str, Any] | None = None) -> Any:
    """The figure :func:`plot_learning_curve` saves (a matplotlib ``Figure``; close it when done)."""
    c = {"env": "?", "seed": "?", "temperature": float("nan"), "episodes": "?", "estimator": "RL", **(caption or {})}
    steps = [r["step"] for r in records]
    success = [r.get("success", 0.0) for r in records]
    smooth = [sum(success[max(0, i - 4):i + 1]) / len(success[max(0, i - 4):i + 1]) for i in range(len(success))]
    fig, (ax, held) = plt.subplots(1, 2, figsize=(9, 4.6), sharey=True, gridspec_kw={"width_ratios": [3, 1.4]})
    ax.plot(steps, success, color="0.75", label="train batch success (sampled)")
    ax.plot(steps, smooth, color="C0", label="train batch success, 5-update mean")
    results = (("warm-up\n(BC)", before, "C1", 0), ("BC + RL", after, "C2", steps[-1] if steps else 1),
               ("BC-only\ncontrol", control, "C3", None))
    for x, (label, result, color, update) in enumerate(results):
        sampled = result["sampled"]
        point = dict(yerr=[sampled["eval_success_ci95"]], fmt="o", capsize=4, color=color)
        held.errorbar([x], [sampled["eval_success"]], **point)
        if update is not None:  # the control is no RL update: it is drawn only on the right
            ax.errorbar([update], [sampled["eval_success"]], label="held-out: " + label.replace("\n", " "), **point)
    ax.set(xlabel="RL update", ylabel="success rate", ylim=(0, 1))
    ax.legend(loc="upper left", fontsize=8)
    held.set(xticks=range(len(results)), xlim=(-0.6, len(results) - 0.4), title="held-out, ±95%")
    held.set_xticklabels([label for label, *_ in results], fontsize=8)
    held.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Quickstart on {c['env']}: behaviour cloning, then {c['estimator']}")
    fig.text(0.5, 0.01, f"seed {c['seed']}; held-out success sampled at T={c['temperature']:g}, {c['episodes']} episodes "
             "each (95% intervals); the BC-only control clones for as long as RL trained", ha="center", fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def _ci(result: dict[str, float]) -> str:
    return f"{result['eval_success']:.3f}±{result['eval_success_ci95']:.3f}"


def _passes(result: dict[str, float]) -> str:
    """``pass@1/4 0.520/0.810``: from the sampled evaluation's repeats (k up to ``eval.repeats``), so a reader
    can tell a sharper distribution (pass@1 up, pass@k flat) from new capability (pass@k up too)."""
    ks = sorted(int(key.split("@")[1]) for key in result if key.startswith("eval_pass@"))
    if not ks:
        return ""
    return f"pass@{'/'.join(map(str, ks))} " + "/".join(f"{result[f'eval_pass@{k}']:.3f}" for k in ks)


def _both(results: dict[str, dict[str, float]]) -> str:
    sampled, greedy = results["sampled"], results["greedy"]
    passes = _passes(sampled)
    return (f"sampled {_ci(sampled)} ({sampled['eval_episodes']} episodes{', ' + passes if passes else ''}), "
            f"greedy {_ci(greedy)} ({greedy['eval_episodes']} episodes)")


def _clock(start: float) -> str:
    seconds = int(time.perf_counter() - start)
    return f"{seconds // 60:02d}:{seconds % 60:02d}"
