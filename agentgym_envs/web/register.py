"""Registers the web shop family: WebShop's tasks in its two text modes and in a real browser.

Every id takes ``split=`` (``train`` default, ``eval``, ``test``), ``num_products=`` (default 10,000),
``seed=`` and ``show_attributes=`` through ``gymnasium.make``. Entry points are strings, so importing the
package neither builds the catalogue nor starts a server or a browser.
"""

from ..registration import register_env

_ENTRY = "agentgym_envs.web.env:WebShopEnv"
_STEPS = 20

register_env(
    "agentgym/WebShop-v0", _ENTRY, family="web", extra="web", max_episode_steps=_STEPS, kwargs={"mode": "text"},
    description="WebShop-compatible shopping: 10k generated products in 5 categories, BM25 search, WebShop's "
                "instructions, splits and reward; [SEP]-joined text pages, in-process, no download.",
)
register_env(
    "agentgym/WebShop-Rich-v0", _ENTRY, family="web", extra="web", max_episode_steps=_STEPS, kwargs={"mode": "text_rich"},
    description="WebShop with its text_rich observations ([button] X [button_] markup, clicked options).",
)
register_env(
    "agentgym/WebShop-Browser-v0", _ENTRY, family="web", extra="web", max_episode_steps=_STEPS, kwargs={"mode": "browser"},
    description="WebShop in a real headless Chromium (Selenium) against the local shop server: real typing "
                "and clicks, visible text plus clickable ids, screenshots on request.",
)
