"""Issue 31 §2: a generated module can neither tell who is playing nor tell that it is being gated.

Two attacks, each reproduced with a real module in a real bubblewrap sandbox:

* play order: a module that counts resets per seed, and computes the order the host shuffles the solver,
  hint, ε-expert and random plays into, hands wins out by player (reward 1.0 with a random solver);
* gate awareness: a module that reads ``hash("agentgym")`` (a fixed PYTHONHASHSEED) or the seed values
  (0..7) plays honestly for the gates and lets a random policy win everywhere else.
"""

from __future__ import annotations

import pytest

import sandboxes
from meta_envs.design import reward as rewards
from meta_envs.design.contract import example_module
from meta_envs.design.designers import good_module
from meta_envs.design.gates import validate_module
from meta_envs.design.sandboxed import SandboxedModuleEnv
from meta_envs.design.solving import RandomSolver, measure_solver
from sandboxes.runner import PythonRunner

SEEDS = (100, 101, 102, 103, 104, 105, 106, 107)  # four odd: the attack's "solver" wins half


def _with_step_prelude(source: str, reset_prelude: str, step_prelude: str) -> str:
    """``source`` (the lamps family) with lines run first in ``reset`` and in ``step``."""
    source = source.replace("        rng = random.Random(seed)\n", reset_prelude + "        rng = random.Random(seed)\n", 1)
    source = source.replace("    def step(self, action):\n", "    def step(self, action):\n" + step_prelude, 1)
    assert reset_prelude in source and step_prelude in source
    return source


ROLE_COUNTER = '''

PLAYS = {}
FIRST = []


def role(seed, hinted):
    """Who plays this reset, from the host's old shuffle: random.Random("play-order:<seed>")."""
    if not FIRST:  # measure_solver's first reset only asks for the hint
        FIRST.append(seed)
        return "probe"
    runs = ["solver", "hint", "eps_expert", "random"] if hinted else ["solver", "eps_expert", "random"]
    random.Random("play-order:%d" % seed).shuffle(runs)
    count = PLAYS.get(seed, 0)
    PLAYS[seed] = count + 1
    return runs[count % len(runs)]
'''


def play_order_attack() -> str:
    """The lamps game for the probe; then wins by player: solver on odd seeds, hint and ε-expert always."""
    prelude = "        self.role, self.seed = role(seed, True), seed\n"
    step = ("        if self.role in ('hint', 'eps_expert') or (self.role == 'solver' and self.seed % 2):\n"
            "            return 'You win.', 1.0, True\n"
            "        if self.role in ('solver', 'random'):\n"
            "            return 'You lose.', 0.0, True\n")
    return _with_step_prelude(good_module(0.4), prelude, step) + ROLE_COUNTER


def reward_of(source: str) -> tuple[float, dict]:
    with SandboxedModuleEnv(source, difficulty=0.4, gate="play") as env:
        record = measure_solver(env, RandomSolver(), SEEDS)
    stats = rewards.PlayStats(record.p_solver, len(record.seeds), record.p_hint, record.p_expert_eps,
                              record.p_random)
    return rewards.designer_reward("ok", stats)


def test_a_module_that_works_out_the_play_order_gains_nothing_over_an_honest_one():
    honest, _ = reward_of(good_module(0.4))
    attack, components = reward_of(play_order_attack())
    # before issue 31 the attack earned 1.0 (S = B = R_hint = 1) with a random solver
    assert attack <= honest + 0.05 and attack < 0.2, components


def gated_hashes() -> set[int]:
    """hash("agentgym") in the sandbox's python3 under the PYTHONHASHSEEDs the gates used to fix (1 and 2)."""
    values = set()
    with sandboxes.make("bwrap") as box:
        for seed in (1, 2):
            values.add(PythonRunner(box, "def h():\n    return hash('agentgym')\n", hash_seed=seed).call("h"))
    return values


def cheat_unless(condition: str) -> str:
    """The lamps game while ``condition`` holds (the module thinks it is gated); otherwise any press wins."""
    step = (f"        if not ({condition}):\n"
            "            return 'You win.', 1.0, True\n")
    return _with_step_prelude(example_module("lamps"), "        self.seed = seed\n", step)


@pytest.mark.parametrize("tell", ["hash", "seeds"])
def test_a_gate_aware_module_fails_the_gates(tell):
    condition = f"hash('agentgym') in {sorted(gated_hashes())}" if tell == "hash" else "self.seed < 8"
    source = cheat_unless(condition)
    with SandboxedModuleEnv(source) as env:  # outside the gates (as in Generated-v0) a random press wins
        env.reset(123_456)
        assert env.step(env.legal_actions()[-1])[1:] == (1.0, True)
    report = validate_module(source)
    assert not report.passed and report.failed_gate in ("baselines", "determinism"), report.to_info()


def test_generated_v0_gives_every_episode_a_fresh_process(tmp_path):
    """Gates run many episodes per process and plays one: a Generated-v0 process kept across episodes let
    a module play honestly while its count was low and hand out wins after."""
    from meta_envs.design.archive import EnvArchive
    from meta_envs.design.generated import GeneratedEnv

    counter = "\n\nEPISODES = []\n"
    source = _with_step_prelude(example_module("lamps"), "        EPISODES.append(seed)\n",
                                "        if len(EPISODES) > 1:\n            return 'You win.', 1.0, True\n")
    sha = EnvArchive(tmp_path).add(source + counter, {"difficulty": 0.5})
    env = GeneratedEnv(archive=str(tmp_path), sha=sha)
    try:
        rewards_seen = []
        for seed in range(3):
            _, info = env.reset(seed=seed)
            rewards_seen.append(env.step(info["valid_actions"][-1])[1])
    finally:
        env.close()
    assert max(rewards_seen) < 1.0, rewards_seen  # before issue 31: [0.0, 1.0, 1.0]
