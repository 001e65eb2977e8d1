/**
 * The shell script that sets a command's namespaces up. `unshare` (util-linux) makes the private
 * mount (and PID, network, user) namespaces and starts this script in them as `sh -c SCRIPT`; it
 * mounts the overlay at the project's own path, applies the sandbox, reports on fd 3 and then
 * replaces itself with `/bin/sh -c COMMAND`. A script, not a native addon: every step is one mount
 * call, and util-linux is on every Linux host. It ships inside the module (a string), so the
 * compiled package needs no extra file.
 *
 * Started without arguments, the script waits for them on stdin (`helperRequest`): a helper can
 * then be started ahead of its command, so the namespaces are made while the previous command
 * still runs (overlay mode's back-to-back commands, ws.bisect's probes).
 */

/** Positional arguments of the script, in order. */
export interface HelperArguments {
  /** Where the command's workspace is: the project directory (overlay) or the temporary copy (copy mode). */
  readonly root: string
  /** The exec layer (overlayfs lowerdir above the project); '' in copy mode: nothing is mounted. */
  readonly layer: string
  readonly upper: string
  readonly work: string
  /** Extra overlay mount options: 'userxattr' (user namespace) or 'redirect_dir=on,index=on' and 'metacopy=on' where it works (root). */
  readonly overlayOptions: string
  /** The host directory the command starts in. */
  readonly cwd: string
  readonly network: 'on' | 'off'
  readonly host: 'read-write' | 'read-only'
  /** Host paths that stay writable under a read-only host (existing ones only). */
  readonly writable: readonly string[]
  /** 'uid:gid' to map the user back to itself in a nested user namespace, '' as root. */
  readonly map: string
  /** A private, empty directory on the host for the read-only host's new /tmp to be built in. */
  readonly stash: string
  readonly command: string
  /**
   * Copy mode over a project directory: its path, where the copy (`root`) is mounted, so a command
   * naming the project by its own path reaches the copy, never the disk; '' otherwise.
   */
  readonly project: string
  /**
   * The directory the command starts in as the user names it, through the path the project was
   * opened by (a link above it): its $PWD, as a shell started there has it; '' for `cwd` itself.
   */
  readonly pwd: string
}

export function helperArguments(args: HelperArguments): string[] {
  return [
    args.root,
    args.layer,
    args.upper,
    args.work,
    args.overlayOptions,
    args.cwd,
    args.network,
    args.host,
    args.writable.join('\n'),
    args.map,
    args.stash,
    args.command,
    args.project,
    args.pwd,
  ]
}

/** The arguments as the script reads them on stdin: shell words, one request ended by end of file. */
export function helperRequest(args: HelperArguments): string {
  return helperArguments(args).map(quote).join(' ') + '\n'
}

/** A shell word that is exactly `text` (single quotes: nothing inside is special but the quote itself). */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`
}

/**
 * Exit status 125 and 'error <why>' on fd 3 when the set-up fails; 'ok' on fd 3 right before the
 * command starts. fd 3 is closed for the command. (`%{` stands for the shell's `${`, which a
 * template literal would take.)
 */
export const HELPER_SCRIPT = String.raw`
if [ $# -eq 0 ]; then
  # Started ahead of its command: the arguments arrive on stdin (newlines only inside quotes,
  # which the loop puts back); none, the end of file alone, means it is not needed after all.
  request=
  while IFS= read -r line; do request="$request$line
"; done
  [ -n "$request" ] || exit 0
  eval "set -- $request"
  exec </dev/null
fi
root=$1 layer=$2 upper=$3 work=$4 options=$5 cwd=$6 network=$7 host=$8 writable=$9
shift 9
map=$1 stash=$2 command=$3 project=$4 pwd=$5
fail() { printf 'error %s\n' "$*" >&3; exit 125; }
run() { out=$("$@" 2>&1) || fail "$* failed: $out"; }

# unshare(1) has made every mount private already (its default propagation): nothing made here
# reaches the host.
if [ "$network" = off ]; then
  # A fresh network namespace has only a loopback device, and it is down.
  if command -v ip >/dev/null 2>&1; then run ip link set lo up; fi
fi

if [ -n "$layer" ]; then
  run mount -n -t overlay rewindfs -o "lowerdir=$layer:$root,upperdir=$upper,workdir=$work$options" "$root"
elif [ "$host" = read-only ]; then
  # The copy must stay writable when / turns read-only: its own mount.
  run mount -n --bind "$root" "$root"
fi
if [ -n "$project" ]; then
  # Copy mode: the copy takes the project's place, so what the command writes through the project's
  # own path is the copy's (read back, recorded), not the disk's. From here the project's path is
  # the command's workspace.
  run mount -n --bind "$root" "$project"
  root=$project
fi

if [ "$host" = read-only ]; then
  # The new /tmp is built in the stash and moved over /tmp last; what must survive it (the
  # workspace, writable paths under /tmp) is bound into it first. Writable paths elsewhere become
  # mounts of their own before / turns read-only, and keep their write access.
  run mount -n -t tmpfs -o mode=1777 rewindfs-tmp "$stash"
  keep() {
    case $1 in
      /tmp/*) run mkdir -p "$stash/%{1#/tmp/}"; run mount -n --rbind "$1" "$stash/%{1#/tmp/}" ;;
      "$root") ;;
      *) run mount -n --bind "$1" "$1" ;;
    esac
  }
  keep "$root"
  IFS='
'
  for path in $writable; do keep "$path"; done
  # Every mount read-only but the kernel's (/proc, /dev) and what stays writable. mountinfo
  # escapes spaces and the like as \ooo, which printf %b reads back.
  for point in $(cut -d' ' -f5 /proc/self/mountinfo); do
    point=$(printf '%b' "$point")
    case $point in
      /proc | /proc/* | /dev | /dev/* | "$stash" | "$stash"/* | "$root" | "$root"/*) continue ;;
    esac
    skip=
    for path in $writable; do
      case $point in "$path" | "$path"/*) skip=1 ;; esac
    done
    [ -n "$skip" ] || run mount -n -o remount,bind,ro "$point"
  done
  unset IFS
  run mount -n --move "$stash" /tmp
  if [ -d /dev/shm ]; then run mount -n -t tmpfs -o mode=1777 rewindfs-shm /dev/shm; fi
fi

cd "$cwd" || fail "cannot enter $cwd"
# Only where it leads to the same directory (a shell checks $PWD the same way).
if [ -n "$pwd" ] && [ "$pwd" -ef . ]; then PWD=$pwd; export PWD; fi
printf 'ok\n' >&3
exec 3>&-
if [ -n "$map" ]; then
  set -- unshare --user --map-user="%{map%:*}" --map-group="%{map#*:}" -- /bin/sh -c "$command"
else
  set -- /bin/sh -c "$command"
fi
# As a PID namespace's init (pid 1) the command's shell would ignore every signal it has no handler
# for (kill $$, Ctrl-C): it runs as this script's child instead, and its status is the script's
# (a signal's death as 128 + its number, as shells report it). When the script ends, the kernel
# kills whatever is left in the namespace.
if [ $$ = 1 ]; then
  "$@"
  exit $?
fi
exec "$@"
`.replaceAll('%{', '${')
