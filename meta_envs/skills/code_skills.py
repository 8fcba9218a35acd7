"""``kind: code`` skills: a script that runs only in a sandbox, and the tests it brings, which must pass first.

A code skill is a skill folder whose front matter or ``metadata`` says ``kind: code``. Besides ``SKILL.md`` it
holds the script (:attr:`Skill.script`, the folder's ``scripts/skill.py``) and its own tests: resources named
``tests/test_*.py``, Python modules whose top-level ``def test_*():`` functions take no arguments and
``import skill`` to reach the script (the tests run with the script as ``skill.py`` beside them). Other
resources travel with the script (data files, templates).

The gate (:func:`check_code_skill`): before any utility is measured, the skill's tests run in a fresh sandbox
(bubblewrap by default), never in this process. Each test is one call through
:class:`sandboxes.runner.PythonRunner`, whose nonce-tagged reply channel the untrusted code cannot write to,
so a test passes only when the call itself returned: printing "passed", writing to file descriptors or
exiting early forges nothing (an exit is ``died``, a hang a timeout). The box is the skill's for the whole
gate: a test that leaves something the runner cannot write over (a FIFO in place of ``module.py`` or the
script) fails the tests that follow, never the gate itself. A skill with no test, a test file that
does not parse, or more than :data:`MAX_TESTS` tests fails the gate. These outcomes are the reflector's
(``CodeSkillReport.passed`` is False); ``CodeSkillReport.infra_error`` is set only when our sandbox could not
start or its supervisor died, independently of the skill.

Installing (:func:`install_code_skills`): at each reset of a Terminal episode the scripts of the library's
code skills are written into the episode's own sandbox, the whole folder at ``/home/agent/skills/<name>/``,
so the actor runs them with ``python3 /home/agent/skills/<name>/scripts/skill.py ...``. The
files are written after the sandbox is reset to pristine and before the first command; the env's snapshot
replay (``set_state``) rebuilds the sandbox without them, so a branch restored from a snapshot must be
installed again (call :func:`install_code_skills` after ``set_state``).
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import gymnasium

import sandboxes
from sandboxes import Limits, PythonRunner, SandboxError

SCRIPT_NAME = "skill.py"
"""File name of a code skill's script beside its tests (they ``import skill``)."""
INSTALL_ROOT = "/home/agent/skills"
"""Where skill folders go in a Terminal episode's sandbox: ``INSTALL_ROOT/<name>/scripts/skill.py``."""
TEST_PATH = re.compile(r"^tests/test_[A-Za-z0-9_]+\.py$")
MAX_TESTS = 32
RUN_DIR = "/tmp/runner"
GATE_LIMITS = Limits(cpu_seconds=30, memory_mb=256, processes=32, file_size_mb=16, disk_mb=32)
"""Bounds of the sandbox that runs a skill's tests: enough for small scripts, little room for abuse."""


@dataclass(frozen=True)
class CodeSkillReport:
    """The outcome of running a code skill's own tests in a sandbox (``to_info()`` is JSON-able)."""

    passed: bool
    detail: str
    tests: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0
    infra_error: str | None = None

    def to_info(self) -> dict[str, Any]:
        return {"passed": self.passed, "detail": self.detail, "tests": dict(self.tests),
                "seconds": round(self.seconds, 3), "infra_error": self.infra_error}


def is_code_skill(skill: Any) -> bool:
    """Whether ``skill`` is a ``kind: code`` skill (the only kind with a script)."""
    return getattr(skill, "kind", "text") == "code"


def test_sources(skill: Any) -> dict[str, str]:
    """The skill's test modules: resources at ``tests/test_*.py``, sorted by path."""
    resources = getattr(skill, "resources", None) or {}
    return {path: text for path, text in sorted(resources.items()) if TEST_PATH.match(path)}


def test_names(source: str, path: str = "test") -> list[str]:
    """Top-level ``test_*`` functions of ``source`` that take no arguments; raises SyntaxError when it does not parse."""
    tree = ast.parse(source, filename=path)
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            arguments = node.args
            if not (arguments.args or arguments.posonlyargs or arguments.kwonlyargs or arguments.vararg or arguments.kwarg):
                names.append(node.name)
    return names


def check_code_skill(
    skill: Any, *, backend: str = "bwrap", test_timeout_s: float = 10.0, limits: Limits | None = None,
) -> CodeSkillReport:
    """Run ``skill``'s own tests in a fresh ``backend`` sandbox; passed only when every test returned.

    A text skill has nothing to run and passes (``detail`` says so). See the module docstring for the rules.
    """
    if backend not in sandboxes.REAL_BACKENDS:
        raise ValueError(f"backend must be one of {sandboxes.REAL_BACKENDS}, got {backend!r}: a skill's script is "
                         "model-written code and runs only in a real sandbox")
    started = time.monotonic()
    if not is_code_skill(skill):
        return CodeSkillReport(True, "a text skill: no script, no tests to run")
    problem, plan = _plan(skill)
    if problem is not None:
        return CodeSkillReport(False, problem, seconds=time.monotonic() - started)
    try:
        box = sandboxes.make(backend, limits or GATE_LIMITS)
    except SandboxError as e:
        return CodeSkillReport(False, "the sandbox did not start", seconds=time.monotonic() - started,
                               infra_error=f"the {backend} sandbox could not start: {e}")
    try:
        with box:
            results, detail = _run_plan(box, skill, plan, test_timeout_s)
    except sandboxes.SandboxDied as e:
        return CodeSkillReport(False, "the sandbox died", seconds=time.monotonic() - started,
                               infra_error=f"the {backend} sandbox died while running the skill's tests: {e}")
    passed = bool(results) and all(results.values())
    return CodeSkillReport(passed, detail, results, time.monotonic() - started)


