package mintdir

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Views: every GET of a mint's core record is a view. Counting must be cheap
// on the request path, so views gather in memory and are written in batches
// (every 10 s and at shutdown). A session is a salted hash of client IP and
// User-Agent; the salt is random, changes every day and is never stored, so
// raw IPs never reach the disk and hashes can't be linked across days.
type viewCounter struct {
	now func() time.Time

	mu      sync.Mutex
	salt    [32]byte
	saltDay int64
	pending map[ID]*pendingViews
}

type sessionHash [8]byte

type pendingViews struct {
	hours    map[int64]uint64 // unix hour → views
	days     map[int64]uint64 // unix day → views
	sessions map[int64]map[sessionHash]bool
}

func newViewCounter(now func() time.Time) *viewCounter {
	return &viewCounter{now: now, pending: map[ID]*pendingViews{}}
}

func unixHour(t time.Time) int64 { return t.Unix() / 3600 }
func unixDay(t time.Time) int64  { return t.Unix() / 86400 }

// CountView counts one view of the mint m by the client (ip, userAgent).
func (d *Directory) CountView(m *Mint, ip, userAgent string) {
	v := d.views
	now := v.now()
	day := unixDay(now)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.saltDay != day {
		rand.Read(v.salt[:])
		v.saltDay = day
	}
	h := sha256.New()
	h.Write(v.salt[:])
	h.Write([]byte(ip))
	h.Write([]byte{0})
	h.Write([]byte(userAgent))
	var s sessionHash
	copy(s[:], h.Sum(nil))
	p := v.pending[m.ID]
	if p == nil {
		p = &pendingViews{hours: map[int64]uint64{}, days: map[int64]uint64{}, sessions: map[int64]map[sessionHash]bool{}}
		v.pending[m.ID] = p
	}
	p.hours[unixHour(now)]++
	p.days[day]++
	if p.sessions[day] == nil {
		p.sessions[day] = map[sessionHash]bool{}
	}
	p.sessions[day][s] = true
}

type viewDay struct {
	Views    uint64 `json:"views"`
	Sessions uint64 `json:"sessions"`
}

func viewHourKey(id ID, hour int64) []byte { return key(kViewHour, id[:], kv.U64(uint64(hour))) }
func viewDayKey(id ID, day int64) []byte   { return key(kViewDay, id[:], kv.U64(uint64(day))) }
func sessionKey(id ID, day int64, s sessionHash) []byte {
	return key(kSession, id[:], kv.U64(uint64(day)), s[:])
}

// FlushViews writes the views gathered in memory.
func (d *Directory) FlushViews(ctx context.Context) error {
	v := d.views
	v.mu.Lock()
	pending := v.pending
	v.pending = map[ID]*pendingViews{}
	v.mu.Unlock()
	var errs []error
	for id, p := range pending {
		errs = append(errs, d.db.Update(func(txn *kv.Txn) error { return flushMintViews(txn, id, p) }))
	}
	return errors.Join(errs...)
}

func flushMintViews(txn *kv.Txn, id ID, p *pendingViews) error {
	for hour, n := range p.hours {
		k := viewHourKey(id, hour)
		cur, err := getUvarint(txn, k)
		if err != nil {
			return err
		}
		if err := txn.Set(k, binary.AppendUvarint(nil, cur+n)); err != nil {
			return err
		}
	}
	days := map[int64]*viewDay{}
	dayOf := func(day int64) (*viewDay, error) {
		if vd, ok := days[day]; ok {
			return vd, nil
		}
		vd := &viewDay{}
		_, err := kv.GetJSON(txn, viewDayKey(id, day), vd)
		days[day] = vd
		return vd, err
	}
	for day, n := range p.days {
		vd, err := dayOf(day)
		if err != nil {
			return err
		}
		vd.Views += n
	}
	for day, hashes := range p.sessions {
		vd, err := dayOf(day)
		if err != nil {
			return err
		}
		for s := range hashes {
			k := sessionKey(id, day, s)
			if _, err := txn.Get(k); err == nil {
				continue
			} else if !errors.Is(err, kv.ErrNotFound) {
				return err
			}
			if err := txn.Set(k, nil); err != nil {
				return err
			}
			vd.Sessions++
		}
	}
	for day, vd := range days {
		if err := kv.PutJSON(txn, viewDayKey(id, day), vd); err != nil {
			return err
		}
	}
	return nil
}

func getUvarint(txn *kv.Txn, k []byte) (uint64, error) {
	item, err := txn.Get(k)
	if errors.Is(err, kv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n uint64
	err = item.Value(func(b []byte) error { n, _ = binary.Uvarint(b); return nil })
	return n, err
}

// Views are a mint's view counts.
type Views struct {
	Views24h, Views7d, Views30d int64
	UniqueSessions30d           int64
	Velocity                    float64 // views in the last 24 h ÷ the daily average of the last 7 days
}

// Views counts a mint's views: what is stored plus what is still in memory.
func (d *Directory) Views(ctx context.Context, m *Mint) (Views, error) {
	id := m.ID
	now := d.now()
	hour, day := unixHour(now), unixDay(now)
	var out Views
	d.views.mu.Lock()
	var p pendingViews
	if cur := d.views.pending[id]; cur != nil {
		p = pendingViews{hours: map[int64]uint64{}, days: map[int64]uint64{}, sessions: map[int64]map[sessionHash]bool{}}
		for h, n := range cur.hours {
			p.hours[h] = n
		}
		for dd, n := range cur.days {
			p.days[dd] = n
		}
		for dd, s := range cur.sessions {
			p.sessions[dd] = map[sessionHash]bool{}
			for h := range s {
				p.sessions[dd][h] = true
			}
		}
	}
	d.views.mu.Unlock()
	err := d.db.View(func(txn *kv.Txn) error {
		for h := hour - 23; h <= hour; h++ {
			n, err := getUvarint(txn, viewHourKey(id, h))
			if err != nil {
				return err
			}
			out.Views24h += int64(n + p.hours[h])
		}
		for dd := day - 29; dd <= day; dd++ {
			var vd viewDay
			if _, err := kv.GetJSON(txn, viewDayKey(id, dd), &vd); err != nil {
				return err
			}
			views := int64(vd.Views + p.days[dd])
			out.Views30d += views
			if dd > day-7 {
				out.Views7d += views
			}
			out.UniqueSessions30d += int64(vd.Sessions)
			for s := range p.sessions[dd] {
				if _, err := txn.Get(sessionKey(id, dd, s)); errors.Is(err, kv.ErrNotFound) {
					out.UniqueSessions30d++
				}
			}
		}
		return nil
	})
	if out.Views7d > 0 {
		out.Velocity = math.Round(float64(out.Views24h)/(float64(out.Views7d)/7)*100) / 100
	}
	return out, err
}
