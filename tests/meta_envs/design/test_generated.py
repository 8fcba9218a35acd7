"""agentgym/Generated-v0 (meta_envs/design/generated.py): archived envs play in their sandbox as ordinary text envs."""

from __future__ import annotations

import numpy as np
import pytest

import agentgym_envs
from agentgym_envs.checker import check_env
from meta_envs.design.archive import ArchiveError, EnvArchive
from meta_envs.design.designers import good_module
from meta_envs.design.env_design import EnvDesignEnv
from meta_envs.design.sandboxed import ModuleLimits, SandboxedModuleEnv

FRAGILE = '''
class Env:
    max_steps = 5

    def __init__(self, difficulty=0.5):
        self.instruction = "Say go."

    def reset(self, seed):
        self.n = 0
        return "ready %d" % (seed % 7)

    def step(self, action):
        if action == "boom":
            raise RuntimeError("kaboom")
        if action == "hang":
            while True:
                pass
        self.n += 1
        return "ok", (1.0 if action == "go" else 0.0), action == "go" or self.n >= 5

    def legal_actions(self):
        return ["go", "wait"]

    def expert_action(self):
        return "go"
'''


def expert_episode(env, seed: int) -> tuple[float, bool, dict]:
    obs, info = env.reset(seed=seed)
    total, first = 0.0, info
    while True:
        _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        total += reward
        if terminated or truncated:
            return total, info["won"], first


def test_the_default_builtin_archive_passes_agentgym_check():
    report = check_env("agentgym/Generated-v0")
    assert report.passed, str(report)
    assert {r.name for r in report.results if r.status == "pass"} >= {"snapshot_roundtrip", "valid_actions", "expert"}


def test_an_env_accepted_by_env_design_is_playable_by_sha(tmp_path):
    design = EnvDesignEnv(archive=str(tmp_path), play_seeds=tuple(range(8)))
    design.reset(seed=0)
    *_, info = design.step(good_module(0.6))
    design.close()
    assert info["accepted"]
    env = agentgym_envs.make("agentgym/Generated-v0", archive=str(tmp_path), sha=info["sha256"])
    total, won, first = expert_episode(env, seed=3)
    obs, again = env.reset(seed=3)
    env.close()
    assert won and total >= 1.0 and first["generated_sha"] == info["sha256"]
    assert first["valid_actions"] and all(a.startswith("press ") for a in first["valid_actions"])
    # the archived knob (0.6) is the one played: the same first observation as the module built directly
    seed = int(np.random.default_rng(3).integers(0, 2**31 - 1))
    with SandboxedModuleEnv(good_module(0.6).strip(), difficulty=0.6) as direct:
        first_obs = direct.reset(seed)
        assert obs == f"{direct.instruction}\n\n{first_obs}"


def test_rules_pick_per_seed_deterministically(tmp_path):
    archive = EnvArchive(tmp_path)
    shas = [archive.add(good_module(k), {"difficulty": k, "play_stats": {"p_solver": p}})
            for k, p in ((0.1, 1.0), (0.4, 0.5), (0.9, 0.0))]
    env = agentgym_envs.make("agentgym/Generated-v0", archive=str(tmp_path))
    picked = [env.reset(seed=s)[1]["generated_sha"] for s in range(12)]
    assert picked == [env.reset(seed=s)[1]["generated_sha"] for s in range(12)] and len(set(picked)) >= 2
    env.close()
    for rule, want in (("learnable", shas[1]), ("newest", shas[2])):
        env = agentgym_envs.make("agentgym/Generated-v0", archive=str(tmp_path), rule=rule)
        assert {env.reset(seed=s)[1]["generated_sha"] for s in range(4)} == {want}
        env.close()


def test_bad_kwargs_fail_at_construction_with_the_remedy(tmp_path):
    with pytest.raises(ArchiveError, match="no env"):
        agentgym_envs.make("agentgym/Generated-v0", archive=str(tmp_path), sha="0" * 64)
    with pytest.raises(ArchiveError, match="rule: expected one of"):
        agentgym_envs.make("agentgym/Generated-v0", rule="best")
    with pytest.raises(ArchiveError, match="holds no accepted env"):
        agentgym_envs.make("agentgym/Generated-v0", archive=str(tmp_path)).reset(seed=0)


