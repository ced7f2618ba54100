// The faucet page: sign in with a NIP-07 extension (window.nostr signs the
// NIP-98 login event; no key is ever typed here) or an npub, claim, and give
// sats back, all through the faucet's REST API. The session token lives in
// this tab's sessionStorage only.
import { api, h, $, show, showError, busy, copy, qr, time, utc, within, sats, FAUCET_SESSION as STORE, faucetSession } from './lib.js'

const root = $('faucet')
const mount = root.dataset.mount
const publicURL = root.dataset.publicUrl

let session = faucetSession()
let quote = null
let limited = false // an npub session: paid only to the profile's Lightning address
let countdown = null

function save(s) {
  session = s ? { token: s.token, expires_at: s.expires_at, login_method: s.login_method } : null
  if (session) sessionStorage.setItem(STORE, JSON.stringify(session))
  else sessionStorage.removeItem(STORE)
}

// base64 of UTF-8, as NIP-98's Authorization header wants it.
function b64(text) {
  let bin = ''
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b)
  return btoa(bin)
}

// --- signing in ---

async function loginNIP07() {
  $('no-extension').hidden = true
  showError($('signin-error'))
  if (!window.nostr?.signEvent) {
    $('no-extension').hidden = false
    return
  }
  const event = {
    kind: 27235,
    created_at: Math.floor(Date.now() / 1000),
    tags: [['u', publicURL + mount + '/auth/login'], ['method', 'POST']],
    content: '',
  }
  let signed
  try {
    signed = await window.nostr.signEvent(event)
  } catch {
    show($('signin-error'), 'Your Nostr extension did not sign the login (it was refused or failed). Try again.')
    return
  }
  try {
    const r = await api('POST', mount + '/auth/login', { headers: { Authorization: 'Nostr ' + b64(JSON.stringify(signed)) } })
    save(r.body)
    await refresh()
    $('account-h').focus()
  } catch (e) {
    showError($('signin-error'), e)
  }
}

async function loginNPub(ev) {
  ev.preventDefault()
  showError($('signin-error'))
  try {
    const r = await api('POST', mount + '/auth/login-npub', { body: { npub: $('npub').value.trim() } })
    save(r.body)
    await refresh()
    $('account-h').focus()
  } catch (e) {
    showError($('signin-error'), e)
    $('npub').setAttribute('aria-invalid', 'true')
  }
}

function logout() {
  save(null)
  resetClaim()
  render(null)
  $('login-nip07').focus()
}

// --- the account ---

const reasonWords = {
  cooldown: 'you claimed recently',
  ip_limit: 'too many claims came from your network',
  sitewide_limit: 'the faucet has paid as many claims as it may for now',
  budget_exhausted: 'today’s budget is spent',
  insufficient_funds: 'the faucet has run dry',
  faucet_disabled: 'the faucet is switched off',
  account_too_new: 'your Nostr key is too new here',
  not_in_web_of_trust: 'your Nostr key is not in this faucet’s web of trust',
  no_lightning_address: 'your Nostr profile has no Lightning address',
  mint_unavailable: 'the faucet’s mint cannot be reached',
}

async function refresh() {
  if (!session) return render(null)
  try {
    const r = await api('GET', mount + '/auth/me', { token: session.token })
    render(r.body)
  } catch (e) {
    if (e.status === 401) {
      save(null)
      render(null)
      show($('signin-error'), 'Your session has ended. Sign in again.')
    } else {
      render(null)
      showError($('signin-error'), e)
    }
  }
}

function render(me) {
  $('signin').hidden = !!me
  $('account').hidden = !me
  $('claim').hidden = !me
  if (!me) return
  const u = me.user
  $('user-name').textContent = u.display_name || u.name || u.npub.slice(0, 12) + '…'
  $('user-npub').textContent = u.npub
  limited = me.login_method === 'npub'
  $('login-method').textContent = limited
    ? 'signed in with your npub: you can only be paid to the Lightning address in your profile'
      + (u.lud16 ? ` (${u.lud16})` : ' — and your profile has none')
    : 'signed in with your Nostr extension'
  const el = me.eligibility
  if (el.eligible) {
    $('eligibility').textContent = 'You can claim now.'
    $('eligibility').className = 'success'
  } else {
    const why = el.reasons.map(r => reasonWords[r] || r.replaceAll('_', ' ')).join('; ')
    const when = el.next_claim_at ? ` You can claim again ${within(el.next_claim_at)} (${time(el.next_claim_at)}).` : ''
    $('eligibility').textContent = `You cannot claim right now: ${why}.${when}`
    $('eligibility').className = 'notice'
  }
  $('quote-button').disabled = !el.eligible
  show($('wot-standing'), standingWords(me.wot))
  for (const input of document.querySelectorAll('#quote-form input[name=method]')) {
    input.disabled = limited && input.value !== 'lightning_address'
    if (limited && input.value === 'lightning_address') input.checked = true
  }
  methodChanged()
}

