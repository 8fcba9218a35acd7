"""Headless Chromium through Selenium: a pool of browsers whose tabs are lent to envs.

Starting Chromium takes about a second, a new tab a fraction of that, and every step must stay well
under 200 ms; so an env leases one :class:`Tab` on its first reset and keeps it for its lifetime, and
envs share a few browsers (``tabs_per_browser`` each, default 8). Each browser has a lock, and a tab
holds it for a whole operation (type, submit, wait, read), so threads may share browsers safely;
32 envs in threads cost four Chromium processes, not 32.

Only the system's Chromium and chromedriver are used (Debian's ``chromium`` and ``chromium-driver``
packages, or ``$CHROMIUM``/``$CHROMEDRIVER``); the driver path is always explicit, so Selenium never tries
to download one. Chromium runs headless with a fresh profile, no background networking, component
updates or sync.

Any WebDriver failure (Chromium killed, crashed or hung) surfaces as :class:`~agentgym_envs.core.InfraError`
and marks the browser dead; the pool launches a new one for the next lease.

Lifetime: a browser dies with the process that started it, however that process ends. ``close()`` (and, in the
process's own pool, ``atexit``) quits it gracefully; but a forked worker (gymnasium's ``AsyncVectorEnv``) leaves by
``os._exit`` and runs no atexit handler, and a killed one runs nothing. So chromedriver and Chromium are each
started through ``setpriv --pdeathsig KILL`` (util-linux): the kernel kills chromedriver when its owner dies, and
Chromium (whose helpers follow it) when chromedriver dies. Without ``setpriv`` they are started directly, as before.
"""

from __future__ import annotations

import atexit
import os
import queue
import shlex
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

from ..core.errors import InfraError

T = TypeVar("T")

CHROMIUM_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-quic", "--no-first-run", "--disable-sync",
    "--disable-dev-shm-usage", "--disable-extensions", "--disable-default-apps", "--mute-audio",
    "--disable-features=Translate,MediaRouter,OptimizationHints", "--metrics-recording-only",
    # Tabs other than the focused one must not be slowed down: every env's tab is "in the background".
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
)

#: One round trip that reads everything an observation needs: URL, visible texts, clickables, reward.
READ_PAGE_JS = """
const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length)
  && getComputedStyle(el).visibility !== 'hidden';
const texts = [];
const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const text = node.textContent.replace(/\\s+/g, ' ').trim();
  const parent = node.parentElement;
  if (text && parent && !['SCRIPT', 'STYLE', 'TITLE'].includes(parent.tagName) && visible(parent)) texts.push(text);
}
const clickables = Array.from(document.querySelectorAll('[data-label]')).filter(visible)
  .map(el => [el.dataset.id, el.dataset.label]);
return {url: location.href, texts: texts, clickables: clickables,
        search: !!document.getElementById('search_input'), reward: document.body ? document.body.dataset.reward : null,
        stale: window.__agentgymMarker === 'old' || document.readyState !== 'complete'};
"""

#: Marks the current document as old (to notice when a new one has loaded) and finds an element by label.
MARK_AND_FIND_JS = """
window.__agentgymMarker = 'old';
if (arguments[0] === null) return null;
return Array.from(document.querySelectorAll('[data-label]')).find(e => e.dataset.label === arguments[0]) || null;
"""


@dataclass(frozen=True)
class BrowserConfig:
    chromium: str = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    chromedriver: str = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
    window: tuple[int, int] = (1280, 1000)
    timeout_s: float = 20.0
    """Longest wait for one page load or WebDriver command before the browser is declared broken."""
    tabs_per_browser: int = 8


@dataclass(frozen=True)
class PageRead:
    """What the browser shows: its URL, visible texts in order, ``(id, label)`` clickables, the score."""

    url: str
    texts: tuple[str, ...]
    clickables: tuple[tuple[str, str], ...]
    has_search_bar: bool
    reward: float | None


