"""Import Terminal-Bench and Harbor task directories as :class:`TerminalTask` objects.

Terminal-Bench: ``task.yaml`` (instruction, difficulty, category, timeouts), ``Dockerfile``, ``tests/``,
``run-tests.sh`` (pytest with ``-rA``; scored by the fraction of PASSED tests) and ``solution.sh``.
Harbor: ``task.toml``, ``instruction.md``, ``environment/Dockerfile``, ``tests/test.sh`` (writes a reward
to ``/logs/verifier/reward.txt`` or ``reward.json``) and ``solution/solve.sh``.

A task's Dockerfile decides where it can run. One that only starts ``FROM`` our base image and uses
``WORKDIR``/``COPY``/``ENV`` (plus inert ``LABEL``/``CMD``/``EXPOSE``) is emulated on any backend: the
copied files are written into the sandbox. Anything else (``RUN``, another base image, ...) needs its own
image, built locally with Docker; on other backends, or when the build fails (no registry is reachable
for a foreign ``FROM``), the task is refused with the reason.
"""

from __future__ import annotations

import posixpath
import shlex
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandboxes import SandboxUnavailable
from sandboxes.image import BASE_IMAGE

from .task import DIFFICULTIES, TASK_ENV, ImageSpec, PytestSummary, RewardFile, TerminalTask, Verifier

BASE_NAMES = {BASE_IMAGE, BASE_IMAGE.split(":")[0], BASE_IMAGE.split(":")[0] + ":latest"}
INERT = {"LABEL", "CMD", "ENTRYPOINT", "EXPOSE", "MAINTAINER", "SHELL", "STOPSIGNAL", "HEALTHCHECK"}
VERIFY_DIRS = ("/tests", "/logs", "/solution")


class TaskRefused(ValueError):
    """A task cannot run on the chosen backend here; the message says why and what would make it run."""


def load_task_dir(path: str | Path) -> TerminalTask:
    """One task directory, in Terminal-Bench (``task.yaml``) or Harbor (``task.toml``) format."""
    path = Path(path)
    if (path / "task.yaml").is_file():
        return load_terminal_bench(path)
    if (path / "task.toml").is_file():
        return load_harbor(path)
    raise ValueError(f"{path} is neither a Terminal-Bench task (task.yaml) nor a Harbor task (task.toml)")


def load_task_dirs(root: str | Path) -> list[TerminalTask]:
    """Every task directory directly under ``root`` (sorted by name, so task indices are stable)."""
    tasks = [p for p in sorted(Path(root).iterdir()) if (p / "task.yaml").is_file() or (p / "task.toml").is_file()]
    return [load_task_dir(p) for p in tasks]


def load_terminal_bench(path: str | Path) -> TerminalTask:
    try:
        import yaml
    except ImportError as e:
        raise ImportError("reading Terminal-Bench task.yaml needs PyYAML: pip install pyyaml") from e
    path = Path(path)
    meta = yaml.safe_load((path / "task.yaml").read_text()) or {}
    tests = _tree(path / "tests", "/tests") + [("/tests/run-tests.sh", (path / "run-tests.sh").read_bytes())]
    solution = (path / "solution.sh").read_bytes() if (path / "solution.sh").is_file() else b""
    return _task(
        path, source="terminal-bench", instruction=str(meta.get("instruction", "")), meta=meta,
        dockerfile=path / "Dockerfile", verifier=PytestSummary(tuple(tests)),
        solution_files=[("/solution/solution.sh", solution)] if solution else [], entry="/solution/solution.sh",
        timeout=float(meta.get("max_test_timeout_sec", 60)),
    )


def load_harbor(path: str | Path) -> TerminalTask:
    path = Path(path)
    meta = tomllib.loads((path / "task.toml").read_text())
    metadata = meta.get("metadata", {})
    return _task(
        path, source="harbor", instruction=(path / "instruction.md").read_text(), meta=metadata,
        dockerfile=path / "environment" / "Dockerfile", verifier=RewardFile(tuple(_tree(path / "tests", "/tests"))),
        solution_files=_tree(path / "solution", "/solution"), entry="/solution/solve.sh",
        timeout=float(meta.get("verifier", {}).get("timeout_sec", 60)),
    )


def usable_tasks(
    tasks: Sequence[TerminalTask], backend: str, *, skip_unavailable: bool,
) -> tuple[list[TerminalTask], list[tuple[str, str]]]:
    """Split tasks into those that can run on ``backend`` and ``(id, reason)`` for the rest.

    Images are built here (once, cached by content), so a refusal comes at construction, not mid-run.
    """
    usable, refused = [], []
    for task in tasks:
        reason = _refusal(task, backend)
        if reason is None:
            usable.append(task)
        elif skip_unavailable:
            refused.append((task.id, reason))
        else:
            raise TaskRefused(f"task {task.id} cannot run on the {backend} backend: {reason} "
                              "(pass skip_unavailable=True to run the others)")
    return usable, refused


def _refusal(task: TerminalTask, backend: str) -> str | None:
    if task.image is None:
        return None
    if backend != "docker":
        return (f"it needs its own image (its {task.image.dockerfile} {task.image.reason or 'cannot be emulated'}), "
                "which only the docker backend can build")
    from sandboxes.image import build_image

    try:
        build_image(task.image.context, name=task.id, dockerfile=task.image.dockerfile)
    except SandboxUnavailable as e:
        return str(e)
    return None


