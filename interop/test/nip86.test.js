// Check 14: relay management (NIP-86) called as a JavaScript admin tool
// would, with the NIP-98 token nostr-tools' nip98 helper makes.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Relay } from 'nostr-tools/relay'
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip11 from 'nostr-tools/nip11'
import * as nip19 from 'nostr-tools/nip19'
import * as nip98 from 'nostr-tools/nip98'
import { start, api, admin, withTimeout } from './harness.js'

const adminSk = generateSecretKey()
let outpost, relay
before(async () => {
  outpost = await start({ OUTPOST_ADMIN_PUBKEYS: nip19.npubEncode(getPublicKey(adminSk)) })
  relay = await withTimeout(Relay.connect(outpost.ws), 10000, 'connect to the relay')
})
after(async () => {
  relay?.close()
  await outpost?.stop()
})

const note = (sk, content, kind = 1) =>
  finalizeEvent({ kind, created_at: Math.floor(Date.now() / 1000), tags: [], content }, sk)

// token is nostr-tools' NIP-98 Authorization header for a NIP-86 request:
// u the relay's URL, method POST (as HTTP writes it: nostr-tools' own
// example's 'post' is refused), payload the hash of the body it sends.
const token = (request, { sk = adminSk, url = outpost.url, method = 'POST' } = {}) =>
  nip98.getToken(url, method, e => finalizeEvent(e, sk), true, request)

// rpc sends {method, params} with authorization (a token by default) and
// returns {status, contentType, body}.
async function rpc(method, params = [], { authorization, body } = {}) {
  const request = { method, params }
  const res = await withTimeout(fetch(outpost.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/nostr+json+rpc',
      Authorization: authorization ?? await token(request),
    },
    body: body ?? JSON.stringify(request),
  }), 15000, `NIP-86 ${method}`)
  return { status: res.status, contentType: res.headers.get('content-type'), body: JSON.parse(await res.text()) }
}

async function call(method, ...params) {
  const r = await rpc(method, params)
  assert.equal(r.status, 200, `${method}: ${JSON.stringify(r.body)}`)
  assert.equal(r.body.error, undefined, `${method}: ${JSON.stringify(r.body)}`)
  return r.body.result
}

async function publish(ev) {
  try {
    await withTimeout(relay.publish(ev), 10000, 'an OK from the relay')
    return 'accepted'
  } catch (err) {
    return String(err.message ?? err)
  }
}

function query(filter) {
  return withTimeout(new Promise(resolve => {
    const events = []
    const sub = relay.subscribe([filter], { onevent: e => events.push(e), oneose: () => { sub.close(); resolve(events) } })
  }), 10000, `EOSE for ${JSON.stringify(filter)}`)
}

