#!/usr/bin/env bash
# Provisions a private Docker daemon for the docker-volume adapter's tests and bench, as root.
# Idempotent: installs only what is missing, starts dockerd only when its socket does not answer,
# builds the helper image only when it is absent. No registry is reachable, so the helper image is
# made from Debian's static busybox. Prints the socket path last.
set -euo pipefail

SOCKET=/tmp/rewindfs-docker.sock
DATA_ROOT=/tmp/rewindfs-docker
EXEC_ROOT=/tmp/rewindfs-docker-exec
LOG=/tmp/rewindfs-dockerd.log
IMAGE=rewindfs-helper:local
# busybox applets the helper's scripts use (sh first); each becomes a link to busybox.
APPLETS="sh tar mv rm mkdir cat find cp ls chmod touch stat sync ln readlink test printf echo sed head tail wc sort sha256sum sleep true"

docker_cmd() { docker -H "unix://$SOCKET" "$@"; }

if [[ $EUID -ne 0 ]]; then
  echo "provision-docker: run as root (it installs packages and starts dockerd)" >&2
  exit 1
fi

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
# busybox (dynamic) and busybox-static both ship /bin/busybox; the image needs the static one.
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "provision-docker: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends docker.io busybox-static
fi

PIDFILE="$EXEC_ROOT/dockerd.pid"
# Our dockerd is alive (a killed one may linger as a zombie where nothing reaps orphans).
daemon_alive() {
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null)" || return 1
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == dockerd ]] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}
if docker_cmd info >/dev/null 2>&1; then
  echo "provision-docker: dockerd already answers on $SOCKET"
else
  if daemon_alive; then
    echo "provision-docker: dockerd (pid $(cat "$PIDFILE")) is running but not answering yet; waiting for it"
  else
    echo "provision-docker: starting dockerd (log: $LOG)"
    # Left by a daemon that was killed: a stale socket or pidfile would stop the new one.
    rm -f "$SOCKET" "$PIDFILE"
    mkdir -p "$DATA_ROOT" "$EXEC_ROOT"
    # Own exec-root and pidfile, so it never collides with a system dockerd; setsid detaches it.
    setsid dockerd --data-root "$DATA_ROOT" --exec-root "$EXEC_ROOT" --pidfile "$PIDFILE" \
      --storage-driver vfs --iptables=false --ip6tables=false --bridge=none \
      -H "unix://$SOCKET" >"$LOG" 2>&1 < /dev/null &
  fi
  for _ in $(seq 1 60); do
    docker_cmd info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker_cmd info >/dev/null 2>&1; then
    echo "provision-docker: dockerd did not answer on $SOCKET within 60 s; last lines of $LOG:" >&2
    tail -n 30 "$LOG" >&2
    exit 1
  fi
fi

# The applet list is a label of the image: a machine keeping an image built from an older list rebuilds it.
if [[ "$(docker_cmd image inspect -f '{{index .Config.Labels "rewindfs.applets"}}' "$IMAGE" 2>/dev/null)" == "$APPLETS" ]]; then
  echo "provision-docker: $IMAGE already exists"
else
  echo "provision-docker: building $IMAGE from /bin/busybox"
  root="$(mktemp -d)"
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$root/bin" "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $APPLETS; do ln -s busybox "$root/bin/$applet"; done
  tar -C "$root" -c . | docker_cmd import -c 'ENV PATH=/bin' -c 'CMD ["/bin/sh"]' -c "LABEL rewindfs.applets=\"$APPLETS\"" - "$IMAGE" >/dev/null
  # The image must run: a container with no network prints busybox's own answer.
  docker_cmd run --rm --network none "$IMAGE" sh -c 'echo ok' | grep -qx ok
fi

echo "$SOCKET"
