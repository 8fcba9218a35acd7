"""Peak memory and time of one forward + backward of a GRPO-style loss from final hidden states.

Every variant computes per-token log-probs (with gradient) and entropies (values) of the sampled tokens
under ``lm_head`` and backpropagates the clipped policy-gradient loss (token mean, ε = 0.2 / 0.28, no KL)
into ``hidden`` (N, H) and ``weight`` (V, H):

    naive     full (N, V) logits, ``log_softmax``, gather, entropy from the full log-probs
    trl       TRL's ``selective_log_softmax`` style: (N, V) logits materialised, gather + per-sequence
              ``logsumexp``; entropies as TRL's ``entropy_from_logits`` (chunks of 128 rows, no grad)
    chunked   ours, ``trainer.learn.kernels.linear_logprob_entropy(backend="torch")`` ([256, V] at a time)
    liger     Liger-Kernel's ``LigerFusedLinearGRPOLoss`` (chunked loss, one sequence per chunk) if installed
              (``pip install -e ".[bench]"``; see docs/benchmarks.md)
    triton    ours, ``backend="triton"`` (CUDA only)

Method. Each variant runs in a fresh subprocess, so one's allocations cannot hide another's. On GPU the
peak is ``torch.cuda.max_memory_allocated()`` minus what the inputs hold. On CPU torch's allocations are
invisible to tracemalloc, so the child records its resident set (``psutil``) after building the inputs
and compares it with the process's peak RSS (``getrusage(RUSAGE_SELF).ru_maxrss``) after the runs; inputs
are created in place, so no temporary raises the peak before the baseline, and the child runs with
``MALLOC_MMAP_THRESHOLD_=131072`` so freed tensors leave the RSS at once (no heap fragmentation). The reported "extra" column
subtracts the gradients every variant must return (``grad_hidden`` + ``grad_weight``), leaving what the
loss computation itself needs — the quantity the kernels exist to shrink. Time is the median over
``--repeats`` runs after one warm-up on GPU (no warm-up on CPU, where a run takes tens of seconds).

With ``--model`` (a registered name such as ``smollm2-135m-instruct``, a model directory or a ``.gguf``
file: :func:`trainer.models.resolve_model`) it measures the trainer's own scoring pass instead: one forward
of the model over ``--tokens`` tokens (rows of 256 seeded random ids), the sampled tokens' log-probs and
entropies through ``trainer.learn.logprobs.token_logprobs`` with the head computed ``naive`` (full logits,
``backend="naive"``) or ``chunked`` (``backend="torch"``, the default chunk), the clipped loss and the
backward into every weight. There the baseline is the RSS after the model and batch are built and the peak
is the kernel's high-water mark (``VmHWM``) reset at that point (``/proc/self/clear_refs``), so loading the
model cannot set it; "extra" subtracts the weights' gradients.

    python benchmarks/kernel_memory.py                                  # N=2048, H=1024, V=151,936
    python benchmarks/kernel_memory.py --tokens 512 --variants naive chunked
    python benchmarks/kernel_memory.py --model smollm2-135m-instruct --tokens 1024 --threads 1
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time

VARIANTS = ("naive", "trl", "chunked", "liger", "triton")
SEQ_LEN = 256  # tokens per sequence: advantages are per sequence, Liger chunks one sequence at a time
CLIP_LOW, CLIP_HIGH = 0.2, 0.28


def clipped_pg_loss(token_logprobs, old_token_logprobs, advantages):
    """Token-mean clipped surrogate; all (N,) float32."""
    import torch

    ratio = torch.exp(token_logprobs - old_token_logprobs)
    clipped = ratio.clamp(1 - CLIP_LOW, 1 + CLIP_HIGH)
    return -torch.minimum(ratio * advantages, clipped * advantages).mean()


def _naive(hidden, weight, targets, T):
    logp = (hidden @ weight.T / T).float().log_softmax(-1)  # (N, V)
    return logp.gather(-1, targets[:, None]).squeeze(-1), -(logp.exp() * logp).sum(-1)


def _trl(hidden, weight, targets, T):
    import torch

    logits = (hidden @ weight.T / T).float().view(-1, SEQ_LEN, weight.shape[0])  # (B, S, V)
    index = targets.view(-1, SEQ_LEN)
    selected = logits.gather(-1, index[..., None]).squeeze(-1)
    lse = torch.stack([torch.logsumexp(row, dim=-1) for row in logits])  # per sequence, as TRL loops
    with torch.no_grad():
        flat = logits.view(-1, logits.shape[-1])
        ent = torch.cat([-(c.log_softmax(-1).exp() * c.log_softmax(-1)).sum(-1) for c in flat.split(128)])
    return (selected - lse).view(-1), ent


def _ours(backend, chunk):
    def run(hidden, weight, targets, T):
        from trainer.learn.kernels import linear_logprob_entropy

        return linear_logprob_entropy(hidden, weight, targets, T, backend=backend, chunk=chunk)
    return run


def _step(variant, hidden, weight, targets, old, adv, T, chunk):
    """One forward + backward; returns nothing (gradients land in .grad)."""
    if variant == "liger":
        import torch
        from liger_kernel.chunked_loss import LigerFusedLinearGRPOLoss

        loss_fn = LigerFusedLinearGRPOLoss(beta=0.0, use_ref_model=False, epsilon_low=CLIP_LOW,
                                           epsilon_high=CLIP_HIGH, loss_type="dapo", temperature=T,
                                           compiled=hidden.is_cuda)
        B = hidden.shape[0] // SEQ_LEN
        out = loss_fn(hidden.view(B, SEQ_LEN, -1), weight, targets.view(B, SEQ_LEN),
                      torch.ones(B, SEQ_LEN, device=hidden.device), adv.view(B, SEQ_LEN)[:, 0],
                      old_per_token_logps=old.view(B, SEQ_LEN))
        loss = out[0] if isinstance(out, tuple) else out
    else:
        fn = {"naive": _naive, "trl": _trl, "chunked": _ours("torch", chunk),
              "triton": _ours("triton", chunk)}[variant]
        lp, _ = fn(hidden, weight, targets, T)
        loss = clipped_pg_loss(lp, old, adv)
    loss.backward()


def child(args) -> dict:
    import psutil
    import torch

    if args.variant == "liger":
        import liger_kernel.chunked_loss  # noqa: F401
    if args.variant in ("chunked", "triton"):
        import trainer.learn.kernels  # imports cost RSS: done before the baseline, out of the peak
    if args.variant == "triton":
        import trainer.learn.kernels.triton_linear_logprob  # noqa: F401
    torch.manual_seed(0)
    cuda = args.device == "cuda"
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    N, H, V = args.tokens, args.hidden, args.vocab
    kw = {"device": args.device, "dtype": dtype}
    hidden = torch.empty(N, H, **kw).normal_().requires_grad_()
    weight = torch.empty(V, H, **kw).normal_(std=H ** -0.5).requires_grad_()
    targets = torch.randint(V, (N,), device=args.device)
    old = torch.empty(N, device=args.device).normal_(-2.0, 0.5)
    adv = torch.empty(N // SEQ_LEN, device=args.device).normal_().repeat_interleave(SEQ_LEN)  # per sequence
    grads_bytes = (hidden.numel() + weight.numel()) * hidden.element_size()
    if cuda:
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    else:
        base = psutil.Process().memory_info().rss
    times = []
    for i in range(args.repeats + (1 if cuda else 0)):
        hidden.grad = weight.grad = None
        t0 = time.perf_counter()
        _step(args.variant, hidden, weight, targets, old, adv, args.temperature, args.chunk)
        if cuda:
            torch.cuda.synchronize()
        if i or not cuda:
            times.append(time.perf_counter() - t0)
    if cuda:
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base  # ru_maxrss is KiB on Linux
    return {"variant": args.variant, "peak_bytes": peak, "extra_bytes": peak - grads_bytes,
                "seconds": statistics.median(times)}


MODEL_VARIANTS = {"naive": "naive", "chunked": "torch", "triton": "triton"}  # --model: token_logprobs' backend


def _hwm_reset() -> bool:
    """Reset this process's peak RSS (``VmHWM``) to its current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith(field + ":"))
    return int(line.split()[1]) * 1024  # kB


