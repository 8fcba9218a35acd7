"""Import Terminal-Bench and Harbor task directories as :class:`TerminalTask` objects.

Terminal-Bench: ``task.yaml`` (instruction, difficulty, category, timeouts), ``Dockerfile``, ``tests/``,
``run-tests.sh`` (runs pytest; scored from pytest's JUnit report) and ``solution.sh``.
Harbor: ``task.toml``, ``instruction.md``, ``environment/Dockerfile``, ``tests/test.sh`` (writes a reward
to ``/logs/verifier/reward.json`` or ``reward.txt``) and ``solution/solve.sh``. A task without its test
script is refused with the reason.

The Dockerfile is emulated on every backend when it can be: ``FROM`` our base image, or a foreign base
this module maps onto it (``python:*``, ``ubuntu:*``, ``debian:*``, ``buildpack-deps:*``, Terminal-Bench's
``ghcr.io/laude-institute/t-bench/*``); ``ARG``/``ENV`` (values expand ``$VAR``/``${VAR}``), ``WORKDIR``,
``COPY``/``ADD`` of local files (written into the sandbox), and ``RUN`` steps rewritten by the offline
rules of :mod:`.offline` and run when the task is installed. What cannot be emulated (another base image,
a multi-stage build, files copied into system directories, ``ADD`` of a URL) needs a real image build,
which only the docker backend does; elsewhere, or when the build fails, the task is refused with the
reason. Every rule applied is recorded in ``TerminalTask.notes``; docs/terminal.md has the full list.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandboxes import SandboxError, SandboxUnavailable
from sandboxes.image import BASE_IMAGE
from sandboxes.supervised import BASE_ENV

from .offline import rewrite_line, rewrite_script
from .task import DIFFICULTIES, TASK_ENV, ImageSpec, PrebuildSpec, TerminalTask, Verifier
from .verifiers import PytestSummary, RewardFile

BASE_NAMES = {BASE_IMAGE, BASE_IMAGE.split(":")[0], BASE_IMAGE.split(":")[0] + ":latest"}
#: Foreign base images emulated by ours (a Debian 12 userland; see ROOTFS_PACKAGES for its toolset).
MAPPED_BASES = re.compile(r"^(docker\.io/)?(library/)?(python|ubuntu|debian|buildpack-deps)(:|@|$)"
                          r"|^ghcr\.io/laude-institute/t-bench/")
INERT = {"LABEL", "CMD", "ENTRYPOINT", "EXPOSE", "MAINTAINER", "SHELL", "STOPSIGNAL", "HEALTHCHECK", "VOLUME"}
VERIFY_DIRS = ("/tests", "/logs", "/solution")
SYSTEM_ROOTS = {"usr", "etc", "bin", "sbin", "lib", "lib64", "var", "opt"}
"""Top-level directories of the image itself: files copied there need a real build."""
KERNEL_ROOTS = SYSTEM_ROOTS | {"proc", "sys", "dev", "boot", "run", "root", "mnt", "media"}
#: System directories RUN steps may write, each built once per task (``/usr/bin`` or ``/usr/lib`` are too big to copy).
_SYSTEM_PATH = re.compile(r"(?<![\w.$}/-])/(opt|etc|srv|home(?!/agent\b)|usr/local|var/[\w.-]+)(?=[/\s\"';&|)]|$)")
_VARIABLE = re.compile(r"\\\$|\$\{(\w+)(?::?([-+])([^}]*))?\}|\$(\w+)")


class TaskRefused(ValueError):
    """A task cannot run (here, or at all); the message says why and what would make it run."""


def load_task_dir(path: str | Path) -> TerminalTask:
    """One task directory, in Terminal-Bench (``task.yaml``) or Harbor (``task.toml``) format."""
    path = Path(path)
    if (path / "task.yaml").is_file():
        return load_terminal_bench(path)
    if (path / "task.toml").is_file():
        return load_harbor(path)
    raise ValueError(f"{path} is neither a Terminal-Bench task (task.yaml) nor a Harbor task (task.toml)")


def load_task_dirs(root: str | Path, refused: list[tuple[str, str]] | None = None) -> list[TerminalTask]:
    """Every task directory under ``root`` (sorted by name, so task indices are stable), at any depth.

    A refused task raises :class:`TaskRefused`, unless ``refused`` is a list: then ``(directory, reason)``
    is appended to it and the others load. When every task is refused, the error lists each reason.
    """
    dirs = sorted({p.parent for name in ("task.yaml", "task.toml") for p in Path(root).rglob(name)})
    tasks, reasons = [], []
    for directory in dirs:
        try:
            tasks.append(load_task_dir(directory))
        except TaskRefused as e:
            if refused is None:
                raise
            reasons.append((str(directory.relative_to(root)), str(e)))
    if refused is not None:
        refused += reasons
    if reasons and not tasks:
        raise TaskRefused(f"every task under {root} was refused:\n" + "\n".join(f"  {d}: {r}" for d, r in reasons))
    return tasks


def load_terminal_bench(path: str | Path) -> TerminalTask:
    try:
        import yaml
    except ImportError as e:
        raise ImportError("reading Terminal-Bench task.yaml needs PyYAML: pip install pyyaml") from e
    path = Path(path)
    if not (path / "run-tests.sh").is_file():
        raise TaskRefused(f"{path.name}: a Terminal-Bench task needs run-tests.sh (its test script), found none")
    meta = yaml.safe_load((path / "task.yaml").read_text()) or {}
    notes: list[str] = []
    script = rewrite_script((path / "run-tests.sh").read_text(), notes)
    tests = _tree(path / "tests", "/tests") + [("/tests/run-tests.sh", script.encode())]
    solution = (path / "solution.sh").read_bytes() if (path / "solution.sh").is_file() else b""
    return _task(
        path, source="terminal-bench", instruction=str(meta.get("instruction", "")), meta=meta, notes=notes,
        dockerfile=path / "Dockerfile", verifier=PytestSummary(tuple(tests)), extra_env={},
        solution_files=[("/solution/solution.sh", solution)] if solution else [], entry="/solution/solution.sh",
        timeout=float(meta.get("max_test_timeout_sec", 120)),
    )


def load_harbor(path: str | Path) -> TerminalTask:
    path = Path(path)
    if not (path / "tests" / "test.sh").is_file():
        raise TaskRefused(f"{path.name}: a Harbor task needs tests/test.sh (its verifier), found none")
    meta = tomllib.loads((path / "task.toml").read_text())
    notes: list[str] = []
    tests = [(p, rewrite_script(d.decode(), notes).encode() if p == "/tests/test.sh" else d)
             for p, d in _tree(path / "tests", "/tests")]
    environment = meta.get("environment", {})
    return _task(
        path, source="harbor", instruction=(path / "instruction.md").read_text(), meta=meta.get("metadata", {}),
        dockerfile=path / "environment" / "Dockerfile", verifier=RewardFile(tuple(tests)), notes=notes,
        solution_files=_tree(path / "solution", "/solution"), entry="/solution/solve.sh",
        timeout=float(meta.get("verifier", {}).get("timeout_sec", 120)),
        extra_env={str(k): str(v) for k, v in environment.get("env", {}).items()},
    )


def usable_tasks(
    tasks: Sequence[TerminalTask], backend: str, *, skip_unavailable: bool,
) -> tuple[list[TerminalTask], list[tuple[str, str]]]:
    """Split tasks into those that can run on ``backend`` and ``(id, reason)`` for the rest.

    Images are built here (once, cached by content), so a refusal comes at construction, not mid-run;
    when every task is refused, the error lists each reason.
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
    if refused and not usable:
        lines = "\n".join(f"  {task_id}: {reason}" for task_id, reason in refused)
        raise TaskRefused(f"none of the {len(refused)} tasks can run on the {backend} backend:\n{lines}")
    return usable, refused


