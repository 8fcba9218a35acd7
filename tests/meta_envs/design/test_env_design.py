"""agentgym/EnvDesign-v0 (meta_envs/design/env_design.py): issue 19's Done-when points on the designer's reward.

Every module runs in a real bubblewrap sandbox; the solver is the default ClueSolver unless a test says so.
"""

from __future__ import annotations

import json

import pytest

import agentgym_envs
from meta_envs.design import designers
from meta_envs.design.archive import EnvArchive
from meta_envs.design.designers import HillClimber, good_module, last_p_hat, renamed_duplicate
from meta_envs.design.env_design import EnvDesignEnv, extract_module, module_difficulty
from meta_envs.design.sandboxed import set_measurement_key

SEEDS = tuple(range(100, 108))  # the solver's play seeds, fixed so p_hat is reproducible


def design(source: str, env: EnvDesignEnv | None = None, seed: int = 0, **kwargs):
    """One design episode: (reward, info); a fresh env (own temp archive) unless one is given."""
    own = env is None
    env = env or EnvDesignEnv(play_seeds=SEEDS, **kwargs)
    try:
        env.reset(seed=seed)
        _, reward, terminated, truncated, info = env.step(source)
        assert terminated or truncated
        return reward, info
    finally:
        if own:
            env.close()


def test_unparseable_and_empty_designs_get_minus_one():
    reward, info = design("class Env(:\n    pass")
    assert reward == -1.0 and info["outcome"] == "unparseable" and info["gates"][-1]["name"] == "parse"
    env = EnvDesignEnv()
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("```python\n```")  # no module: ends the episode, as unparseable source
    assert reward == -1.0 and not info["action_valid"] and terminated and info["outcome"] == "unparseable"
    env.close()


@pytest.mark.parametrize("name", ["trivial", "impossible", "leaky"])
def test_trivial_impossible_and_leaky_envs_get_minus_half(name):
    reward, info = design(designers.DESIGNERS[name](""))
    assert info["outcome"] == "gate" and reward == -0.5, info["gates"][-1]
    assert not info["accepted"]


def test_coin_flip_earns_at_most_five_hundredths():
    reward, info = design(designers.DESIGNERS["coin-flip"](""))
    assert reward <= 0.05, info


@pytest.mark.parametrize("name", [n for n in designers.BAD_MODULES if n.startswith("nondeterministic")])
def test_each_source_of_non_determinism_gets_minus_half(name):
    reward, info = design(designers.DESIGNERS[name](""))
    assert reward == -0.5 and info["outcome"] == "gate", info["gates"][-1]
    assert info["gates"][-1]["name"] in ("determinism", "seed_sensitivity", "imports"), info["gates"][-1]


@pytest.mark.parametrize("name", [n for n in designers.BAD_MODULES if n.startswith("hostile")])
def test_every_hostile_module_gets_minus_half_never_infra(name):
    """D1's tests time each gate and check the host canary; here: the designer is paid -0.5, not blamed on us."""
    reward, info = design(designers.DESIGNERS[name](""))
    assert reward == -0.5 and info["outcome"] == "gate" and info["infra_error"] is None, info["gates"][-1]


def test_snapshots_replay_a_design_exactly():
    env = EnvDesignEnv(play_seeds=SEEDS)
    env.reset(seed=2)
    snapshot = env.get_state()
    first = env.step(good_module(0.4))
    env.set_state(snapshot)  # the archive now holds the module, but the episode sees it as at reset
    again = env.step(good_module(0.4))
    env.close()
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert first[4]["reward_components"]["dup"] == 0.0


def test_the_good_family_pays_at_half_and_nothing_at_zero_or_one():
    reward, info = design(good_module(0.4))
    c = info["reward_components"]
    assert 0.4 <= c["p_hat"] <= 0.6 and reward >= 0.5, c
    assert info["outcome"] == "ok" and info["accepted"] and c["S"] == 1.0
    for knob, p_hat in ((0.0, 1.0), (1.0, 0.0)):
        reward, info = design(good_module(knob))
        assert info["reward_components"]["p_hat"] == p_hat and reward <= 0.05, info["reward_components"]


