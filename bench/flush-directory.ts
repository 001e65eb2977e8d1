/**
 * Directory flush: 10k × 1 KiB files in 10 directories into an empty directory through the
 * node-fs flush target (temp, fsync, rename, directory fsyncs, manifest) and through ws.flush,
 * against `cp -r` of the same files (which makes nothing durable) and `cp -r` followed by
 * `sync -f` (syncfs of the file system: durable, like ours). Median of 5 runs; prints a markdown
 * table. Run: node --import tsx bench/flush-directory.ts [files]
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { directory } from '../adapters/node-fs/index.js'
import type { FlushEntry } from '../src/flush/target.js'
import { Workspace } from '../src/index.js'
import { Content, FILES_PER_DIR, dirsFor, layout } from './lib.js'

const FILES = Number(process.argv[2] ?? 10_000)
const RUNS = 5
const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-bench-flush-`)

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (value: number) => `${value.toFixed(0)} ms`

function time(body: () => void): number {
  execFileSync('sync') // earlier runs' dirty pages are not this run's cost
  const start = performance.now()
  body()
  return performance.now() - start
}

async function timeAsync(body: () => Promise<unknown>): Promise<number> {
  execFileSync('sync')
  const start = performance.now()
  await body()
  return performance.now() - start
}

function countFiles(root: string): number {
  return fs.readdirSync(root, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length
}

try {
  const { dirs, paths } = layout(FILES, dirsFor(FILES))
  const content = new Content()
  const mtimeMs = Date.now()
  const entries: FlushEntry[] = [
    ...dirs.map((path): FlushEntry => ({ path, kind: 'dir', mode: 0o755, mtimeMs })),
    ...paths.map((path, i): FlushEntry => ({ path, kind: 'file', mode: 0o644, mtimeMs, content: content.stamp(i).slice() })),
  ]
  // The same files on disk, for cp.
  const source = `${scratch}/source`
  for (const dir of dirs) fs.mkdirSync(source + dir, { recursive: true })
  for (const entry of entries) if (entry.kind === 'file') fs.writeFileSync(source + entry.path, entry.content)
  // And in a workspace, for ws.flush.
  const ws = await Workspace.open({ autoCheckpoint: false })
  for (const dir of dirs) ws.fs.mkdirSync(dir)
  for (const entry of entries) if (entry.kind === 'file') ws.fs.writeFileSync(entry.path, entry.content)

  const apply: number[] = []
  const flush: number[] = []
  const copy: number[] = []
  const copySync: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const a = `${scratch}/apply-${run}`
    fs.mkdirSync(a)
    const target = directory(a)
    apply.push(await timeAsync(() => target.apply(entries)))
    if (countFiles(a) !== FILES) throw new Error(`apply left ${countFiles(a)} files, not ${FILES}`)

    const f = `${scratch}/flush-${run}`
    fs.mkdirSync(f)
    flush.push(await timeAsync(() => ws.flush(directory(f))))
    if (countFiles(f) !== FILES) throw new Error(`ws.flush left ${countFiles(f)} files, not ${FILES}`)

    copy.push(time(() => execFileSync('cp', ['-r', source, `${scratch}/cp-${run}`])))
    copySync.push(time(() => execFileSync('sh', ['-c', `cp -r "$0" "$1" && sync -f "$1"`, source, `${scratch}/cps-${run}`])))
    for (const dir of [a, f, `${scratch}/cp-${run}`, `${scratch}/cps-${run}`]) fs.rmSync(dir, { recursive: true })
  }
  await ws.close()

  const ratio = median(apply) / median(copy)
  console.log(`#### Directory flush: ${FILES} × 1 KiB files in ${dirs.length} dirs (${FILES_PER_DIR} per dir) into an empty directory (median of ${RUNS})\n`)
  console.log('| files | target.apply | ws.flush | cp -r | cp -r + sync -f | apply ÷ cp -r (goal ≤ 2×) | apply ÷ (cp -r + sync) |')
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  console.log(
    `| ${FILES} | ${ms(median(apply))} | ${ms(median(flush))} | ${ms(median(copy))} | ${ms(median(copySync))} | ${ratio.toFixed(2)}× ${ratio <= 2 ? '✅' : '❌'} | ${(median(apply) / median(copySync)).toFixed(2)}× |`,
  )
} finally {
  fs.rmSync(scratch, { recursive: true, force: true })
}
