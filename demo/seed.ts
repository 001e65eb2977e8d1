/**
 * The project the demo starts from: written once into an IndexedDB tree, which the worker opens as
 * the read-only lower layer. Everything the page changes lands in the upper layer above it.
 */
import { indexedDbTree } from '../adapters/indexeddb/index.js'
import type { FlushEntry } from '../src/flush/target.js'

export const PROJECT_DATABASE = 'rewindfs-demo-project'
export const STORE_DATABASE = 'rewindfs-demo-store'

const FILES: Record<string, string> = {
  '/project/config.json': '{\n  "port": 8080,\n  "database": "postgres://localhost/shop",\n  "features": { "search": true }\n}\n',
  '/project/README.md': '# shop\n\nA small web shop. `node src/server.js` starts it on the configured port.\n',
  '/project/src/server.js': "import config from '../config.json' with { type: 'json' }\n\nexport function start() {\n  console.log('listening on', config.port)\n}\n",
  '/project/src/db.js': "export function connect(url) {\n  return { url, connected: true }\n}\n",
  '/project/schema.sql': 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\nCREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER);\n',
}

const DIRECTORIES = ['/project', '/project/src', '/project/migrations']

/** Writes the seed project unless the tree already holds it (a reload keeps what is there). */
export async function seedProject(): Promise<void> {
  const tree = await indexedDbTree(PROJECT_DATABASE)
  try {
    if (tree.stat('/project') !== undefined) return
    const now = Date.now()
    const encoder = new TextEncoder()
    const entries: FlushEntry[] = [
      ...DIRECTORIES.map((path): FlushEntry => ({ path, kind: 'dir', mode: 0o755, mtimeMs: now })),
      ...Object.entries(FILES).map(([path, text]): FlushEntry => ({ path, kind: 'file', mode: 0o644, mtimeMs: now, content: encoder.encode(text) })),
    ]
    await tree.apply(entries)
  } finally {
    // The worker opens the tree itself; this connection would only hold the database open.
    tree.close()
  }
}