def test_the_knob_moves_p_hat_smoothly_from_one_to_zero():
    p_hats = [design(good_module(k))[1]["reward_components"]["p_hat"] for k in (0.0, 0.2, 0.35, 0.5, 0.7, 1.0)]
    assert p_hats[0] == 1.0 and p_hats[-1] == 0.0
    assert all(a >= b for a, b in zip(p_hats, p_hats[1:])), p_hats  # common seeds: monotone
    assert len({p for p in p_hats if 0.0 < p < 1.0}) >= 2, p_hats


def test_renamed_duplicate_is_cut_by_at_least_eighty_percent():
    env = EnvDesignEnv(play_seeds=SEEDS)
    original, info = design(good_module(0.4), env, seed=0)
    assert original >= 0.5 and info["accepted"]
    copy, info = design(renamed_duplicate(good_module(0.4)), env, seed=0)
    assert copy <= 0.2 * original, info
    # a working copy: every gate passes (its messages differ, so not an exact behavioural duplicate);
    # novelty's code similarity is what cuts it
    assert info["outcome"] == "ok" and info["reward_components"]["dup"] >= 0.8, info["gates"][-1]
    assert info["reward_components"]["nearest"] == EnvArchive(env.archive.path).entries()[0].sha
    env.close()


def test_an_exact_duplicate_is_refused_by_another_host_process_on_the_same_archive(tmp_path):
    """Gate seeds are keyed per host process; fingerprints are taken on the archive's own seeds
    (``<archive>/.fingerprint_key``), so a resubmitted env behaves exactly like its archived self again."""
    set_measurement_key(b"host-one")
    first = EnvDesignEnv(play_seeds=SEEDS, archive=str(tmp_path))
    original, info = design(good_module(0.4), first)
    first.close()
    assert info["accepted"] and original >= 0.5
    set_measurement_key(b"host-two")  # another process: its own secret, its own gate seeds
    second = EnvDesignEnv(play_seeds=SEEDS, archive=str(tmp_path))
    copy, info = design(good_module(0.4), second, seed=3)
    second.close()
    assert copy == -0.5 and info["outcome"] == "gate" and not info["accepted"], info["gates"][-1]
    assert info["gates"][-1]["name"] == "novelty" and "behaves exactly like archived env" in info["gates"][-1]["detail"]


def test_a_renamed_duplicate_padded_with_dead_code_is_cut_too():
    pad = "".join(f"\n\ndef helper_{i}(values):\n    return sum(v * {i} for v in values if v % {i + 2})\n"
                  for i in range(80))
    env = EnvDesignEnv(play_seeds=SEEDS)
    original, _ = design(good_module(0.4), env)
    copy, info = design(renamed_duplicate(good_module(0.4)) + pad, env)
    env.close()
    assert info["outcome"] == "ok" and info["reward_components"]["dup"] == 1.0 and copy <= 0.2 * original


def test_hill_climber_brings_p_hat_into_the_middle_within_twenty_episodes():
    env, climber = EnvDesignEnv(play_seeds=SEEDS), HillClimber()
    seen = []
    for episode in range(20):
        obs, _ = env.reset(seed=episode)
        _, _, _, _, info = env.step(climber(obs))
        p_hat = info["reward_components"]["p_hat"]
        seen.append(p_hat)
        if p_hat is not None and 0.3 <= p_hat <= 0.7:
            break
    env.close()
    assert seen[0] == 1.0, seen  # it starts far too easy
    assert seen[-1] is not None and 0.3 <= seen[-1] <= 0.7 and len(seen) <= 20, seen