def _refusal(task: TerminalTask, backend: str) -> str | None:
    if task.image is None and task.prebuild is not None:
        from .prebuilt import prepare

        try:
            prepare(task, backend)
        except SandboxError as e:  # a failed build (or no engine): refused with the reason
            return str(e)
        return None
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


# ----------------------------------------------------------------------------- task assembly
def _task(
    path: Path, *, source: str, instruction: str, meta: dict[str, Any], dockerfile: Path, verifier: Verifier,
    solution_files: list[tuple[str, bytes]], entry: str, timeout: float, notes: list[str],
    extra_env: dict[str, str],
) -> TerminalTask:
    """The TerminalTask for a task directory, its Dockerfile either emulated (files) or kept for a build."""
    plan = plan_dockerfile(dockerfile)
    difficulty = str(meta.get("difficulty", "medium")).lower()
    common: dict[str, Any] = {
        "id": f"{source}/{path.name}", "instruction": instruction.strip(),
        "category": str(meta.get("category", source)),
        "difficulty": difficulty if difficulty in DIFFICULTIES else "medium", "verifier": verifier,
        "solution": (_solution_command(solution_files, entry, plan.workdir),) if solution_files else (),
        "timeout_s": timeout, "source": source, "workdir": plan.workdir,
        "env": {**TASK_ENV, **plan.env, **extra_env}, "notes": tuple(plan.notes + notes),
    }
    if plan.build_reason is not None:
        note = f"needs its own image ({plan.build_reason}): docker only, run as root on a writable root"
        common["notes"] = (*common["notes"], note)
        return TerminalTask(**common, image=ImageSpec(dockerfile.parent, dockerfile.name, plan.build_reason))
    if plan.system_dirs:
        dirs = tuple(sorted(plan.system_dirs))
        common["prebuild"] = PrebuildSpec(dockerfile.parent, "\n".join(plan.lines) + "\n", dirs)
        common["notes"] += (f"RUN steps write {', '.join(dirs)}: built once per content (docker: the Dockerfile, "
                            "offline, as an image; bwrap: a per-task copy of those directories, bound read-only)",)
    roots = {"/" + p.strip("/").split("/")[0] for p, _ in plan.files} | {"/" + plan.workdir.strip("/").split("/")[0]}
    roots |= plan.run_roots
    writable = tuple(sorted(roots - {"/work", "/tmp", "/home", "/"})) + VERIFY_DIRS
    return TerminalTask(**common, files=dict(plan.files), setup="\n".join(plan.setup),
                        writable=tuple(dict.fromkeys(writable)))


