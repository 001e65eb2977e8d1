#!/usr/bin/env bash
# Provisions what ws.exec's overlay tests need, as root. Idempotent: installs only what is missing.
# - attr (getfattr, setfattr): overlay mode reads and writes overlayfs's opaque and redirect
#   xattrs with them (Node has no xattr API).
# - util-linux (unshare, mount, nsenter), iproute2 (ip, for a sandbox's loopback), tmux (the
#   `rewindfs shell` test drives a terminal with it).
# - an unprivileged user, rewindfs-exec, that the tests run as to cover the user-namespace path
#   (the tests spawn `runuser -u rewindfs-exec -- node …` against dist/).
# Prints the user's name last.
set -euo pipefail

USER_NAME=rewindfs-exec

if [[ $EUID -ne 0 ]]; then
  echo "provision-exec-user: run as root (it installs packages and adds a user)" >&2
  exit 1
fi

missing=()
command -v getfattr >/dev/null 2>&1 || missing+=(attr)
command -v setfattr >/dev/null 2>&1 || missing+=(attr)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
command -v runuser >/dev/null 2>&1 || missing+=(util-linux)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
if [[ ${#missing[@]} -gt 0 ]]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  echo "provision-exec-user: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! id -u "$USER_NAME" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash --user-group "$USER_NAME"
  echo "provision-exec-user: added user $USER_NAME"
fi

# Unprivileged user namespaces: on by default on Debian and most kernels; say so when they are off.
if [[ -r /proc/sys/kernel/unprivileged_userns_clone && "$(cat /proc/sys/kernel/unprivileged_userns_clone)" == 0 ]]; then
  echo "provision-exec-user: kernel.unprivileged_userns_clone is 0; enabling it" >&2
  sysctl -q -w kernel.unprivileged_userns_clone=1
fi
if [[ "$(cat /proc/sys/user/max_user_namespaces)" == 0 ]]; then
  echo "provision-exec-user: user.max_user_namespaces is 0; raising it" >&2
  sysctl -q -w user.max_user_namespaces=10000
fi

echo "$USER_NAME"
