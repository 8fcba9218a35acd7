"""``agentgym plot`` on real runs: a few-step ``agentgym train`` run and a shrunken ``agentgym quickstart`` run.

Each figure is a real PNG, the page embeds exactly those bytes (no external resource), a cut-short last line
(a killed run) changes no figure, keys a run never logged are notes, and several runs overlay.
"""

import base64
import json
import re
import shutil

import pytest

from agentgym_envs.cli.main import main
from trainer.run.dashboard import PANELS, draw_panel, parse_jsonl, read_run, unique_labels
from trainer.run.log import JsonlLogger

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MAZE = ["env.env_id=agentgym/Maze-Easy-v0", "env.train_kwargs={size: 3}", "env.eval_kwargs={size: 3}", "env.max_turns=3",
        "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=4", "eval.num_tasks=2",
        "algorithm.filter_zero_variance=false", "policy.threads=1"]
#: eval.every=1: held-out success with intervals each update; kl_coef > 0: KL to the reference is logged.
TRAIN = MAZE + ["steps=3", "eval.every=1", "loss.kl_coef=0.01", "bc.episodes=0", "checkpoint_every=0"]


@pytest.fixture(scope="module")
def train_run(tmp_path_factory, tiny_overrides):
    out = tmp_path_factory.mktemp("train") / "run"
    assert main(["train", "-", *tiny_overrides, *TRAIN, f"out_dir={out}"]) == 0
    return out


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory, tiny_overrides):
    """The quickstart command itself, shrunk to two updates (its own config, the tiny test model)."""
    out = tmp_path_factory.mktemp("quickstart") / "run"
    assert main(["quickstart", "--out-dir", str(out), *tiny_overrides, *MAZE, "steps=2", "bc.episodes=2", "bc.epochs=1",
                 "eval.repeats=1"]) == 0
    return out


def embedded_pngs(page: str) -> dict[str, bytes]:
    return {name: base64.b64decode(data)
            for name, data in re.findall(r'<figure id="(\w+)"><img alt="[^"]*" src="data:image/png;base64,([^"]+)"', page)}


def test_plot_draws_every_curve_a_real_run_logged_and_one_self_contained_page(train_run, capsys):
    assert main(["plot", str(train_run)]) == 0
    out = capsys.readouterr().out
    board = train_run / "dashboard"
    expected = {"reward", "success", "entropy", "kl", "clip_fraction", "logprob_gap", "throughput", "loss"}
    assert {p.name for p in PANELS} == expected
    assert {p.stem for p in board.glob("*.png")} == expected
    for name in expected:
        assert (board / f"{name}.png").read_bytes().startswith(PNG_MAGIC), name
    page = (board / "index.html").read_text()
    assert embedded_pngs(page) == {name: (board / f"{name}.png").read_bytes() for name in expected}
    assert "http" not in page and "<script" not in page  # nothing fetched, nothing run
    assert re.search(r"success: \S+success\.png \(success, eval_success\)", out), out
    assert re.search(r"kl: \S+ \(kl_ref, approx_kl_old\)", out), out
    # a key no run logged is a note, not an error: the vLLM-only log-prob gap
    assert "note: logprob_gap: no run logged 'rollout_gap_old_mean' (logged with policy.backend=vllm)" in out
    assert f"dashboard: {board / 'index.html'} (8 figures, 1 run)" in out
    run = read_run(train_run)
    assert [r["step"] for r in run.records] == [1, 2, 3] and run.intervals("eval_success") is not None


