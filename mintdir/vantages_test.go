package mintdir

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/mintdirtest"
)

func TestConsensus(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := at.Add(-d); return &t }
	on, deg, unk := Observation{Status: StatusOnline}, Observation{Status: StatusDegraded}, Observation{Status: StatusUnknown}
	off := func(d time.Duration) Observation { return Observation{Status: StatusOffline, OfflineSince: ago(d)} }
	for _, tt := range []struct {
		name          string
		votes         []Observation
		want          string
		since         *time.Time
		agree, voting int
	}{
		{"alone online", []Observation{on}, StatusOnline, nil, 1, 1},
		{"alone offline", []Observation{off(time.Hour)}, StatusOffline, ago(time.Hour), 1, 1},
		{"alone unknown", []Observation{unk}, StatusUnknown, nil, 0, 0},
		{"alone degraded", []Observation{deg}, StatusDegraded, nil, 1, 1},
		{"a dissenting minority", []Observation{off(time.Hour), on, on}, StatusOnline, nil, 2, 3},
		{"a tie is no majority", []Observation{off(time.Hour), on}, StatusOnline, nil, 1, 2},
		{"a majority offline, since the second saw it", []Observation{on, off(time.Hour), off(3 * time.Hour)}, StatusOffline, ago(time.Hour), 2, 3},
		{"unknown does not vote", []Observation{unk, off(time.Minute), unk}, StatusOffline, ago(time.Minute), 1, 1},
		{"most up ones degraded", []Observation{deg, deg, on, off(time.Hour)}, StatusDegraded, nil, 2, 4},
		{"half degraded is online", []Observation{deg, on}, StatusOnline, nil, 1, 2},
		{"offline 30 days by consensus", []Observation{off(31 * 24 * time.Hour), {Status: StatusAbandoned, OfflineSince: ago(40 * 24 * time.Hour)}, on}, StatusAbandoned, ago(31 * 24 * time.Hour), 2, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, c := consensus(tt.votes, at)
			if got.Status != tt.want || c.Agreeing != tt.agree || c.Voting != tt.voting {
				t.Fatalf("got %s %d/%d, want %s %d/%d", got.Status, c.Agreeing, c.Voting, tt.want, tt.agree, tt.voting)
			}
			if (got.OfflineSince == nil) != (tt.since == nil) || (tt.since != nil && !got.OfflineSince.Equal(*tt.since)) {
				t.Fatalf("offline since %v, want %v", got.OfflineSince, tt.since)
			}
		})
	}
}

// monitor is another monitor: it signs kind-38166 events as outpost does.
type monitor struct {
	sk, pk string
}

func newMonitor() monitor {
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	return monitor{sk, pk}
}

// status is the monitor's status event for the mint at u, as of at.
func (mo monitor) status(t *testing.T, u, status string, at time.Time, extra ...nostr.Tag) *nostr.Event {
	return mintdirtest.StatusEvent(mo.sk, u, status, at, extra...)
}

func vantageOf(vs []Vantage, pk string) *Vantage {
	for i := range vs {
		if vs[i].Monitor == pk {
			return &vs[i]
		}
	}
	return nil
}

