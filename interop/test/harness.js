// Starts a freshly built outpost on a free 127.0.0.1 port with a temp data
// dir, for the interop checks. Nothing here speaks Nostr or Cashu: the checks
// do that through nostr-tools and cashu-ts only.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { useWebSocketImplementation } from 'nostr-tools/relay'

// ws, the WebSocket most Node.js servers and bots use, rather than Node's
// own global one.
useWebSocketImplementation(WebSocket)

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const ADMIN_KEY = 'interop-admin-key-0123456789abcdef'

// OUTPOST_BIN names a binary built once for every test file (npm test
// builds it: see run.js); a test file run on its own builds one for itself
// and removes it when it ends.
let binary = process.env.OUTPOST_BIN
function build() {
  if (!binary) {
    const dir = mkdtempSync(join(tmpdir(), 'outpost-bin-'))
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
    binary = join(dir, 'outpost')
    execFileSync('go', ['build', '-o', binary, './cmd/outpost'], { cwd: repo, stdio: 'inherit' })
  }
  return binary
}

// withTimeout fails with a message naming what did not happen in time.
export function withTimeout(promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms) }),
  ]).finally(() => clearTimeout(timer))
}

// start runs outpost and resolves once it serves; stop() shuts it down (once,
// however often it is called) and removes its data dir.
export async function start(env = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'outpost-data-'))
  const proc = spawn(build(), [], {
    env: {
      ...process.env,
      OUTPOST_ADDR: '127.0.0.1:0',
      OUTPOST_DATA_DIR: dataDir,
      OUTPOST_ADMIN_API_KEY: ADMIN_KEY,
      OUTPOST_RATE_LIMIT: '0',
      OUTPOST_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let logs = ''
  proc.stderr.on('data', d => { logs += d })
  const url = await withTimeout(new Promise((resolve, reject) => {
    let out = ''
    proc.stdout.on('data', d => {
      out += d
      const m = out.match(/serving on (http:\/\/\S+)/)
      if (m) resolve(m[1])
    })
    proc.on('exit', code => reject(new Error(`outpost exited with ${code}:\n${logs}`)))
  }), 60000, 'outpost to start')
  return {
    url,
    ws: url.replace(/^http/, 'ws'),
    logs: () => logs,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise(resolve => proc.on('exit', resolve))
        proc.kill('SIGTERM')
        await withTimeout(exited, 20000, 'outpost to shut down')
      }
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

// api calls a REST endpoint and returns {status, body}.
export async function api(base, method, path, { body, headers = {} } = {}) {
  const res = await withTimeout(fetch(base + path, {
    method,
    headers: { ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
  }), 15000, `${method} ${path}`)
  const text = await res.text()
  let json
  try { json = JSON.parse(text) } catch { json = text }
  return { status: res.status, body: json }
}

export const admin = { Authorization: `Bearer ${ADMIN_KEY}` }

export const sleep = ms => new Promise(r => setTimeout(r, ms))

// The Nutshell bundle next to the repository (../shared/tools/nutshell),
// or $OUTPOST_NUTSHELL_DIR; null when it is not there.
export function nutshellRunMint() {
  const dir = process.env.OUTPOST_NUTSHELL_DIR || join(repo, '..', 'shared', 'tools', 'nutshell')
  const script = join(dir, 'run-mint')
  return existsSync(script) ? script : null
}

// startNutshell runs a real Nutshell mint on a free 127.0.0.1 port with a
// temp data dir and resolves once /v1/info answers; stop() sends SIGTERM.
export async function startNutshell(env = {}) {
  const script = nutshellRunMint()
  const dataDir = mkdtempSync(join(tmpdir(), 'nutshell-'))
  const port = await freePort()
  const proc = spawn(script, [String(port), dataDir, 'interop mint'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let logs = ''
  proc.stdout.on('data', d => { logs += d })
  proc.stderr.on('data', d => { logs += d })
  const exited = new Promise(resolve => proc.on('exit', resolve))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120000
  for (;;) {
    try {
      const r = await fetch(url + '/v1/info', { signal: AbortSignal.timeout(2000) })
      if (r.ok) break
    } catch {}
    if (proc.exitCode !== null) throw new Error(`run-mint exited:\n${logs}`)
    if (Date.now() > deadline) {
      proc.kill('SIGTERM')
      throw new Error(`the Nutshell mint did not answer in time:\n${logs}`)
    }
    await sleep(250)
  }
  return {
    url,
    logs: () => logs,
    async stop() {
      proc.kill('SIGTERM')
      await withTimeout(exited, 20000, 'the Nutshell mint to stop')
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
    srv.on('error', reject)
  })
}