test('14. NIP-86 with a nostr-tools NIP-98 token', { timeout: 60000 }, async t => {
  await t.test('supportedmethods lists the whole method set', async () => {
    const methods = await call('supportedmethods')
    for (const m of ['banpubkey', 'unbanpubkey', 'listbannedpubkeys', 'allowpubkey', 'unallowpubkey', 'listallowedpubkeys',
      'banevent', 'allowevent', 'listbannedevents', 'listeventsneedingmoderation', 'allowkind', 'disallowkind',
      'listallowedkinds', 'blockip', 'unblockip', 'listblockedips', 'changerelayname', 'changerelaydescription', 'changerelayicon']) {
      assert.ok(methods.includes(m), `${m} not in ${JSON.stringify(methods)}`)
    }
  })

  await t.test('banpubkey refuses the key on the relay at once; unbanpubkey lets it back', async () => {
    const sk = generateSecretKey()
    const pk = getPublicKey(sk)
    assert.equal(await call('banpubkey', pk, 'spam'), true)
    assert.deepEqual((await call('listbannedpubkeys')).find(b => b.pubkey === pk), { pubkey: pk, reason: 'spam' })
    const res = await publish(note(sk, 'banned over NIP-86'))
    assert.ok(res.startsWith('blocked:'), res)
    assert.equal(await call('unbanpubkey', pk), true)
    assert.equal(await publish(note(sk, 'back again')), 'accepted')
  })

  await t.test('allowpubkey is an allow list: while it is not empty only its keys publish', async () => {
    const member = generateSecretKey()
    const stranger = generateSecretKey()
    await call('allowpubkey', getPublicKey(member), 'member')
    assert.equal(await publish(note(member, 'a member')), 'accepted')
    const res = await publish(note(stranger, 'not on the list'))
    assert.ok(res.startsWith('restricted:'), res)
    assert.deepEqual(await call('listallowedpubkeys'), [{ pubkey: getPublicKey(member), reason: 'member' }])
    await call('unallowpubkey', getPublicKey(member))
    assert.equal(await publish(note(stranger, 'the list is empty again')), 'accepted')
  })

  await t.test('banevent hides a stored event without deleting it; allowevent serves it again', async () => {
    const ev = note(generateSecretKey(), 'to be moderated')
    assert.equal(await publish(ev), 'accepted')
    await call('banevent', ev.id, 'illegal')
    assert.deepEqual(await query({ ids: [ev.id] }), [])
    assert.deepEqual(await call('listbannedevents'), [{ id: ev.id, reason: 'illegal' }])
    await call('allowevent', ev.id, 'reviewed')
    assert.equal((await query({ ids: [ev.id] })).length, 1)
  })

  await t.test('kinds and address blocks', async () => {
    await call('disallowkind', 30023)
    assert.deepEqual(await call('listdisallowedkinds'), [30023])
    const res = await publish(note(generateSecretKey(), 'long form', 30023))
    assert.ok(res.startsWith('blocked:'), res)
    await call('allowkind', 30023)
    assert.deepEqual(await call('listallowedkinds'), [30023])
    assert.equal(await publish(note(generateSecretKey(), 'long form', 30023)), 'accepted')

    await call('blockip', '198.51.100.0/24', 'scanner')
    assert.deepEqual(await call('listblockedips'), [{ ip: '198.51.100.0/24', reason: 'scanner' }])
    // The admin API sees the same store.
    const r = await api(outpost.url, 'GET', '/banlist/admin/blocked-ips', { headers: admin })
    assert.equal(r.body.ips[0].blocked_by, 'nip86:' + nip19.npubEncode(getPublicKey(adminSk)))
    await call('unblockip', '198.51.100.0/24')
    assert.deepEqual(await call('listblockedips'), [])
    // NIP-86 cannot clear a kind's rule; the admin API can. (Sending
    // disallowkind 30023 again within the second would be the same NIP-98
    // event, refused as a replay.)
    const cleared = await api(outpost.url, 'POST', '/banlist/admin/clear-kind', { body: { kind: 30023 }, headers: admin })
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body))
    assert.deepEqual(await call('listallowedkinds'), [])
    assert.equal(await publish(note(generateSecretKey(), 'any kind again', 7)), 'accepted')
  })

  await t.test('changerelayname shows in NIP-11', async () => {
    await call('changerelayname', 'renamed from nostr-tools')
    const info = await nip11.fetchRelayInformation(outpost.ws)
    assert.equal(info.name, 'renamed from nostr-tools')
  })

  await t.test('a token NIP-98 refuses is 401 with a JSON error, and changes nothing', async () => {
    const target = getPublicKey(generateSecretKey())
    const request = { method: 'banpubkey', params: [target, 'x'] }
    const cases = [
      ['no Authorization', ''],
      ['the wrong method tag', await token(request, { method: 'GET' })],
      ['the method in lower case', await token(request, { method: 'post' })],
      ['the wrong u', await token(request, { url: outpost.url + '/elsewhere' })],
      ['the payload of another body', await token({ method: 'banpubkey', params: [target, 'y'] })],
    ]
    for (const [name, authorization] of cases) {
      const r = await rpc('banpubkey', [target, 'x'], { authorization })
      assert.equal(r.status, 401, `${name}: ${r.status} ${JSON.stringify(r.body)}`)
      assert.equal(r.contentType, 'application/nostr+json+rpc', name)
      assert.match(r.body.error, /^unauthorized: /, `${name}: ${JSON.stringify(r.body)}`)
    }
    // A read's token may come again (the same read twice in a second is
    // the same event); a change's is good once.
    const read = { method: 'listbannedpubkeys', params: [] }
    const readToken = await token(read)
    for (let i = 0; i < 2; i++) {
      const r = await rpc('listbannedpubkeys', [], { authorization: readToken })
      assert.equal(r.status, 200, `read ${i + 1}: ${JSON.stringify(r.body)}`)
    }
    const once = await token(request)
    assert.equal((await rpc('banpubkey', [target, 'x'], { authorization: once })).status, 200)
    const again = await rpc('banpubkey', [target, 'x'], { authorization: once })
    assert.equal(again.status, 401, JSON.stringify(again.body))
    await call('unbanpubkey', target)
    // A valid token from a key that is not an admin.
    const stranger = await rpc('banpubkey', [target, 'x'], { authorization: await token(request, { sk: generateSecretKey() }) })
    assert.equal(stranger.status, 403, JSON.stringify(stranger.body))
    assert.match(stranger.body.error, /^forbidden: /)
    assert.equal((await call('listbannedpubkeys')).find(b => b.pubkey === target), undefined)
  })
})
