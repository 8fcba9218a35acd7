"""The trainer's config tree, as users import it: ``from trainer.config import load_config, TrainConfig``.

The tree is assembled in :mod:`trainer.run.config`; each section's dataclass lives beside the component it
configures (see there). This module re-exports the lot, so scripts, docs and recipes keep one import path.
"""

from .run.config import *  # noqa: F401,F403
from .run.config import __all__  # noqa: F401
