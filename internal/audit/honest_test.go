package audit_test

import (
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/mintdir"
)

// TestHonestThreeMints: three honest mints listed in the directory, the
// audit wallet funded at each, rounds by need among them: every round ok
// with its fee within the reserve, each mint's success rate 100% as payer
// and payee, the books balanced after each round, and the directory's
// trust part for audits at its maximum, uncapped.
func TestHonestThreeMints(t *testing.T) {
	t.Parallel()
	ms := mints(t, 3)
	st := openStore(t, t.TempDir())
	defer st.Close()
	a := newAuditor(t, st, nil)
	dir := mintdir.New(mintdir.Config{DB: st.DB, Events: st.Events, Log: logger,
		Settings: mintdir.Settings{ProbeInterval: time.Hour, ProbeTimeout: 5 * time.Second, AllowPrivate: true},
		Audits: func(u string) (mintdir.AuditSummary, error) {
			s, err := a.Summary(u)
			return mintdir.AuditSummary(s), err
		}})
	ctx := ctxT(t)
	var ids []string
	for _, m := range ms {
		sub, err := dir.Submit(ctx, m.URL)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.ID.String())
		fund(t, a, m, 300)
	}
	roles := map[string]map[string]bool{}
	var last [2]string
	for i := range 9 {
		r, err := a.RunRound(ctx)
		if err != nil || r.Outcome != audit.OutcomeOK || r.Fee > r.FeeReserve {
			t.Fatalf("round %d: %+v %v", i, r, err)
		}
		t.Logf("round %d: %s -> %s %d", i, r.Payer, r.Payee, r.Amount)
		// By need alone, the payee of a round is the next one's payer.
		if [2]string{r.Payee, r.Payer} == last {
			t.Fatalf("round %d pays back the round before (%s -> %s) while a third mint waits", i, r.Payer, r.Payee)
		}
		last = [2]string{r.Payer, r.Payee}
		for mint, role := range map[string]string{r.Payer: audit.RolePayer, r.Payee: audit.RolePayee} {
			if roles[mint] == nil {
				roles[mint] = map[string]bool{}
			}
			roles[mint][role] = true
		}
		if h := balanced(t, a); h.Books.InFlightSats != 0 || h.Books.LostToMintSats != 0 || h.Books.HeldSats+h.Books.FeesPaidSats != 900 {
			t.Fatalf("books after round %d: %+v", i, h.Books)
		}
	}
	for i, m := range ms {
		if !roles[m.URL][audit.RolePayer] || !roles[m.URL][audit.RolePayee] {
			t.Errorf("%s was not audited in both roles: %v", m.URL, roles[m.URL])
		}
		s, err := a.Summary(m.URL)
		if err != nil || s.Audits30d == 0 || s.SuccessRate30d == nil || *s.SuccessRate30d != 1 || s.LastAuditFailureAt != nil {
			t.Fatalf("summary of %s: %+v %v", m.URL, s, err)
		}
		if err := dir.Probe(ctx, ids[i]); err != nil {
			t.Fatal(err)
		}
		dm, err := dir.Get(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		p := dm.Summary.Trust.Breakdown.Audits
		if p.Score != p.Max || p.Capped || p.SuccessRate30d == nil || *p.SuccessRate30d != 1 || p.Audits30d != s.Audits30d {
			t.Fatalf("trust part of %s: %+v", m.URL, p)
		}
	}
}
