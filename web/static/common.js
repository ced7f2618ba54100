// On every page: copy buttons, and local times on hover for the UTC times
// the server wrote.
import { copy } from './lib.js'

for (const b of document.querySelectorAll('button[data-copy], button[data-copy-text]')) {
  b.addEventListener('click', () => {
    const text = b.dataset.copyText ?? document.getElementById(b.dataset.copy)?.textContent ?? ''
    copy(b, text.trim())
  })
}

for (const t of document.querySelectorAll('time[datetime]')) {
  const d = new Date(t.getAttribute('datetime'))
  if (!isNaN(d)) t.title = d.toLocaleString(undefined, { dateStyle: 'full', timeStyle: 'long' })
}
