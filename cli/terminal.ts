/**
 * What the terminal can show: colour only on a TTY and never under NO_COLOR (https://no-color.org),
 * and a progress bar drawn on stderr only when stderr is a TTY, so pipes and logs stay clean.
 */

export interface Terminal {
  readonly isTTY?: boolean
  readonly columns?: number
  write(text: string): unknown
}

export function colourful(stream: Terminal, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '')
}

export interface Palette {
  bold(text: string): string
  dim(text: string): string
  green(text: string): string
  red(text: string): string
  yellow(text: string): string
}

export function palette(colour: boolean): Palette {
  const paint = (code: number) => (text: string) => (colour ? `\x1b[${code}m${text}\x1b[0m` : text)
  return { bold: paint(1), dim: paint(2), green: paint(32), red: paint(31), yellow: paint(33) }
}

/** Colours for what goes to stdout. */
export const stdoutPalette = (): Palette => palette(colourful(process.stdout))

export interface ProgressBar {
  update(done: number, total: number, path?: string): void
  /** Clears the bar's line (a no-op if it never drew). */
  finish(): void
}

/**
 * A one-line bar redrawn in place. It appears only once the work has taken `after` ms (short
 * flushes never flicker one) and redraws at most every `every` ms.
 */
export function progressBar(stream: Terminal, options: { after?: number; every?: number; now?: () => number } = {}): ProgressBar {
  if (stream.isTTY !== true) return { update() {}, finish() {} }
  const now = options.now ?? Date.now
  const started = now()
  const after = options.after ?? 250
  const every = options.every ?? 100
  let drawnAt: number | undefined
  return {
    update(done, total, path) {
      const time = now()
      if (time - started < after) return
      if (drawnAt !== undefined && time - drawnAt < every && done < total) return
      drawnAt = time
      stream.write('\r\x1b[2K' + progressLine(done, total, path, stream.columns ?? 80))
    },
    finish() {
      if (drawnAt !== undefined) stream.write('\r\x1b[2K')
    },
  }
}

/** `[#######.............]  35% 350/1000 /path`, cut to the terminal's width. */
export function progressLine(done: number, total: number, path: string | undefined, columns: number): string {
  const width = 24
  const share = total > 0 ? Math.min(1, done / total) : 1
  const filled = Math.round(share * width)
  const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(share * 100)).padStart(3)}% ${done}/${total}${path ? ' ' + path : ''}`
  return line.length > columns - 1 ? line.slice(0, Math.max(0, columns - 2)) + '…' : line
}
