// Receives Cashu tokens with cashu-ts, as a user's wallet would: one JSON
// object a line on stdin, {"mint": url, "token": "cashuB…", "v": 4 or 2},
// and one line out for each, {"sats": n} or {"error": "…"}. cashu-ts 4
// for Nutshell; 2.7 for the gonuts v0.4.2 mint, whose answers 4.x does not
// read. The Go tests of the faucet's wallet against hostile mints
// (httpapi/faucetapi/hostile_test.go) hand it every token they were paid.
import { createInterface } from 'node:readline'
import { Wallet } from '@cashu/cashu-ts'
import { CashuMint, CashuWallet } from 'cashu-ts-2'

const wallets = new Map()
async function walletAt (mint, v) {
  const key = `${v} ${mint}`
  if (!wallets.has(key)) {
    const w = v === 2 ? new CashuWallet(new CashuMint(mint)) : new Wallet(mint)
    await w.loadMint()
    wallets.set(key, w)
  }
  return wallets.get(key)
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue
  const { mint, token, v } = JSON.parse(line)
  try {
    const w = await walletAt(mint, v)
    const proofs = await w.receive(token)
    console.log(JSON.stringify({ sats: proofs.reduce((s, p) => s + Number(p.amount), 0) }))
  } catch (e) {
    console.log(JSON.stringify({ error: String(e?.message ?? e) }))
  }
}
