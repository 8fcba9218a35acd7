"""SandboxedModuleEnv: a generated module runs only in a sandbox, and every answer is checked on the host."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentgym_envs.core.errors import InfraError
from meta_envs.design.contract import example_module
from meta_envs.design.sandboxed import GeneratedEnvFault, ModuleLimits, SandboxedModuleEnv, SandboxUnavailable, play

LAMPS = example_module("lamps")
FAST = ModuleLimits(call_timeout_s=1.0, import_timeout_s=5.0)


def lamps_with(old: str, new: str) -> str:
    assert LAMPS.count(old) == 1, old
    return LAMPS.replace(old, new)


def test_the_good_module_plays_through_the_sandbox():
    with SandboxedModuleEnv(LAMPS, difficulty=0.0) as env:
        assert env.max_steps == 6
        obs = env.reset(3)
        assert obs.startswith("The first panel lights up. Panel 1 of 4: the lamp glows steadily")
        assert env.instruction.startswith("A row of 4 panels") and "flickering" in env.hint()
        assert sorted(env.legal_actions()) == sorted(f"press {c}" for c in
                                                     ("red", "green", "blue", "yellow", "white", "black"))
        assert play(env, lambda obs, legal: env.expert_action(), 3) == (1.0, 4)
        assert play(env, lambda obs, legal: "", 3) == (0.0, 6)


def test_a_lamp_follower_wins_less_as_the_knob_turns_up():
    """The good family's knob moves a solver's success smoothly (the solver reads the observation only)."""
    def follow(obs: str, legal: list[str]) -> str:
        return next((a for a in legal if a.split()[1] + "." in obs.split("Presses")[0]), legal[0])

    wins = {}
    for difficulty in (0.0, 0.4, 1.0):
        with SandboxedModuleEnv(LAMPS, difficulty=difficulty) as env:
            wins[difficulty] = sum(play(env, follow, seed)[0] >= 1 for seed in range(16))
    assert wins[0.0] == 16 and wins[1.0] == 0 and 3 <= wins[0.4] <= 13, wins


def test_the_module_never_runs_in_the_host_process(tmp_path: Path):
    marker = tmp_path / "imported-on-the-host"
    source = f"try:\n    open({str(marker)!r}, 'w').write('x')\nexcept OSError:\n    pass\n" + LAMPS
    with SandboxedModuleEnv(source) as env:
        env.reset(0)
    assert not marker.exists()


@pytest.mark.parametrize("old, new, expected", [
    ("return said + \" \" + self._light(), reward, False", "return said, float('nan'), False", "finite number"),
    ("return said + \" \" + self._light(), reward, False", "return said, 2, False", "in \\[-1.0, 1.0\\]"),
    ("return said + \" \" + self._light(), reward, False", "return said, True, False", "finite number"),
    ("return said + \" \" + self._light(), reward, False", "return said, 0.0, 'no'", "done a bool"),
    ("return said + \" \" + self._light(), reward, False", "return 7, 0.0, False", "observation as a str"),
    ("return said + \" \" + self._light(), reward, False", "return said, 0.0", "\\(observation, reward, done\\)"),
    ("return said + \" \" + self._light(), reward, False", "return 'x' * 20000, 0.0, False", "at most 16384"),
    ("return [\"press \" + colour for colour in self.layout]", "return []", "a list of 1..64 str"),
    ("return [\"press \" + colour for colour in self.layout]", "return {'a': 1}", "a list of 1..64 str"),
])
def test_answers_of_the_wrong_type_are_the_modules_fault(old, new, expected):
    with SandboxedModuleEnv(lamps_with(old, new), limits=FAST, gate="api") as env:
        with pytest.raises(GeneratedEnvFault, match=expected) as caught:
            env.reset(0)
            for _ in range(3):
                env.step("press nothing")
    assert caught.value.gate == "api" and caught.value.kind == "type"


@pytest.mark.parametrize("max_steps", ["0", "101", "'6'", "6.0"])
def test_max_steps_must_be_an_int_in_range(max_steps):
    with pytest.raises(GeneratedEnvFault, match=r"max_steps an int in 1..100") as caught:
        SandboxedModuleEnv(lamps_with("max_steps = 6", f"max_steps = {max_steps}"), limits=FAST)
    assert caught.value.gate == "instantiate"


def test_an_import_error_is_the_modules_fault():
    with pytest.raises(GeneratedEnvFault, match="ZeroDivisionError") as caught:
        SandboxedModuleEnv("1 / 0\n" + LAMPS, limits=FAST)
    assert caught.value.gate == "instantiate" and caught.value.kind == "died"


def test_a_hung_step_is_killed_within_its_timeout_and_leaves_no_process():
    source = lamps_with("        self.presses += 1\n", "        while True:\n            pass\n")
    with SandboxedModuleEnv(source, limits=FAST) as env:
        env.reset(0)
        start = time.monotonic()
        with pytest.raises(GeneratedEnvFault, match="no answer within 1.0 s") as caught:
            env.step("press red")
        assert time.monotonic() - start < 5 and caught.value.kind == "timeout"
        assert env.sandbox.processes() == [1], "only the sandbox's supervisor may be left"


def test_a_gate_deadline_bounds_many_slow_calls():
    source = "import time\n" + lamps_with("        self.presses += 1\n", "        time.sleep(0.3)\n        self.presses += 1\n")
    with SandboxedModuleEnv(source, limits=FAST) as env:
        env.deadline = time.monotonic() + 0.5
        env.reset(0)
        with pytest.raises(GeneratedEnvFault) as caught:
            for _ in range(6):
                env.step("press red")
    assert caught.value.kind in ("budget", "timeout")


def test_every_process_draws_its_own_hash_seed_and_no_caller_can_fix_it():
    """Issue 31: gates, plays and Generated-v0 start modules alike; a fixed PYTHONHASHSEED told a module
    (through hash() of a string) that it was being gated."""
    source = LAMPS + "\n\ndef probe():\n    return hash('lamps')\n"
    values = []
    for _ in range(3):
        with SandboxedModuleEnv(source) as env:
            values.append(env._runner.call("probe"))
    assert len(set(values)) == 3
    with pytest.raises(TypeError, match="env"):
        SandboxedModuleEnv(LAMPS, env={"PYTHONHASHSEED": "1"})


def test_huge_actions_reach_the_module_cut():
    source = lamps_with("        choice = ", "        self.seen = len(action)\n        choice = ") + (
        "\n\ndef seen():\n    return _agentgym_env.seen\n")
    with SandboxedModuleEnv(source) as env:
        env.reset(0)
        env.step("x" * (1 << 20))
        assert env._runner.call("seen") == 16 * 1024
        with pytest.raises(TypeError, match="expected the action as a str"):
            env.step(None)  # type: ignore[arg-type]


def test_bwrap_missing_is_infrastructure(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed") as caught:
        SandboxedModuleEnv(LAMPS)
    assert isinstance(caught.value, InfraError)


def test_bwrap_broken_is_infrastructure(monkeypatch):
    """bwrap is installed but cannot start a sandbox (here: it refuses its arguments)."""
    from sandboxes.backends.bwrap import BwrapSandbox

    monkeypatch.setattr(BwrapSandbox, "_argv", lambda self, fd: ["bwrap", "--no-such-option"])
    with pytest.raises(SandboxUnavailable, match="could not start"):
        SandboxedModuleEnv(LAMPS)


def test_a_fixed_hash_seed_keeps_planted_modules_out_of_the_harness():
    """PYTHONHASHSEED needs the runner without -I; -P -s must still keep files a module planted out of the
    trusted harness's imports when the next process starts in the same sandbox."""
    import sandboxes
    from sandboxes.runner import PythonRunner

    planter = ("def plant():\n    for d in ('/tmp/runner', '/work', '/home/agent'):\n"
               "        open(d + '/json.py', 'w').write('raise SystemExit(\"planted\")')\n    return True\n")
    with sandboxes.make("bwrap") as box:
        assert PythonRunner(box, planter).call("plant") is True
        runner = PythonRunner(box, "def add(a, b):\n    return a + b\n", hash_seed=7)
        assert runner.call("add", 2, 3) == 5
