// Check 4: a NIP-87 review published with nostr-tools appears in the mint
// directory with its rating, for the embedded test mint.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Relay } from 'nostr-tools/relay'
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip19 from 'nostr-tools/nip19'
import { start, api, withTimeout, sleep } from './harness.js'

let outpost, relay
before(async () => {
  // The embedded mint is on loopback; the directory must be allowed to probe it.
  outpost = await start({ OUTPOST_PROBE_ALLOW_PRIVATE: 'true' })
  relay = await withTimeout(Relay.connect(outpost.ws), 10000, 'connect to the relay')
})
after(async () => {
  relay?.close()
  await outpost?.stop()
})

// poll calls fn until it returns something truthy.
async function poll(what, fn, ms = 15000) {
  const deadline = Date.now() + ms
  let last
  while (Date.now() < deadline) {
    last = await fn()
    if (last) return last
    await sleep(100)
  }
  throw new Error(`timed out waiting for ${what}; last saw ${JSON.stringify(last)}`)
}

test('4. a kind-38000 review appears in /reviews with its rating', { timeout: 60000 }, async () => {
  const config = await api(outpost.url, 'GET', '/faucet/config')
  assert.equal(config.status, 200, JSON.stringify(config.body))
  const mintURL = config.body.mint_url
  assert.equal(config.body.test_mint, true)

  // The directory lists the embedded test mint from the first start.
  const sub = await api(outpost.url, 'POST', '/mintdir/mints/submit', { body: { mint_url: mintURL } })
  assert.equal(sub.status, 200, JSON.stringify(sub.body))
  assert.equal(sub.body.status, 'exists')
  const id = sub.body.mint_id
  const meta = await poll('the directory to probe the mint', async () => {
    const r = await api(outpost.url, 'GET', `/mintdir/mints/${id}/metadata`)
    return r.body.pubkey ? r.body : null
  })

  const sk = generateSecretKey()
  const review = finalizeEvent({
    kind: 38000,
    created_at: Math.floor(Date.now() / 1000),
    tags: [['k', '38172'], ['d', meta.pubkey], ['u', mintURL, 'cashu'], ['rating', '4']],
    content: 'Fast and reliable test mint',
  }, sk)
  await withTimeout(relay.publish(review), 10000, 'the relay to accept the review')

  const reviews = await poll('the review in /reviews', async () => {
    const r = await api(outpost.url, 'GET', `/mintdir/mints/${id}/reviews`)
    assert.equal(r.status, 200, JSON.stringify(r.body))
    return r.body.reviews.some(x => x.event_id === review.id) ? r.body : null
  })
  const got = reviews.reviews.find(x => x.event_id === review.id)
  assert.equal(got.rating, 4)
  assert.equal(got.content, 'Fast and reliable test mint')
  assert.equal(got.pubkey, nip19.npubEncode(getPublicKey(sk)))
  assert.equal(reviews.summary.count, 1)
  assert.equal(reviews.summary.average_rating, 4)

  // The same answer by URL.
  const byURL = await api(outpost.url, 'GET', `/mintdir/mints/by-url/reviews?url=${encodeURIComponent(mintURL)}`)
  assert.deepEqual(byURL.body, reviews)

  // A malformed review is refused with a clear message.
  const bad = finalizeEvent({ kind: 38000, created_at: Math.floor(Date.now() / 1000), tags: [['k', '38172'], ['d', meta.pubkey], ['rating', '9']], content: '' }, sk)
  await assert.rejects(withTimeout(relay.publish(bad), 10000, 'an answer to a bad review'), err => {
    assert.match(String(err.message ?? err), /^invalid: /)
    return true
  })
})
