#!/usr/bin/env node
/**
 * The rewindfs command. `demo` is what `npm start` runs: the write / checkpoint / break / restore
 * story on the embedded in-memory default. Other commands arrive with the CLI issue.
 */
import { Workspace } from '../src/index.js'

const colour = process.stdout.isTTY && !process.env.NO_COLOR
const paint = (code: number) => (text: string) => (colour ? `\x1b[${code}m${text}\x1b[0m` : text)
const bold = paint(1)
const green = paint(32)
const red = paint(31)
const dim = paint(2)

async function demo(): Promise<void> {
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
}

const commands: Record<string, () => Promise<void>> = { demo }

async function main(argv: string[]): Promise<number> {
  const [name = 'demo'] = argv
  const command = commands[name]
  if (!command) {
    console.error(`rewindfs: unknown command '${name}'. Commands: ${Object.keys(commands).join(', ')}`)
    return 2
  }
  await command()
  return 0
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.stack : error)
    process.exitCode = 1
  },
)
