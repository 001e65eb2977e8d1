/**
 * File tools over `ws.fs.promises` (the promise forms also load contents that an asynchronous
 * lower source has not fetched yet). Every change they make is an operation in the journal, so
 * undo_operation takes it back; each result names the operations it recorded.
 */
import { decode, isProbablyText } from '../src/bytes.js'
import type { TransactionType } from '../src/engine/transaction.js'
import { basename, dirname } from '../src/path.js'
import type { Workspace } from '../src/workspace.js'
import { type Budget, Room } from './budget.js'
import { type Form, LINES_LISTED, lineNumbers, lineStart, replaceIn } from './edit-match.js'
import { IMAGE_FORMATS, ImageHeaderError, type ImageMimeType, type ImageResult, type ImageSize, MoreBytesNeeded, imageMimeType, imageSize } from './images.js'
import { lastSeq, recordedSince, resolvePath } from './operations.js'
import { ToolFailure } from './result.js'
import { deletePathInput, editFileInput, insertTextInput, listDirectoryInput, movePathInput, readFileInput, writeFileInput } from './schemas.js'
import { type AgentTool, defineTool } from './tool.js'
import { ViewReader, type WalkEntry, walk } from './walk.js'

/** Lines read_file returns by default. */
const READ_LINES = 2000
/**
 * Characters of one line read_file shows at most, as Claude Code's Read cuts lines: a line of a
 * minified bundle or a lockfile filled the whole character budget (100 000) by itself.
 */
const LINE_CHARS = 2000
/** Line numbers truncated_lines lists at most. */
const CUT_LINES_LISTED = 100


function lines(text: string): string[] {
  const all = text.split('\n')
  if (all[all.length - 1] === '') all.pop() // a final newline ends the last line
  return all
}

/**
 * A file whose every line ends in CRLF (Windows line endings) is shown and edited as if its lines
 * ended in LF, as search_files shows its lines, so an old_string copied from either matches, and
 * what an edit writes takes the file's endings. A file of mixed endings is taken as it is.
 * A UTF-8 byte order mark is kept out of the view and put back in front: insert_text at line 0 put
 * its lines before it, leaving U+FEFF inside the file (a stray character to a compiler), and an
 * old_string copied with the invisible mark and replaced without it dropped it.
 */
interface TextView {
  readonly text: string
  readonly crlf: boolean
  readonly bom: boolean
}

function viewOf(file: string): TextView {
  const bom = file.charCodeAt(0) === 0xfeff
  const text = bom ? file.slice(1) : file
  let lineFeeds = 0
  let pairs = 0
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) {
    lineFeeds++
    if (at > 0 && text.charCodeAt(at - 1) === 13) pairs++
  }
  const crlf = lineFeeds > 0 && pairs === lineFeeds
  return { text: crlf ? text.replaceAll('\r\n', '\n') : text, crlf, bom }
}

/** Text of the view written back with the file's endings and byte order mark. */
function withEndings(text: string, view: TextView): string {
  return (view.bom ? '\ufeff' : '') + (view.crlf ? text.replaceAll('\n', '\r\n') : text)
}

/** What the model gives, in the view: LF ends for a CRLF file (it may have copied the endings too), no byte order mark in front. */
function inView(text: string, view: TextView): string {
  const given = view.bom && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  return view.crlf ? given.replaceAll('\r\n', '\n') : given
}

/**
 * Where `bytes` stop being UTF-8 (the offset of the first byte no character takes), or -1. The
 * sniff of isProbablyText looks at the first 8 KiB only, and a text decoder turns what is not UTF-8
 * into U+FFFD, so an edit written back from the decoded text would replace those bytes too.
 */
