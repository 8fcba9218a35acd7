"""Worker processes live no longer than the runner that started them, however the runner ends.

A runner killed with SIGKILL runs no cleanup, and a spawned worker blocked on its task queue does not notice:
without this module such workers stayed alive for minutes, holding envs and sandboxes. Three layers:

* **Parent-death signal** (Linux): each worker asks the kernel, first thing, for SIGKILL when its parent
  dies (``prctl(PR_SET_PDEATHSIG)``), then checks that the parent has not already died in between.
* **Watchdog thread** (everywhere, and a second line on Linux): every half second a worker whose parent pid
  changed (it was re-parented because the runner died) exits at once.
* **Terminal signals**: Ctrl-C reaches the whole foreground process group, workers included. Workers ignore
  it (through a no-op handler, which unlike ``SIG_IGN`` is not inherited by programs they start, so envs
  and sandboxes behave the same in a worker as in the runner); the runner handles it and stops them.

The sandboxes a worker starts follow it down through their own ties (bwrap's ``--die-with-parent``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.5


def tie_to_parent(parent_pid: int) -> None:
    """Make this process die with ``parent_pid`` (its runner); call first thing in a worker process."""
    signal.signal(signal.SIGINT, _ignore)
    _ask_kernel_to_kill_me_with_parent()
    if os.getppid() != parent_pid:  # the runner died before the kernel was asked
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="runner-watchdog", daemon=True).start()


def _ignore(signum: int, frame: object) -> None:
    """Ctrl-C is the runner's to handle (it then stops this worker)."""


def _ask_kernel_to_kill_me_with_parent() -> bool:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux; ``False`` where unavailable (the watchdog still works)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int) -> None:
    while True:
        time.sleep(WATCH_INTERVAL_S)
        if os.getppid() != parent_pid:
            os._exit(1)
