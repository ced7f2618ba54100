// Checks 1–3: NIP-11, publishing under the ban list, and reports, through nostr-tools.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Relay } from 'nostr-tools/relay'
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip11 from 'nostr-tools/nip11'
import * as nip19 from 'nostr-tools/nip19'
import { start, api, admin, withTimeout, sleep } from './harness.js'

let outpost, relay
before(async () => {
  outpost = await start()
  relay = await withTimeout(Relay.connect(outpost.ws), 10000, 'connect to the relay')
})
after(async () => {
  relay?.close()
  await outpost?.stop()
})

const note = (sk, content, kind = 1, tags = []) =>
  finalizeEvent({ kind, created_at: Math.floor(Date.now() / 1000), tags, content }, sk)

async function rejected(promise) {
  try {
    const ok = await withTimeout(promise, 10000, 'an OK from the relay')
    return { accepted: true, reason: ok }
  } catch (err) {
    return { accepted: false, reason: String(err.message ?? err) }
  }
}

// Stored events matching filter, until EOSE.
function query(filter) {
  return withTimeout(new Promise(resolve => {
    const events = []
    const sub = relay.subscribe([filter], {
      onevent: e => events.push(e),
      oneose: () => { sub.close(); resolve(events) },
    })
  }), 10000, `EOSE for ${JSON.stringify(filter)}`)
}

test('1. NIP-11 parses and lists the NIPs we serve', { timeout: 30000 }, async () => {
  const info = await withTimeout(nip11.fetchRelayInformation(outpost.ws), 10000, 'NIP-11 document')
  assert.equal(typeof info.name, 'string')
  assert.match(info.pubkey, /^[0-9a-f]{64}$/, `pubkey in ${JSON.stringify(info)}`)
  for (const n of [1, 9, 11, 40, 42, 45, 56, 70, 86, 87]) {
    assert.ok(info.supported_nips.includes(n), `NIP-${n} missing from ${JSON.stringify(info.supported_nips)}`)
  }
})

test('2. publishing under the ban list', { timeout: 60000 }, async t => {
  const sk = generateSecretKey()
  const pk = getPublicKey(sk)

  await t.test('an ordinary note is accepted and read back by a subscription', async () => {
    const ev = note(sk, 'hello from nostr-tools')
    const res = await rejected(relay.publish(ev))
    assert.ok(res.accepted, `publish refused: ${res.reason}`)
    const got = await query({ ids: [ev.id] })
    assert.equal(got.length, 1, `query returned ${JSON.stringify(got)}`)
    assert.equal(got[0].content, 'hello from nostr-tools')
  })

  await t.test('after a REST ban the same key is refused with blocked:', async () => {
    const r = await api(outpost.url, 'POST', '/banlist/admin/ban', { body: { pubkey: nip19.npubEncode(pk), reason: 'interop spam' }, headers: admin })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    const res = await rejected(relay.publish(note(sk, 'hello again')))
    assert.ok(!res.accepted && res.reason.startsWith('blocked:') && res.reason.includes('interop spam'), `got ${JSON.stringify(res)}`)
  })

  await t.test('a temp ban lapses by itself', async () => {
    const tsk = generateSecretKey()
    const exp = Math.floor(Date.now() / 1000) + 2
    const r = await api(outpost.url, 'POST', '/banlist/admin/temp-ban', { body: { pubkey: getPublicKey(tsk), reason: 'cool down', expires_at: exp }, headers: admin })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    const during = await rejected(relay.publish(note(tsk, 'during')))
    assert.ok(!during.accepted && during.reason.startsWith('blocked:'), `during the ban: ${JSON.stringify(during)}`)
    await sleep(exp * 1000 - Date.now() + 300)
    const afterwards = await rejected(relay.publish(note(tsk, 'after')))
    assert.ok(afterwards.accepted, `after expires_at: ${afterwards.reason}`)
  })

  await t.test('a note with a blocked word is refused', async () => {
    const r = await api(outpost.url, 'POST', '/banlist/admin/words', { body: { word: 'moonscam' }, headers: admin })
    assert.equal(r.status, 201, JSON.stringify(r.body))
    const res = await rejected(relay.publish(note(generateSecretKey(), 'join the MoonScam today')))
    assert.ok(!res.accepted && res.reason.startsWith('blocked:') && res.reason.includes('moonscam'), `got ${JSON.stringify(res)}`)
  })
})

test('3. reports both ways', { timeout: 60000 }, async t => {
  const reported = getPublicKey(generateSecretKey())

  await t.test('a kind-1984 event shows up in GET /banlist/reports', async () => {
    const sk = generateSecretKey()
    const ev = note(sk, 'this account impersonates me', 1984, [['p', reported, 'impersonation']])
    const res = await rejected(relay.publish(ev))
    assert.ok(res.accepted, `report refused: ${res.reason}`)
    const r = await api(outpost.url, 'GET', '/banlist/reports', { headers: admin })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    const found = r.body.reports.find(x => x.report_id === ev.id)
    assert.ok(found, `report ${ev.id} not in ${JSON.stringify(r.body.reports)}`)
    assert.equal(found.source, 'nostr')
    assert.equal(found.reporter, nip19.npubEncode(getPublicKey(sk)))
    assert.equal(found.reported_pubkey, nip19.npubEncode(reported))
    assert.equal(found.type, 'impersonation')
  })

  await t.test('a REST report arrives as a kind-1984 event on a live subscription', async () => {
    const since = Math.floor(Date.now() / 1000)
    let sub
    const live = new Promise(resolve => {
      sub = relay.subscribe([{ kinds: [1984], '#p': [reported], since }], {
        onevent: e => { if (e.content === 'via REST') resolve(e) },
        oneose: async () => {
          const r = await api(outpost.url, 'POST', '/banlist/reports', { body: { reported_pubkey: reported, reason: 'spam', comment: 'via REST' } })
          assert.equal(r.status, 201, JSON.stringify(r.body))
        },
      })
    })
    const ev = await withTimeout(live, 10000, 'the REST report as a kind-1984 event')
    sub.close()
    assert.equal(ev.kind, 1984)
    assert.ok(ev.tags.some(t => t[0] === 'p' && t[1] === reported && t[2] === 'spam'), JSON.stringify(ev.tags))
    const info = await nip11.fetchRelayInformation(outpost.ws)
    assert.equal(ev.pubkey, info.pubkey, 'the report is signed by the service key')
  })
})
