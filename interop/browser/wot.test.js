// The web of trust on the pages, in headless Chromium, with an outpost whose
// seed follows alice (and whose faucet is gated on the web of trust): the
// faucet page shows a signed-in user's standing and what a claim needs that
// he lacks; the mint page marks the reviews by people the viewer follows —
// signed in to the faucet in the same tab, or through a NIP-07 extension's
// public key.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Relay } from 'nostr-tools/relay'
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure'
import { start, api, withTimeout, sleep } from '../test/harness.js'
import { launch, newPage, snap, noProblems } from './browser.js'

const seed = generateSecretKey()
const alice = generateSecretKey() // the seed follows her; she follows carol
const bob = generateSecretKey() // no one follows him
const carol = generateSecretKey()
let outpost, browser, relay

const now = () => Math.floor(Date.now() / 1000)
const publish = ev => withTimeout(relay.publish(ev), 10000, `the relay to accept a kind ${ev.kind}`)
const contacts = (sk, ...pks) => finalizeEvent({ kind: 3, created_at: now(), tags: pks.map(pk => ['p', pk]), content: '' }, sk)

before(async () => {
  [outpost, browser] = await Promise.all([
    start({ OUTPOST_WOT_SEEDS: getPublicKey(seed), OUTPOST_FAUCET_WOT: 'true', OUTPOST_PROBE_ALLOW_PRIVATE: 'true' }),
    launch(),
  ])
  relay = await withTimeout(Relay.connect(outpost.ws), 10000, 'connect to the relay')
  await publish(contacts(seed, getPublicKey(alice)))
  await publish(contacts(alice, getPublicKey(carol)))
})
after(async () => {
  relay?.close()
  await browser?.close()
  await outpost?.stop()
})

async function poll(what, fn, ms = 20000) {
  const deadline = Date.now() + ms
  let last
  while (Date.now() < deadline) {
    if ((last = await fn())) return last
    await sleep(200)
  }
  throw new Error(`timed out waiting for ${what}; last saw ${JSON.stringify(last)}`)
}

// withExtension gives the page a window.nostr that signs with sk in this
// process, as a NIP-07 extension signs outside the page.
async function withExtension(page, sk) {
  await page.exposeFunction('nip07Sign', event => finalizeEvent(event, sk))
  await page.addInitScript(pub => {
    window.nostr = { getPublicKey: async () => pub, signEvent: async event => window.nip07Sign(event) }
  }, getPublicKey(sk))
}

async function signIn(page) {
  await page.goto(outpost.url + '/faucet/')
  await page.getByRole('button', { name: 'Sign in with extension' }).click()
  await page.getByRole('heading', { name: /Signed in as/ }).waitFor()
}

test('the faucet page shows the standing, and what a claim lacks', { timeout: 90000 }, async () => {
  const outsider = await newPage(browser)
  await withExtension(outsider, bob)
  await signIn(outsider)
  const standing = outsider.locator('#wot-standing')
  await standing.waitFor()
  assert.equal(await standing.textContent(), 'Web of trust: you are not reached by this outpost’s web of trust, not a member. ' +
    'Claims are for keys within 2 hops of the seeds, followed by at least 1 member beyond them: ' +
    'no one in the web of trust follows you within 2 hops of its seeds.')
  assert.match(await outsider.locator('#eligibility').textContent(), /not in this faucet’s web of trust/)
  assert.equal(await outsider.getByRole('button', { name: 'Get my sats' }).isDisabled(), true)
  await noProblems(assert, outsider)

  const member = await newPage(browser)
  await withExtension(member, alice)
  await signIn(member)
  await member.locator('#wot-standing').waitFor()
  assert.equal(await member.locator('#wot-standing').textContent(), 'Web of trust: you are 1 hop from the seeds of this outpost’s web of trust, ' +
    'followed by 1 member nearer to them, a member. Claims are for members of the web of trust, and you are one.')
  assert.equal(await member.locator('#eligibility').textContent(), 'You can claim now.')
  await snap(member, 'faucet-wot')
})

test('the mint page marks the reviews by people the viewer follows', { timeout: 120000 }, async () => {
  const mintURL = (await api(outpost.url, 'GET', '/faucet/config')).body.mint_url
  const id = (await api(outpost.url, 'POST', '/mintdir/mints/submit', { body: { mint_url: mintURL } })).body.mint_id
  const meta = await poll('the directory to probe the mint', async () => (await api(outpost.url, 'GET', `/mintdir/mints/${id}/metadata`)).body.pubkey && (await api(outpost.url, 'GET', `/mintdir/mints/${id}/metadata`)).body)
  const review = (sk, text) => finalizeEvent({ kind: 38000, created_at: now(), tags: [['k', '38172'], ['d', meta.pubkey], ['u', mintURL, 'cashu'], ['rating', '4']], content: text }, sk)
  const byCarol = review(carol, 'Carol says it works')
  const byBob = review(bob, 'Bob says so too')
  await publish(byCarol)
  await publish(byBob)
  await poll('both reviews listed', async () => (await api(outpost.url, 'GET', `/mintdir/mints/${id}/reviews`)).body.reviews.length === 2)

  // Alice, signed in to the faucet in this tab, follows carol.
  const page = await newPage(browser)
  await withExtension(page, alice)
  await signIn(page)
  await page.goto(`${outpost.url}/mintdir/mint/${id}`)
  const status = page.locator('#followed')
  await status.waitFor()
  assert.equal(await status.textContent(), 'Reviewed by one person you follow.')
  assert.equal(await page.locator(`li[data-event="${byCarol.id}"] .followed-badge`).textContent(), 'you follow them')
  assert.equal(await page.locator(`li[data-event="${byBob.id}"] .followed-badge`).count(), 0)
  assert.equal(await page.locator('#follow-signin').isHidden(), true)
  await noProblems(assert, page)
  await snap(page, 'mint-followed')

  // Not signed in, the extension's public key is asked for on a click only.
  const other = await newPage(browser)
  await withExtension(other, seed)
  await other.goto(`${outpost.url}/mintdir/mint/${id}`)
  await other.getByRole('button', { name: 'Show reviews by people I follow' }).click()
  await other.locator('#followed').waitFor()
  assert.equal(await other.locator('#followed').textContent(), 'None of these reviews is by someone you follow.')

  // Without scripts the reviews are listed all the same.
  const plain = await newPage(browser, { javaScriptEnabled: false })
  await plain.goto(`${outpost.url}/mintdir/mint/${id}`)
  assert.equal(await plain.locator('ul.reviews li').count(), 2)
})
