/** The CLI's terminal rules: colour only on a TTY without NO_COLOR; the flush progress bar only on a TTY, only for long runs. */
import { describe, expect, it } from 'vitest'
import { colourful, palette, progressBar, progressLine } from '../cli/terminal.js'

function fakeStream(isTTY: boolean, columns = 80) {
  const writes: string[] = []
  return { stream: { isTTY, columns, write: (text: string) => writes.push(text) }, writes }
}

describe('colour', () => {
  it('is on for a TTY only, and off under NO_COLOR', () => {
    expect(colourful({ isTTY: true, write: () => true }, {})).toBe(true)
    expect(colourful({ isTTY: false, write: () => true }, {})).toBe(false)
    expect(colourful({ isTTY: true, write: () => true }, { NO_COLOR: '1' })).toBe(false)
    expect(colourful({ isTTY: true, write: () => true }, { NO_COLOR: '' })).toBe(true) // the convention: only a non-empty value
    expect(palette(true).red('x')).toBe('\x1b[31mx\x1b[0m')
    expect(palette(false).red('x')).toBe('x')
  })
})

describe('progress bar', () => {
  it('draws nothing when the stream is not a TTY', () => {
    const { stream, writes } = fakeStream(false)
    let time = 0
    const bar = progressBar(stream, { now: () => time })
    time = 10_000
    bar.update(5, 10, '/a')
    bar.finish()
    expect(writes).toEqual([])
  })

  it('appears only after the delay, redraws at most every interval, always shows the end, and clears its line', () => {
    const { stream, writes } = fakeStream(true)
    let time = 0
    const bar = progressBar(stream, { after: 250, every: 100, now: () => time })
    time = 100
    bar.update(1, 100, '/early')
    expect(writes).toEqual([]) // a short flush never shows a bar
    time = 300
    bar.update(30, 100, '/a')
    time = 350
    bar.update(40, 100, '/skipped') // within the interval
    time = 420
    bar.update(60, 100, '/b')
    time = 430
    bar.update(100, 100, '/last') // the end is drawn even within the interval
    bar.finish()
    expect(writes).toEqual([
      '\r\x1b[2K' + progressLine(30, 100, '/a', 80),
      '\r\x1b[2K' + progressLine(60, 100, '/b', 80),
      '\r\x1b[2K' + progressLine(100, 100, '/last', 80),
      '\r\x1b[2K',
    ])
  })

  it('a bar that never drew leaves nothing to clear', () => {
    const { stream, writes } = fakeStream(true)
    const bar = progressBar(stream, { now: () => 0 })
    bar.update(1, 2)
    bar.finish()
    expect(writes).toEqual([])
  })

  it('lines show the share and counts and fit the terminal', () => {
    expect(progressLine(35, 100, '/app/x', 80)).toBe(`[${'#'.repeat(8)}${'.'.repeat(16)}]  35% 35/100 /app/x`)
    expect(progressLine(0, 0, undefined, 80)).toBe(`[${'#'.repeat(24)}] 100% 0/0`)
    const long = progressLine(1, 2, '/' + 'a'.repeat(200), 40)
    expect(long.length).toBeLessThanOrEqual(39)
    expect(long.endsWith('…')).toBe(true)
  })
})
