"""Text for the tiny tokenizer: household episodes (expert and random play) rendered with the chat template.

The tokenizer should cut the text the policy will actually read and write into few tokens, so its corpus
is that text: the system prompt, first observations, observations after actions (including "Nothing
happens." and parse errors, which random play produces), and the native commands.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from agentgym_envs.policies import ExpertPolicy, RandomPolicy, SamplingConfig

from ...collect.episodes import PlaySpec, run_text_episodes
from .chat_template import render_chat

#: Every task type, so that object and receptacle names of all six types are in the vocabulary.
CORPUS_ENV = "agentgym/Household-v0"


def household_corpus(num_episodes: int, seed: int, max_turns: int = 12) -> Iterator[str]:
    """Chat renderings of ``num_episodes`` expert and as many random episodes on the train split."""
    spec = PlaySpec(CORPUS_ENV, {"split": "train"}, max_turns=max_turns)
    stride = max(1, spec.num_tasks() // max(num_episodes, 1))
    tasks = [(seed + i * stride) % spec.num_tasks() for i in range(num_episodes)]
    # The random player's stream is default_rng(seed), as when the tiny tokenizers in users' caches were built.
    for policy in (ExpertPolicy(), RandomPolicy(rng=np.random.default_rng(seed))):
        for start in range(0, len(tasks), 64):
            episodes = run_text_episodes(policy, spec, tasks[start:start + 64], seed=seed + start,
                                         sampling=SamplingConfig(seed=seed))
            for episode in episodes:
                yield render_chat(episode.messages(), add_generation_prompt=False)
