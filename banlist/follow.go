package banlist

import (
	"cmp"
	"context"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/outbound"
	"github.com/outpost-relay/outpost/policies"
)

// followInterval is how often a follower asks its primary for changes: a
// ban made there is enforced here within seconds. An empty delta is cheap
// for both (banlist.md: GET /blocked/pubkeys?since=).
const followInterval = 2 * time.Second

// ValidFollow checks an OUTPOST_BANLIST_FOLLOW value: an http(s) URL
// without credentials, query or fragment.
func ValidFollow(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return outpost.Errorf(outpost.Invalid, "invalid_url", "want the http(s) URL of another outpost's ban list, like https://outpost.example/banlist")
	}
	return nil
}

// Following is the primary this ban list mirrors; "" when it is its own.
func (s *Service) Following() string { return s.primary }

// followActor names the mirror in the audit log.
func (s *Service) followActor() string { return "follow:" + s.primary }

// writable refuses a change to the mirrored lists (bans and words) by
// anyone but the mirror itself, when this ban list follows a primary: a
// change made here would be undone by the next full fetch, and would never
// reach the other nodes. The error names where to make it.
func (s *Service) writable(actor string) error {
	if s.primary == "" || actor == s.followActor() {
		return nil
	}
	return outpost.Errorf(outpost.Conflict, "read_only",
		"this ban list mirrors %s; change bans and blocked words there", s.primary).With("primary", s.primary)
}

// followTimeout bounds each request to the primary, its body included.
const followTimeout = 10 * time.Second

// Follow mirrors the primary's bans (temporary ones with their expiry) and
// blocked words into this ban list until ctx ends: the whole list first,
// then its changes every followInterval, each applied as a change of this
// service (stored, audited as "follow:<primary>", enforced at once). When
// another server answers at the primary's URL, its whole list replaces
// this one's. While the primary fails the polls back off, and Health says
// so. The primary is the operator's, so it is dialled without the SSRF
// guard.
func (s *Service) Follow(ctx context.Context) {
	if s.primary == "" {
		return
	}
	m := mirror{s, ctx}
	policies.Follow(ctx, s.primary, m, policies.SyncOptions{Interval: cmp.Or(s.followEvery, followInterval), Timeout: followTimeout,
		Client: outbound.Client(followTimeout), Log: s.log, Health: &s.following, Now: s.now})
	m.writePending(s.now(), true) // of a whole list cut short: kept, as a kill would not
	if s.restoreGC != nil {
		s.restoreGC()
		s.restoreGC = nil
	}
}

// mirror applies a primary's list to the service (policies.Mirror).
type mirror struct {
	s   *Service
	ctx context.Context
}

// mirroredReason is the reason of a primary's ban that gives none.
const mirroredReason = "banned on the primary"

func (m mirror) Ban(b policies.Ban) {
	q, ok := m.request(b)
	if !ok {
		return
	}
	if _, err := m.s.Ban(m.ctx, m.s.followActor(), q.PubKey, q.Reason, q.ExpiresAt); err != nil {
		m.s.log.Warn("ban list follow: a ban of the primary not mirrored", "pubkey", b.PubKey, "err", err)
	}
}

// request is the ban to make here of the primary's b; none when this list
// has it already, or it lapsed in transit.
func (m mirror) request(b policies.Ban) (BanRequest, bool) {
	now := m.s.now().Unix()
	reason := strings.TrimSpace(b.Reason)
	if reason == "" {
		reason = mirroredReason
	}
	if cur, ok := m.s.list.Banned(b.PubKey, now); ok && cur.Reason == reason && cur.ExpiresAt == b.ExpiresAt {
		return BanRequest{}, false // already so: no new record, no audit entry
	}
	if err := validReason(reason); err != nil { // one such would refuse its whole batch
		m.s.log.Warn("ban list follow: a ban of the primary not mirrored", "pubkey", b.PubKey, "err", err)
		return BanRequest{}, false
	}
	q := BanRequest{PubKey: b.PubKey, Reason: reason}
	if b.ExpiresAt != 0 {
		if b.ExpiresAt <= now {
			return q, false // lapsed in transit (or the clocks differ): nothing to enforce
		}
		q.ExpiresAt = &b.ExpiresAt
	}
	return q, true
}

