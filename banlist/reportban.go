package banlist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// ReportBanSettings turn reports by members of the web of trust into
// temporary bans. Off by default: a ban nobody decided on is the operator's
// choice to make.
type ReportBanSettings struct {
	MinReporters int           `flag:"wot-report-ban-min" usage:"ban a key for --wot-report-ban-for once this many distinct members of the web of trust reported it (kind 1984) within --wot-report-ban-window; reports by others never count, and seeds and admins are never banned so; 0: never"`
	For          time.Duration `flag:"wot-report-ban-for" usage:"how long a ban made by members' reports lasts"`
	Window       time.Duration `flag:"wot-report-ban-window" usage:"how far back members' reports count towards a ban (never further back than the key's last ban or its lifting)"`
}

// DefaultReportBanSettings: off; when on, a day's ban for what members
// reported in the last week.
func DefaultReportBanSettings() ReportBanSettings {
	return ReportBanSettings{For: 24 * time.Hour, Window: 7 * 24 * time.Hour}
}

// Valid checks the settings, naming a bad one.
func (s *ReportBanSettings) Valid() error {
	var errs []error
	if s.MinReporters < 0 {
		errs = append(errs, settings.Errorf("wot-report-ban-min", "must be 0 (off) or more"))
	}
	if s.For <= 0 {
		errs = append(errs, settings.Errorf("wot-report-ban-for", "must be positive"))
	}
	if s.Window <= 0 {
		errs = append(errs, settings.Errorf("wot-report-ban-window", "must be positive"))
	}
	return errors.Join(errs...)
}

// ReportBanActor is the actor of the bans and audit entries ReportBan makes.
const ReportBanActor = "wot-reports"

// maxReportsCounted bounds the reports against one key read per report.
const maxReportsCounted = 5_000

// ReportBan bans a key for a while once enough distinct members of the web
// of trust reported it. Its OnReport is a relay OnEventSaved hook.
type ReportBan struct {
	ReportBanSettings
	Service   *Service
	Member    func(pk string) bool // a member of the web of trust (hex key)
	Protected func(pk string) bool // never banned so: the seeds, the admins
	Log       *slog.Logger
}

// OnReport counts a report (kind 1984) saved by the relay when its author
// is a member, and bans the reported key when enough members reported it.
func (b *ReportBan) OnReport(ctx context.Context, ev *nostr.Event) {
	if b.MinReporters == 0 || ev.Kind != KindReport || !b.Member(ev.PubKey) {
		return
	}
	r, ok := ParseReport(ev, b.Service.pubKey)
	if !ok || r.Source == sourceAPI || b.Protected(r.ReportedPubKey) {
		return
	}
	ban, reporters, err := b.Service.banReported(ctx, r.ReportedPubKey, b)
	switch {
	case err != nil:
		b.Log.Warn("banlist: members' reports not acted on", "pubkey", r.ReportedPubKey, "err", err)
	case ban != nil:
		b.Log.Info("banlist: key banned on members' reports", "pubkey", r.ReportedPubKey, "reporters", len(reporters), "until", *ban.ExpiresAt)
	}
}

// reportBanRecord is the audit entry of a ban made on members' reports:
// the ban, and who reported the key by which reports.
type reportBanRecord struct {
	Ban       Ban      `json:"ban"`
	Reporters []string `json:"reporters"`
	Reports   []string `json:"reports"`
}

// banReported bans pk for b.For when at least b.MinReporters members
// reported it since the window's start, its last ban or that ban's
// lifting, whichever is latest (reports heard once are not heard again; a
// moderator's unban is not undone by the reports it overruled), unless it
// is banned now. ban is nil when it was not banned.
func (s *Service) banReported(ctx context.Context, pk string, b *ReportBan) (ban *Ban, reporters []string, err error) {
	if err := s.writable(ReportBanActor); err != nil {
		return nil, nil, err
	}
	now := s.now()
	var made Ban
	err = s.update(func(txn *kv.Txn) error {
		if _, banned := s.list.Banned(pk, now.Unix()); banned { // by a record, or by a mirrored page, which has none
			return nil
		}
		since, ok, err := reportsSince(txn, pk, now, b.Window)
		if err != nil || !ok {
			return err
		}
		var ids []string
		if reporters, ids, err = s.memberReports(ctx, pk, since, b.Member); err != nil || len(reporters) < b.MinReporters {
			return err
		}
		expires := now.Add(b.For).Unix()
		reason := fmt.Sprintf("reported by %d members of the web of trust", len(reporters))
		if made, _, _, err = s.putBan(txn, ReportBanActor, pk, reason, &expires, now, ""); err != nil {
			return err
		}
		ban = &made
		return s.audit(txn, ReportBanActor, "ban.wot_reports", pk, nil, reportBanRecord{Ban: made, Reporters: reporters, Reports: ids})
	}, func() {
		if ban != nil {
			s.list.Ban(made.policy())
		}
	})
	if err != nil || ban == nil {
		return nil, nil, err
	}
	return ban, reporters, nil
}

// reportsSince is when the reports against pk that count start; ok is
// false while pk is banned.
func reportsSince(txn *kv.Txn, pk string, now time.Time, window time.Duration) (since int64, ok bool, err error) {
	since = now.Add(-window).Unix()
	old, found, err := currentBan(txn, pk)
	if err != nil || !found {
		return since, err == nil, err
	}
	if old.State(now.Unix()) == StateActive {
		return 0, false, nil
	}
	// Reports of the ban's (or the lifting's) second were heard by it.
	since = max(since, old.CreatedAt+1)
	if old.LiftedAt != nil {
		since = max(since, *old.LiftedAt+1)
	}
	return since, true, nil
}

// memberReports are the distinct members who reported pk since, and their
// reports.
func (s *Service) memberReports(ctx context.Context, pk string, since int64, member func(string) bool) (reporters, ids []string, err error) {
	t := nostr.Timestamp(since)
	f := nostr.Filter{Kinds: []int{KindReport}, Tags: nostr.TagMap{"p": {pk}}, Since: &t, Limit: maxReportsCounted}
	seen := map[string]bool{}
	for ev, err := range s.events.Find(ctx, f) {
		if err != nil {
			return nil, nil, err
		}
		r, ok := ParseReport(ev, s.pubKey)
		if !ok || r.ReportedPubKey != pk || r.Source == sourceAPI || seen[ev.PubKey] || !member(ev.PubKey) {
			continue
		}
		seen[ev.PubKey] = true
		reporters, ids = append(reporters, ev.PubKey), append(ids, ev.ID)
	}
	return reporters, ids, nil
}
