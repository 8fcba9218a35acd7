"""Per-step overhead of the SDK layers, and the vector env's throughput.

1. Overhead of the action-protocol wrapper (each protocol) over the same env without it, on
   ``agentgym/Maze-v0`` with a short valid action (``look``, which does not change the state, so every
   step costs the same). Target: under 20 µs per step.
2. Overhead of ``gymnasium.make``'s wrappers (order enforcing, passive checker, time limit) over the bare env.
3. Steps/s of ``TextVectorEnv`` with 1 and 2 workers (process and thread modes), random valid actions,
   auto-reset, against one env stepped in a plain loop.

Usage: ``python benchmarks/sdk_overhead.py [--steps 20000] [--vector-seconds 3]``
"""

from __future__ import annotations

import argparse
import random
import time

import gymnasium

import agentgym_envs  # noqa: F401
from agentgym_envs.protocols import ActionProtocolWrapper, get_protocol
from agentgym_envs.vector import TextVectorEnv

ENV_ID = "agentgym/Maze-v0"
REPLIES = {
    "plain": "look",
    "tags": "<think>nothing yet</think><action>look</action>",
    "react": "Thought: let me look around.\nAction: look",
    "tool_calls": '<tool_call>{"name": "act", "arguments": {"action": "look"}}</tool_call>',
}


def time_steps(env: gymnasium.Env, action: str, steps: int) -> float:
    """Seconds per step, best of 3 repeats (the minimum is the least disturbed by other load)."""
    best = float("inf")
    for _ in range(3):
        env.reset(seed=0)
        start = time.perf_counter()
        for _ in range(steps):
            env.step(action)
        best = min(best, (time.perf_counter() - start) / steps)
    return best


def layer_overheads(steps: int) -> None:
    bare = gymnasium.make(ENV_ID, max_episode_steps=None, disable_env_checker=True).unwrapped
    t_bare = time_steps(bare, "look", steps)
    # The protocol wrapper turns the step limit into truncation, so give it room: compare over no limit.
    made = gymnasium.make(ENV_ID, max_episode_steps=10**9)
    t_made = time_steps(made, "look", steps)
    print(f"bare env step:                     {t_bare * 1e6:7.2f} µs")
    print(f"gymnasium.make wrappers:           {(t_made - t_bare) * 1e6:+7.2f} µs per step")
    print("\nprotocol wrapper over the bare env (target < 20 µs per step):")
    print(f"  {'protocol':<11} {'wrapped µs':>10} {'overhead µs':>12}")
    for name, reply in REPLIES.items():
        wrapped = ActionProtocolWrapper(bare, get_protocol(name), max_turns=10**9)
        t = time_steps(wrapped, reply, steps)
        print(f"  {name:<11} {t * 1e6:10.2f} {(t - t_bare) * 1e6:12.2f}")


def vector_throughput(seconds: float) -> None:
    """Random valid actions read from the returned infos, so each step is one round trip per env."""
    print("\nTextVectorEnv, random valid actions, auto-reset:")
    print(f"  {'mode':<8} {'workers':>7} {'steps/s':>10}")
    rng = random.Random(0)
    single = gymnasium.make(ENV_ID)
    _, info = single.reset(seed=0)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, terminated, truncated, info = single.step(rng.choice(info["valid_actions"]))
        count += 1
        if terminated or truncated:
            _, info = single.reset()
    print(f"  {'no vec':<8} {1:>7} {count / (time.perf_counter() - start):10,.0f}")
    for mode in ("process", "thread"):
        for workers in (1, 2):
            with TextVectorEnv(env_id=ENV_ID, num_envs=workers, mode=mode) as venv:
                _, infos = venv.reset(seed=0)
                steps, start = 0, time.perf_counter()
                while time.perf_counter() - start < seconds:
                    _, _, _, _, infos = venv.step([rng.choice(i["valid_actions"]) for i in infos])
                    steps += workers
                rate = steps / (time.perf_counter() - start)
            print(f"  {mode:<8} {workers:>7} {rate:10,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--vector-seconds", type=float, default=3.0)
    args = parser.parse_args()
    layer_overheads(args.steps)
    vector_throughput(args.vector_seconds)


if __name__ == "__main__":
    main()
