"""What an env page says, read from the registry and from the env itself (never written by hand).

:func:`collect` makes the env, resets it with seed 0, plays a few expert turns and, when asked, the random and
expert baselines. Everything here is deterministic (the env contract: same seed and actions, same everything), so
the same checkout always yields the same page; nothing timed (steps/s) is recorded.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

import gymnasium

from ..core.hooks import has_expert, has_random_action, valid_actions
from ..core.info import OPTIONAL_KEY_TYPES, RESET_KEY_TYPES, STEP_KEY_TYPES
from ..registration import CatalogueEntry, catalogue, load_entry_point, make, make_multi

#: Episodes per baseline (seeds 0…N-1): small, so the whole catalogue regenerates in minutes on 2 cores.
BASELINE_EPISODES = 5
#: Expert turns shown in the sample episode.
SAMPLE_TURNS = 3
STANDARD_KEYS = {*STEP_KEY_TYPES, *RESET_KEY_TYPES, *OPTIONAL_KEY_TYPES}
#: Ids that are not stepped (no expert turns, no baselines), and why (the page says so): their steps are slow and
#: their rewards are measured against wall time, so a page could not be regenerated identically.
SLOW: dict[str, str] = {
    "agentgym/EnvDesign-v0": "every step runs the designer's module through the sandboxed gates (seconds per "
                             "step), and the speed gate measures wall time, so the numbers would not reproduce",
}


@dataclass
class Turn:
    action: str
    reward: float
    terminated: bool
    truncated: bool
    observation: str


@dataclass
class Baseline:
    agent: str
    episodes: int
    success: float
    mean_return: float
    mean_steps: float


@dataclass
class EnvFacts:
    """Everything an env page shows. Multi-agent entries fill the ``agents`` fields instead of the episode."""

    entry: CatalogueEntry
    env_class: str
    summary: str
    max_episode_steps: int | None
    parameters: list[tuple[str, str]]
    observation_space: str
    action_space: str
    system_prompt: str
    instruction: str
    first_observation: str
    tools: list[dict[str, Any]] | None
    valid_actions: list[str] | None
    reset_keys: list[str]
    step_keys: list[str] = field(default_factory=list)
    reward_bounds: tuple[float, float] | None = None
    invalid_action_penalty: float | None = None
    invalid_action_ends_episode: bool | None = None
    num_tasks: int | None = None
    has_expert: bool = False
    has_random_action: bool = False
    turns: list[Turn] = field(default_factory=list)
    baselines: list[Baseline] | None = None
    agents: list[str] = field(default_factory=list)
    parallel: bool = False
    variants: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)


def collect(entry: CatalogueEntry, *, baselines: bool = True) -> EnvFacts:
    """The facts of one registered id; ``baselines=False`` skips the (slower) baseline episodes."""
    facts = _collect_multi(entry) if entry.multi_agent else _collect_single(entry, baselines)
    facts.versions = _versions(entry.id)
    facts.variants = sorted(e.id for e in catalogue() if e.kwargs.get("game") == entry.id)
    return facts


def _collect_single(entry: CatalogueEntry, baselines: bool) -> EnvFacts:
    env = make(entry.id)
    try:
        observation, info = env.reset(seed=0)
        unwrapped = env.unwrapped
        cls = type(unwrapped)
        facts = EnvFacts(
            entry=entry, env_class=f"{cls.__module__}.{cls.__qualname__}", summary=summary(cls),
            max_episode_steps=gymnasium.spec(entry.id).max_episode_steps, parameters=parameters(cls),
            observation_space=repr(env.observation_space), action_space=repr(env.action_space),
            system_prompt=info.get("system_prompt", ""), instruction=info.get("instruction", ""),
            first_observation=observation, tools=info.get("tools"), valid_actions=valid_actions(unwrapped),
            reset_keys=sorted(info), reward_bounds=tuple(getattr(unwrapped, "reward_bounds", (0.0, 1.0))),
            invalid_action_penalty=getattr(unwrapped, "invalid_action_penalty", None),
            invalid_action_ends_episode=getattr(unwrapped, "invalid_action_ends_episode", None),
            num_tasks=getattr(unwrapped, "num_tasks", None), has_expert=has_expert(unwrapped),
            has_random_action=has_random_action(unwrapped))
        step_keys: set[str] = set()
        while facts.has_expert and entry.id not in SLOW and len(facts.turns) < SAMPLE_TURNS:
            action = unwrapped.expert_action()
            observation, reward, terminated, truncated, info = env.step(action)
            step_keys |= set(info)
            facts.turns.append(Turn(action, float(reward), terminated, truncated, observation))
            if terminated or truncated:
                break
        facts.step_keys = sorted(step_keys)
    finally:
        env.close()
    if baselines and entry.id not in SLOW:
        facts.baselines = run_baselines(entry.id, facts.has_expert)
    return facts


def _collect_multi(entry: CatalogueEntry) -> EnvFacts:
    env = make_multi(entry.id)
    try:
        env.reset(seed=0)
        agent = env.agent_selection
        info = env.infos[agent]
        cls = type(env.unwrapped)
        module = load_entry_point(entry.entry_point).__module__
        facts = EnvFacts(
            entry=entry, env_class=f"{cls.__module__}.{cls.__qualname__}", summary=summary(cls), max_episode_steps=None,
            parameters=parameters(cls), observation_space=repr(env.observation_space(agent)),
            action_space=repr(env.action_space(agent)), system_prompt=info.get("system_prompt", ""),
            instruction=info.get("instruction", ""), first_observation=env.observe(agent), tools=None,
            valid_actions=info.get("valid_actions"), reset_keys=sorted(info), agents=list(env.possible_agents),
            parallel=hasattr(__import__(module, fromlist=["_"]), "parallel_env")
            or bool(env.metadata.get("is_parallelizable", False)))
    finally:
        env.close()
    return facts


def run_baselines(env_id: str, expert: bool) -> list[Baseline]:
    """The random and (where the env has one) expert policies, ``BASELINE_EPISODES`` episodes from seed 0."""
    from ..baselines import evaluate

    results = []
    for agent in ("random", "expert") if expert else ("random",):
        r = evaluate(env_id, agent, episodes=BASELINE_EPISODES, seed=0)
        results.append(Baseline(agent, r.episodes, r.success, r.mean_return, r.mean_steps))
    return results


def summary(cls: type) -> str:
    """The first paragraph of the env class's docstring, Sphinx roles turned into plain code spans."""
    doc = inspect.getdoc(cls) or ""
    if cls.__doc__ is None or doc == inspect.getdoc(cls.__mro__[1]):
        return ""  # inherited: says nothing about this env
    paragraph = doc.split("\n\n", 1)[0].replace("\n", " ")
    paragraph = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", paragraph)
    return paragraph.replace("``", "`")


def parameters(cls: type) -> list[tuple[str, str]]:
    """The constructor's keyword arguments (the make kwargs) and their defaults, as text."""
    out = []
    for name, p in inspect.signature(cls.__init__).parameters.items():
        if name in ("self", "render_mode") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append((name, "required" if p.default is p.empty else _default(p.default)))
    return out


def _default(value: Any) -> str:
    text = repr(value)
    return type(value).__name__ if " at 0x" in text else text  # an address would change on every run


def _versions(env_id: str) -> list[str]:
    base = env_id.rsplit("-v", 1)[0]
    return sorted((e.id for e in catalogue() if e.id.rsplit("-v", 1)[0] == base),
                  key=lambda i: int(i.rsplit("-v", 1)[1]))
