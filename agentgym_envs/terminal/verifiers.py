"""Verifiers of imported tasks: Terminal-Bench's pytest run and Harbor's reward file.

What they guarantee, whatever the agent did before submitting (each point is tested on both backends):

- **Structured verdicts.** Terminal-Bench tasks are scored from the JUnit XML report that pytest writes
  (``--junitxml``, injected through ``PYTEST_ADDOPTS``), never from the text a test script prints: 40
  printed ``PASSED fake::t`` lines count for nothing. Harbor tasks are scored from the reward file the
  task's ``tests/test.sh`` writes, ``reward.json`` read before ``reward.txt`` (Harbor's order).
- **Nothing forged survives.** The env kills every process the agent left before the verifier starts;
  then ``/tests`` and ``/logs`` are emptied and the task's test files written afresh, so a reward file,
  a JUnit report or a ``conftest.py`` planted there is gone before the tests run.
- **No shadowing.** The test run gets ``PYTHONSAFEPATH=1`` (the working directory is not put on
  ``sys.path``, so ``/app/json.py`` or ``/app/pytest.py`` shadows nothing), ``PYTHONNOUSERSITE=1`` (the
  agent-writable ``~/.local`` site directory, with any ``sitecustomize``/``.pth`` in it, is not read),
  ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (no entry-point plugins), ``--noconftest`` (no ``conftest.py``
  except, when the task ships one in its tests, those under ``/tests``), and ``-c`` naming the task's own
  ini file or ``/dev/null`` (a ``pytest.ini`` the agent writes cannot deselect tests). The root file
  system is read-only on both backends, so the interpreter and pytest themselves cannot be replaced.

What they cannot guarantee: tests that import the agent's code run that code inside the pytest process,
where it could rewrite the report as it exits. Tasks that need their own image (Docker only) run as root
on a writable root file system, where the agent could also replace system files; the import report says
when a task runs that way.
"""

from __future__ import annotations

import json
import math
import shlex
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sandboxes import SandboxError
from sandboxes.supervised import SupervisedSandbox

from .task import GradeReport

if TYPE_CHECKING:
    from .task import TerminalTask

VERIFIER_DIR = "/logs/verifier"
JUNIT_PATH = "/logs/agentgym/junit.xml"
"""Where pytest writes its report: outside ``/logs/verifier`` so a task's script cannot mistake it for a reward."""
MAX_REPORT_BYTES = 8 << 20
INI_NAMES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
#: Emptied before every test run; the leading ``chmod`` undoes an agent's ``chmod 000`` on its own files.
CLEAR_SCRIPT = (
    "for d in /tests /logs; do mkdir -p \"$d\" && chmod -R u+rwX \"$d\" 2>/dev/null; "
    "find \"$d\" -mindepth 1 -delete || exit 1; done; mkdir -p /logs/verifier /logs/agentgym"
)


class VerifierError(SandboxError):
    """The verifier could not prepare the test run (its directories could not be emptied)."""


def hardened_env(task: TerminalTask, files: tuple[tuple[str, bytes], ...]) -> dict[str, str]:
    """The environment of a test run: the task's own, plus the switches that stop agent-planted modules."""
    ini = next((p for p, _ in files if p.count("/") == 2 and p.rsplit("/", 1)[1] in INI_NAMES), "/dev/null")
    conftest = "--confcutdir=/tests" if any(p.endswith("/conftest.py") for p, _ in files) else "--noconftest"
    addopts = ["-p", "no:cacheprovider", f"--junitxml={JUNIT_PATH}", "-c", ini, "--rootdir=/tests", conftest]
    return {
        **task.env, "TEST_DIR": "/tests", "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": shlex.join(addopts),
    }


def prepare(box: SupervisedSandbox, files: tuple[tuple[str, bytes], ...]) -> None:
    """Empty ``/tests`` and ``/logs``, then write the task's test files: nothing the agent left stays."""
    result = box.run(["bash", "-c", CLEAR_SCRIPT], timeout=30)
    if not result.ok:
        raise VerifierError(f"could not empty /tests and /logs before the tests (exit {result.exit_code}): "
                            f"{result.text()[-300:]}")
    for path, data in files:
        box.write_file(path, data, mode=0o755)


