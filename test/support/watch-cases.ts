/**
 * Kinds of change for the watch tests, each run on a real directory (node:fs, inotify) and on a
 * workspace: [the path watched, what is done]. The tree: /d with files f ('content'), e ('eee'),
 * z (empty), a link l -> f, directories sub (x, deep/y) and sub2 (empty).
 */
type F = typeof import('node:fs')
export type WatchCase = [watched: string, run: (fs: F, at: (path: string) => string) => void]

export function seedWatchTree(fs: F, at: (p: string) => string): void {
  fs.mkdirSync(at('/d/sub/deep'), { recursive: true })
  fs.writeFileSync(at('/d/f'), 'content'); fs.writeFileSync(at('/d/e'), 'eee'); fs.writeFileSync(at('/d/z'), '')
  fs.mkdirSync(at('/d/sub2'))
  fs.writeFileSync(at('/d/sub/x'), 'x'); fs.writeFileSync(at('/d/sub/deep/y'), 'y')
  fs.symlinkSync('f', at('/d/l'))
}

export const watchCases: Record<string, WatchCase> = {
  writeNew: ['/d', (fs, at) => fs.writeFileSync(at('/d/n'), 'data')],
  writeNewEmpty: ['/d', (fs, at) => fs.writeFileSync(at('/d/n'), '')],
  overwrite: ['/d', (fs, at) => fs.writeFileSync(at('/d/f'), 'other')],
  overwriteSame: ['/d', (fs, at) => fs.writeFileSync(at('/d/f'), 'content')],
  overwriteEmptyWithEmpty: ['/d', (fs, at) => fs.writeFileSync(at('/d/z'), '')],
  append: ['/d', (fs, at) => fs.appendFileSync(at('/d/f'), 'more')],
  appendEmpty: ['/d', (fs, at) => fs.appendFileSync(at('/d/f'), '')],
  appendNew: ['/d', (fs, at) => fs.appendFileSync(at('/d/n'), 'more')],
  unlink: ['/d', (fs, at) => fs.unlinkSync(at('/d/f'))],
  mkdir: ['/d', (fs, at) => fs.mkdirSync(at('/d/m'))],
  mkdirp: ['/d', (fs, at) => fs.mkdirSync(at('/d/m/n/o'), { recursive: true })],
  rmdir: ['/d', (fs, at) => fs.rmdirSync(at('/d/sub2'))],
  rmr: ['/d', (fs, at) => fs.rmSync(at('/d/sub'), { recursive: true })],
  renameSame: ['/d', (fs, at) => fs.renameSync(at('/d/f'), at('/d/g'))],
  renameOver: ['/d', (fs, at) => fs.renameSync(at('/d/f'), at('/d/e'))],
  renameIn: ['/d', (fs, at) => fs.renameSync(at('/d/f'), at('/d/sub/g'))],
  renameOut: ['/d', (fs, at) => fs.renameSync(at('/d/sub/x'), at('/d/x'))],
  renameDir: ['/d', (fs, at) => fs.renameSync(at('/d/sub'), at('/d/sub3'))],
  chmod: ['/d', (fs, at) => fs.chmodSync(at('/d/f'), 0o600)],
  utimes: ['/d', (fs, at) => fs.utimesSync(at('/d/f'), 1, 2)],
  symlink: ['/d', (fs, at) => fs.symlinkSync('f', at('/d/l2'))],
  truncate: ['/d', (fs, at) => fs.truncateSync(at('/d/f'), 2)],
  truncateSame: ['/d', (fs, at) => fs.truncateSync(at('/d/f'), 7)],
  copyNew: ['/d', (fs, at) => fs.copyFileSync(at('/d/f'), at('/d/c'))],
  copyOver: ['/d', (fs, at) => fs.copyFileSync(at('/d/f'), at('/d/e'))],
  copyEmpty: ['/d', (fs, at) => fs.copyFileSync(at('/d/z'), at('/d/c'))],
  copyExcl: ['/d', (fs, at) => fs.copyFileSync(at('/d/f'), at('/d/c'), 1)],
  fdWrites: ['/d', (fs, at) => { const fd = fs.openSync(at('/d/f'), 'r+'); fs.writeSync(fd, 'a'); fs.writeSync(fd, 'b'); fs.closeSync(fd) }],
  openW: ['/d', (fs, at) => { const fd = fs.openSync(at('/d/n'), 'w'); fs.closeSync(fd) }],
  openWEmpty: ['/d', (fs, at) => { const fd = fs.openSync(at('/d/z'), 'w'); fs.closeSync(fd) }],
  readFile: ['/d', (fs, at) => fs.readFileSync(at('/d/f'))],
  cpDir: ['/d', (fs, at) => fs.cpSync(at('/d/sub'), at('/d/cp'), { recursive: true })],
  cpFile: ['/d', (fs, at) => fs.cpSync(at('/d/f'), at('/d/c'))],
  cpFileOver: ['/d', (fs, at) => fs.cpSync(at('/d/f'), at('/d/e'))],
  // A destination spelled with '.' (not canonical): the steps are told at the canonical path.
  cpFileOverDotted: ['/d', (fs, at) => fs.cpSync(at('/d/f'), at('/d/./e'))],
  cpFileEmpty: ['/d', (fs, at) => fs.cpSync(at('/d/z'), at('/d/c'))],
  cpLink: ['/d', (fs, at) => fs.cpSync(at('/d/l'), at('/d/l3'))],
  chmodDir: ['/d', (fs, at) => fs.chmodSync(at('/d/sub'), 0o700)],
  writeInSub: ['/d', (fs, at) => fs.writeFileSync(at('/d/sub/x'), 'y')],
  writeAWrite: ['/d', (fs, at) => { const fd = fs.openSync(at('/d/f'), 'r+'); fs.writeSync(fd, 'x'); fs.writeFileSync(at('/d/e'), 'q'); fs.writeSync(fd, 'y'); fs.closeSync(fd) }],
  futimes: ['/d', (fs, at) => { const fd = fs.openSync(at('/d/f'), 'r'); fs.futimesSync(fd, 1, 1); fs.closeSync(fd) }],
  writeR: ['/d', (fs, at) => fs.writeFileSync(at('/d/f'), 'ab', { flag: 'r+' })],
  writeREmpty: ['/d', (fs, at) => fs.writeFileSync(at('/d/f'), '', { flag: 'r+' })],
  renameSelf: ['/d', (fs, at) => fs.renameSync(at('/d/f'), at('/d/f'))],
  utimesDir: ['/d', (fs, at) => fs.utimesSync(at('/d/sub'), 1, 1)],
    fWrite: ['/d/f', (fs, at) => fs.writeFileSync(at('/d/f'), 'other')],
  fAppend: ['/d/f', (fs, at) => fs.appendFileSync(at('/d/f'), 'other')],
  fChmod: ['/d/f', (fs, at) => fs.chmodSync(at('/d/f'), 0o600)],
  fUnlink: ['/d/f', (fs, at) => fs.unlinkSync(at('/d/f'))],
  fRename: ['/d/f', (fs, at) => fs.renameSync(at('/d/f'), at('/d/g'))],
  fRenameThenWrite: ['/d/f', (fs, at) => { fs.renameSync(at('/d/f'), at('/d/g')); fs.writeFileSync(at('/d/g'), 'x') }],
  fRenameOnto: ['/d/f', (fs, at) => fs.renameSync(at('/d/e'), at('/d/f'))],
  fCopyOnto: ['/d/f', (fs, at) => fs.copyFileSync(at('/d/e'), at('/d/f'))],
  fTruncate: ['/d/f', (fs, at) => fs.truncateSync(at('/d/f'), 1)],
  fUnlinkRecreate: ['/d/f', (fs, at) => { fs.unlinkSync(at('/d/f')); fs.writeFileSync(at('/d/f'), 'new') }],
  dChmod: ['/d/sub', (fs, at) => fs.chmodSync(at('/d/sub'), 0o700)],
  dRm: ['/d/sub', (fs, at) => fs.rmSync(at('/d/sub'), { recursive: true })],
  dRename: ['/d/sub', (fs, at) => fs.renameSync(at('/d/sub'), at('/d/sub3'))],
  dRenameThenWrite: ['/d/sub', (fs, at) => { fs.renameSync(at('/d/sub'), at('/d/sub3')); fs.writeFileSync(at('/d/sub3/x'), 'x2') }],
  dParentRenameThenWrite: ['/d/sub/deep', (fs, at) => { fs.renameSync(at('/d/sub'), at('/d/sub3')); fs.writeFileSync(at('/d/sub3/deep/y'), 'x2') }],
  dWriteChild: ['/d/sub', (fs, at) => fs.writeFileSync(at('/d/sub/x'), 'x2')],
  dNewChild: ['/d/sub', (fs, at) => fs.writeFileSync(at('/d/sub/z'), 'x2')],
  dChmodChildDir: ['/d/sub', (fs, at) => fs.chmodSync(at('/d/sub/deep'), 0o700)],
  dWriteGrandChild: ['/d/sub', (fs, at) => fs.writeFileSync(at('/d/sub/deep/y'), 'x2')],
  dMkdirChild: ['/d/sub', (fs, at) => fs.mkdirSync(at('/d/sub/k'))],
  dRmChildDir: ['/d/sub', (fs, at) => fs.rmSync(at('/d/sub/deep'), { recursive: true })],
  dRenameWithin: ['/d/sub', (fs, at) => fs.renameSync(at('/d/sub/x'), at('/d/sub/deep/x'))],
  lnWatch: ['/d/l', (fs, at) => fs.writeFileSync(at('/d/f'), 'via link')],
  dUtimesSelf: ['/d/sub', (fs, at) => fs.utimesSync(at('/d/sub'), 1, 1)],
  // Hard links: a directory hears of the name made or removed and of writes through its own names;
  // a watch on a file hears of every change to its inode, through any name, and of its link count.
  link: ['/d', (fs, at) => fs.linkSync(at('/d/f'), at('/d/sub/h'))],
  linkHere: ['/d', (fs, at) => fs.linkSync(at('/d/f'), at('/d/h'))],
  linkWriteOther: ['/d', (fs, at) => { fs.linkSync(at('/d/f'), at('/d/sub/h')); fs.writeFileSync(at('/d/sub/h'), 'via h') }],
  linkUnlinkOne: ['/d', (fs, at) => { fs.linkSync(at('/d/f'), at('/d/sub/h')); fs.unlinkSync(at('/d/f')); fs.appendFileSync(at('/d/sub/h'), '!') }],
  linkSymlink: ['/d', (fs, at) => fs.linkSync(at('/d/l'), at('/d/l4'))],
  fLinked: ['/d/f', (fs, at) => fs.linkSync(at('/d/f'), at('/d/sub/h'))],
  fLinkWriteOther: ['/d/f', (fs, at) => { fs.linkSync(at('/d/f'), at('/d/sub/h')); fs.writeFileSync(at('/d/sub/h'), 'via h') }],
  fLinkUnlinkSelf: ['/d/f', (fs, at) => { fs.linkSync(at('/d/f'), at('/d/sub/h')); fs.unlinkSync(at('/d/f')); fs.writeFileSync(at('/d/sub/h'), 'via h'); fs.unlinkSync(at('/d/sub/h')) }],
  fLinkUnlinkOther: ['/d/f', (fs, at) => { fs.linkSync(at('/d/f'), at('/d/sub/h')); fs.unlinkSync(at('/d/sub/h')); fs.chmodSync(at('/d/f'), 0o600) }],
}
