/**
 * A full disk under the directory store, for real: a child process on a 6 MiB tmpfs of its own (a
 * private mount namespace, as root) fills it one acknowledged group commit at a time. The store
 * must take commits until the disk itself is full (the zeros it writes ahead of its records are an
 * optimisation, never a reserve the disk must hold), fail the one that does not fit without losing
 * one before it, and once space is freed take what the workspace kept back meanwhile, by itself,
 * telling ws.events 'store' listeners both times.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { capability } from '../support/require.js'

const unshare = spawnSync('unshare', ['-m', 'true']).status === 0
const available = capability('small-disk', process.getuid?.() !== 0 ? 'not root (a tmpfs is mounted in a private mount namespace)' : unshare ? undefined : 'unshare -m does not work here')

const scratch = fs.mkdtempSync(`${os.tmpdir()}/rewindfs-full-disk-`)
const child = `${scratch}/child.mjs`
const DISK = 6 * 1024 * 1024

beforeAll(async () => {
  await build({ entryPoints: ['test/adapters/fixtures/node-fs-full-disk-child.ts'], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: child, logLevel: 'error' })
})
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))

describe.skipIf(!available)('the directory store on a full disk', () => {
  it('takes commits until the disk is full, fails the next losing nothing, and takes what was kept back once space is freed', () => {
    const mount = fs.mkdtempSync(`${scratch}/disk-`)
    const result = spawnSync('unshare', ['-m', 'sh', '-c', `mount -t tmpfs -o size=${DISK} tmpfs "$1" && exec "$2" "$3" "$1"`, 'sh', mount, process.execPath, child], { encoding: 'utf8' })
    expect(result.status, result.stderr).toBe(0)
    const seen = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { acknowledged: number; failure: string; freeWhenFull: number; reconnect: string | null; after: string; intact: number; kept: string[]; corrupt: unknown; storeEvents: string[] }
    // Nearly all of the disk beside the ballast went to acknowledged contents: no 4 MiB kept back for preallocated zeros.
    expect(seen.acknowledged * 64 * 1024).toBeGreaterThan(DISK - 2 * 1024 * 1024)
    expect(seen.freeWhenFull).toBeLessThan(512 * 1024)
    expect(seen.failure).toMatch(/^EDEGRADED: .*ENOSPC/)
    // The ballast gone, the store took the commit that failed and what came after it.
    expect(seen.reconnect).toBe('reconnected')
    // Told as it happened (ws.events 'store'), the status current when told.
    expect(seen.storeEvents).toEqual(['failed: degraded', 'reconnected: ok'])
    expect(seen.after).toBe('committed')
    expect(seen.intact).toBe(seen.acknowledged + 1)
    expect(seen.kept).toEqual(['/while-full.txt', '/after.txt'])
    expect(seen.corrupt).toBeNull()
  }, 60_000)
})
