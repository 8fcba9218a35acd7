"""Registers the household family: all six ALFWorld task types, and one id per type.

Every id takes ``split=`` (``train``, ``valid_seen``, ``valid_unseen``; default ``train``) and
``dense_reward=`` (default ``False``) through ``gymnasium.make``. Entry points are strings so importing the
package does not import the simulator.
"""

from ..registration import register_env

_ENTRY = "agentgym_envs.household.env:HouseholdEnv"
_STEPS = 50

register_env(
    "agentgym/Household-v0", _ENTRY, family="household", max_episode_steps=_STEPS,
    description="ALFWorld-compatible household tasks (all six types), pure Python, no download.",
)
for _variant, _task_type, _what in (
    ("PickPlace", "pick_and_place", "put an object in/on a receptacle"),
    ("Examine", "look_at_obj_in_light", "look at an object under a lamp"),
    ("Clean", "pick_clean_then_place", "clean an object and put it somewhere"),
    ("Heat", "pick_heat_then_place", "heat an object and put it somewhere"),
    ("Cool", "pick_cool_then_place", "cool an object and put it somewhere"),
    ("PickTwo", "pick_two_obj_and_place", "put two objects of a kind in a receptacle"),
):
    register_env(
        f"agentgym/Household-{_variant}-v0", _ENTRY, family="household", max_episode_steps=_STEPS,
        kwargs={"task_type": _task_type}, description=f"Household, {_task_type} tasks only: {_what}.",
    )
