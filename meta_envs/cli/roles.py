"""The two roles of ``agentgym selfplay`` from command-line SPECs.

Designer SPECs: ``scripted:<name>`` (a scripted designer of :mod:`meta_envs.design.designers`), ``expert``
(the design env's own ``expert_action()``: its scripted good designer), or any model SPEC of the
leaderboards (``hf:tiny``, ``hf:<dir>``, ``vllm:<dir>``, ``openai:<base_url>#<model>``, ``checkpoint:<dir>``;
``leaderboards/policies/``). A model designer answers the design env's chat (its system prompt, the brief,
the gate report of a repair) with ``max_new_tokens`` long enough for a module.

Solver SPECs: ``random`` (a uniformly random legal action, own seeded stream) or a model SPEC, whose
reply to ``observation + legal actions`` is the action.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agentgym_envs.chat import Message
from agentgym_envs.policies import SamplingConfig
from agentgym_envs.seeding import derive_rng

from ..design.selfplay import SelfPlayError


class PolicyDesigner:
    """A :class:`~agentgym_envs.policies.Policy` as a designer: one completion of the chat per answer."""

    def __init__(self, policy: Any, sampling: SamplingConfig):
        self.policy, self.sampling = policy, sampling

    def design(self, messages: list[Message], env: Any, seed: int) -> str:
        if hasattr(self.policy, "bind"):  # env-side policies (expert) act from the design env itself
            self.policy.bind([env])
        return self.policy.act([messages], sampling=replace(self.sampling, seed=seed))[0].text


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
        return as_designer(table[name])
    from leaderboards.policies import parse_spec

    return PolicyDesigner(parse_spec(spec).build(), sampling)


def scripted_designers() -> dict[str, Any]:
    """name → scripted designer, from :mod:`meta_envs.design.designers`."""
    from ..design import designers

    return dict(designers.DESIGNERS)


class RandomSolver:
    """Uniform over the legal actions, from its own seeded stream (the same seed ⇒ the same plays)."""

    def __init__(self, seed: int = 0):
        self.rng = derive_rng(seed, 0x501)

    def __call__(self, observation: str, legal_actions: list[str]) -> str:
        return legal_actions[int(self.rng.integers(len(legal_actions)))] if legal_actions else ""


class PolicySolver:
    """A Policy as a solver: it reads the observation and the legal actions, its reply is the action."""

    def __init__(self, policy: Any, sampling: SamplingConfig):
        self.policy, self.sampling, self.calls = policy, sampling, 0

    def __call__(self, observation: str, legal_actions: list[str]) -> str:
        prompt = f"{observation}\n\nLegal actions: {', '.join(legal_actions[:50])}\nReply with one action."
        self.calls += 1
        sampling = replace(self.sampling, seed=(self.sampling.seed or 0) + self.calls)
        return self.policy.act([[Message(role="user", content=prompt)]], sampling=sampling)[0].text.strip()


def solver_from_spec(spec: str, sampling: SamplingConfig, seed: int = 0) -> Any:
    """The solver a SPEC names (module docstring)."""
    if spec == "random":
        return RandomSolver(seed)
    from leaderboards.policies import parse_spec

    parsed = parse_spec(spec)
    if parsed.env_side:
        raise SelfPlayError(f"solver {spec!r}: expected random or a model SPEC (hf:, vllm:, openai:, checkpoint:); "
                            "the expert of a generated env is its own expert_action(), which the gates already play")
    return PolicySolver(parsed.build(), sampling)
