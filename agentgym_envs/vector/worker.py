"""One env behind a message channel: the worker loop and the host-side handles that drive it.

A worker owns exactly one env and answers one command at a time (``reset``, ``step``, ``call``, ...), so
the host can step many envs at once and treat every failure the same way: an env that raises, a process
that dies and a step that hangs all come back to the host as a :class:`Failure` instead of an exception
or a hang. The host then throws the worker away and starts a fresh one (see ``text_vector_env.py``).

Two handles share the loop: :class:`ProcessWorker` (a daemon process and a ``Pipe``; the only kind that
survives segfaults and can be killed when it hangs) and :class:`ThreadWorker` (a daemon thread and two
queues; cheap, for envs that release the GIL or wait on I/O).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import cloudpickle  # a gymnasium dependency; lets env_fns be lambdas and closures
import gymnasium

from ..core.errors import SnapshotError, UnknownEnvError
from ..core.snapshots import install_key, snapshot_key
from ..registration import unknown_id_message

EnvFn = Callable[[], gymnasium.Env]

#: How long a new worker may take to build its env before the host gives up on it.
STARTUP_TIMEOUT_S = 120.0
#: How long ``close`` waits for a worker to exit on its own before killing it.
CLOSE_GRACE_S = 1.0


@dataclass(frozen=True)
class EnvFactory:
    """A picklable ``env_fn`` for a registered id: ``gymnasium.make(env_id, **kwargs)`` in the worker."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> gymnasium.Env:
        import agentgym_envs  # noqa: F401  (registers the ids in a fresh worker process)

        return gymnasium.make(self.env_id, **self.kwargs)


def resolve_env_fns(env_fns: Sequence[EnvFn] | None, env_id: str | None, env_kwargs: dict[str, Any] | None,
                    num_envs: int | None) -> list[EnvFn]:
    """The env factories a vector env was given, or made for ``env_id`` (checked in the host, where a
    mistake can still be explained with a did-you-mean)."""
    if (env_fns is None) == (env_id is None):
        raise ValueError("pass either env_fns (zero-argument callables) or env_id with num_envs, not both or neither")
    if env_fns is not None:
        fns = list(env_fns)
        if env_kwargs is not None:
            raise ValueError("env_kwargs goes with env_id; bake arguments into env_fns instead (functools.partial)")
        if not fns or not all(callable(fn) for fn in fns):
            raise ValueError(f"env_fns must be a non-empty list of zero-argument callables, got {env_fns!r}")
        if num_envs is not None and num_envs != len(fns):
            raise ValueError(f"num_envs={num_envs} disagrees with the {len(fns)} env_fns given; drop num_envs")
        return fns
    if num_envs is None or num_envs < 1:
        raise ValueError(f"env_id needs num_envs >= 1, got {num_envs!r}")
    if ":" not in env_id and env_id not in gymnasium.registry:
        raise UnknownEnvError(unknown_id_message(env_id))
    return [EnvFactory(env_id, dict(env_kwargs or {}))] * num_envs


@dataclass(frozen=True)
class Failure:
    """Why a command got no result. ``kind`` is ``"raised"``, ``"died"`` or ``"timeout"``."""

    kind: str
    detail: str
    traceback: str = ""

    def describe(self, index: int, command: str, timeout: float | None) -> str:
        """One line for ``info["infra_error"]``: which env, what it was doing, what went wrong."""
        if self.kind == "raised":
            return f"env {index} raised {self.detail} during {command}"
        if self.kind == "died":
            return f"env {index}'s worker died during {command} ({self.detail})"
        return f"env {index} did not finish {command} within step_timeout={timeout} s ({self.detail})"


# ----------------------------------------------------------------------------- worker side
def _reset(env: gymnasium.Env, payload: tuple) -> tuple[str, dict]:
    seed, options = payload
    return env.reset(seed=seed, options=options)


def _reset_snapshot(env: gymnasium.Env, payload: tuple) -> tuple[str, dict, bytes]:
    """Reset and snapshot in one round trip: the first member of a group seeds the others."""
    observation, info = env.reset(seed=payload[0], options=payload[1])
    try:
        return observation, info, env.unwrapped.get_state()
    except SnapshotError:  # the contract lets an env refuse (state outside Python): the host seeds the group
        return observation, info, None


def _reset_to(env: gymnasium.Env, payload: tuple) -> None:
    """Reset (so wrappers such as ``TimeLimit`` restart too), then take on the group's start state."""
    state, seed, options = payload
    env.reset(seed=seed, options=options)
    env.unwrapped.set_state(state)


def _step(env: gymnasium.Env, action: Any) -> tuple:
    return env.step(action)


