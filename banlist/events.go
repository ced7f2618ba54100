package banlist

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Event moderation (NIP-86): a banned event is hidden, never deleted — the
// relay serves it to no one and refuses it if it is sent again, until the
// ban is lifted. An allowed event is one a moderator looked at and kept: it
// leaves the queue of reported events.

// BannedEvent is an event hidden by a moderator.
type BannedEvent struct {
	ID       string `json:"id"`
	Reason   string `json:"reason"`
	BannedAt int64  `json:"banned_at"`
	BannedBy string `json:"banned_by"`
}

// AllowedEvent is an event a moderator reviewed and kept.
type AllowedEvent struct {
	ID        string `json:"id"`
	Reason    string `json:"reason"`
	AllowedAt int64  `json:"allowed_at"`
	AllowedBy string `json:"allowed_by"`
}

func bannedEventKey(id string) []byte {
	raw, _ := hex.DecodeString(id)
	return kv.Key(kv.PrefixBanlist, kindBannedEvent, raw)
}

func allowedEventKey(id string) []byte {
	raw, _ := hex.DecodeString(id)
	return kv.Key(kv.PrefixBanlist, kindAllowedEvent, raw)
}

// ParseEventID reads an event id: 64 hex characters, any case.
func ParseEventID(id string) (string, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if len(id) != 64 || !isHex(id) {
		return "", outpost.Errorf(outpost.Invalid, "invalid_event_id", "an event id is 64 hex characters").With("field", "event_id")
	}
	return id, nil
}

// BanEvent hides event id from every reader and refuses it from now on; it
// also leaves the allow list of events.
func (s *Service) BanEvent(ctx context.Context, actor, id, reason string) (BannedEvent, error) {
	id, err := ParseEventID(id)
	if err != nil {
		return BannedEvent{}, err
	}
	if err := validNote(reason); err != nil {
		return BannedEvent{}, err
	}
	e := BannedEvent{ID: id, Reason: reason, BannedAt: s.now().Unix(), BannedBy: actor}
	err = s.update(func(txn *kv.Txn) error {
		if _, _, err := removeRecord[AllowedEvent](s, txn, actor, "event.unallow", id, allowedEventKey(id), nil); err != nil {
			return err
		}
		_, err := setRecord(s, txn, actor, "event.ban", id, bannedEventKey(id), e)
		return err
	}, func() { s.list.BanEvent(id) })
	return e, err
}

// UnbanEvent lifts an event's ban: it is served again.
func (s *Service) UnbanEvent(ctx context.Context, actor, id string) (BannedEvent, error) {
	id, err := ParseEventID(id)
	if err != nil {
		return BannedEvent{}, err
	}
	var e BannedEvent
	err = s.update(func(txn *kv.Txn) (err error) {
		e, _, err = removeRecord[BannedEvent](s, txn, actor, "event.unban", id, bannedEventKey(id),
			outpost.Errorf(outpost.NotFound, "event_not_banned", "event %s is not banned", id))
		return err
	}, func() { s.list.AllowEvent(id) })
	return e, err
}

// AllowEvent marks event id as reviewed and kept: its ban, if any, is
// lifted, and it leaves the queue of reported events.
func (s *Service) AllowEvent(ctx context.Context, actor, id, reason string) (AllowedEvent, error) {
	id, err := ParseEventID(id)
	if err != nil {
		return AllowedEvent{}, err
	}
	if err := validNote(reason); err != nil {
		return AllowedEvent{}, err
	}
	e := AllowedEvent{ID: id, Reason: reason, AllowedAt: s.now().Unix(), AllowedBy: actor}
	err = s.update(func(txn *kv.Txn) error {
		if _, _, err := removeRecord[BannedEvent](s, txn, actor, "event.unban", id, bannedEventKey(id), nil); err != nil {
			return err
		}
		_, err := setRecord(s, txn, actor, "event.allow", id, allowedEventKey(id), e)
		return err
	}, func() { s.list.AllowEvent(id) })
	return e, err
}

// UnallowEvent takes event id off the allow list of events: if it was
// reported, it is in the queue again.
func (s *Service) UnallowEvent(ctx context.Context, actor, id string) (AllowedEvent, error) {
	id, err := ParseEventID(id)
	if err != nil {
		return AllowedEvent{}, err
	}
	var e AllowedEvent
	err = s.update(func(txn *kv.Txn) (err error) {
		e, _, err = removeRecord[AllowedEvent](s, txn, actor, "event.unallow", id, allowedEventKey(id),
			outpost.Errorf(outpost.NotFound, "event_not_allowed", "event %s is not on the allow list", id))
		return err
	}, func() {})
	return e, err
}

// BannedEvents lists the banned events.
func (s *Service) BannedEvents(ctx context.Context) ([]BannedEvent, error) {
	return listRecords[BannedEvent](ctx, s.db, kindBannedEvent)
}

// AllowedEvents lists the events moderators kept.
func (s *Service) AllowedEvents(ctx context.Context) ([]AllowedEvent, error) {
	return listRecords[AllowedEvent](ctx, s.db, kindAllowedEvent)
}

// ReportedEvent is an event named by reports (kind 1984, made over REST or
// published to the relay) that no moderator has banned or allowed yet.
type ReportedEvent struct {
	ID             string   `json:"id"`
	Reasons        []string `json:"reasons"` // distinct, sorted
	Reports        int      `json:"reports"`
	LastReportedAt int64    `json:"last_reported_at"`
}

// maxQueueReports bounds how many recent reports the queue is built from.
const maxQueueReports = 5000

// EventsNeedingModeration lists the reported events awaiting a moderator,
// most recently reported first.
func (s *Service) EventsNeedingModeration(ctx context.Context) ([]ReportedEvent, error) {
	reports, err := s.Reports(ctx, 0, maxQueueReports)
	if err != nil {
		return nil, err
	}
	allowed, err := s.AllowedEvents(ctx)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for _, a := range allowed {
		done[a.ID] = true
	}
	out := []ReportedEvent{}
	index := map[string]int{}
	for _, r := range reports {
		for _, id := range r.EventIDs {
			if done[id] || s.list.EventBanned(id) {
				continue
			}
			i, seen := index[id]
			if !seen {
				i = len(out)
				index[id] = i
				out = append(out, ReportedEvent{ID: id, Reasons: []string{}, LastReportedAt: r.CreatedAt})
			}
			e := &out[i]
			e.Reports++
			if i, found := slices.BinarySearch(e.Reasons, r.Reason); !found {
				e.Reasons = slices.Insert(e.Reasons, i, r.Reason)
			}
		}
	}
	return out, nil
}
