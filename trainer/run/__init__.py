"""Running a job: the room that holds the others together.

Owns the config tree (``config``: assembles every room's settings, loads YAML, applies ``key=value``), the
:class:`~trainer.run.loop.Trainer` (one step: collect, advantages, update) and :func:`~trainer.run.fit.fit`
(steps, evaluation, logging, checkpoints), and the services around them: checkpoints (``checkpoint``),
data-parallel ranks (``distributed``, ``distributed:``), the Ray cluster (``ray_rollout``, ``ray:``),
metrics (``log``, ``wandb_log``, ``dashboard``) and defaults sized to the machine (``defaults``).

May import: errors, seeding, collect, learn, models, serve.
"""
