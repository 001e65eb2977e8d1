/**
 * opfsStore's arguments, checked where it is called (no origin private file system needed): a bad
 * name is the caller's error, never an I/O failure of the storage (EIO) once it is opened.
 */
import { describe, expect, it } from 'vitest'
import { opfsStore } from '../../adapters/opfs/index.js'

describe('opfsStore arguments', () => {
  it('refuses an empty name and one with a lone surrogate (its directory name cannot be encoded); takes any well-formed one', () => {
    expect(() => opfsStore('')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    expect(() => opfsStore('\ud800lone')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringContaining('well-formed Unicode') }))
    expect(() => opfsStore('tail\udc00')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    for (const name of ['/', '..', 'émoji 🙂', 'CON', '%2F']) expect(opfsStore(name).kind).toBe('opfs')
  })
})
