"""Many GPUs (or CPU processes on gloo): ``torchrun`` launch, DDP / FSDP2 wrapping, collectives the loop needs.

``torchrun --nproc_per_node N -m trainer.cli.train CONFIG key=value …`` starts N ranks; :func:`init_world`
joins them from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR/PORT``) on
``nccl`` (CUDA) or ``gloo`` (CPU). Without torchrun there is no process group and every helper here is the
identity, so a plain single-process run is exactly what it was.

How a step runs on N ranks (docs/trainer.md, "Many GPUs"):

* Rollouts: every rank draws the same task list (same sampler, same seed) and collects the groups
  ``[rank·k, (rank+1)·k)`` of it (``k = tasks_per_step / N``, whole groups, so group advantages are exact
  and local). Env reset seeds and per-episode sampling seeds are keyed by the global group / episode index,
  so an episode's draws do not depend on which rank or batch row it lands in.
* Update: each rank's loss is its share of the global loss (the normalisers are all-reduced,
  :func:`trainer.learn.loss.global_sum`), so gradients are **summed** across ranks: DDP gets a SUM comm hook,
  FSDP2 a gradient divide factor of 1. Every rank makes the same number of forwards per optimiser step
  (:meth:`World.padding`), since FSDP all-gathers in each forward and DDP all-reduces in each backward.
* The training forward goes through :class:`TrainView` (the LM's decoder as one module holding all the LM's
  parameters), wrapped in DDP or sharded with ``fully_shard`` per decoder layer + the view as root; the
  LM's ``get_decoder`` is pointed at the wrapped view, so :func:`trainer.learn.logprobs.token_logprobs` is unchanged.
* Sampling uses the unwrapped LM: under DDP its parameters are the full replicas; under FSDP2
  :meth:`World.unsharded` all-gathers every layer once for the whole collection and keeps it gathered
  (ranks' generate loops end at different token counts, so per-forward all-gathers would deadlock).
"""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from ..errors import ConfigError, require

STRATEGIES = ("ddp", "fsdp")
"""``distributed.strategy`` values."""
_SAME_ON_EVERY_RANK = frozenset({"grad_norm", "lr", "updated", "gradient_steps", "micro_batches"})
"""Update metrics that are not shares of the global batch (averaged across ranks, not added)."""


@dataclass
class DistributedConfig:
    """Data parallelism under ``torchrun`` (trainer/run/distributed.py); ignored in a plain single process."""

    strategy: str = "ddp"
    """``ddp`` (every rank holds the whole model; gradients all-reduced) or ``fsdp`` (FSDP2 ``fully_shard`` per
    decoder layer + root: parameters, gradients and optimiser state sharded; for models that do not fit a GPU)."""
    backend: str = "auto"
    """Process-group backend: ``auto`` (``nccl`` with CUDA, else ``gloo``), ``nccl`` or ``gloo``."""
    timeout_minutes: float = 30.0
    """How long a collective waits for the other ranks (rank 0 evaluates alone while the others wait)."""

    def __post_init__(self) -> None:
        require(self.strategy in ("ddp", "fsdp"), f"distributed.strategy must be 'ddp' or 'fsdp', got {self.strategy!r}")
        require(self.backend in ("auto", "nccl", "gloo"),
                f"distributed.backend must be 'auto', 'nccl' or 'gloo', got {self.backend!r}")
        require(self.timeout_minutes > 0, f"distributed.timeout_minutes must be > 0, got {self.timeout_minutes}")


