"""A tiny, self-contained PRNG for task generation.

Task ids must be stable across versions: ``(split, index)`` has to name the same world and goal on every
machine and every NumPy release. NumPy only promises stable *bit* streams, not stable results from
``Generator.integers``/``shuffle``, so task generation uses SplitMix64 (Steele et al., 2014), written out
here in a few lines. It is also faster than NumPy's per-call overhead for the ~100 scalar draws a reset
makes. The env's own ``np_random`` still picks the task index on a plain ``reset(seed=...)``.

Seeds come from :func:`agentgym_envs.seeding.text_seed` (task ids are words and numbers).

>>> from agentgym_envs.seeding import text_seed
>>> rng = SplitMix64(text_seed("household", "train", 0))
>>> rng.below(10) == SplitMix64(text_seed("household", "train", 0)).below(10)
True
"""

from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")
_MASK = (1 << 64) - 1


class SplitMix64:
    """SplitMix64: 64-bit state, one add and two multiply-xorshifts per draw."""

    __slots__ = ("state",)

    def __init__(self, seed: int):
        self.state = seed & _MASK

    def next64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Uniform in ``[0, n)``; the modulo bias is below 2**-50 for the small ``n`` used here."""
        if n <= 0:
            raise ValueError(f"below() needs a positive bound, got {n}")
        return self.next64() % n

    def between(self, low: int, high: int) -> int:
        """Uniform in ``[low, high]`` (both ends included)."""
        return low + self.below(high - low + 1)

    def choice(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def shuffle(self, items: list[T]) -> None:
        """Fisher–Yates, in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]
