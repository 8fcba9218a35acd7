"""Untrusted Python inside a sandbox, driven from the host over a JSON-lines pipe.

Model-written code (generated environments, skills, a designer's environment in a meta-env) is never
``exec``'d in the host process. The runner starts ``python3`` in a sandbox on a small trusted harness
(:data:`HARNESS`, passed as ``-c`` so no file in the sandbox can replace it) and calls the module's
functions by name: each call is one JSON line down the process's stdin, each answer one JSON line up.

What is guaranteed, and how:

- The reply channel to the host is out of the untrusted code's reach. The harness forks; the untrusted
  module runs only in the child, which keeps no descriptor of the host's pipes (its stdout and stderr are
  the process's stderr). The harness is non-dumpable (same-uid code can neither open its pipes through
  ``/proc/PID/fd`` nor read its memory) and the sandbox's seccomp filter denies ``ptrace`` and
  ``process_vm_*``; so writing to fd 1 or 3, or to ``/proc/<harness>/fd/1``, forges nothing.
- An answer is for the call in flight. The harness gives each call a fresh random nonce and relays only
  the child's line that carries it; anything else the untrusted code writes is dropped. Answers cannot be
  written ahead of a call, replayed, or attributed to another call; they are bounded (:data:`MAX_ANSWER`
  bytes, :data:`MAX_DEPTH` levels of nesting, :data:`MAX_NODES` lists and objects) and must be JSON. An
  answer out of those bounds is a :class:`RunnerError` of kind ``protocol`` (the code's outcome), checked
  in the harness and again on the host (:func:`parse_answer`): no answer can make the host's parser recurse.
- What the untrusted code *can* decide is what its own functions return or raise: results are data to be
  checked by the caller, never trusted verdicts. It can also stop answering (a timeout, after which the
  process is killed and the next call starts it again from the source) or kill the harness (``died``).

>>> import sandboxes
>>> with sandboxes.make("bwrap") as box:
...     runner = PythonRunner(box, "def add(a, b):\\n    return a + b\\n")
...     runner.call("add", 2, 3)
5
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from .base import SandboxError
from .supervised import SupervisedSandbox

MAX_ANSWER = 16 << 20
MAX_DEPTH = 100
"""Deepest nesting of lists and objects in a result: parsing deeper JSON recurses (a ``RecursionError`` in
whichever process parses it), and no module's answer needs more."""
MAX_NODES = 1 << 20
"""Most lists and objects in one answer: a 16 MB line of ``[],`` would cost ~400 MB of Python objects."""

HARNESS = r'''
import json, os, sys
MAX, DEPTH, NODES = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def undumpable():
    import ctypes
    if ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise OSError("prctl(PR_SET_DUMPABLE, 0) failed")
def child(path, requests, answers):
    os.dup2(requests, 0)
    os.dup2(2, 1)
    os.dup2(answers, 3)
    os.closerange(4, 1 << 16)
    import traceback
    out = os.fdopen(3, "w", buffering=1)
    sys.stdin = os.fdopen(0, "r")
    sys.stdout = sys.stderr
    sys.path.insert(0, os.path.dirname(path))
    namespace = {"__name__": "untrusted", "__file__": path}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), namespace)
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        try:
            target = namespace[request["method"].split(".")[0]]
            for attribute in request["method"].split(".")[1:]:
                target = getattr(target, attribute)
            text = json.dumps({"nonce": request["nonce"], "result": target(*request["args"], **request["kwargs"])})
        except BaseException as e:
            error = {"type": type(e).__name__, "message": str(e)[:2000], "traceback": traceback.format_exc()[-4000:]}
            text = json.dumps({"nonce": request["nonce"], "error": error})
        out.write(text + "\n")
class Lines:
    TOO_LONG = False
    def __init__(self, fd):
        self.fd, self.rest = fd, b""
    def next(self):
        """The child's next line; None at its end, TOO_LONG for a line over MAX (read and dropped)."""
        parts, size, chunk, self.rest = [], 0, self.rest, b""
        while b"\n" not in chunk:
            size += len(chunk)
            parts = [] if size > MAX else parts + [chunk]
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
        head, self.rest = chunk.split(b"\n", 1)
        if size + len(head) > MAX:
            return self.TOO_LONG
        return b"".join(parts) + head
def too_deep(value, limit):
    """Whether ``value`` nests lists and dicts more than ``limit`` deep (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, dict)):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return False
def parse(line, nonce):
    """The answer to the call of ``nonce`` in ``line``; None for a line that is not that answer."""
    ours = nonce.encode() in line
    if ours and line.count(b"[") + line.count(b"{") > NODES:
        return {"protocol": f"the answer holds over {NODES} lists and objects"}
    try:
        answer = json.loads(line)
    except (RecursionError, MemoryError):
        return {"protocol": "the answer is nested too deep to parse"} if ours else None
    except Exception:
        return None
    if not isinstance(answer, dict) or answer.get("nonce") != nonce:
        return None
    if "result" in answer:
        if too_deep(answer["result"], DEPTH):
            return {"protocol": f"the answer nests lists and objects over {DEPTH} deep"}
        return {"result": answer["result"]}
    error = answer.get("error") if isinstance(answer.get("error"), dict) else {}
    return {"error": {k: str(error.get(k, ""))[:4000] for k in ("type", "message", "traceback")}}
def relay(to_child, lines):
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    while True:
        line = lines.next()
        if line is None:
            sys.exit("the untrusted code exited before it was ready")
        try:
            if json.loads(line) == {"ready": True}:
                break
        except Exception:
            pass
    protocol.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request, nonce = json.loads(line), os.urandom(16).hex()
        os.write(to_child, (json.dumps({"nonce": nonce, "method": request["method"], "args": request["args"],
                                        "kwargs": request["kwargs"]}) + "\n").encode())
        answer = None
        while answer is None:
            line = lines.next()
            if line is None:
                sys.exit("the untrusted code exited")
            if line is Lines.TOO_LONG:
                answer = {"protocol": f"the answer is over {MAX} bytes"}
            else:
                answer = parse(line, nonce)
        try:
            text = json.dumps(dict(answer, id=request["id"]))
        except Exception as e:
            text = json.dumps({"id": request["id"], "error": {"type": type(e).__name__, "message": str(e)[:2000]}})
        protocol.write(text + "\n")
undumpable()
requests_r, requests_w = os.pipe()
answers_r, answers_w = os.pipe()
if os.fork() == 0:
    try:
        child(sys.argv[1], requests_r, answers_w)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        os._exit(1)
os.close(requests_r)
os.close(answers_w)
relay(requests_w, Lines(answers_r))
'''
"""The trusted harness: relays calls to the untrusted module in a forked child and answers the host."""


