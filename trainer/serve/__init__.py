"""Serving a policy over HTTP, for harnesses outside the trainer.

Owns the OpenAI-compatible policy server (``policy_server``; ``python -m trainer.serve``) and the
trajectory-capturing gateway (``gateway/``, ``gateway:``): an external harness plays through an OpenAI API per
session while the gateway records exact tokens and assembles them into trajectories that a run trains on
(``rollout.source=gateway``).

May import: errors, seeding, collect, learn, models.
"""