def test_a_cut_short_last_line_and_junk_lines_change_no_figure(train_run, tmp_path, capsys):
    """A killed run leaves half a line: it is skipped with a note; the figures are byte-identical to the clean log's."""
    killed = tmp_path / "killed"
    killed.mkdir()
    lines = (train_run / "metrics.jsonl").read_text().splitlines()
    junk = [lines[0], "\x00\xffnot json", "[1, 2]", *lines[1:], lines[-1][: len(lines[-1]) // 2]]
    (killed / "metrics.jsonl").write_text("\n".join(junk))  # no final newline: the write was cut
    assert main(["plot", str(train_run), "--out", str(tmp_path / "clean")]) == 0
    assert main(["plot", str(killed), "--out", str(tmp_path / "cut")]) == 0
    out = capsys.readouterr().out
    assert f"metrics.jsonl line {len(junk)}: not a JSON object (the last line is cut short: a killed run?); skipped" in out
    assert "metrics.jsonl line 2: not a JSON object; skipped" in out and "line 3: not a JSON object; skipped" in out
    for name in ("reward", "success", "entropy", "kl"):
        assert (tmp_path / "cut" / f"{name}.png").read_bytes() == (tmp_path / "clean" / f"{name}.png").read_bytes(), name


def test_missing_keys_are_notes_and_a_directory_without_metrics_is_refused(train_run, tmp_path, capsys):
    """An older or smaller log (only step and reward): one figure, a note per panel skipped; never a crash."""
    import json

    records, _ = parse_jsonl((train_run / "metrics.jsonl").read_text(), "metrics.jsonl")
    sparse = tmp_path / "sparse"
    sparse.mkdir()
    warm_up = {"phase": "bc", "step": 0, "bc_trajectories": 2}  # the record fit() writes after a BC warm-up
    (sparse / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [warm_up, *({"step": r["step"], "reward": r["reward"]}
                                                                                       for r in records)]))
    (sparse / "dashboard").mkdir()
    (sparse / "dashboard" / "entropy.png").write_bytes(PNG_MAGIC)  # a stale figure of an earlier plot
    assert main(["plot", str(sparse)]) == 0
    out = capsys.readouterr().out
    assert {p.stem for p in (sparse / "dashboard").glob("*.png")} == {"reward"}
    assert "note: entropy: nothing to draw, skipped" in out and "note: kl: no run logged 'kl_ref' (logged when loss.kl_coef > 0)" in out
    assert "1 record(s) without a step or from a warm-up phase: not plotted" in out
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "metrics.jsonl").write_text("")
    assert main(["plot", str(tmp_path / "empty")]) == 0
    assert "no update records" in capsys.readouterr().out
    assert main(["plot", str(tmp_path / "nowhere")]) == 2
    assert f"expected {tmp_path / 'nowhere' / 'metrics.jsonl'} (written by agentgym train" in capsys.readouterr().out
    (tmp_path / "file").write_text("")
    assert main(["plot", str(sparse), "--out", str(tmp_path / "file" / "out")]) == 2
    assert "expected a readable run directory and a writable --out folder, got [Errno 20] Not a directory" in capsys.readouterr().out
    assert main(["plot", str(sparse), "--label", "<script>alert(1)</script>", "--out", str(tmp_path / "named")]) == 0
    page = (tmp_path / "named" / "index.html").read_text()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # a label is text, never markup