func (m mirror) Unban(pk string) {
	if _, ok := m.s.list.Banned(pk, m.s.now().Unix()); !ok {
		return // not banned here, or lapsed here too
	}
	if _, err := m.s.Unban(m.ctx, m.s.followActor(), pk); err != nil {
		m.s.log.Warn("ban list follow: an unban of the primary not mirrored", "pubkey", pk, "err", err)
	}
}

// BeginBans starts taking a whole list of the primary's (a first sync, a
// new server): its pages are written as they come (PutBans), and the bans
// it does not name are lifted once it is all in (EndBans), so a key banned
// in both the old list and the new one is never allowed meanwhile.
func (m mirror) BeginBans() {
	if m.s.restoreGC == nil {
		m.s.restoreGC = followGC()
	}
	m.writePending(m.s.now(), true) // of a whole list that failed part-way: kept, as before the new one
	m.s.list.BeginBans()
	m.s.resyncFrom, m.s.resyncWhole, m.s.pagedBefore = m.s.newID(m.s.now()), true, m.s.paged.Load()
}

// followGCPercent is the collector's GOGC while a whole list is taken
// (unless GOGC is set in the environment), as the strfry plugin runs: what
// grows then is the set of keys, pointer-free chunks the collector does not
// scan, and each page's decoding is garbage. At the default of 100 the
// heap grew to twice what was live: at a million bans the first sync
// peaked at 115 MiB anonymous, at 25 at 76 MiB, at 10 at 65 MiB, for
// about 1.4 s more CPU than at 100 (4.9 s against 3.4 s).
const followGCPercent = 10

// gcTight counts the followGCs not yet put back, and what the collector
// was before the first: the setting is the process's, and its loads and
// syncs (several services in one test binary) may overlap.
var gcTight struct {
	sync.Mutex
	n, was int
}

// followGC sets the collector to followGCPercent until the returned func,
// which puts it back (once every followGC has been) and returns the
// garbage's memory to the system.
func followGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	gcTight.Lock()
	if gcTight.n++; gcTight.n == 1 {
		gcTight.was = debug.SetGCPercent(followGCPercent)
	}
	gcTight.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			gcTight.Lock()
			last := gcTight.n == 1
			if gcTight.n--; last {
				debug.SetGCPercent(gcTight.was)
			}
			gcTight.Unlock()
			if last {
				debug.FreeOSMemory()
			}
		})
	}
}

// PutBans writes a page of the whole list as pages of the store
// (mirrorpages.go), each with one audit entry if it changes anything,
// once it has a full page's worth (maxPage: a primary's pages are
// smaller); EndBans writes the rest, and so do the next BeginBans and the
// end of Follow when the list was cut short. Every key it names is marked
// first, so one held here stays banned even before its new terms are
// written; a key new to this list is enforced once its page is written
// (a page or two later), and a kill before that loses nothing held: the
// pages of the list before are deleted only once the new one is all in.
func (m mirror) PutBans(bans []policies.Ban) {
	named := make([]string, len(bans))
	for i, b := range bans {
		named[i] = b.PubKey
	}
	m.s.list.Keep(named)
	now := m.s.now()
	for _, b := range bans {
		if q, ok := m.pageBan(b, now.Unix()); ok {
			m.s.pending = append(m.s.pending, q)
		}
	}
	if len(m.s.pending) >= maxPage {
		m.writePending(now, false)
	}
}

