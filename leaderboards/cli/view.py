"""``agentgym view``: stored episodes turn by turn, as one static HTML file or served on loopback."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stores", nargs="*", metavar="STORE",
                        help="results stores to show (default: the user's store)")
    parser.add_argument("--out", metavar="FILE", default=None,
                        help="write one self-contained HTML file (every episode's turns embedded) and exit")
    parser.add_argument("--starts", action="store_true",
                        help="with --out: also replay the starts a store from before starts were kept lacks (from "
                             "each seed, where allowed; slow); stored starts are always embedded, and served pages "
                             "always show them when opened")
    parser.add_argument("--port", type=int, default=8765,
                        help="serve on http://127.0.0.1:PORT/ (default 8765; 0 picks a free port)")
    parser.add_argument("--max-chars", type=_positive, default=None, metavar="N",
                        help="cut each text field at N characters (default 20000 in a file, 200000 served)")


def _positive(text: str) -> int:
    value = int(text) if text.strip().lstrip("-").isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of characters >= 1, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from ..errors import LeaderboardError
    from ..store import default_store_path

    stores = args.stores or [default_store_path()]
    try:
        if args.out:
            return _write(stores, args)
        return _serve(stores, args)
    except LeaderboardError as e:
        print(f"agentgym view: error: {e}", file=sys.stderr)
        return 2


def _write(stores: list, args: argparse.Namespace) -> int:
    from ..viewer import MAX_CHARS, write_viewer

    path, index = write_viewer(stores, args.out, max_chars=args.max_chars or MAX_CHARS, starts=args.starts)
    for reason, n in sorted(index.unreplayed.items()):
        print(f"agentgym view: {n} episode start(s) not shown (not replayed): {reason}", file=sys.stderr)
    print(f"wrote {path} ({len(index.rows)} episodes of {len(index.runs)} runs); open it in a browser")
    return 0


def _serve(stores: list, args: argparse.Namespace) -> int:
    from ..viewer import SERVED_MAX_CHARS
    from ..viewer_server import ViewerServer

    try:
        server = ViewerServer(stores, port=args.port, max_chars=args.max_chars or SERVED_MAX_CHARS)
    except OSError as e:
        print(f"agentgym view: error: cannot listen on 127.0.0.1:{args.port} ({e}); pass --port N or --port 0",
              file=sys.stderr)
        return 2
    print(f"serving {len(server.index.rows)} episodes on {server.url} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0
