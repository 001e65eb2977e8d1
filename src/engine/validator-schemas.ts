/**
 * zod/mini schemas for what users hand the validator runner, loaded with its first run so the core
 * entry does not carry zod.
 */
import * as z from 'zod/mini'
import type { Validator } from './validator.js'

// Validators come from users (possibly plain JS), so their shape is checked before anything runs:
// a typo should fail loudly at the call, not as a mysterious rejection of every commit.
const glob = z.string({ error: 'must be a non-empty glob string' }).check(z.minLength(1, 'must be a non-empty glob string'))
export const validatorSchema = z.looseObject(
  {
    name: z.string({ error: 'must be a non-empty string' }).check(z.minLength(1, 'must be a non-empty string')),
    match: z.union([glob, z.array(glob)], { error: 'must be a glob or an array of globs' }),
    cost: z.optional(z.number({ error: 'must be a finite number' })),
    validate: z.custom<Validator['validate']>((value) => typeof value === 'function', { error: 'must be a function' }),
  },
  { error: 'must be an object' },
)
export const fileSchema = z.object(
  {
    path: z.string({ error: 'must be a string' }),
    // Tag check rather than instanceof so Buffers and other realms' Uint8Arrays pass.
    content: z.custom<Uint8Array>((v) => ArrayBuffer.isView(v) && Object.prototype.toString.call(v) === '[object Uint8Array]', {
      error: 'must be a Uint8Array',
    }),
  },
  { error: 'must be an object { path, content }' },
)

export function check<T>(schema: z.ZodMiniType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value)
  if (parsed.success) return parsed.data
  const details = parsed.error.issues.map((issue) => [where, ...issue.path.map(String)].join('.') + ' ' + issue.message)
  throw new TypeError(`runValidators: ${details.join('; ')}`)
}
