"""Reuse of each episode's KV cache from one turn to the next, for the HF sampler.

In a multi-turn episode every prompt is the previous prompt, the reply just sampled and the new
observation. Without reuse each turn's prefill re-encodes the whole history: on the quickstart's 3×3
mazes (prompts of ~270 tokens on average, 64 rows) that prefill is ~90% of an RL step. With reuse a turn
encodes only what is new, the observation (tens of tokens).

How: inside :meth:`PrefixStore.scope` (one per collection or evaluation: the rollout worker and
``run_text_episodes`` open it), :class:`~trainer.models.backends.hf.HFPolicy` keeps, after each ``generate``, the
keys and values of every row's ids (its prompt and all sampled ids but the last, which was never fed).
The next call matches each prompt against them by its longest common prefix, and builds a batch in which
row ``i``'s reused entries sit right before a gap and its new suffix::

    [left pad | reused K/V (c_i) | gap (pad, masked) | new ids (s_i)]      (C = max c_i, S = max s_i)

The gap and the left pad are masked out and positions come from the mask's cumulative sum, exactly as
left padding already works, so a row attends to the same keys at the same positions as in a full prefill;
only float rounding differs (a full recompute agrees to ~1e-6 in log-prob; a test checks it).

Guards: reuse holds only within a scope (a new collection starts empty, so results never depend on an
earlier call's cache), only while the weights are unchanged (every parameter's version counter is
fingerprinted: an optimiser step or ``load_state_dict`` bumps it, so async collection drops the cache when
an update lands mid-episode), only for caches made entirely of plain ``DynamicLayer``\\s (sliding-window,
linear-attention and quantised caches are not sliceable this way), and within ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

#: The shortest shared prefix worth reusing (a shorter one is re-encoded).
MIN_REUSE = 16


@dataclass
class _Entry:
    ids: np.ndarray
    """The ids whose keys and values are stored, ``(n,)``."""
    kv: list[tuple[torch.Tensor, torch.Tensor]]
    """Per layer, the keys and values of those ids, each ``(heads, n, head_dim)``."""


@dataclass
class Reuse:
    """How one batch row reuses a stored entry: its first ``length`` ids' keys and values come from it."""

    entry: _Entry | None
    length: int


class PrefixStore:
    """The per-thread store of the current scope (see the module docstring)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._local = threading.local()

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Keep rows' caches between ``generate`` calls of this thread until the block ends (re-entrant)."""
        outer = getattr(self._local, "state", None)
        if outer is None:
            self._local.state = Scope()
        try:
            yield
        finally:
            if outer is None:
                self._local.state = None

    def forget(self) -> None:
        """Empty this thread's scope (it stays open): the next call re-encodes everything."""
        state = getattr(self._local, "state", None)
        if state is not None:
            state.clear()
            state.fingerprint = None

    def active(self, model: torch.nn.Module) -> Scope | None:
        """This thread's scope, emptied first if the weights changed since it stored anything; ``None``
        outside a scope."""
        state = getattr(self._local, "state", None)
        if state is None:
            return None
        fingerprint = weights_fingerprint(model)
        if fingerprint != state.fingerprint:
            state.clear()
            state.fingerprint = fingerprint
        return state


class Scope:
    def __init__(self) -> None:
        self.fingerprint: tuple | None = None
        self.clear()

    def clear(self) -> None:
        self.entries: list[_Entry] = []
        self.matrix = np.zeros((0, 0), dtype=np.int64)  # the entries' ids, padded with -1 (never an id)
        self.next: list[_Entry] = []
        self.next_bytes = 0

    def match(self, prompts: Sequence[Sequence[int]]) -> list[Reuse]:
        """For each prompt, the stored entry sharing its longest prefix (at least :data:`MIN_REUSE` ids),
        and how much of it to reuse: never the whole prompt, whose last id must be fed for its logits."""
        if not self.entries:
            return [Reuse(None, 0)] * len(prompts)
        width = min(self.matrix.shape[1], max(len(p) for p in prompts) - 1)
        if width < MIN_REUSE:
            return [Reuse(None, 0)] * len(prompts)
        rows = np.full((len(prompts), width), -2, dtype=np.int64)  # -2: never an id, never the entries' pad
        for b, prompt in enumerate(prompts):
            head = prompt[:min(len(prompt) - 1, width)]
            rows[b, :len(head)] = head
        same = rows[:, None, :] == self.matrix[None, :, :width]  # (B, M, width)
        common = np.where(same.all(-1), width, same.argmin(-1))  # (B, M): the first position that differs
        best = common.argmax(-1)
        return [Reuse(self.entries[m], int(common[b, m])) if common[b, m] >= MIN_REUSE else Reuse(None, 0)
                for b, m in enumerate(best)]

    def keep(self, ids: Sequence[int], kv: list[tuple[torch.Tensor, torch.Tensor]], max_bytes: int) -> None:
        """Store one row for the next call (while it fits in ``max_bytes``)."""
        size = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
        if len(ids) < MIN_REUSE or self.next_bytes + size > max_bytes:
            return
        self.next.append(_Entry(np.asarray(ids, dtype=np.int64), kv))
        self.next_bytes += size

    def rotate(self) -> None:
        """After a ``generate`` call: the rows it kept replace the stored ones (the episodes still running
        are the ones its batch held; the others ended)."""
        self.entries, self.next, self.next_bytes = self.next, [], 0
        self.matrix = np.full((len(self.entries), max((len(e.ids) for e in self.entries), default=0)), -1, dtype=np.int64)
        for m, entry in enumerate(self.entries):
            self.matrix[m, :len(entry.ids)] = entry.ids