// TestFollowedMonitors: two followed monitors' status events, stored and
// taken through the relay's hook, are vantages; the mint's status is their
// consensus with this outpost's own checks, a minority is listed but
// changes nothing, stale vantages drop out, an unfollowed monitor counts
// for nothing, and an incident records who saw it.
func TestFollowedMonitors(t *testing.T) {
	t.Parallel()
	self, a, b, stranger := newMonitor(), newMonitor(), newMonitor(), newMonitor()
	e := newEnv(t, Config{Self: self.pk, Settings: Settings{ProbeInterval: time.Minute,
		Monitors: []string{a.pk, b.pk, self.pk}}}) // its own key among them, as on every node of a group
	f := newFakeMint(t, "Watched", pk1)
	id := e.submit(f.URL)
	m := e.probe(id)
	if m.Status != StatusOnline || m.Agreement() != (Consensus{1, 1}) {
		t.Fatalf("alone: %s %+v", m.Status, m.Agreement())
	}

	// A dissenting minority: a sees it offline, b online.
	e.clock.Add(time.Minute)
	e.save(a.status(t, f.URL, StatusOffline, e.clock.Now()))
	e.save(b.status(t, f.URL+"/", StatusOnline, e.clock.Now())) // another spelling of the same URL
	m = e.mint(id)
	if m.Status != StatusOnline || m.Agreement() != (Consensus{2, 3}) {
		t.Fatalf("minority offline: %s %+v", m.Status, m.Agreement())
	}
	vs, err := e.dir.Vantages(e.ctx, m)
	if err != nil || len(vs) != 3 || !vs[0].Self || vs[0].Monitor != self.pk || vs[0].Status != StatusOnline || vs[0].RTTMs == nil {
		t.Fatalf("vantages: %+v %v", vs, err)
	}
	if v := vantageOf(vs, a.pk); v == nil || v.Status != StatusOffline || v.OfflineSince == nil || v.LastCheckedAt == nil || v.RTTMs != nil {
		t.Fatalf("a's vantage: %+v", v)
	}
	if v := vantageOf(vs, b.pk); v == nil || v.Status != StatusOnline || v.RTTMs == nil || *v.RTTMs != 120 {
		t.Fatalf("b's vantage: %+v", v)
	}

	// A monitor not followed says offline: nothing changes.
	e.save(stranger.status(t, f.URL, StatusOffline, e.clock.Now()))
	// Our own status events, in the store like any, are not another vantage.
	e.save(self.status(t, f.URL, StatusOffline, e.clock.Now()))
	if m = e.mint(id); m.Status != StatusOnline {
		t.Fatalf("an unfollowed monitor moved the status: %s", m.Status)
	}
	if vs, _ = e.dir.Vantages(e.ctx, m); len(vs) != 3 || vantageOf(vs, stranger.pk) != nil || vantageOf(vs[1:], self.pk) != nil {
		t.Fatalf("vantages with a stranger's and our own events: %+v", vs)
	}

	// b now sees it offline too: a majority. An incident opens, seen by both.
	e.clock.Add(time.Minute)
	e.save(b.status(t, f.URL, StatusOffline, e.clock.Now()))
	m = e.mint(id)
	if m.Status != StatusOffline || m.OfflineSince == nil || m.Own().Status != StatusOnline || m.Agreement() != (Consensus{2, 3}) {
		t.Fatalf("majority offline: %s since %v own %s %+v", m.Status, m.OfflineSince, m.Own().Status, m.Agreement())
	}
	incs, _ := e.dir.Incidents(e.ctx, m, time.Time{}, 10)
	if len(incs) != 1 || incs[0].ResolvedAt != nil || !slices.Equal(incs[0].SeenBy, []string{a.pk, b.pk}) || !incs[0].StartedAt.Equal(*m.OfflineSince) {
		t.Fatalf("incident: %+v", incs)
	}
	if !m.Summary.Trust.Breakdown.Penalties.Offline {
		t.Fatalf("trust does not count the consensus: %+v", m.Summary.Trust.Breakdown.Penalties)
	}
	// Our own checks keep finding it up: still offline by consensus.
	e.clock.Add(time.Minute)
	if m = e.probe(id); m.Status != StatusOffline {
		t.Fatalf("own check against the majority: %s", m.Status)
	}
	// Our checks fail too: we join the incident's witnesses.
	f.Misbehave(mintdirtest.Fail(503))
	for range 3 {
		e.clock.Add(time.Minute)
		m = e.probe(id)
	}
	incs, _ = e.dir.Incidents(e.ctx, m, time.Time{}, 10)
	if m.Own().Status != StatusOffline || m.Agreement() != (Consensus{3, 3}) || !slices.Equal(incs[0].SeenBy, []string{a.pk, b.pk, self.pk}) {
		t.Fatalf("all three offline: own %s %+v seen by %v", m.Own().Status, m.Agreement(), incs[0].SeenBy)
	}

	// The mint returns for us; a and b go quiet. Their events go stale and
	// drop out: our checks alone decide, and the incident closes.
	f.Misbehave(nil)
	e.clock.Add(VantageMaxAge)
	m = e.probe(id)
	if m.Status != StatusOnline || m.Agreement() != (Consensus{1, 1}) {
		t.Fatalf("stale vantages: %s %+v", m.Status, m.Agreement())
	}
	if vs, _ = e.dir.Vantages(e.ctx, m); len(vs) != 1 {
		t.Fatalf("stale vantages listed: %+v", vs)
	}
	incs, _ = e.dir.Incidents(e.ctx, m, time.Time{}, 10)
	if incs[0].ResolvedAt == nil || !incs[0].ResolvedAt.Equal(e.clock.Now()) {
		t.Fatalf("incident not closed: %+v", incs[0])
	}
	// A late event older than the freshness window changes nothing either.
	e.save(a.status(t, strings.ToUpper(f.URL), StatusOffline, e.clock.Now().Add(-VantageMaxAge-time.Minute)))
	if vs, _ = e.dir.Vantages(e.ctx, m); len(vs) != 1 {
		t.Fatalf("a stale event became a vantage: %+v", vs)
	}
}

