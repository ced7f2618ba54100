// Check 7: the faucet at a real Nutshell mint (v2 keysets, input fees), with
// cashu-ts 4.x, the version wallets use today: tokens the faucet pays are
// received by cashu-ts, tokens cashu-ts makes are redeemed by the faucet,
// and an invoice of a cashu-ts wallet is paid by a claim.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { generateSecretKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip98 from 'nostr-tools/nip98'
import { Wallet, MintQuoteState, getEncodedToken } from '@cashu/cashu-ts'
import { start, api, withTimeout, sleep, nutshellRunMint, startNutshell } from './harness.js'

const skip = nutshellRunMint() ? false : 'the Nutshell bundle (../shared/tools/nutshell) is not here'

let mint, outpost
before(async () => {
  if (skip) return
  // FakeWallet pays its own invoices by itself: late enough that the
  // faucet pays a claim's invoice first.
  mint = await startNutshell({ FAKEWALLET_DELAY_INCOMING_PAYMENT: '5' })
  outpost = await start({
    OUTPOST_FAUCET_MINT_URL: mint.url,
    OUTPOST_FAUCET_NETWORK: 'mainnet', // FakeWallet's invoices are lnbc
    OUTPOST_FAUCET_POLL_INTERVAL: '200ms',
    OUTPOST_FAUCET_MIN_BALANCE: '0',
  })
})
after(async () => {
  await outpost?.stop()
  await mint?.stop()
})

const sum = proofs => proofs.reduce((s, p) => s + Number(p.amount), 0)

async function until(what, cond, ms = 20000) {
  const deadline = Date.now() + ms
  while (!(await cond())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`)
    await sleep(200)
  }
}

// A NIP-98 session of a new user, made with nostr-tools.
async function session() {
  const sk = generateSecretKey()
  const header = await nip98.getToken(outpost.url + '/faucet/auth/login', 'POST', e => finalizeEvent(e, sk), true)
  const r = await api(outpost.url, 'POST', '/faucet/auth/login', { headers: { Authorization: header } })
  assert.equal(r.status, 200, JSON.stringify(r.body))
  return { Authorization: `Bearer ${r.body.token}` }
}

async function wallet() {
  const w = new Wallet(mint.url)
  await withTimeout(w.loadMint(), 10000, 'cashu-ts to load the mint')
  return w
}

// mintProofs makes ecash in a cashu-ts wallet (FakeWallet pays the invoice).
async function mintProofs(w, amount) {
  const q = await w.createMintQuoteBolt11(amount)
  await until('the mint quote to be paid', async () => (await w.checkMintQuoteBolt11(q.quote)).state === MintQuoteState.PAID)
  return w.mintProofsBolt11(amount, q.quote)
}

test('7. the faucet at a Nutshell mint with cashu-ts 4.x', { skip, timeout: 120000 }, async t => {
  const info = await api(outpost.url, 'GET', '/faucet/deposit?amount=3000')
  assert.equal(info.status, 200, JSON.stringify(info.body))
  await until('the deposit to be minted', async () => (await api(outpost.url, 'GET', '/faucet/stats')).body.balance_sats === 3000)
  const keysets = await (await fetch(mint.url + '/v1/keysets')).json()
  assert.match(keysets.keysets[0].id, /^01[0-9a-f]{64}$/, 'a v2 keyset')

  await t.test("a claim's token is received by cashu-ts 4, and its proofs are spent after", async () => {
    const auth = await session()
    const quote = await api(outpost.url, 'POST', '/faucet/claim/quote', { body: { method: 'cashu' }, headers: auth })
    assert.equal(quote.status, 200, JSON.stringify(quote.body))
    const claim = await api(outpost.url, 'POST', '/faucet/claim/confirm', { body: { quote_id: quote.body.quote_id }, headers: auth })
    assert.equal(claim.status, 200, JSON.stringify(claim.body))
    assert.equal(claim.body.status, 'paid')
    const w = await wallet()
    const token = w.decodeToken(claim.body.token) // resolves the short keyset ids of a cashuB token
    const proofs = await withTimeout(w.receive(claim.body.token), 10000, 'cashu-ts to receive the token')
    assert.equal(sum(proofs), quote.body.amount_sats)
    const states = await w.checkProofsStates(token.proofs)
    assert.ok(states.every(s => s.state === 'SPENT'), JSON.stringify(states))
  })

  await t.test('a token cashu-ts 4 makes is a deposit; the same token again is 409', async () => {
    const w = await wallet()
    const proofs = await mintProofs(w, 64)
    const { send } = await w.send(40, proofs, { includeFees: true })
    const token = getEncodedToken({ mint: mint.url, proofs: send })
    const before = (await api(outpost.url, 'GET', '/faucet/stats')).body
    const r = await api(outpost.url, 'POST', '/faucet/deposit/redeem-ecash', { body: { token } })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    assert.equal(r.body.amount_sats, 40)
    const after = (await api(outpost.url, 'GET', '/faucet/stats')).body
    assert.equal(after.balance_sats, before.balance_sats + 40)
    const again = await api(outpost.url, 'POST', '/faucet/deposit/redeem-ecash', { body: { token } })
    assert.equal(again.status, 409, JSON.stringify(again.body))
    assert.equal(again.body.error, 'token_already_spent')
  })

  await t.test("a bolt11 claim pays a cashu-ts 4 wallet's invoice", async () => {
    const auth = await session()
    const quote = await api(outpost.url, 'POST', '/faucet/claim/quote', { body: { method: 'bolt11' }, headers: auth })
    assert.equal(quote.status, 200, JSON.stringify(quote.body))
    const w = await wallet()
    const mq = await w.createMintQuoteBolt11(quote.body.amount_sats)
    const claim = await api(outpost.url, 'POST', '/faucet/claim/confirm', { body: { quote_id: quote.body.quote_id, bolt11: mq.request }, headers: auth })
    assert.equal(claim.status, 200, JSON.stringify(claim.body))
    assert.equal(claim.body.status, 'paid')
    await until('the invoice to be paid', async () => (await w.checkMintQuoteBolt11(mq.quote)).state === MintQuoteState.PAID)
    const proofs = await w.mintProofsBolt11(quote.body.amount_sats, mq.quote)
    assert.equal(sum(proofs), quote.body.amount_sats)
  })

  await t.test('/faucet/health is ok and the ledger adds up', async () => {
    const h = await api(outpost.url, 'GET', '/faucet/health')
    assert.equal(h.body.status, 'ok', JSON.stringify(h.body))
    assert.equal(h.body.checks.mint, 'ok')
    const s = (await api(outpost.url, 'GET', '/faucet/stats')).body
    assert.equal(s.balance_sats, s.total_deposited_sats - s.total_paid_sats - s.total_fee_sats, JSON.stringify(s))
  })
})
