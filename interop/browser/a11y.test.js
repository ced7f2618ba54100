// Every page checked by axe-core (all its rules: WCAG 2.1 A and AA — labels,
// names, contrast — and its best practices, such as named table headers),
// at desktop width in light mode and phone width in dark mode, in every state
// a page has: the console also signed in, with a report and a ban listed.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { start, api, sleep, admin, ADMIN_KEY } from '../test/harness.js'
import { launch, viewports } from './browser.js'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

let outpost, browser, mintID
before(async () => {
  [outpost, browser] = await Promise.all([start({ OUTPOST_PROBE_ALLOW_PRIVATE: 'true', OUTPOST_PROBE_INTERVAL: '1s', OUTPOST_PROBE_TIMEOUT: '500ms' }), launch()])
  const mint = (await api(outpost.url, 'GET', '/faucet/config')).body.mint_url
  mintID = (await api(outpost.url, 'POST', '/mintdir/mints/submit', { body: { mint_url: mint } })).body.mint_id
  for (let i = 0; i < 100 && (await api(outpost.url, 'GET', `/mintdir/mints/${mintID}/status`)).body.status !== 'online'; i++) await sleep(100)
  await api(outpost.url, 'POST', '/banlist/reports', { body: { reported_pubkey: 'ab'.repeat(32), reason: 'spam' } })
  await api(outpost.url, 'POST', '/banlist/admin/ban', { body: { pubkey: getPublicKey(generateSecretKey()), reason: 'spam' }, headers: admin })
})
after(async () => {
  await browser?.close()
  await outpost?.stop()
})

// audit loads path in page (after prepare) and returns axe's violations,
// described. axe comes in as an init script, so the page keeps its CSP.
async function audit(page, path, prepare = async () => {}) {
  await page.goto(outpost.url + path)
  await prepare(page)
  const result = await page.evaluate(() => window.axe.run(document))
  return result.violations.map(v => `${v.id}: ${v.help} — ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join('; ')}`)
}

const signInConsole = async page => {
  await page.getByLabel('API key', { exact: true }).fill(ADMIN_KEY)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('#reports tbody tr').first().waitFor()
  await page.locator('#bans tbody tr').first().waitFor()
}

// Both widths and both colour schemes, each page once in each.
test('every page passes axe: desktop and light, phone and dark', { timeout: 120000 }, async () => {
  const pages = [['/'], ['/faucet/'], ['/mintdir/'], [`/mintdir/mint/${mintID}`], ['/banlist/'], ['/banlist/', signInConsole]]
  const found = []
  for (const [size, colorScheme] of [['desktop', 'light'], ['phone', 'dark']]) {
    const context = await browser.newContext({ viewport: viewports[size], colorScheme })
    await context.addInitScript(axeSource)
    const page = await context.newPage()
    for (const [path, prepare] of pages) {
      for (const v of await audit(page, path, prepare)) found.push(`${path}${prepare ? ' signed in' : ''} (${size}, ${colorScheme}): ${v}`)
    }
    await context.close()
  }
  assert.deepEqual(found, [])
})
