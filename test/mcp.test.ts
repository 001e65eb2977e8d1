/**
 * `rewindfs mcp` as an MCP client sees it: the SDK's own Client over stdio to a real child process
 * serving a real temp directory. The directory must not change until commit_changes; every failure,
 * malformed arguments and a missing tool name included, comes back as a tool result with isError
 * naming workspace paths, never the host's; an oversized or malformed message gets an error naming
 * the limit (mcp-oversize-kills-session.js: one over 10 MiB made the server exit), and the server
 * keeps serving.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { type CallToolResult, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { CLI, REPO, buildCli, removeCli, runCli } from './cli-process.js'

let tmp: string
let project: string
const open: { client: Client; transport: StdioClientTransport }[] = []

beforeAll(buildCli)
afterAll(removeCli)

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-mcp-'))
  project = path.join(tmp, 'project')
  fs.mkdirSync(path.join(project, 'app'), { recursive: true })
  fs.writeFileSync(path.join(project, 'app/config.json'), '{ "port": 8080 }\n')
  fs.writeFileSync(path.join(project, 'README.md'), '# app\n')
})

afterEach(async () => {
  for (const { client } of open.splice(0)) await client.close()
  fs.rmSync(tmp, { recursive: true, force: true })
})

async function connect(...extra: string[]): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--dir', project, ...extra], cwd: REPO, stderr: 'pipe' })
  let stderr = ''
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const client = new Client({ name: 'rewindfs-test', version: '1.0.0' })
  await client.connect(transport)
  open.push({ client, transport })
  return { client, transport, stderr: () => stderr }
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; body: any }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  expect(result.content).toHaveLength(1)
  const [content] = result.content
  if (content.type !== 'text') throw new Error(`expected text content, got ${content.type}`)
  return { isError: result.isError === true, body: JSON.parse(content.text) }
}

const onDisk = (rel: string) => (fs.existsSync(path.join(project, rel)) ? fs.readFileSync(path.join(project, rel), 'utf8') : undefined)

describe('rewindfs mcp', () => {
  it('lists the agent tools with their JSON Schemas, commit_changes included', async () => {
    const { client } = await connect()
    const { tools } = await client.listTools()
    const names = tools.map((tool) => tool.name)
    expect(names).toEqual(expect.arrayContaining(['read_file', 'write_file', 'edit_file', 'list_directory', 'undo_operation', 'rollback_to_checkpoint', 'manage_checkpoint', 'operation_history', 'commit_changes']))
    const write = tools.find((tool) => tool.name === 'write_file')!
    expect(write.inputSchema.type).toBe('object')
    expect(write.inputSchema.required).toEqual(expect.arrayContaining(['path', 'content']))
    expect(tools.find((tool) => tool.name === 'commit_changes')!.description).toContain(fs.realpathSync(project))
    expect(client.getServerVersion()?.name).toBe('rewindfs')
  })

  it('writes land in the workspace only; commit_changes writes them into the directory', async () => {
    const { client } = await connect()
    expect(await call(client, 'read_file', { path: '/app/config.json' })).toMatchObject({ isError: false })
    expect((await call(client, 'write_file', { path: '/app/config.json', content: '{ "port": 9090 }\n' })).isError).toBe(false)
    expect((await call(client, 'write_file', { path: '/app/notes.md', content: 'notes\n' })).isError).toBe(false)
    expect((await call(client, 'delete_path', { path: '/README.md' })).isError).toBe(false)
    const listed = await call(client, 'list_directory', { path: '/app' })
    expect(JSON.stringify(listed.body)).toContain('notes.md')

    // Nothing on disk yet.
    expect(onDisk('app/config.json')).toBe('{ "port": 8080 }\n')
    expect(onDisk('app/notes.md')).toBeUndefined()
    expect(onDisk('README.md')).toBe('# app\n')

    const commit = await call(client, 'commit_changes', {})
    expect(commit.isError).toBe(false)
    expect(commit.body.applied).toBe(true)
    expect(commit.body.changes).toEqual(
      expect.arrayContaining([
        { path: '/app/config.json', change: 'modified', entry: 'file' },
        { path: '/app/notes.md', change: 'added', entry: 'file' },
        { path: '/README.md', change: 'deleted', entry: 'file' },
      ]),
    )
    expect(onDisk('app/config.json')).toBe('{ "port": 9090 }\n')
    expect(onDisk('app/notes.md')).toBe('notes\n')
    expect(onDisk('README.md')).toBeUndefined()
    // A second commit has nothing left to write.
    expect((await call(client, 'commit_changes', {})).body.changes).toEqual([])
  })

  it('answers malformed arguments, unknown tools and fs errors as tool errors and keeps serving', async () => {
    const { client } = await connect()
    const invalid = await call(client, 'write_file', { path: 42 })
    expect(invalid.isError).toBe(true)
    expect(invalid.body.error.code).toBe('EINVALIDINPUT')
    expect(invalid.body.error.issues.map((issue: { path: string }) => issue.path)).toEqual(expect.arrayContaining(['path', 'content']))

    const missing = await call(client, 'read_file', { path: '/nope.txt' })
    expect(missing).toMatchObject({ isError: true, body: { error: { code: 'ENOENT' } } })

    const unknown = await call(client, 'format_disk', {})
    expect(unknown).toMatchObject({ isError: true, body: { error: { code: 'EUNKNOWNTOOL' } } })

    // Arguments that are not even an object: still a tool error the model can read.
    const text = (await client.callTool({ name: 'write_file', arguments: 'text' as unknown as Record<string, unknown> })) as CallToolResult
    expect(text.isError).toBe(true)
    expect(JSON.parse((text.content[0] as { text: string }).text).error).toMatchObject({ code: 'EINVALIDINPUT', message: expect.stringContaining('expected object') })
    // A call naming no tool, or not by a string, is a tool error too (it was JSON-RPC -32602).
    for (const params of [{ arguments: {} }, { name: 42, arguments: {} }, { name: null }, {}]) {
      const result = await client.request({ method: 'tools/call', params } as never, CallToolResultSchema)
      expect(result.isError).toBe(true)
      expect(JSON.parse((result.content[0] as { text: string }).text).error).toMatchObject({ code: 'EINVALIDINPUT', message: expect.stringContaining('params.name') })
    }

    expect(await call(client, 'write_file', { path: '/still.txt', content: 'alive\n' })).toMatchObject({ isError: false })
    expect(await call(client, 'read_file', { path: '/still.txt' })).toMatchObject({ isError: false })
  })

  it('refuses a commit over a file changed on disk since it was read, unless forced', async () => {
    const { client } = await connect()
    await call(client, 'read_file', { path: '/app/config.json' })
    await call(client, 'write_file', { path: '/app/config.json', content: '{ "port": 1 }\n' })
    fs.writeFileSync(path.join(project, 'app/config.json'), '{ "port": 2, "theirs": true }\n')
    const refused = await call(client, 'commit_changes', {})
    expect(refused).toMatchObject({ isError: true, body: { error: { code: 'ECONFLICT' } } })
    expect(refused.body.error.message).toContain('/app/config.json')
    expect(onDisk('app/config.json')).toBe('{ "port": 2, "theirs": true }\n')
    const forced = await call(client, 'commit_changes', { force: true })
    expect(forced).toMatchObject({ isError: false, body: { applied: true, overwritten_conflicts: ['/app/config.json'] } })
    expect(onDisk('app/config.json')).toBe('{ "port": 1 }\n')
  })

  it('with --store, keeps the session when the client goes away, for the next server and the CLI', async () => {
    const store = path.join(tmp, 'store')
    const first = await connect('--store', store, '--session', 'agent')
    await call(first.client, 'write_file', { path: '/app/notes.md', content: 'kept\n' })
    await call(first.client, 'manage_checkpoint', { action: 'create', checkpoint_name: 'after-notes' })
    const pid = first.transport.pid!
    const closing = Date.now()
    await first.client.close()
    open.splice(0)
    // stdin closed: the server closed its workspace and exited by itself, before the SDK's SIGTERM at 2 s.
    expect(isAlive(pid)).toBe(false)
    expect(Date.now() - closing).toBeLessThan(2000)
    expect(first.stderr()).toContain('rewindfs MCP server')

    const status = runCli(['status', '--dir', project, '--store', store, '--session', 'agent', '--json'])
    expect(status.code).toBe(0)
    expect(JSON.parse(status.stdout)).toMatchObject({ changes: [{ path: '/app/notes.md', type: 'added', entry: 'file' }], checkpoints: 1 })

    const second = await connect('--store', store, '--session', 'agent')
    expect(await call(second.client, 'read_file', { path: '/app/notes.md' })).toMatchObject({ isError: false })
    expect(JSON.stringify((await call(second.client, 'manage_checkpoint', { action: 'list' })).body)).toContain('after-notes')
    expect(onDisk('app/notes.md')).toBeUndefined()
  })

  it('on SIGTERM, makes the session durable before it exits', async () => {
    const store = path.join(tmp, 'store')
    const { client, transport } = await connect('--store', store)
    await call(client, 'write_file', { path: '/app/late.md', content: 'written just before the signal\n' })
    const exited = new Promise<void>((resolve) => (transport.onclose = resolve))
    process.kill(transport.pid!, 'SIGTERM')
    await exited
    expect(fs.existsSync(path.join(store, 'lock'))).toBe(false) // closed, not killed: the store's lock is given back
    const status = runCli(['status', '--dir', project, '--store', store, '--json'])
    expect(JSON.parse(status.stdout).changes).toEqual([{ path: '/app/late.md', type: 'added', entry: 'file' }])
  })

  it('searches and finds over the workspace view; run_command only with --allow-commands, its changes kept off the disk until commit', async () => {
    fs.writeFileSync(path.join(project, '.gitignore'), 'dist/\n')
    fs.mkdirSync(path.join(project, 'dist'))
    fs.writeFileSync(path.join(project, 'dist/bundle.js'), '"port": 1\n')
    const plain = await connect()
    const names = (await plain.client.listTools()).tools.map((tool) => tool.name)
    expect(names).toEqual(expect.arrayContaining(['search_files', 'find_files', 'insert_text']))
    expect(names).not.toContain('run_command')
    await call(plain.client, 'write_file', { path: '/app/extra.json', content: '{ "port": 9090 }\n' })
    const found = await call(plain.client, 'search_files', { pattern: '"port"' })
    expect(found.body.matches).toEqual([
      { path: '/app/config.json', line_number: 1, line: '{ "port": 8080 }' },
      { path: '/app/extra.json', line_number: 1, line: '{ "port": 9090 }' },
    ])
    expect((await call(plain.client, 'find_files', { pattern: '*.json' })).body.files).toEqual(['/app/config.json', '/app/extra.json'])
    await plain.client.close()
    open.splice(0)

    const { client } = await connect('--allow-commands')
    const tools = (await client.listTools()).tools
    expect(tools.map((tool) => tool.name)).toContain('run_command')
    expect(tools.find((tool) => tool.name === 'run_command')!.description).toContain('result budget')
    const ran = await call(client, 'run_command', { command: 'sed -i s/8080/7070/ app/config.json && echo ok > made.txt && cat app/config.json' })
    expect(ran).toMatchObject({ isError: false, body: { exit_code: 0, stdout: '{ "port": 7070 }\n', changes: { added: ['/made.txt'], modified: ['/app/config.json'], deleted: [] } } })
    expect(onDisk('app/config.json')).toBe('{ "port": 8080 }\n')
    expect(onDisk('made.txt')).toBeUndefined()
    expect((await call(client, 'read_file', { path: '/made.txt' })).body.content).toBe('ok')
    await call(client, 'commit_changes', {})
    expect(onDisk('app/config.json')).toBe('{ "port": 7070 }\n')
    expect(onDisk('made.txt')).toBe('ok\n')
  })

  it('runs run_command in the sandbox the exec options ask for, says so in its instructions, and refuses them without --allow-commands', async () => {
    const refused = runCli(['mcp', '--dir', project, '--read-only-host'])
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('mcp: --read-only-host applies to the commands run_command runs: add --allow-commands') })
    const { client } = await connect('--allow-commands', '--read-only-host', '--no-network')
    expect(client.getInstructions()).toContain('Commands run sandboxed: they have no network (loopback only); everything outside the project is read-only and /tmp is private.')
    // A host directory outside /tmp (which the sandbox makes private): read-only there.
    const host = fs.mkdtempSync('/var/tmp/rewindfs-mcp-sandbox-')
    const outside = path.join(host, 'outside.txt')
    const ran = await call(client, 'run_command', { command: `echo ok > inside.txt; echo no > ${outside} 2>/dev/null || echo refused; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '` })
    expect(ran).toMatchObject({ isError: false, body: { exit_code: 0, stdout: 'refused\nlo\n', changes: { added: ['/inside.txt'], modified: [], deleted: [] } } })
    expect(fs.existsSync(outside)).toBe(false)
    fs.rmSync(host, { recursive: true, force: true })
  })

  it("commit_changes refuses a link a command made out of the project (a venv's bin/python3), naming the way out; with --allow-links-outside it writes it as it is", async () => {
    const plain = await connect('--allow-commands')
    expect((await call(plain.client, 'run_command', { command: 'mkdir -p venv/bin && ln -s /bin/sh venv/bin/sh' })).body.exit_code).toBe(0)
    const refused = await call(plain.client, 'commit_changes', {})
    expect(refused.isError).toBe(true)
    expect(refused.body.error).toMatchObject({ code: 'EACCES', message: expect.stringContaining('--allow-links-outside') })
    expect(onDisk('venv')).toBeUndefined()
    await plain.client.close()
    open.splice(0)

    const { client } = await connect('--allow-commands', '--allow-links-outside')
    expect((await call(client, 'run_command', { command: 'mkdir -p venv/bin && ln -s /bin/sh venv/bin/sh' })).body.exit_code).toBe(0)
    expect((await call(client, 'commit_changes', {})).isError).toBe(false)
    expect(fs.readlinkSync(path.join(project, 'venv/bin/sh'))).toBe('/bin/sh')
  })

  it('keeps every answer within the result budget on a project with thousands of files, and a rollback is undone only on request', async () => {
    for (let i = 0; i < 3000; i++) {
      const dir = path.join(project, 'lib', `m${i % 30}`)
      fs.mkdirSync(dir, { recursive: true })
      fs.writeFileSync(path.join(dir, `f${i}.js`), `export const value${i} = ${i}\n`.repeat(20))
    }
    const { client } = await connect()
    const sizes: Record<string, number> = {}
    const sized = async (label: string, name: string, args: Record<string, unknown>) => {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult
      const text = (result.content[0] as { text: string }).text
      sizes[label] = text.length
      return { isError: result.isError === true, body: JSON.parse(text) }
    }
    await sized('checkpoint', 'manage_checkpoint', { action: 'create', checkpoint_name: 'start' })
    await sized('delete', 'delete_path', { path: '/lib', recursive: true })
    await sized('write', 'write_file', { path: '/app/new.txt', content: 'new\n' })
    const preview = await sized('preview', 'rollback_to_checkpoint', { target: { checkpoint_id: 'start' } })
    expect(preview.body.summary.paths).toBe(3032)
    expect(preview.body.next_offset).toBeGreaterThan(0)
    const rollback = await sized('rollback', 'rollback_to_checkpoint', { target: { checkpoint_id: 'start' }, preview_changes: false })
    expect(rollback.body.applied).toBe(true)
    await sized('history', 'operation_history', { limit: 5 })
    const trap = await sized('undo', 'undo_operation', { steps: 2 })
    expect(trap).toMatchObject({ isError: true, body: { error: { code: 'ENOTHINGTOUNDO', message: expect.stringContaining('operation_type "restore"') } } })
    expect((await call(client, 'find_files', { pattern: '*.js', max_results: 1 })).body.files).toEqual(['/lib/m0/f0.js'])
    await sized('list', 'list_directory', { path: '/', recursive: true })
    await sized('search', 'search_files', { pattern: 'value' })
    await sized('commit', 'commit_changes', {})
    expect(fs.existsSync(path.join(project, 'lib/m0/f0.js'))).toBe(true)
    for (const [label, size] of Object.entries(sizes)) expect([label, size <= 8000]).toEqual([label, true])
  })

  it('names workspace paths in errors, never the project directory on the host', async () => {
    const { client } = await connect()
    expect(await call(client, 'write_file', { path: '/app/extra/new.txt', content: 'new\n' })).toMatchObject({ isError: false })
    // The directory the change goes into became a link out of the project on disk: the commit fails naming the path.
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-outside-'))
    fs.rmSync(path.join(project, 'app'), { recursive: true })
    fs.symlinkSync(outside, path.join(project, 'app'))
    const failed = await call(client, 'commit_changes', { force: true })
    fs.rmSync(outside, { recursive: true })
    expect(failed.isError).toBe(true)
    const text = JSON.stringify(failed.body)
    expect(text).toContain("'/app")
    expect(text).not.toContain(tmp)
    expect(text).not.toContain(fs.realpathSync(tmp))
  })

  it("takes the project's host path, as commands show it, for the workspace path it stands for", async () => {
    const { client } = await connect()
    const real = fs.realpathSync(project)
    expect((await call(client, 'read_file', { path: `${real}/app/config.json` })).body).toMatchObject({ path: '/app/config.json', content: '{ "port": 8080 }' })
    expect((await call(client, 'edit_file', { path: `${real}/app/config.json`, old_string: '8080', new_string: '9090' })).isError).toBe(false)
    expect((await call(client, 'write_file', { path: `${real}/app/notes.md`, content: 'notes\n' })).body.path).toBe('/app/notes.md')
    expect((await call(client, 'commit_changes', {})).isError).toBe(false)
    expect(onDisk('app/config.json')).toBe('{ "port": 9090 }\n')
    expect(onDisk('app/notes.md')).toBe('notes\n')
    // No copy of the host's folders inside the project (the flush's staging folder aside).
    expect(fs.readdirSync(project).filter((name) => !name.startsWith('.rewindfs-')).sort()).toEqual(['README.md', 'app'])
  })

  it('states the message limit in every tool description, and marks the reading tools read-only', async () => {
    const { client } = await connect()
    const { tools } = await client.listTools()
    for (const tool of tools) expect(tool.description).toContain('at most 32 MiB')
    expect(tools.filter((tool) => tool.annotations?.readOnlyHint).map((tool) => tool.name).sort()).toEqual(['find_files', 'list_directory', 'operation_history', 'read_file', 'search_files'])
  })

  it('answers messages up to 64 MiB: within the limit they run, above it a tool error names the limit; the server keeps serving', async () => {
    const { client, transport, stderr } = await connect()
    const exited = new Promise((resolve) => transport['_process']?.once('exit', resolve))
    const sizes = [16, 31, 33, 64]
    for (const mib of sizes) {
      const content = 'A'.repeat(mib * 1024 * 1024)
      const result = await call(client, 'write_file', { path: `/big-${mib}.txt`, content })
      if (mib < 32) expect(result).toMatchObject({ isError: false, body: { bytes: content.length } })
      else expect(result).toMatchObject({ isError: true, body: { error: { code: 'EMSGSIZE', message: expect.stringContaining('at most 32 MiB') } } })
    }
    expect(await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('alive'), 100))])).toBe('alive')
    expect(await call(client, 'read_file', { path: '/README.md' })).toMatchObject({ isError: false })
    expect((await call(client, 'list_directory', { path: '/' })).body.entries.map((entry: { path: string }) => entry.path)).toEqual(
      expect.arrayContaining(['big-16.txt', 'big-31.txt']),
    )
    expect(stderr()).toContain('refused tools/call write_file')
  }, 120_000)

  it('answers deep JSON, invalid UTF-8, non-JSON and non-JSON-RPC lines with errors, and keeps serving', async () => {
    const { client, transport } = await connect()
    // Raw lines straight to the server's stdin; its raw answers read from its stdout.
    const child = (transport as unknown as { _process: import('node:child_process').ChildProcess })._process
    let raw = ''
    child.stdout!.on('data', (chunk: Buffer) => (raw += chunk.toString()))
    const answer = async (id: number | null): Promise<any> => {
      for (let i = 0; i < 200; i++) {
        const line = raw.split('\n').find((candidate) => candidate.includes(`"id":${JSON.stringify(id)}`))
        if (line) return JSON.parse(line)
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      throw new Error(`no answer with id ${id}; got ${raw.slice(0, 500)}`)
    }
    const send = (bytes: Buffer | string) => child.stdin!.write(bytes)

    // Deep JSON through the SDK client: a tool error naming the limit.
    let deep: unknown = 'x'
    for (let i = 0; i < 1000; i++) deep = [deep]
    const tooDeep = await call(client, 'write_file', { path: '/deep.txt', content: deep })
    expect(tooDeep).toMatchObject({ isError: true, body: { error: { code: 'EINVALIDINPUT', message: expect.stringContaining('at most 64') } } })
    // Far deeper, written raw (the SDK cannot serialise it): refused before it is parsed.
    send(`{"jsonrpc":"2.0","id":9001,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/d.txt","content":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}}}\n`)
    expect((await answer(9001)).result).toMatchObject({ isError: true })
    // Invalid UTF-8 in a tool's content: a tool error, nothing written.
    send(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":9002,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/u.txt","content":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}}}\n')]))
    const utf8 = await answer(9002)
    expect(JSON.parse(utf8.result.content[0].text).error).toMatchObject({ code: 'EILSEQ', message: expect.stringContaining('UTF-8') })
    // Not JSON at all, and JSON that is no JSON-RPC message.
    send('this is not json\n')
    expect((await answer(null)).error).toMatchObject({ code: -32700 })
    send('{"jsonrpc":"2.0","id":9003,"method":42}\n')
    expect((await answer(9003)).error).toMatchObject({ code: -32600 })
    // Still serving, and nothing of the refused calls was written.
    expect(await call(client, 'write_file', { path: '/after.txt', content: 'fine\n' })).toMatchObject({ isError: false })
    for (const name of ['/deep.txt', '/d.txt', '/u.txt']) expect(await call(client, 'read_file', { path: name })).toMatchObject({ isError: true, body: { error: { code: 'ENOENT' } } })
  }, 60_000)

  it('fails at once, with the reason on stderr, for a project directory that does not exist', () => {
    const result = runCli(['mcp', '--dir', path.join(tmp, 'missing')])
    expect(result.code).toBe(4)
    expect(result.stderr).toContain('ENOENT')
    expect(result.stdout).toBe('')
  })
})

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
