/**
 * search_files over MCP with patterns on which JavaScript's backtracking RegExp runs for minutes:
 * (a+)+$ over a file of 32 'a's and a '!' froze `rewindfs mcp` (r-regex-redos.mjs: no answer to a
 * ping within 15 s, every other call blocked behind it). Now the search answers, a ping and a read
 * sent while it runs answer too, and a pattern that needs backtracking is refused with an error that
 * says why, after which the server keeps serving. The deadline below is a hang detector, not a
 * measurement: the answers come in milliseconds.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import { CLI, REPO, buildCli, removeCli } from './cli-process.js'

let tmp: string
let client: Client | undefined

beforeAll(async () => {
  await buildCli()
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-mcp-redos-'))
})
afterAll(() => {
  removeCli()
  fs.rmSync(tmp, { recursive: true, force: true })
})
afterEach(async () => {
  await client?.close() // also ends a server that hangs
  client = undefined
})

/** The parsed JSON of a tool result. */
interface Answer {
  readonly isError: boolean
  readonly body: { readonly matches?: readonly { readonly path: string; readonly line_number: number }[]; readonly error?: { readonly code: string; readonly message: string } }
}

async function call(name: string, args: Record<string, unknown>): Promise<Answer> {
  const result = (await client!.callTool({ name, arguments: args })) as CallToolResult
  const [content] = result.content
  if (content.type !== 'text') throw new Error(`expected text content, got ${content.type}`)
  return { isError: result.isError === true, body: JSON.parse(content.text) as Answer['body'] }
}

/** `promise`'s value, or 'no answer' after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'no answer'> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<'no answer'>((resolve) => (timer = setTimeout(() => resolve('no answer'), ms)))
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}

it('answers a catastrophic pattern, and a ping and a read sent meanwhile, and refuses backreferences with a reason', async () => {
  const project = path.join(tmp, 'project')
  fs.mkdirSync(project, { recursive: true })
  fs.writeFileSync(path.join(project, 'data.txt'), 'a'.repeat(32) + '!\n' + 'a'.repeat(64) + '\n')
  fs.writeFileSync(path.join(project, 'README.md'), '# app\n')
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--dir', project], cwd: REPO, stderr: 'pipe' })
  client = new Client({ name: 'rewindfs-test', version: '1.0.0' })
  await client.connect(transport)

  const search = call('search_files', { pattern: '(a+)+$', regex: true })
  const ping = client.ping().then(() => 'pong')
  const read = call('read_file', { path: 'README.md' })
  expect(await within(ping, 20_000)).toBe('pong')
  const found = await within(search, 20_000)
  expect(found).toMatchObject({ isError: false, body: { matches: [{ path: '/data.txt', line_number: 2 }] } })
  expect(await within(read, 20_000)).toMatchObject({ isError: false })

  // Case-insensitive too (V8's linear fallback skips i- and u-flagged expressions), and a nested one.
  for (const pattern of ['(A+)+$', '(\\w+\\s?)+$', '(a|aa)+$']) {
    expect(await within(call('search_files', { pattern, regex: true, case_sensitive: false }), 20_000)).toMatchObject({ isError: false })
  }

  const refused = await call('search_files', { pattern: '(a+)\\1!', regex: true })
  expect(refused).toMatchObject({ isError: true, body: { error: { code: 'EINVALIDINPUT', message: expect.stringContaining('backreferences are not supported') } } })
  expect(refused.body.error?.message).toContain('as ripgrep does without -P')
  expect(await call('read_file', { path: 'data.txt' })).toMatchObject({ isError: false })
})
