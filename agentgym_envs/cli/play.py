"""``agentgym play ID``: a person plays an env in the terminal.

Type an action, or the number of a listed valid action. Meta-commands: ``:hint`` (the expert's action),
``:reset``, ``:quit``. Reads standard input, so a test (or a script) can drive it through a pipe.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="env id")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--protocol", default=None, help="parse your input with a protocol (plain, react, tags, tool_calls)")
    parser.add_argument("--max-shown", type=int, default=30, help="how many valid actions to list")


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    from agentgym_envs.cli.check import require_makeable
    from agentgym_envs.cli.errors import require_protocol
    from agentgym_envs.core.hooks import has_expert
    from agentgym_envs.registration import make

    require_makeable(args.id)
    require_protocol(args.protocol)
    stdin, out = stdin or sys.stdin, stdout or sys.stdout
    env = make(args.id, protocol=args.protocol)
    seed = args.seed
    obs, info = env.reset(seed=seed)
    _show_start(obs, info, out, args.max_shown)
    total, actions = 0.0, info.get("valid_actions") or []
    for line in stdin:
        text = line.rstrip("\n")
        if text.strip() == ":quit":
            break
        if text.strip() == ":hint":
            hint = env.unwrapped.expert_action() if has_expert(env) else "(this env has no expert)"
            print(f"hint: {hint}", file=out)
            continue
        if text.strip() == ":reset":
            seed += 1
            obs, info = env.reset(seed=seed)
            total, actions = 0.0, info.get("valid_actions") or []
            _show_start(obs, info, out, args.max_shown)
            continue
        if text.strip().isdigit() and 1 <= int(text) <= len(actions):
            text = actions[int(text) - 1]
            print(f"> {text}", file=out)
        obs, reward, terminated, truncated, info = env.step(text)
        total += reward
        actions = info.get("valid_actions") or []
        print(f"\n{obs}\n[reward {reward:g} | return {total:g} | valid {info['action_valid']}]", file=out)
        if terminated or truncated:
            outcome = "won" if info.get("won") else "truncated" if truncated else "ended"
            print(f"Episode over: {outcome}, return {total:g}. Type :reset to play again or :quit.", file=out)
            actions = []
        else:
            _show_actions(actions, out, args.max_shown)
    env.close()
    return 0


def _show_start(obs: str, info: dict, out: TextIO, max_shown: int) -> None:
    print(f"== {info.get('instruction', '')}\n{obs}", file=out)
    if info.get("tools"):
        print("tools: " + json.dumps([t["function"]["name"] for t in info["tools"]]), file=out)
    _show_actions(info.get("valid_actions") or [], out, max_shown)


def _show_actions(actions: list[str], out: TextIO, max_shown: int) -> None:
    if actions:
        listed = "  ".join(f"{i}) {a}" for i, a in enumerate(actions[:max_shown], 1))
        more = f"  … and {len(actions) - max_shown} more" if len(actions) > max_shown else ""
        print(f"valid actions: {listed}{more}", file=out)
