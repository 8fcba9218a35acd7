"""Answers from untrusted code are parsed as hostile: depth and size bounded, never a host exception (issue 31)."""

from __future__ import annotations

import json

import pytest

from sandboxes import PythonRunner, RunnerError
from sandboxes.runner import MAX_DEPTH, MAX_NODES, parse_answer

MODULE = """
import json, os, sys


def nested(n):
    value = 0
    for _ in range(n):
        value = [value]
    return value


def many(n):
    return [[] for _ in range(n)]


def forged(n):
    # the call's own answer line, written by hand: too deep for any parser, with this call's nonce
    nonce = sys._getframe(1).f_locals["request"]["nonce"]
    os.write(3, b'{"nonce": "' + nonce.encode() + b'", "result": ' + b"[" * n + b"]" * n + b"}\\n")
    return "honest"


def small():
    return 1
"""


def at_depth(frames: int, call):
    """``call()`` with ``frames`` more Python frames on the stack (a host deep in an env, a trainer, a CLI)."""
    return call() if frames == 0 else at_depth(frames - 1, call)


@pytest.fixture
def runner(box):
    return PythonRunner(box, MODULE)


def test_a_deeply_nested_answer_is_the_codes_protocol_error(runner):
    """Issue 31: a list ~986 deep parsed in the host raised RecursionError out of ``call``."""
    with pytest.raises(RunnerError, match=f"over {MAX_DEPTH} deep") as info:
        at_depth(50, lambda: runner.call("nested", 986))
    assert info.value.kind == "protocol"
    assert runner.call("small") == 1  # the process is still in step
    assert runner.call("nested", MAX_DEPTH) == json.loads("[" * MAX_DEPTH + "0" + "]" * MAX_DEPTH)


def test_a_forged_answer_too_deep_to_parse_is_a_protocol_error(runner):
    with pytest.raises(RunnerError, match="too deep") as info:
        runner.call("forged", 200_000, timeout=10)
    assert info.value.kind == "protocol"
    assert runner.call("small") == 1


def test_an_answer_of_too_many_containers_is_refused(runner):
    with pytest.raises(RunnerError, match=f"over {MAX_NODES} lists") as info:
        runner.call("many", MAX_NODES + 10, timeout=20)
    assert info.value.kind == "protocol"
    assert len(runner.call("many", 1000)) == 1000


@pytest.mark.parametrize("line, match", [
    (b"[" * 100_000 + b"]" * 100_000, "nested at most"),
    (b'{"id": 1, "result": ' + b"[" * 900 + b"]" * 900 + b"}", "nested at most"),
    (b"[]," * (MAX_NODES + 1), "lists and objects"),
    (b'{"id": 1', "non-JSON"),
    (b"[1]", "expected a JSON object"),
])
def test_the_host_checks_every_answer_line_itself(line, match):
    """The harness runs beside the untrusted code, so the host bounds what it parses on its own."""
    with pytest.raises(ValueError, match=match):
        at_depth(100, lambda: parse_answer(line))
    assert parse_answer(b'{"id": 1, "result": "[[[[\\"]]"}') == {"id": 1, "result": '[[[["]]'}
