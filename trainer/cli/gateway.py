"""``agentgym gateway``: serve the trajectory-capturing gateway on a local model (docs/trainer.md, The gateway).

Any harness can then open sessions (``POST /sessions``), point an OpenAI client at ``…/sessions/{sid}/v1`` and
post each session's reward; with ``--env`` the gateway steps that agentgym env with every reply instead (the env's
rewards are the outcome). Each finished session is appended to ``--out`` as one JSON line (segments' token ids,
loss mask and log-probs, replies, outcome) and then forgotten; without ``--out`` a finished session stays readable
for ``--finished-grace`` seconds and is then released, so memory stays bounded either way. Training from an external
harness is ``agentgym train … rollout.source=gateway``; this command is for capturing and inspecting sessions.

    agentgym gateway --tiny --port 8100 --out sessions.jsonl
    agentgym gateway --hf ./my-model --env agentgym/Maze-Easy-v0 --protocol react
"""

from __future__ import annotations

import argparse
import json
import sys
import threading


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from agentgym_envs.core.httpd import add_bind_arguments

    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--tiny", action="store_true", help="serve the embedded tiny policy (built locally, cached)")
    which.add_argument("--hf", metavar="DIR", help="serve a local Hugging Face model directory")
    add_bind_arguments(parser, port=8100)
    parser.add_argument("--model-name", default="agentgym", help="the model name clients send (default agentgym)")
    parser.add_argument("--env", metavar="ENV_ID", help="env-driven mode: step this env with every reply")
    parser.add_argument("--protocol", default="auto", help="the env's reply protocol with --env (default auto)")
    parser.add_argument("--max-turns", type=int, default=10, help="turn limit of --env episodes")
    parser.add_argument("--out", metavar="FILE", help="append each finished session to this JSON-lines file")
    parser.add_argument("--max-sessions", type=int, default=256, help="sessions held at once (then 429)")
    parser.add_argument("--session-ttl", type=float, default=600.0, help="seconds before an idle session expires")
    parser.add_argument("--finished-grace", type=float, default=60.0,
                        help="seconds a finished session stays readable (GET /sessions/{sid}) before it is released")
    parser.add_argument("--max-held-tokens", type=int, default=8_000_000,
                        help="tokens all held sessions together may hold (then a call is 429)")
    parser.add_argument("--max-batch", type=int, default=1, help="concurrent calls sampled together (default 1)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


def run(args: argparse.Namespace) -> int:
    import os

    from agentgym_envs.cli.check import require_makeable
    from agentgym_envs.cli.errors import require_free_port, require_model_dir, require_protocol
    from agentgym_envs.core.httpd import BindRefused, check_bind_address

    from ..serve.gateway import GatewayLimits, GatewayServer
    from ..serve.gateway.assemble import session_record
    from . import quiet_transformers

    api_key = os.environ.get(args.api_key_env) if args.api_key_env else None
    try:
        if args.api_key_env and not api_key:
            raise BindRefused(f"--api-key-env names {args.api_key_env}, which is not set (or empty); export it first")
        check_bind_address(args.host, what="gateway", allow_remote=args.allow_remote, api_key=api_key)
    except BindRefused as e:
        print(f"agentgym gateway: {e}", file=sys.stderr)
        return 2
    # Every mistake a person can make is caught here, before the model loads (seconds to minutes).
    if args.hf:
        require_model_dir(args.hf, "--hf")
    if args.env:
        require_makeable(args.env)
        require_protocol(args.protocol, also=("auto",))
    require_free_port(args.host, args.port)
    quiet_transformers()
    policy = _policy(args)
    envs = None
    if args.env:
        from ..collect.episodes import PlaySpec
        from ..serve.gateway.envs import EnvDriver

        envs = EnvDriver(PlaySpec(args.env, protocol=args.protocol, max_turns=args.max_turns))
    lock, server_ref = threading.Lock(), []

    def export(session) -> None:  # each finished session: one JSON line, then forgotten (bounded memory)
        if args.out:
            with lock, open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(session_record(session), allow_nan=False) + "\n")
            server_ref[0].release(session.sid)

    limits = GatewayLimits(max_sessions=args.max_sessions, session_ttl_s=args.session_ttl,
                           finished_grace_s=args.finished_grace, max_held_tokens=args.max_held_tokens)
    try:
        server = GatewayServer(policy, model_name=args.model_name, host=args.host, port=args.port, api_key=api_key,
                               allow_remote=args.allow_remote, limits=limits, envs=envs, on_finish=export,
                               max_batch=args.max_batch)
    except (BindRefused, OSError) as e:
        print(f"agentgym gateway: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 2
    server_ref.append(server)
    print(f"gateway at {server.url} (POST /sessions; the OpenAI API under /sessions/{{sid}}/v1)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _policy(args: argparse.Namespace):
    """The token policy the flags name: the tiny policy or a local Hugging Face directory."""
    import torch

    from ..models.backends.hf import HFPolicy

    torch.set_num_threads(args.threads)
    if args.tiny:
        from ..models.tiny import build_tiny

        return HFPolicy(*build_tiny())
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return HFPolicy(AutoModelForCausalLM.from_pretrained(args.hf, dtype=torch.float32), AutoTokenizer.from_pretrained(args.hf))