# ----------------------------------------------------------------------------- helpers
def _task(
    path: Path, *, source: str, instruction: str, meta: dict[str, Any], dockerfile: Path, verifier: Verifier,
    solution_files: list[tuple[str, bytes]], entry: str, timeout: float,
) -> TerminalTask:
    """The TerminalTask for a task directory, its Dockerfile either emulated (files) or kept for a build."""
    plan = _plan_dockerfile(dockerfile)
    difficulty = str(meta.get("difficulty", "medium")).lower()
    common: dict[str, Any] = {
        "id": f"{source}/{path.name}", "instruction": instruction.strip(),
        "category": str(meta.get("category", source)),
        "difficulty": difficulty if difficulty in DIFFICULTIES else "medium", "verifier": verifier,
        "solution": (_solution_command(solution_files, entry, plan.workdir),) if solution_files else (),
        "timeout_s": timeout, "source": source,
    }
    if plan.build_reason is not None:
        image = ImageSpec(dockerfile.parent, dockerfile.name, plan.build_reason)
        return TerminalTask(**common, workdir=plan.workdir, env={**TASK_ENV, **plan.env}, image=image)
    roots = {"/" + p.strip("/").split("/")[0] for p, _ in plan.files} | {"/" + plan.workdir.strip("/").split("/")[0]}
    writable = tuple(sorted(roots - {"/work", "/tmp", "/home"})) + VERIFY_DIRS
    return TerminalTask(**common, files=dict(plan.files), workdir=plan.workdir, env={**TASK_ENV, **plan.env},
                        writable=tuple(dict.fromkeys(writable)))


class _Plan:
    def __init__(self) -> None:
        self.files: list[tuple[str, bytes]] = []
        self.workdir, self.env, self.build_reason = "/app", {}, None


def _plan_dockerfile(dockerfile: Path) -> _Plan:
    """Emulate a plain Dockerfile as files + workdir + env; otherwise say why it needs a real build."""
    plan = _Plan()
    if not dockerfile.is_file():
        plan.workdir = "/work"
        return plan
    for instruction, args in _instructions(dockerfile.read_text()):
        if instruction == "FROM":
            if args.split()[0] not in BASE_NAMES:
                plan.build_reason = f"starts FROM {args.split()[0]}, not {BASE_IMAGE}"
        elif instruction == "WORKDIR":
            plan.workdir = _join(plan.workdir, args.strip())
        elif instruction == "ENV":
            plan.env.update(_env_pairs(args))
        elif instruction == "COPY" and not args.startswith("--from"):
            plan.files += _copy(dockerfile.parent, args, plan.workdir)
        elif instruction not in INERT:
            plan.build_reason = plan.build_reason or f"uses {instruction}"
    if any(p.startswith(("/usr", "/etc", "/bin", "/lib", "/var", "/opt")) for p, _ in plan.files):
        plan.build_reason = plan.build_reason or "copies files into system directories"
    return plan


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = text.replace("\\\n", " ")
    lines = [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def _env_pairs(args: str) -> dict[str, str]:
    words = shlex.split(args)
    if words and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    return dict(word.split("=", 1) for word in words if "=" in word)


def _copy(context: Path, args: str, workdir: str) -> list[tuple[str, bytes]]:
    """COPY's files (Docker's rules: a directory source copies its contents), read from the build context only."""
    words = [w for w in shlex.split(args) if not w.startswith("--")]
    *sources, destination = words
    into_dir = destination.endswith("/") or len(sources) > 1
    destination = _join(workdir, destination)
    copied = []
    for pattern in sources:
        matches = sorted(context.glob(pattern)) if any(c in pattern for c in "*?[") else [context / pattern]
        for source in matches:
            if not source.resolve().is_relative_to(context.resolve()):
                raise ValueError(f"{context}: COPY {pattern} reaches outside the build context")
            if source.is_dir():
                copied += _tree(source, destination)
            else:
                target = f"{destination.rstrip('/')}/{source.name}" if into_dir else destination
                copied.append((target, source.read_bytes()))
    return copied


def _tree(directory: Path, destination: str) -> list[tuple[str, bytes]]:
    if not directory.is_dir():
        return []
    return [(f"{destination.rstrip('/')}/{p.relative_to(directory)}", p.read_bytes())
            for p in sorted(directory.rglob("*")) if p.is_file()]


def _join(base: str, path: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else f"{base.rstrip('/')}/{path}")


def _solution_command(files: list[tuple[str, bytes]], entry: str, workdir: str) -> str:
    """One shell command that writes the reference solution's files and runs its entry script."""
    parts = []
    for path, data in files:
        directory = path.rsplit("/", 1)[0]
        marker = "AGENTGYM_SOLUTION_EOF"
        try:
            text = data.decode()
        except UnicodeDecodeError:
            text = None
        if text is not None and marker not in text:
            body = text if text.endswith("\n") else text + "\n"
            parts.append(f"mkdir -p {directory} && cat > {path} <<'{marker}'\n{body}{marker}")
        else:
            import base64

            encoded = base64.b64encode(data).decode()
            parts.append(f"mkdir -p {directory} && printf '%s' {encoded} | base64 -d > {path}")
    parts.append(f"cd {shlex.quote(workdir)} && bash {entry}")
    return "\n".join(parts)
