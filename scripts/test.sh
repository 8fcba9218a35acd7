#!/usr/bin/env bash
# Install (with test tools) and run the whole test suite. CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
exec .venv/bin/python -m pytest -q "$@"
