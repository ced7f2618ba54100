// Checks 5 and 6: NIP-98 login made by nostr-tools, and Cashu tokens that
// cashu-ts wallets take from and give to the faucet, at the embedded mint.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { generateSecretKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip98 from 'nostr-tools/nip98'
// cashu-ts 2.x: 4.x does not read the gonuts v0.4.2 mint's quote answers.
import { CashuMint, CashuWallet, getEncodedToken, getDecodedToken } from 'cashu-ts-2'
import { start, api, withTimeout, sleep } from './harness.js'

let outpost
before(async () => { outpost = await start() })
after(async () => { await outpost?.stop() })

const sk = generateSecretKey()
const sign = e => finalizeEvent(e, sk)
const header = (path, method) => nip98.getToken(outpost.url + path, method, sign, true)

// One login: a second one in the same second would be the very same event,
// which the faucet refuses as a replay.
let session
async function login() {
  if (!session) {
    const r = await api(outpost.url, 'POST', '/faucet/auth/login', { headers: { Authorization: await header('/faucet/auth/login', 'POST') } })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    session = r.body
  }
  return session
}

test('5. NIP-98 from nostr-tools logs in; another URL or method is refused', { timeout: 30000 }, async () => {
  const session = await login()
  assert.equal(session.login_method, 'nip98')
  assert.equal(typeof session.token, 'string')

  const otherURL = await api(outpost.url, 'POST', '/faucet/auth/login', { headers: { Authorization: await header('/faucet/auth/me', 'POST') } })
  assert.equal(otherURL.status, 401, JSON.stringify(otherURL.body))
  assert.equal(otherURL.body.details?.check, 'u')

  const otherMethod = await api(outpost.url, 'POST', '/faucet/auth/login', { headers: { Authorization: await header('/faucet/auth/login', 'GET') } })
  assert.equal(otherMethod.status, 401, JSON.stringify(otherMethod.body))
  assert.equal(otherMethod.body.details?.check, 'method')
})

test('6. Cashu tokens between the faucet and cashu-ts wallets', { timeout: 60000 }, async t => {
  const config = await api(outpost.url, 'GET', '/faucet/config')
  const mintURL = config.body.mint_url
  const wallet = new CashuWallet(new CashuMint(mintURL))
  await withTimeout(wallet.loadMint(), 10000, 'cashu-ts to load the mint')

  await t.test("a claim's token is received by a cashu-ts wallet, and NUT-07 says its proofs are spent", async () => {
    const { token: session } = await login()
    const auth = { Authorization: `Bearer ${session}` }
    const quote = await api(outpost.url, 'POST', '/faucet/claim/quote', { body: { method: 'cashu' }, headers: auth })
    assert.equal(quote.status, 200, JSON.stringify(quote.body))
    const claim = await api(outpost.url, 'POST', '/faucet/claim/confirm', { body: { quote_id: quote.body.quote_id }, headers: auth })
    assert.equal(claim.status, 200, JSON.stringify(claim.body))
    assert.equal(claim.body.status, 'paid')
    const token = claim.body.token
    assert.match(token, /^cashu[AB]/)

    const proofs = await withTimeout(wallet.receive(token), 10000, 'cashu-ts to receive the token')
    const received = proofs.reduce((s, p) => s + p.amount, 0)
    assert.equal(received, quote.body.amount_sats)

    const states = await withTimeout(wallet.checkProofsStates(getDecodedToken(token).proofs), 10000, 'NUT-07 states')
    assert.ok(states.length > 0 && states.every(s => s.state === 'SPENT'), JSON.stringify(states))
  })

  await t.test('a token minted by cashu-ts is a deposit; the same token again is 409', async () => {
    const amount = 64
    const mq = await withTimeout(wallet.createMintQuote(amount), 10000, 'a mint quote')
    // Nothing outside can pay the test mint's simulated Lightning invoices.
    const paid = await api(outpost.url, 'POST', '/faucet/deposit/simulate-payment', { body: { invoice: mq.request } })
    assert.ok(paid.status < 300, JSON.stringify(paid.body))
    const deadline = Date.now() + 10000
    while ((await wallet.checkMintQuote(mq.quote)).state !== 'PAID') {
      assert.ok(Date.now() < deadline, 'the mint quote was never paid')
      await sleep(100)
    }
    const proofs = await withTimeout(wallet.mintProofs(amount, mq.quote), 10000, 'cashu-ts to mint')
    const token = getEncodedToken({ mint: mintURL, proofs })

    const before = await api(outpost.url, 'GET', '/faucet/stats')
    const r = await api(outpost.url, 'POST', '/faucet/deposit/redeem-ecash', { body: { token } })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    assert.equal(r.body.amount_sats, amount)
    const after = await api(outpost.url, 'GET', '/faucet/stats')
    assert.equal(after.body.balance_sats, before.body.balance_sats + amount - r.body.fee_sats,
      `balance ${before.body.balance_sats} → ${after.body.balance_sats}`)

    const again = await api(outpost.url, 'POST', '/faucet/deposit/redeem-ecash', { body: { token } })
    assert.equal(again.status, 409, JSON.stringify(again.body))
    assert.equal(again.body.error, 'token_already_spent')
  })
})