class RunnerError(SandboxError):
    """The untrusted code raised, timed out, died, or answered out of protocol."""

    def __init__(self, message: str, *, kind: str = "error", traceback: str = ""):
        super().__init__(message)
        self.kind, self.traceback = kind, traceback


class PythonRunner:
    """Call functions of untrusted Python source running inside ``sandbox`` (see the module docstring)."""

    def __init__(
        self, sandbox: SupervisedSandbox, source: str, *, directory: str = "/tmp/runner", start_timeout: float = 30.0,
        hash_seed: int | None = None,
    ):
        """``hash_seed`` fixes the process's ``PYTHONHASHSEED`` (``python3 -P -s`` then, since ``-I`` would ignore
        it); ``None`` keeps ``-I`` and a random hash seed per process."""
        self.sandbox, self.source, self.directory = sandbox, source, directory
        self.start_timeout, self.hash_seed = start_timeout, hash_seed
        self._key: str | None = None
        self._ids = itertools.count(1)
        self.start()

    def start(self) -> None:
        """(Re)start the process from the source; raises RunnerError if the module fails to import."""
        self.stop()
        module = f"{self.directory}/module.py"
        self.sandbox.write_file(module, self.source.encode())
        flags, env = ["-I"], None
        if self.hash_seed is not None:
            flags, env = ["-P", "-s"], {"PYTHONHASHSEED": str(int(self.hash_seed))}
        self._key = self.sandbox.spawn(["python3", *flags, "-u", "-c", HARNESS, module, str(MAX_ANSWER),
                                        str(MAX_DEPTH), str(MAX_NODES)], env=env)
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
        if "protocol" in answer:  # the harness caught an answer out of bounds; its process is still in step
            raise RunnerError(f"{method}: {str(answer['protocol'])[:300]}", kind="protocol")
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
            answer = parse_answer(line)
        except ValueError as e:
            self.stop()
            raise RunnerError(f"{what}: {e}", kind="protocol") from None
        return answer


def parse_answer(line: bytes) -> dict[str, Any]:
    """One answer line from the sandbox, parsed as hostile: bounded in size, depth and count of containers.

    The harness already bounds what it relays; this is the host's own check, since the harness runs where the
    untrusted code does. Anything out of bounds (too deep for the parser included) is a ``ValueError``.

    >>> parse_answer(b'{"id": 1, "result": [1, [2]]}')
    {'id': 1, 'result': [1, [2]]}
    >>> parse_answer(b"[" * 5000 + b"]" * 5000)
    Traceback (most recent call last):
    ...
    ValueError: expected a JSON object nested at most 102 deep, got 5000 deep
    """
    if len(line) > MAX_ANSWER + 4096:
        raise ValueError(f"expected an answer of at most {MAX_ANSWER} bytes, got {len(line)}")
    containers = line.count(b"[") + line.count(b"{")  # an upper bound (brackets inside strings count too)
    if containers > MAX_NODES:
        raise ValueError(f"expected at most {MAX_NODES} lists and objects in an answer, got up to {containers}")
    depth = _depth(line) if containers > MAX_DEPTH + 2 else containers
    if depth > MAX_DEPTH + 2:  # a result MAX_DEPTH deep, inside the answer's object
        raise ValueError(f"expected a JSON object nested at most {MAX_DEPTH + 2} deep, got {depth} deep")
    try:
        answer = json.loads(line)
    except (ValueError, RecursionError, MemoryError) as e:
        raise ValueError(f"the process answered non-JSON ({type(e).__name__}): {line[:200]!r}") from None
    if not isinstance(answer, dict):
        raise ValueError(f"expected a JSON object, got {line[:200]!r}")
    return answer


_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _depth(line: bytes) -> int:
    """The deepest nesting of brackets in JSON text, strings skipped (never parsed, so never recursing)."""
    depth = deepest = 0
    for match in _TOKENS.finditer(line):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest
