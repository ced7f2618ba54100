// The faucet page in headless Chromium: a NIP-07 extension stand-in (window.nostr
// signing with nostr-tools) signs in, a claim pays Cashu ecash, and the token the
// page shows is received by a cashu-ts wallet at the embedded test mint.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip19 from 'nostr-tools/nip19'
import { CashuMint, CashuWallet } from 'cashu-ts-2' // 2.x talks to the embedded gonuts mint
import { start, api, withTimeout } from '../test/harness.js'
import { launch, newPage, snap, noProblems } from './browser.js'

let outpost, browser
before(async () => {
  [outpost, browser] = await Promise.all([start(), launch()])
})
after(async () => {
  await browser?.close()
  await outpost?.stop()
})

// withExtension gives the page a window.nostr that signs with sk in this
// process, as a NIP-07 extension signs outside the page.
async function withExtension(page, sk) {
  const signed = []
  await page.exposeFunction('nip07Sign', event => {
    const ev = finalizeEvent(event, sk)
    signed.push(ev)
    return ev
  })
  await page.addInitScript(pub => {
    window.nostr = { getPublicKey: async () => pub, signEvent: async event => window.nip07Sign(event) }
  }, getPublicKey(sk))
  return signed
}

test('sign in with a NIP-07 extension, claim ecash, and a cashu-ts wallet receives the token', { timeout: 90000 }, async () => {
  const page = await newPage(browser)
  const sk = generateSecretKey()
  const signed = await withExtension(page, sk)
  await page.goto(outpost.url + '/faucet/')
  await snap(page, 'faucet')

  await page.getByRole('button', { name: 'Sign in with extension' }).click()
  await page.getByRole('heading', { name: /Signed in as/ }).waitFor()
  assert.equal(signed.length, 1)
  assert.equal(signed[0].kind, 27235)
  assert.deepEqual(signed[0].tags, [['u', outpost.url + '/faucet/auth/login'], ['method', 'POST']])
  assert.equal(await page.locator('#user-npub').textContent(), nip19.npubEncode(getPublicKey(sk)))
  assert.equal(await page.locator('#eligibility').textContent(), 'You can claim now.')

  // The session is the tab's: in sessionStorage, never in the URL or localStorage.
  const storage = await page.evaluate(() => ({ session: sessionStorage.getItem('outpost.faucet.session'), local: localStorage.length, url: location.href }))
  assert.match(JSON.parse(storage.session).token, /\S{20,}/)
  assert.equal(storage.local, 0)
  assert.equal(storage.url, outpost.url + '/faucet/')

  await page.getByLabel(/Cashu ecash/).check()
  await page.getByRole('button', { name: 'Get my sats' }).click()
  const claim = page.getByRole('button', { name: /^Claim \d+ sats?$/ })
  await claim.waitFor()
  const amount = Number((await claim.textContent()).match(/\d+/)[0])
  await claim.click()

  const tokenBox = page.getByLabel(/Your Cashu token/)
  await tokenBox.waitFor()
  const token = await tokenBox.inputValue()
  assert.match(token, /^cashu[AB]/)
  const qr = page.getByRole('img', { name: 'QR code of the Cashu token' })
  await qr.waitFor()
  assert.match(await qr.getAttribute('src'), /^blob:/)
  await page.locator('#eligibility').filter({ hasText: 'You cannot claim right now' }).waitFor()
  await snap(page, 'faucet-claimed', { docs: true, at: '#claim-status' })

  const config = await api(outpost.url, 'GET', '/faucet/config')
  const wallet = new CashuWallet(new CashuMint(config.body.mint_url))
  await withTimeout(wallet.loadMint(), 10000, 'cashu-ts to load the mint')
  const proofs = await withTimeout(wallet.receive(token), 10000, 'cashu-ts to receive the token')
  assert.equal(proofs.reduce((s, p) => s + p.amount, 0), amount)

  // A second claim is not offered: the button is off, and the page says when.
  assert.equal(await page.getByRole('button', { name: 'Get my sats' }).isDisabled(), true)
  assert.match(await page.locator('#eligibility').textContent(), /You can claim again in 2[34] h/)
  // The figures, refreshed by the script, keep the server's way of writing times.
  await page.waitForFunction(() => document.querySelector('[data-stat=updated]').dateTime !== '')
  assert.match(await page.locator('[data-stat=updated]').textContent(), /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/)
  noProblems(assert, page)
  await page.context().close()
})

