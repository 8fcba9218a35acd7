"""The meta-envs' ids, registered when ``agentgym_envs`` is imported (the ``agentgym.envs`` entry point).

Entry points are strings, so registering imports nothing of the meta-envs themselves."""

from __future__ import annotations

from agentgym_envs.registration import register_env

# Each part adds its ids below with register_env(id, "meta_envs.<part>.<module>:<Class>", family=..., ...).

# D3 (issue 19): the designer writes task configs for existing families.
register_env(
    "agentgym/TaskDesign-v0", "meta_envs.design.task_design:TaskDesignEnv", family="design", extra="design",
    max_episode_steps=3,
    description="Self-play task design: the designer writes one JSON task config (household, maze, countdown, "
                "sudoku, search, webshop; terminal on request); gates: schema, held-out copy, expert solves, "
                "check_env; up to 2 repairs; reward = S*[0.6*B(p_hat)+0.4*R_hint]*(1-dup) over k>=8 solver plays.",
)

# D2 (issue 19): the designer writes a whole env as a Python module; archived envs are playable.
register_env(
    "agentgym/EnvDesign-v0", "meta_envs.design.env_design:EnvDesignEnv", family="design", max_episode_steps=3,
    description="Self-play env design: the designer writes one Python module (class Env of the generated-env "
                "contract), run only in a sandbox; 13 gates (parse ... novelty), then k>=8 solver plays with and "
                "without hint; reward = S*[0.6*B(p_hat)+0.4*R_hint]*(1-dup); accepted envs are archived.",
)
register_env(
    "agentgym/Generated-v0", "meta_envs.design.generated:GeneratedEnv", family="design", max_episode_steps=100,
    description="An archived generated env (EnvDesign-v0's accepted modules, by sha or a sampling rule) played "
                "inside its sandbox behind the text-env contract; default: a built-in archive of the good family.",
)

# S3 (issue 20): the prompt is the action; its reward is the paired held-out utility against the previous one.
register_env(
    "agentgym/Reflect-v0", "meta_envs.skills.reflect_env:ReflectEnv", family="skills", extra="skills",
    max_episode_steps=6,
    description="Prompt as action (MetaGym/ICT), paired: each turn the reflector writes the whole system prompt or "
                "SKILL.md a procedure-following actor follows; reward = U, the actor's mean return change over "
                "the previous document on held-out probes (common random numbers), never the raw win rate.",
)

# S2 (issue 20): the reflector manages a skill library; each operation's utility is measured on held-out probes.
register_env(
    "agentgym/SkillLibrary-v0", "meta_envs.skills.library_env:SkillLibraryEnv", family="skills", extra="skills",
    max_episode_steps=8,
    description="Skill learning: one library operation per step (ADD a SKILL.md, EDIT, REMOVE, MERGE, KEEP, DONE; "
                "at most 4) after the base env's trajectories; reward = measured paired utility on held-out probes "
                "(common random numbers) - 0.5*regressions/n - length term; accepted only if U - sd/sqrt(n) > 0.",
)
