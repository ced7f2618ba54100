package banlist

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

// Reports are kind-1984 events (NIP-56) and nothing else: a report made over
// REST is signed by the service key and published to the relay, and a report
// published to the relay by a user is read back from the same store.

// KindReport is the NIP-56 report kind.
const KindReport = 1984

// ReportTypes are the NIP-56 report types.
var ReportTypes = []string{"nudity", "malware", "profanity", "illegal", "spam", "impersonation", "other"}

// Limits of a REST report.
const (
	MaxCommentLen          = 2000
	MaxReportedEvents      = 50
	reasonTag              = "reason" // a free-text reason that is not a NIP-56 type
	sourceAPI, sourceNostr = "api", "nostr"
)

// NewReport is a report submitted over REST.
type NewReport struct {
	ReportedPubKey string // hex
	Reason         string
	EventIDs       []string
	Comment        string
}

// Report is a report read back from its event.
type Report struct {
	ID             string
	ReportedPubKey string // hex
	Type           string // NIP-56 type (ReportTypes)
	RawType        string // the type as the event wrote it; "" when it wrote none
	Reason         string
	EventIDs       []string
	Comment        string
	CreatedAt      int64
	Source         string // "api" or "nostr"
	Reporter       string // hex; empty for API reports, whose reporters stay anonymous
}

// reportType is the NIP-56 type a reason or an event's type names (case
// folded), or "other".
func reportType(reason string) string {
	r := strings.ToLower(strings.TrimSpace(reason))
	if slices.Contains(ReportTypes, r) {
		return r
	}
	return "other"
}

// SubmitReport stores a report as a kind-1984 event signed by the service key.
func (s *Service) SubmitReport(ctx context.Context, r NewReport) (Report, error) {
	if err := validReason(r.Reason); err != nil {
		return Report{}, err
	}
	if len([]rune(r.Comment)) > MaxCommentLen {
		return Report{}, outpost.Errorf(outpost.Invalid, "invalid_request", "comment is longer than %d characters", MaxCommentLen)
	}
	if len(r.EventIDs) > MaxReportedEvents {
		return Report{}, outpost.Errorf(outpost.Invalid, "invalid_request", "at most %d event_ids", MaxReportedEvents)
	}
	typ := reportType(r.Reason)
	tags := nostr.Tags{{"p", r.ReportedPubKey, typ}}
	for _, id := range r.EventIDs {
		id = strings.ToLower(id)
		if len(id) != 64 || !isHex(id) {
			return Report{}, outpost.Errorf(outpost.Invalid, "invalid_event_id", "event_ids must be 64 hex characters each").With("event_id", id)
		}
		tags = append(tags, nostr.Tag{"e", id, typ})
	}
	if !strings.EqualFold(strings.TrimSpace(r.Reason), typ) {
		tags = append(tags, nostr.Tag{reasonTag, r.Reason})
	}
	// Every report is kept, even one identical to another in the same second:
	// a NIP-13 nonce tag (target 0) gives each its own event id.
	var nonce [8]byte
	rand.Read(nonce[:])
	tags = append(tags, nostr.Tag{"nonce", hex.EncodeToString(nonce[:]), "0"})
	ev := nostr.Event{Kind: KindReport, CreatedAt: nostr.Timestamp(s.now().Unix()), Tags: tags, Content: r.Comment}
	if err := ev.Sign(s.secretKey); err != nil {
		return Report{}, err
	}
	if err := s.publish(ctx, &ev); err != nil {
		return Report{}, err
	}
	rep, _ := ParseReport(&ev, s.pubKey)
	return rep, nil
}

// Reports lists reports newest first, created at or before until (0: now).
func (s *Service) Reports(ctx context.Context, until int64, limit int) ([]Report, error) {
	f := nostr.Filter{Kinds: []int{KindReport}, Limit: limit}
	if until > 0 {
		t := nostr.Timestamp(until)
		f.Until = &t
	}
	out := []Report{}
	for ev, err := range s.events.Find(ctx, f) {
		if err != nil {
			return nil, err
		}
		if r, ok := ParseReport(ev, s.pubKey); ok {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Report) int { return cmp.Compare(b.CreatedAt, a.CreatedAt) })
	return out, nil
}

// ParseReport reads a kind-1984 event; ok is false when it names no valid
// reported key. servicePK marks the reports the service made over REST.
func ParseReport(ev *nostr.Event, servicePK string) (r Report, ok bool) {
	if ev.Kind != KindReport {
		return Report{}, false
	}
	r = Report{ID: ev.ID, CreatedAt: int64(ev.CreatedAt), Comment: ev.Content, EventIDs: []string{}, Source: sourceNostr, Reporter: ev.PubKey}
	if ev.PubKey == servicePK {
		r.Source, r.Reporter = sourceAPI, ""
	}
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "p":
			if r.ReportedPubKey == "" {
				if pk, err := pubkey.Parse(t[1]); err == nil {
					r.ReportedPubKey = pk
					if len(t) > 2 {
						r.RawType = t[2]
					}
				}
			}
		case "e":
			r.EventIDs = append(r.EventIDs, t[1])
			if r.RawType == "" && len(t) > 2 {
				r.RawType = t[2]
			}
		case reasonTag:
			r.Reason = t[1]
		}
	}
	if r.ReportedPubKey == "" {
		return Report{}, false
	}
	// Anyone can publish a report with any type; the list answers with
	// the NIP-56 enum and keeps what was written beside it.
	r.Type = reportType(r.RawType)
	if r.Reason == "" {
		r.Reason = cmp.Or(r.RawType, r.Type)
	}
	return r, true
}

// RejectInvalidReports is a relay policy: a kind-1984 event must name the
// reported key in a valid p tag, or it could never be shown as a report.
func RejectInvalidReports(_ context.Context, ev *nostr.Event) (bool, string) {
	if ev.Kind != KindReport {
		return false, ""
	}
	if _, ok := ParseReport(ev, ""); !ok {
		return true, "invalid: a report (kind 1984) needs a p tag with the reported public key"
	}
	return false, ""
}