// standingWords says where the user stands in the web of trust, as
// /auth/me has it, and what a claim needs that he lacks; '' without one.
function standingWords(wot) {
  if (!wot) return ''
  const members = n => `${n} ${n === 1 ? 'member' : 'members'}`
  const where = wot.hops < 0 ? 'not reached by this outpost’s web of trust'
    : wot.hops === 0 ? 'a seed of this outpost’s web of trust'
      : `${wot.hops} ${wot.hops === 1 ? 'hop' : 'hops'} from the seeds of this outpost’s web of trust, followed by ${members(wot.followers)} nearer to them`
  let text = `Web of trust: you are ${where}, ${wot.member ? 'a member' : 'not a member'}.`
  if (wot.gated) {
    text += wot.missing
      ? ` Claims are for keys within ${wot.max_hops} hops of the seeds, followed by at least ${members(wot.min_followers)} beyond them: ${wot.missing}.`
      : ' Claims are for members of the web of trust, and you are one.'
  }
  return text
}

async function refreshProfile() {
  showError($('account-error'))
  try {
    await api('POST', mount + '/user/refresh-profile', { token: session.token })
    await refresh()
  } catch (e) {
    showError($('account-error'), e)
  }
}

// --- claiming ---

const method = () => document.querySelector('#quote-form input[name=method]:checked')?.value

function methodChanged() {
  // An npub session is paid to its profile's address only, shown above.
  $('ln-address-field').hidden = limited || method() !== 'lightning_address'
}

async function getQuote(ev) {
  ev.preventDefault()
  showError($('claim-error'))
  $('claim-result').hidden = true
  const body = { method: method() }
  if (body.method === 'lightning_address' && !limited && $('ln-address').value.trim()) body.lightning_address = $('ln-address').value.trim()
  try {
    const r = await api('POST', mount + '/claim/quote', { body, token: session.token })
    quote = r.body
    $('quote-amount').textContent = sats(quote.amount_sats) + (quote.destination ? ` to ${quote.destination}` : '')
    $('invoice-amount').textContent = `${sats(quote.amount_sats)} (${root.dataset.prefix}…)`
    $('invoice-field').hidden = quote.method !== 'bolt11'
    $('invoice').required = quote.method === 'bolt11'
    $('confirm-button').textContent = `Claim ${sats(quote.amount_sats)}`
    $('quote-form').hidden = true
    $('confirm-form').hidden = false
    tick()
    clearInterval(countdown)
    countdown = setInterval(tick, 1000)
    ;(quote.method === 'bolt11' ? $('invoice') : $('confirm-button')).focus()
  } catch (e) {
    showError($('claim-error'), e)
  }
}

function tick() {
  if (!quote) return
  const t = $('quote-expiry')
  t.dateTime = new Date(quote.expires_at * 1000).toISOString()
  if (quote.expires_at <= Date.now() / 1000) {
    t.textContent = 'it expired'
    $('confirm-button').disabled = true
    show($('claim-error'), 'Your reserved amount expired before you claimed it. Start over to get your sats.')
    clearInterval(countdown)
  } else {
    t.textContent = `${time(quote.expires_at)} (${within(quote.expires_at)})`
  }
}

async function confirm(ev) {
  ev.preventDefault()
  showError($('claim-error'))
  const body = { quote_id: quote.quote_id }
  if (quote.method === 'bolt11') body.bolt11 = $('invoice').value.trim()
  try {
    const r = await api('POST', mount + '/claim/confirm', { body, token: session.token })
    showResult(r.body, r.status)
    resetClaim(true)
    refresh()
    refreshStats()
  } catch (e) {
    showError($('claim-error'), e)
    if (['quote_expired', 'quote_not_found', 'quote_already_used', 'payment_failed'].includes(e.code)) resetClaim(true)
  }
}

function showResult(c, status) {
  $('claim-result').hidden = false
  const pending = status === 202 || c.status === 'pending'
  $('claim-status').textContent = pending
    ? `Your ${sats(c.amount_sats)} are on their way: the payment is still in flight and will settle by itself.`
    : c.token ? `Here are your ${sats(c.amount_sats)} as Cashu ecash.`
      : c.nutzap ? `Sent ${sats(c.amount_sats)} as a nutzap: your Nostr wallet redeems it when it sees it.` : `Paid ${sats(c.amount_sats)}.`
  $('token-box').hidden = !c.token
  if (c.token) {
    $('token').value = c.token
    qr($('token-qr'), c.token)
    $('token').focus()
  }
  const facts = $('payment')
  facts.replaceChildren()
  const add = (k, v) => { if (v !== null && v !== undefined) facts.append(h('dt', {}, k), h('dd', {}, v)) }
  if (!c.token) {
    add('Fee (paid by the faucet)', sats(c.fee_sats))
    add('Payment hash', c.payment_hash && h('code', { class: 'wrap' }, c.payment_hash))
    add('Preimage (proof of payment)', c.preimage && h('code', { class: 'wrap' }, c.preimage))
  }
  const nz = c.nutzap
  if (nz) {
    add('Nutzap event', h('code', { class: 'wrap' }, nz.event_id))
    add('Relays that have it', nz.relays.join(', ') || null)
    add('Refused by', Object.entries(nz.refused).map(([r, why]) => `${r} (${why})`).join(', ') || null)
    add('Sent again later to', nz.pending.join(', ') || null)
  }
  $('nutzap-box').hidden = !nz
  $('nutzap-event').textContent = nz ? JSON.stringify(nz.event, null, 2) : ''
  add('Next claim', c.next_claim_at ? `${time(c.next_claim_at)} (${within(c.next_claim_at)})` : null)
  facts.hidden = !facts.childElementCount
}

