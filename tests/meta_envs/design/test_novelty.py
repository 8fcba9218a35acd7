"""Novelty against the archive cannot be bypassed by dead code or reworded text (issue 31 §2, "Novelty bypass")."""

from __future__ import annotations

import time

import pytest

from meta_envs.design import novelty
from meta_envs.design.contract import example_module
from meta_envs.design.sandboxed import SandboxedModuleEnv

LAMPS = example_module("lamps")
WORD = "The first panel lights up. "
SEEDS = range(4)


def disguised_copy(source: str = LAMPS) -> str:
    """Issue 31's attack: one observation word changed and 20,000 tokens of dead code in front."""
    assert source.count(WORD) == 1
    pad = "_TABLE = [" + "0," * 10_000 + "]\n\n"  # 20,003 tokens, 20 KB: within the size gate's 32 KB
    return pad + source.replace(WORD, "The first panel glows up. ")


def fingerprint(source: str) -> dict[str, dict]:
    """Per seed, the expert's episode as the gates see it: a digest of its texts and its structure."""
    out = {}
    with SandboxedModuleEnv(source, difficulty=0.0) as env:
        for seed in SEEDS:
            texts, steps, done = [env.reset(seed)], [], False
            while not done and len(steps) < env.max_steps:
                legal, action = env.legal_actions(), env.expert_action()
                obs, reward, done = env.step(action)
                texts.append(obs)
                steps.append((reward, done, len(legal), legal.index(action) if action in legal else -1))
            out[str(seed)] = novelty.fingerprint_entry(str(hash(tuple(texts))), steps)
    return out


def test_a_disguised_copy_behind_twenty_thousand_tokens_of_dead_code_is_a_duplicate():
    copy = disguised_copy()
    assert copy.startswith("_TABLE = [" + "0," * 10_000 + "]") and len(copy.encode()) < 32 * 1024
    assert novelty.code_similarity(copy, LAMPS) == 1.0  # was 0.0: the stream was cut inside the padding
    near = novelty.nearest(copy, None, [("a" * 64, LAMPS, None)])
    assert near["dup"] == 1.0 and near["sha"] == "a" * 64


@pytest.mark.parametrize("pad", [
    '"""' + "words " * 5000 + '"""\n',  # one docstring token, but it hides nothing either
    "".join(f"def _unused_{i}(x):\n    return [x, {i}, x * {i}]\n" for i in range(900)),  # unused definitions
])
def test_other_dead_code_in_front_leaves_the_copy_a_duplicate(pad):
    assert novelty.code_similarity(pad + LAMPS.replace(WORD, "The first panel glows up. "), LAMPS) == 1.0


def test_genuinely_different_example_modules_stay_novel():
    coinflip = example_module("coinflip")
    assert novelty.ramp(novelty.code_similarity(coinflip, LAMPS)) <= 0.25
    assert novelty.ramp(novelty.code_similarity(LAMPS, coinflip)) <= 0.25
    assert novelty.nearest(coinflip, None, [("b" * 64, LAMPS, None)])["dup"] <= 0.25


def test_behaviour_is_compared_by_structure_not_text():
    original, copy, other = fingerprint(LAMPS), fingerprint(disguised_copy()), fingerprint(example_module("coinflip"))
    assert all(original[s]["text"] != copy[s]["text"] for s in original)  # the reworded observation
    assert novelty.behaviour_similarity(copy, original) == 1.0  # was 0: exact text hashes all differed
    assert novelty.behaviour_similarity(other, original) == 0.0
    # the exact-duplicate gate still needs the very same texts; the reward's dup takes the structure
    near = novelty.nearest(disguised_copy(), copy, [("a" * 64, LAMPS, original)])
    assert near["behaviour"] == 1.0 and near["dup"] == 1.0 and not near["exact_behaviour"]


def test_hostile_sources_are_bounded_and_never_raise():
    deep = "x = " + "(" * 5000 + ")" * 5000 + "\n"
    assert novelty.live_source(deep) is None  # too deep for the parser: the raw form is still compared
    assert novelty.code_similarity(deep, LAMPS) == 0.0
    assert novelty.code_similarity("class Env(:\n", LAMPS) == 0.0
    huge = "x = [1]\n" * (1 << 20)  # 8 MB: only the first MAX_SOURCE_CHARS are read
    start = time.perf_counter()
    assert novelty.code_similarity(huge, LAMPS) < 0.5 and time.perf_counter() - start < 10