def _call(env: gymnasium.Env, payload: tuple) -> Any:
    name, args, kwargs = payload
    attribute = getattr(env.unwrapped, name)
    return attribute(*args, **kwargs) if callable(attribute) else attribute


COMMANDS: dict[str, Callable[[gymnasium.Env, Any], Any]] = {
    "reset": _reset, "reset_snapshot": _reset_snapshot, "reset_to": _reset_to, "step": _step, "call": _call,
}


def _error(e: BaseException) -> dict[str, str]:
    return {"type": type(e).__name__, "message": str(e), "traceback": traceback.format_exc()}


def serve(conn: Any, env_fn: EnvFn) -> None:
    """Build the env, report ``ready`` (or why not), then answer commands until ``close`` or EOF."""
    try:
        env = env_fn()
        unwrapped = env.unwrapped
        snapshots = callable(getattr(unwrapped, "get_state", None)) and callable(getattr(unwrapped, "set_state", None))
        conn.send(("ready", {"pid": os.getpid(), "snapshots": snapshots}))
    except Exception as e:
        conn.send(("error", _error(e)))
        return
    try:
        while True:
            try:
                command, payload = conn.recv()
            except (EOFError, OSError):  # the host went away: nothing left to serve
                return
            if command == "close":
                return
            try:
                reply = ("ok", COMMANDS[command](env, payload))
            except Exception as e:  # an env bug must reach the host as data, not kill the loop
                reply = ("error", _error(e))
            try:
                conn.send(reply)
            except (EOFError, OSError):
                return
            except Exception as e:  # the result does not pickle: say so instead of dying
                conn.send(("error", _error(e)))
    finally:
        try:
            env.close()
        except Exception:
            pass


def process_main(conn: multiprocessing.connection.Connection, env_fn_bytes: bytes, sys_path: list[str],
                 snapshot_key_bytes: bytes) -> None:
    """Entry point of a worker process.

    The env factory arrives pickled, and is unpickled only after ``sys.path`` matches the host's, so that
    factories from modules the host found late (a test file, a notebook dir) still import under
    ``forkserver``. Unpickling it (and every message on ``conn``) is safe: the bytes come from the host
    process that started this worker, over a pipe only the two of them hold; nothing an agent sends or an
    env receives from outside travels as a pickle here (snapshots inside messages stay sealed bytes and
    are checked by ``set_state``). The worker adopts the host's snapshot key, so that snapshots pass
    between host and workers both ways. The worker lets go of the terminal's stdin and ignores Ctrl-C: the
    host decides when workers stop, and an interrupt must not kill them mid-message. It leads its own process group,
    so that killing a hung worker also kills what its env started (a browser, a shell, a server).
    """
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.path[:] = sys_path
    try:
        install_key(snapshot_key_bytes)
        env_fn = pickle.loads(env_fn_bytes)  # the host's own cloudpickle of its env_fn (see above)
    except Exception as e:
        conn.send(("error", _error(e)))
        return
    serve(conn, env_fn)


# ----------------------------------------------------------------------------- host side
def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _raised(error: dict[str, str]) -> Failure:
    return Failure("raised", f"{error['type']}: {error['message']}", error["traceback"])


def pickle_env_fn(i: int, env_fn: EnvFn) -> bytes:
    """Pickle ``env_fns[i]`` in the host, where a failure can still be explained.

    cloudpickle is fine here: the caller's own factory goes to the caller's own child process (see
    :func:`process_main`); nothing received from outside is ever unpickled on this path."""
    try:
        return cloudpickle.dumps(env_fn)
    except Exception as e:
        raise ValueError(f"env_fns[{i}] cannot be pickled for a worker process ({type(e).__name__}: {e}); "
                         "build unpicklable things inside the factory, or use mode='thread'") from e


def close_workers(workers: list[Any]) -> None:
    """Ask all workers to stop at once, then reap them (so closing N workers takes one grace period)."""
    for worker in workers:
        if worker is not None:
            worker.send("close", None)
    deadline = time.monotonic() + CLOSE_GRACE_S
    for worker in workers:
        if worker is not None:
            worker.close(deadline)


def _context() -> multiprocessing.context.BaseContext:
    """``forkserver`` (fork from a clean single-threaded server, so safe when the host runs threads), else
    ``spawn``. Either re-imports the main module in workers: scripts need ``if __name__ == "__main__":``."""
    return multiprocessing.get_context("forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn")


