/**
 * Docker volume flush: 1k × 1 KiB files in 10 directories, through the docker-volume flush target
 * (one staged upload and one helper run) against `docker cp` of the same files from a local folder
 * into a created container with the volume mounted. Each run gets a fresh volume; medians of 3.
 * Needs the daemon and image of scripts/provision-docker.sh (REWINDFS_DOCKER_SOCKET, default
 * /tmp/rewindfs-docker.sock). Run: node --import tsx bench/docker.ts
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { dockerVolume } from '../adapters/docker-volume/index.js'
import type { FlushEntry } from '../src/flush/target.js'
import { Content, layout } from './lib.js'

const socketPath = process.env.REWINDFS_DOCKER_SOCKET ?? '/tmp/rewindfs-docker.sock'
const helperImage = 'rewindfs-helper:local'
const FILES = 1000
const DIRS = 10
const RUNS = 3

const docker = (args: string[]) => execFileSync('docker', ['-H', `unix://${socketPath}`, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (value: number) => (value >= 100 ? `${Math.round(value)} ms` : `${value.toFixed(1)} ms`)

function filesIn(volume: string): number {
  return Number(docker(['run', '--rm', '--network', 'none', '-v', `${volume}:/v`, helperImage, 'sh', '-c', 'find /v -type f | wc -l']))
}

async function main(): Promise<void> {
  try {
    docker(['image', 'inspect', '--format', '{{.Id}}', helperImage])
  } catch (error) {
    console.error(`bench/docker.ts: no usable daemon or image on ${socketPath}: ${String((error as { stderr?: unknown }).stderr ?? error).trim()}; run scripts/provision-docker.sh as root`)
    process.exit(2)
  }
  const { dirs, paths } = layout(FILES, DIRS)
  const content = new Content()
  const mtimeMs = Date.now()
  const entries: FlushEntry[] = [
    ...dirs.map((path): FlushEntry => ({ path, kind: 'dir', mode: 0o755, mtimeMs })),
    ...paths.map((path, i): FlushEntry => ({ path, kind: 'file', mode: 0o644, mtimeMs, content: content.stamp(i).slice() })),
  ]
  const folder = mkdtempSync(join(tmpdir(), 'rewindfs-bench-docker-'))
  for (const dir of dirs) mkdirSync(join(folder, dir))
  paths.forEach((path, i) => writeFileSync(join(folder, path), content.stamp(i)))

  const flushTimes: number[] = []
  const openTimes: number[] = []
  const copyTimes: number[] = []
  const prefix = `rewindfs-bench-${process.pid}`
  try {
    for (let run = 0; run < RUNS; run++) {
      const ours = `${prefix}-flush-${run}`
      docker(['volume', 'create', ours])
      let start = performance.now()
      const vol = await dockerVolume({ name: ours, socketPath, helperImage })
      openTimes.push(performance.now() - start)
      start = performance.now()
      await vol.apply(entries)
      flushTimes.push(performance.now() - start)
      await vol.close()
      if (filesIn(ours) !== FILES) throw new Error(`the flush left ${filesIn(ours)} files in ${ours}, not ${FILES}`)

      const theirs = `${prefix}-cp-${run}`
      docker(['volume', 'create', theirs])
      const container = docker(['create', '--network', 'none', '-v', `${theirs}:/v`, helperImage])
      start = performance.now()
      docker(['cp', `${folder}/.`, `${container}:/v`])
      copyTimes.push(performance.now() - start)
      docker(['rm', '-f', container])
      if (filesIn(theirs) !== FILES) throw new Error(`docker cp left ${filesIn(theirs)} files in ${theirs}, not ${FILES}`)
    }
  } finally {
    rmSync(folder, { recursive: true, force: true })
    for (const name of docker(['volume', 'ls', '-q', '--filter', `name=${prefix}`]).split('\n').filter(Boolean)) docker(['volume', 'rm', '-f', name])
  }
  const flush = median(flushTimes)
  const copy = median(copyTimes)
  console.log(`#### Docker volume flush: ${FILES} × 1 KiB files in ${DIRS} dirs (fresh volume per run, median of ${RUNS})\n`)
  console.log('| files | rewindfs docker-volume apply | docker cp (CLI, from a local folder) | cp ÷ apply | rewindfs open (index of an empty volume) |')
  console.log('| ---: | ---: | ---: | ---: | ---: |')
  console.log(`| ${FILES} | ${ms(flush)} | ${ms(copy)} | ${(copy / flush).toFixed(2)}× | ${ms(median(openTimes))} |`)
}

await main()
