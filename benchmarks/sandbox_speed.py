"""Sandbox speed per backend: live-shell round trip, one-off command, fresh start, reset, Python runner call.

What is measured (medians; the start and reset figures also show the minimum):

* **round trip** — one command (``true``, then ``echo`` with a little output) through an episode's live
  shell session: what a terminal-env step costs beyond the command itself. Target ≤ 5 ms on both.
* **run** — a one-off ``run("true")`` (a new process under the supervisor, no session).
* **start** — a fresh sandbox, from nothing to its supervisor answering. Targets: ≤ 20 ms bwrap, ≤ 1 s Docker.
* **reset** — back to pristine after an episode's worth of files and a live shell.
* **runner call** — one JSON-lines call into untrusted Python through :class:`sandboxes.PythonRunner`.

    python benchmarks/sandbox_speed.py [--backends bwrap docker] [--commands 500] [--starts 20]

Needs the backends set up (``sudo bash scripts/setup_sandboxes.sh``); a backend that cannot run is
reported with the reason and skipped.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import sandboxes

TARGETS_MS = {("bwrap", "start"): 20.0, ("docker", "start"): 1000.0, ("bwrap", "round trip"): 5.0,
              ("docker", "round trip"): 5.0}


def samples(fn: Callable[[], object], count: int, warmup: int = 3) -> list[float]:
    """Wall-clock seconds of ``count`` calls of ``fn`` (after a few unmeasured warm-up calls)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(count):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def start_times(backend: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        box = sandboxes.make(backend)
        times.append(time.perf_counter() - start)
        box.close()
    return times


def measure(backend: str, commands: int, starts: int) -> dict[str, list[float]]:
    results = {"start": start_times(backend, starts)}
    with sandboxes.make(backend) as box:
        shell = box.open_shell()
        results["round trip"] = samples(lambda: shell.run("true", timeout=10), commands)
        results["round trip (echo)"] = samples(lambda: shell.run("echo hello world", timeout=10), commands)
        results["run"] = samples(lambda: box.run("true", timeout=10), max(commands // 5, 20))
        runner = sandboxes.PythonRunner(box, "def step(action):\n    return {'observation': action[::-1]}\n")
        results["runner call"] = samples(lambda: runner.call("step", "look around"), max(commands // 5, 20))

        def dirty_then_reset() -> None:
            box.write_file("notes.txt", b"x" * 10_000)
            box.open_shell().run("mkdir -p a/b && touch a/b/c && sleep 100 &", timeout=10)
            start = time.perf_counter()
            box.reset()
            reset_times.append(time.perf_counter() - start)

        reset_times: list[float] = []
        samples(dirty_then_reset, starts, warmup=1)
        results["reset"] = reset_times[1:]
    return results


def report(backend: str, results: dict[str, list[float]]) -> None:
    print(f"\n{backend}")
    for name, times in results.items():
        median_ms, min_ms = statistics.median(times) * 1e3, min(times) * 1e3
        target = TARGETS_MS.get((backend, name))
        verdict = "" if target is None else f"  target ≤ {target:g} ms: {'met' if median_ms <= target else 'MISSED'}"
        print(f"  {name:18} median {median_ms:8.2f} ms   min {min_ms:8.2f} ms   (n={len(times)}){verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=list(sandboxes.REAL_BACKENDS), choices=sandboxes.BACKENDS)
    parser.add_argument("--commands", type=int, default=500, help="shell round trips to time")
    parser.add_argument("--starts", type=int, default=20, help="fresh starts and resets to time")
    args = parser.parse_args()
    for backend in args.backends:
        problem = sandboxes.unavailable_reason(backend)
        if problem:
            print(f"\n{backend}: skipped ({problem})")
            continue
        report(backend, measure(backend, args.commands, args.starts))


if __name__ == "__main__":
    main()
