"""A ReAct-style agent loop over an agentgym env, written against the plain ``openai`` client: an external harness.

Nothing here knows about the trainer. The harness asks the gateway for work (``POST /sessions``: an env, a task
and a seed), points an ``openai.OpenAI`` client at the session's ``base_url``, and runs the usual loop: send the
chat, read the reply (text, or an OpenAI ``tool_calls`` call for tool envs), act in its own env, append the
observation, repeat; at the end it posts the episode's return to ``/sessions/{sid}/reward``. Against an env-driven
gateway (``gateway.env_driven=true``) the gateway steps the env and the harness only carries the chat on. It stops
when the gateway answers 410 (training is over). Train through it:

    agentgym train my.yaml rollout.source=gateway "gateway.harness='python examples/gateway_react.py'"

or start it yourself against a running gateway (``agentgym gateway --tiny``):

    python examples/gateway_react.py --gateway http://127.0.0.1:8100 --workers 4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import openai

import agentgym_envs


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST JSON; the status and the JSON answer (errors included: the gateway answers them in OpenAI's shape)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def first_messages(observation: str, info: dict[str, Any], system_prompt: str | None) -> list[dict[str, Any]]:
    """The system prompt (the trainer's, else the env's) and the first observation, led by the task."""
    system = info.get("system_prompt") if system_prompt is None else system_prompt
    instruction = info.get("instruction")
    first = observation if not instruction or instruction in observation else f"{instruction}\n\n{observation}"
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": first}]


def play(gateway: str, session: dict[str, Any]) -> None:
    """One episode of the assigned task, every reply sampled through the session's endpoint."""
    a = session["assignment"]
    client = openai.OpenAI(base_url=session["base_url"], api_key="unused", max_retries=0)
    if "messages" in session:
        return play_env_driven(client, a, session)
    env = agentgym_envs.make(a["env_id"], protocol=a["protocol"], max_turns=a["max_turns"], **a.get("env_kwargs", {}))
    try:
        observation, info = env.reset(**a["reset"])
        messages, tools = first_messages(observation, info, a.get("system_prompt")), info.get("tools")
        total, won, done = 0.0, False, False
        while not done:
            reply = client.chat.completions.create(model=a.get("model", "agentgym"), messages=messages,
                                                   **({"tools": tools} if tools else {})).choices[0].message
            calls = reply.tool_calls or []
            action = (json.dumps({"tool_calls": [c.model_dump() for c in calls]}) if calls else reply.content or "")
            observation, reward, terminated, truncated, info = env.step(action)
            total, won, done = total + float(reward), bool(info.get("won", False)), terminated or truncated
            messages.append(reply.model_dump(exclude_none=True))
            messages.append({"role": "tool", "tool_call_id": calls[0].id, "content": observation} if calls
                            else {"role": "user", "content": observation})
    finally:
        env.close()
    status, answer = post(f"{gateway}/sessions/{session['session_id']}/reward", {"reward": total, "won": won})
    if status != 200:
        raise RuntimeError(f"the gateway refused the reward: HTTP {status} {answer}")


def play_env_driven(client: openai.OpenAI, a: dict[str, Any], session: dict[str, Any]) -> None:
    """An env-driven gateway steps the env itself: the harness only carries the chat on with each observation
    (the response's ``agentgym.next_message``) until the env says the episode is done; it posts no reward."""
    messages, tools, done = list(session["messages"]), session.get("tools"), False
    while not done:
        response = client.chat.completions.create(model=a.get("model", "agentgym"), messages=messages,
                                                  **({"tools": tools} if tools else {}))
        env = response.model_extra["agentgym"]
        reply = response.choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        messages.append({**env["next_message"], **({"tool_call_id": reply.tool_calls[0].id} if reply.tool_calls else {})})
        done = env["done"]


def worker(gateway: str, errors: list[BaseException]) -> None:
    """Take sessions until the gateway has no more work (410); wait and retry while it has none yet (503)."""
    try:
        while True:
            status, session = post(f"{gateway}/sessions", {})
            if status == 410:
                return
            if status in (429, 503):
                time.sleep(0.2)
                continue
            if status != 200:
                raise RuntimeError(f"POST /sessions answered HTTP {status}: {session}")
            play(gateway, session)
    except BaseException as e:  # reported by main: a worker's failure is the harness's exit code
        errors.append(e)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gateway", default=os.environ.get("AGENTGYM_GATEWAY_URL"),
                        help="the gateway's root URL (default: $AGENTGYM_GATEWAY_URL, set by the trainer)")
    parser.add_argument("--workers", type=int, default=2, help="episodes played at once")
    args = parser.parse_args(argv)
    if not args.gateway:
        parser.error("no gateway: pass --gateway URL or set AGENTGYM_GATEWAY_URL")
    errors: list[BaseException] = []
    threads = [threading.Thread(target=worker, args=(args.gateway.rstrip("/"), errors)) for _ in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        print(f"gateway_react: {type(e).__name__}: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