function firstNonUtf8(bytes: Uint8Array): number {
  for (let at = 0; at < bytes.length; ) {
    const lead = bytes[at]
    if (lead < 0x80) {
      at++
      continue
    }
    // The continuation bytes a lead byte takes, and the range its first one must fall in (no overlong forms, surrogates or code points past U+10FFFF).
    const [count, low, high] =
      lead >= 0xc2 && lead <= 0xdf ? [1, 0x80, 0xbf]
      : lead === 0xe0 ? [2, 0xa0, 0xbf]
      : lead === 0xed ? [2, 0x80, 0x9f]
      : lead >= 0xe1 && lead <= 0xef ? [2, 0x80, 0xbf]
      : lead === 0xf0 ? [3, 0x90, 0xbf]
      : lead === 0xf4 ? [3, 0x80, 0x8f]
      : lead >= 0xf1 && lead <= 0xf3 ? [3, 0x80, 0xbf]
      : [0, 0, 0]
    if (count === 0 || at + count >= bytes.length) return at
    if (bytes[at + 1] < low || bytes[at + 1] > high) return at
    for (let next = 2; next <= count; next++) if ((bytes[at + next] & 0xc0) !== 0x80) return at
    at += count + 1
  }
  return -1
}

/**
 * A file's text, refused when it is binary; for an edit (`exact`) also when any of it is not
 * UTF-8: what is written back is the decoded text, so such bytes would be lost. They were: a file
 * over 8 KiB with a Latin-1 byte came back from edit_file with every such byte turned into U+FFFD.
 */
async function readText(ws: Workspace, path: string, exact = false): Promise<string> {
  return textOf(path, await ws.fs.promises.readFile(path), exact)
}

/**
 * The refusal of a binary file: for read_file one that is neither text nor an image it shows (it
 * said "these tools read text only" after read_file had come to read images), for an edit one
 * that is not text; each says what the tool takes and what to do instead.
 */
function binaryFile(path: string, bytes: number, editing: boolean): ToolFailure {
  if (editing) return new ToolFailure('EBINARY', `'${path}' is a binary file (${bytes} bytes); edit_file and insert_text change text only (change it with run_command instead)`)
  const name = basename(path)
  return new ToolFailure(
    'EBINARY',
    `'${path}' is a binary file (${bytes} bytes): read_file shows text, and PNG, JPEG, GIF and WebP images, and it is neither. ` +
      `Look into it with run_command instead, e.g. in cwd '${dirname(path)}': file '${name}', or xxd '${name}' | head`,
  )
}

function textOf(path: string, bytes: Uint8Array, exact: boolean): string {
  if (!isProbablyText(bytes)) throw binaryFile(path, bytes.byteLength, exact)
  const text = decode(bytes)
  if (exact) {
    const at = firstNonUtf8(bytes)
    if (at >= 0) {
      const line = bytes.subarray(0, at).filter((byte) => byte === 10).length + 1
      throw new ToolFailure(
        'EBINARY',
        `'${path}' is not all UTF-8 text: byte ${at} (line ${line}) is not part of a UTF-8 character, and editing it as text would replace every such byte; ` +
          'it is left unchanged (rewrite it whole with write_file, or change it with a command)',
      )
    }
  }
  return text
}

/**
 * An image file as read_file shows it (PNG, JPEG, GIF, WebP by their magic bytes), or undefined
 * for any other file. Text is asked first: a text file may start with 'GIF89a' or 'RIFF', while a
 * real image never reads as text (its first 8 KiB hold a NUL or a byte that is not UTF-8). A
 * damaged header, or an image over budget.imageBytes or budget.imageSide, is refused saying what is wrong.
 */
function imageOf(path: string, bytes: Uint8Array, budget: Budget): ImageResult | undefined {
  // The magic bytes first: a text file's 8 KiB are then looked at once, by the text path.
  const mimeType = imageMimeType(bytes)
  if (mimeType === undefined || isProbablyText(bytes)) return undefined
  const { width, height } = headerSize(path, bytes, mimeType, bytes.byteLength)
  if (bytes.byteLength > budget.imageBytes || tooWide({ width, height }, budget)) throw tooBig(path, mimeType, bytes.byteLength, budget, { width, height })
  return { path, type: 'image', mime_type: mimeType, bytes: bytes.byteLength, width, height, data: decode(bytes, 'base64') }
}

