import { launch, screenshots } from './browser/browser.js'
const browser = await launch()
const base = process.argv[2]
for (const [path, name] of [['/', 'landing'], ['/faucet/', 'faucet'], ['/mintdir/', 'mintdir'], ['/banlist/', 'banlist'], [process.argv[3], 'mint']]) {
  if (path) await screenshots(browser, base + path, name)
}
await browser.close()