@dataclass
class DockerfilePlan:
    """A Dockerfile emulated as files + setup commands + workdir + env, or the reason it needs a build."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    """The rewritten ``RUN`` steps, each ``cd WORKDIR && /bin/sh -c STEP`` (Docker runs RUN with sh)."""
    workdir: str = "/app"
    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    run_roots: set[str] = field(default_factory=set)
    """Top-level directories the RUN steps name (``/oracle``): made writable, as in a built image."""
    build_reason: str | None = None
    stages: int = 0
    lines: list[str] = field(default_factory=list)
    """The Dockerfile rewritten for offline use (``FROM`` our base, ``RUN`` through the offline rules)."""
    system_dirs: set[str] = field(default_factory=set)
    """System directories the RUN steps name (``/opt``, ``/usr/local``): see :class:`PrebuildSpec`."""

    def need_build(self, reason: str) -> None:
        self.build_reason = self.build_reason or reason


def plan_dockerfile(dockerfile: Path) -> DockerfilePlan:
    """Emulate a Dockerfile as files + setup + workdir + env; otherwise say why it needs a real build."""
    plan = DockerfilePlan()
    if not dockerfile.is_file():
        plan.workdir = "/work"
        return plan
    for instruction, args in _instructions(dockerfile.read_text()):
        handler = _HANDLERS.get(instruction)
        if handler is not None:
            handler(plan, args, dockerfile.parent)
            if instruction in ("ARG", "COPY", "ADD"):
                plan.lines.append(f"{instruction} {args}")
        elif instruction == "USER":
            _add_note(plan.notes, f"USER {args.strip()} ignored: commands run as the sandbox's user")
        elif instruction not in INERT:
            plan.need_build(f"uses {instruction}")
    if any(p.split("/")[1] in SYSTEM_ROOTS for p, _ in plan.files):
        plan.need_build("copies files into system directories")
    return plan


def _from(plan: DockerfilePlan, args: str, context: Path) -> None:
    words = [w for w in args.split() if not w.startswith("--")]
    image = _expand(words[0], plan.args) if words else ""
    plan.stages += 1
    plan.lines += [f"FROM {BASE_IMAGE}"] if plan.stages == 1 else []
    if plan.stages > 1:
        plan.need_build("is a multi-stage build")
    elif image in BASE_NAMES:
        return
    elif MAPPED_BASES.match(image):
        _add_note(plan.notes, f"FROM {image} mapped to {BASE_IMAGE} (Debian 12 with Python 3.11; see docs/terminal.md)")
    else:
        plan.need_build(f"starts FROM {image}, not {BASE_IMAGE} or an image mapped onto it")


def _arg(plan: DockerfilePlan, args: str, context: Path) -> None:
    name, _, default = args.strip().partition("=")
    plan.args.setdefault(name.strip(), _expand(default.strip().strip("\"'"), {**BASE_ENV, **plan.env, **plan.args}))


def _env(plan: DockerfilePlan, args: str, context: Path) -> None:
    scope = {**BASE_ENV, **plan.args, **plan.env}
    for name, value in _env_pairs(args.replace("\\$", "\0")).items():  # an escaped \$ stays a literal $
        plan.env[name] = scope[name] = _expand(value, scope).replace("\0", "$")
        quoted = plan.env[name].replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        plan.lines.append(f'ENV {name}="{quoted}"')


def _workdir(plan: DockerfilePlan, args: str, context: Path) -> None:
    plan.workdir = _join(plan.workdir, _expand(args.strip().strip("\"'"), {**BASE_ENV, **plan.args, **plan.env}))
    plan.lines.append(f"WORKDIR {plan.workdir}")


def _copy(plan: DockerfilePlan, args: str, context: Path) -> None:
    if args.startswith("--from"):
        plan.need_build("copies from another build stage")
        return
    words = [_expand(w, {**plan.args, **plan.env}) for w in _words(args) if not w.startswith("--")]
    if any(re.match(r"^[a-z]+://", w) for w in words):
        plan.need_build("ADDs a URL")
        return
    plan.files += _copy_files(context, words, plan.workdir)


def _run(plan: DockerfilePlan, args: str, context: Path) -> None:
    command = shlex.join(_json_words(args)) if args.lstrip().startswith("[") else args.strip()
    rewritten = rewrite_line(command, plan.notes)
    if re.fullmatch(r"\s*true(\s*(&&|\|\||;)\s*true)*\s*", rewritten):
        return
    plan.setup.append(f"cd {shlex.quote(plan.workdir)} && /bin/sh -c {shlex.quote(rewritten)}")
    plan.lines.append(f"RUN {rewritten}")
    expanded = _expand(rewritten, {**BASE_ENV, **plan.args, **plan.env})
    plan.system_dirs |= {"/" + "/".join(m.split("/")[:2] if m.startswith(("usr/", "var/")) else [m])
                         for m in _SYSTEM_PATH.findall(expanded)}
    for top in re.findall(r"(?<![\w.$}/-])/([A-Za-z0-9_][\w.-]*)", rewritten):
        if top not in KERNEL_ROOTS:
            plan.run_roots.add(f"/{top}")


_HANDLERS = {"FROM": _from, "ARG": _arg, "ENV": _env, "WORKDIR": _workdir, "COPY": _copy, "ADD": _copy, "RUN": _run}


# ----------------------------------------------------------------------------- parsing helpers
def _instructions(text: str) -> list[tuple[str, str]]:
    lines = [line for line in text.splitlines() if not line.strip().startswith("#")]
    joined = re.sub(r"\\[ \t]*\n", " ", "\n".join(lines))
    words = [line.strip() for line in joined.splitlines() if line.strip()]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else "")
            for line in words]


def _expand(value: str, scope: dict[str, str]) -> str:
    """Docker's variable substitution: ``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``${VAR:+alt}``, ``\\$``."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "\\$":
            return "$"
        name = match.group(1) or match.group(4)
        current = scope.get(name, "")
        if match.group(2) == "-":
            return current or match.group(3)
        if match.group(2) == "+":
            return match.group(3) if current else ""
        return current

    return _VARIABLE.sub(substitute, value)