/** The pixel size the header gives; a damaged one is EBINARY saying what is wrong. MoreBytesNeeded passes through. */
function headerSize(path: string, bytes: Uint8Array, mimeType: ImageMimeType, fileBytes: number): ImageSize {
  try {
    return imageSize(bytes, mimeType, fileBytes)
  } catch (error) {
    if (!(error instanceof ImageHeaderError)) throw error
    throw new ToolFailure('EBINARY', `'${path}' starts as a ${IMAGE_FORMATS[mimeType]} image (${fileBytes} bytes), but ${error.message}; read_file cannot show it`)
  }
}

/** Whether the image is wider or taller than budget.imageSide (the model's API refuses it, and the request with it). */
function tooWide(size: ImageSize, budget: Budget): boolean {
  return size.width > budget.imageSide || size.height > budget.imageSide
}

/**
 * The refusal of an image over budget.imageBytes, or over budget.imageSide pixels a side, or both:
 * with its pixel size where its header gave it, and the command that makes a copy that fits.
 */
function tooBig(path: string, mimeType: ImageMimeType, bytes: number, budget: Budget, size: ImageSize | undefined): ToolFailure {
  const name = basename(path)
  const dot = name.lastIndexOf('.')
  const small = `${dot > 0 ? name.slice(0, dot) : name}-small.jpg`
  const wide = size !== undefined && tooWide(size, budget)
  const heavy = bytes > budget.imageBytes
  const over = [
    ...(heavy
      ? [`over the ${budget.imageBytes} bytes (${mebibytes(budget.imageBytes)}) read_file returns for an image (its base64 must stay within the 5 MB the model's API takes)`]
      : []),
    ...(wide ? [`over the ${budget.imageSide} pixels a side the model's API takes for an image (it refuses a larger one, and the whole request with it)`] : []),
  ]
  // Too wide: a copy of 2000 pixels a side at most, which the API takes even in a request of more than 20 images.
  const side = Math.min(budget.imageSide, 2000)
  return new ToolFailure(
    'EFBIG',
    `'${path}' is a ${size ? `${size.width}×${size.height} ` : ''}${IMAGE_FORMATS[mimeType]} image of ${bytes} bytes${heavy ? ` (${mebibytes(bytes)})` : ''}, ${over.join(', and ')}. ` +
      `Make a smaller copy with run_command and read that, e.g. with ImageMagick in cwd '${dirname(path)}': ` +
      `convert '${name}' -resize ${wide ? `${side}x${side}` : '50%'} -quality 85 '${small}' (then delete the copy)`,
    { bytes, max_bytes: budget.imageBytes, ...size, ...(wide ? { max_side: budget.imageSide } : {}) },
  )
}

/**
 * Bytes read first of a file too big to return as an image: the 8 KiB isProbablyText looks at,
 * and a few more, so that a character cut at its edge is taken as cut, not as a byte that is not UTF-8.
 */
const SNIFF_BYTES = 8192 + 4
/** Bytes of an over-size image read at most for the pixel size its refusal names (a JPEG's size comes after its other segments: EXIF, ICC). */
const HEADER_BYTES = 1024 * 1024

type Fs = Workspace['fs']

/** Up to `length` bytes from `from` (fewer where the file ends). */
function readAt(fs: Fs, fd: number, from: number, length: number): Uint8Array {
  const buffer = new Uint8Array(length)
  let filled = 0
  while (filled < length) {
    const bytesRead = fs.readSync(fd, buffer, filled, length - filled, from + filled)
    if (bytesRead === 0) break
    filled += bytesRead
  }
  return buffer.subarray(0, filled)
}

