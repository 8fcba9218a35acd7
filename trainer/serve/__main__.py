"""``python -m trainer.serve``: the OpenAI-compatible policy server (:mod:`trainer.serve.policy_server`)."""

import sys

from .policy_server import main

sys.exit(main())