def _plan(skill: Any) -> tuple[str | None, list[tuple[str, str, list[str]]]]:
    """``(problem, [(path, source, test names)])``: what would run, or why nothing can."""
    script = getattr(skill, "script", None)
    if not isinstance(script, str) or not script.strip():
        return f"expected a script (scripts/skill.py) in a kind: code skill, got none", []
    sources = test_sources(skill)
    if not sources:
        return "expected at least one test module at tests/test_*.py in a kind: code skill, got none", []
    plan = []
    for path, source in sources.items():
        try:
            names = test_names(source, path)
        except SyntaxError as e:
            return f"{path} does not parse: {e.msg} (line {e.lineno})", []
        plan.append((path, source, names))
    count = sum(len(names) for _, _, names in plan)
    if count == 0:
        return "expected at least one top-level `def test_*():` without arguments in tests/test_*.py, got none", []
    if count > MAX_TESTS:
        return f"expected at most {MAX_TESTS} tests, got {count}; keep a skill's tests few and fast", []
    return None, plan


def _run_plan(box: Any, skill: Any, plan: list[tuple[str, str, list[str]]], timeout: float) -> tuple[dict[str, bool], str]:
    """Each test module in its own runner process next to the script; ``({path::name: passed}, detail)``."""
    results: dict[str, bool] = {}
    failures: list[str] = []
    for path, source, names in plan:
        try:
            _write_files(box, RUN_DIR, skill)
            runner = PythonRunner(box, source, directory=RUN_DIR, start_timeout=timeout)
        except SandboxError as e:
            _reraise_if_ours(e)
            results.update({f"{path}::{name}": False for name in names})
            failures.append(f"{path} failed to start ({getattr(e, 'kind', 'refused')}): {str(e)[:300]}")
            continue
        try:
            for name in names:
                ok, why = _call_test(runner, name, timeout)
                results[f"{path}::{name}"] = ok
                if not ok:
                    failures.append(f"{path}::{name} {why}")
        finally:
            runner.stop()
    if failures:
        return results, f"{len(failures)} of {len(results)} tests failed: " + "; ".join(failures)[:1500]
    return results, f"all {len(results)} tests passed"


def _reraise_if_ours(error: SandboxError) -> None:
    """A dead supervisor is our machinery failing (``infra_error``); any other refusal inside the fresh box
    (a write onto a FIFO the skill planted where its script or module goes, a spawn it broke) comes from the
    skill's own files and code, so it is the skill's failure."""
    if isinstance(error, sandboxes.SandboxDied):
        raise error


def _call_test(runner: PythonRunner, name: str, timeout: float) -> tuple[bool, str]:
    try:
        runner.call(name, timeout=timeout)
    except SandboxError as e:  # after a death or a timeout the runner restarts the module for the next call
        _reraise_if_ours(e)
        return False, f"failed ({getattr(e, 'kind', 'refused')}): {str(e)[:300]}"
    return True, "passed"


def _write_files(box: Any, directory: str, skill: Any) -> None:
    """The script as ``directory/skill.py`` and its non-test resources beside it (where the tests run)."""
    box.write_file(f"{directory}/{SCRIPT_NAME}", skill.script.encode(), mode=0o755)
    for path, text in sorted((getattr(skill, "resources", None) or {}).items()):
        if not TEST_PATH.match(path):
            box.write_file(f"{directory}/{path}", text.encode())


def install_code_skills(box: Any, skills: Iterable[Any]) -> list[str]:
    """Write each code skill's folder (SKILL.md, resources, ``scripts/skill.py``) into ``box`` at
    ``INSTALL_ROOT/<name>/``; returns the names installed."""
    installed = []
    for skill in skills:
        if is_code_skill(skill) and isinstance(getattr(skill, "script", None), str):
            for path, text in skill.files().items():
                mode = 0o755 if path.startswith("scripts/") else 0o644
                box.write_file(f"{INSTALL_ROOT}/{skill.name}/{path}", text.encode(), mode=mode)
            installed.append(skill.name)
    return installed


class WithCodeSkills(gymnasium.Wrapper):
    """Installs a library's code skills into a Terminal episode's sandbox at every reset.

    ``info["code_skills_installed"]`` (on reset) lists the names installed. The wrapped env must keep its
    sandbox as ``unwrapped._box`` (``TerminalEnv`` does); an env that has none installs nothing. If our write
    into the fresh sandbox fails, the episode is our failure, not the agent's: the reset info has
    ``infra_error`` and the first step truncates the episode with it, without stepping the env.
    """

    def __init__(self, env: gymnasium.Env, skills: Iterable[Any]):
        super().__init__(env)
        self.code_skills = [skill for skill in skills if is_code_skill(skill)]
        self._failed: str | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        box = getattr(self.env.unwrapped, "_box", None)
        installed: list[str] = []
        self._failed = None
        if box is not None and info.get("infra_error") is None:
            try:
                installed = install_code_skills(box, self.code_skills)
            except SandboxError as e:
                self._failed = f"could not install code skills into the sandbox: {e}"
                info = dict(info, infra_error=self._failed)
        return observation, dict(info, code_skills_installed=installed)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._failed is not None:
            base = self.env.unwrapped
            info = {"action_valid": True, "parse_error": None, "won": False, "score": 0.0, "infra_error": self._failed,
                    "state_key": base.state_key() if hasattr(base, "state_key") else "",
                    "metrics": base.metrics() if hasattr(base, "metrics") else {}}
            return f"The environment's infrastructure failed (not your fault): {self._failed}", 0.0, False, True, info
        return self.env.step(action)
