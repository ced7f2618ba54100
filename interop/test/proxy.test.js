// The reverse-proxy recipes of docs/operating.md and docs/deployment.md (deploy/nginx/outpost.conf,
// deploy/caddy/Caddyfile) with Debian's nginx and Caddy on 127.0.0.1 in
// front of outpost: a nostr-tools client publishes through each, a NIP-98
// login through it succeeds, and the rate limit counts the client's
// address, not the proxy's. .ci/ops-tools.sh installs both; without one,
// its tests are skipped and say so.
import { describe, test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync, chmodSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Relay } from 'nostr-tools/relay'
import { generateSecretKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip98 from 'nostr-tools/nip98'
import { start, api, withTimeout, sleep, freePort } from './harness.js'

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const findBin = paths => paths.find(existsSync)
const RATE_LIMIT = 6

// nginxConfig is the recipe with this test's addresses: the upstream is
// outpost's listener, nginx listens on 127.0.0.1 and ::1 without TLS.
function nginxConfig(dir, upstream, port) {
  let recipe = readFileSync(join(repo, 'deploy', 'nginx', 'outpost.conf'), 'utf8')
  recipe = recipe.replace(/^\s*listen 443 ssl;$/m, '    listen LISTEN4;')
  recipe = recipe.replace(/^\s*listen \[::\]:443 ssl;$/m, '    listen LISTEN6;')
  recipe = recipe.replace(/^\s*ssl_certificate.*$/gm, '')
  // Checked before the addresses go in: a random port may hold "443".
  assert.doesNotMatch(recipe, /443|ssl/, 'the recipe changed: teach nginxConfig its new TLS lines')
  recipe = recipe.replace(/server 127\.0\.0\.1:8080;/, `server ${upstream};`)
  recipe = recipe.replace('listen LISTEN4;', `listen 127.0.0.1:${port};`)
  recipe = recipe.replace('listen LISTEN6;', `listen [::1]:${port};`)
  const temp = name => { const d = join(dir, name); mkdirSync(d, { recursive: true }); return d }
  return `
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} info;
events { worker_connections 256; }
http {
  access_log ${join(dir, 'access.log')};
  client_body_temp_path ${temp('body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  ${recipe}
}
`
}

// caddyConfig is the Caddyfile with this test's addresses, plain http on
// 127.0.0.1 and ::1, and no admin endpoint (it would take port 2019).
function caddyConfig(dir, upstream, port) {
  let recipe = readFileSync(join(repo, 'deploy', 'caddy', 'Caddyfile'), 'utf8')
  recipe = recipe.replace(/^outpost\.example \{$/m, `http://127.0.0.1:${port}, http://[::1]:${port} {\n\tbind 127.0.0.1 [::1]`)
  recipe = recipe.replace(/reverse_proxy 127\.0\.0\.1:8080/, `reverse_proxy ${upstream}`)
  assert.doesNotMatch(recipe, /^outpost\.example \{$|reverse_proxy 127\.0\.0\.1:8080/m, 'the Caddyfile changed: teach caddyConfig its new lines')
  return `{\n\tadmin off\n\tstorage file_system ${join(dir, 'data')}\n}\n${recipe}`
}

const proxies = [
  {
    name: 'nginx',
    bin: findBin(['/usr/sbin/nginx', '/usr/bin/nginx']),
    args: (bin, dir, upstream, port) => {
      writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, upstream, port))
      return ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;']
    },
    stop: 'SIGQUIT',
  },
  {
    name: 'caddy',
    bin: findBin(['/usr/bin/caddy', '/usr/local/bin/caddy']),
    args: (bin, dir, upstream, port) => {
      writeFileSync(join(dir, 'Caddyfile'), caddyConfig(dir, upstream, port))
      return ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile']
    },
    stop: 'SIGTERM',
  },
]

for (const proxy of proxies) {
  const skip = proxy.bin ? false : `${proxy.name} is not installed (bash .ci/ops-tools.sh installs it)`
  describe(proxy.name, { skip }, () => {
    let outpost, server, base, dir

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), `outpost-${proxy.name}-`))
      chmodSync(dir, 0o755)
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      outpost = await start({
        OUTPOST_PUBLIC_URL: base,
        OUTPOST_TRUSTED_PROXIES: '127.0.0.1/32',
        OUTPOST_RATE_LIMIT: String(RATE_LIMIT),
        OUTPOST_ACCESS_LOG: 'true',
        OUTPOST_LOG_LEVEL: 'info',
      })
      const upstream = outpost.logs().match(/msg="outpost started".* addr=(\S+)/)[1]
      server = spawn(proxy.bin, proxy.args(proxy.bin, dir, upstream, port), {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
      })
      let out = ''
      server.stdout.on('data', d => { out += d })
      server.stderr.on('data', d => { out += d })
      const deadline = Date.now() + 20000
      for (;;) {
        try {
          const r = await fetch(base + '/health', { signal: AbortSignal.timeout(2000) })
          if (r.ok) break
        } catch {}
        if (server.exitCode !== null || Date.now() > deadline) {
          const log = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : ''
          throw new Error(`${proxy.name} did not come up in front of outpost:\n${out}\n${log}`)
        }
        await sleep(100)
      }
    })

    after(async () => {
      if (server && server.exitCode === null) {
        const exited = new Promise(resolve => server.on('exit', resolve))
        server.kill(proxy.stop)
        await withTimeout(exited, 10000, `${proxy.name} to stop`)
      }
      await outpost?.stop()
      if (dir) rmSync(dir, { recursive: true, force: true })
    })

    test('nostr-tools publishes and reads back through the proxy', { timeout: 30000 }, async () => {
      const relay = await withTimeout(Relay.connect(base.replace(/^http/, 'ws')), 10000, `connect through ${proxy.name}`)
      try {
        const sk = generateSecretKey()
        const ev = finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content: `through ${proxy.name}` }, sk)
        await withTimeout(relay.publish(ev), 10000, `OK through ${proxy.name}`)
        const got = await withTimeout(new Promise(resolve => {
          const events = []
          const sub = relay.subscribe([{ ids: [ev.id] }], {
            onevent: e => events.push(e),
            oneose: () => { sub.close(); resolve(events) },
          })
        }), 10000, `EOSE through ${proxy.name}`)
        assert.deepEqual(got.map(e => e.id), [ev.id])
      } finally {
        relay.close()
      }
      // NIP-11 through the proxy names the public URL's relay.
      const info = await withTimeout(fetch(base, { headers: { Accept: 'application/nostr+json' } }), 10000, 'NIP-11')
      assert.equal(info.status, 200)
      assert.equal(typeof (await info.json()).name, 'string')
    })

    test('a NIP-98 login signed for the public URL succeeds through the proxy', { timeout: 30000 }, async () => {
      const sk = generateSecretKey()
      const header = await nip98.getToken(base + '/faucet/auth/login', 'POST', e => finalizeEvent(e, sk), true)
      const res = await api(base, 'POST', '/faucet/auth/login', { headers: { Authorization: header } })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      assert.equal(res.body.login_method, 'nip98')
      const me = await api(base, 'GET', '/faucet/auth/me', { headers: { Authorization: `Bearer ${res.body.token}` } })
      assert.equal(me.status, 200, JSON.stringify(me.body))
    })

    test('/metrics is not served through the proxy', { timeout: 30000 }, async () => {
      const res = await fetch(base + '/metrics')
      assert.equal(res.status, 404)
    })

    test('the rate limit counts the client behind the proxy, not the proxy', { timeout: 60000 }, async t => {
      // Two clients of the proxy: one over ::1, one over 127.0.0.1 (the
      // proxy's own address towards outpost, which outpost trusts).
      const v6 = base.replace('127.0.0.1', '[::1]')
      try {
        await fetch(v6 + '/health', { signal: AbortSignal.timeout(2000) })
      } catch {
        t.skip('no ::1 on this machine: one client address only')
        return
      }
      let limited = 0
      for (let i = 0; i < RATE_LIMIT + 2; i++) {
        const res = await api(v6, 'GET', '/banlist/blocked/words')
        if (res.status === 429) { limited = i + 1; break }
        assert.equal(res.status, 200)
      }
      assert.ok(limited > RATE_LIMIT, `the ::1 client was limited after ${limited} requests, want after ${RATE_LIMIT}`)
      // Had outpost keyed the limit by the proxy's address, every client of
      // the proxy would be limited now.
      const other = await api(base, 'GET', '/banlist/blocked/words')
      assert.equal(other.status, 200, 'the other client of the same proxy was limited too')
      await sleep(200)
      assert.match(outpost.logs(), /msg=access service=banlist method=GET path=\/banlist\/blocked\/words status=429 .* ip=::1/)
      // A client cannot claim another address: nginx replaces X-Forwarded-For.
      const spoof = await api(v6, 'GET', '/banlist/blocked/words', { headers: { 'X-Forwarded-For': '203.0.113.9' } })
      assert.equal(spoof.status, 429, 'a forged X-Forwarded-For escaped the limit')
    })
  })
}