class Browser:
    """One headless Chromium under chromedriver, with a lock and the tabs no env holds now."""

    def __init__(self, config: BrowserConfig):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        for path in (config.chromium, config.chromedriver):
            if not os.path.exists(path):
                raise InfraError(f"{path} not found: install Chromium and its driver (Debian: apt-get install "
                                 "chromium chromium-driver) or set $CHROMIUM and $CHROMEDRIVER")
        self.config, self.lock = config, threading.RLock()
        self.home = tempfile.mkdtemp(prefix="agentgym-chromium-")
        """Holds the profile and the launchers; removed by :meth:`quit`."""
        self.profile = os.path.join(self.home, "profile")
        options = webdriver.ChromeOptions()
        width, height = config.window
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}"):
            options.add_argument(flag)
        try:
            chromedriver, options.binary_location = _launchers(self.home, config)
            self.driver = _spawner().call(lambda: webdriver.Chrome(service=Service(chromedriver), options=options))
        except Exception as e:  # selenium raises several types for a browser that will not start
            shutil.rmtree(self.home, ignore_errors=True)
            raise InfraError(f"Chromium did not start: {type(e).__name__}: {str(e)[:300]}") from e
        self.driver.command_executor.client_config.timeout = config.timeout_s
        self.driver.set_page_load_timeout(config.timeout_s)
        self.driver.set_script_timeout(config.timeout_s)
        self.slots = 1
        """Tabs opened or reserved in this browser."""
        self.free: list[str] = [self.driver.current_window_handle]  # the first tab is open already
        self.active = self.driver.current_window_handle
        self.dead = False

    def alive(self) -> bool:
        """Whether chromedriver and Chromium still answer (one cheap command)."""
        if self.dead:
            return False
        try:
            with self.lock:
                self.driver.execute_script("return 1")
            return True
        except Exception:  # any failure means the browser is gone
            self.dead = True
            return False

    def quit(self) -> None:
        self.dead = True
        try:
            self.driver.quit()
        except Exception:  # already dead: nothing to stop
            pass
        shutil.rmtree(self.home, ignore_errors=True)


