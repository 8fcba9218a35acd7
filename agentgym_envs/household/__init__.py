"""Household: an ALFWorld-compatible household simulator in pure Python.

ALFWorld's six task types, command grammar and observation text, with procedurally generated rooms
instead of downloaded scenes, a PDDL planner and a Z-machine. The layers, each its own module:

* :mod:`.catalog` static data (rooms, receptacle and object kinds), :mod:`.rng` a stable PRNG;
* :mod:`.tasks` splits and ``(split, index) -> TaskSpec``; :mod:`.generate` the room of a task;
* :mod:`.world` the world model and its rules; :mod:`.goals` goal text, success and subgoals;
* :mod:`.grammar` command parsing; :mod:`.render` ALFWorld's text; :mod:`.expert` the scripted solvers
  (the oracle, which knows where everything is, and ``expert="search"``, which knows only what the agent
  has seen and searches common-sense places first: 100% of tasks within 50 steps, 63% of held-out
  PickPlace within 12);
* :mod:`.knowledge` what the agent has seen (the ``state_key``);
* :mod:`.env` the :class:`~agentgym_envs.core.TaskEnv` adapter; :mod:`.register` the ids.
"""