// writePending writes the bans pending as pages of maxPage, the last one
// short only with all.
func (m mirror) writePending(now time.Time, all bool) {
	page := m.s.pending
	slices.SortFunc(page, func(a, b policies.Ban) int { return cmp.Compare(a.PubKey, b.PubKey) })
	lo, wrote := 0, false
	for ; lo < len(page) && (all || len(page)-lo >= maxPage); lo += maxPage {
		chunk := page[lo:min(lo+maxPage, len(page))]
		if !m.s.changesAny(chunk, now.Unix()) {
			// As held, and stored already (in a page or records): a
			// restart's resync writes nothing again, and keeps the
			// pages before it (see EndBans).
			m.s.resyncWhole = false
			continue
		}
		if err := m.s.putPage(m.s.followActor(), chunk, now); err != nil {
			m.s.log.Warn("ban list follow: a page of the primary's list not mirrored", "bans", len(chunk), "err", err)
		}
		wrote = true
	}
	if wrote {
		m.s.releasePages()
	}
	m.s.pending = append(page[:0], page[min(lo, len(page)):]...)
	if all {
		m.s.pending = nil
	}
}

// pageBan is b as a page keeps it: with a reason, and active; none when
// it lapsed in transit or its reason would be refused.
func (m mirror) pageBan(b policies.Ban, now int64) (policies.Ban, bool) {
	if b.Reason = strings.TrimSpace(b.Reason); b.Reason == "" {
		b.Reason = mirroredReason
	}
	if err := validReason(b.Reason); err != nil || len(b.PubKey) != 64 || !isHex(b.PubKey) {
		m.s.log.Warn("ban list follow: a ban of the primary not mirrored", "pubkey", b.PubKey, "err", err)
		return b, false
	}
	return b, b.ExpiresAt == 0 || b.ExpiresAt > now
}

// BanMany writes bans of the primary's, new and changed ones, in batches,
// each audited once: a page of its changes, or of its whole list.
func (m mirror) BanMany(bans []policies.Ban) {
	var batch []BanRequest
	for _, b := range bans {
		if q, ok := m.request(b); ok {
			batch = append(batch, q)
		}
	}
	for lo := 0; lo < len(batch); lo += MaxBatch {
		if _, err := m.s.BanMany(m.ctx, m.s.followActor(), batch[lo:min(lo+MaxBatch, len(batch))]); err != nil {
			m.s.log.Warn("ban list follow: bans of the primary not mirrored", "bans", len(batch), "err", err)
		}
	}
}

// EndBans lifts the bans the whole list did not name, then deletes the
// pages of the lists taken before it if it wrote all of its own: else
// they still hold bans of this one (a lifted key has a record over its
// page).
func (m mirror) EndBans() {
	m.writePending(m.s.now(), true)
	defer func() {
		if m.s.restoreGC != nil {
			m.s.restoreGC()
			m.s.restoreGC = nil
		}
	}()
	for _, pk := range m.s.list.EndResync() {
		m.Unban(pk)
	}
	from, whole := m.s.resyncFrom, m.s.resyncWhole
	if from != nil && !whole && m.s.pagesBloated() {
		from, whole = m.s.rewritePages(), true // rather than keep superseded pages for ever
		m.s.pagedBefore = 0
	}
	if from == nil || !whole {
		return
	}
	if err := m.s.dropPagesBefore(from); err != nil {
		m.s.log.Warn("ban list follow: the pages of an earlier list not deleted", "err", err)
		return
	}
	m.s.paged.Add(-m.s.pagedBefore)
}

func (m mirror) Words() []string { return m.s.list.Words() }

// SetWords makes the blocked words those given, by their normal form.
func (m mirror) SetWords(words []string) {
	want := make(map[string]string, len(words))
	for _, w := range words {
		want[policies.NormalizeText(w)] = w
	}
	have := map[string]bool{}
	for _, w := range m.s.list.Words() {
		n := policies.NormalizeText(w)
		have[n] = true
		if _, ok := want[n]; !ok {
			m.word(m.s.RemoveWord(m.ctx, m.s.followActor(), w))
		}
	}
	for n, w := range want {
		if !have[n] && n != "" {
			m.word(m.s.AddWord(m.ctx, m.s.followActor(), w))
		}
	}
}

func (m mirror) word(_ Word, err error) {
	if err != nil {
		m.s.log.Warn("ban list follow: a blocked word of the primary not mirrored", "err", err)
	}
}
