"""An agentgym env as a verifiers v1 taskset and env (``verifiers==0.4.0``, extra ``verifiers``).

verifiers 0.4 runs an eval as ``Env.run_slot`` over tasks from a ``Taskset``: each task is one seeded
episode, and the env's ``run(task, agents)`` drives the model turn by turn through an ``Interaction``
(the model's harness program talks to the endpoint of ``--client.base-url``). Here:

* :class:`AgentgymTaskset` yields ``num_tasks`` tasks, task ``i`` being the episode ``reset(seed=seed + i)``:
  its prompt is that reset's observation, its system prompt ``info["system_prompt"]`` (the reply format
  of ``protocol`` included), and ``data.info`` keeps the env id, seed and protocol to replay it from.
* :class:`AgentgymEnv` plays it: each reply goes to ``env.step`` (behind the protocol wrapper, so a
  malformed or huge reply is an observation saying what was wrong, never an exception), each observation
  comes back as the next user turn, and the episode ends when the env terminates or truncates.
  The trace records the env's return as reward ``"return"`` (weight 1), metrics ``won``, ``turns``,
  ``invalid_actions`` and ``infra_error``, and the per-turn rewards, validity and native actions under
  ``trace.info["agentgym"]``. Rewards come from the env alone: nothing the model writes is read as a score.

verifiers finds a taskset by importing its id as a module, and its loader cannot import a dotted module
path, so importing this module also registers it under the top-level name ``agentgym_taskset``
(:data:`TASKSET_ID`). ``verifiers`` and ``openenv`` 0.10 pin different ``mcp`` versions: install this extra
in its own virtualenv (``bash scripts/install_interop.sh verifiers`` builds ``.venv-verifiers``).

>>> config = env_config("agentgym/Maze-Easy-v0", num_tasks=2, model="m", base_url="http://127.0.0.1:9/v1")
>>> env = vf.load_environment(config)
>>> [task.data.info["seed"] for task in env.taskset]
[0, 1]
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf

from ..registration import make

__all__ = ["AgentgymTaskset", "AgentgymEnv", "AgentgymTasksetConfig", "AgentgymEnvConfig", "env_config",
           "model_context", "TASKSET_ID"]

#: The taskset id verifiers imports (``--env.taskset.id agentgym-taskset`` once this module is imported).
TASKSET_ID = "agentgym-taskset"
sys.modules.setdefault(TASKSET_ID.replace("-", "_"), sys.modules[__name__])


class AgentgymTasksetConfig(vf.TasksetConfig):
    """Which agentgym episodes the taskset holds (``--env.taskset.*``)."""

    env_id: str = "agentgym/Maze-Easy-v0"
    """A registered id (``agentgym list``)."""
    protocol: str = "plain"
    """How replies are parsed: ``plain``, ``react``, ``tags`` or ``tool_calls`` (docs/sdk.md)."""
    num_tasks: int = 8
    """How many episodes: seeds ``seed`` .. ``seed + num_tasks - 1``."""
    seed: int = 0
    """The first task's reset seed."""
    max_turns: int | None = None
    """Replies per episode before truncation (default: the id's registered limit)."""
    make_kwargs: dict[str, Any] = {}
    """Extra keywords for ``agentgym_envs.make`` (``split=``, ...)."""


class AgentgymData(vf.TaskData):
    info: dict[str, Any]
    """``env_id``, ``seed``, ``protocol``, ``max_turns``, ``make_kwargs``: what the env replays the episode from."""


class AgentgymTask(vf.Task[AgentgymData, vf.State, vf.TaskConfig]):
    """One seeded agentgym episode."""


class AgentgymTaskset(vf.Taskset[AgentgymTask, AgentgymTasksetConfig]):
    """``num_tasks`` seeded episodes of one env; the prompt of each is its reset observation."""

    def load(self) -> Iterator[AgentgymTask]:
        config = self.config
        if config.num_tasks < 1:
            raise ValueError(f"expected num_tasks >= 1, got {config.num_tasks}")
        env = _make(config.model_dump())
        try:
            for i in range(config.num_tasks):
                seed = config.seed + i
                observation, info = env.reset(seed=seed)
                data = AgentgymData(name=f"{config.env_id}#{seed}", prompt=str(observation),
                                    system_prompt=info.get("system_prompt") or None,
                                    info={"env_id": config.env_id, "seed": seed, "protocol": config.protocol,
                                          "max_turns": config.max_turns, "make_kwargs": dict(config.make_kwargs)})
                yield AgentgymTask(data, config.task)
        finally:
            env.close()


