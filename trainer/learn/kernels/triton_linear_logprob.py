"""Triton kernels: log-prob and entropy of target tokens under a linear output layer, streamed over vocab.

Same numerics as :mod:`trainer.learn.kernels.torch_chunked`, with ``z = h Wᵀ / T`` and ``p = softmax(z)``:

    logprob = z[y] - lse                       entropy = lse - Σ_v p_v z_v
    ∂logprob/∂z = onehot(y) - p                ∂entropy/∂z = -p ⊙ (z - Σ_v p_v z_v)

Forward: each program owns a block of tokens and one *split* of the vocabulary, walks that split block by
block and keeps online statistics per token: running max ``m``, ``s = Σ exp(z - m)``, ``t = Σ exp(z - m) z``
and the target logit. The splits' partials (S, N) are merged in torch: ``lse = M + log S``,
``E_p[z] = T_sum / S``. Splitting the vocabulary keeps the GPU busy when N is small.

Backward: one program per (token block, vocab block) tile recomputes that tile's logits, forms ``∂z`` from
the saved ``lse`` and ``E_p[z]``, and atomically adds ``∂z W / T`` into grad_hidden and ``∂zᵀ h / T`` into
grad_weight (float32 buffers). Nothing of size [N, V] exists in either pass.

Ladder: ``_forward_kernel`` / ``_backward_kernel`` → ``forward`` / ``backward`` launchers (block sizes from
:func:`block_sizes`) → :class:`TritonLinearLogprobEntropy` → ``linear_logprob_entropy_triton``.
Runs on CUDA, or on CPU tensors when ``TRITON_INTERPRET=1`` was set before this module was imported.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from triton import knobs

INTERPRETED: bool = bool(knobs.runtime.interpret)  # decided when @triton.jit ran, i.e. at import


@triton.jit
def _dot(a, b, acc, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """``acc + a @ b`` accumulated in float32. ``UPCAST`` (interpreter only: its bf16 dot reads raw bits)
    widens the operands first, which gives the same products as a bf16 tensor-core dot."""
    if UPCAST:
        a, b = a.to(tl.float32), b.to(tl.float32)
    return tl.dot(a, b, acc, input_precision=PRECISION)


@triton.jit
def _forward_kernel(h_ptr, w_ptr, y_ptr, m_ptr, s_ptr, t_ptr, zy_ptr, N, V, H, blocks_per_split, inv_T,
                    BLOCK_N: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_H: tl.constexpr,
                    PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    pid_n, split = tl.program_id(0), tl.program_id(1)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (BN,)
    row_ok = rows < N
    y = tl.load(y_ptr + rows, mask=row_ok, other=-1)
    m = tl.full((BLOCK_N,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_N,), tl.float32)
    t = tl.zeros((BLOCK_N,), tl.float32)
    zy = tl.zeros((BLOCK_N,), tl.float32)
    v_start = split * blocks_per_split * BLOCK_V
    for vb in range(blocks_per_split):
        cols = v_start + vb * BLOCK_V + tl.arange(0, BLOCK_V)  # (BV,)
        col_ok = cols < V
        z_pad0 = _logits_tile(h_ptr, w_ptr, rows, cols, row_ok, col_ok, H, inv_T, BLOCK_N, BLOCK_V, BLOCK_H,
                              PRECISION, UPCAST)  # (BN, BV), 0 on padding columns
        z = tl.where(col_ok[None, :], z_pad0, float("-inf"))
        m_new = tl.maximum(m, tl.max(z, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a split past V sees only -inf
        alpha = tl.exp(m - m_safe)
        e = tl.exp(z - m_safe[:, None])  # (BN, BV), 0 on padding
        s = s * alpha + tl.sum(e, axis=1)
        t = t * alpha + tl.sum(e * z_pad0, axis=1)
        zy += tl.sum(tl.where(cols[None, :] == y[:, None], z, 0.0), axis=1)
        m = m_new
    out = split * N + rows
    tl.store(m_ptr + out, m, mask=row_ok)
    tl.store(s_ptr + out, s, mask=row_ok)
    tl.store(t_ptr + out, t, mask=row_ok)
    tl.store(zy_ptr + out, zy, mask=row_ok)


@triton.jit
def _logits_tile(h_ptr, w_ptr, rows, cols, row_ok, col_ok, H, inv_T,
                 BLOCK_N: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_H: tl.constexpr,
                 PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """z[rows, cols] = h[rows] · W[cols]ᵀ / T in float32, (BN, BV)."""
    acc = tl.zeros((BLOCK_N, BLOCK_V), tl.float32)
    for k in range(0, H, BLOCK_H):
        ks = k + tl.arange(0, BLOCK_H)
        k_ok = ks < H
        h = tl.load(h_ptr + rows[:, None] * H + ks[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        w = tl.load(w_ptr + cols[:, None] * H + ks[None, :], mask=col_ok[:, None] & k_ok[None, :], other=0.0)
        acc = _dot(h, tl.trans(w), acc, PRECISION, UPCAST)
    return acc * inv_T


@triton.jit
def _backward_kernel(h_ptr, w_ptr, y_ptr, lse_ptr, mean_z_ptr, g_lp_ptr, g_ent_ptr, gh_ptr, gw_ptr,
                     N, V, H, inv_T, BLOCK_N: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_H: tl.constexpr,
                     PRECISION: tl.constexpr, UPCAST: tl.constexpr, GRAD_H: tl.constexpr, GRAD_W: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.program_id(1) * BLOCK_V + tl.arange(0, BLOCK_V)
    row_ok, col_ok = rows < N, cols < V
    y = tl.load(y_ptr + rows, mask=row_ok, other=-1)
    lse = tl.load(lse_ptr + rows, mask=row_ok, other=0.0)
    mean_z = tl.load(mean_z_ptr + rows, mask=row_ok, other=0.0)
    g_lp = tl.load(g_lp_ptr + rows, mask=row_ok, other=0.0)
    g_ent = tl.load(g_ent_ptr + rows, mask=row_ok, other=0.0)
    z = _logits_tile(h_ptr, w_ptr, rows, cols, row_ok, col_ok, H, inv_T, BLOCK_N, BLOCK_V, BLOCK_H, PRECISION,
                     UPCAST)
    p = tl.exp(z - lse[:, None])
    onehot = tl.where(cols[None, :] == y[:, None], 1.0, 0.0)
    dz = g_lp[:, None] * (onehot - p) - g_ent[:, None] * p * (z - mean_z[:, None])  # (BN, BV)
    dz = tl.where(row_ok[:, None] & col_ok[None, :], dz * inv_T, 0.0)
    dz = dz.to(h_ptr.dtype.element_ty)  # bf16 inputs: bf16 × bf16 → fp32 dots, as the forward
    for k in range(0, H, BLOCK_H):
        ks = k + tl.arange(0, BLOCK_H)
        k_ok = ks < H
        if GRAD_H:
            w = tl.load(w_ptr + cols[:, None] * H + ks[None, :], mask=col_ok[:, None] & k_ok[None, :], other=0.0)
            gh = _dot(dz, w, tl.zeros((BLOCK_N, BLOCK_H), tl.float32), PRECISION, UPCAST)  # (BN, BH)
            tl.atomic_add(gh_ptr + rows[:, None] * H + ks[None, :], gh, mask=row_ok[:, None] & k_ok[None, :])
        if GRAD_W:
            h = tl.load(h_ptr + rows[:, None] * H + ks[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            gw = _dot(tl.trans(dz), h, tl.zeros((BLOCK_V, BLOCK_H), tl.float32), PRECISION, UPCAST)  # (BV, BH)
            tl.atomic_add(gw_ptr + cols[:, None] * H + ks[None, :], gw, mask=col_ok[:, None] & k_ok[None, :])


@dataclass(frozen=True)
class Blocks:
    """Tile sizes for both kernels and how many vocabulary splits the forward pass runs in parallel."""

    n: int
    v: int
    h: int
    splits: int


def block_sizes(N: int, H: int, V: int, interpreted: bool = INTERPRETED) -> Blocks:
    """The one place block sizes are chosen.

    On GPU: 64×128 logit tiles with 64-wide H steps (tensor-core friendly; the fp32 accumulator fits in
    registers), and enough vocabulary splits that the forward launches ≥ 128 programs even for a handful
    of tokens. Untuned: no GPU was available when this was written. Under the interpreter every program
    and loop step costs Python time, so tiles are as large as numpy handles well.
    """
    block_n = 16 if N <= 16 else (32 if interpreted else 64)
    block_v = 1024 if interpreted else 128
    block_h = min(triton.next_power_of_2(max(H, 16)), 1024 if interpreted else 64)
    n_blocks, v_blocks = triton.cdiv(N, block_n), triton.cdiv(V, block_v)
    want_programs = 4 if interpreted else 128
    splits = max(1, min(v_blocks, triton.cdiv(want_programs, n_blocks)))
    return Blocks(block_n, block_v, block_h, splits)


def _precision(dtype: torch.dtype) -> str:
    """fp32 inputs get exact fp32 dots (log-probs feed importance ratios; TF32's 10-bit mantissa shows up
    there); bf16/fp16 dots ignore the setting and use tensor cores with fp32 accumulation."""
    return "ieee"


def forward(hidden, weight, targets, temperature: float, blocks: Blocks):
    """Returns ``(logprobs, entropies, lse, mean_z)``, each (N,) float32."""
    N, H = hidden.shape
    V = weight.shape[0]
    blocks_per_split = triton.cdiv(triton.cdiv(V, blocks.v), blocks.splits)
    splits = triton.cdiv(triton.cdiv(V, blocks.v), blocks_per_split)
    m, s, t, zy = (torch.empty(splits, N, dtype=torch.float32, device=hidden.device) for _ in range(4))
    grid = (triton.cdiv(N, blocks.n), splits)
    _forward_kernel[grid](hidden, weight, targets, m, s, t, zy, N, V, H, blocks_per_split, 1.0 / temperature,
                          BLOCK_N=blocks.n, BLOCK_V=blocks.v, BLOCK_H=blocks.h,
                          PRECISION=_precision(hidden.dtype), UPCAST=INTERPRETED)
    m_max = m.max(0).values  # (N,)
    scale = torch.exp(m - m_max)  # (S, N)
    s_sum, t_sum = (s * scale).sum(0), (t * scale).sum(0)
    lse = m_max + torch.log(s_sum)
    mean_z = t_sum / s_sum
    return zy.sum(0) - lse, lse - mean_z, lse, mean_z


def backward(hidden, weight, targets, lse, mean_z, grad_logprobs, grad_entropies, temperature: float,
             blocks: Blocks, need_hidden: bool, need_weight: bool):
    """Returns ``(grad_hidden, grad_weight)`` in the inputs' dtypes (None where not needed)."""
    N, H = hidden.shape
    V = weight.shape[0]
    gh = torch.zeros(N, H, dtype=torch.float32, device=hidden.device) if need_hidden else lse  # dummy ptr
    gw = torch.zeros(V, H, dtype=torch.float32, device=hidden.device) if need_weight else lse
    grid = (triton.cdiv(N, blocks.n), triton.cdiv(V, blocks.v))
    _backward_kernel[grid](hidden, weight, targets, lse, mean_z, grad_logprobs.float().contiguous(),
                           grad_entropies.float().contiguous(), gh, gw, N, V, H, 1.0 / temperature,
                           BLOCK_N=blocks.n, BLOCK_V=blocks.v, BLOCK_H=blocks.h,
                           PRECISION=_precision(hidden.dtype), UPCAST=INTERPRETED,
                           GRAD_H=need_hidden, GRAD_W=need_weight)
    return (gh.to(hidden.dtype) if need_hidden else None), (gw.to(weight.dtype) if need_weight else None)