test('a claim to a Lightning invoice: the page asks for an invoice of the amount and shows the proof of payment', { timeout: 60000 }, async () => {
  const page = await newPage(browser, { viewport: { width: 390, height: 844 } })
  await withExtension(page, generateSecretKey())
  await page.goto(outpost.url + '/faucet/')
  await page.getByRole('button', { name: 'Sign in with extension' }).click()
  await page.getByLabel(/Lightning invoice/).check()
  await page.getByRole('button', { name: 'Get my sats' }).click()
  const claim = page.getByRole('button', { name: /^Claim \d+ sats?$/ })
  await claim.waitFor()
  const amount = Number((await claim.textContent()).match(/\d+/)[0])

  // A wrong amount is refused in words, and the claim can go on.
  const config = await api(outpost.url, 'GET', '/faucet/config')
  const wallet = new CashuWallet(new CashuMint(config.body.mint_url))
  const wrong = await withTimeout(wallet.createMintQuote(amount + 1), 10000, 'an invoice')
  await page.getByLabel(/Your invoice for exactly/).fill(wrong.request)
  await claim.click()
  await page.locator('#claim-error').filter({ hasText: 'The invoice is not for the right amount' }).waitFor()

  const right = await withTimeout(wallet.createMintQuote(amount), 10000, 'an invoice')
  await page.getByLabel(/Your invoice for exactly/).fill(right.request)
  await claim.click()
  await page.getByText(`Paid ${amount} sat`).waitFor()
  await page.getByText('Preimage (proof of payment)').waitFor()
  const quote = await withTimeout(wallet.checkMintQuote(right.quote), 10000, 'the mint quote')
  assert.equal(quote.state, 'PAID')
  noProblems(assert, page)
  await page.context().close()
})

test('an npub session is paid to its profile\'s Lightning address only, so the page asks for no other', { timeout: 30000 }, async () => {
  const page = await newPage(browser, { viewport: { width: 390, height: 844 } })
  await page.goto(outpost.url + '/faucet/')
  await page.getByLabel('Your npub').fill(nip19.npubEncode(getPublicKey(generateSecretKey())))
  await page.getByRole('button', { name: 'Sign in with npub' }).click()
  await page.getByRole('heading', { name: /Signed in as/ }).waitFor()
  assert.equal(await page.getByLabel(/Lightning address/).first().isChecked(), true)
  assert.equal(await page.getByLabel(/Cashu ecash/).isDisabled(), true)
  assert.equal(await page.locator('#ln-address-field').isHidden(), true)
  noProblems(assert, page)
  await page.context().close()
})

test('without an extension, and with a bad npub, the page says what to do', { timeout: 30000 }, async () => {
  const page = await newPage(browser, { viewport: { width: 390, height: 844 } })
  await page.goto(outpost.url + '/faucet/')
  await page.getByRole('button', { name: 'Sign in with extension' }).click()
  await page.getByText('No Nostr extension was found in this browser').waitFor()

  await page.getByLabel('Your npub').fill('npub1notakey')
  await page.getByRole('button', { name: 'Sign in with npub' }).click()
  const alert = page.locator('#signin-error')
  await alert.waitFor()
  assert.match(await alert.textContent(), /npub|public key/i)
  assert.doesNotMatch(await alert.textContent(), /^\{|invalid_/)

  // Giving back works without signing in: an invoice with its QR code,
  // paid on the test network.
  await page.getByLabel('Amount in sats').fill('21')
  await page.getByRole('button', { name: 'Make an invoice' }).click()
  const invoice = page.getByLabel('Invoice', { exact: true })
  await invoice.waitFor()
  assert.match(await invoice.inputValue(), /^lntbs21/)
  await page.getByRole('img', { name: 'QR code of the invoice' }).waitFor()
  await page.getByRole('button', { name: 'Pay it on the test network' }).click()
  await page.getByText('Paid on the test network').waitFor()
  noProblems(assert, page)
  await page.context().close()
})