class ProcessWorker:
    """Host handle of a worker process. Never raises on a broken worker: it returns a :class:`Failure`."""

    def __init__(self, env_fn_bytes: bytes, name: str):
        context = _context()
        self._conn, child = context.Pipe(duplex=True)
        self._process = context.Process(
            target=process_main, args=(child, env_fn_bytes, list(sys.path), snapshot_key()), name=name, daemon=True
        )
        self._process.start()
        child.close()  # only the worker holds its end, so its death reads as EOF here
        self._broken: Failure | None = None
        self.pid: int | None = self._process.pid
        self.snapshots = False

    def wait_ready(self, deadline: float | None) -> Failure | None:
        reply = self._receive(deadline)
        if isinstance(reply, Failure):
            return reply
        self.snapshots = bool(reply["snapshots"])
        return None

    def send(self, command: str, payload: Any) -> None:
        try:
            self._conn.send((command, payload))
        except OSError as e:  # broken pipe: the worker is gone
            self._broken = self._death(f"broke its pipe ({type(e).__name__})")
        except Exception as e:  # the payload does not pickle; the worker never saw it
            self._broken = Failure("raised", f"the {command} arguments could not be pickled: {type(e).__name__}: {e}")

    def recv(self, deadline: float | None) -> Any:
        """The command's result, or a :class:`Failure` (raised, died, or no answer by ``deadline``)."""
        if self._broken is not None:
            failure, self._broken = self._broken, None
            return failure
        return self._receive(deadline)

    def _receive(self, deadline: float | None) -> Any:
        ready = multiprocessing.connection.wait([self._conn, self._process.sentinel], _remaining(deadline))
        if self._conn in ready:
            try:
                status, value = self._conn.recv()
            except (EOFError, OSError):
                return self._death("closed its pipe")
            return _raised(value) if status == "error" else value
        if ready:
            return self._death("exited")
        self.kill()
        return Failure("timeout", "the worker process was killed")

    def _death(self, how: str) -> Failure:
        self._process.join(CLOSE_GRACE_S)
        code = self._process.exitcode
        if code is not None and code < 0:
            return Failure("died", f"the worker process {how}, killed by signal {signal.Signals(-code).name}")
        return Failure("died", f"the worker process {how}, exit code {code}")

    def kill(self) -> None:
        """Kill the worker and its process group (whatever its env started), and wait for it to go."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # the group is already gone
            pass
        if self._process.is_alive():
            self._process.kill()
        self._process.join(CLOSE_GRACE_S)
        self._conn.close()

    def close(self, deadline: float) -> None:
        """Give a worker that was sent ``close`` until ``deadline`` to exit, then kill it."""
        self._process.join(_remaining(deadline))
        self.kill()


class _QueuePair:
    """The thread worker's end of the channel: the same ``send``/``recv`` as a ``Connection``."""

    def __init__(self, inbox: queue.Queue, outbox: queue.Queue):
        self._inbox, self._outbox = inbox, outbox

    def send(self, message: Any) -> None:
        self._outbox.put(message)

    def recv(self) -> Any:
        return self._inbox.get()


def _serve_in_thread(pair: _QueuePair, env_fn: EnvFn) -> None:
    """``serve``, plus a last word if the thread dies (``sys.exit`` in an env): the host must not wait on it."""
    try:
        serve(pair, env_fn)
    except BaseException as e:
        pair.send(("exited", f"the worker thread exited on {type(e).__name__}: {e}"))


class ThreadWorker:
    """Host handle of a worker thread. A hung thread cannot be killed: it is abandoned (it is a daemon,
    so it never blocks interpreter exit) and told to stop once its current command returns."""

    def __init__(self, env_fn: EnvFn, name: str):
        self._inbox: queue.Queue = queue.Queue()
        self._outbox: queue.Queue = queue.Queue()
        pair = _QueuePair(self._inbox, self._outbox)
        self._thread = threading.Thread(target=_serve_in_thread, args=(pair, env_fn), name=name, daemon=True)
        self._thread.start()
        self.pid: int | None = None
        self.snapshots = False

    def wait_ready(self, deadline: float | None) -> Failure | None:
        reply = self.recv(deadline)
        if isinstance(reply, Failure):
            return reply
        self.snapshots = bool(reply["snapshots"])
        return None

    def send(self, command: str, payload: Any) -> None:
        self._inbox.put((command, payload))

    def recv(self, deadline: float | None) -> Any:
        try:
            status, value = self._outbox.get(timeout=_remaining(deadline))
        except queue.Empty:
            self.kill()
            return Failure("timeout", "the worker thread was abandoned")
        if status == "exited":
            return Failure("died", value)
        return _raised(value) if status == "error" else value

    def kill(self) -> None:
        self._inbox.put(("close", None))

    def close(self, deadline: float) -> None:
        """Nothing to wait for: a daemon thread that was sent ``close`` exits by itself."""
