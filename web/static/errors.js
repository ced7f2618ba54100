// Every error the APIs return, said in words a tester or moderator
// understands. The API's own message follows, since it often names the exact
// value; codes not listed here fall back to that message.

import { within, time } from './lib.js'

const at = e => e.details?.retry_at ? ` (${time(e.details.retry_at)}, ${within(e.details.retry_at)})` : ''
const wait = e => e.retryAfter ? ` Try again in ${e.retryAfter < 120 ? e.retryAfter + ' seconds' : Math.ceil(e.retryAfter / 60) + ' minutes'}.` : ''

const checks = {
  header: 'The sign-in request carried no Nostr signature.',
  base64: 'The signed sign-in event could not be read.',
  json: 'The signed sign-in event could not be read.',
  kind: 'Your extension signed the wrong kind of event (it must be 27235, NIP-98).',
  id: 'The signed event does not match its id: your extension changed it after signing.',
  signature: 'The signature of the sign-in event is not valid.',
  created_at: 'Your device’s clock is more than a minute off from the server’s. Set the clock right and try again.',
  u: 'The sign-in was signed for another address than this server expects. Open the faucet at its public address and try again.',
  method: 'The sign-in was signed for another kind of request.',
  payload: 'The signed request does not match what was sent.',
  replay: 'That signature was already used. Sign in again.',
  session: 'Your session has ended. Sign in again.',
}

const messages = {
  // faucet: claims
  rate_limit_exceeded: e => ({
    cooldown: 'You have claimed already. Your next claim is possible' + at(e) + '.',
    ip_limit: 'Too many claims came from your network recently. The next one is possible' + at(e) + '.',
    sitewide_limit: 'The faucet has paid as many claims as it may for now. Try again' + at(e) + '.',
  })[e.details?.reason] || 'Too many requests from your network.' + wait(e),
  account_too_new: 'Your Nostr key is too new for this faucet: it must have been seen on Nostr for a while first.',
  not_in_web_of_trust: 'This faucet pays only keys in its web of trust: people its operators follow, and people they follow.',
  npub_session_restricted: 'With an npub sign-in you can only be paid to the Lightning address in your Nostr profile. Sign in with a Nostr extension to use ecash or an invoice.',
  no_lightning_address: 'Your Nostr profile has no Lightning address (lud16). Add one in your Nostr client and reload your profile, or enter one here.',
  no_nutzap_info: 'No Nostr wallet of yours was found: nutzaps need a kind-10019 event (a NIP-60 wallet publishes it) naming this faucet’s mint, your relays and your wallet’s key.',
  nutzap_mint_not_accepted: 'Your Nostr wallet (kind 10019) does not list this faucet’s mint. Add the mint to your wallet and try again.',
  invalid_p2pk_key: 'The key in your Nostr wallet’s kind-10019 event is not a valid public key. Set your wallet up again.',
  nutzap_unavailable: 'This faucet cannot pay nutzaps right now. Choose another way to be paid.',
  faucet_disabled: 'The faucet is switched off at the moment.',
  budget_exhausted: 'Today’s budget is spent. The faucet pays again after midnight UTC.',
  insufficient_funds: 'The faucet has run dry. Come back later, or give some sats back.',
  quote_expired: 'Your reserved amount expired before you claimed it. Get your sats again.',
  quote_already_used: 'This claim was already made.',
  quote_not_found: 'This claim is unknown or not yours. Get your sats again.',
  invoice_amount_mismatch: 'The invoice is not for the right amount: make one for exactly the amount shown, without changing it.',
  wrong_network: 'The invoice is for another Bitcoin network than this faucet pays on.',
  invoice_expired: 'The invoice has expired. Make a new one.',
  invalid_lightning_address: 'That is not a Lightning address (it looks like name@domain).',
  lightning_address_unreachable: 'The Lightning address could not be reached. Check it, or choose ecash.',
  amount_not_accepted: 'The Lightning address does not take this amount.',
  payment_failed: 'The payment failed and nothing was paid; your claim was released, so you can try again.',
  invalid_method: 'Choose how you want to be paid.',
  mint_unavailable: 'The faucet’s mint cannot be reached right now. Try again in a minute.',
  mint_error: 'The mint could not do this right now. Try again in a minute.',
  npub_login_disabled: 'Signing in with an npub is switched off here. Use a Nostr extension.',
  // faucet: deposits
  invalid_token: 'That is not a Cashu token. It starts with cashuA or cashuB.',
  token_already_spent: 'This token was already spent or given back.',
  mint_not_accepted: 'Tokens from that mint are not taken here.',
  token_too_large: 'This token is larger than the faucet takes at once.',
  amount_out_of_range: 'Choose an amount within the range shown.',
  invalid_amount: 'Enter a whole number of sats.',
  deposits_busy: 'Too many invoices are waiting to be paid. Try again later.',
  deposits_disabled: 'This kind of deposit is switched off here.',
  deposit_refused: 'The mint refused the deposit.',
  invoice_not_payable: 'The test network cannot pay this invoice.',
  // ban list
  forbidden: 'Your API key’s role may not do this.',
  ban_not_found: 'This key has no active ban.',
  invalid_pubkey: 'That is not a public key: enter an npub1… or 64 hex characters.',
  invalid_duration: 'Choose how long the ban lasts.',
  invalid_expires_at: 'The end of a temporary ban must be in the future.',
  invalid_word: 'That word cannot be blocked.',
  word_exists: 'That word is blocked already.',
  word_not_found: 'That word is not blocked.',
  key_name_taken: 'A key with that name exists already: choose another name.',
  key_not_found: 'That key does not exist.',
  invalid_role: 'Choose a role: viewer, moderator or admin.',
  write_conflict: 'Someone changed this at the same moment. Try again.',
  // everywhere
  request_too_large: 'That is too long.',
  invalid_json: 'The request could not be read.',
  invalid_request: 'Something in the form is missing or wrong.',
  internal_error: 'The server had a problem. Try again in a moment; if it keeps happening, tell the operator.',
}

// describe says what went wrong; context names who is asking ('faucet' or
// 'console') where the same code means different things.
export function describe(err, context) {
  if (!(err && 'status' in err)) {
    if (err?.name === 'AbortError') return 'The server took too long to answer. Try again.'
    return 'The server could not be reached. Check your connection and try again.'
  }
  if (err.code === 'unauthorized') {
    if (context === 'console') return 'This API key is not valid (or was revoked). Check it and sign in again.'
    return checks[err.details?.check] || 'You are not signed in. Sign in again.'
  }
  const m = messages[err.code]
  const said = typeof m === 'function' ? m(err) : m
  if (!said) return err.message || `The request failed (HTTP ${err.status}).`
  if (err.message && precise.has(err.code)) return `${said} (${err.message})`
  return said
}

// Codes whose API message names the exact value or limit: shown after ours.
const precise = new Set(['invoice_amount_mismatch', 'wrong_network', 'mint_not_accepted', 'token_too_large',
  'amount_out_of_range', 'deposit_refused', 'invoice_not_payable', 'forbidden', 'invalid_pubkey', 'invalid_word',
  'invalid_expires_at', 'invalid_request', 'invalid_json', 'request_too_large', 'lightning_address_unreachable',
  'amount_not_accepted', 'invalid_lightning_address', 'account_too_new', 'nutzap_mint_not_accepted', 'not_in_web_of_trust'])