@dataclass(frozen=True)
class PytestSummary:
    """Terminal-Bench style: write the tests, run the test script, score pytest's JUnit XML report.

    The score is the fraction of test cases that passed (skipped ones do not count); a run that reported
    no test case, or none at all, scores 0 with the script's output tail as the details.
    """

    files: tuple[tuple[str, bytes], ...]
    command: str = "bash /tests/run-tests.sh"

    def verify(self, box: SupervisedSandbox, task: TerminalTask) -> GradeReport:
        prepare(box, self.files)
        result = box.run(self.command, timeout=task.timeout_s, cwd=task.workdir, env=hardened_env(task, self.files))
        try:
            results = junit_results(box.read_file(JUNIT_PATH, max_bytes=MAX_REPORT_BYTES))
        except (SandboxError, ValueError) as e:
            details = f"no usable pytest report ({e}); the test script exited {result.exit_code}:\n"
            return GradeReport({"test-run": False}, 0.0, details + result.text()[-600:])
        if not results:
            return GradeReport({"test-run": False}, 0.0, f"pytest ran no test:\n{result.text()[-600:]}")
        return GradeReport(results, sum(results.values()) / len(results))


def junit_results(data: bytes) -> dict[str, bool]:
    """Test case → passed, from pytest's JUnit XML (a case run twice, e.g. failing in teardown, must pass both).

    Raises ``ValueError`` for anything that is not such a report (a DTD is refused outright: pytest never
    writes one, and entities are how XML bombs expand).
    """
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ValueError("the report declares a DTD, which pytest never writes")
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as e:
        raise ValueError(f"the report is not XML: {e}") from e
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"expected a <testsuites> report, got <{root.tag}>")
    results: dict[str, bool] = {}
    for case in root.iter("testcase"):
        outcomes = {child.tag for child in case}
        if "skipped" in outcomes and not outcomes & {"failure", "error"}:
            continue
        name = "::".join(filter(None, (case.get("classname", ""), case.get("name", ""))))
        results[name] = results.get(name, True) and not outcomes & {"failure", "error"}
    return results


@dataclass(frozen=True)
class RewardFile:
    """Harbor style: write the tests, run ``tests/test.sh``, read the reward it writes under /logs/verifier.

    ``reward.json`` is read first: a number, ``{"reward": x}``, or named rewards (``{"correctness": 1,
    "performance": 0}``, scored by their mean); then ``reward.txt`` (one number). Rewards are clipped to
    [0, 1]; a missing, malformed or non-finite reward scores 0.
    """

    files: tuple[tuple[str, bytes], ...]
    command: str = "bash /tests/test.sh"

    def verify(self, box: SupervisedSandbox, task: TerminalTask) -> GradeReport:
        prepare(box, self.files)
        result = box.run(self.command, timeout=task.timeout_s, cwd=task.workdir, env=hardened_env(task, self.files))
        rewards = self._rewards(box)
        if rewards is None:
            return GradeReport({"reward-file": False}, 0.0,
                               f"no valid reward file was written (exit {result.exit_code}):\n{result.text()[-600:]}")
        score = min(max(sum(rewards.values()) / len(rewards), 0.0), 1.0)
        return GradeReport({name: value >= 1.0 for name, value in rewards.items()}, score)

    @staticmethod
    def _rewards(box: SupervisedSandbox) -> dict[str, float] | None:
        for name, parse in (("reward.json", _json_rewards), ("reward.txt", _text_reward)):
            try:
                text = box.read_file(f"{VERIFIER_DIR}/{name}", max_bytes=1 << 16).decode()
                return parse(text)
            except (SandboxError, ValueError, RecursionError):
                continue
        return None


def _finite(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r:.40}")
    return float(value)


def _text_reward(text: str) -> dict[str, float]:
    return {"reward": _finite(float(text.strip()))}


def _json_rewards(text: str) -> dict[str, float]:
    value = json.loads(text)
    if isinstance(value, dict):
        if "reward" in value:
            return {"reward": _finite(value["reward"])}
        if not value:
            raise ValueError("expected at least one reward, got {}")
        return {str(k): _finite(v) for k, v in value.items()}
    return {"reward": _finite(value)}


def _json_reward(text: str) -> float:
    """The single score a ``reward.json`` gives (the mean of named rewards)."""
    rewards = _json_rewards(text)
    return sum(rewards.values()) / len(rewards)
