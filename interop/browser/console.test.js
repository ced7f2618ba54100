// The moderation console in headless Chromium: an admin signs in with an API
// key (kept in the tab's sessionStorage only), sees a report, bans the key, and
// the relay then refuses that key's note; a viewer key sees what a viewer may do.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Relay } from 'nostr-tools/relay'
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure'
import * as nip19 from 'nostr-tools/nip19'
import { start, api, withTimeout, ADMIN_KEY } from '../test/harness.js'
import { launch, newPage, snap, noProblems } from './browser.js'

let outpost, browser, relay
before(async () => {
  [outpost, browser] = await Promise.all([start(), launch()])
  relay = await withTimeout(Relay.connect(outpost.ws), 10000, 'connect to the relay')
})
after(async () => {
  relay?.close()
  await browser?.close()
  await outpost?.stop()
})

const note = (sk, content) => finalizeEvent({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content }, sk)

async function signIn(page, key) {
  await page.goto(outpost.url + '/banlist/')
  await page.getByLabel('API key', { exact: true }).fill(key)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

test('the console bans a reported key and the relay then refuses its note', { timeout: 60000 }, async () => {
  const spammer = generateSecretKey()
  const npub = nip19.npubEncode(getPublicKey(spammer))
  await withTimeout(relay.publish(note(spammer, 'buy now')), 10000, 'the relay to accept a note before the ban')
  const report = await api(outpost.url, 'POST', '/banlist/reports', { body: { reported_pubkey: npub, reason: 'spam', comment: '<b>floods</b> the relay' } })
  assert.equal(report.status, 201, JSON.stringify(report.body))

  const page = await newPage(browser)
  await signIn(page, 'opk_not-a-key')
  const signinError = page.locator('#signin-error')
  await signinError.filter({ hasText: 'This API key is not valid' }).waitFor()

  await signIn(page, ADMIN_KEY)
  await page.getByText('Signed in with an admin key.').waitFor()
  const storage = await page.evaluate(() => ({ key: sessionStorage.getItem('outpost.banlist.key'), local: localStorage.length, url: location.href }))
  assert.deepEqual(storage, { key: ADMIN_KEY, local: 0, url: outpost.url + '/banlist/' })

  const row = page.locator('#reports tbody tr').filter({ hasText: npub })
  await row.waitFor()
  assert.match(await row.textContent(), /<b>floods<\/b> the relay/) // a comment is text
  await row.getByRole('button', { name: `Ban ${npub}…` }).click()
  assert.equal(await page.getByLabel('Key to ban (npub or hex)').inputValue(), npub)
  await page.getByLabel(/^Reason/).fill('spam, reported')
  await page.getByLabel('For how long').selectOption({ label: '7 days' })
  await page.getByRole('button', { name: 'Ban', exact: true }).click()
  await page.getByText(`Banned ${npub} until`).waitFor()
  await page.locator('#bans tbody tr').filter({ hasText: npub }).filter({ hasText: 'key:bootstrap' }).waitFor()

  await assert.rejects(withTimeout(relay.publish(note(spammer, 'buy now, again')), 10000, 'an answer from the relay'),
    err => /^blocked: .*spam, reported/.test(String(err.message ?? err)))

  // Lifting the ban replaces the ban's "The relay refuses its notes", untrue from then on.
  page.once('dialog', d => d.accept())
  await page.locator('#bans tbody tr').filter({ hasText: npub }).getByRole('button', { name: `Unban ${npub}` }).click()
  await page.getByText(`Lifted the ban of ${npub}. The relay accepts its notes again.`).waitFor()
  assert.doesNotMatch(await page.locator('#ban-status').textContent(), /refuses/)
  await withTimeout(relay.publish(note(spammer, 'sorry')), 10000, 'the relay to accept a note after the unban')

  // Signed in with the bootstrap key (OUTPOST_ADMIN_API_KEY), the console lists it, and marks it.
  const bootstrapKey = page.locator('#keys tbody tr').filter({ hasText: 'bootstrap' })
  assert.match(await bootstrapKey.textContent(), /bootstrap signed in with it\s*admin/)
  assert.equal(await page.locator('#keys').getByText('No keys.').count(), 0)

  await page.getByLabel('Word or phrase').fill('buy now')
  await page.getByRole('button', { name: 'Block' }).click()
  await page.locator('#words li').filter({ hasText: 'buy now' }).waitFor()
  await page.getByRole('link', { name: 'Audit log' }).click()
  await page.locator('#audit tbody tr').filter({ hasText: 'ban' }).first().waitFor()
  // Before and after are fields, not JSON: the unban's after is who lifted the ban, and when.
  const unbanned = page.locator('#audit tbody tr').filter({ has: page.locator('td[data-label=What]', { hasText: /^unban$/ }) })
  assert.match(await unbanned.locator('td[data-label=After] dl.fields').textContent(), /^lifted at.*lifted bykey:bootstrap$/)
  for (const cell of await page.locator('#audit td[data-label=Before], #audit td[data-label=After]').allTextContents()) {
    assert.doesNotMatch(cell, /[{}"]/, 'raw JSON in the audit log')
  }
  await snap(page, 'banlist', { docs: true, at: 'main' })
  noProblems(assert, page)
  await page.context().close()
})

test('a viewer key reads bans and reports, and is told it may not ban', { timeout: 60000 }, async () => {
  const page = await newPage(browser, { viewport: { width: 390, height: 844 } })
  await signIn(page, ADMIN_KEY)
  // Each role's name fits its dropdown on a phone. A select's scrollWidth is
  // its clientWidth however much of its text is cut off, so the width its
  // options want is measured on a copy left to size itself.
  const { wants, has } = await page.getByLabel('Role').evaluate(el => {
    const free = el.cloneNode(true)
    free.removeAttribute('id')
    free.style.cssText = 'position: absolute; visibility: hidden; width: auto; max-width: none'
    el.after(free)
    const wants = free.offsetWidth
    free.remove()
    return { wants, has: el.offsetWidth }
  })
  assert.ok(wants <= has, `the roles are cut off: their dropdown wants ${wants} px, and has ${has} px`)
  await page.getByLabel('Name (who will use it)').fill('reader')
  await page.getByLabel('Role').selectOption('viewer')
  await page.getByRole('button', { name: 'Create key' }).click()
  const created = page.locator('#new-key-value')
  await created.filter({ hasText: /^opk_/ }).waitFor()
  const viewerKey = await created.textContent()

  await page.getByRole('button', { name: 'Sign out' }).click()
  assert.equal(await page.evaluate(() => sessionStorage.getItem('outpost.banlist.key')), null)
  await signIn(page, viewerKey)
  await page.getByText('Signed in.').waitFor()
  assert.equal(await page.getByRole('heading', { name: 'API keys' }).isVisible(), false)
  assert.equal(await page.getByRole('heading', { name: 'Audit log' }).isVisible(), false)

  // The console does not know a viewer from a moderator until the API says.
  await page.getByLabel('Key to ban (npub or hex)').fill(nip19.npubEncode(getPublicKey(generateSecretKey())))
  await page.getByLabel(/^Reason/).fill('testing')
  await page.getByRole('button', { name: 'Ban', exact: true }).click()
  await page.locator('#ban-error').filter({ hasText: 'Your API key’s role may not do this' }).waitFor()
  await page.getByText('Signed in with a viewer key').waitFor()
  assert.equal(await page.locator('#ban-form').isVisible(), false)
  noProblems(assert, page)
  await page.context().close()
})