def model_child(args) -> dict:
    """The trainer's scoring pass on a real model (module docstring): forward, head, clipped loss, backward."""
    import psutil
    import torch
    from transformers import AutoModelForCausalLM

    from trainer.learn.logprobs import PackedBatch, token_logprobs
    from trainer.models.registry import resolve_model

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(resolve_model(args.model)), dtype=torch.float32)
    model.to(args.device)
    B, V = args.tokens // SEQ_LEN, model.get_output_embeddings().weight.shape[0]
    ids = torch.randint(V, (B, SEQ_LEN), device=args.device)
    ones = torch.ones(B, SEQ_LEN, dtype=torch.long, device=args.device)
    batch = PackedBatch(input_ids=ids, attention_mask=ones, loss_mask=ones,
                        sampling_logprobs=torch.empty(B, SEQ_LEN, device=args.device).normal_(-2.0, 0.5),
                        advantages=torch.empty(B, 1, device=args.device).normal_().expand(B, SEQ_LEN))
    scored = batch.loss_mask[:, 1:].bool()
    grads_bytes = sum(p.numel() * p.element_size() for p in model.parameters())  # tied head counted once
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    else:
        base, hwm = psutil.Process().memory_info().rss, _hwm_reset()
    times = []
    for i in range(args.repeats + (1 if cuda else 0)):
        model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        lp, _ = token_logprobs(model, batch, temperature=args.temperature, backend=MODEL_VARIANTS[args.variant])
        loss = clipped_pg_loss(lp[:, 1:][scored], batch.sampling_logprobs[:, 1:][scored], batch.advantages[:, 1:][scored])
        loss.backward()
        if cuda:
            torch.cuda.synchronize()
        if i or not cuda:
            times.append(time.perf_counter() - t0)
    if cuda:
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = (_status_bytes("VmHWM") if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024) - base
    return {"variant": args.variant, "peak_bytes": peak, "extra_bytes": peak - grads_bytes,
            "seconds": statistics.median(times), "vocab": V, "grads_bytes": grads_bytes, "hwm_reset": hwm if not cuda else None}