function resetClaim(keepResult) {
  quote = null
  clearInterval(countdown)
  $('confirm-form').hidden = true
  $('quote-form').hidden = false
  $('confirm-button').disabled = false
  $('invoice').value = ''
  if (!keepResult) $('claim-result').hidden = true
}

// --- the figures ---

const claims = n => n === 1 ? '1 claim' : `${n} claims`

async function refreshStats() {
  try {
    const s = (await api('GET', mount + '/stats')).body
    const set = (k, v) => { const el = root.querySelector(`[data-stat=${k}]`); if (el) el.textContent = v }
    set('balance', s.balance_sats === null ? 'unknown' : sats(s.balance_sats))
    set('paid24h', `${sats(s.paid_24h_sats)} in ${claims(s.claims_24h)}`)
    set('total', `${sats(s.total_paid_sats)} in ${claims(s.total_claims)}`)
    if (s.daily_budget_sats !== null) set('spent', `${sats(s.daily_spent_sats)} of ${sats(s.daily_budget_sats)} spent`)
    const p = $('budget')
    if (p) p.value = s.daily_spent_sats
    const u = root.querySelector('[data-stat=updated]')
    u.dateTime = new Date(s.updated_at * 1000).toISOString()
    u.textContent = utc(s.updated_at) // as the server wrote it
  } catch { /* the figures stay as they were */ }
}

// --- giving back ---

async function deposit(ev) {
  ev.preventDefault()
  showError($('giveback-error'))
  show($('giveback-status'), '')
  try {
    const r = await api('GET', mount + '/deposit?amount=' + encodeURIComponent($('deposit-amount').value))
    $('deposit-invoice').value = r.body.invoice
    $('deposit-result').hidden = false
    // Upper case fits a QR code's compact alphanumeric mode; invoices ignore case.
    qr($('deposit-qr'), ('lightning:' + r.body.invoice).toUpperCase())
  } catch (e) {
    showError($('giveback-error'), e)
  }
}

async function simulate() {
  showError($('giveback-error'))
  try {
    await api('POST', mount + '/deposit/simulate-payment', { body: { invoice: $('deposit-invoice').value } })
    show($('giveback-status'), 'Paid on the test network. The faucet takes the sats in within a few seconds — thank you!')
    setTimeout(refreshStats, 6000)
  } catch (e) {
    showError($('giveback-error'), e)
  }
}

async function redeem(ev) {
  ev.preventDefault()
  showError($('giveback-error'))
  show($('giveback-status'), '')
  try {
    const r = await api('POST', mount + '/deposit/redeem-ecash', { body: { token: $('redeem-token').value.trim() } })
    const d = r.body
    show($('giveback-status'), `Thank you! ${sats(d.amount_sats)} came back${d.fee_sats ? ` (the mint kept ${sats(d.fee_sats)} in fees)` : ''}; the faucet now holds ${sats(d.balance_sats)}.`)
    $('redeem-token').value = ''
    refreshStats()
  } catch (e) {
    showError($('giveback-error'), e)
  }
}

// --- wiring ---

const on = (id, type, fn) => $(id)?.addEventListener(type, ev => {
  const button = ev.submitter || (ev.currentTarget.tagName === 'BUTTON' ? ev.currentTarget : null)
  return button ? busy(button, () => fn(ev)) : fn(ev)
})
on('login-nip07', 'click', loginNIP07)
on('login-npub', 'submit', loginNPub)
on('logout', 'click', logout)
on('refresh-profile', 'click', refreshProfile)
on('quote-form', 'submit', getQuote)
on('confirm-form', 'submit', confirm)
on('quote-cancel', 'click', () => { resetClaim(); showError($('claim-error')) })
on('copy-token', 'click', ev => copy(ev.currentTarget, $('token').value))
on('deposit-form', 'submit', deposit)
on('copy-invoice', 'click', ev => copy(ev.currentTarget, $('deposit-invoice').value))
on('simulate-payment', 'click', simulate)
on('redeem-form', 'submit', redeem)
for (const input of document.querySelectorAll('#quote-form input[name=method]')) input.addEventListener('change', methodChanged)

$('giveback').hidden = false
refresh()
