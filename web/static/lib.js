// Shared helpers of outpost's pages. The page builds its DOM with h() and
// textContent only (the CSP's Trusted Types forbid HTML strings), so nothing
// a service returns can become markup.

import { describe } from './errors.js'

// ApiError is an error answer of a REST service.
export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(body?.message || `HTTP ${status}`)
    this.status = status
    this.code = body?.error || 'http_' + status
    this.details = body?.details || {}
    this.retryAfter = retryAfter
  }
}

// api calls a REST endpoint: JSON in and out, errors thrown as ApiError
// (or a TypeError when the server could not be reached).
export async function api(method, url, { body, token, headers = {} } = {}) {
  const h = { Accept: 'application/json', ...headers }
  if (token) h.Authorization = 'Bearer ' + token
  if (body !== undefined) h['Content-Type'] = 'application/json'
  const ctl = new AbortController()
  const timer = setTimeout(() => ctl.abort(), 30000)
  let res
  try {
    res = await fetch(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal: ctl.signal, credentials: 'omit', cache: 'no-store' })
  } finally {
    clearTimeout(timer)
  }
  const text = await res.text()
  let json = null
  try { json = text ? JSON.parse(text) : null } catch { /* not JSON */ }
  if (!res.ok) throw new ApiError(res.status, json, Number(res.headers.get('Retry-After')) || 0)
  return { status: res.status, body: json }
}

// h makes an element: h('a', {href: '/x', class: 'y'}, 'text', child...).
// Strings become text nodes; attributes are set one by one.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
  return el
}

export const $ = id => document.getElementById(id)

// FAUCET_SESSION is where the faucet page keeps this tab's sign-in, which
// the mint page reads to know its viewer.
export const FAUCET_SESSION = 'outpost.faucet.session'

// faucetSession is this tab's unexpired faucet sign-in ({token, expires_at,
// login_method}); null without one.
export function faucetSession() {
  try {
    const s = JSON.parse(sessionStorage.getItem(FAUCET_SESSION))
    if (s?.token && s.expires_at > Date.now() / 1000) return s
  } catch { /* nothing stored */ }
  return null
}

// show puts a message into an element and unhides it; '' hides it.
export function show(el, text) {
  el.textContent = text || ''
  el.hidden = !text
}

// showError explains err in words in el, and says it to screen readers
// (el has role=alert).
export function showError(el, err, context) {
  if (!err) return show(el, '')
  show(el, describe(err, context))
}

// busy disables a button while fn runs, so a click is not sent twice.
export async function busy(button, fn) {
  if (button.disabled) return
  button.disabled = true
  button.setAttribute('aria-busy', 'true')
  try { return await fn() } finally {
    button.disabled = false
    button.removeAttribute('aria-busy')
  }
}

// copy puts text on the clipboard and says so on the button.
export async function copy(button, text) {
  const label = button.dataset.label || button.textContent
  button.dataset.label = label
  try {
    await navigator.clipboard.writeText(text)
    button.textContent = 'Copied'
  } catch {
    button.textContent = 'Select and copy by hand'
  }
  setTimeout(() => { button.textContent = label }, 2000)
}

// qr draws text as a QR code into img. The text goes in a POST body (a
// token is money: it must not appear in a URL or a server log).
export async function qr(img, text) {
  const res = await fetch('/qr', { method: 'POST', body: text, headers: { 'Content-Type': 'text/plain' }, credentials: 'omit', cache: 'no-store' })
  if (!res.ok) { img.hidden = true; return }
  if (img.src.startsWith('blob:')) URL.revokeObjectURL(img.src)
  img.src = URL.createObjectURL(await res.blob())
  img.hidden = false
}

// time formats unix seconds in the reader's own time zone.
export function time(unix) {
  return new Date(unix * 1000).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

// utc formats unix seconds as the server's pages do: "2026-11-26 21:55 UTC".
export function utc(unix) {
  return new Date(unix * 1000).toISOString().slice(0, 16).replace('T', ' ') + ' UTC'
}

// within says how long until unix seconds: "in 3 h 20 min".
export function within(unix) {
  const s = Math.max(0, Math.round(unix - Date.now() / 1000))
  if (s < 60) return `in ${s} s`
  if (s < 3600) return `in ${Math.round(s / 60)} min`
  const total = Math.round(s / 60), hours = Math.floor(total / 60), min = total % 60
  if (hours < 48) return min ? `in ${hours} h ${min} min` : `in ${hours} h`
  return `in ${Math.round(hours / 24)} days`
}

export function sats(n) {
  return `${Number(n).toLocaleString('en')} ${n === 1 ? 'sat' : 'sats'}`
}
