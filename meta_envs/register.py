"""The meta-envs' ids, registered when ``agentgym_envs`` is imported (the ``agentgym.envs`` entry point).

Entry points are strings, so registering imports nothing of the meta-envs themselves."""

from __future__ import annotations

from agentgym_envs.registration import register_env

# Each part adds its ids below with register_env(id, "meta_envs.<part>.<module>:<Class>", family=..., ...).
