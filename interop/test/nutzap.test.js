// Check 8: nutzaps (NIP-61). A user made with nostr-tools publishes a
// kind-10019 event naming the faucet's mint (a real Nutshell mint, which
// supports P2PK, NUT-11), outpost's relay and a P2PK key, and claims with
// method nutzap; a nostr-tools client subscribed to kind 9321 for the user
// gets the event from outpost's relay; cashu-ts 4 redeems its proofs at the
// mint with the P2PK key, checking their DLEQ proofs, and cannot without it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { generateSecretKey, getPublicKey, finalizeEvent, verifyEvent } from 'nostr-tools/pure'
import { Relay } from 'nostr-tools/relay'
import * as nip98 from 'nostr-tools/nip98'
import { Wallet } from '@cashu/cashu-ts'
import { start, api, withTimeout, sleep, nutshellRunMint, startNutshell } from './harness.js'

const skip = nutshellRunMint() ? false : 'the Nutshell bundle (../shared/tools/nutshell) is not here'

let mint, outpost
before(async () => {
  if (skip) return
  mint = await startNutshell()
  outpost = await start({
    OUTPOST_FAUCET_MINT_URL: mint.url,
    OUTPOST_FAUCET_NETWORK: 'mainnet', // FakeWallet's invoices are lnbc
    OUTPOST_FAUCET_POLL_INTERVAL: '200ms',
    OUTPOST_FAUCET_MIN_BALANCE: '0',
    OUTPOST_FAUCET_FIXED_SATS: '21',
  })
})
after(async () => {
  await outpost?.stop()
  await mint?.stop()
})

async function until(what, cond, ms = 30000) {
  const deadline = Date.now() + ms
  while (!(await cond())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`)
    await sleep(200)
  }
}

test('8. a nutzap claim arrives on the relay and only the P2PK key redeems it', { skip, timeout: 120000 }, async () => {
  // The faucet's wallet gets sats (FakeWallet pays its own invoices).
  const dep = await api(outpost.url, 'GET', '/faucet/deposit?amount=500')
  assert.equal(dep.status, 200, JSON.stringify(dep.body))
  await until('the deposit', async () => (await api(outpost.url, 'GET', '/faucet/stats')).body.balance_sats >= 500)
  const config = await api(outpost.url, 'GET', '/faucet/config')
  assert.ok(config.body.payout_methods.includes('nutzap'), JSON.stringify(config.body.payout_methods))

  const sk = generateSecretKey()
  const pk = getPublicKey(sk)
  const lockSk = generateSecretKey()
  const lockKey = '02' + getPublicKey(lockSk) // NIP-61: the P2PK key, 02-prefixed
  const relay = await withTimeout(Relay.connect(outpost.ws), 10000, 'connecting to the relay')
  try {
    await relay.publish(finalizeEvent({
      kind: 10019, created_at: Math.floor(Date.now() / 1000), content: '',
      tags: [['relay', outpost.ws], ['mint', mint.url, 'sat'], ['pubkey', lockKey]],
    }, sk))

    const got = []
    relay.subscribe([{ kinds: [9321], '#p': [pk] }], { onevent: ev => got.push(ev) })

    const header = await nip98.getToken(outpost.url + '/faucet/auth/login', 'POST', e => finalizeEvent(e, sk), true)
    const login = await api(outpost.url, 'POST', '/faucet/auth/login', { headers: { Authorization: header } })
    assert.equal(login.status, 200, JSON.stringify(login.body))
    const auth = { Authorization: `Bearer ${login.body.token}` }
    const quote = await api(outpost.url, 'POST', '/faucet/claim/quote', { body: { method: 'nutzap' }, headers: auth })
    assert.equal(quote.status, 200, JSON.stringify(quote.body))
    assert.equal(quote.body.destination, lockKey)
    const claim = await api(outpost.url, 'POST', '/faucet/claim/confirm', { body: { quote_id: quote.body.quote_id }, headers: auth })
    assert.equal(claim.status, 200, JSON.stringify(claim.body))
    assert.equal(claim.body.status, 'paid')
    const id = claim.body.nutzap.event_id
    assert.ok(claim.body.nutzap.relays.includes(outpost.ws), JSON.stringify(claim.body.nutzap))

    await until('the nutzap on the subscription', () => got.some(ev => ev.id === id))
    const ev = got.find(ev => ev.id === id)
    assert.ok(verifyEvent(ev))
    assert.equal(ev.tags.find(t => t[0] === 'u')?.[1], mint.url)
    assert.equal(ev.tags.find(t => t[0] === 'p')?.[1], pk)
    const proofs = ev.tags.filter(t => t[0] === 'proof').map(t => JSON.parse(t[1]))
    assert.ok(proofs.length > 0)
    for (const p of proofs) assert.equal(JSON.parse(p.secret)[1].data, lockKey)

    const wallet = new Wallet(mint.url)
    await withTimeout(wallet.loadMint(), 10000, 'cashu-ts to load the mint')
    await assert.rejects(wallet.receive(proofs), 'redeemed without the P2PK key')
    const received = await withTimeout(wallet.receive(proofs, { privkey: Buffer.from(lockSk).toString('hex'), requireDleq: true }), 10000, 'cashu-ts to receive the nutzap')
    assert.equal(received.reduce((s, p) => s + Number(p.amount), 0), 21)
  } finally {
    relay.close()
  }
})
