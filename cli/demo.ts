/**
 * `rewindfs demo`, what `npm start` runs: the write / checkpoint / break / restore story on the
 * embedded in-memory default, then where the web demo is.
 */
import { Workspace } from '../src/index.js'
import { stdoutPalette } from './terminal.js'

export async function demo(): Promise<void> {
  const { bold, dim, green, red } = stdoutPalette()
  const say = (step: string, detail = '') => console.log(`${bold(step)} ${dim(detail)}`)
  const ws = await Workspace.open({
    lower: {
      '/app/config.json': JSON.stringify({ port: 8080, replicas: 3 }, null, 2) + '\n',
      '/app/server.js': "console.log('serving')\n",
    },
  })
  const { fs } = ws
  say('1. open', 'a workspace over a read-only in-memory project (the lower layer)')
  console.log('   ' + fs.readdirSync('/app').join(', '))

  fs.writeFileSync('/app/notes.md', '# deploy notes\n')
  say('2. write', 'the agent adds /app/notes.md (the write lands in the upper layer)')

  const good = await ws.checkpoint({ name: 'known-good' })
  say('3. checkpoint', `"${good.name}" (${good.id}): O(1), nothing is copied`)

  fs.writeFileSync('/app/config.json', '{ "port": 80,, }\n')
  fs.rmSync('/app/server.js')
  say('4. break', 'a bad write corrupts config.json and server.js is deleted')
  try {
    JSON.parse(fs.readFileSync('/app/config.json', 'utf8'))
  } catch (error) {
    console.log('   ' + red(`config.json no longer parses: ${(error as Error).message}`))
  }
  for (const change of ws.diff(good.id)) console.log(`   ${change.type.padEnd(8)} ${change.path}`)

  const preview = await ws.restore('known-good', { dryRun: true })
  say('5. preview', `restore would revert ${preview.changes.length} paths; the patch for config.json:`)
  const patch = preview.changes.find((c) => c.path === '/app/config.json')?.patch ?? ''
  for (const line of patch.split('\n').slice(4)) if (line) console.log('   ' + (line.startsWith('+') ? green(line) : line.startsWith('-') ? red(line) : line))

  const report = await ws.restore('known-good')
  say('6. restore', `a pointer move: ${report.changes.length} paths back`)
  const config = JSON.parse(fs.readFileSync('/app/config.json', 'utf8')) as { port: number }
  console.log('   ' + green(`config.json parses again (port ${config.port}); server.js exists: ${fs.existsSync('/app/server.js')}`))

  await ws.reset()
  say('7. reset', `the upper layer is discarded: ${ws.changes().length} changes against the lower layer`)
  await ws.close()
  console.log(`\nThe lower layer was never written. Run ${bold('npm test')} for the test suite.`)
  console.log(`The same story in a browser, on IndexedDB: run ${bold('npm run demo')} and open the address it prints.`)
}