class TritonLinearLogprobEntropy(torch.autograd.Function):
    """``(hidden (N, H), weight (V, H), targets (N,)) -> (logprobs (N,), entropies (N,))``, streamed over V."""

    @staticmethod
    def forward(ctx, hidden, weight, targets, temperature: float, blocks: Blocks | None):
        hidden, weight, targets = hidden.contiguous(), weight.contiguous(), targets.contiguous()
        if weight.dtype != hidden.dtype:
            weight = weight.to(hidden.dtype)
        blocks = blocks or block_sizes(*hidden.shape, weight.shape[0])
        logprobs, entropies, lse, mean_z = forward(hidden, weight, targets, temperature, blocks)
        ctx.save_for_backward(hidden, weight, targets, lse, mean_z)
        ctx.temperature, ctx.blocks = temperature, blocks
        return logprobs, entropies

    @staticmethod
    def backward(ctx, grad_logprobs, grad_entropies):
        hidden, weight, targets, lse, mean_z = ctx.saved_tensors
        if grad_logprobs is None:
            grad_logprobs = torch.zeros_like(lse)
        if grad_entropies is None:
            grad_entropies = torch.zeros_like(lse)
        gh, gw = backward(hidden, weight, targets, lse, mean_z, grad_logprobs, grad_entropies, ctx.temperature,
                          ctx.blocks, ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        return gh, gw, None, None, None


def linear_logprob_entropy_triton(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                                  temperature: float = 1.0, blocks: Blocks | None = None
                                  ) -> tuple[torch.Tensor, torch.Tensor]:
    if not (hidden.is_cuda or INTERPRETED):
        raise RuntimeError(f"the Triton backend needs CUDA tensors (got {hidden.device}); use backend='torch' "
                           "on CPU, or set TRITON_INTERPRET=1 before importing trainer.learn.kernels to emulate")
    return TritonLinearLogprobEntropy.apply(hidden, weight, targets, float(temperature), blocks)