@dataclass
class World:
    """This process's place among the ranks; ``size == 1`` and ``active`` false without torchrun."""

    rank: int = 0
    size: int = 1
    strategy: str = "ddp"
    active: bool = False
    """A process group is initialised (under torchrun, even with one rank): collectives run."""
    view: Any = field(default=None, repr=False)
    """The :class:`TrainView` that :meth:`wrap` made data-parallel (None until then)."""

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that logs, evaluates and writes checkpoints."""
        return self.rank == 0

    @property
    def fsdp(self) -> bool:
        return self.active and self.strategy == "fsdp"

    # ---------------------------------------------------------------- collectives (identity when inactive)
    def agree_max(self, value: int) -> int:
        """The largest ``value`` over the ranks (how many forwards / minibatches every rank must make)."""
        if not self.active:
            return int(value)
        t = torch.tensor([int(value)], dtype=torch.int64, device=_comm_device())
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t.item())

    def mean_metrics(self, metrics: dict[str, float], sums: Sequence[str] = ()) -> dict[str, float]:
        """Each metric averaged over the ranks (``sums``: added up instead); every rank gets the result. A key
        some rank lacks (a rank without data has no loss) counts as 0 there."""
        if not self.active:
            return metrics
        keys = self._all_keys(metrics)
        t = torch.tensor([float(metrics.get(k, 0.0)) for k in keys], dtype=torch.float64, device=_comm_device())
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return {k: float(v) if k in sums else float(v) / self.size for k, v in zip(keys, t.tolist())}

    def update_metrics(self, metrics: dict[str, float]) -> dict[str, float]:
        """An update's metrics over all ranks: each rank's loss-like numbers are its share of the global batch's
        (trainer/learn/update.py), so they add up; the gap maximum is a maximum; the rest (grad norm, lr) agree."""
        if not self.active:
            return metrics
        keys = self._all_keys(metrics)  # a rank without data lacks the loss terms: they count as 0 there
        shares = [k for k in keys if k not in _SAME_ON_EVERY_RANK and k != "logprob_gap_max"]
        out = self.mean_metrics({k: metrics.get(k, 0.0) for k in keys}, sums=shares)
        if "logprob_gap_max" in out:
            t = torch.tensor([metrics.get("logprob_gap_max", 0.0)], dtype=torch.float64, device=_comm_device())
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            out["logprob_gap_max"] = float(t.item())
        return out

    def _all_keys(self, metrics: dict[str, float]) -> list[str]:
        """The union of every rank's metric names, sorted (the same list on every rank)."""
        names: list[Any] = [None] * self.size
        dist.all_gather_object(names, sorted(metrics))
        return sorted({k for rank in names for k in rank})

    def barrier(self) -> None:
        if self.active:
            dist.barrier()

    def shard(self, items: Sequence[Any]) -> list[Any]:
        """This rank's contiguous share of ``items`` (``len(items)`` divisible by ``size``)."""
        k = len(items) // self.size
        return list(items[self.rank * k:(self.rank + 1) * k])

    def padding(self, count: int, pad_id: int, device: torch.device) -> list[Any]:
        """Zero-weight micro-batches that bring this rank's ``count`` forwards up to the most any rank makes.

        Their losses are multiplied by 0 before ``backward``, so they add exact zeros to the gradients; their
        one scored position makes every parameter take part, as DDP's reducer and FSDP's hooks expect."""
        missing = self.agree_max(count) - count if self.active else 0
        return [dummy_batch(pad_id, device) for _ in range(missing)]

    def check(self, config: Any) -> None:
        """Raise :class:`ConfigError` for a config this world cannot run exactly."""
        tasks = config.rollout.tasks_per_step
        if tasks % self.size:
            raise ConfigError(f"rollout.tasks_per_step must be divisible by the world size: expected a multiple of "
                              f"{self.size}, got {tasks}; each rank collects whole task groups "
                              f"(e.g. rollout.tasks_per_step={(tasks // self.size + 1) * self.size})")
        if not self.active:
            return
        from ..learn.algorithms import CRITIC_ESTIMATORS

        if config.algorithm.estimator in CRITIC_ESTIMATORS:
            raise ConfigError(f"algorithm.estimator={config.algorithm.estimator!r} trains a value head, which is not "
                              "reduced across ranks yet; use a critic-free estimator (grpo, rloo, gigpo, …) under "
                              "torchrun, or train it in one process")
        if self.strategy == "fsdp" and config.bc.episodes > 0:
            raise ConfigError("bc.episodes > 0 is not supported with distributed.strategy=fsdp (behaviour cloning "
                              "trains the unsharded module); use bc.episodes=0, or distributed.strategy=ddp")
        if self.strategy == "fsdp" and config.policy.backend != "hf":
            raise ConfigError(f"policy.backend={config.policy.backend!r} is not supported with "
                              "distributed.strategy=fsdp (the engine would need the full weights each sync); "
                              "use policy.backend=hf or distributed.strategy=ddp")

    # ---------------------------------------------------------------- model
    def wrap(self, model: Any) -> Any:
        """Make ``model``'s training forward data-parallel (in place); returns what holds the wrapped forward.

        Call before building the optimiser: FSDP2 replaces the parameters by sharded ``DTensor`` ones."""
        if not self.active:
            return model
        view = TrainView(model)
        if self.strategy == "fsdp":
            from torch.distributed.fsdp import fully_shard

            for layer in _decoder_layers(model):
                fully_shard(layer)
            # the root keeps its parameters (embeddings, final norm, output projection) gathered after forward:
            # token_logprobs reads the output projection's weight after the decoder's forward
            fully_shard(view, reshard_after_forward=False)
            for module in _fsdp_modules(view):
                module.set_gradient_divide_factor(1.0)  # the losses are shares of the global loss: SUM
                module.set_force_sum_reduction_for_comms(True)  # gloo has no PREMUL_SUM
            wrapped = view
            with torch.no_grad():  # initialise FSDP with the view as root, in step on every rank, before sampling
                view(input_ids=torch.zeros(1, 1, dtype=torch.long, device=_param_device(model)))
            view.reshard()
        else:
            from torch.nn.parallel import DistributedDataParallel

            device = _param_device(model)
            # no buffer broadcast: the buffers (rotary tables) are the same on every rank, and it would be one more
            # collective per forward
            wrapped = DistributedDataParallel(view, device_ids=[device.index] if device.type == "cuda" else None,
                                              broadcast_buffers=False)
            wrapped.register_comm_hook(None, _sum_allreduce_hook)
        model.get_decoder = lambda: wrapped  # token_logprobs and the critic read the decoder through this
        self.view = view
        return wrapped

    @contextlib.contextmanager
    def unsharded(self, model: Any) -> Iterator[None]:
        """Full parameters on every rank for a whole sampling phase (FSDP2); nothing to do otherwise.

        Every rank must enter and leave together (the gather and the free are collectives-free after the
        first all-gather, so ranks may run different numbers of forwards inside)."""
        if not self.fsdp:
            yield
            return
        modules = _fsdp_modules(self.view)
        for module in modules:
            module.unshard()
        layers = modules[1:]
        for module in layers:
            module.set_reshard_after_forward(False, recurse=False)
        try:
            yield
        finally:
            for module in layers:
                module.set_reshard_after_forward(True, recurse=False)
            for module in modules:
                module.reshard()


    # ---------------------------------------------------------------- full state, any world size
    def model_state(self, model: Any) -> dict[str, torch.Tensor]:
        """``model``'s full (unsharded) state dict on CPU, with the keys a single-process run writes; under FSDP
        a collective (every rank calls it; only rank 0 gets the tensors, the others ``{}``)."""
        if not self.fsdp:
            return model.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if full and set(model.state_dict()) - set(full):  # tied weights listed once: fill in the aliases
            aliases = _aliases(model)
            full.update({alias: full[name] for alias, name in aliases.items() if name in full})
        return full

    def optimizer_state(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """The optimiser's full state keyed as a single-process ``optimizer.state_dict()`` (parameter indices),
        so one checkpoint format serves every world size; a collective under FSDP (rank 0 gets it)."""
        if not self.fsdp:
            return optimizer.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        full = get_optimizer_state_dict(self.view, optimizer,
                                        options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if not full:
            return {}
        index = {name: i for i, name in enumerate(n for g in full["param_groups"] for n in g["params"])}
        return {"state": {index[name]: value for name, value in full["state"].items()},
                "param_groups": [{**g, "params": [index[n] for n in g["params"]]} for g in full["param_groups"]]}

    def load_model_state(self, model: Any, state: dict[str, torch.Tensor]) -> None:
        """Load a full state dict (any world size wrote it) into ``model``, sharding it under FSDP."""
        if not self.fsdp:
            model.load_state_dict(state)
            return
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        aliases = _aliases(model)
        set_model_state_dict(model, {k: v for k, v in state.items() if k not in aliases},
                             options=StateDictOptions(full_state_dict=True))

    def load_optimizer_state(self, model: Any, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        """Load an index-keyed full optimiser state (:meth:`optimizer_state`) into ``optimizer``."""
        if not self.fsdp:
            optimizer.load_state_dict(state)
            return
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        names = [f"lm.{n}" for n, p in model.named_parameters() if p.requires_grad]
        by_name = {"state": {names[int(i)]: value for i, value in state["state"].items()},
                   "param_groups": [{**g, "params": [names[int(i)] for i in g["params"]]} for g in state["param_groups"]]}
        set_optimizer_state_dict(self.view, optimizer, by_name, options=StateDictOptions(full_state_dict=True))

    def plain_copy(self, model: Any, fresh: Any) -> Any:
        """``fresh`` (an unwrapped model of the same architecture) loaded with ``model``'s full weights on every
        rank: the KL reference, whose forwards are then local (ranks make different numbers of them)."""
        if self.fsdp:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

            state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
            state.update({alias: state[name] for alias, name in _aliases(model).items() if name in state})
        else:
            state = model.state_dict()
        fresh.load_state_dict(state)
        for p in fresh.parameters():
            p.requires_grad_(False)
        return fresh

    def gather(self, value: Any) -> list[Any]:
        """Every rank's ``value`` (plain data: RNG states) on rank 0, ``[value]`` without a group. Pickled between
        this run's own processes only; what reaches a checkpoint is plain data (trainer/run/checkpoint.py)."""
        if not self.active:
            return [value]
        out: list[Any] = [None] * self.size if self.is_main else []
        dist.gather_object(value, out if self.is_main else None, dst=0)
        return out


class TrainView(torch.nn.Module):
    """A causal LM's decoder as a module that *owns* the whole LM (every parameter, the output projection's
    too), so that DDP reduces and FSDP2 shards all of them while the forward runs only the decoder: the
    log-prob pass (:func:`trainer.learn.logprobs.token_logprobs`) applies the output projection itself, chunked."""

    def __init__(self, model: Any):
        super().__init__()
        self.lm = model
        self.__dict__["_decoder"] = model.get_decoder()  # not registered: the parameters are reached via ``lm``

    def forward(self, **kwargs: Any) -> Any:
        return self.__dict__["_decoder"](**kwargs)


def init_world(config: Any) -> World:
    """Join torchrun's process group (``config``: the ``distributed`` section); a plain process gets ``World()``."""
    if "WORLD_SIZE" not in os.environ or "RANK" not in os.environ:
        return World(strategy=config.strategy)
    if not dist.is_initialized():
        backend = config.backend if config.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
        if backend == "nccl" and not torch.cuda.is_available():
            raise ConfigError("distributed.backend=nccl needs CUDA, but torch.cuda.is_available() is False; use "
                              "distributed.backend=gloo (or auto)")
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group(backend, timeout=datetime.timedelta(minutes=config.timeout_minutes))
    return World(rank=dist.get_rank(), size=dist.get_world_size(), strategy=config.strategy, active=True)


def close_world(world: World) -> None:
    if world.active and dist.is_initialized():
        dist.destroy_process_group()


def dummy_batch(pad_id: int, device: torch.device) -> Any:
    """One two-token row with one scored position, advantage 0: a forward that touches every parameter."""
    from ..learn.logprobs import PackedBatch

    ids = torch.full((1, 2), pad_id, dtype=torch.long, device=device)
    zeros = torch.zeros((1, 2), dtype=torch.float32, device=device)
    return PackedBatch(input_ids=ids, attention_mask=torch.ones_like(ids),
                       loss_mask=torch.tensor([[0, 1]], dtype=torch.long, device=device),
                       sampling_logprobs=zeros, advantages=zeros.clone())


def _aliases(model: Any) -> dict[str, str]:
    """State-dict keys that name a tensor already listed under another key (tied embeddings): alias -> first."""
    first: dict[int, str] = {}
    out = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        key = id(tensor)
        if key in first:
            out[name] = first[key]
        else:
            first[key] = name
    return out


def _sum_allreduce_hook(state, bucket):  # no annotations: DDP checks them against dist.GradBucket objects
    """DDP comm hook: all-reduce SUM of a gradient bucket (DDP's default divides by the world size)."""
    future = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
    return future.then(lambda f: f.value()[0])


def _decoder_layers(model: Any) -> list[torch.nn.Module]:
    layers = getattr(model.get_decoder(), "layers", None)
    if layers is None:
        raise ConfigError(f"distributed.strategy=fsdp shards per decoder layer, but {type(model).__name__}'s decoder has "
                          "no .layers; use distributed.strategy=ddp")
    return list(layers)


def _fsdp_modules(view: torch.nn.Module) -> list[Any]:
    """The FSDP2 modules under ``view``, the root first."""
    from torch.distributed.fsdp import FSDPModule

    return [m for m in view.modules() if isinstance(m, FSDPModule)]


def _param_device(model: Any) -> torch.device:
    return next(model.parameters()).device


def _comm_device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
