// The moderation console: sign in with an API key (kept in this tab's
// sessionStorage only, never in a URL), then reports, bans, blocked words,
// API keys and the audit log, all through the ban list's REST API. The API
// decides what a key's role may do; the console hides what it knows the
// role cannot do and shows the API's answer for the rest.
import { api, h, $, show, showError, busy, copy, time } from './lib.js'

const root = $('console')
const mount = root.dataset.mount
const STORE = 'outpost.banlist.key'
const PAGE = 50

let key = sessionStorage.getItem(STORE)
let admin = false
let moderator = true // until the API says otherwise

const call = (method, path, body) => api(method, mount + path, { body, token: key })

// --- signing in ---

async function signIn(candidate) {
  showError($('signin-error'))
  try {
    await api('GET', mount + '/admin/bans?limit=1', { token: candidate })
  } catch (e) {
    showError($('signin-error'), e, 'console')
    return false
  }
  key = candidate
  sessionStorage.setItem(STORE, key)
  // Only admins may list keys: the answer tells the console what to show.
  admin = await call('GET', '/admin/keys').then(() => true, () => false)
  moderator = true
  roles()
  $('signin').hidden = true
  $('moderation').hidden = false
  $('public').hidden = true // the console shows the same, kept current
  await Promise.all([loadReports(), loadBans(), loadWords(), admin && loadKeys(), admin && loadAudit()])
  return true
}

function roles() {
  $('role-line').textContent = admin ? 'Signed in with an admin key.'
    : moderator ? 'Signed in. API keys and the audit log are for admin keys.'
      : 'Signed in with a viewer key: you can read bans and reports, not change them.'
  for (const el of root.querySelectorAll('.admin-only')) el.hidden = !admin
  for (const el of root.querySelectorAll('.moderator-only')) el.hidden = !moderator
}

// changed refreshes the audit log after an action, for admins.
function changed() {
  if (admin) loadAudit()
}

// forbidden notes that the key may not do what it tried, from the API's 403.
function forbidden(e) {
  if (e.status === 403 && moderator) {
    moderator = false
    roles()
  }
}

function signOut() {
  key = null
  admin = false
  sessionStorage.removeItem(STORE)
  $('moderation').hidden = true
  $('public').hidden = false
  $('signin').hidden = false
  $('api-key').value = ''
  $('api-key').focus()
}

// --- tables ---

function table(headers, rows, empty) {
  if (!rows.length) return h('p', { class: 'empty' }, empty)
  return h('table', { class: 'responsive' },
    // A column of buttons has no visible header, but a named one (axe: empty-table-header).
    h('thead', {}, h('tr', {}, headers.map(t => h('th', { scope: 'col' }, t || h('span', { class: 'visually-hidden' }, 'Actions'))))),
    h('tbody', {}, rows.map(cells => h('tr', {}, cells.map((c, i) => h('td', { 'data-label': headers[i] }, c))))))
}

const code = s => h('code', { class: 'wrap' }, s)
const when = unix => unix ? h('time', { datetime: new Date(unix * 1000).toISOString() }, time(unix)) : '–'

// --- paged lists ---

// paged keeps a newest-first list read page by page with ?until= (which
// includes its second, so the next page repeats the last one's second and
// the repeats are dropped by id).
function paged(path, field, idKey, tsKey) {
  const list = { items: [], until: null, more: false }
  list.load = async (more, params = {}) => {
    const q = new URLSearchParams({ limit: PAGE, ...params })
    if (more && list.until) q.set('until', list.until)
    const page = (await call('GET', path + '?' + q)).body[field]
    if (!more) list.items = []
    const seen = new Set(list.items.map(x => x[idKey]))
    const fresh = page.filter(x => !seen.has(x[idKey]))
    list.items = list.items.concat(fresh)
    if (page.length) list.until = page[page.length - 1][tsKey]
    list.more = page.length === PAGE && fresh.length > 0
  }
  return list
}

// --- reports ---

const reports = paged('/reports', 'reports', 'report_id', 'created_at')