def _launchers(directory: str, config: BrowserConfig) -> tuple[str, str]:
    """Executables that start chromedriver and Chromium with a parent-death signal (SIGKILL): scripts in
    ``directory`` that exec ``setpriv --pdeathsig KILL`` on the real ones (the signal survives exec).
    Without ``setpriv``, the real paths: the browser then outlives an owner that dies without ``close()``."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return config.chromedriver, config.chromium
    paths = []
    for name, real in (("chromedriver", config.chromedriver), ("chromium", config.chromium)):
        path = os.path.join(directory, name)
        with open(path, "w") as script:
            script.write(f'#!/bin/sh\nexec {shlex.quote(setpriv)} --pdeathsig KILL -- {shlex.quote(real)} "$@"\n')
        os.chmod(path, 0o700)
        paths.append(path)
    return paths[0], paths[1]


class _Spawner:
    """The one thread that starts the process's browsers, alive as long as the process.

    A parent-death signal fires when the *thread* that forked the child ends, not its process: a browser started
    by a pool user's short-lived thread would die with that thread. A daemon thread, unlike an executor's worker,
    is not joined before ``atexit`` runs, so at a normal exit the pool's atexit ``close()`` still quits gracefully.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="browser-spawner", daemon=True).start()

    def call(self, start: Callable[[], T]) -> T:
        """``start()`` run on the spawner thread; its result or exception."""
        done: Future = Future()
        self._jobs.put((start, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            start, done = self._jobs.get()
            try:
                done.set_result(start())
            except BaseException as e:  # handed to the caller, who raises it
                done.set_exception(e)


_SPAWNER: _Spawner | None = None
_SPAWNER_LOCK = threading.Lock()


def _spawner() -> _Spawner:
    """The process's spawner, started on first use (importing this module starts no thread)."""
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = _Spawner()
        return _SPAWNER


class Tab:
    """One browser tab lent to one env. Every operation runs under the browser's lock."""

    def __init__(self, browser: Browser, handle: str):
        self.browser, self.handle = browser, handle

    @contextmanager
    def _session(self) -> Iterator[Any]:
        if self.browser.dead:
            raise InfraError("the browser has died")
        with self.browser.lock:
            try:
                if self.browser.active != self.handle:
                    self.browser.driver.switch_to.window(self.handle)
                    self.browser.active = self.handle
                yield self.browser.driver
            except InfraError:
                raise
            except Exception as e:  # WebDriverException, urllib3 errors, timeouts: all infrastructure
                self.browser.alive()  # marks the browser dead if it is; a one-off failure spares its other tabs
                raise InfraError(f"the browser failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}") from e

    def run(self, operation: Callable[[Any], T]) -> T:
        with self._session() as driver:
            return operation(driver)

    def goto(self, url: str) -> PageRead:
        return self.run(lambda d: (d.get(url), _read(d))[1])

    def read(self) -> PageRead:
        return self.run(_read)

    def search(self, query: str) -> PageRead:
        """Type ``query`` into the search box for real, then press the Search button and wait for results."""
        def operation(driver: Any) -> PageRead:
            box = driver.find_element("id", "search_input")
            box.clear()
            if query:
                box.send_keys(query)
            button = driver.find_element("css selector", "form.search button")
            driver.execute_script(MARK_AND_FIND_JS, None)
            return _await_page(driver, button.click, self.browser.config.timeout_s)
        return self.run(operation)

    def click(self, label: str) -> PageRead:
        """Click the element whose ``data-label`` is ``label`` (a real mouse click) and wait for the new page."""
        def operation(driver: Any) -> PageRead:
            found = driver.execute_script(MARK_AND_FIND_JS, label)
            if found is None:
                raise InfraError(f"the page shows no element labelled {label!r} (page and model out of sync)")
            return _await_page(driver, found.click, self.browser.config.timeout_s)
        return self.run(operation)

    def screenshot(self) -> bytes:
        """A PNG of the tab's viewport."""
        return self.run(lambda d: d.get_screenshot_as_png())


def _read(driver: Any) -> PageRead:
    return _page_read(driver.execute_script(READ_PAGE_JS))


def _page_read(raw: dict) -> PageRead:
    reward = raw.get("reward")
    return PageRead(raw["url"], tuple(raw["texts"]), tuple((str(i), str(lab)) for i, lab in raw["clickables"]),
                    bool(raw["search"]), None if reward in (None, "") else float(reward))


def _await_page(driver: Any, act: Callable[[], Any], timeout_s: float) -> PageRead:
    """Do ``act`` (which loads a page) on a document marked old, wait for a new document, and read it.

    The mark lets a reload of the same URL (choosing an option twice) count as a new page. chromedriver's
    click already waits for the navigation it starts, so the first read usually finds the new page.
    """
    act()
    deadline = time.monotonic() + timeout_s
    while True:
        raw = driver.execute_script(READ_PAGE_JS)
        if not raw["stale"]:
            return _page_read(raw)
        if time.monotonic() > deadline:
            raise InfraError("the page did not load in time")
        time.sleep(0.005)


class BrowserPool:
    """Browsers lending tabs. ``lease()`` gives a tab in a live browser with room, launching one if needed."""

    def __init__(self, config: BrowserConfig | None = None):
        self.config = config or BrowserConfig()
        self.browsers: list[Browser] = []
        self._lock = threading.Lock()

    def lease(self) -> Tab:
        """A tab for one env. The pool's lock only guards bookkeeping: opening a tab waits for its browser's
        lock (another env may be mid-step there), and that wait must not hold up leases elsewhere."""
        with self._lock:
            self._discard_dead()
            browser = next((b for b in self.browsers if b.free), None)
            if browser is not None:
                return Tab(browser, browser.free.pop())
            browser = next((b for b in self.browsers if b.slots < self.config.tabs_per_browser), None)
            if browser is None:
                browser = Browser(self.config)  # comes with one open tab
                self.browsers.append(browser)
                return Tab(browser, browser.free.pop())
            browser.slots += 1  # reserved; opened below, outside the pool's lock
        return Tab(browser, self._new_tab(browser))

    def release(self, tab: Tab) -> None:
        """Give a tab back, blank and ready for the next env (a tab of a dead browser is dropped)."""
        browser = tab.browser
        if browser.dead:
            return
        try:
            tab.goto("about:blank")
        except InfraError:
            return
        with self._lock:
            browser.free.append(tab.handle)

    def close(self) -> None:
        with self._lock:
            for browser in self.browsers:
                browser.quit()
            self.browsers.clear()

    @staticmethod
    def _new_tab(browser: Browser) -> str:
        with browser.lock:
            try:
                browser.driver.switch_to.new_window("tab")
                handle = browser.driver.current_window_handle
            except Exception as e:  # the browser broke while opening a tab
                browser.alive()
                raise InfraError(f"could not open a browser tab: {type(e).__name__}") from e
            browser.active = handle
            return handle

    def _discard_dead(self) -> None:
        for browser in [b for b in self.browsers if b.dead]:
            browser.quit()
            self.browsers.remove(browser)


_DEFAULT: BrowserPool | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> BrowserPool:
    """The process's shared pool (browsers are quit at exit)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = BrowserPool()
            atexit.register(_DEFAULT.close)
        return _DEFAULT


def _forget_pool_in_child() -> None:
    """After ``fork`` the parent's browsers are not the child's to drive or quit: it starts its own, from its
    own spawner thread (the parent's did not survive the fork)."""
    global _DEFAULT, _DEFAULT_LOCK, _SPAWNER, _SPAWNER_LOCK
    if _DEFAULT is not None:
        atexit.unregister(_DEFAULT.close)
    _DEFAULT, _DEFAULT_LOCK = None, threading.Lock()
    _SPAWNER, _SPAWNER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)
