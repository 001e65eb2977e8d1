/** `npm run demo`: serves the demo page (demo/) on localhost and prints its URL; Ctrl+C stops it. */
import { startDemoServer } from '../demo/server.js'

const port = process.env.PORT === undefined ? undefined : Number(process.env.PORT)
if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port < 65536)) {
  console.error(`rewindfs demo: PORT must be a port number (0 picks a free one); got '${process.env.PORT}'`)
  process.exit(2)
}
const server = await startDemoServer({ ...(port !== undefined ? { port } : {}), logLevel: 'warn' })
console.log(`rewindfs demo: ${server.url}`)
const stop = () => void server.close().then(() => process.exit(0))
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