async function loadReports(more) {
  showError($('reports-error'))
  try {
    await reports.load(more)
    // Shown by the reporter's standing in the web of trust (members first,
    // then by rank), newest first among equals; the list itself stays in
    // the API's order, which its paging follows.
    const rows = byStanding(reports.items).map(r => [
      when(r.created_at),
      code(r.reported_pubkey),
      h('span', { class: 'text' }, r.reason),
      h('span', { class: 'text' }, r.comment || '–'),
      r.event_ids.length ? h('ul', { class: 'plain' }, r.event_ids.map(id => h('li', {}, code(id)))) : '–',
      r.source === 'nostr' ? h('span', {}, 'Nostr, by ', code(r.reporter)) : 'REST (anonymous)',
      standing(r.reporter_wot),
      moderator ? h('button', { type: 'button', class: 'secondary small', 'aria-label': `Ban ${r.reported_pubkey}…`, onclick: () => prefillBan(r) }, 'Ban…') : '',
    ])
    $('reports').replaceChildren(table(['Received', 'Reported key', 'Reason', 'Comment', 'Events', 'From', 'Reporter in the web of trust', ''], rows, 'No reports.'))
    $('reports-more').hidden = !reports.more
  } catch (e) {
    showError($('reports-error'), e, 'console')
  }
}

// standing says where a reporter stands in the web of trust (docs/wot.md).
function standing(st) {
  if (!st) return '–'
  if (!st.member) return st.hops < 0 ? 'outside' : `outside (hop ${st.hops}, ${st.followers} followers)`
  return `member, hop ${st.hops}, ${st.followers} followers, rank ${st.rank.toPrecision(2)}`
}

// byStanding orders reports as GET /reports?sort=reporter_wot does.
function byStanding(items) {
  const group = r => !r.reporter_wot ? 2 : r.reporter_wot.member ? 0 : 1
  return items.slice().sort((a, b) => group(a) - group(b) || (b.reporter_wot?.rank ?? 0) - (a.reporter_wot?.rank ?? 0))
}

function prefillBan(r) {
  $('ban-pubkey').value = r.reported_pubkey
  $('ban-reason').value = r.reason
  $('ban-reason').focus()
  $('ban-reason').select()
}

// --- bans ---

const bans = paged('/admin/bans', 'bans', 'id', 'created_at')

async function loadBans(more) {
  showError($('bans-error'))
  try {
    await bans.load(more, $('bans-state').value ? { state: $('bans-state').value } : {})
    $('bans-more').hidden = !bans.more
    renderBans()
  } catch (e) {
    showError($('bans-error'), e, 'console')
  }
}

function renderBans() {
  const needle = $('bans-search').value.trim().toLowerCase()
  const shown = bans.items.filter(b => !needle || [b.pubkey, b.pubkey_hex, b.reason, b.banned_by, b.lifted_by || ''].some(s => s.toLowerCase().includes(needle)))
  const rows = shown.map(b => [
    code(b.pubkey),
    h('span', { class: 'text' }, b.reason),
    h('span', { class: 'badge status-' + ({ active: 'offline', expired: 'unknown', lifted: 'online' })[b.state] }, b.state),
    when(b.created_at),
    b.expires_at ? when(b.expires_at) : 'for good',
    b.banned_by,
    b.lifted_at ? h('span', {}, when(b.lifted_at), ' by ', b.lifted_by) : '–',
    b.state === 'active' && moderator ? h('button', { type: 'button', class: 'danger small', 'aria-label': `Unban ${b.pubkey}`, onclick: ev => busy(ev.currentTarget, () => unban(b)) }, 'Unban') : '',
  ])
  $('bans').replaceChildren(table(['Key', 'Reason', 'State', 'Banned', 'Until', 'By', 'Lifted', ''], rows,
    needle ? 'No ban matches.' : 'No bans.'))
}

async function ban(ev) {
  ev.preventDefault()
  showError($('ban-error'))
  show($('ban-status'), '')
  const pubkey = $('ban-pubkey').value.trim()
  const reason = $('ban-reason').value.trim()
  const d = $('ban-duration').value
  try {
    let r
    if (d === 'until') {
      const until = Math.floor(new Date($('ban-until').value).getTime() / 1000)
      if (!until) return show($('ban-error'), 'Choose the date and time the ban ends.')
      r = await call('POST', '/admin/temp-ban', { pubkey, reason, expires_at: until })
    } else {
      r = await call('POST', '/admin/ban', d ? { pubkey, reason, duration: Number(d) } : { pubkey, reason })
    }
    const b = r.body.ban
    show($('ban-status'), `Banned ${b.pubkey}${b.expires_at ? ' until ' + time(b.expires_at) : ' for good'}. The relay refuses its notes from now on.`)
    $('ban-form').reset()
    $('ban-until-field').hidden = true
    loadBans()
    changed()
  } catch (e) {
    forbidden(e)
    showError($('ban-error'), e, 'console')
  }
}

