// The mint directory's pages in headless Chromium: the embedded test mint is
// listed, its page shows the uptime chart, and an incident once the mint stops
// (a second outpost's embedded mint, stopped with that outpost); lists and mint
// pages work without JavaScript; a mint named with <script> markup shows it as
// text.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { start, api, sleep } from '../test/harness.js'
import { launch, newPage, snap, noProblems } from './browser.js'

let directory, other, browser
before(async () => {
  [directory, other, browser] = await Promise.all([
    // The embedded mints are on loopback; the directory must be let probe them.
    start({ OUTPOST_PROBE_ALLOW_PRIVATE: 'true', OUTPOST_PROBE_INTERVAL: '1s', OUTPOST_PROBE_TIMEOUT: '500ms' }),
    start(),
    launch(),
  ])
})
after(async () => {
  await browser?.close()
  await Promise.all([directory?.stop(), other?.stop()])
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

const mintURL = async outpost => (await api(outpost.url, 'GET', '/faucet/config')).body.mint_url
const statusOf = async id => (await api(directory.url, 'GET', `/mintdir/mints/${id}/status`)).body.status

// addMint submits url with the page's own form and returns the mint's id.
async function addMint(page, url) {
  await page.goto(directory.url + '/mintdir/')
  await page.getByLabel('Mint URL').fill(url)
  await page.getByRole('button', { name: 'Add mint' }).click()
  await page.waitForURL(/\/mintdir\/mint\/[0-9a-f-]+\?submitted=(queued|exists)$/)
  return new URL(page.url()).pathname.split('/').pop()
}

test('the directory lists the embedded test mint; its page shows the chart, and an incident after the mint stops', { timeout: 120000 }, async () => {
  const page = await newPage(browser)
  // The directory's own embedded mint is listed from its first start.
  const own = await addMint(page, await mintURL(directory))
  await page.getByText('This mint was already in the directory').waitFor()
  const stopping = await addMint(page, await mintURL(other))
  await page.getByText('The mint was added').waitFor()
  await poll('both mints online', async () => (await statusOf(own)) === 'online' && (await statusOf(stopping)) === 'online')

  // The list may be a couple of seconds behind the mints' records.
  const rows = page.locator('table.mints tbody tr')
  await poll('both listed online', async () => {
    await page.goto(directory.url + '/mintdir/')
    return (await rows.filter({ hasText: 'outpost test mint' }).filter({ hasText: 'online' }).count()) === 2
  })
  assert.equal(await rows.count(), 2)
  // New mints are not rated yet, and say so without a score beside it.
  for (const text of await rows.locator('td[data-label=Trust]').allTextContents()) assert.equal(text, 'new: rated after 24 h')
  assert.equal(await page.locator('table.mints thead th').nth(2).textContent(), 'Uptime 24\u00a0h')
  await snap(page, 'mintdir', { docs: true })
  // On a phone every card starts with the mint's name beside its icon, however long the name.
  await page.setViewportSize({ width: 390, height: 844 })
  for (const link of await rows.locator('th.mint-cell a').all()) {
    const box = await link.boundingBox()
    assert.ok(box.x < 120, `a mint's name starts at x=${box.x} on a phone`)
  }
  await page.setViewportSize({ width: 1280, height: 900 })

  await page.locator(`a[href="/mintdir/mint/${stopping}"]`).click()
  // A mint added a minute ago: its charts span the time since its first
  // check, not 24 hours of "no data" with a sliver.
  const chart = page.getByRole('img', { name: 'Uptime since the first check' })
  await chart.waitFor()
  assert.ok(await chart.locator('rect.s-online').count() >= 1, 'no online bucket in the chart')
  assert.ok(await chart.locator('rect').count() <= 2, 'the chart spans more than the time since the first check')
  assert.match(await page.locator('.checked').textContent(), /Last checked (just now|.* ago) \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\) · answered in (under 1 ms|\d+ ms)/)
  assert.equal(await page.getByRole('img', { name: 'Response time since the first check' }).count(), 1)

  // The other outpost stops, and its embedded mint with it.
  await other.stop()
  await poll('the stopped mint offline', async () => (await statusOf(stopping)) === 'offline')
  await page.reload()
  const incident = page.locator('table.incidents tr.ongoing')
  await incident.waitFor()
  assert.match(await incident.textContent(), /ongoing/)
  assert.match(await page.locator('.mint-head .badges').textContent(), /offline/)
  assert.ok(await chart.locator('rect.s-offline').count() >= 1, 'no offline bucket in the chart')
  await snap(page, 'mint', { docs: true })
  noProblems(assert, page)
  await page.context().close()
})

test('lists and mint pages work without JavaScript', { timeout: 60000 }, async () => {
  const page = await newPage(browser, { javaScriptEnabled: false, colorScheme: 'dark' })
  await page.goto(directory.url + '/mintdir/')
  await page.getByLabel('Status').selectOption('online')
  await page.getByLabel('Sort by').selectOption('name')
  await page.getByRole('button', { name: 'Show' }).click()
  await page.waitForURL(/status=online&sort=name/)
  await page.getByRole('link', { name: 'outpost test mint' }).first().click()
  await page.getByRole('link', { name: '7d' }).click()
  await page.waitForURL(/window=7d/)
  await page.getByRole('img', { name: 'Uptime since the first check' }).waitFor()
  await snap(page, 'mint-dark-nojs')
  await page.context().close()
})

// fakeMint serves a NUT-06 info document chosen by the test (under any
// path): a mint run by someone who wants to run script in the directory's
// visitors' browsers, say.
function fakeMint(info) {
  return new Promise(resolve => {
    const srv = createServer((req, res) => {
      res.setHeader('Content-Type', 'application/json')
      if (req.url.endsWith('/v1/info')) return res.end(JSON.stringify(info))
      if (req.url.endsWith('/v1/keysets')) return res.end('{"keysets":[]}')
      res.statusCode = 404
      res.end('{}')
    })
    srv.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${srv.address().port}`, close: () => srv.close() }))
  })
}

test('a mint whose name is <script> markup renders as text', { timeout: 60000 }, async () => {
  const name = '<script>window.pwned = "name"</script>'
  const mint = await fakeMint({
    name,
    pubkey: '02' + 'ab'.repeat(32),
    version: 'evil/1.0',
    description: '<img src=x onerror="window.pwned = \'description\'">',
    motd: '"><svg onload="window.pwned = \'motd\'">',
    nuts: { 4: { methods: [{ method: 'bolt11', unit: 'sat' }], disabled: false } },
  })
  try {
    const sub = await api(directory.url, 'POST', '/mintdir/mints/submit', { body: { mint_url: mint.url } })
    assert.equal(sub.status, 202, JSON.stringify(sub.body))
    await poll('the hostile mint checked', async () => (await statusOf(sub.body.mint_id)) === 'online')

    const page = await newPage(browser)
    await page.goto(`${directory.url}/mintdir/mint/${sub.body.mint_id}`)
    assert.equal(await page.locator('h1').textContent(), name)
    assert.equal(await page.title(), `${name} · mint directory`)
    assert.match(await page.locator('.motd').textContent(), /"><svg onload=/)
    // The list may be a couple of seconds behind the mints' records.
    await poll('the hostile mint listed', async () => {
      await page.goto(directory.url + '/mintdir/?sort=name')
      return (await page.getByRole('link', { name }).count()) === 1
    })
    assert.equal(await page.evaluate(() => window.pwned), undefined)
    noProblems(assert, page)
    await page.context().close()
  } finally {
    mint.close()
  }
})

test('beside a mint with a long name and URL, each of the directory\'s headers is one line at 1280 px', { timeout: 60000 }, async () => {
  const name = 'The community mint of a village with a long name, run by volunteers'
  const mint = await fakeMint({ name, pubkey: '02' + 'cd'.repeat(32), version: 'x/1', nuts: { 4: { methods: [{ method: 'bolt11', unit: 'sat' }], disabled: false } } })
  try {
    const sub = await api(directory.url, 'POST', '/mintdir/mints/submit', { body: { mint_url: mint.url + '/a/rather/long/path/to/the/mint' } })
    assert.equal(sub.status, 202, JSON.stringify(sub.body))
    const page = await newPage(browser)
    await poll('the long-named mint listed', async () => {
      await page.goto(directory.url + '/mintdir/?sort=name')
      return (await page.getByRole('link', { name }).count()) === 1
    })
    // A header's text is one line high: less than two lines' height.
    for (const th of await page.locator('table.mints thead th').all()) {
      const { text, height, line } = await th.evaluate(el => {
        const text = document.createRange()
        text.selectNodeContents(el)
        return { text: el.textContent, height: text.getBoundingClientRect().height, line: parseFloat(getComputedStyle(el).lineHeight) }
      })
      assert.ok(height < 1.5 * line, `the header ${text} wraps: ${height} px high, lines of ${line} px`)
    }
    await snap(page, 'mintdir-long-name')
    noProblems(assert, page)
    await page.context().close()
  } finally {
    mint.close()
  }
})

test('the landing page says what the server offers; keyboard users can skip to the content', { timeout: 30000 }, async () => {
  const page = await newPage(browser)
  await page.goto(directory.url + '/')
  assert.equal(await page.locator('#relay-url').textContent(), directory.ws)
  for (const name of ['Test-sats faucet', 'Cashu mint directory', 'Ban list']) await page.getByRole('link', { name }).waitFor()
  await page.keyboard.press('Tab')
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content')
  await page.keyboard.press('Enter')
  assert.equal(await page.evaluate(() => document.activeElement.id), 'main')
  await snap(page, 'landing', { docs: true })
  noProblems(assert, page)
  await page.context().close()
})