def test_bwrap_missing_is_infra_error_with_reward_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on PATH
    env = EnvDesignEnv(play_seeds=SEEDS, archive=str(tmp_path / "archive"))
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(good_module(0.4))
    env.close()
    assert reward == 0.0 and info["infra_error"] and truncated and not terminated
    assert info["outcome"] == "infra" and not info["accepted"]
    assert not (tmp_path / "archive" / "rejected").exists()  # never recorded against the designer


def test_an_unwritable_archive_is_infra_not_the_designers_fault(tmp_path):
    env = EnvDesignEnv(play_seeds=SEEDS, archive=str(tmp_path / "archive"))
    env.reset(seed=0)
    (tmp_path / "archive").rename(tmp_path / "gone")
    (tmp_path / "archive").write_text("a file where the archive folder was")
    _, reward, terminated, truncated, info = env.step("class Env(:")
    assert reward == 0.0 and truncated and not terminated and "could not be written" in info["infra_error"]
    assert info["outcome"] == "infra" and info["reward_components"]["reward"] == 0.0
    env.reset(seed=1)  # a good module too: judged against an empty (unlistable) archive, then not storable
    _, reward, _, truncated, info = env.step(good_module(0.4))
    env.close()
    assert reward == 0.0 and truncated and info["infra_error"] and not info["accepted"]


def test_same_seed_and_action_give_the_same_reward_and_info():
    a, b = EnvDesignEnv(), EnvDesignEnv()
    out = []
    for env in (a, b):
        obs, info = env.reset(seed=5)
        out.append((obs, info, env.step(good_module(0.45))))
        env.close()
    assert out[0][0] == out[1][0] and out[0][1] == out[1][1]
    assert json.dumps(out[0][2], sort_keys=True) == json.dumps(out[1][2], sort_keys=True)


def test_accepted_envs_are_archived_and_briefs_show_exemplars(tmp_path):
    env = EnvDesignEnv(play_seeds=SEEDS, archive=str(tmp_path))
    design(good_module(0.4), env)
    design("class Env(:", env)
    brief, _ = env.reset(seed=1)
    env.close()
    [entry] = EnvArchive(tmp_path).entries()
    assert entry.source == good_module(0.4).strip() and entry.record["difficulty"] == 0.4  # the reply, stripped
    assert entry.record["play_stats"]["n"] == 8 and entry.record["play_stats"]["seeds"] == list(SEEDS)
    assert [r["failed_gate"] for r in EnvArchive(tmp_path).rejected()] == ["parse"]
    assert entry.sha[:12] in brief and "failed parse" in brief and "1 archived envs" in brief
    assert "Last design: outcome=unparseable" in brief and "DIFFICULTY" in brief
    assert last_p_hat(brief) is None


def test_a_fenced_reply_and_the_knob_are_read_without_running_anything():
    assert extract_module("I propose:\n```python\nDIFFICULTY = 0.3\n```\nthanks") == "DIFFICULTY = 0.3\n"
    assert module_difficulty("DIFFICULTY = 7") == 1.0 and module_difficulty("DIFFICULTY = True") == 0.5
    assert module_difficulty("DIFFICULTY = float('nan')") == 0.5
    reward, info = design("Here is my env.\n```python\n" + good_module(0.4) + "```")
    assert info["outcome"] == "ok" and reward >= 0.5


def test_the_expert_designer_is_accepted_and_registered_ids_construct_cheaply():
    env = agentgym_envs.make("agentgym/EnvDesign-v0")
    obs, info = env.reset(seed=0)
    assert "class Env" in obs and info["instruction"]
    _, reward, terminated, _, info = env.step(env.unwrapped.expert_action())
    env.close()
    assert terminated and info["outcome"] == "ok" and reward > 0


def test_a_solver_policy_plays_through_the_adapter():
    from agentgym_envs.policies.base import Completion

    class LastLegal:  # a scripted chat policy: always the last legal action it was offered
        def act(self, batch, *, sampling):
            return [Completion(chat[-1]["content"].rsplit(", ", 1)[-1]) for chat in batch]

    reward, info = design(good_module(0.4), solver=LastLegal())
    assert info["outcome"] == "ok" and info["reward_components"]["p_hat"] <= 0.125


