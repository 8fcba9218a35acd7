"""What one played episode produces: plain dataclasses that travel from workers to the store.

They are plain data (picklable) because episodes may be played in worker processes while the store is
written only by the runner's main thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def utf8_text(text: str | None) -> str | None:
    """``text`` as UTF-8 can hold it: a lone surrogate (a JSON ``\\ud800`` escape from an endpoint decodes to
    one) becomes U+FFFD, and a pair of surrogates the character they encode. Other text is returned as is.

    >>> utf8_text("a\\ud800b"), utf8_text("\\ud83d\\ude00"), utf8_text(None)
    ('a\ufffdb', '😀', None)
    """
    if text is None:
        return None
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@dataclass
class StepRecord:
    """One turn: the model's raw reply, the native action it parsed to, and what the env answered."""

    t: int
    reply: str
    action: str | None
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    action_valid: bool
    parse_error: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    prompt_chars: int
    latency_s: float
    """Wall time of the policy call."""
    env_s: float
    """Wall time of ``env.step``."""


@dataclass(frozen=True)
class Start:
    """An episode's start as its policy saw it: system prompt, first user message, the protocol's tools.

    Recorded with the episode (the ``starts`` table), so that the viewer and the exporter read it from the
    store instead of rebuilding the env from what the store says (:mod:`leaderboards.replay`)."""

    system_prompt: str | None
    first_observation: str
    tools: list[dict[str, Any]] | None
    protocol: str


@dataclass
class EpisodeRecord:
    """A finished (scored) episode of one suite entry, with its steps."""

    entry: str
    env_id: str
    family: str
    episode_index: int
    task: int
    repeat: int
    seed: int
    task_index: int | None
    won: bool
    score: float
    ret: float
    terminated: bool
    truncated: bool
    wall_s: float
    attempts: int = 1
    steps: list[StepRecord] = field(default_factory=list)
    start: Start | None = None
    """What the policy saw at reset; ``None`` only for records built by hand (then nothing is stored)."""

    @property
    def num_steps(self) -> int:
        return len(self.steps)

    @property
    def invalid_actions(self) -> int:
        return sum(not s.action_valid for s in self.steps)

    def total(self, attr: str) -> int | None:
        """Sum of a per-step token count, or ``None`` when the policy reported none."""
        values = [getattr(s, attr) for s in self.steps]
        return None if any(v is None for v in values) or not values else int(sum(values))


@dataclass
class InfraFailure:
    """An attempt that failed for reasons that are not the agent's: retried, never scored."""

    entry: str
    episode_index: int
    attempt: int
    source: str
    """``env`` (the env reported ``infra_error`` or raised), ``policy`` (endpoint down, timeout)."""
    error: str