/**
 * The bytes read_file shows: text, or an image within budget.imageBytes. The size is asked first
 * (stat): a file over budget.imageBytes is read whole only when its first bytes say it is text.
 * An image over it is refused after its header (the pixel size for the message), any other binary
 * file after its first 8 KiB: a 2 GiB file of either was read into memory whole, then refused.
 * (The first bytes of a project file on disk of 8 MiB or more are read as a part of it, not the
 * whole file: LowerSource.readInto.) Synchronous, as the promise readFile it replaces reads at the call: a read
 * made before a write sees what was there before it (calls are answered in the order they came).
 */
function readShown(ws: Workspace, path: string, budget: Budget): Uint8Array {
  const fs = ws.fs
  // Opened first, as readFile opens: a missing file is 'open' ENOENT as it always was.
  const fd = fs.openSync(path, 'r')
  try {
    const stat = fs.fstatSync(fd)
    const size = stat.size
    // A directory (EISDIR) or any other file that is not regular reads, or fails, as it always did.
    if (!stat.isFile() || size <= budget.imageBytes) return fs.readFileSync(fd)
    const head = readAt(fs, fd, 0, Math.min(size, SNIFF_BYTES))
    const mimeType = imageMimeType(head)
    const text = isProbablyText(head)
    if (mimeType !== undefined && !text) throw tooBig(path, mimeType, size, budget, headerSizeOf(fs, fd, path, head, mimeType, size))
    if (!text) throw binaryFile(path, size, false)
    // Positional reads leave the file position at 0: readFile reads from there.
    return fs.readFileSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * The pixel size from the header of an image file of `size` bytes whose first bytes are `head`:
 * read on as far as the header goes (four times as far each time, at least to where it asks), up
 * to HEADER_BYTES; undefined past that.
 */
function headerSizeOf(fs: Fs, fd: number, path: string, head: Uint8Array, mimeType: ImageMimeType, size: number): ImageSize | undefined {
  for (;;) {
    try {
      return headerSize(path, head, mimeType, size)
    } catch (error) {
      if (!(error instanceof MoreBytesNeeded)) throw error
      const next = Math.min(size, HEADER_BYTES, Math.max(error.needed, head.byteLength * 4))
      if (next <= head.byteLength) return undefined
      const more = readAt(fs, fd, head.byteLength, next - head.byteLength)
      // The file was cut since its stat: its header is not there to read.
      if (more.byteLength === 0) return undefined
      head = concat(head, more)
    }
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength)
  out.set(a)
  out.set(b, a.byteLength)
  return out
}

function mebibytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(2)} MiB`
}

/**
 * Runs a change that needs `dir` (and the directories above it). It is tried as it is first: where
 * `dir` exists that is the one operation it always was, and every refusal (EFBIG past the
 * workspace's maxFileSize, EROFS, ENOTDIR) and automatic checkpoint comes as before. Only when it
 * fails with ENOENT do `mkdir -p dir` and the change run as one transaction: as two operations,
 * undo_operation's one step took back the change and left the new empty directories, which a
 * commit then made on the real disk. It has the change's own type (`type`: undo_operation's and
 * operation_history's type filters find it as they find the plain call) and `label` describes it
 * in history and undo. No approval hook is asked, as for the plain calls.
 */
async function withParents(ws: Workspace, dir: string, type: TransactionType, label: string, change: (fs: Workspace['fs']['promises']) => Promise<void>): Promise<void> {
  try {
    return await change(ws.fs.promises)
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ENOENT') throw error
  }
  // Missing for another reason (a link to nothing, a source gone), the change fails here the same way and nothing commits.
  await ws.transaction(
    async (staged) => {
      await staged.promises.mkdir(dir, { recursive: true })
      await change(staged.promises)
    },
    { type, label: `${label}, with mkdir -p ${dir}`, riskThreshold: Number.POSITIVE_INFINITY },
  )
}

/**
 * The view (CRLF endings, byte order mark) of the text file write_file replaces, or undefined for
 * one that is not text or cannot be read (it is replaced as it always was). read_file shows a CRLF
 * file with LF ends and without its mark, so a model rewriting it whole sent LF and no mark, and
 * every line of a Windows file changed its ending (a whole-file diff; Visual Studio and Delphi
 * projects want CRLF).
 */
async function overwrittenView(ws: Workspace, path: string): Promise<TextView | undefined> {
  try {
    const bytes = await ws.fs.promises.readFile(path)
    return isProbablyText(bytes) ? viewOf(decode(bytes)) : undefined
  } catch {
    return undefined
  }
}

async function lstatOrUndefined(ws: Workspace, path: string) {
  try {
    return await ws.fs.promises.lstat(path)
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined
    throw error
  }
}

/**
 * edit_file with an empty old_string, as Claude Code's Edit takes it: a new file (parents made) or
 * an empty one gets new_string; a file with text is refused (EEXIST), saying what to do. It was
 * EINVALIDINPUT "Too small: expected string to have >=1 characters", which told a model used to
 * creating files this way neither why nor how.
 */
async function createWith(ws: Workspace, path: string, content: string) {
  const existing = await lstatOrUndefined(ws, path)
  if (existing?.isDirectory()) throw new ToolFailure('EISDIR', `'${path}' is a directory; edit_file edits files`)
  const view = existing === undefined ? undefined : viewOf(await readText(ws, path, true))
  if (view !== undefined && view.text !== '') {
    throw new ToolFailure(
      'EEXIST',
      `old_string is empty, which creates a file, but '${path}' exists and has ${lines(view.text).length} lines: ` +
        'give the text to replace as old_string (read_file shows it), or use write_file to replace the whole file',
    )
  }
  if (content === '') throw new ToolFailure('ENOCHANGE', `old_string and new_string are both empty: nothing would change`)
  const mark = lastSeq(ws)
  const written = view === undefined ? content : withEndings(inView(content, view), view)
  await withParents(ws, dirname(path), 'file_create', `file create ${path}`, (into) => into.writeFile(path, written))
  return { path, created: existing === undefined, replacements: 1, lines: [1], operation_ids: recordedSince(ws, mark) }
}

/** A missing file for edit_file: ENOENT as Node words it, with how to create one. */
function missingToEdit(error: unknown, path: string): unknown {
  if ((error as { code?: unknown }).code !== 'ENOENT') return error
  return new ToolFailure('ENOENT', `ENOENT: no such file or directory, open '${path}'; to create it, use write_file (or edit_file with an empty old_string)`)
}

export function fileTools(ws: Workspace, budget: Budget): AgentTool[] {
  const fs = ws.fs.promises
  return [
    defineTool(
      'read_file',
      'Read a text file, or an image. Returns its lines from offset (1-based) up to limit lines (default 2000) and at most ' +
        `${budget.readChars} characters, with the total line count; when truncated is true, call again with next_offset. ` +
        `A line longer than ${LINE_CHARS} characters (minified code) is cut to its first ${LINE_CHARS}: line_truncated is then true and truncated_lines lists those lines. ` +
        "A file whose lines end in CRLF is shown with LF line ends and line_endings: 'crlf'; edits keep its CRLF. " +
        'A UTF-8 byte order mark is not shown (bom: true); edits keep it. ' +
        "A PNG, JPEG, GIF or WebP image (known by its content, not its name) is returned whole as an image for you to see, with type: 'image', " +
        `mime_type, bytes, width and height in pixels (offset and limit are ignored); one over ${budget.imageBytes} bytes or ${budget.imageSide} pixels a side is refused. Other binary files are refused (EBINARY); SVG is text.`,
      readFileInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        const bytes = readShown(ws, path, budget)
        // offset and limit count lines: an image is shown whole whatever they say, as Claude Code's Read does.
        const image = imageOf(path, bytes, budget)
        if (image) return image
        const view = viewOf(textOf(path, bytes, false))
        const all = lines(view.text)
        const start = input.offset ?? 1
        if (start > Math.max(1, all.length)) throw new ToolFailure('EOUTOFRANGE', `offset ${start} is past the end of '${path}', which has ${all.length} lines`)
        const wanted = all.slice(start - 1, start - 1 + (input.limit ?? READ_LINES))
        // At least one line, then as many as fit in the character budget, each cut to LINE_CHARS.
        const shown: string[] = []
        const cutLines: number[] = []
        let chars = 0
        for (const line of wanted) {
          const text = line.length > LINE_CHARS ? lineStart(line, LINE_CHARS) : line
          if (shown.length > 0 && chars + text.length + 1 > budget.readChars) break
          if (text !== line) cutLines.push(start + shown.length)
          shown.push(text)
          chars += text.length + 1
        }
        const end = start - 1 + shown.length
        const content = shown.join('\n')
        // A budget below LINE_CHARS can still be outgrown by one line: it is cut there too; the next call starts after it.
        const cut = content.length > budget.readChars
        if (cut && cutLines[0] !== start) cutLines.unshift(start)
        return {
          path,
          content: cut ? lineStart(content, budget.readChars) : content,
          start_line: start,
          end_line: end,
          total_lines: all.length,
          truncated: cut || end < all.length,
          ...(view.crlf ? { line_endings: 'crlf' } : {}),
          ...(view.bom ? { bom: true } : {}),
          ...(cutLines.length > 0
            ? {
                line_truncated: true,
                truncated_lines: cutLines.slice(0, CUT_LINES_LISTED),
                ...(cutLines.length > CUT_LINES_LISTED ? { truncated_lines_total: cutLines.length } : {}),
              }
            : {}),
          ...(end < all.length ? { next_offset: end + 1 } : {}),
        }
      },
    ),
    defineTool(
      'write_file',
      'Create or overwrite a text file with the given content (missing parent directories are created). ' +
        "Overwriting a file whose lines end in CRLF, content with LF line ends is written with CRLF (line_endings: 'crlf'), and a file's UTF-8 byte order mark is kept (bom: true), " +
        'as read_file shows such files; content with a \\r is written as given. Undoable with undo_operation, which takes back the directories it made too.',
      writeFileInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        // 'newdir/' names a directory, as open(2) takes it (EISDIR): it made a file named newdir.
        if (input.path.endsWith('/')) throw new ToolFailure('EISDIR', `'${input.path}' ends with '/', so it names a directory; write_file writes files (give the file's name)`)
        const existing = await lstatOrUndefined(ws, path)
        if (existing?.isDirectory()) throw new ToolFailure('EISDIR', `'${path}' is a directory; write_file writes files`)
        const view = existing === undefined ? undefined : await overwrittenView(ws, path)
        // Content as a model writes it, LF and no mark, takes the endings and mark of the file it replaces; any '\r' or mark given is kept as given.
        const crlf = view?.crlf === true && !input.content.includes('\r')
        const bom = view?.bom === true && input.content.charCodeAt(0) !== 0xfeff
        const content = withEndings(input.content, { text: input.content, crlf, bom })
        const mark = lastSeq(ws)
        await withParents(ws, dirname(path), 'file_create', `file create ${path}`, (into) => into.writeFile(path, content))
        return {
          path,
          created: existing === undefined,
          bytes: new TextEncoder().encode(content).byteLength,
          lines: lines(input.content).length,
          ...(crlf ? { line_endings: 'crlf' } : {}),
          ...(bom ? { bom: true } : {}),
          operation_ids: recordedSince(ws, mark),
        }
      },
    ),
    defineTool(
      'edit_file',
      'Replace old_string with new_string in a text file. old_string must match exactly (whitespace included) ' +
        'and only once unless replace_all is true; read the file first (an accent the file writes decomposed, NFD, matches as typed, and straight quotes match curly ones, taking the style of the file). An empty old_string creates a new file (or fills an empty one) with new_string. For several changes to one file give ' +
        'edits: [{ old_string, new_string, replace_all? }], applied in order, all or nothing, as one operation. ' +
        'Undoable with undo_operation.',
      editFileInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        // 'newdir/' names a directory, as for write_file: it would make a file named newdir.
        if (input.old_string === '' && input.path.endsWith('/')) throw new ToolFailure('EISDIR', `'${input.path}' ends with '/', so it names a directory; edit_file edits files (give the file's name)`)
        if (input.old_string === '') return createWith(ws, path, input.new_string!)
        const view = viewOf(await readText(ws, path, true).catch((error: unknown) => Promise.reject(missingToEdit(error, path))))
        let text = view.text
        const given = input.edits ?? [{ old_string: input.old_string!, new_string: input.new_string!, replace_all: input.replace_all }]
        const edits = given.map((edit) => ({ ...edit, old_string: inView(edit.old_string, view), new_string: inView(edit.new_string, view) }))
        let replacements = 0
        let changed: number[] = []
        const forms = new Set<Form>()
        edits.forEach((edit, index) => {
          const which = edits.length > 1 ? `edits[${index}]: ` : ''
          const applied = replaceIn(text, path, edit, which)
          text = applied.text
          replacements += applied.at.length
          if (applied.form) forms.add(applied.form)
          // Where the last edit put its text: the earlier edits' places can move, so only an answer of one edit lists its lines.
          changed = applied.at
        })
        // Each edit changed something, yet together they may not: nothing is written (an empty operation was recorded) and the model is told.
        // One edit can too, once taken as the file writes it (new_string curled into the very text it replaces).
        if (text === view.text) throw new ToolFailure('ENOCHANGE', `the ${edits.length > 1 ? 'edits together leave' : 'edit leaves'} '${path}' as it was: nothing was written`)
        const mark = lastSeq(ws)
        await fs.writeFile(path, withEndings(text, view))
        return {
          path,
          replacements,
          ...(edits.length === 1
            ? { lines: lineNumbers(text, changed.slice(0, LINES_LISTED)), ...(changed.length > LINES_LISTED ? { lines_total: changed.length } : {}) }
            : { edits_applied: edits.length }),
          // Said, as the text written is not the text given: the file writes its accents in this form, or its quotes so.
          ...(forms.has('NFC') || forms.has('NFD') ? { unicode_form: [...forms].filter((form) => form !== 'quotes').join(', ') } : {}),
          ...(forms.has('quotes') ? { quotes_as_in_file: true } : {}),
          operation_ids: recordedSince(ws, mark),
        }
      },
    ),
    defineTool(
      'insert_text',
      'Insert lines into a text file after line insert_line (0: at the start; the line count: at the end), as ' +
        "the text editor's insert command does. Undoable with undo_operation.",
      insertTextInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        const view = viewOf(await readText(ws, path, true))
        const text = view.text
        const all = lines(text)
        if (input.insert_line > all.length) {
          throw new ToolFailure('EOUTOFRANGE', `insert_line ${input.insert_line} is past the end of '${path}', which has ${all.length} lines (use ${all.length} to append)`)
        }
        const given = inView(input.text, view)
        const inserted = given.endsWith('\n') ? given : given + '\n'
        // The offset just after line insert_line; a last line without a newline gets one first.
        let at = 0
        for (let line = 0; line < input.insert_line; line++) at = text.indexOf('\n', at) + 1 || text.length
        const head = text.slice(0, at)
        const next = (head.length > 0 && !head.endsWith('\n') ? head + '\n' : head) + inserted + text.slice(at)
        const mark = lastSeq(ws)
        await fs.writeFile(path, withEndings(next, view))
        const count = lines(inserted).length
        return {
          path,
          inserted_lines: { from: input.insert_line + 1, to: input.insert_line + count },
          total_lines: all.length + count,
          operation_ids: recordedSince(ws, mark),
        }
      },
    ),
    defineTool(
      'list_directory',
      'List a directory: names, types (file, directory, symlink) and file sizes, sorted. recursive lists ' +
        'everything below, leaving out what .gitignore files exclude (and .git) unless include_ignored. ' +
        `Answers within the result budget (${budget.chars} characters): past it, total says how many entries there are and next_offset where to go on.`,
      listDirectoryInput,
      async (input) => {
        const root = resolvePath(ws, input.path)
        const reader = await ViewReader.open(ws)
        const top = await reader.root(root)
        if (top.type !== 'dir') throw Object.assign(new Error(`ENOTDIR: not a directory, scandir '${root}'`), { code: 'ENOTDIR' })
        const prefix = root === '/' ? 1 : root.length + 1
        const room = new Room(budget.chars - 300)
        const entries: { path: string; type: 'file' | 'directory' | 'symlink'; size?: number; target?: string }[] = []
        let total = 0
        let ignored = 0
        let full = false
        const show = async (entry: WalkEntry) => {
          total++
          if (full || total <= input.offset) return
          const path = entry.path.slice(prefix)
          const shown =
            entry.type === 'dir'
              ? { path: path + '/', type: 'directory' as const }
              : entry.type === 'symlink'
                ? { path, type: 'symlink' as const, target: await reader.readlink(entry) }
                : { path, type: 'file' as const, size: (await reader.stat(entry)).size }
          if (room.take(shown)) entries.push(shown)
          else full = true
        }
        if (input.recursive) {
          for await (const entry of walk(reader, root, { gitignore: !input.include_ignored, onIgnored: () => ignored++ })) await show(entry)
        } else {
          for (const entry of await reader.list(top)) await show(entry)
        }
        const shownTo = input.offset + entries.length
        return {
          path: root,
          entries,
          total,
          truncated: shownTo < total,
          ...(shownTo < total ? { next_offset: shownTo } : {}),
          ...(ignored > 0 ? { ignored_by_gitignore: ignored } : {}),
        }
      },
    ),
    defineTool(
      'delete_path',
      'Delete a file, symlink or empty directory; a directory with contents needs recursive: true. Undoable with undo_operation.',
      deletePathInput,
      async (input) => {
        const path = resolvePath(ws, input.path)
        const stat = await fs.lstat(path)
        const type = stat.isDirectory() ? 'directory' : stat.isSymbolicLink() ? 'symlink' : 'file'
        const mark = lastSeq(ws)
        if (type === 'directory') {
          const count = ((await fs.readdir(path)) as string[]).length
          if (count > 0 && !input.recursive) {
            throw new ToolFailure('ENOTEMPTY', `'${path}' is a directory with ${count} entries; pass recursive: true to delete it and everything under it`)
          }
          await fs.rm(path, { recursive: true })
        } else await fs.unlink(path)
        return { path, type, operation_ids: recordedSince(ws, mark) }
      },
    ),
    defineTool(
      'move_path',
      'Move or rename a file or directory. The destination must not exist; its missing parent directories are created. Undoable with undo_operation, which takes back the directories it made too.',
      movePathInput,
      async (input) => {
        const from = resolvePath(ws, input.from)
        const to = resolvePath(ws, input.to)
        await fs.lstat(from)
        // Not "already exists; delete it first": a model that followed that advice deleted what it meant to move.
        if (from === to) throw new ToolFailure('ENOCHANGE', `from and to are both '${from}': nothing would move`)
        if (await lstatOrUndefined(ws, to)) throw new ToolFailure('EEXIST', `'${to}' already exists; delete it first or choose another destination`)
        const mark = lastSeq(ws)
        await withParents(ws, dirname(to), 'rename', `rename ${from} -> ${to}`, (into) => into.rename(from, to))
        return { from, to, operation_ids: recordedSince(ws, mark) }
      },
    ),
  ]
}
