"""validate_module: each gate catches what it is for, hostile modules are contained, the good one passes."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from meta_envs.design import gates, novelty, sandboxed
from meta_envs.design.contract import example_module
from meta_envs.design.gates import GATES, GateResult, leaked_run, validate_module
from meta_envs.design.lint import import_problems
from meta_envs.design.sandboxed import ModuleLimits

LAMPS = example_module("lamps")
GATE_LIMIT_S = 15.0


def lamps_with(old: str, new: str) -> str:
    assert LAMPS.count(old) == 1, old
    return LAMPS.replace(old, new)


def test_the_good_module_passes_every_gate_fast():
    start = time.perf_counter()
    report = validate_module(LAMPS)
    seconds = time.perf_counter() - start
    assert [g.name for g in report.gates] == list(GATES)
    assert report.passed and report.failed_gate is None and report.infra_error is None, report.to_info()
    assert report.gates[-1].detail == "no archive"
    stats = report.stats
    assert stats["p_expert"] == 1.0 and stats["p_null"] == stats["p_constant"] == stats["p_random"] == 0.0
    assert 0.5 <= stats["p_expert_eps"] <= 1.0 and stats["median_step_ms"] <= 50
    assert len(set(stats["start_hashes"].values())) == 8 and len(stats["fingerprint"]) == 8 and stats["steps"] > 100
    assert seconds < 5.0, f"all gates took {seconds:.2f} s; the goal is 5 s with bwrap"


def test_equal_runs_give_equal_info():
    first, second = validate_module(LAMPS).to_info(), validate_module(LAMPS).to_info()
    assert first == second and "seconds" not in first["gates"][0] and "median_step_ms" not in first["stats"]
    assert "seconds" in validate_module("x = ").to_info(timings=True)["gates"][0]


@pytest.mark.parametrize("source, gate, expected", [
    ("def broken(:\n", "parse", "does not parse"),
    ("class NotEnv:\n    pass\n", "parse", "top-level `class Env`"),
    ("(" * 5000 + ")" * 5000 + "\nclass Env: pass\n", "parse", "does not parse"),
    (LAMPS + "\n# padding\n" * 4000, "size", "expected at most 32768 bytes"),
    ("import os\n" + LAMPS, "imports", "imports 'os'"),
    (LAMPS.replace("import random", "from random import Random as _R\nimport random") + "\nX = ().__class__\n",
     "imports", "'__class__'"),
    ("raise SystemExit(3)\n" + LAMPS, "instantiate", "died"),
    (lamps_with("return said + \" \" + self._light(), reward, False", "return said, float('inf'), False"),
     "api", "finite number"),
    (lamps_with("        self.presses += 1\n", "        if len(action) > 9000:\n            raise ValueError(action)\n"
                                              "        self.presses += 1\n"), "fuzz", "hostile action"),
    (lamps_with("        self.panel, self.presses = 0, 0\n",
                "        self.panel, self.presses = 0, 0\n        self.answer[0] = COLOURS[self.uses % 6]\n"
                "        self.uses += 1\n").replace("self.instruction = \"\"\n", "self.instruction = \"\"\n"
                                                   "        self.uses = 0\n", 1), "determinism", "played twice"),
    (lamps_with("        self.layout = rng.sample(COLOURS, len(COLOURS))\n", "        self.layout = list(COLOURS)\n")
     .replace("rng.choice(COLOURS) for _ in range(PANELS)", "'red' for _ in range(PANELS)"),
     "seed_sensitivity", "distinct starts"),
    (example_module("trivial"), "baselines", "constant won 8, random won 8"),
    (example_module("impossible"), "expert", "expected the expert to win at least 7 of 8 seeds, got 0"),
    (example_module("coinflip"), "baselines", "random won"),
    (example_module("leaky"), "leak", "appear in the instruction"),
    (lamps_with("            return said + \" No presses left. You lose.\", reward, True\n",
                "            return said + \" No presses left. You lose.\", reward, False\n"),
     "speed", "expected every episode to end"),
])
def test_each_gate_catches_its_fault(source, gate, expected):
    report = validate_module(source)
    assert report.failed_gate == gate, report.to_info()["gates"]
    assert expected in report.gates[-1].detail and report.infra_error is None
    assert [g.name for g in report.gates] == list(GATES[: GATES.index(gate) + 1])


def test_a_slow_module_fails_the_speed_gate(monkeypatch):
    monkeypatch.setattr(gates, "MAX_MEDIAN_STEP_MS", 0.001)
    report = validate_module(LAMPS)
    assert report.failed_gate == "speed" and "expected a median step of at most 0.001 ms" in report.gates[-1].detail


def test_a_gate_ends_at_its_budget():
    source = "import time\n" + lamps_with("        self.presses += 1\n", "        time.sleep(0.2)\n        self.presses += 1\n")
    report = validate_module(source, lint=False, limits=ModuleLimits(gate_budget_s=1.0))
    assert report.failed_gate == "fuzz" and report.gates[-1].detail.startswith("budget:")
    assert report.gates[-1].seconds < 3.0


@pytest.mark.parametrize("name", ["nondet_time", "nondet_urandom", "nondet_random", "nondet_hash"])
def test_each_source_of_nondeterminism_fails_the_determinism_gate(name):
    report = validate_module(example_module(name), lint=False)
    assert report.failed_gate == "determinism", report.to_info()["gates"]
    linted = validate_module(example_module(name))
    assert linted.failed_gate == ("imports" if name in ("nondet_time", "nondet_urandom") else "determinism")


def test_novelty_is_the_injected_check():
    seen = []

    def duplicate(source: str, stats: dict) -> GateResult:
        seen.append(sorted(stats["fingerprint"]))
        return GateResult("novelty", False, "the same behaviour as archived env abc")

    report = validate_module(LAMPS, novelty=duplicate)
    assert report.failed_gate == "novelty" and report.gates[-1].detail == "the same behaviour as archived env abc"
    # the fingerprint: the expert on the fingerprint seeds, by position (no seed value is recorded)
    assert seen == [[str(i) for i in range(len(novelty.fingerprint_seeds()))]]
    assert sorted(report.stats["start_hashes"]) == sorted(str(s) for s in gates.gate_seeds())  # drawn, not 0..7
    assert not set(gates.gate_seeds()) & set(range(8))


def test_bwrap_missing_is_infra_error_not_a_failed_design(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    report = validate_module(LAMPS)
    assert report.infra_error and "bubblewrap is not installed" in report.infra_error
    assert report.failed_gate == "instantiate" and not report.passed
    assert report.to_info()["infra_error"] == report.infra_error


def test_leaked_run():
    assert leaked_run(["press red", "press blue"], ["then Press  RED, press blue!"]) == "press red press"
    assert leaked_run(["press red", "press blue"], ["press red or blue"]) is None
    assert leaked_run(["banana"], ["the answer is banana"]) == "banana"
    assert leaked_run([""], ["anything"]) is None


def test_the_lint_flags_escape_routes():
    for source in ("__import__('os')", "getattr(x, 'y')", "open('/etc/passwd')", "().__class__.__base__",
                   "import os.path", "from subprocess import run", "from . import x", "eval('1')"):
        assert import_problems(source), source
    assert import_problems(LAMPS) == []


# ----------------------------------------------------------------------------- hostile modules
def _pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for t in os.listdir(f"/proc/{pid}/task")
                for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except OSError:
        return []


@pytest.fixture()
def sandbox_namespaces(monkeypatch):
    """The pid namespace of every sandbox the gates open (the bwrap supervisor's, PID 1 inside)."""
    namespaces: list[str] = []
    original = sandboxed.open_sandbox

    def recording(backend, limits):
        box = original(backend, limits)
        inner = [_pid_namespace(child) for child in _children(box._proc.pid)]
        namespaces.extend(ns for ns in inner if ns and ns != _pid_namespace(os.getpid()))
        return box

    monkeypatch.setattr(sandboxed, "open_sandbox", recording)
    return namespaces


def _alive(pid: int) -> bool:
    """Running or sleeping, not a zombie (a dead process whose parent, here the machine's init, has not reaped it)."""
    try:
        return ") Z " not in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False


def _processes_in(namespaces: list[str]) -> list[int]:
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    return [pid for pid in pids if _pid_namespace(pid) in set(namespaces) and _alive(pid)]


HOSTILE = {"hostile_read": "instantiate", "hostile_write": "instantiate", "hostile_socket": "instantiate",
           "hostile_memory": "instantiate", "hostile_loop": "api", "hostile_forkbomb": "api"}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_module_is_contained(name, tmp_path: Path, sandbox_namespaces):
    """With the lint off, the sandbox alone stops the attack: each module would pass every gate if it
    worked (it is the lamps env plus the attack), so failing proves the attack failed."""
    canary = tmp_path / "canary.txt"
    canary.write_text("host secret 42\n")
    before = canary.stat().st_mtime_ns
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    source = (example_module(name).replace("/tmp/agentgym-host-canary.txt", str(canary))
              .replace("PORT = 8765", f"PORT = {server.getsockname()[1]}"))
    try:
        report = validate_module(source, lint=False)
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()
    assert report.failed_gate == HOSTILE[name] and report.infra_error is None, report.to_info()["gates"]
    assert all(g.seconds <= GATE_LIMIT_S for g in report.gates), [(g.name, g.seconds) for g in report.gates]
    assert canary.read_text() == "host secret 42\n" and canary.stat().st_mtime_ns == before
    assert sandbox_namespaces, "the fixture saw no sandbox: the check below would be vacuous"
    assert _processes_in(sandbox_namespaces) == [], "a process of the module outlived the gates"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_lint_rejects_hostile_modules_first_where_it_can(name):
    report = validate_module(example_module(name))
    assert report.failed_gate == ("imports" if name not in ("hostile_memory", "hostile_loop") else HOSTILE[name])


def test_the_process_check_sees_a_live_sandbox(sandbox_namespaces):
    """The check above is not vacuous: while a module runs, its processes are found; after close, none."""
    env = sandboxed.SandboxedModuleEnv(LAMPS)
    assert len(_processes_in(sandbox_namespaces)) >= 2  # the supervisor and the module's harness
    env.close()
    assert _processes_in(sandbox_namespaces) == []


def test_the_gates_hold_on_docker_too(tmp_path: Path):
    """The optional backend: the same verdicts (the good module passes; hash() and a hung step are caught)."""
    import sandboxes

    if "docker" in {b.strip() for b in os.environ.get("AGENTGYM_SKIP_BACKENDS", "").split(",")}:
        pytest.skip("docker left out by AGENTGYM_SKIP_BACKENDS (tests/sandboxes/sandbox_backends.py's rule)")
    assert sandboxes.unavailable_reason("docker") is None, sandboxes.unavailable_reason("docker")
    assert validate_module(LAMPS, backend="docker").passed
    assert validate_module(example_module("nondet_hash"), backend="docker").failed_gate == "determinism"
    canary = tmp_path / "canary.txt"
    canary.write_text("host secret\n")
    source = example_module("hostile_write").replace("/tmp/agentgym-host-canary.txt", str(canary))
    assert validate_module(source, backend="docker", lint=False).failed_gate == "instantiate"
    assert canary.read_text() == "host secret\n"


def test_a_module_that_hangs_on_import_fails_instantiate_at_its_timeout():
    report = validate_module("import time\ntime.sleep(60)\n" + LAMPS, lint=False,
                             limits=ModuleLimits(import_timeout_s=1.0))
    assert report.failed_gate == "instantiate" and report.gates[-1].detail.startswith("timeout:")
    assert report.gates[-1].seconds < 4.0 and report.infra_error is None


def test_the_second_process_of_the_determinism_gate_shares_its_budget():
    """A module slow to import (0.9 s, within the 1.5 s import limit) cannot stretch the determinism gate
    past its budget (0.9 s: 0.45 s scaled by the fingerprint seeds it also plays) by costing a second import."""
    scale = len(set(gates.gate_seeds()) | set(novelty.fingerprint_seeds())) / len(gates.gate_seeds())
    source = "import time\ntime.sleep(0.9)\n" + LAMPS
    report = validate_module(source, lint=False,
                             limits=ModuleLimits(import_timeout_s=1.5, gate_budget_s=0.9 / scale))
    assert report.failed_gate == "determinism", report.to_info()["gates"]
    assert report.gates[-1].seconds < 2.5