class AgentgymEnvConfig(vf.EnvConfig):
    """The env's one role, ``player``: a plain chat loop (``null`` harness) in a local subprocess."""

    player: vf.AgentConfig = vf.AgentConfig.model_validate({"harness": {"id": "null"},
                                                           "runtime": {"type": "subprocess"}})


class AgentgymEnv(vf.Env[AgentgymEnvConfig]):
    """Steps the agentgym env host-side as the run's user: reply -> ``env.step`` -> next observation."""

    async def run(self, task: AgentgymTask, agents: vf.Agents) -> None:
        env = _make(task.data.info)
        record = {"turn_rewards": [], "action_valid": [], "native_actions": [], "won": False,
                  "terminated": False, "truncated": False, "infra_error": False}
        try:
            await asyncio.to_thread(env.reset, seed=task.data.info["seed"])
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()  # the prompt is the reset observation: the model speaks first
                while not segment.terminated:
                    observation, done = await _step(env, segment.last_reply, record)
                    if done:
                        break
                    segment = await interaction.turn(observation)
        finally:
            env.close()
        _score(interaction.trace, record)


async def _step(env: Any, reply: str, record: dict[str, Any]) -> tuple[str, bool]:
    """One reply through the env; its outcome appended to ``record``. Returns the observation and whether it ended."""
    observation, reward, terminated, truncated, info = await asyncio.to_thread(env.step, reply)
    record["turn_rewards"].append(float(reward))
    record["action_valid"].append(bool(info.get("action_valid", True)))
    record["native_actions"].append(info.get("native_action"))
    record["won"] = bool(info.get("won", record["won"]))
    record["infra_error"] = record["infra_error"] or bool(info.get("infra_error"))
    record["terminated"], record["truncated"] = bool(terminated), bool(truncated)
    return str(observation), bool(terminated or truncated)


def _score(trace: vf.Trace, record: dict[str, Any]) -> None:
    """The episode's reward and metrics on the trace, all read from the env's own step results."""
    trace.record_reward("return", sum(record["turn_rewards"]), 1.0)
    trace.record_metrics({"won": float(record["won"]), "turns": float(len(record["turn_rewards"])),
                          "invalid_actions": float(record["action_valid"].count(False)),
                          "infra_error": float(record["infra_error"])})
    trace.info["agentgym"] = record


def _make(spec: dict[str, Any]) -> Any:
    return make(spec["env_id"], protocol=spec["protocol"], max_turns=spec.get("max_turns"),
                **dict(spec.get("make_kwargs") or {}))


def env_config(env_id: str, *, model: str, base_url: str, api_key_var: str = "OPENAI_API_KEY",
               harness_env: dict[str, str] | None = None, **taskset: Any) -> AgentgymEnvConfig:
    """The env config for ``env_id`` with the player pointed at an OpenAI-compatible ``base_url``.

    ``taskset`` holds :class:`AgentgymTasksetConfig` fields (``num_tasks``, ``seed``, ``protocol`` ...).
    The player's API key is read from the environment variable ``api_key_var`` (verifiers' convention).
    ``harness_env`` is set for the harness program and its ``uv`` setup (e.g. ``UV_FIND_LINKS`` to install
    its packages from local wheels, as the tests do).
    """
    client = {"type": "eval", "base_url": base_url, "api_key_var": api_key_var}
    player = {"harness": {"id": "null", "env": dict(harness_env or {})}, "runtime": {"type": "subprocess"},
              "model": model, "client": client}
    return vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "env_id": env_id, **taskset}, "player": player})


def model_context(config: AgentgymEnvConfig) -> vf.ModelContext:
    """The run's model context from the player's own model and client (what ``vf eval`` builds from its flags)."""
    player = config.player
    return vf.ModelContext(model=player.model or "", client=player.client)