def test_a_quickstart_run_plots_with_its_held_out_results(quickstart_run, capsys):
    """The quickstart records before / after / control held-out success; the success figure draws them."""
    run = read_run(quickstart_run)
    assert [h["label"] for h in run.held_out] == ["warm-up (BC)", "BC + RL", "BC-only control"]
    assert [h["step"] for h in run.held_out] == [0, 2, 2] and all("eval_success_ci95" in h for h in run.held_out)
    logged = [json.loads(line) for line in (quickstart_run / "metrics.jsonl").read_text().splitlines()]
    assert [r["label"] for r in logged if r.get("phase") == "held_out"] == [h["label"] for h in run.held_out]
    assert not (quickstart_run / "held_out.jsonl").exists()  # one home: the run's own log
    assert main(["plot", str(quickstart_run)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"success: \S+success\.png \(success, held-out\)", out), out
    assert (quickstart_run / "dashboard" / "success.png").read_bytes().startswith(PNG_MAGIC)
    assert (quickstart_run / "learning_curve.png").exists()  # the quickstart's own figure is still written


def test_several_runs_overlay_on_one_page(train_run, quickstart_run, tmp_path, capsys):
    twin = tmp_path / "other" / "run"  # same directory name as train_run: labels take more of the path
    shutil.copytree(train_run, twin, ignore=shutil.ignore_patterns("checkpoints", "dashboard"))
    assert unique_labels([train_run, twin]) == [f"{train_run.parent.name}/run", "other/run"]
    out_dir = tmp_path / "compare"
    assert main(["plot", str(train_run), str(quickstart_run), "--label", "train", "--label", "quickstart",
                 "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert f"dashboard: {out_dir / 'index.html'} (8 figures, 2 runs)" in out
    page = (out_dir / "index.html").read_text()
    assert page.count("<tr><td>train</td>") == 1 and page.count("<tr><td>quickstart</td>") == 1
    assert draw_panel(PANELS[0], [read_run(train_run)], tmp_path / "single.png") == ["reward"]
    assert (out_dir / "reward.png").read_bytes() != (tmp_path / "single.png").read_bytes()  # both runs drawn, not one
    assert main(["plot", str(train_run), str(quickstart_run), "--label", "only-one"]) == 2
    assert "expected one --label per RUN_DIR (2), got 1" in capsys.readouterr().out


def test_a_resume_drops_the_line_a_kill_cut_short_instead_of_failing_on_it(train_run, tmp_path):
    lines = (train_run / "metrics.jsonl").read_text().splitlines()
    log = tmp_path / "metrics.jsonl"
    log.write_text("\n".join([*lines[:2], lines[2][:40]]))  # killed while writing step 3
    JsonlLogger(log, resume_step=2)  # the trainer's logger on resume from the step-2 checkpoint
    assert log.read_text() == lines[0] + "\n" + lines[1] + "\n"
    JsonlLogger(log, resume_step=1).log({"step": 2, "reward": 0.5})
    assert [r["step"] for r in parse_jsonl(log.read_text(), "m")[0]] == [1, 2]


def _synthetic_run(path, records):
    path.mkdir(parents=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_kl_and_clip_panels_plot_the_last_gradient_step_not_the_first(tmp_path):
    """An update of 4 gradient steps logs the first step's approx_kl_old / clip_fraction (0: the policy is still the
    sampler) and the last step's as *_last: the panels draw the last, which moves."""
    records = [{"step": s, "reward": 0.1 * s, "approx_kl_old": 0.0, "approx_kl_old_last": 0.002 * s * s,
                "clip_fraction": 0.0, "clip_fraction_last": 0.05 * (s % 4), "gradient_steps": 4.0} for s in range(1, 9)]
    run = read_run(_synthetic_run(tmp_path / "run", records))
    kl = next(p for p in PANELS if p.name == "kl")
    clip = next(p for p in PANELS if p.name == "clip_fraction")
    assert draw_panel(kl, [run], tmp_path / "kl.png") == ["approx_kl_old_last"]
    assert draw_panel(clip, [run], tmp_path / "clip.png") == ["clip_fraction_last"]
    single = read_run(_synthetic_run(tmp_path / "one-step", [{k: v for k, v in r.items() if not k.endswith("_last")}
                                                             for r in records]))
    assert draw_panel(kl, [single], tmp_path / "kl1.png") == ["approx_kl_old"]  # one step: its only value
    assert draw_panel(kl, [run, single], tmp_path / "both.png") == ["approx_kl_old_last", "approx_kl_old"]


def test_held_out_records_in_metrics_are_points_and_an_older_held_out_file_still_reads(tmp_path):
    from trainer.run.dashboard import write_held_out

    run_dir = _synthetic_run(tmp_path / "run", [{"step": 1, "success": 0.5}, {"step": 0, "phase": "bc", "loss": 1.0}])
    result = {"eval_success": 0.75, "eval_success_ci95": 0.1, "eval_episodes": 16}
    assert write_held_out(run_dir, [("before", 0, result), ("after", 1, result)]) == run_dir / "metrics.jsonl"
    run = read_run(run_dir)
    assert [(h["label"], h["step"]) for h in run.held_out] == [("before", 0), ("after", 1)]
    assert [r["step"] for r in run.records] == [1]
    assert run.notes == ["1 record(s) without a step or from a warm-up phase: not plotted"]
    old = _synthetic_run(tmp_path / "old", [{"step": 1, "success": 0.5}])
    (old / "held_out.jsonl").write_text(json.dumps({"label": "x", "step": 1, "eval_success": 0.5}) + "\n")
    assert [h["label"] for h in read_run(old).held_out] == ["x"]


def test_the_quickstart_curve_has_a_title_a_caption_and_the_control_on_its_own_position():
    from trainer.cli.quickstart import learning_curve_figure
    from trainer.run.dashboard import _pyplot

    plt = _pyplot()
    records = [{"step": s, "success": 0.1 * (s % 10)} for s in range(1, 31)]
    def held(p):
        return {"sampled": {"eval_success": p, "eval_success_ci95": 0.05, "eval_episodes": 64}}
    caption = {"env": "agentgym/Maze-Easy-v0", "seed": 7, "temperature": 1.0, "episodes": 64, "estimator": "grpo"}
    fig = learning_curve_figure(plt, records, held(0.2), held(0.6), held(0.4), caption)
    try:
        curve, side = fig.axes
        assert "agentgym/Maze-Easy-v0" in fig._suptitle.get_text()
        text = " ".join(t.get_text() for t in fig.texts)
        assert "seed 7" in text and "T=1" in text and "64 episodes" in text
        assert [t.get_text() for t in side.get_xticklabels()] == ["warm-up\n(BC)", "BC + RL", "BC-only\ncontrol"]
        xs = [x for line in curve.get_lines() for x in line.get_xdata()]
        assert max(xs) == 30  # nothing placed past the last update ("update 31" was the control)
        assert "BC-only control" not in " ".join(t.get_text() for t in curve.get_legend().get_texts())
    finally:
        plt.close(fig)