def test_a_module_that_raises_or_hangs_on_an_action_is_the_agents_outcome_never_infra(tmp_path):
    sha = EnvArchive(tmp_path).add(FRAGILE, {"difficulty": 0.5})
    env = agentgym_envs.make("agentgym/Generated-v0", archive=str(tmp_path), sha=sha,
                             limits=ModuleLimits(call_timeout_s=0.5))
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("boom")
    assert not info["action_valid"] and "kaboom" in obs and info["infra_error"] is None and not terminated
    obs, reward, terminated, truncated, info = env.step("hang")
    assert terminated and not info["won"] and info["infra_error"] is None and "stopped answering" in obs
    env.reset(seed=1)  # a fresh module process for the next episode
    _, reward, terminated, _, info = env.step("go")
    env.close()
    assert terminated and info["won"] and reward == 1.0


def test_a_tampered_archive_entry_is_refused(tmp_path):
    archive = EnvArchive(tmp_path)
    sha = archive.add(good_module(0.4), {"difficulty": 0.4})
    (tmp_path / sha / "env.py").write_text(FRAGILE)
    with pytest.raises(ArchiveError, match="does not hash"):
        agentgym_envs.make("agentgym/Generated-v0", archive=str(tmp_path), sha=sha)


def test_bwrap_missing_is_infra_error(tmp_path, monkeypatch):
    env = agentgym_envs.make("agentgym/Generated-v0")
    monkeypatch.setenv("PATH", str(tmp_path))
    obs, info = env.reset(seed=0)
    _, reward, _, truncated, step_info = env.step("press red")
    env.close()
    assert info["infra_error"] and "not your fault" in obs and truncated and reward == 0.0


def test_the_archived_knob_is_played_even_at_zero(tmp_path):
    """A record's difficulty 0.0 is played as 0.0 (every lamp steady), not replaced by the default 0.5."""
    archive = EnvArchive(tmp_path)
    firsts = {}
    for knob in (0.0, 0.5):
        sha = archive.add(good_module(knob), {"difficulty": knob})
        env = agentgym_envs.make("agentgym/Generated-v0", archive=str(tmp_path), sha=sha)
        firsts[knob] = [env.reset(seed=s)[0] for s in range(8)]
        env.close()
    assert not any("flickers" in obs for obs in firsts[0.0])
    assert any("flickers" in obs for obs in firsts[0.5])


def test_both_ids_construct_offline_in_under_two_seconds():
    import time

    for env_id in ("agentgym/Generated-v0", "agentgym/EnvDesign-v0"):
        start = time.perf_counter()
        env = agentgym_envs.make(env_id)
        elapsed = time.perf_counter() - start
        env.close()
        assert elapsed < 2.0, (env_id, elapsed)


def test_the_leaderboard_runner_plays_generated_envs_like_any_other(tmp_path):
    """A suite entry on agentgym/Generated-v0 (the built-in archive, sandboxed): the expert wins every episode,
    the random policy does not, and nothing is an infrastructure failure."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "leaderboards"))
    from lb_helpers import count, episode_rows, write_suite

    from leaderboards.runner import BenchOptions, run_bench

    suite = write_suite(tmp_path / "suite.yaml", [{"env": "agentgym/Generated-v0", "tasks": 4, "max_steps": 40}],
                        name="generated")
    stored = {}
    for policy in ("expert", "random"):
        run_bench(suite, policy, tmp_path / f"{policy}.sqlite", BenchOptions(workers=1, progress=False))
        stored[policy] = episode_rows(tmp_path / f"{policy}.sqlite")
    assert len(stored["expert"]) == len(stored["random"]) == 4
    assert all(r["won"] for r in stored["expert"]), [dict(r) for r in stored["expert"]]
    assert sum(r["won"] for r in stored["random"]) < 4
    assert all(count(tmp_path / f"{policy}.sqlite", "infra_errors") == 0 for policy in stored)