async function unban(b) {
  if (!window.confirm(`Lift the ban of ${b.pubkey}?`)) return
  showError($('bans-error'))
  try {
    await call('POST', '/admin/unban', { pubkey: b.pubkey_hex })
    // Replaces what the ban said, "The relay refuses its notes", now untrue.
    show($('ban-status'), `Lifted the ban of ${b.pubkey}. The relay accepts its notes again.`)
    await loadBans()
    changed()
  } catch (e) {
    forbidden(e)
    showError($('bans-error'), e, 'console')
  }
}

async function lookup(ev) {
  ev.preventDefault()
  const out = $('lookup-result')
  try {
    const r = (await api('GET', mount + '/blocked/pubkeys/' + encodeURIComponent($('lookup-pubkey').value.trim()))).body
    out.className = r.blocked ? 'error' : 'success'
    show(out, r.blocked ? `Banned${r.expires_at ? ' until ' + time(r.expires_at) : ' for good'}: ${r.reason}` : 'Not banned.')
  } catch (e) {
    out.className = 'error'
    showError(out, e, 'console')
  }
}

// --- words ---

async function loadWords() {
  showError($('words-error'))
  try {
    const { words } = (await call('GET', '/admin/words')).body
    $('words').replaceChildren(words.length ? h('ul', { class: 'words' }, words.map(w => h('li', {},
      h('span', {}, w.word),
      h('span', { class: 'muted' }, `by ${w.added_by}`),
      moderator ? h('button', { type: 'button', class: 'danger small', 'aria-label': `Unblock “${w.word}”`, onclick: ev => busy(ev.currentTarget, () => unblock(w.word)) }, 'Unblock') : '',
    ))) : h('p', { class: 'empty' }, 'No word is blocked.'))
  } catch (e) {
    showError($('words-error'), e, 'console')
  }
}

async function block(ev) {
  ev.preventDefault()
  showError($('words-error'))
  try {
    await call('POST', '/admin/words', { word: $('word').value })
    $('word').value = ''
    await loadWords()
    changed()
  } catch (e) {
    forbidden(e)
    showError($('words-error'), e, 'console')
  }
}

async function unblock(word) {
  showError($('words-error'))
  try {
    await call('DELETE', '/admin/words/' + encodeURIComponent(word))
    await loadWords()
    changed()
  } catch (e) {
    forbidden(e)
    showError($('words-error'), e, 'console')
  }
}

// --- API keys (admins) ---

// The bootstrap key (--admin-api-key) is a setting, not an issued key: the
// API does not list it, so the page says whether it is set (data-bootstrap),
// and it gets a row of its own that cannot be revoked here.
const bootstrap = root.dataset.bootstrap === 'set'

// keyID is the id the API gives a key (the first 6 bytes of its SHA-256, in
// hex), so the console can mark the key it is signed in with; null where
// the browser has no WebCrypto (a page not served over HTTPS).
async function keyID(secret) {
  if (!crypto.subtle) return null
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret)))
  return Array.from(sum.slice(0, 6), b => b.toString(16).padStart(2, '0')).join('')
}

async function loadKeys() {
  showError($('keys-error'))
  try {
    const [{ keys }, mine] = await Promise.all([call('GET', '/admin/keys').then(r => r.body), keyID(key)])
    // An admin key that is no issued one is the bootstrap key.
    const onBootstrap = mine !== null && !keys.some(k => k.id === mine)
    const you = yes => yes ? h('span', { class: 'badge' }, 'signed in with it') : ''
    const rows = keys.map(k => [
      h('span', {}, k.name, ' ', you(k.id === mine)), k.role, when(k.created_at), k.created_by,
      k.revoked_at ? h('span', {}, when(k.revoked_at), ' by ', k.revoked_by) : '–',
      k.revoked_at ? '' : h('button', { type: 'button', class: 'danger small', 'aria-label': `Revoke the key “${k.name}”`, onclick: ev => busy(ev.currentTarget, () => revoke(k)) }, 'Revoke'),
    ])
    if (bootstrap) {
      rows.unshift([h('span', {}, 'bootstrap ', you(onBootstrap)), 'admin', 'at start', 'the setting --admin-api-key (OUTPOST_ADMIN_API_KEY)',
        h('span', { class: 'muted' }, 'unset the setting and restart to revoke'), ''])
    }
    $('keys').replaceChildren(table(['Name', 'Role', 'Created', 'By', 'Revoked', ''], rows, 'No keys.'))
  } catch (e) {
    showError($('keys-error'), e, 'console')
  }
}

