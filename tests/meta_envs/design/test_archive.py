"""The archive (meta_envs/design/archive.py) and novelty (novelty.py): keys, atomicity, tampering, sampling,
renamed-copy detection."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from meta_envs.design.archive import ArchiveError, EnvArchive, source_sha
from meta_envs.design.novelty import behaviour_similarity, code_similarity, duplicate_share, nearest, ramp

SOURCE = '''class Env:
    max_steps = 4

    def __init__(self, difficulty=0.5):
        self.difficulty = difficulty

    def reset(self, seed):
        self.target = seed % 3
        self.instruction = "Pick the hidden number."
        return "Numbers: 0 1 2"

    def step(self, action):
        won = action.strip() == str(self.target)
        return ("right" if won else "wrong"), (1.0 if won else 0.0), True
'''
RENAMED = (SOURCE.replace("Env", "Puzzle").replace("target", "secret").replace("won", "ok")
           .replace("Pick the hidden number.", "Guess what I hide.").replace("difficulty", "level"))
OTHER = '''import math

def helper(values):
    total = 0
    for v in values:
        while v > 10:
            v //= 2
        total += v * v
    return math.sqrt(total)
'''


def record(p: float, fingerprint=None) -> dict:
    return {"play_stats": {"p_solver": p}, "stats": {"fingerprint": fingerprint or [p]}, "reward": 0.1}


def test_add_get_entries_by_sha_in_order(tmp_path):
    archive = EnvArchive(tmp_path / "a")
    first = archive.add(SOURCE, record(0.5))
    second = archive.add(OTHER, record(0.9))
    assert first == source_sha(SOURCE) and len(first) == 64
    assert (tmp_path / "a" / first / "env.py").read_text() == SOURCE
    stored = json.loads((tmp_path / "a" / first / "record.json").read_text())
    assert stored["sha256"] == first and stored["index"] == 0 and stored["play_stats"]["p_solver"] == 0.5
    assert [e.sha for e in archive.entries()] == [first, second]
    assert archive.get(second).source == OTHER and archive.get(second).sha256 == second
    assert archive.add(SOURCE, record(0.1)) == first  # the first record stands
    assert archive.get(first).p_hat == 0.5 and len(archive) == 2
    assert not [p for p in os.listdir(tmp_path / "a") if p.startswith(".tmp")]  # staging cleaned up


def test_non_finite_stats_are_stored_as_null(tmp_path):
    archive = EnvArchive(tmp_path)
    sha = archive.add(SOURCE, {"stats": {"median_step_ms": float("inf")}, "play_stats": {"p_solver": float("nan")}})
    assert archive.get(sha).record["stats"]["median_step_ms"] is None


def test_a_tampered_source_is_never_served_under_its_name(tmp_path):
    archive = EnvArchive(tmp_path)
    sha = archive.add(SOURCE, record(0.5))
    (tmp_path / sha / "env.py").write_text(SOURCE + "import os\nos.system('rm -rf /')\n")
    assert archive.entries() == []
    assert "does not hash" in archive.problems[0]
    with pytest.raises(ArchiveError, match="no env"):
        archive.get(sha)


@pytest.mark.parametrize("bad", ["../etc", "A" * 64, "", 5, "0" * 63])
def test_get_rejects_anything_but_a_sha(tmp_path, bad):
    with pytest.raises(ArchiveError, match="expected a sha256"):
        EnvArchive(tmp_path).get(bad)


def test_sample_rules(tmp_path):
    archive = EnvArchive(tmp_path)
    shas = [archive.add(SOURCE + f"# {i}\n", record(p)) for i, p in enumerate([0.0, 0.45, 0.9, 0.55])]
    rng = np.random.default_rng(0)
    assert archive.sample(rng, "newest").sha == shas[3]
    picks = {archive.sample(np.random.default_rng(s), "learnable").sha for s in range(20)}
    assert picks == {shas[1], shas[3]}  # both 0.05 from one half
    assert {archive.sample(np.random.default_rng(s)).sha for s in range(40)} == set(shas)
    assert archive.sample(np.random.default_rng(3)).sha == archive.sample(np.random.default_rng(3)).sha
    with pytest.raises(ArchiveError, match="rule: expected one of uniform, newest, learnable"):
        archive.sample(rng, "best")
    with pytest.raises(ArchiveError, match="holds no accepted env"):
        EnvArchive(tmp_path / "empty").sample(rng)


def test_rejected_designs_are_remembered_without_code(tmp_path):
    archive = EnvArchive(tmp_path)
    archive.add_rejected(SOURCE, "expert", "the expert won 2 of 8 seeds")
    archive.add_rejected(OTHER, "leak", "x" * 2000)
    rejected = archive.rejected()
    assert [r["failed_gate"] for r in rejected] == ["expert", "leak"] and len(rejected[1]["detail"]) == 500
    assert archive.entries() == []


def test_renamed_copy_is_a_code_duplicate_and_unrelated_code_is_not():
    assert code_similarity(SOURCE, RENAMED) == 1.0
    assert code_similarity(SOURCE, OTHER) < 0.2
    changed = SOURCE.replace("seed % 3", "(seed * 7 + 1) % 5")
    assert 0.5 < code_similarity(SOURCE, changed) < 1.0
    assert code_similarity("def (((", "") == 0.0  # unlexable input is data, never an exception


def test_a_copy_padded_with_dead_code_is_still_a_duplicate():
    """Padding dilutes a Jaccard index (0.17 for this copy); the archived env's share inside the copy stays 1."""
    pad = "\n".join(f"def helper_{i}(values, limit={i}):\n    total = {i}\n    for v in values:\n"
                    f"        if v % {i + 2} == {i % 3}:\n            total += v * {i}\n    return total\n"
                    for i in range(60))
    assert code_similarity(RENAMED + "\n" + pad, SOURCE) == 1.0
    assert code_similarity(pad, SOURCE) < 0.2