def weights_fingerprint(model: torch.nn.Module) -> tuple:
    """Identity and in-place version of every parameter and buffer: changes whenever the weights do."""
    return tuple((id(t), t._version) for t in (*model.parameters(), *model.buffers()))


def plain_layers(cache: Any) -> list | None:
    """The layers of ``cache`` if it is a plain ``DynamicCache`` of full-attention ``DynamicLayer``\\s (the only
    kind whose rows this module can slice and reassemble), else ``None``."""
    try:
        from transformers.cache_utils import DynamicCache, DynamicLayer
    except ImportError:
        return None
    if type(cache) is not DynamicCache:
        return None
    layers = list(getattr(cache, "layers", ()))
    if not layers or any(type(layer) is not DynamicLayer or layer.keys is None for layer in layers):
        return None
    return layers


def assemble(prompts: Sequence[Sequence[int]], reuse: Sequence[Reuse], pad_id: int,
             device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Any]:
    """The first forward's ``input_ids`` (B, S), ``attention_mask`` (B, C + S), ``position_ids`` (B, S) and
    a ``DynamicCache`` holding the reused keys and values, laid out as in the module docstring."""
    from transformers.cache_utils import DynamicCache

    B = len(prompts)
    C = max(r.length for r in reuse)
    S = max(len(p) - r.length for p, r in zip(prompts, reuse))
    input_ids = torch.full((B, S), pad_id, dtype=torch.long)
    mask = torch.zeros((B, C + S), dtype=torch.long)
    template = next(r.entry for r in reuse if r.entry is not None).kv
    layers = [(k.new_zeros((B, k.shape[0], C, k.shape[2])), v.new_zeros((B, v.shape[0], C, v.shape[2])))
              for k, v in template]
    for b, (prompt, r) in enumerate(zip(prompts, reuse)):
        suffix = prompt[r.length:]
        input_ids[b, S - len(suffix):] = torch.tensor(suffix, dtype=torch.long)
        mask[b, C + S - len(suffix):] = 1
        if r.entry is not None:
            mask[b, C - r.length:C] = 1
            for (keys, values), (k, v) in zip(layers, r.entry.kv):
                keys[b, :, C - r.length:] = k[:, :r.length]
                values[b, :, C - r.length:] = v[:, :r.length]
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)[:, C:]
    return (input_ids.to(device), mask.to(device), position_ids.to(device),
            DynamicCache(ddp_cache_data=[(k.to(device), v.to(device)) for k, v in layers]))


def keep_rows(scope: Scope, layers: list, attention_mask: torch.Tensor, prompts: Sequence[Sequence[int]],
              tokens: Sequence[Sequence[int]], max_bytes: int) -> None:
    """Store each row's ids that were fed (its prompt and its sampled ids but the last) with their keys and
    values, gathered from the batch cache at the row's unmasked slots (in order)."""
    for b, (prompt, sampled) in enumerate(zip(prompts, tokens)):
        ids = [*prompt, *sampled[:-1]]
        slots = attention_mask[b].nonzero().flatten()[:len(ids)]
        if len(slots) != len(ids):  # cannot happen with the sampler's layout; never store a misaligned row
            continue
        scope.keep(ids, [(layer.keys[b].index_select(1, slots), layer.values[b].index_select(1, slots))
                         for layer in layers], max_bytes)