async function createKey(ev) {
  ev.preventDefault()
  showError($('keys-error'))
  try {
    const r = (await call('POST', '/admin/keys', { name: $('key-name').value.trim(), role: $('key-role').value })).body
    $('new-key-value').textContent = r.api_key
    $('new-key').hidden = false
    $('apikey-form').reset()
    await loadKeys()
    changed()
  } catch (e) {
    showError($('keys-error'), e, 'console')
  }
}

async function revoke(k) {
  if (!window.confirm(`Revoke the key “${k.name}”? Whoever uses it is locked out at once.`)) return
  showError($('keys-error'))
  try {
    await call('DELETE', '/admin/keys/' + encodeURIComponent(k.id))
    await loadKeys()
    changed()
  } catch (e) {
    showError($('keys-error'), e, 'console')
  }
}

// --- the audit log (admins) ---

const audit = paged('/admin/audit', 'audit', 'id', 'at')

async function loadAudit(more) {
  showError($('audit-error'))
  try {
    await audit.load(more)
    $('audit').replaceChildren(table(['When', 'Who', 'What', 'Target', 'Before', 'After'],
      audit.items.map(a => [when(a.at), a.actor, a.action, code(a.target), fields(a.before, a.target), fields(a.after, a.target, a.before)]), 'Nothing yet.'))
    $('audit-more').hidden = !audit.more
  } catch (e) {
    showError($('audit-error'), e, 'console')
  }
}

// fields shows a record of the audit log (a ban, a word, a key) as a list
// of its fields, times as dates, but for the entry's target, shown beside
// it; given the record before, only what changed.
function fields(v, target, before) {
  if (v === null || v === undefined) return '–'
  if (typeof v !== 'object') return String(v)
  const shown = Object.entries(v).filter(([k, x]) => x !== null && x !== '' && x !== target && !(before && sameValue(before[k], x)))
  if (!shown.length) return '–'
  return h('dl', { class: 'fields' }, shown.flatMap(([k, x]) => [h('dt', {}, k.replaceAll('_', ' ')), h('dd', {}, field(k, x))]))
}

const sameValue = (a, b) => JSON.stringify(a) === JSON.stringify(b)

function field(name, x) {
  if (typeof x === 'number' && name.endsWith('_at')) return when(x)
  if (Array.isArray(x)) return x.length ? x.map(String).join(', ') : '–'
  if (typeof x === 'object') return fields(x)
  return name === 'pubkey' || name === 'id' ? code(String(x)) : String(x)
}

// --- wiring ---

const on = (id, type, fn) => $(id)?.addEventListener(type, ev => {
  const button = ev.submitter || (ev.currentTarget.tagName === 'BUTTON' ? ev.currentTarget : null)
  return button ? busy(button, () => fn(ev)) : fn(ev)
})
on('key-form', 'submit', async ev => {
  ev.preventDefault()
  if (await signIn($('api-key').value.trim())) $('reports-h').focus()
})
on('logout', 'click', signOut)
on('reports-more', 'click', () => loadReports(true))
on('bans-more', 'click', () => loadBans(true))
on('audit-more', 'click', () => loadAudit(true))
on('ban-form', 'submit', ban)
on('lookup-form', 'submit', lookup)
on('word-form', 'submit', block)
on('apikey-form', 'submit', createKey)
on('copy-key', 'click', ev => copy(ev.currentTarget, $('new-key-value').textContent))
$('bans-state').addEventListener('change', () => loadBans())
$('bans-search').addEventListener('input', renderBans)
$('ban-duration').addEventListener('change', () => {
  $('ban-until-field').hidden = $('ban-duration').value !== 'until'
  $('ban-until').required = $('ban-duration').value === 'until'
})

if (key) {
  signIn(key).then(ok => { if (!ok) signOut() })
} else {
  $('signin').hidden = false
}
