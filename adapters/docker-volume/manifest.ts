/**
 * A flush as the volume sees it: one tar put into /v (a staging folder `.rewindfs-flush/<id>` with
 * one numbered item per entry, and `manifest.sh` last), then the runner, a fixed command any helper
 * container runs, which applies every complete manifest it finds. The manifest is a shell script of
 * numbered steps that logs each finished step, so a run cut short resumes after the last one: no step
 * runs twice (a delete re-run after the path was made again would lose it). It ends by removing
 * itself and its staging folder; its last line marks it complete, so a torn upload is only removed.
 */
import { Readable } from 'node:stream'
import tar from 'tar-stream'
import type { FlushEntry } from '../../src/flush/target.js'
import { STAGING } from './archive.js'
import { MOUNT } from './helper.js'

const END = '# end of manifest'

/** Single-quoted for sh: any bytes but NUL survive. */
export function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`
}

/** Sorts by time, so pending flushes apply in the order they were made. */
export function flushId(now = Date.now()): string {
  return `${now.toString(36).padStart(9, '0')}-${Math.random().toString(36).slice(2, 8)}`
}

/** What the runner does: each complete manifest in name order; a staging folder without one is a torn upload. */
export const RUNNER = [
  `cd ${MOUNT}${STAGING} 2>/dev/null || exit 0`,
  'for id in *; do',
  '  [ -d "$id" ] || continue',
  `  if [ -f "$id/manifest.sh" ] && [ "$(tail -n 1 "$id/manifest.sh")" = ${quote(END)} ]; then sh -e "$id/manifest.sh" || exit 1`,
  '  else rm -rf "$id"; fi',
  'done',
  `cd / && rmdir ${MOUNT}${STAGING} 2>/dev/null; exit 0`,
].join('\n')

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0')

/** The manifest for entries staged as items 1..n in `${MOUNT}${STAGING}/<id>`. */
export function manifest(id: string, entries: readonly FlushEntry[]): string {
  const stage = `${MOUNT}${STAGING}/${id}`
  const target = (path: string) => quote(MOUNT + path)
  const lines = [
    `# rewindfs flush ${id}: ${entries.length} steps; re-run safely, finished steps are logged in ./progress`,
    'set -e',
    `cd ${quote(stage)}`,
    'touch progress',
    'done=$(tail -n 1 progress); done=${done:-0}',
    'step() { n=$1; shift; if [ "$n" -gt "$done" ]; then "$@"; echo "$n" >> progress; fi; }',
    // A staged item already moved (a crash after mv, before the log): nothing left to do.
    'put() { if [ -e "$1" ] || [ -L "$1" ]; then rm -rf "$2"; mv "$1" "$2"; fi; }',
    'dir() { if [ -L "$1" ] || { [ -e "$1" ] && [ ! -d "$1" ]; }; then rm -f "$1"; fi; [ -d "$1" ] || mkdir "$1"; chmod "$2" "$1"; }',
    'del() { rm -rf "$1"; }',
  ]
  entries.forEach((entry, index) => {
    const n = index + 1
    if (entry.kind === 'delete') lines.push(`step ${n} del ${target(entry.path)}`)
    else if (entry.kind === 'dir') lines.push(`step ${n} dir ${target(entry.path)} ${octal(entry.mode)}`)
    else lines.push(`step ${n} put ${n} ${target(entry.path)}`)
  })
  // Moving children in changed the directories' times: give them theirs, from their staged items.
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index]
    if (entry.kind === 'dir') lines.push(`[ ! -d ${target(entry.path)} ] || touch -r ${index + 1} ${target(entry.path)}`)
  }
  lines.push('rm -f manifest.sh', `cd / && rm -rf ${quote(stage)}`, END)
  return lines.join('\n') + '\n'
}

/** The tar to put into the volume root: the staging folder, its items, the manifest last. */
export function stagingTar(id: string, entries: readonly FlushEntry[], now = new Date()): Readable {
  const pack = tar.pack()
  const base = `${STAGING.slice(1)}/${id}`
  const seconds = (ms: number) => new Date(Math.max(0, ms))
  void (async () => {
    const add = (header: Partial<tar.Header> & { name: string }, content?: Uint8Array) =>
      new Promise<void>((resolve, reject) => {
        const done = (error?: Error | null) => (error ? reject(error) : resolve())
        if (content === undefined) pack.entry(header, done)
        else pack.entry(header, content, done)
      })
    try {
      await add({ name: STAGING.slice(1), type: 'directory', mode: 0o700, mtime: now })
      await add({ name: base, type: 'directory', mode: 0o700, mtime: now })
      for (const [index, entry] of entries.entries()) {
        const name = `${base}/${index + 1}`
        if (entry.kind === 'file') await add({ name, type: 'file', mode: entry.mode & 0o7777, mtime: seconds(entry.mtimeMs), size: entry.content.byteLength }, entry.content)
        else if (entry.kind === 'dir') await add({ name, type: 'directory', mode: 0o700, mtime: seconds(entry.mtimeMs) })
        else if (entry.kind === 'symlink') await add({ name, type: 'symlink', linkname: entry.target, mode: 0o777, mtime: now })
      }
      const script = Buffer.from(manifest(id, entries))
      await add({ name: `${base}/manifest.sh`, type: 'file', mode: 0o600, mtime: now, size: script.byteLength }, script)
      pack.finalize()
    } catch (error) {
      pack.destroy(error as Error)
    }
  })()
  return Readable.from(pack)
}
