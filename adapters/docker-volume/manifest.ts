/**
 * A flush as the volume sees it: one tar put into /v (a staging folder `.rewindfs-flush/<id>` whose
 * `tree/` holds every new file, directory and symlink at its own path, and `manifest.sh` last), then
 * the runner, a fixed command any helper container runs, which applies every complete manifest it
 * finds. The manifest is a shell script of numbered steps that logs each finished step, so a run cut
 * short resumes after the last one: no step runs twice (a delete re-run after the path was made again
 * would lose it). A directory that is new in the volume moves in whole, with everything staged under
 * it, in one rename. The manifest ends by removing itself and its staging folder; its last line marks
 * it complete, so a torn upload is only removed.
 */
import { Readable } from 'node:stream'
import tar from 'tar-stream'
import type { FlushEntry } from 'rewindfs/adapter-kit'
import { STAGING, wholeSeconds } from './archive.js'
import { MOUNT } from './helper.js'

const END = '# end of manifest'

/** Single-quoted for sh: any bytes but NUL survive. */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`
}

/** Sorts by time, so pending flushes apply in the order they were made. */
export function flushId(now = Date.now()): string {
  return `${now.toString(36).padStart(9, '0')}-${Math.random().toString(36).slice(2, 8)}`
}

/**
 * What the runner does: each complete manifest in name order. A staging folder without one is a torn
 * upload, removed once it is TORN_MINUTES old (a younger one may be another writer's upload in progress).
 */
const TORN_MINUTES = 10
export const RUNNER = [
  `cd ${MOUNT}${STAGING} 2>/dev/null || exit 0`,
  'for id in *; do',
  '  [ -d "$id" ] || continue',
  `  if [ -f "$id/manifest.sh" ] && [ "$(tail -n 1 "$id/manifest.sh")" = ${quote(END)} ]; then sh -e "$id/manifest.sh" || exit 1`,
  `  elif [ -n "$(find "$id" -maxdepth 0 -mmin +${TORN_MINUTES})" ]; then rm -rf "$id"; fi`,
  'done',
  `cd / && rmdir ${MOUNT}${STAGING} 2>/dev/null; exit 0`,
].join('\n')

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0')

/** The manifest for entries staged under `${MOUNT}${STAGING}/<id>/tree`. */
function manifest(id: string, entries: readonly FlushEntry[]): string {
  const lines = [
    `# rewindfs flush ${id}: ${entries.length} steps; re-run safely, finished steps are logged in ./progress`,
    'set -e',
    `cd ${quote(`${MOUNT}${STAGING}/${id}`)}`,
    'touch progress',
    'done=$(tail -n 1 progress); done=${done:-0}',
    'step() { n=$1; shift; if [ "$n" -gt "$done" ]; then "$@"; echo "$n" >> progress; fi; }',
    // A staged item already moved (its directory moved whole, or a crash after mv) is at its target:
    // nothing to do. Neither item nor target: the upload lost it, which must not pass as done.
    `put() { if [ -e "tree$1" ] || [ -L "tree$1" ]; then rm -rf "${MOUNT}$1"; mv "tree$1" "${MOUNT}$1"`,
    `  elif [ ! -e "${MOUNT}$1" ] && [ ! -L "${MOUNT}$1" ]; then echo "rewindfs: the staged item for $1 is missing" >&2; return 1; fi; }`,
    `dir() { t="${MOUNT}$1"; if [ -L "$t" ] || { [ -e "$t" ] && [ ! -d "$t" ]; }; then rm -f "$t"; fi`,
    '  if [ ! -e "$t" ] && [ -d "tree$1" ]; then mv "tree$1" "$t"; else [ -d "$t" ] || mkdir "$t"; chmod "$2" "$t"; fi; }',
    `del() { rm -rf "${MOUNT}$1"; }`,
  ]
  entries.forEach((entry, index) => {
    const step = `step ${index + 1}`
    if (entry.kind === 'delete') lines.push(`${step} del ${quote(entry.path)}`)
    else if (entry.kind === 'dir') lines.push(`${step} dir ${quote(entry.path)} ${octal(entry.mode)}`)
    else lines.push(`${step} put ${quote(entry.path)}`)
  })
  // Moving children in changed the directories' times: give them theirs, deepest first.
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index]
    const target = quote(MOUNT + entry.path)
    if (entry.kind === 'dir') lines.push(`[ ! -d ${target} ] || touch -d @${wholeSeconds(entry.mtimeMs)} ${target}`)
  }
  lines.push('rm -f manifest.sh', `cd / && rm -rf ${quote(`${MOUNT}${STAGING}/${id}`)}`, END)
  return lines.join('\n') + '\n'
}

/** The tar to put into the volume root: the staging folder, its tree (parents first), the manifest last. */
export function stagingTar(id: string, entries: readonly FlushEntry[], now = new Date()): Readable {
  const pack = tar.pack()
  const base = `${STAGING.slice(1)}/${id}`
  const staged = new Set<string>()
  const folder = (name: string, mode: number, mtime: Date) => {
    if (staged.has(name)) return
    staged.add(name)
    pack.entry({ name, type: 'directory', mode, mtime })
  }
  folder(STAGING.slice(1), 0o700, now)
  folder(base, 0o700, now)
  folder(`${base}/tree`, 0o700, now)
  for (const entry of entries) {
    if (entry.kind === 'delete') continue
    // Parents the flush does not make itself exist in the volume: in the staging tree they only hold items.
    const parts = entry.path.split('/').slice(1)
    for (let depth = 1; depth < parts.length; depth++) folder(`${base}/tree/${parts.slice(0, depth).join('/')}`, 0o700, now)
    const name = `${base}/tree${entry.path}`
    const mtime = new Date(wholeSeconds(entry.kind === 'symlink' ? now.getTime() : entry.mtimeMs) * 1000)
    if (entry.kind === 'dir') folder(name, entry.mode & 0o7777, mtime)
    else if (entry.kind === 'symlink') pack.entry({ name, type: 'symlink', linkname: entry.target, mode: 0o777, mtime })
    else pack.entry({ name, type: 'file', mode: entry.mode & 0o7777, mtime, size: entry.content.byteLength }, entry.content)
  }
  const script = Buffer.from(manifest(id, entries))
  pack.entry({ name: `${base}/manifest.sh`, type: 'file', mode: 0o600, mtime: now, size: script.byteLength }, script)
  pack.finalize()
  return Readable.from(pack)
}