// TestHostileMonitor: a followed monitor that publishes nonsense is bounded:
// future times, mints the directory does not know, malformed tags, an
// older event than the one kept, more mints than its cap, and a flood.
func TestHostileMonitor(t *testing.T) {
	defer func(cap, rate int) { maxVantagesPerMonitor, vantageEventsPerHour = cap, rate }(maxVantagesPerMonitor, vantageEventsPerHour)
	maxVantagesPerMonitor, vantageEventsPerHour = 2, 20
	bad := newMonitor()
	e := newEnv(t, Config{Settings: Settings{ProbeInterval: time.Minute, Monitors: []string{bad.pk}}})
	var urls []string
	var ids []string
	for i := range 3 {
		f := newFakeMint(t, "M"+strconv.Itoa(i), []string{pk1, pk2, "03c9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba4"}[i])
		urls, ids = append(urls, f.URL), append(ids, e.submit(f.URL))
		e.probe(ids[i])
	}
	now := e.clock.Now()
	vantages := func(id string) []Vantage {
		t.Helper()
		vs, err := e.dir.Vantages(e.ctx, e.mint(id))
		if err != nil {
			t.Fatal(err)
		}
		return vs[1:]
	}

	// From the future (beyond the skew): ignored. Within it: taken.
	// (Each event names the mint a little differently: the store keeps one
	// event per address, the newest, as the relay does.)
	e.save(bad.status(t, urls[0]+"/", StatusOffline, now.Add(10*time.Minute)))
	if vs := vantages(ids[0]); len(vs) != 0 {
		t.Fatalf("a future event was taken: %+v", vs)
	}
	e.save(bad.status(t, urls[0], StatusOnline, now.Add(time.Minute), nostr.Tag{"last_check", "99999999999"}))
	if vs := vantages(ids[0]); len(vs) != 1 || vs[0].Status != StatusOnline {
		t.Fatalf("an event within the skew: %+v", vs)
	}
	// An older event than the one kept: newest wins.
	e.save(bad.status(t, strings.ToUpper(urls[0]), StatusOffline, now.Add(-time.Minute)))
	if vs := vantages(ids[0]); vs[0].Status != StatusOnline {
		t.Fatalf("an older event replaced a newer one: %+v", vs)
	}

	// A mint the directory does not know: not added, not kept.
	before, _ := e.dir.Count()
	e.save(bad.status(t, "https://unknown-mint.example", StatusOnline, now))
	e.save(bad.status(t, "not a url", StatusOnline, now))
	if n, _ := e.dir.Count(); n != before {
		t.Fatalf("a monitor added a mint: %d → %d", before, n)
	}

	// Malformed events and tags: no panic; what cannot be read is ignored.
	for i, tags := range []nostr.Tags{
		{{"d", urls[1]}}, // no status
		{{"d", urls[1]}, {"status", "online"}, {"status", "offline"}}, // two
		{{"d", urls[1]}, {"status", "splendid"}},                      // not a status
		{{"d", urls[1]}, {"status"}, {"rtt"}, {}, {"d"}},              // short tags
	} {
		e.save(signed(t, bad.sk, KindMintStatus, now.Add(time.Duration(i)*time.Second), "", tags...))
	}
	if vs := vantages(ids[1]); len(vs) != 0 {
		t.Fatalf("a malformed event was taken: %+v", vs)
	}
	e.save(signed(t, bad.sk, KindMintStatus, now.Add(5*time.Second), "", nostr.Tag{"d", urls[1]}, nostr.Tag{"status", "offline"},
		nostr.Tag{"rtt", "-5"}, nostr.Tag{"offline_since", "soon"}, nostr.Tag{"last_check", "x"}))
	if vs := vantages(ids[1]); len(vs) != 1 || vs[0].Status != StatusOffline || vs[0].RTTMs != nil || vs[0].OfflineSince != nil || vs[0].LastCheckedAt != nil {
		t.Fatalf("malformed optional tags: %+v", vs)
	}

	// Its cap: two mints have its vantage, the third gets none.
	e.save(bad.status(t, urls[2], StatusOffline, now))
	if vs := vantages(ids[2]); len(vs) != 0 {
		t.Fatalf("over the cap: %+v", vs)
	}

	// A flood: at most its hourly rate is processed.
	for i := range 40 {
		e.save(bad.status(t, urls[1], StatusOnline, now.Add(time.Duration(10+i)*time.Second)))
	}
	vs := vantages(ids[1])
	if len(vs) != 1 || vs[0].Status != StatusOnline || !vs[0].EventAt.Before(now.Add(49*time.Second)) {
		t.Fatalf("the flood was processed whole: %+v", vs)
	}
}

func FuzzParseStatusEvent(f *testing.F) {
	f.Add("https://mint.example", "online", "120", "1700000000", "")
	f.Add("http://127.0.0.1:3338/", "offline", "x", "-1", "99999999999")
	f.Add("", "abandoned", "", "", "1")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, d, status, rtt, lastCheck, offlineSince string) {
		ev := &nostr.Event{Kind: KindMintStatus, CreatedAt: nostr.Timestamp(now.Unix()), PubKey: pk1[2:],
			Tags: nostr.Tags{{"d", d}, {"status", status}, {"rtt", rtt}, {"last_check", lastCheck}, {"offline_since", offlineSince}, {status}}}
		u, v, err := parseStatusEvent(ev, now)
		if err != nil {
			return
		}
		if u == "" || !slices.Contains(Statuses, v.Status) || (v.RTTMs != nil && (*v.RTTMs < 0 || *v.RTTMs > maxRTTMs)) {
			t.Fatalf("accepted %q %+v", u, v)
		}
		for _, tm := range []*time.Time{v.LastCheckedAt, v.OfflineSince} {
			if tm != nil && tm.After(now.Add(vantageSkew)) {
				t.Fatalf("a time in the future: %v", tm)
			}
		}
	})
}
