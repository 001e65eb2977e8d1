#!/usr/bin/env bash
# Provisions what ws.exec's overlay tests need, as root. Idempotent: installs only what is missing.
# - attr (getfattr, setfattr): overlay mode reads and writes overlayfs's opaque and redirect
#   xattrs with them (Node has no xattr API).
# - util-linux (unshare, mount, nsenter), iproute2 (ip, for a sandbox's loopback), tmux (the
#   `rewindfs shell` test drives a terminal with it).
# - an unprivileged user, rewindfs-exec, that the tests run as to cover the user-namespace path
#   (the tests spawn `runuser -u rewindfs-exec -- node --import tsx test/support/exec-user.ts …`
#   from the checkout).
# With a directory argument (the checkout, after `npm ci`), also makes sure that user can read it:
# every directory above it searchable, and whatever in it the user cannot read made readable by
# others (o+r, o+x on directories); a checkout that is readable already is left untouched.
# Prints the user's name last.
set -euo pipefail

USER_NAME=rewindfs-exec
CHECKOUT=${1:-}

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
# Ubuntu 23.10+ lets AppArmor refuse unprivileged user namespaces to unconfined programs.
if [[ -r /proc/sys/kernel/apparmor_restrict_unprivileged_userns && "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns)" == 1 ]]; then
  echo "provision-exec-user: kernel.apparmor_restrict_unprivileged_userns is 1; turning it off" >&2
  sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0
fi

if [[ -n "$CHECKOUT" ]]; then
  CHECKOUT=$(realpath -- "$CHECKOUT")
  as_user() { runuser -u "$USER_NAME" -- "$@" >/dev/null 2>&1; }
  # Directories above the checkout: search permission only (their listings stay private).
  above=$(dirname -- "$CHECKOUT")
  while [[ "$above" != / ]]; do
    if ! as_user test -x "$above"; then
      chmod o+x -- "$above"
      echo "provision-exec-user: $above made searchable by others (o+x) for $USER_NAME" >&2
    fi
    above=$(dirname -- "$above")
  done
  # The checkout itself, node_modules included: only what the user cannot read yet.
  unreadable=$(find "$CHECKOUT" \( -type d \( ! -perm -o=r -o ! -perm -o=x \) -o ! -type d ! -perm -o=r \) ! -type l -print | wc -l)
  if [[ "$unreadable" -gt 0 ]]; then
    find "$CHECKOUT" \( -type d \( ! -perm -o=r -o ! -perm -o=x \) -o ! -type d ! -perm -o=r \) ! -type l -exec chmod o+rX -- {} +
    echo "provision-exec-user: $unreadable entries of $CHECKOUT made readable by others for $USER_NAME" >&2
  fi
  if ! as_user test -r "$CHECKOUT/test/support/exec-user.ts" || ! as_user test -r "$CHECKOUT/node_modules/tsx/package.json"; then
    echo "provision-exec-user: $USER_NAME still cannot read $CHECKOUT (its tests and node_modules)" >&2
    exit 1
  fi
fi

echo "$USER_NAME"
