"""Registers the TextWorld family: one id per challenge (entry points are strings: nothing loads until ``make``).

Every id takes ``difficulty=`` (``easy``/``medium``/``hard``, default ``medium``) or ``level=`` (the
challenge's native level), ``split=`` (``train``/``valid``/``test``) and ``cache_dir=`` through
``gymnasium.make``. Games are generated on first use and cached (see
:mod:`agentgym_envs.games.textworld.cache`). The step limit covers the longest hard-level walkthroughs
(cooking level 5: ~50 commands) twice over.
"""

from agentgym_envs.registration import register_env

_ENTRY = "agentgym_envs.games.textworld.tw_env:TextWorldEnv"
_STEPS = 100

for _variant, _challenge, _what in (
    ("Cooking", "cooking", "find, cut and cook a recipe's ingredients, then prepare and eat the meal"),
    ("TreasureHunter", "treasure_hunter", "find a named object behind doors, containers and keys"),
    ("CoinCollector", "coin_collector", "navigate a chain of rooms to a coin"),
    ("Simple", "simple", "fetch a food in a fixed six-room house and put it on the stove"),
):
    register_env(
        f"agentgym/TextWorld-{_variant}-v0", _ENTRY, family="textworld", extra="games", max_episode_steps=_STEPS,
        kwargs={"challenge": _challenge},
        description=f"TextWorld (real textworld package, games generated from seeds and cached): {_what}.",
    )
