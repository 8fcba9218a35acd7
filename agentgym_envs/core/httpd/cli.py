"""The command-line flags every server shares (``--host``, ``--port``, ``--allow-remote``, ``--api-key-env``),
spelled and checked the same way for the shop, the search service and ``trainer.serve.policy_server``."""

from __future__ import annotations

import argparse
import os

from .limits import BindRefused, check_bind_address


def add_bind_arguments(parser: argparse.ArgumentParser, *, port: int = 8000) -> None:
    """Add the shared flags to ``parser``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other "
                        "needs --allow-remote and --api-key-env)")
    parser.add_argument("--port", type=int, default=port, help="0 lets the OS choose (printed on start)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow a non-loopback --host (an API key is then required)")
    parser.add_argument("--api-key-env", default=None, metavar="VAR",
                        help="require 'Authorization: Bearer <key>' with the key held in this environment variable")


def bind_settings(parser: argparse.ArgumentParser, args: argparse.Namespace, *, what: str) -> str | None:
    """The API key the flags ask for, after checking the bind address; a bad combination exits with usage."""
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            parser.error(f"--api-key-env names {args.api_key_env}, which is not set (or empty); export it first")
    try:
        check_bind_address(args.host, what=what, allow_remote=args.allow_remote, api_key=api_key)
    except BindRefused as e:
        parser.error(str(e))
    return api_key
