package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

// importLine is one ban of a file given to "ban import": the JSON object
// of POST /banlist/admin/bans, or a bare key that takes --reason.
type importLine struct {
	PubKey    string `json:"pubkey"`
	Reason    string `json:"reason"`
	Duration  *int64 `json:"duration"`
	ExpiresAt *int64 `json:"expires_at"`
}

// checkImport makes FILE absolute, so an outpost that runs the command over
// its socket reads the file the caller named.
func checkImport(a *adminArgs) (err error) {
	a.arg, err = filepath.Abs(a.arg)
	return err
}

// importBans bans every key of the file, banlist.MaxBatch at a time: each
// batch is checked whole and audited once. A bad line stops the import
// there, naming it; the batches before it stay.
func importBans(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
	f, err := os.Open(a.arg)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var batch []banlist.BanRequest
	banned, batches, line := 0, 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		b, err := svc.BanMany(ctx, cliActor, batch)
		banned += b.Banned
		batches++
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("the batch ending at line %d: %w", line, cliError(err))
		}
		return nil
	}
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		q, err := parseImportLine(svc, text, a.reason)
		if err != nil {
			return fmt.Errorf("%s line %d: %w (imported %d bans before it)", a.arg, line, err, banned)
		}
		if batch = append(batch, q); len(batch) == banlist.MaxBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s line %d: %w", a.arg, line+1, err)
	}
	if err := flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "banned %d keys in %d batches\n", banned, batches)
	return nil
}

func parseImportLine(svc *banlist.Service, text []byte, reason string) (banlist.BanRequest, error) {
	l := importLine{PubKey: string(text), Reason: reason}
	if text[0] == '{' {
		l = importLine{}
		if err := json.Unmarshal(text, &l); err != nil {
			return banlist.BanRequest{}, fmt.Errorf("not a ban: %w", err)
		}
	}
	pk, err := pubkey.Parse(l.PubKey)
	if err != nil {
		return banlist.BanRequest{}, fmt.Errorf("%q: %w", l.PubKey, err)
	}
	q := banlist.BanRequest{PubKey: pk, Reason: strings.TrimSpace(l.Reason), ExpiresAt: l.ExpiresAt}
	if l.Duration != nil {
		if *l.Duration <= 0 || l.ExpiresAt != nil {
			return q, fmt.Errorf("duration must be positive, and not given with expires_at")
		}
		e := svc.ExpiresIn(*l.Duration)
		q.ExpiresAt = &e
	}
	return q, nil
}
