/**
 * Code under test for the vi.mock recipe of rewindfs/testing: it imports Node's fs in the three
 * usual ways and knows nothing about rewindfs.
 */
import fs from 'fs'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { readFile, rm } from 'node:fs/promises'

export function loadConfig(path: string): { port: number } {
  return JSON.parse(readFileSync(path, 'utf8')) as { port: number }
}

export function setPort(path: string, port: number): void {
  writeFileSync(path, JSON.stringify({ ...loadConfig(path), port }) + '\n')
}

export async function readNotes(path: string): Promise<string> {
  return readFile(path, 'utf8')
}

/** Deletes a directory tree: what a test must never let reach the real disk. */
export async function wipe(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true })
}

export function hasConfig(path: string): boolean {
  return existsSync(path) && fs.statSync(path).isFile()
}
