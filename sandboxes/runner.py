"""Untrusted Python inside a sandbox, driven from the host over a JSON-lines pipe.

Model-written code (generated environments, skills) is never ``exec``'d in the host process. The runner
writes the source into a sandbox, starts ``python3`` there on a small harness, and calls the module's
functions by name: each call is one JSON line down the process's stdin, each answer one JSON line up its
stdout. The untrusted code's own prints go to stderr, so they cannot forge answers; answers are
bounded, and a timeout kills the process (the next call starts it again from the source).

>>> with sandboxes.make("bwrap") as box:                               # doctest: +SKIP
...     runner = PythonRunner(box, "def add(a, b):\\n    return a + b\\n")
...     runner.call("add", 2, 3)
5
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from .base import SandboxError
from .supervised import SupervisedSandbox

HARNESS = r'''
import json, os, sys, traceback
protocol = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
namespace = {"__name__": "untrusted"}
with open(sys.argv[1]) as f:
    exec(compile(f.read(), sys.argv[1], "exec"), namespace)
protocol.write(json.dumps({"ready": True}) + "\n")
for line in sys.stdin:
    request = json.loads(line)
    try:
        target = namespace[request["method"].split(".")[0]]
        for attribute in request["method"].split(".")[1:]:
            target = getattr(target, attribute)
        answer = {"id": request["id"], "result": target(*request.get("args", []), **request.get("kwargs", {}))}
        text = json.dumps(answer)
    except BaseException as e:
        error = {"type": type(e).__name__, "message": str(e)[:2000], "traceback": traceback.format_exc()[-4000:]}
        text = json.dumps({"id": request.get("id"), "error": error})
    protocol.write(text + "\n")
'''


class RunnerError(SandboxError):
    """The untrusted code raised, timed out, died, or answered out of protocol."""

    def __init__(self, message: str, *, kind: str = "error", traceback: str = ""):
        super().__init__(message)
        self.kind, self.traceback = kind, traceback


class PythonRunner:
    """Call functions of untrusted Python source running inside ``sandbox`` (see the module docstring)."""

    def __init__(
        self, sandbox: SupervisedSandbox, source: str, *, directory: str = "/tmp/runner", start_timeout: float = 30.0,
    ):
        self.sandbox, self.source, self.directory = sandbox, source, directory
        self.start_timeout = start_timeout
        self._key: str | None = None
        self._ids = itertools.count(1)
        self.start()

    def start(self) -> None:
        """(Re)start the process from the source; raises RunnerError if the module fails to import."""
        self.stop()
        self.sandbox.write_file(f"{self.directory}/harness.py", HARNESS.encode())
        self.sandbox.write_file(f"{self.directory}/module.py", self.source.encode())
        self._key = self.sandbox.spawn(["python3", "-u", f"{self.directory}/harness.py", f"{self.directory}/module.py"])
        ready = self._receive(self.start_timeout, "starting")
        if not ready.get("ready"):
            raise RunnerError(f"the runner did not start properly: {ready!r:.200}", kind="protocol")

    def call(self, method: str, *args: Any, timeout: float = 30.0, **kwargs: Any) -> Any:
        """Call ``method`` (a name in the module, dotted for attributes) with JSON-able arguments."""
        if self._key is None:
            self.start()
        request_id = next(self._ids)
        line = json.dumps({"id": request_id, "method": method, "args": list(args), "kwargs": kwargs}) + "\n"
        answer = self._receive(timeout, method, send=line.encode())
        if answer.get("id") != request_id:
            self.stop()
            raise RunnerError(f"{method}: answer out of order ({answer!r:.200})", kind="protocol")
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            message = f"{method} raised {error.get('type')}: {error.get('message')}"
            raise RunnerError(message, traceback=str(error.get("traceback", "")))
        return answer.get("result")

    def stop(self) -> None:
        key, self._key = self._key, None
        if key is not None:
            try:
                self.sandbox.kill(key)
            except SandboxError:
                pass

    def _receive(self, timeout: float, what: str, send: bytes | None = None) -> dict[str, Any]:
        line, eof, stderr = self.sandbox.recv_line(self._key, timeout=timeout, send=send)
        if line is None:
            self.stop()
            if eof:
                raise RunnerError(f"{what}: the process exited: {stderr.decode(errors='replace')[-2000:]}", kind="died")
            raise RunnerError(f"{what}: no answer within {timeout} s; the process was killed", kind="timeout")
        try:
            answer = json.loads(line)
        except ValueError:
            self.stop()
            raise RunnerError(f"{what}: the process answered non-JSON: {line[:200]!r}", kind="protocol") from None
        if not isinstance(answer, dict):
            self.stop()
            raise RunnerError(f"{what}: expected a JSON object, got {line[:200]!r}", kind="protocol")
        return answer
