"""TextWorld games through the real ``textworld`` package: generated from seeds, cached on disk, played by
:class:`~agentgym_envs.games.textworld.tw_env.TextWorldEnv`.

Modules: ``challenges`` (what a game is: challenge, level, split, seed), ``generate`` (textworld's generators in
a worker process), ``cache`` (compiled games on disk, safe under concurrency), ``commands`` (what text may
reach the interpreter), ``tw_env`` (the env), ``register`` (the ids). Importing this package does not import
textworld; ``gymnasium.make`` does.
"""
