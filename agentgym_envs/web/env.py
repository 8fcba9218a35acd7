"""WebShopEnv: the shop behind the text-env contract, in WebShop's text modes or a real browser.

Arguments (also ``gymnasium.make`` kwargs): ``mode`` (``text``, ``text_rich`` or ``browser``), ``split``
(``train``, ``eval`` 1,000 tasks, ``test`` 500), ``num_products`` (default 10,000) and ``seed`` of the
catalogue, ``show_attributes`` (the Attributes sub-page; WebShop hides it by default). Direct
construction also takes ``browser_pool`` (default: the process's shared pool).

Episode: ``reset(options={"task_index": i})`` picks task ``i`` of the split; a plain ``reset(seed=s)``
draws one with WebShop's goal weights (:mod:`.tasks`). Actions are ``search[keywords]`` (where the page has
a search box) and ``click[value]`` (a button, product id or option value on the page, lowercase as in
WebShop). An action that is malformed or names nothing on the page is invalid: nothing happens, the
observation explains, ``info["action_valid"]`` is ``False``, reward 0. ``click[buy now]`` ends the episode
with WebShop's reward (:mod:`.reward`); ``won`` means reward 1.

* ``text``: WebShop's ``[SEP]``-joined visible text; ``text_rich``: one line per text with
  ``[button] X [button_]`` markup. Both are rendered in-process from the page model, with no HTTP.
* ``browser``: Selenium drives headless Chromium (a tab leased from a pool) against the local server:
  ``search[...]`` types into the search box and presses Search, ``click[...]`` clicks the element. The
  observation is the page's visible text (the same ``[SEP]`` string as ``text`` mode, read from the DOM)
  followed by its clickable elements with ids (``[#3] buy now``); ``click[#3]`` clicks by id.
  ``env.unwrapped.screenshot()`` returns a PNG. A browser failure truncates the episode with
  ``info["infra_error"]``; the next ``reset`` starts a new browser if needed.

``info``: ``valid_actions`` (``click[...]`` actions; ``None`` on the search page, whose queries cannot be
listed), ``available_actions`` (WebShop's ``{"has_search_bar", "clickables"}``), on reset ``task_id`` and
``goal`` (the goal's attributes, options and price bound, for analysis), and on purchase ``reward_info``.
``metrics``: ``searches``, ``clicks``, ``items_viewed``. ``state_key``: task and location (and, in
``text_rich``, the viewed items it shows).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, ClassVar, overload

import numpy as np

from ..core import InfraError, InvalidAction, Step, Task, TaskEnv
from .actions import USAGE, parse_action
from .browser import BrowserPool, PageRead, Tab, default_pool
from .expert import expert_action
from .html_view import location_url, parse_location
from .server import ShopServer, shared_server
from .shop import DONE, ITEM, MAX_QUERY_CHARS, RESULTS, Location, Page, Shop, normalize_query
from .tasks import SPLITS, Goal, GoalSet, load_goals
from .text_view import RENDERERS, SEP

MODES = ("text", "text_rich", "browser")
SYSTEM_PROMPT = (
    "You are shopping on a web shop for a customer. The instruction says what to buy. Each turn, reply with "
    "exactly one action: search[keywords] when the page has a search box, or click[value] where value is a "
    "button, product id or option shown on the page (e.g. click[b0abc12345], click[large], click[buy now]). "
    "Choose the options the instruction asks for before clicking Buy Now; buying ends the episode."
)


class WebShopTasks(Sequence[Task]):
    """The tasks of one split, built on demand from the shared goal set."""

    def __init__(self, goals: GoalSet, split: str):
        self.goals, self.split, self.ids = goals, split, goals.split(split)

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> Task: ...
    @overload
    def __getitem__(self, i: slice) -> list[Task]: ...
    def __getitem__(self, i: int | slice) -> Task | list[Task]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        goal = self.goals.goals[self.ids[i]]
        return Task(f"webshop/{self.split}/{i}", goal.instruction, {"goal": goal})


class WebShopEnv(TaskEnv):
    """WebShop's tasks on a generated shop; see the module docstring."""

    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Each turn, reply with exactly one action:': 'Each turn, take exactly one action:',
    }
    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    snapshot_exclude: ClassVar[tuple[str, ...]] = (
        "tasks", "shop", "goals", "_page_memo", "_pool", "_server", "_tab", "_sid", "_synced", "_read", "_finalizer")

    def __init__(self, mode: str = "text", split: str = "train", num_products: int = 10_000, seed: int = 0,
                 show_attributes: bool = False, render_mode: str | None = None,
                 browser_pool: BrowserPool | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        self.shop = Shop.shared(num_products, seed)
        self.goals = load_goals(self.shop.catalogue)
        super().__init__(WebShopTasks(self.goals, split), render_mode=render_mode)
        self.mode, self.split, self.show_attributes = mode, split, bool(show_attributes)
        self.num_products, self.catalogue_seed = int(num_products), int(seed)
        self.location = Location()
        self.visited: frozenset[str] = frozenset()
        self._counts = {"searches": 0, "clicks": 0}
        self._page_memo: tuple[tuple, Page] | None = None  # the current page, built once per step
        # Browser mode only; none of it is snapshotted (a restored env syncs its browser on the next step).
        self._pool = browser_pool
        self._server: ShopServer | None = None
        self._tab: Tab | None = None
        self._sid: str | None = None
        self._synced = False
        self._read: PageRead | None = None
        self._finalizer: weakref.finalize | None = None

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if options.get("task_index") is None:
            options["task_index"] = self.goals.weighted_index(self.split, self.np_random)
        _, info = super()._reset(options)
        self.location, self.visited = Location(), frozenset()
        self._counts = {"searches": 0, "clicks": 0}
        goal = self.goal
        info["goal"] = {"attributes": list(goal.attributes), "options": dict(goal.options),
                        "price_upper": goal.price_upper}
        info["available_actions"] = self._available(self._model_page())
        if self.mode == "browser":
            return self._browser_sync(), info  # a new session for the new task
        return self._render(self._model_page()), info

    def _step(self, action: str) -> Step:
        parsed = parse_action(action)
        if parsed is None:
            raise InvalidAction(f"Invalid action {action[:80]!r}. {USAGE}")
        verb, argument = parsed
        page = self._model_page()
        if self.mode == "browser" and not self._synced:
            self._browser_sync()  # after set_state: bring the browser to the restored page first
        target, label = self._search_target(page, argument) if verb == "search" else self._click_target(page, argument)
        self._counts["searches" if verb == "search" else "clicks"] += 1
        observation, reward = self._go(verb, label, target)
        extra: dict[str, Any] = {"available_actions": self._available(self._model_page())}
        if reward is None:
            return Step(observation, info=extra)
        extra["reward_info"] = self.shop.reward(self.goal, self.location).as_info()
        return Step(observation, reward=reward, terminated=True, won=reward >= 1.0, score=reward, info=extra)

    def _search_target(self, page: Page, argument: str) -> tuple[Location, str]:
        if not page.has_search_bar:
            raise InvalidAction("There is no search box on this page; click[back to search] first.")
        query = normalize_query(argument)
        if not query:
            raise InvalidAction("The search query is empty. Use search[keywords], e.g. search[red running shoes].")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidAction(f"The search query is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS}.")
        return Location(RESULTS, query, 1), query

    def _click_target(self, page: Page, argument: str) -> tuple[Location, str]:
        label = argument.strip()
        if label.startswith("#") and self.mode == "browser" and self._read is not None:
            label = dict(self._read.clickables).get(label[1:], label)
        element = page.clickables.get(label)
        if element is None:
            shown = ", ".join(page.clickables) or "nothing (use search[...])"
            raise InvalidAction(f"There is no {argument.strip()[:80]!r} to click on this page. Clickable: {shown}.")
        return element.target, label

    def _go(self, verb: str, label: str, target: Location) -> tuple[str, float | None]:
        """Carry out the action; returns the observation and, after a purchase, the reward."""
        if self.mode != "browser":
            self._move(target)
            page = self._model_page()
            return self._render(page), None if page.reward is None else page.reward.total
        read = self._tab.search(label) if verb == "search" else self._tab.click(label)
        self._move(self._location_of(read))
        self._read = read
        if self.location.kind == DONE and read.reward is None:
            raise InfraError("the done page shows no score")
        return browser_observation(read), read.reward if self.location.kind == DONE else None

    def _move(self, location: Location) -> None:
        self.location = location
        if location.kind == ITEM:
            self.visited = self.visited | {location.asin}

    # ----------------------------------------------------------------- pages
    @property
    def goal(self) -> Goal:
        """The current task's goal (target product, attributes, options, price bound)."""
        return self.task.data["goal"]

    def _model_page(self) -> Page:
        key = (self.task_index, self.location, self.visited)
        if self._page_memo is None or self._page_memo[0] != key:
            page = self.shop.page(self.goal, self.location, show_attributes=self.show_attributes, visited=self.visited)
            self._page_memo = (key, page)
        return self._page_memo[1]

    def _render(self, page: Page) -> str:
        return RENDERERS[self.mode](page)

    @staticmethod
    def _available(page: Page) -> dict[str, Any]:
        return {"has_search_bar": page.has_search_bar, "clickables": list(page.clickables)}

    # ----------------------------------------------------------------- browser mode
    def _browser_sync(self) -> str:
        """Give this env a live tab and a server session on its task, showing ``self.location``.

        A browser found dead here (killed since its last use) is replaced once, so a reset recovers at once.
        """
        server = self._server or shared_server(self.num_products, self.catalogue_seed)
        self._server = server
        if self._sid is not None:
            server.close_session(self._sid)
        self._sid = server.open_session(self.split, self.task_index, show_attributes=self.show_attributes)
        location = self.location if self.location.kind != DONE else Location()
        self._synced = False
        for attempt in range(2):
            self._ensure_tab()
            try:
                self._read = self._tab.goto(server.url + location_url(self._sid, location))
                break
            except InfraError:
                if attempt == 1 or not self._tab.browser.dead:
                    raise
        self._synced = True
        return browser_observation(self._read)

    def _ensure_tab(self) -> None:
        if self._tab is None or self._tab.browser.dead:
            self._release_tab()
            pool = self._pool or default_pool()
            self._tab = pool.lease()
            self._finalizer = weakref.finalize(self, pool.release, self._tab)

    def _location_of(self, read: PageRead) -> Location:
        path, _, query = read.url.partition("?")
        parts = path.split("/", 5)[5:]  # http: '' host s sid rest
        location = parse_location(parts[0].split("/") if parts else [], query)
        valid = None if location is None else self.shop.validate(location, show_attributes=self.show_attributes)
        if valid is None:
            raise InfraError(f"the browser is on an unexpected page: {read.url[:200]}")
        return valid

    def _release_tab(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # returns the tab to its pool, once
        self._tab, self._finalizer = None, None

    def screenshot(self) -> bytes:
        """A PNG screenshot of the current page (browser mode only)."""
        if self.mode != "browser" or self._tab is None:
            raise RuntimeError(f"screenshots need mode='browser' and a reset env (mode is {self.mode!r})")
        return self._tab.screenshot()

    def close(self) -> None:
        if self._server is not None and self._sid is not None:
            self._server.close_session(self._sid)
        self._sid, self._synced = None, False
        self._release_tab()
        super().close()

    # ----------------------------------------------------------------- contract hooks
    def valid_actions(self) -> list[str] | None:
        if not self._episode_started:
            return None
        page = self._model_page()
        return None if page.has_search_bar else [f"click[{label}]" for label in page.clickables]

    def random_action(self, rng: np.random.Generator) -> str:
        """A random well-formed action: a search of a few instruction words, or a random click."""
        actions = self.valid_actions()
        if actions:
            return actions[int(rng.integers(len(actions)))]
        words = normalize_query(self.instruction).split() or ["shop"]
        picked = rng.choice(words, size=min(len(words), 1 + int(rng.integers(5))), replace=False)
        return f"search[{' '.join(picked)}]"

    def expert_action(self) -> str:
        return expert_action(self.shop, self.goal, self.location)

    def state_key_material(self) -> str:
        extra = "\x1f" + ",".join(sorted(self.visited)) if self.mode == "text_rich" else ""
        return f"{self.task.id}\x1f{self.location.key()}{extra}"

    def metrics(self) -> dict[str, float]:
        return {**{k: float(v) for k, v in self._counts.items()}, "items_viewed": float(len(self.visited))}

    def _set_state(self, state: Any) -> None:
        super()._set_state(state)
        self._synced = False  # browser mode: the next step shows the restored page first


def browser_observation(read: PageRead) -> str:
    """The page as the browser shows it: visible texts, then the clickable elements with their ids."""
    lines = [SEP.join(read.texts), "", "Clickable elements:"]
    lines += [f"[#{i}] {label}" for i, label in read.clickables]
    if read.has_search_bar:
        lines.append("[search box] type a query with search[keywords]")
    return "\n".join(lines)