def test_duplicate_share_against_an_archive(tmp_path):
    archive = EnvArchive(tmp_path)
    sha = archive.add(SOURCE, record(0.5, ["a", "b", "c", "d"]))
    near = duplicate_share(RENAMED, ["x", "y", "z", "w"], archive)
    assert near["sha"] == sha and near["dup"] == 1.0 and not near["exact_behaviour"]
    unrelated = duplicate_share(OTHER, ["x", "y", "z", "w"], archive)
    assert unrelated["dup"] == 0.0
    same_behaviour = duplicate_share(OTHER, ["a", "b", "c", "d"], archive)
    assert same_behaviour["exact_behaviour"] and same_behaviour["dup"] == 1.0
    assert nearest(SOURCE, None, [])["dup"] == 0.0


def test_behaviour_similarity_and_ramp():
    assert behaviour_similarity({"0": 1, "1": 2}, {"1": 2, "0": 1}) == 1.0
    assert behaviour_similarity([1, 2, 3, 4], [1, 2, 0, 0]) == 0.5
    assert behaviour_similarity([], [1]) == 0.0
    assert ramp(0.5) == 0.0 and ramp(0.9) == 1.0 and ramp(0.6) == pytest.approx(0.25)


def test_novelty_gate_fails_only_an_exact_behavioural_duplicate(tmp_path):
    from meta_envs.design.gates import GateResult
    from meta_envs.design.novelty import novelty_gate

    archive = EnvArchive(tmp_path)
    sha = archive.add(SOURCE, record(0.5, {"0": "a", "1": "b"}))
    gate = novelty_gate(archive)
    same = gate(OTHER, {"fingerprint": {"1": "b", "0": "a"}})
    assert isinstance(same, GateResult) and same.name == "novelty" and not same.passed
    assert sha in same.detail
    near = gate(RENAMED, {"fingerprint": {"0": "a", "1": "c"}})
    assert near.passed and "dup 1.00" in near.detail
    assert gate(OTHER, {}).passed


def test_the_fingerprint_key_is_drawn_once_and_a_damaged_one_is_refused(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:  # racing first uses agree on one key
        keys = set(pool.map(lambda _: EnvArchive(tmp_path).fingerprint_key(), range(16)))
    assert len(keys) == 1 and len(next(iter(keys))) == 32
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []  # no temp files left
    (tmp_path / ".fingerprint_key").write_bytes(b"short")
    with pytest.raises(ArchiveError, match="expected 32 bytes, got 5; remove it"):
        EnvArchive(tmp_path).fingerprint_key()
