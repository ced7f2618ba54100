// Headless Chromium for the page tests: Debian's chromium driven by
// playwright-core (no browser download), with the flags this machine's closed
// network needs, a fresh profile per launch (playwright makes one in a temp
// dir and removes it; it refuses --user-data-dir), and screenshots at phone and
// desktop width into interop/artifacts/ (kept by CI, not committed).
import { chromium } from 'playwright-core'
import { mkdirSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

export const artifacts = join(dirname(fileURLToPath(import.meta.url)), '..', 'artifacts')

export const viewports = {
  phone: { width: 390, height: 844 },
  desktop: { width: 1280, height: 900 },
}

// launch starts Chromium.
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 30000,
  })
}

// newPage opens a page in a fresh context that records every script error
// and CSP violation the page reports (see noProblems).
export async function newPage(browser, { viewport = viewports.desktop, colorScheme = 'light', javaScriptEnabled = true } = {}) {
  const context = await browser.newContext({ viewport, colorScheme, javaScriptEnabled, deviceScaleFactor: 1 })
  const page = await context.newPage()
  page.problems = []
  page.on('pageerror', err => page.problems.push(`script error: ${err.message}`))
  page.on('console', msg => {
    if (msg.type() === 'error' && !/Failed to load resource: the server responded with a status of (4\d\d)/.test(msg.text())) {
      page.problems.push(`console error: ${msg.text()}`)
    }
  })
  page.setDefaultTimeout(15000)
  return page
}

// snap writes name-phone.png and name-desktop.png of the page as it is now,
// full length, fails if the page is wider than either screen, then gives the
// page back its own viewport.
// With docs set it also writes docs/name.png, one screen of a small desktop
// window (from the element at, if given): the README's pictures are copied
// from there.
export async function snap(page, name, { docs = false, at } = {}) {
  mkdirSync(join(artifacts, 'docs'), { recursive: true })
  const own = page.viewportSize()
  for (const [size, viewport] of Object.entries(viewports)) {
    await page.setViewportSize(viewport)
    await page.screenshot({ path: join(artifacts, `${name}-${size}.png`), fullPage: true })
    // Readable on a phone: nothing may push the page wider than the screen.
    const width = await page.evaluate(() => document.documentElement.scrollWidth)
    if (width > viewport.width) throw new Error(`${name} is ${width} px wide at ${size} width (${viewport.width} px)`)
  }
  if (docs) {
    await page.setViewportSize({ width: 960, height: 640 })
    if (at) await page.locator(at).evaluate(el => el.scrollIntoView())
    await page.screenshot({ path: join(artifacts, 'docs', `${name}.png`) })
  }
  await page.setViewportSize(own)
}

// noProblems fails when the page reported a script error or a CSP
// violation.
export function noProblems(assert, page) {
  assert.deepEqual(page.problems, [], 'the page reported problems')
}
