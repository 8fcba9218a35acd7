"""Generating and compiling TextWorld games with textworld's own challenge makers, in a worker process.

Why a separate process: textworld's generators iterate over Python sets, so one seed gives *different*
games under different ``PYTHONHASHSEED`` values (measured with textworld 1.7: three of the four challenges
change). The worker runs with ``PYTHONHASHSEED=0``, which makes a spec's game the same on every machine and
in every run, and it keeps textworld's module-level generator (``textworld.g_rng``) out of the caller's
process. It is long-lived so that importing textworld and loading its knowledge bases (~2-3 s) is paid once
per process rather than once per game; it exits by itself after ``IDLE_TIMEOUT_S`` without work, and when
its parent goes away (end of input).

Protocol: one JSON request per line on the worker's stdin (``{"spec": {...}, "out_dir": "..."}``), one JSON
reply per line on its stdout (``{"ok": true, "meta": {...}}`` or ``{"ok": false, "error": "..."}``).
Callers normally go through :class:`~agentgym_envs.games.textworld.cache.GameCache`, never here.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from agentgym_envs.core.errors import AgentGymError
from agentgym_envs.games.textworld.challenges import GENERATOR_VERSION, GameSpec

GAME_FILE = "game.z8"
GAME_JSON = "game.json"
META_FILE = "meta.json"
IDLE_TIMEOUT_S = 300.0
GENERATE_TIMEOUT_S = 600.0
#: Seeds for which textworld finds no quest are retried with derived seeds (deterministically).
MAX_ATTEMPTS = 5
_ATTEMPT_STRIDE = 7_919_000


class GenerationError(AgentGymError):
    """A game could not be generated (textworld failed, timed out, or the worker died)."""


# ----------------------------------------------------------------------------- inside the worker
def generate_game(spec: GameSpec, out_dir: Path) -> dict[str, Any]:
    """Generate and compile ``spec``'s game into ``out_dir`` (``game.z8``, ``game.json``, ``meta.json``).

    Runs in the worker (fixed hash seed); calling it elsewhere gives a valid but possibly different game.
    """
    import textworld
    import textworld.challenges
    from textworld.generator import QuestGenerationError, compile_game

    make = textworld.challenges.CHALLENGES[spec.tw_name][1]
    last_error: Exception | None = None
    for attempt in range(MAX_ATTEMPTS):
        seed = spec.seed + attempt * _ATTEMPT_STRIDE
        textworld.g_rng.set_seed(seed)  # some makers fall back on textworld's global generator
        options = textworld.GameOptions()
        options.seeds = int(seed)
        options.path = str(out_dir / GAME_FILE)
        options.file_ext = ".z8"
        options.force_recompile = True
        try:
            game = make(settings=dict(spec.settings()), options=options)
        except QuestGenerationError as e:
            last_error = e
            continue
        compile_game(game, options)
        (out_dir / "game.ni").unlink(missing_ok=True)  # Inform 7 source: not needed to play
        meta = {"spec": spec.to_dict(), "tw_seed": seed, "textworld": textworld.__version__,
                "generator_version": GENERATOR_VERSION, "settings": spec.settings(),
                "walkthrough": game.metadata.get("walkthrough"), "max_score": game.max_score}
        (out_dir / META_FILE).write_text(json.dumps(meta, indent=1))
        return meta
    raise GenerationError(f"textworld found no quest for {spec} in {MAX_ATTEMPTS} seeds: {last_error}")


def serve(requests: TextIO, replies: TextIO, idle_timeout: float = IDLE_TIMEOUT_S) -> None:
    """Answer generation requests until end of input or ``idle_timeout`` seconds without one."""
    while True:
        ready, _, _ = select.select([requests], [], [], idle_timeout)
        if not ready:
            return
        line = requests.readline()
        if not line:
            return
        try:
            request = json.loads(line)
            meta = generate_game(GameSpec.from_dict(request["spec"]), Path(request["out_dir"]))
            reply: dict[str, Any] = {"ok": True, "meta": meta}
        except Exception as e:  # reported to the parent, which raises it as a GenerationError
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def _serve_main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        sys.exit("the generation worker must run with PYTHONHASHSEED=0 (start it through GenerationWorker)")
    replies = os.fdopen(os.dup(1), "w")  # the protocol channel
    os.dup2(2, 1)  # anything textworld or the Inform 7 compiler prints goes to stderr, not the protocol
    sys.stdout = sys.stderr
    serve(sys.stdin, replies)


# ----------------------------------------------------------------------------- the parent's side
class GenerationWorker:
    """Client of one worker process, started on first use and restarted if it died or idled out.

    Thread-safe (one request at a time); a forked child process starts its own worker.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._owner_pid = 0
        self._lock = threading.Lock()

    def generate(self, spec: GameSpec, out_dir: Path, timeout: float = GENERATE_TIMEOUT_S) -> dict[str, Any]:
        """Generate ``spec``'s game into ``out_dir``; raises :class:`GenerationError` on any failure."""
        request = json.dumps({"spec": spec.to_dict(), "out_dir": str(out_dir)}) + "\n"
        with self._lock:
            for attempt in range(2):  # a worker that idled out between requests is restarted once
                reply = self._exchange(request, timeout)
                if reply is not None:
                    break
            else:
                raise GenerationError(f"the generation worker died while generating {spec}")
        if not reply.get("ok"):
            raise GenerationError(f"generating {spec} failed: {reply.get('error')}")
        return reply["meta"]

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and self._owner_pid == os.getpid():
            proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _exchange(self, request: str, timeout: float) -> dict[str, Any] | None:
        """Send one request and read its reply; ``None`` when the worker was gone (caller retries)."""
        proc = self._running()
        try:
            proc.stdin.write(request.encode())
            proc.stdin.flush()
        except OSError:  # broken pipe: it exited while idle
            self._discard()
            return None
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            self._discard()
            raise GenerationError(f"game generation took longer than {timeout:.0f} s; the worker was stopped")
        line = proc.stdout.readline()
        if not line:
            self._discard()
            return None
        return json.loads(line)

    def _running(self) -> subprocess.Popen:
        if self._proc is not None and (self._owner_pid != os.getpid() or self._proc.poll() is not None):
            self._discard()
        if self._proc is None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", __name__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env=_worker_environment(), close_fds=True,
            )
            self._owner_pid = os.getpid()
        return self._proc

    def _discard(self) -> None:
        """Forget the current worker (killing it if it is ours and still running)."""
        proc, self._proc = self._proc, None
        if proc is not None and self._owner_pid == os.getpid() and proc.poll() is None:
            proc.kill()
            proc.wait()


def _worker_environment() -> dict[str, str]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    package_root = str(Path(__file__).resolve().parents[3])  # so a source checkout works uninstalled
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


#: The process's worker (shared by every cache and env in it).
WORKER = GenerationWorker()
atexit.register(WORKER.close)


def generate_in_worker(spec: GameSpec, out_dir: Path) -> dict[str, Any]:
    """Generate ``spec``'s game into ``out_dir`` in the process's worker."""
    return WORKER.generate(spec, out_dir)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve_main()
    else:
        sys.exit("usage: python -m agentgym_envs.games.textworld.generate --serve  (internal; see cache.py)")
