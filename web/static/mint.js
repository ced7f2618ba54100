// The mint page: "reviewed by people you follow" for a signed-in viewer —
// this tab's faucet session, or else the public key of a NIP-07 extension,
// asked for only when the viewer clicks (it signs nothing). The directory
// marks the reviews by keys the viewer's contact list follows (?viewer=);
// everything else on the page is the server's and works without scripts.
import { api, h, $, faucetSession } from './lib.js'

const root = $('reviews')
const button = $('follow-nip07')
const status = $('followed')

// sessionViewer is the npub of this tab's faucet sign-in; null without one.
async function sessionViewer() {
  const s = faucetSession()
  if (!s) return null
  try {
    return (await api('GET', root.dataset.faucetMount + '/auth/me', { token: s.token })).body.user.npub
  } catch {
    return null // an ended session: the viewer is not signed in
  }
}

// mark asks the directory which reviews viewer follows the authors of, and
// marks them.
async function mark(viewer) {
  const url = `${root.dataset.mount}/mints/${encodeURIComponent(root.dataset.mint)}/reviews?limit=50&viewer=${encodeURIComponent(viewer)}`
  const { body } = await api('GET', url)
  const followed = new Set(body.reviews.filter(r => r.followed_by_viewer).map(r => r.event_id))
  for (const li of root.querySelectorAll('li[data-event]')) {
    if (!followed.has(li.dataset.event) || li.classList.contains('followed')) continue
    li.classList.add('followed')
    li.querySelector('.meta').append(' · ', h('span', { class: 'badge followed-badge' }, 'you follow them'))
  }
  const n = body.followed_by_viewer || 0
  status.textContent = n === 0 ? 'None of these reviews is by someone you follow.'
    : `Reviewed by ${n === 1 ? 'one person' : n + ' people'} you follow.`
  status.hidden = false
  $('follow-signin').hidden = true
}

// markFor marks the reviews for the viewer viewerOf() names, and says so
// when the directory (or the extension) cannot answer.
async function markFor(viewerOf) {
  try {
    await mark(await viewerOf())
  } catch {
    status.textContent = 'Your follows could not be looked up.'
    status.hidden = false
  }
}

async function start() {
  if (!button) return // no reviews
  const viewer = await sessionViewer()
  if (viewer) return markFor(() => viewer)
  if (!window.nostr) return
  $('follow-signin').hidden = false
  button.addEventListener('click', async () => {
    button.disabled = true
    await markFor(() => window.nostr.getPublicKey())
    button.disabled = false
  })
}

start()
