"""Skill learning: SKILL.md libraries, skills shown in any env, and a reflector whose edits are measured (docs/meta_envs.md)."""