class LampHintReader:
    """A solver that reads the lamps family's hint: with it shown, a flickering lamp means the next colour."""

    COLOURS = ("red", "green", "blue", "yellow", "white", "black")

    def __init__(self):
        from meta_envs.design.solving import ClueSolver

        self.clue = ClueSolver()

    def bind(self, env, seed):
        self.clue.bind(env, seed)

    def __call__(self, shown, legal):
        action = self.clue(shown, legal)
        if shown.startswith("Hint:") and "flickers" in shown.rsplit("Panel", 1)[-1]:
            return "press " + self.COLOURS[(self.COLOURS.index(action.split()[-1]) + 1) % 6]
        return action


def test_hint_regret_reaches_the_reward_through_the_hinted_plays():
    reward, info = design(good_module(0.4), solver=LampHintReader())
    c = info["reward_components"]
    # p_hat 0.5 as with the ClueSolver; with the hint every seed is won: R_hint = clip(0.5/0.15) = 1
    assert (c["p_hat"], c["p_hint"], c["R_hint"], c["S"]) == (0.5, 1.0, 1.0, 1.0)
    assert reward == pytest.approx(1.0)


def seed_switching_module() -> str:
    """The attack: a good game on the gates' seeds 0..7 and a coin flip by seed parity on any other seed."""
    source = good_module(0.0).replace("        rng = random.Random(seed)\n",
                                      "        self.seed = seed\n        rng = random.Random(seed)\n", 1)
    source = source.replace("    def step(self, action):\n",
                            "    def step(self, action):\n        if self.seed >= 8:\n"
                            "            return 'Over.', (1.0 if self.seed % 2 else 0.0), True\n", 1)
    assert "self.seed >= 8" in source and "self.seed = seed" in source
    return source


def test_a_module_that_plays_differently_off_the_gate_seeds_earns_nothing():
    """Gate seeds are drawn like play seeds (issue 31), so "a good game on 0..7, a coin flip elsewhere" is a
    coin flip in the gates too: the expert cannot win it."""
    reward, info = design(seed_switching_module())
    assert reward == -0.5 and info["outcome"] == "gate" and info["gates"][-1]["name"] == "expert", info["gates"][-1]


def play_seed_module(step_prelude: str, reset_line: str = "        rng = random.Random(seed)\n") -> str:
    """The good family, but on the (test-fixed, so known) play seeds SEEDS it runs ``step_prelude`` first."""
    source = good_module(0.4).replace("        rng = random.Random(seed)\n",
                                      f"        self.seed = seed\n{reset_line}", 1)
    source = source.replace("    def step(self, action):\n", "    def step(self, action):\n"
                            f"        if self.seed in {SEEDS}:\n{step_prelude}", 1)
    assert "self.seed = seed" in source and f"self.seed in {SEEDS}" in source
    return source


@pytest.mark.parametrize("cheat", ["random-wins", "non-deterministic"])
def test_a_module_that_plays_differently_on_the_play_seeds_fails_the_recheck(cheat):
    """Issue 31: determinism and the baselines are re-checked on play seeds, in processes started like the
    gates'; a module that knows the play seeds (here fixed by the test) and changes its game there fails."""
    if cheat == "random-wins":
        source = play_seed_module("            return 'You win.', 1.0, True\n")
    else:  # the lamps' colours from hash() of a string on the play seeds: each process has its own hash seed
        source = play_seed_module("            pass\n", "        rng = random.Random(hash('s%d' % seed) "
                                  f"if seed in {SEEDS} else seed)\n")
    reward, info = design(source)
    failed = info["gates"][-1]
    assert reward == -0.5 and info["outcome"] == "gate" and failed["name"] == "play", failed
    assert "re-check" in failed["detail"] and ("random policy won" in failed["detail"]
                                               or "differently in two fresh processes" in failed["detail"]), failed
