"""A browser pool's chromedriver and Chromium die with the process that owns the pool, however it ends.

Before the fix, a pool made inside a forked worker (gymnasium's ``AsyncVectorEnv`` over
``agentgym/WebShop-Browser-v0``) was closed only by ``atexit``, which a multiprocessing worker never runs (it
leaves by ``os._exit``): every CI run left chromedriver and a dozen Chromium processes behind. The processes are
recorded by PID (``psutil.Process`` also checks their start time, so a reused PID is not mistaken for them).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import gymnasium
import psutil
import pytest
from gymnasium.vector import AsyncVectorEnv

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.web import browser
from agentgym_envs.web.browser import BrowserConfig, BrowserPool, default_pool

DRIVER_AND_CHROMIUM = ("chromedriver", "chromium")
needs_chromium = pytest.mark.skipif(
    not (os.path.exists(BrowserConfig().chromium) and os.path.exists(BrowserConfig().chromedriver)),
    reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")


def _browser_processes(root: int) -> list[psutil.Process]:
    """chromedriver and every Chromium process at or below ``root`` (renderers, zygotes, the GPU process)."""
    found = []
    for process in [psutil.Process(root), *psutil.Process(root).children(recursive=True)]:
        try:
            if any(name in process.cmdline()[0] for name in DRIVER_AND_CHROMIUM):
                found.append(process)
        except (psutil.Error, IndexError):  # a helper process that ended meanwhile
            pass
    assert any("chromedriver" in p.cmdline()[0] for p in found), found
    assert any("--user-data-dir=" in " ".join(p.cmdline()) for p in found), found  # a Chromium, not just its driver
    return found


def _survivors(processes: list[psutil.Process], within_s: float = 10.0) -> list[str]:
    """The processes still running after ``within_s`` seconds (zombies count as gone: they run nothing)."""
    deadline = time.monotonic() + within_s
    while True:
        alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return [f"{p.pid} {' '.join(p.cmdline()[:2])[:120]}" for p in alive]
        time.sleep(0.2)


def _kill(processes: list[psutil.Process]) -> None:
    """Leave nothing behind when the assertion fails (the old code's orphans)."""
    for process in processes:
        try:
            process.kill()
        except psutil.Error:
            pass


def _make() -> gymnasium.Env:
    return gymnasium.make("agentgym/WebShop-Browser-v0")


@needs_chromium
def test_an_async_vector_env_worker_takes_its_browser_with_it() -> None:
    """The worker leaves by ``os._exit`` after ``close()``: no atexit handler runs there."""
    envs = AsyncVectorEnv([_make])
    processes: list[psutil.Process] = []
    try:
        envs.reset(seed=[0])
        envs.step(("search[socks]",))
        processes = _browser_processes(envs.processes[0].pid)
    finally:
        envs.close()
    survivors = _survivors(processes)
    _kill(processes)
    assert not survivors, f"the worker exited but its browser did not: {survivors}"


def _lease_and_wait(ready: multiprocessing.synchronize.Event) -> None:
    tab = default_pool().lease()
    tab.goto("about:blank")
    ready.set()
    time.sleep(120)


@needs_chromium
def test_a_killed_owner_takes_its_browser_with_it() -> None:
    """SIGKILL: nothing at all runs in the owner; the kernel's parent-death signal is all there is."""
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    child = context.Process(target=_lease_and_wait, args=(ready,))
    child.start()
    processes: list[psutil.Process] = []
    try:
        assert ready.wait(60), "the child did not get a browser tab"
        processes = _browser_processes(child.pid)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
    survivors = _survivors(processes)
    _kill(processes)
    assert not survivors, f"the owner was killed but its browser was not: {survivors}"


@needs_chromium
def test_a_browser_outlives_the_thread_that_started_it_and_close_quits_it() -> None:
    """The parent-death signal follows the *thread* that forked; a pool user's short-lived thread must not
    take the browser down when it ends. ``close()`` then stops chromedriver and Chromium for good."""
    pool = BrowserPool()
    leased = []
    try:
        thread = threading.Thread(target=lambda: leased.append(pool.lease()))
        thread.start()
        thread.join()
        tab = leased[0]
        processes = _browser_processes(tab.browser.driver.service.process.pid)  # this pool's, not another's
        time.sleep(1.0)  # a parent-death signal would have landed by now
        assert tab.goto("data:text/html,<body>still here</body>").texts == ("still here",)
        driver = psutil.Process(tab.browser.driver.service.process.pid)
        assert driver.is_running() and all(p.is_running() for p in driver.children())  # the driver and Chromium
    finally:
        pool.close()
    assert not _survivors(processes), "close() left browser processes running"
    assert not os.path.exists(tab.browser.profile)


def test_the_launchers_set_the_death_signal_and_pass_arguments_intact(tmp_path, monkeypatch) -> None:
    """A launcher runs the real program (an odd path, quoted) with SIGKILL as its parent-death signal and the
    arguments unchanged; without ``setpriv`` the real paths are used directly (the old behaviour)."""
    real = tmp_path / "dir with space" / "it's chromium"
    real.parent.mkdir()
    real.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import ctypes, sys; signal = ctypes.c_int(); "
                    "ctypes.CDLL(None).prctl(2, ctypes.byref(signal)); print(signal.value, sys.argv[1:])' \"$@\"\n")
    real.chmod(0o700)
    config = BrowserConfig(chromium=str(real), chromedriver=str(real))
    chromedriver, chromium = browser._launchers(str(tmp_path), config)
    assert {chromedriver, chromium} == {str(tmp_path / "chromedriver"), str(tmp_path / "chromium")}
    for launcher in (chromedriver, chromium):
        out = subprocess.run([launcher, "a b", "--x=$HOME", "'"], capture_output=True, text=True, timeout=30)
        assert out.stdout.strip() == f"{int(signal.SIGKILL)} ['a b', '--x=$HOME', \"'\"]", out.stderr
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    assert browser._launchers(str(tmp_path / "unused"), config) == (str(real), str(real))
