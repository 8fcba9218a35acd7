#!/usr/bin/env bash
# Set up both sandbox backends (sandboxes/, agentgym/Terminal-v0). Idempotent: every step is skipped when done.
#   sudo bash scripts/setup_sandboxes.sh            # apt packages, dockerd, rootfs, images
#   AGENTGYM_ROOTFS=/path bash scripts/setup_sandboxes.sh   # put the shared root filesystem elsewhere
#   SKIP_DOCKER=1 bash scripts/setup_sandboxes.sh    # bubblewrap only
#
# Why a rootfs of our own: both backends run the same Debian userland (python3, git, gcc, ...), so a task
# behaves identically under bubblewrap and Docker, and bubblewrap never exposes the host's /usr or /etc.
# No image registry is assumed: the rootfs comes from the Debian mirror with debootstrap, and the Docker
# image is that rootfs loaded with `docker import` plus a small Dockerfile on top.
set -euo pipefail

ROOTFS=${AGENTGYM_ROOTFS:-/var/lib/agentgym/rootfs}
IMAGE=${AGENTGYM_IMAGE:-agentgym/base:1}
SUITE=${AGENTGYM_SUITE:-bookworm}
MIRROR=${AGENTGYM_MIRROR:-http://deb.debian.org/debian}
LOG_DIR=${AGENTGYM_LOG_DIR:-/var/log/agentgym}
# Keep in sync with sandboxes/image.py (ROOTFS_PACKAGES): what tasks may rely on.
# The second line is what imported Terminal-Bench/Harbor tasks expect of their python/ubuntu/debian base images
# (pip, curl, openssl, sqlite3, xxd, a C++ compiler); docs/terminal.md lists the toolset.
PACKAGES=python3,python3-pytest,git,gcc,libc6-dev,make,procps,psmisc,jq,gawk,bc,file,patch,xz-utils,bzip2,zip,unzip,less
PACKAGES+=,python3-pip,python3-venv,python-is-python3,curl,ca-certificates,openssl,sqlite3,xxd,g++,wget,tmux
APT_PACKAGES=(bubblewrap debootstrap)
[ -n "${SKIP_DOCKER:-}" ] || APT_PACKAGES+=(docker.io)

log() { echo "setup_sandboxes: $*" >&2; }
need_root() { [ "$(id -u)" -eq 0 ] || { log "run as root to $1"; exit 1; }; }

install_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  ((${#missing[@]})) || return 0
  need_root "apt-get install ${missing[*]}"
  log "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

build_rootfs() {
  # The marker records what the rootfs was built with: a changed package list rebuilds it.
  [ "$(cat "$ROOTFS/.agentgym-rootfs" 2>/dev/null)" = "$SUITE $PACKAGES" ] && return 0
  need_root "build the root filesystem at $ROOTFS"
  local stage="$ROOTFS.partial"
  log "building $ROOTFS with debootstrap (a few minutes, once)"
  rm -rf "$stage" && mkdir -p "$(dirname "$ROOTFS")"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$stage" "$MIRROR" >"$stage.log" 2>&1 \
    || { log "debootstrap failed; see $stage.log"; exit 1; }
  chroot "$stage" /usr/sbin/useradd --uid 1000 --user-group --create-home --shell /bin/bash agent
  mkdir -p "$stage"/{work,app,tests,logs,solution}
  chroot "$stage" apt-get clean
  rm -rf "$stage"/var/lib/apt/lists/* "$stage"/var/cache/* "$stage.log"
  echo "$SUITE $PACKAGES" >"$stage/.agentgym-rootfs"
  rm -rf "$ROOTFS" && mv "$stage" "$ROOTFS"
}

start_dockerd() {
  docker info >/dev/null 2>&1 && return 0
  need_root "start dockerd"
  mkdir -p "$LOG_DIR"
  log "starting dockerd (log: $LOG_DIR/dockerd.log)"
  nohup dockerd >"$LOG_DIR/dockerd.log" 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && return 0; sleep 0.5; done
  log "dockerd did not come up; see $LOG_DIR/dockerd.log"; exit 1
}

build_image() {
  local stamp
  stamp=$(sha256sum "$ROOTFS/.agentgym-rootfs" | cut -c1-16)
  [ "$(docker image inspect -f '{{index .Config.Labels "org.agentgym.rootfs"}}' "$IMAGE" 2>/dev/null)" = "$stamp" ] \
    && return 0
  local raw="${IMAGE%%:*}-rootfs:${IMAGE##*:}" context
  log "importing $ROOTFS as $raw and building $IMAGE"
  tar -C "$ROOTFS" -c . | docker import - "$raw" >/dev/null
  context=$(mktemp -d)
  cat >"$context/Dockerfile" <<EOF
FROM $raw
ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /work
LABEL org.agentgym.sandbox=base org.agentgym.rootfs=$stamp
CMD ["/bin/bash"]
EOF
  docker build -q -t "$IMAGE" "$context" >"$context.log" 2>&1 || { log "docker build failed:"; cat "$context.log" >&2; exit 1; }
  rm -rf "$context" "$context.log"
}

install_packages
build_rootfs
if [ -n "${SKIP_DOCKER:-}" ]; then
  log "ready (rootfs $ROOTFS; Docker skipped)"
else
  start_dockerd
  build_image
  log "ready (rootfs $ROOTFS, image $IMAGE)"
fi
