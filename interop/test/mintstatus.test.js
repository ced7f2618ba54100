// Check 13: a client subscribed with nostr-tools to a mint's status event
// (kind 38166, signed by outpost's service key) sees it change, pushed
// live, when the mint stops.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Relay } from 'nostr-tools/relay'
import { verifyEvent } from 'nostr-tools/pure'
import * as nip19 from 'nostr-tools/nip19'
import { start, api, withTimeout } from './harness.js'

let directory, other, relay
before(async () => {
  directory = await start({ OUTPOST_PROBE_ALLOW_PRIVATE: 'true', OUTPOST_PROBE_INTERVAL: '1s', OUTPOST_PROBE_TIMEOUT: '500ms' })
  other = await start() // its embedded test mint is the mint that stops
  relay = await withTimeout(Relay.connect(directory.ws), 10000, 'connect to the relay')
})
after(async () => {
  relay?.close()
  await other?.stop()
  await directory?.stop()
})

test('13. a mint status event is pushed when the mint stops', { timeout: 90000 }, async () => {
  const mintURL = (await api(other.url, 'GET', '/faucet/config')).body.mint_url
  const index = await api(directory.url, 'GET', '/')
  const service = nip19.decode(index.body.pubkey).data

  const seen = []
  let notify = () => {}
  relay.subscribe([{ kinds: [38166], authors: [service] }], {
    onevent(ev) { seen.push(ev); notify() },
  })
  const statusOf = ev => ev.tags.find(t => t[0] === 'status')?.[1]
  const waitFor = (what, ms, pred) => withTimeout(new Promise(resolve => {
    const check = () => { const ev = seen.filter(e => e.tags.some(t => t[0] === 'd' && t[1] === mintURL)).at(-1); if (ev && pred(ev)) resolve(ev) }
    notify = check
    check()
  }), ms, what)

  const sub = await api(directory.url, 'POST', '/mintdir/mints/submit', { body: { mint_url: mintURL } })
  assert.equal(sub.status, 202, JSON.stringify(sub.body))
  const online = await waitFor('a status event saying online', 30000, ev => statusOf(ev) === 'online')
  assert.ok(verifyEvent(online), 'the status event is signed')
  assert.ok(online.tags.some(t => t[0] === 'rtt'), 'it has the last RTT')

  await other.stop()
  const offline = await waitFor('the status event pushed as offline', 30000, ev => statusOf(ev) === 'offline')
  assert.ok(offline.created_at >= online.created_at)
  assert.ok(offline.tags.some(t => t[0] === 'offline_since'), 'it says since when')
})
