/**
 * What the core entry carries. The durable journal, its decoder and zod come with a store
 * (Store.durability), so a workspace in memory (a browser tab, a test fixture) loads none of them;
 * one core module importing them for a helper brings all of them back (8 KiB min+gzip). Checked on
 * the bundle's inputs, the way scripts/bundle-size.ts measures the entry, not on its size.
 */
import { describe, expect, it } from 'vitest'
import { bundleSize } from '../scripts/bundle-size.js'

describe('the core entry', () => {
  it('bundles without the durable journal, its history decoder, the flush engine or zod', async () => {
    const { inputs } = await bundleSize()
    const paths = inputs.map((input) => input.path)
    expect(paths).toContain('src/workspace.ts')
    const carried = paths.filter((path) =>
      /node_modules\/zod\/|src\/engine\/(persistence|lazy-history|durability|durable-journal|repair|verify-store)\.ts$|src\/flush\/flush\.ts$/.test(path),
    )
    expect(carried).toEqual([])
    // Loaded on first use of the promise forms that need them: a static import would bring them back.
    expect(paths.filter((path) => /src\/fs\/(async-forms|file-handle)\.ts$/.test(path))).toEqual([])
  }, 60_000)
})
