// Runs node's test runner over the files given with one outpost binary for
// all of them: each test file runs in a process of its own, so the harness
// alone would build (and leave in the temp dir) one binary per file. The
// binary is removed when the tests end. OUTPOST_BIN, when set, is used as
// it is.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = join(dirname(fileURLToPath(import.meta.url)), '..')
let dir
if (!process.env.OUTPOST_BIN) {
  dir = mkdtempSync(join(tmpdir(), 'outpost-bin-'))
  process.env.OUTPOST_BIN = join(dir, 'outpost')
  execFileSync('go', ['build', '-o', process.env.OUTPOST_BIN, './cmd/outpost'], { cwd: repo, stdio: 'inherit' })
}
const tests = spawn(process.execPath, ['--test', '--test-concurrency=1', ...process.argv.slice(2)], { stdio: 'inherit' })
// Ctrl-C reaches the tests too; clean up once they have stopped.
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => tests.kill(sig))
tests.on('exit', (code, signal) => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  process.exit(code ?? (signal ? 1 : 0))
})