def _env_pairs(args: str) -> dict[str, str]:
    words = _words(args)
    if words and "=" not in words[0]:
        return {words[0]: args.strip().split(None, 1)[1] if len(args.split()) > 1 else ""}
    return dict(word.split("=", 1) for word in words if "=" in word)


def _words(args: str) -> list[str]:
    """Shell-like words, keeping ``$`` references for :func:`_expand` (shlex would keep them too)."""
    try:
        return shlex.split(args, posix=True)
    except ValueError as e:
        raise ValueError(f"cannot parse Dockerfile arguments {args!r:.80}: {e}") from e


def _json_words(args: str) -> list[str]:
    import json

    value = json.loads(args)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a JSON list of strings, got {args!r:.80}")
    return value


def _copy_files(context: Path, words: list[str], workdir: str) -> list[tuple[str, bytes]]:
    """COPY's files (Docker's rules: a directory source copies its contents), read from the build context only."""
    *sources, destination = words
    into_dir = destination.endswith("/") or len(sources) > 1
    destination = _join(workdir, destination)
    copied = []
    for pattern in sources:
        matches = sorted(context.glob(pattern.lstrip("/"))) if any(c in pattern for c in "*?[") else [context / pattern]
        for source in matches:
            if not source.resolve().is_relative_to(context.resolve()):
                raise ValueError(f"{context}: COPY {pattern} reaches outside the build context")
            if source.is_dir():
                copied += _tree(source, destination)
            elif source.is_file():
                target = f"{destination.rstrip('/')}/{source.name}" if into_dir else destination
                copied.append((target, source.read_bytes()))
            else:
                raise ValueError(f"{context}: COPY {pattern}: no such file in the build context")
    return copied


def _tree(directory: Path, destination: str) -> list[tuple[str, bytes]]:
    if not directory.is_dir():
        return []
    return [(f"{destination.rstrip('/')}/{p.relative_to(directory)}", p.read_bytes())
            for p in sorted(directory.rglob("*")) if p.is_file()]


def _join(base: str, path: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else f"{base.rstrip('/')}/{path}")


def _add_note(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def _solution_command(files: list[tuple[str, bytes]], entry: str, workdir: str) -> str:
    """One shell command that writes the reference solution's files and runs its entry script."""
    import base64

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
            encoded = base64.b64encode(data).decode()
            parts.append(f"mkdir -p {directory} && printf '%s' {encoded} | base64 -d > {path}")
    parts.append(f"cd {shlex.quote(workdir)} && bash {entry}")
    return "\n".join(parts)
