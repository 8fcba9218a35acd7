"""``agentgym skills``: skill-learning commands (:mod:`meta_envs.skills`).

    agentgym skills eval --families household,webshop,search --tasks 100 --seed 0 --json skills_eval.json

``eval`` runs the three conditions of :mod:`meta_envs.skills.evaluate` (no skills, curated, self-generated)
per family on the same held-out tasks and prints the Markdown table (success with Wilson 95% intervals,
mean return, paired delta to no skills); ``--json`` also writes every row and the settings.

A model actor (``--actor hf:tiny``) plays every probe and evaluation episode through the model, one call per
step (measured: 2.6 s a step for the tiny model on the shared 2-core machine; a household episode without
skills is 50 steps), so on a CPU keep ``--tasks``, ``--probes`` and ``--shown`` small or use a GPU.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="skills_command", required=True, metavar="{eval}")
    evaluate = commands.add_parser("eval", help="no skills vs curated vs self-generated skills, per family",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    evaluate.add_argument("--families", default="household,webshop,search",
                          help="comma-separated families with a curated library (household, webshop, search, puzzles)")
    evaluate.add_argument("--tasks", type=int, default=100, help="held-out evaluation tasks per family")
    evaluate.add_argument("--seed", type=int, default=0, help="draws the reflector's and the evaluation's tasks")
    evaluate.add_argument("--actor", default="procedure",
                          help="procedure (the scripted procedure-following actor) or a policy SPEC "
                               "(hf:tiny, hf:<dir>, vllm:<dir>, openai:<base_url>#<model>, checkpoint:<dir>)")
    evaluate.add_argument("--reflector", default="scripted",
                          help="scripted (SkillLibrary-v0's scripted reflector) or a policy SPEC writing the operations")
    evaluate.add_argument("--max-new-tokens", type=int, default=1024, help="a model reflector's longest operation")
    evaluate.add_argument("--probes", type=int, default=16,
                          help="probe tasks of the reflector's SkillLibrary-v0 episode (each operation's measurement)")
    evaluate.add_argument("--shown", type=int, default=4, help="training tasks whose trajectories the reflector reads")
    evaluate.add_argument("--retrieval", default="all", choices=("all", "bm25", "index"),
                          help="how the actor is shown a library (meta_envs.skills.showing.with_skills)")
    evaluate.add_argument("--json", default=None, help="also write the rows and settings here")
    evaluate.add_argument("--libraries", default=None,
                          help="save each family's self-generated library under this folder (<folder>/<family>/)")


def run(args: argparse.Namespace) -> int:
    from ..skills.evaluate import evaluate
    from agentgym_envs.core.errors import InfraError

    from ..skills.library import LibraryError

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    try:
        actor = _actor(args.actor)
        reflector = _reflector(args.reflector, args.max_new_tokens, args.seed)
        if args.tasks < 2:
            raise ValueError(f"--tasks: expected at least 2 tasks per family, got {args.tasks}")
        reflector_kwargs = {"n_probes": args.probes, "n_shown": args.shown, "retrieval": args.retrieval}
        report = evaluate(families, n=args.tasks, seed=args.seed, actor=actor, reflector=reflector,
                          save_dir=args.libraries, reflector_kwargs=reflector_kwargs)
    except (ValueError, LibraryError) as e:
        print(f"agentgym skills eval: {e}")
        return 2
    except InfraError as e:  # our sandbox or a base env failed, not the skills: say so, no table
        print(f"agentgym skills eval: infrastructure failure (not a result): {e}")
        return 1
    command = f"agentgym skills eval --families {','.join(families)} --tasks {args.tasks} --seed {args.seed}"
    if (args.probes, args.shown) != (16, 4):
        command += f" --probes {args.probes} --shown {args.shown}"
    if args.retrieval != "all":
        command += f" --retrieval {args.retrieval}"
    if args.actor != "procedure":
        command += f" --actor {args.actor}"
    if args.reflector != "scripted":
        command += f" --reflector {args.reflector} --max-new-tokens {args.max_new_tokens}"
    print(f"`{command}` (actor: {report.settings['actor']})\n")
    print(report.to_markdown())
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, **report.to_dict()}, indent=2) + "\n")
    return 0


def _actor(spec: str):
    """``None`` (the procedure actor) for ``procedure``, else a policy SPEC behind the actor adapter."""
    from ..skills.actor import PolicyActor

    return None if spec == "procedure" else PolicyActor(_policy(spec, "--actor"), name=spec)


def _reflector(spec: str, max_new_tokens: int, seed: int):
    """``None`` (the scripted reflector) for ``scripted``, else a policy SPEC writing the operations."""
    from agentgym_envs.policies import SamplingConfig

    from ..skills.evaluate import PolicyReflector

    if spec == "scripted":
        return None
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=max_new_tokens, seed=seed)
    return PolicyReflector(_policy(spec, "--reflector"), sampling, name=spec)


def _policy(spec: str, option: str):
    from leaderboards.errors import LeaderboardError
    from leaderboards.policies import parse_spec
    from trainer.cli import quiet_transformers

    quiet_transformers()  # no progress bars; never reach the Hub
    try:
        parsed = parse_spec(spec)
        if parsed.kind in ("random", "expert"):
            raise ValueError(f"{option}: expected a model policy (hf:, vllm:, openai:, checkpoint:), got {spec!r}; "
                             "env-side policies act from a base env's state, not from skills")
        return parsed.build()
    except LeaderboardError as e:
        raise ValueError(f"{option}: {e}") from None
