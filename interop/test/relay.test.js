// Checks 1–3: NIP-11, publishing under the ban list, and reports, through
// nostr-tools; 7–13: the relay's NIPs and limits as a JavaScript client sees
// them.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Relay } from 'nostr-tools/relay'
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip11 from 'nostr-tools/nip11'
import * as nip19 from 'nostr-tools/nip19'
import { start, api, admin, withTimeout, sleep } from './harness.js'

let outpost, relay
before(async () => {
  // Small limits, so a client can see them hit.
  outpost = await start({ OUTPOST_RELAY_MAX_LIMIT: '5', OUTPOST_RELAY_DEFAULT_LIMIT: '3', OUTPOST_RELAY_MAX_CONTENT_LENGTH: '1000' })
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

// Stored events matching filters, until EOSE.
function query(...filters) {
  return withTimeout(new Promise(resolve => {
    const events = []
    const sub = relay.subscribe(filters, {
      onevent: e => events.push(e),
      oneose: () => { sub.close(); resolve(events) },
    })
  }), 10000, `EOSE for ${JSON.stringify(filters)}`)
}

// The reason a subscription was closed for.
function closedReason(filters, params = {}) {
  return withTimeout(new Promise(resolve => {
    relay.subscribe(filters, { ...params, onevent: () => {}, onclose: resolve })
  }), 10000, `CLOSED for ${JSON.stringify(filters)}`)
}

test('1. NIP-11 parses and lists the NIPs we serve', { timeout: 30000 }, async () => {
  const info = await withTimeout(nip11.fetchRelayInformation(outpost.ws), 10000, 'NIP-11 document')
  assert.equal(typeof info.name, 'string')
  assert.match(info.self, /^[0-9a-f]{64}$/, `self in ${JSON.stringify(info)}`)
  assert.equal(info.pubkey, undefined, 'no operator key is configured')
  assert.deepEqual(info.supported_nips, [1, 9, 11, 40, 42, 45, 56, 70, 77, 86, 87])
  const l = info.limitation
  assert.equal(l.max_limit, 5)
  assert.equal(l.default_limit, 3)
  assert.equal(l.max_content_length, 1000)
  for (const f of ['max_message_length', 'max_subscriptions', 'max_filters', 'max_subid_length', 'max_event_tags', 'created_at_upper_limit']) {
    assert.equal(typeof l[f], 'number', `limitation.${f} in ${JSON.stringify(l)}`)
  }
  for (const [k, v] of Object.entries(info)) {
    assert.notEqual(v, '', `${k} is an empty string`)
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
    assert.equal(ev.pubkey, info.self, 'the report is signed by the service key')
  })
})

test('7. an event reaches a subscription once; limits are clamped', { timeout: 30000 }, async () => {
  const sk = generateSecretKey()
  const pk = getPublicKey(sk)
  const ev = note(sk, 'tagged twice', 1, [['t', 'a'], ['t', 'b']])
  await relay.publish(ev)
  const got = await query({ '#t': ['a', 'b'] }, { ids: [ev.id] }, { authors: [pk] })
  assert.deepEqual(got.map(e => e.id), [ev.id])
  for (let i = 0; i < 7; i++) await relay.publish(note(sk, `note ${i}`))
  assert.equal((await query({ authors: [pk], limit: 5000 })).length, 5, 'limit 5000 is clamped to max_limit 5')
  assert.equal((await query({ authors: [pk] })).length, 3, 'no limit gives default_limit 3')
})

test('8. COUNT counts the union of its filters (NIP-45)', { timeout: 30000 }, async () => {
  const sk = generateSecretKey()
  const pk = getPublicKey(sk)
  await relay.publish(note(sk, 'a', 1, [['t', 'x']]))
  await relay.publish(note(sk, 'b'))
  await relay.publish(note(sk, '+', 7))
  const n = await withTimeout(relay.count([{ authors: [pk], kinds: [1] }, { authors: [pk], '#t': ['x'] }, { authors: [pk], kinds: [7] }], {}), 10000, 'COUNT')
  assert.equal(n, 3)
})

test('9. refusals carry NIP-01 prefixes', { timeout: 30000 }, async () => {
  const sk = generateSecretKey()
  const long = await rejected(relay.publish(note(sk, 'x'.repeat(1001))))
  assert.ok(!long.accepted && long.reason.startsWith('invalid:'), JSON.stringify(long))
  const auth = await rejected(relay.publish(note(sk, '', 22242, [['relay', outpost.ws], ['challenge', 'x']])))
  assert.ok(!auth.accepted && auth.reason.startsWith('invalid:'), `kind 22242 as an EVENT: ${JSON.stringify(auth)}`)
  assert.match(await closedReason([{ kinds: [1] }], { id: 'x'.repeat(65) }), /^invalid:/)
  assert.match(await closedReason([{ search: 'nostr' }]), /^unsupported:/)
})

test('10. NIP-42 and NIP-70: a protected event after AUTH', { timeout: 30000 }, async () => {
  const sk = generateSecretKey()
  const ev = note(sk, 'only from me', 1, [['-']])
  const before = await rejected(relay.publish(ev))
  assert.ok(!before.accepted && before.reason.startsWith('auth-required:'), JSON.stringify(before))
  await withTimeout(relay.auth(async t => finalizeEvent(t, sk)), 10000, 'AUTH')
  const after = await rejected(relay.publish(ev))
  assert.ok(after.accepted, `after AUTH: ${after.reason}`)
})

test('11. NIP-09: a deleted note is gone and stays gone', { timeout: 30000 }, async () => {
  const sk = generateSecretKey()
  const ev = note(sk, 'regret')
  await relay.publish(ev)
  await relay.publish(note(sk, '', 5, [['e', ev.id]]))
  assert.equal((await query({ ids: [ev.id] })).length, 0)
  const again = await rejected(relay.publish(ev))
  assert.ok(!again.accepted && again.reason.startsWith('blocked:'), JSON.stringify(again))
})

test('12. events per minute per key are limited', { timeout: 60000 }, async () => {
  const sk = generateSecretKey()
  const events = Array.from({ length: 70 }, (_, i) => note(sk, `burst ${i}`))
  const started = Date.now()
  const results = await Promise.all(events.map(ev => rejected(relay.publish(ev))))
  const accepted = results.filter(r => r.accepted).length
  const refill = Math.ceil((Date.now() - started) / 1000) // one more a second
  assert.ok(accepted >= 60 && accepted <= 60 + refill, `${accepted} of 70 accepted`)
  const limited = results.filter(r => !r.accepted)
  assert.ok(limited.length > 0 && limited.every(r => r.reason.startsWith('rate-limited:')), JSON.stringify(limited))
})

test('13. ephemeral events reach subscribers and are not stored', { timeout: 30000 }, async () => {
  const sk = generateSecretKey()
  const ev = note(sk, 'now or never', 20001)
  const live = new Promise(resolve => {
    const sub = relay.subscribe([{ kinds: [20001], authors: [getPublicKey(sk)] }], {
      onevent: e => { sub.close(); resolve(e) },
      oneose: () => relay.publish(ev),
    })
  })
  assert.equal((await withTimeout(live, 10000, 'the ephemeral event')).id, ev.id)
  assert.equal((await query({ ids: [ev.id] })).length, 0)
})
