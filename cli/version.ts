/** The package's version, from the nearest package.json named rewindfs (cli/ in the repo, dist/cli/ when built). */
import fs from 'node:fs'
import * as z from 'zod'

const manifest = z.object({ name: z.string(), version: z.string() })

export function packageVersion(): string {
  let url = new URL('.', import.meta.url)
  for (let depth = 0; depth < 4; depth++) {
    url = new URL('..', url)
    try {
      const parsed = manifest.safeParse(JSON.parse(fs.readFileSync(new URL('package.json', url), 'utf8')))
      if (parsed.success && parsed.data.name === 'rewindfs') return parsed.data.version
    } catch {
      // no package.json at this level: keep walking up
    }
  }
  return 'unknown'
}
