"""The two roles of ``agentgym selfplay`` from command-line SPECs.

Designer SPECs: ``scripted:<name>`` (a scripted designer of :mod:`meta_envs.design.designers`), ``expert``
(the design env's own ``expert_action()``: its scripted good designer), or any model SPEC of the
leaderboards (``hf:tiny``, ``hf:<dir>``, ``vllm:<dir>``, ``openai:<base_url>#<model>``, ``checkpoint:<dir>``;
``leaderboards/policies/``). A model designer answers the design env's chat (its system prompt, the brief,
the gate report of a repair) with ``max_new_tokens`` long enough for a module.

Solver SPECs: a scripted solver of :mod:`meta_envs.design.solving` (``clue``, the default: reads clues
literally; ``noisy-expert``; ``random``; ``expert``) or a model SPEC, whose reply to the observation and the
legal actions is the action (``solving.PolicySolver``).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from agentgym_envs.chat import Message
from agentgym_envs.policies import SamplingConfig

from ..design.selfplay import DesignerUnavailable, SelfPlayError


class PolicyDesigner:
    """A :class:`~agentgym_envs.policies.Policy` as a designer: one completion of the chat per answer."""

    def __init__(self, policy: Any, sampling: SamplingConfig):
        self.policy, self.sampling = policy, sampling

    def design(self, messages: list[Message], env: Any, seed: int) -> str:
        """The completion's text; a transient failure of the policy (endpoint down, timeout) is
        :class:`DesignerUnavailable`, any other exception is a bug or a wrong SPEC and propagates."""
        from leaderboards.episode import is_transient

        if hasattr(self.policy, "bind"):  # env-side policies (expert) act from the design env itself
            self.policy.bind([env])
        try:
            return self.policy.act([messages], sampling=replace(self.sampling, seed=seed))[0].text
        except Exception as e:
            if is_transient(e):
                raise DesignerUnavailable(f"{type(e).__name__}: {e}") from e
            raise


class CallableDesigner:
    """A function of the latest observation (a scripted designer) as a designer."""

    def __init__(self, fn: Any):
        self.fn = fn

    def design(self, messages: list[Message], env: Any, seed: int) -> str:
        return str(self.fn(messages[-1]["content"]))


def as_designer(obj: Any, sampling: SamplingConfig | None = None) -> Any:
    """Anything with ``design``, a Policy (``act``) or a function of the observation, as a designer."""
    if hasattr(obj, "design"):
        return obj
    if hasattr(obj, "act"):
        return PolicyDesigner(obj, sampling or SamplingConfig())
    if callable(obj):
        return CallableDesigner(obj)
    raise SelfPlayError(f"expected a designer (design(), a Policy or a function of the brief), "
                        f"got {type(obj).__name__}")


def designer_from_spec(spec: str, sampling: SamplingConfig) -> Any:
    """The designer a SPEC names (module docstring)."""
    if spec.startswith("scripted:"):
        name = spec.removeprefix("scripted:")
        table = scripted_designers()
        if name not in table:
            raise SelfPlayError(f"unknown scripted designer {name!r}; expected one of {', '.join(sorted(table))}")
        return as_designer(copy.deepcopy(table[name]))  # a stateful designer (the hill climber) starts afresh
    from leaderboards.policies import parse_spec

    return PolicyDesigner(parse_spec(spec).build(), sampling)


def scripted_designers() -> dict[str, Any]:
    """name → scripted designer, from :mod:`meta_envs.design.designers`."""
    from ..design import designers

    return dict(designers.DESIGNERS)


def solver_from_spec(spec: str) -> Any:
    """The solver a SPEC names: a scripted solver's name (passed to the design env as is) or a model Policy."""
    from ..design.solving import SOLVER_SPECS

    if spec in SOLVER_SPECS:
        return spec
    from leaderboards.policies import parse_spec

    parsed = parse_spec(spec)
    if parsed.env_side:
        raise SelfPlayError(f"solver {spec!r}: expected one of {', '.join(SOLVER_SPECS)} or a model SPEC "
                            "(hf:, vllm:, openai:, checkpoint:)")
    return parsed.build()
