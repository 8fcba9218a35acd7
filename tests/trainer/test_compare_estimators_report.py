"""The estimator comparison's report (benchmarks/compare_estimators.py): the table's figures, worked out by
hand from crafted results, and the ``--from-results`` re-render from the JSON the runs wrote."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ce():
    spec = importlib.util.spec_from_file_location("compare_estimators", ROOT / "benchmarks" / "compare_estimators.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["compare_estimators"] = module
    spec.loader.exec_module(module)
    return module


def run(estimator, seed, curve, train=(0.5, 0.5, 0.5, 0.5)):
    return {"setting": "sparse", "estimator": estimator, "seed": seed, "updates": 20, "wall_s": 100.0,
            "train_success": list(train),
            "curve": [{"update": u, "eval_success": v, "eval_episodes": 128} for u, v in zip((0, 5, 10, 15, 20), curve)]}


def test_the_table_reports_final_second_half_and_paired_figures_as_worked_out_by_hand(ce):
    results = [run("grpo", 0, [0.4, 0.5, 0.5, 0.5, 0.5]), run("grpo", 1, [0.3, 0.4, 0.4, 0.4, 0.4]),
               run("graphgpo", 0, [0.4, 0.6, 0.6, 0.7, 0.8]), run("graphgpo", 1, [0.3, 0.5, 0.5, 0.6, 0.7])]
    # 2nd half = evaluations at updates 10, 15, 20: graphgpo seed 0 (0.6+0.7+0.8)/3 = 0.7, seed 1 0.6;
    # grpo 0.5 and 0.4; paired differences 0.2 and 0.2: mean +0.200, sd 0, interval 0
    assert ce.late_success(results[2]) == pytest.approx(0.7)
    args = ce.parse(["--settings", "sparse", "--estimators", "grpo", "graphgpo", "--seeds", "0", "1"])
    table = ce.table(results, args)
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in table.splitlines() if line.startswith("| `")}
    assert list(rows) == ["`graphgpo`", "`grpo`"]  # ranked by final success
    seeds, start, final, gain, second, paired, train, wall = rows["`graphgpo`"]
    # start: mean 0.35, sd 0.0707, t(1) = 12.706: half-width 12.706 * 0.0707 / sqrt 2 = 0.635
    assert (seeds, start, final, gain) == ("2", "0.350 ± 0.635", "**0.750 ± 0.635**", "+0.400 ± 0.000")
    assert (second, paired, train, wall) == ("0.650 ± 0.635", "+0.200 ± 0.000", "0.500", "100")
    assert rows["`grpo`"][5] == "—"


def test_from_results_rerenders_what_the_runs_wrote(ce, tmp_path):
    import json

    results = [run("grpo", 0, [0.4, 0.5, 0.5, 0.5, 0.5]), run("rloo", 0, [0.4, 0.5, 0.6, 0.6, 0.6])]
    source = tmp_path / "units.json"
    source.write_text(json.dumps(results))
    assert ce.main(["--from-results", str(source), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "compare_estimators.md").read_text()
    assert "1 settings × 2 estimators × 1 seeds = 2 runs (2 finished)" in text
    assert "| `rloo` | 1 | 0.400 ± 0.000 | **0.600 ± 0.000** | +0.200 ± 0.000 | 0.600 ± 0.000 | +0.100 ± 0.000 |" in text  # 2nd half 0.6 vs 0.5
    assert json.loads((tmp_path / "out" / "compare_estimators.json").read_text()) == results
