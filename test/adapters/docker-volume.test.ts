/**
 * The Docker volume adapter against a real daemon. The oracle is the docker CLI running busybox in a
 * container with the volume mounted (find, stat, sha256sum, readlink), never the adapter's own HTTP
 * code. Needs the daemon and image of scripts/provision-docker.sh (socket REWINDFS_DOCKER_SOCKET,
 * default /tmp/rewindfs-docker.sock).
 */
import { execFileSync, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { Workspace } from '../../src/index.js'
import type { FlushEntry } from '../../src/flush/target.js'
import { dockerVolume, type DockerVolume } from '../../adapters/docker-volume/index.js'
import { readIndex } from '../../adapters/docker-volume/archive.js'
import { DockerEngine } from '../../adapters/docker-volume/engine.js'
import { HELPER_LABEL, Helper } from '../../adapters/docker-volume/helper.js'
import { flushId, stagingTar } from '../../adapters/docker-volume/manifest.js'
import { capability } from '../support/require.js'

const socketPath = process.env.REWINDFS_DOCKER_SOCKET ?? '/tmp/rewindfs-docker.sock'
const helperImage = 'rewindfs-helper:local'
const run = `${process.pid}-${Date.now().toString(36)}`
const volumes: string[] = []

function docker(args: string[]): string {
  return execFileSync('docker', ['-H', `unix://${socketPath}`, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

function dockerProblem(): string | undefined {
  if (!existsSync(socketPath)) return `no Docker socket at ${socketPath} (run scripts/provision-docker.sh as root, or set REWINDFS_DOCKER_SOCKET)`
  try {
    docker(['image', 'inspect', '--format', '{{.Id}}', helperImage])
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? (error as Error).message).trim()
    return `the daemon on ${socketPath} or its image ${helperImage} is unusable (${stderr}); run scripts/provision-docker.sh`
  }
  return undefined
}

/** Runs a busybox script with the volume at /v: the oracle for what the volume holds. */
function inVolume(volume: string, script: string): string {
  return docker(['run', '--rm', '--network', 'none', '-v', `${volume}:/v`, helperImage, 'sh', '-c', script])
}

function newVolume(label: string, fill?: string): string {
  const name = `rewindfs-test-${run}-${label}`
  docker(['volume', 'create', name])
  volumes.push(name)
  if (fill) inVolume(name, `set -e; cd /v; ${fill}`)
  return name
}

const open = (name: string, preloadBytes?: number) => dockerVolume({ name, socketPath, helperImage, preloadBytes })

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** Every entry as 'path|dir|perm', 'path|symlink|target' or 'path|file|perm|mtime s|sha256', sorted. */
function oracleListing(volume: string): string[] {
  const script = `cd /v && find . ! -path './.rewindfs-flush*' | while IFS= read -r p; do
    n="\${p#.}"; [ -n "$n" ] || n=/
    if [ -L "$p" ]; then echo "$n|symlink|$(readlink "$p")"
    elif [ -d "$p" ]; then echo "$n|dir|$(stat -c %a "$p")"
    else set -- $(sha256sum < "$p"); echo "$n|file|$(stat -c %a "$p")|$(stat -c %Y "$p")|$1"; fi
  done`
  return inVolume(volume, script).split('\n').filter(Boolean).sort()
}

/** The same listing as the workspace sees it through its fs. */
function workspaceListing(ws: Workspace): string[] {
  const lines: string[] = []
  const visit = (path: string) => {
    const stat = ws.fs.lstatSync(path)
    const perm = (stat.mode & 0o7777).toString(8)
    if (stat.isSymbolicLink()) lines.push(`${path}|symlink|${ws.fs.readlinkSync(path)}`)
    else if (stat.isDirectory()) {
      lines.push(`${path}|dir|${perm}`)
      for (const name of ws.fs.readdirSync(path) as string[]) visit(path === '/' ? `/${name}` : `${path}/${name}`)
    } else lines.push(`${path}|file|${perm}|${Math.floor(stat.mtimeMs / 1000)}|${sha256(ws.fs.readFileSync(path) as Uint8Array)}`)
  }
  visit('/')
  return lines.sort()
}

function allPaths(ws: Workspace): string[] {
  return workspaceListing(ws).map((line) => line.split('|')[0])
}

/** Helper containers on this run's volumes (another run may share the daemon). */
const helperContainers = () =>
  docker(['ps', '-a', '--filter', `label=${HELPER_LABEL}`, '--format', `{{.ID}} {{.Label "${HELPER_LABEL}"}}`])
    .split('\n')
    .filter((line) => line.includes(` rewindfs-test-${run}-`))

const FILL = [
  'mkdir -p app/src/deep empty',
  "printf '{\"port\": 8080}\\n' > app/config.json",
  "printf 'serve()\\n' > app/src/index.js",
  "printf '\\001\\002\\377\\000binary' > app/src/deep/blob.bin",
  ': > app/empty.txt',
  "printf 'secret' > app/key.pem && chmod 600 app/key.pem",
  "printf '#!/bin/sh\\n' > app/run.sh && chmod 4755 app/run.sh",
  'chmod 750 app/src',
  'ln -s src/index.js app/main.js',
  'ln -s /app/config.json app/absolute',
  'ln -s nowhere app/dangling',
  `printf 'odd' > "app/it's a \\$(name) \\\`x\\\`"`,
  "printf 'ü' > 'app/ünïcødé ✓.txt'",
  'ln app/config.json app/hardlink.json',
  // Past ustar's 100-byte name and link fields: the archive needs PAX records.
  `mkdir -p app/${'n'.repeat(120)} && printf 'deep' > app/${'n'.repeat(120)}/${'f'.repeat(120)}.txt`,
  `ln -s ${'t'.repeat(150)} app/long-link`,
  // Docker's path stat resolves link targets: a loop and an overlong name are stat'ed another way.
  'ln -s loop-b app/loop-a && ln -s loop-a app/loop-b',
  `ln -s ${'y'.repeat(300)} app/overlong`,
].join('; ')

const utf8 = (text: string) => new TextEncoder().encode(text)

describe.runIf(capability('docker', dockerProblem()))('docker volume adapter (real daemon)', () => {
  const opened: DockerVolume[] = []
  afterAll(async () => {
    for (const vol of opened) await vol.close()
    for (const name of volumes) docker(['volume', 'rm', '-f', name])
  })

  it('opens as a lower layer: the workspace reads exactly what the volume holds', async () => {
    const name = newVolume('lower', FILL)
    const vol = await open(name)
    opened.push(vol)
    expect(vol.id).toBe(`docker-volume:${name}`)
    const ws = await Workspace.open({ lower: vol })
    const seen = workspaceListing(ws)
    expect(seen).toEqual(oracleListing(name))
    expect(seen.find((line) => line.startsWith('/app/run.sh|'))).toMatch(/^\/app\/run\.sh\|file\|4755\|/)
    expect(ws.fs.readFileSync('/app/main.js', 'utf8')).toBe('serve()\n')
    expect(ws.fs.readFileSync("/app/it's a $(name) `x`", 'utf8')).toBe('odd')
    expect(ws.fs.readFileSync('/app/hardlink.json', 'utf8')).toBe('{"port": 8080}\n')
    // The index speaks the same versions as a fresh stat of the volume (what flush conflict checks compare).
    const paths = allPaths(ws)
    expect(await vol.versions(paths)).toEqual(paths.map((path) => vol.stat(path)?.version))
    await ws.close()
  })

  it('applies a change set: the volume holds exactly the new tree, and a fresh open reads it back', async () => {
    const name = newVolume('flush', FILL)
    const vol = await open(name)
    opened.push(vol)
    const before = oracleListing(name)
    const weird = "/app/new dir/it's \"$(rm -rf ~)\" `x`; \\ * ?"
    const entries: FlushEntry[] = [
      { path: '/app/src', kind: 'delete' }, // a whole tree
      { path: '/app/config.json', kind: 'delete' }, // file → directory
      { path: '/empty', kind: 'delete' }, // directory → file
      { path: '/app/config.json', kind: 'dir', mode: 0o700, mtimeMs: 1_600_000_000_000 },
      { path: '/app/config.json/port', kind: 'file', mode: 0o644, mtimeMs: 1_600_000_001_500, content: utf8('9090') },
      { path: '/empty', kind: 'file', mode: 0o640, mtimeMs: 1_500_000_000_000, content: new Uint8Array(0) },
      { path: '/app', kind: 'dir', mode: 0o711, mtimeMs: 1_400_000_000_000 }, // chmod of a kept directory
      { path: '/app/key.pem', kind: 'file', mode: 0o400, mtimeMs: 1_700_000_000_000, content: randomBytes(3000) },
      { path: '/app/new dir', kind: 'dir', mode: 0o755, mtimeMs: 1_650_000_000_000 },
      { path: weird, kind: 'file', mode: 0o600, mtimeMs: 1_650_000_000_000, content: utf8('quoted') },
      { path: '/app/new dir/link', kind: 'symlink', target: '../run.sh' },
      { path: '/app/main.js', kind: 'symlink', target: 'config.json/port' }, // symlink retargeted
      { path: `/app/new dir/${'x'.repeat(200)}`, kind: 'file', mode: 0o644, mtimeMs: 1_650_000_000_000, content: utf8('long') },
      { path: '/app/new dir/far', kind: 'symlink', target: 'y/'.repeat(150) },
      { path: '/app/new dir/ünïcødé ✓.txt', kind: 'file', mode: 0o644, mtimeMs: 1_650_000_000_000, content: utf8('ü') },
    ]
    const progress: number[] = []
    const versions = await vol.apply(entries, (p) => progress.push(p.done / p.total))
    expect(progress).toEqual([0, 1])

    const file = (path: string, perm: number, ms: number, content: Uint8Array) => `${path}|file|${perm.toString(8)}|${Math.floor(ms / 1000)}|${sha256(content)}`
    const expected = before
      .filter((line) => !/^\/app\/(src|config\.json|key\.pem|main\.js)[|/]/.test(line) && !line.startsWith('/empty|') && !line.startsWith('/app|'))
      .concat([
        '/app|dir|711',
        '/app/config.json|dir|700',
        file('/app/config.json/port', 0o644, 1_600_000_001_500, utf8('9090')),
        file('/empty', 0o640, 1_500_000_000_000, new Uint8Array(0)),
        file('/app/key.pem', 0o400, 1_700_000_000_000, (entries[7] as { content: Uint8Array }).content),
        '/app/new dir|dir|755',
        file(weird, 0o600, 1_650_000_000_000, utf8('quoted')),
        '/app/new dir/link|symlink|../run.sh',
        '/app/main.js|symlink|config.json/port',
        file(`/app/new dir/${'x'.repeat(200)}`, 0o644, 1_650_000_000_000, utf8('long')),
        `/app/new dir/far|symlink|${'y/'.repeat(150)}`,
        file('/app/new dir/ünïcødé ✓.txt', 0o644, 1_650_000_000_000, utf8('ü')),
      ])
      .sort()
    expect(oracleListing(name)).toEqual(expected)
    expect(inVolume(name, 'ls -a /v')).not.toContain('.rewindfs-flush')
    // Directory times are the entries' own, although children were moved into them afterwards.
    expect(inVolume(name, "stat -c %Y '/v/app/config.json' /v/app").split('\n').filter(Boolean)).toEqual(['1600000000', '1400000000'])

    // The open source's index took the change: a workspace over it sees the new tree already.
    const ws = await Workspace.open({ lower: vol })
    expect(workspaceListing(ws)).toEqual(expected)
    await ws.close()

    // A fresh open reads the same tree, and the versions apply reported are what the volume says now.
    const fresh = await open(name)
    opened.push(fresh)
    const again = await Workspace.open({ lower: fresh })
    expect(workspaceListing(again)).toEqual(expected)
    const lastVersion = new Map(entries.map((entry, i) => [entry.path, versions[i]]))
    for (const [path, version] of lastVersion) expect(fresh.stat(path)?.version, path).toBe(version)
    expect(await fresh.versions([...lastVersion.keys(), '/app/src/index.js'])).toEqual([...lastVersion.values(), undefined])
    await again.close()
  })

  it('takes ws.flush into its own lower source, and a path changed underneath since it was read is a conflict', async () => {
    const name = newVolume('workspace', FILL)
    const vol = await open(name)
    opened.push(vol)
    const ws = await Workspace.open({ lower: vol })
    ws.fs.writeFileSync('/app/config.json', '{"port": 9090}\n')
    ws.fs.mkdirSync('/app/lib/deep', { recursive: true })
    ws.fs.writeFileSync('/app/lib/deep/util.js', 'export {}\n')
    ws.fs.rmSync('/app/src', { recursive: true })
    ws.fs.renameSync('/app/key.pem', '/app/key.moved')
    ws.fs.symlinkSync('lib/deep/util.js', '/app/util')
    ws.fs.rmSync('/app/loop-a')
    ws.fs.rmSync('/app/overlong')
    ws.fs.symlinkSync('index.js', '/app/overlong')
    const report = await ws.flush(vol)
    expect(report.applied).toBe(true)
    expect(oracleListing(name)).toEqual(workspaceListing(ws))
    expect(ws.changes()).toEqual([])

    // Someone else edits a file the workspace has read; the workspace then edits it too.
    expect(ws.fs.readFileSync('/app/empty.txt', 'utf8')).toBe('')
    inVolume(name, "printf 'theirs' > /v/app/empty.txt")
    ws.fs.writeFileSync('/app/empty.txt', 'ours')
    await expect(ws.flush(vol)).rejects.toMatchObject({ code: 'ECONFLICT', conflicts: [{ target: vol.id, path: '/app/empty.txt' }] })
    expect(inVolume(name, 'cat /v/app/empty.txt')).toBe('theirs')
    await ws.close()
  })

  it('refuses entries the volume cannot take before sending anything, and loses nothing', async () => {
    const name = newVolume('refuse', FILL)
    const vol = await open(name)
    opened.push(vol)
    const before = oracleListing(name)
    const content = utf8('x')
    await expect(vol.apply([{ path: '/nowhere/file', kind: 'file', mode: 0o644, mtimeMs: 0, content }])).rejects.toMatchObject({ code: 'ENOENT', syscall: 'flush', path: '/nowhere/file' })
    // A parent deleted earlier in the same flush is gone too.
    await expect(vol.apply([{ path: '/app', kind: 'delete' }, { path: '/app/x', kind: 'file', mode: 0o644, mtimeMs: 0, content }])).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(vol.apply([{ path: 'relative', kind: 'file', mode: 0o644, mtimeMs: 0, content }])).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await expect(vol.apply([{ path: '/.rewindfs-flush/x', kind: 'file', mode: 0o644, mtimeMs: 0, content }])).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    expect(oracleListing(name)).toEqual(before)
    // It declares the staging folder, so a workspace over it refuses to create the name at all.
    expect(vol.reserved('/.rewindfs-flush/x')).toContain('staging folder')
    expect(vol.reserved('/.rewindfs-flushed')).toBeUndefined()
    const ws = await Workspace.open({ lower: vol })
    expect(() => ws.fs.mkdirSync('/.rewindfs-flush')).toThrow(expect.objectContaining({ code: 'EINVAL', syscall: 'mkdir' }))
  })

  it('finishes an interrupted flush on the next open: resumed after its last step, never re-running one', async () => {
    // /app/src is deleted and made again: re-running the delete after its child was moved in would lose it.
    const name = newVolume('interrupted', FILL)
    const entries: FlushEntry[] = [
      { path: '/app/src', kind: 'delete' },
      { path: '/app/src', kind: 'dir', mode: 0o755, mtimeMs: 1_600_000_000_000 },
      { path: '/app/src/moved.js', kind: 'file', mode: 0o644, mtimeMs: 1_600_000_000_000, content: utf8('moved') },
      { path: '/late.txt', kind: 'file', mode: 0o644, mtimeMs: 1_600_000_000_000, content: utf8('late') },
    ]
    const engine = new DockerEngine(socketPath)
    const helper = new Helper(engine, name, helperImage)
    const container = await helper.create('exit 0')
    try {
      const id = flushId()
      await helper.put(container, '/', stagingTar(id, entries))
      // The process "dies" after three steps of the manifest ran.
      inVolume(name, `cd /v/.rewindfs-flush/${id} && sed '/^step 4 /,$d' manifest.sh | sh -e`)
      expect(oracleListing(name)).toContain(`/app/src/moved.js|file|644|1600000000|${sha256(utf8('moved'))}`)
      expect(inVolume(name, 'ls -a /v')).toContain('.rewindfs-flush')
      // The staging folder is never part of the lower view.
      const archive = await helper.archive(container, '/')
      expect([...(await readIndex(archive!, 0)).keys()].filter((path) => path.includes('rewindfs-flush'))).toEqual([])
    } finally {
      await helper.remove(container)
      engine.close()
    }
    // Torn uploads (no end marker) are never applied: an old one is removed, a recent one (maybe another
    // writer's upload in progress) is left alone, outside the lower view.
    const torn = (id: string) =>
      `mkdir -p /v/.rewindfs-flush/${id}/tree && echo x > /v/.rewindfs-flush/${id}/tree/torn && printf 'step 1 put /torn\\n' > /v/.rewindfs-flush/${id}/manifest.sh`
    inVolume(name, `${torn('zy-old')} && touch -d @1600000000 /v/.rewindfs-flush/zy-old && ${torn('zz-recent')}`)

    const vol = await open(name)
    opened.push(vol)
    const listing = oracleListing(name)
    expect(listing).toContain(`/app/src/moved.js|file|644|1600000000|${sha256(utf8('moved'))}`)
    expect(listing).toContain(`/late.txt|file|644|1600000000|${sha256(utf8('late'))}`)
    expect(listing.filter((line) => line.startsWith('/app/src/'))).toHaveLength(1)
    expect(listing.some((line) => line.startsWith('/torn|'))).toBe(false)
    expect(inVolume(name, 'ls /v/.rewindfs-flush').split('\n').filter(Boolean)).toEqual(['zz-recent'])
    expect(vol.readdir('/')).not.toContain('.rewindfs-flush')
    const ws = await Workspace.open({ lower: vol })
    expect(workspaceListing(ws)).toEqual(listing)
    await ws.close()
  })

  it('preloads contents up to preloadBytes; the rest throw NotLoadedError synchronously and load on prefetch', async () => {
    const big = randomBytes(300_000)
    const name = newVolume('preload', "printf 'small file' > small.txt; head -c 300000 /dev/zero > zeros.bin; head -c 5000 /dev/zero > gone.bin")
    // Content the oracle did not write: upload it through a flush, then read it back on a fresh open.
    const writer = await open(name)
    await writer.apply([{ path: '/big.bin', kind: 'file', mode: 0o644, mtimeMs: Date.now(), content: big }])
    await writer.close()

    const vol = await open(name, 1000)
    opened.push(vol)
    expect(vol.loaded('/small.txt')).toBe(true)
    expect(vol.loaded('/big.bin')).toBe(false)
    expect(vol.loaded('/zeros.bin')).toBe(false)
    const ws = await Workspace.open({ lower: vol })
    expect(ws.fs.readFileSync('/small.txt', 'utf8')).toBe('small file')
    expect(ws.fs.statSync('/big.bin').size).toBe(300_000) // stats answer from the index
    expect(() => ws.fs.readFileSync('/big.bin')).toThrow(expect.objectContaining({ code: 'ERR_REWINDFS_NOT_LOADED', path: '/big.bin' }))
    // The promise form loads by itself; an explicit prefetch makes the sync form work.
    expect(sha256(await ws.fs.promises.readFile('/big.bin'))).toBe(sha256(big))
    await vol.prefetch(['/zeros.bin'])
    expect(vol.loaded('/zeros.bin')).toBe(true)
    expect(Buffer.from(ws.fs.readFileSync('/zeros.bin') as Uint8Array).equals(Buffer.alloc(300_000))).toBe(true)
    // Removed underneath before it was loaded: an fs error, not a file of zero bytes.
    inVolume(name, 'rm /v/gone.bin')
    await expect(vol.prefetch(['/gone.bin'])).rejects.toMatchObject({ code: 'ENOENT', path: '/gone.bin' })
    await ws.close()
  })

  it('says clearly what is missing: no daemon, a refused socket, no volume, no helper image, bad options', async () => {
    const missing = '/tmp/rewindfs-no-daemon-here.sock'
    await expect(dockerVolume({ name: 'any-volume', socketPath: missing })).rejects.toMatchObject({
      code: 'ERR_DOCKER_UNAVAILABLE',
      message: expect.stringMatching(/no Docker daemon answers on \/tmp\/rewindfs-no-daemon-here\.sock: the socket does not exist.*provision-docker\.sh/),
    })

    // A socket file nobody listens on: its server was killed without cleaning up.
    const refused = `/tmp/rewindfs-refused-${run}.sock`
    const server = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(refused)}, () => console.log('ready'))`])
    await new Promise((resolve) => server.stdout.once('data', resolve))
    server.kill('SIGKILL')
    await new Promise((resolve) => server.once('exit', resolve))
    try {
      await expect(dockerVolume({ name: 'any-volume', socketPath: refused })).rejects.toMatchObject({
        code: 'ERR_DOCKER_UNAVAILABLE',
        message: expect.stringContaining('connection was refused'),
      })
    } finally {
      rmSync(refused, { force: true })
    }

    await expect(open(`rewindfs-test-${run}-never-created`)).rejects.toMatchObject({
      code: 'ERR_DOCKER_NO_VOLUME',
      status: 404,
      message: expect.stringContaining(`no such volume 'rewindfs-test-${run}-never-created'`),
    })
    const name = newVolume('errors')
    await expect(dockerVolume({ name, socketPath, helperImage: 'rewindfs-no-such-image:never' })).rejects.toMatchObject({
      code: 'ERR_DOCKER_NO_HELPER_IMAGE',
      status: 404,
      message: expect.stringMatching(/'rewindfs-no-such-image:never'.*docker pull.*provision-docker\.sh/),
    })
    await expect(dockerVolume({ name: 'no spaces allowed', socketPath })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await expect(dockerVolume({ name, socketPath, preloadBytes: -1 })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })

    const vol = await open(name)
    await vol.close()
    await expect(vol.versions(['/'])).rejects.toMatchObject({ code: 'ERR_DOCKER_VOLUME_CLOSED' })
  })

  it('reports a failing flush run with its output, keeps the staged flush, and removes its containers', async () => {
    const name = newVolume('failing', "mkdir -p .rewindfs-flush/0-bad && printf 'echo broken step >&2\\nexit 3\\n# end of manifest\\n' > .rewindfs-flush/0-bad/manifest.sh")
    await expect(open(name)).rejects.toMatchObject({
      code: 'ERR_DOCKER_HELPER_FAILED',
      message: expect.stringMatching(/exited with status 1 .*'rewindfs-test-.*-failing': broken step/),
    })
    expect(docker(['ps', '-aq', '--filter', `label=${HELPER_LABEL}=${name}`]).trim()).toBe('')
    expect(inVolume(name, 'cat /v/.rewindfs-flush/0-bad/manifest.sh')).toContain('broken step')
  })

  it('an apply whose run failed completes on the next recover, which rereads the index', async () => {
    const name = newVolume('resume', FILL)
    const vol = await open(name)
    opened.push(vol)
    // Changed underneath after open: the index still says /app/src is a directory.
    inVolume(name, 'rm -rf /v/app/src && echo blocker > /v/app/src')
    const content = utf8('export {}')
    await expect(vol.apply([{ path: '/app/src/new.js', kind: 'file', mode: 0o644, mtimeMs: 1_600_000_000_000, content }])).rejects.toMatchObject({
      code: 'ERR_DOCKER_HELPER_FAILED',
      message: expect.stringContaining('retried on the next open or flush'),
    })
    expect(vol.stat('/app/src/new.js')).toBeUndefined()
    inVolume(name, 'rm /v/app/src && mkdir /v/app/src')
    await vol.recover()
    expect(oracleListing(name)).toContain(`/app/src/new.js|file|644|1600000000|${sha256(content)}`)
    expect(vol.stat('/app/src/index.js')).toBeUndefined() // gone underneath: the index was read again
    const ws = await Workspace.open({ lower: vol })
    expect(workspaceListing(ws)).toEqual(oracleListing(name))
    await ws.close()
  })

  it('fails loudly, never as done, when a staged item is missing and its target is not there', async () => {
    const name = newVolume('lost-item')
    const engine = new DockerEngine(socketPath)
    const helper = new Helper(engine, name, helperImage)
    const container = await helper.create('exit 0')
    const id = flushId()
    try {
      await helper.put(container, '/', stagingTar(id, [{ path: '/kept.txt', kind: 'file', mode: 0o644, mtimeMs: 0, content: utf8('x') }]))
    } finally {
      await helper.remove(container)
      engine.close()
    }
    inVolume(name, `rm /v/.rewindfs-flush/${id}/tree/kept.txt`)
    await expect(open(name)).rejects.toMatchObject({ code: 'ERR_DOCKER_HELPER_FAILED', message: expect.stringContaining('the staged item for /kept.txt is missing') })
  })

  it('leaves no helper container behind once every volume is closed', async () => {
    expect(helperContainers()).not.toEqual([]) // the volumes opened above still hold their readers
    for (const vol of opened.splice(0)) await vol.close()
    expect(helperContainers()).toEqual([])
  })
})