def run_variant(variant: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", variant, "--tokens", str(args.tokens), "--hidden",
           str(args.hidden), "--vocab", str(args.vocab), "--dtype", args.dtype, "--device", args.device,
           "--repeats", str(args.repeats), "--temperature", str(args.temperature), "--chunk", str(args.chunk)]
    cmd += ["--model", args.model] if args.model else []
    cmd += ["--threads", str(args.threads)] if args.threads else []
    # A fixed mmap threshold makes glibc map (and unmap on free) every large block, so the RSS peak follows
    # the peak of live tensors rather than heap fragmentation from the dynamic threshold.
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072",
               PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return {"variant": variant, "error": last[:160]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=2048, help="N, a multiple of 256")
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=151_936)
    p.add_argument("--dtype", choices=("fp32", "bf16"), default=None, help="default: bf16 on GPU, fp32 on CPU")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None)
    p.add_argument("--repeats", type=int, default=None, help="timed runs (default 5 on GPU, 1 on CPU)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--chunk", type=int, default=256, help="tokens per chunk of our torch path")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    p.add_argument("--model", default=None,
                   help="measure the trainer's scoring pass on this model (name, directory or .gguf; module docstring)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads in each child (default: torch's)")
    p.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.model and "--variants" not in (argv if argv is not None else sys.argv[1:]):
        args.variants = ["naive", "chunked", "triton"]
    if args.model and set(args.variants) - set(MODEL_VARIANTS):
        p.error(f"with --model the variants are {', '.join(MODEL_VARIANTS)} (the trainer's own head backends)")
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.dtype = args.dtype or ("bf16" if args.device == "cuda" else "fp32")
    args.repeats = args.repeats or (5 if args.device == "cuda" else 1)
    if args.tokens % SEQ_LEN:
        p.error(f"--tokens must be a multiple of {SEQ_LEN}, got {args.tokens}")
    if args.child:
        args.variant = args.child
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        print(json.dumps(model_child(args) if args.model else child(args)))
        return

    if args.model:
        print(f"# the trainer's scoring pass on {args.model}: N={args.tokens} tokens ({args.tokens // SEQ_LEN} rows of "
              f"{SEQ_LEN}), fp32 on {args.device}, torch threads {args.threads or 'default'}, {time.strftime('%Y-%m-%d')}, "
              f"load {os.getloadavg()[0]:.1f}; peak = {'max_memory_allocated' if args.device == 'cuda' else 'VmHWM'} above "
              "model + batch; extra = peak - weight gradients")
    else:
        print(f"# N={args.tokens} H={args.hidden} V={args.vocab} {args.dtype} on {args.device}, "
              f"chunk={args.chunk}, {time.strftime('%Y-%m-%d')}; peak = {'max_memory_allocated' if args.device == 'cuda' else 'RSS peak'}"
              " above inputs; extra = peak - (grad_hidden + grad_weight)")
    print(f"{'variant':<10}{'peak MiB':>11}{'extra MiB':>11}{'time s':>9}  note")
    rows = {}
    for v in args.variants:
        if v == "triton" and args.device != "cuda":
            print(f"{v:<10}{'-':>11}{'-':>11}{'-':>9}  skipped: needs CUDA")
            continue
        if v == "liger" and importlib.util.find_spec("liger_kernel") is None:
            print(f"{v:<10}{'-':>11}{'-':>11}{'-':>9}  skipped: needs liger-kernel (pip install -e '.[bench]')")
            continue
        r = rows[v] = run_variant(v, args)
        if "error" in r:
            print(f"{v:<10}{'-':>11}{'-':>11}{'-':>9}  failed: {r['error']}")
        else:
            note = "peak from ru_maxrss (VmHWM could not be reset)" if r.get("hwm_reset") is False else ""
            print(f"{v:<10}{r['peak_bytes'] / 2**20:>11.0f}{r['extra_bytes'] / 2**20:>11.0f}{r['seconds']:>9.2f}  {note}",
                  flush=True)
    naive = rows.get("naive", {})
    for ours in ("chunked", "triton"):
        r = rows.get(ours, {})
        if "peak_bytes" in naive and "peak_bytes" in r:
            print(f"naive / {ours}: peak {naive['peak_bytes'] / r['peak_bytes']:.1f}x, "
                  f"extra {naive['extra_bytes'] / max(r['extra_bytes'], 1):.1f}x, "
                  f"time {naive['seconds'] / r['seconds']:.2f}x")


if __name__ == "__main__":
    main()
