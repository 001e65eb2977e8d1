/**
 * Everything a reopen from a store must bring back, in one comparable value: files (mode and
 * content, link targets), session state, checkpoints and history; with `times`, every entry's
 * modification and change times too (not access times: reads set them in memory only).
 */
import type { Workspace } from '../../src/index.js'

export async function workspaceSnapshot(ws: Workspace, options: { times?: boolean } = {}) {
  const files: Record<string, string> = {}
  const times = (path: string) => {
    if (!options.times) return ''
    const { mtimeMs, ctimeMs } = ws.fs.lstatSync(path)
    return ` m${mtimeMs} c${ctimeMs}`
  }
  const walk = (dir: string) => {
    for (const name of (ws.fs.readdirSync(dir) as string[]).sort()) {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      const stat = ws.fs.lstatSync(path)
      if (stat.isDirectory()) {
        files[path + '/'] = (stat.mode & 0o777).toString(8) + times(path)
        walk(path)
      } else if (stat.isSymbolicLink()) files[path] = '-> ' + ws.fs.readlinkSync(path) + times(path)
      else files[path] = `${(stat.mode & 0o777).toString(8)} ${ws.fs.readFileSync(path, 'utf8')}${times(path)}`
    }
  }
  if (options.times) files['/'] = times('/')
  walk('/')
  return {
    files,
    state: await ws.state.entries(),
    checkpoints: ws.checkpoints().map((c) => `${c.kind}:${c.name}${c.superseded ? ':superseded' : ''}`),
    history: ws.history().map((op) => `${op.type}:${op.paths.join(',')}${op.undone ? ':undone' : ''}`),
  }
}
