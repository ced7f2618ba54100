package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/relay"
)

const exportUsage = `outpost export ['FILTER'] [--kinds K,K] [--authors PUBKEY,PUBKEY] [--since T] [--until T] [--limit N] [--output FILE] [--data-dir DIR]

writes the stored events matching a NIP-01 filter (FILTER, a JSON object
as in a REQ; the flags set its fields) to standard output or FILE, one
event's JSON a line (JSONL, as "strfry import" and "nak" read them), newest
first. No filter: every event. It answers as a REQ would, without its
limit: no expired event, none the ban list hides. The data dir must not be
served by a running outpost; FILE appears only once it is whole.`

// exportOptions are export's flags and argument.
type exportOptions struct {
	dataDirSetting
	store          kv.Settings
	kinds, authors []string
	since, until   int64
	limit          int
	output         string
	filter         nostr.Filter
}

// exportCLI is "outpost export".
func exportCLI(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseExportArgs(args, getenv, stdout)
	if err != nil {
		return err
	}
	if !kv.Exists(o.DataDir) {
		return fmt.Errorf("no outpost database in %s: point --data-dir (or OUTPOST_DATA_DIR) at the data dir outpost serves from", o.DataDir)
	}
	db, err := openOffline("export", o.DataDir, o.store, relay.DefaultLimits(), getenv, stderr)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.output == "" {
		n, err := writeEvents(ctx, db.rl, o.filter, stdout)
		fmt.Fprintf(stderr, "exported %d events from %s\n", n, o.DataDir)
		return err
	}
	n, err := exportFile(ctx, db.rl, o.filter, o.output)
	if err == nil {
		fmt.Fprintf(stderr, "exported %d events from %s to %s\n", n, o.DataDir, o.output)
	}
	return err
}

// exportFile writes the events to a temporary file beside file, then
// renames it: an export that fails or is killed leaves no partial file
// that looks whole.
func exportFile(ctx context.Context, rl *relay.Relay, f nostr.Filter, file string) (int, error) {
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".partial-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // nothing left once renamed
	n, err := writeEvents(ctx, rl, f, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	return n, err
}

// writeEvents writes the events matching f to w, one a line.
func writeEvents(ctx context.Context, rl *relay.Relay, f nostr.Filter, w io.Writer) (n int, err error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var werr error
	err = rl.Export(ctx, f, func(raw []byte) bool {
		if _, werr = bw.Write(raw); werr == nil {
			werr = bw.WriteByte('\n')
		}
		n++
		return werr == nil
	})
	if err == nil {
		err = werr
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = ctx.Err() // an interrupted export is not a whole one
	}
	return n, err
}

// parseExportArgs reads export's flags and its FILTER into a filter.
func parseExportArgs(args []string, getenv func(string) string, stdout io.Writer) (*exportOptions, error) {
	o := &exportOptions{dataDirSetting: defaultDataDir, store: offlineStore()}
	fs := newFlagSet("export")
	settings.Var(fs, &o.kinds, "kinds", "event kinds, comma-separated")
	settings.Var(fs, &o.authors, "authors", "authors' public keys (npub or hex), comma-separated")
	settings.Var(fs, &o.since, "since", "only events created at or after this unix time")
	settings.Var(fs, &o.until, "until", "only events created at or before this unix time")
	settings.Var(fs, &o.limit, "limit", "at most this many events, the newest; 0: all")
	settings.Var(fs, &o.output, "output", "write to this file instead of standard output")
	twin := twinsBut("kinds", "authors", "since", "until", "limit", "output")
	settings.Bind(fs, &o.dataDirSetting)
	settings.Bind(fs, &o.store)
	fs.Usage = func() { usage(fs, exportUsage, twin) }
	rest, err := parseInterleaved(fs, "export", args, stdout)
	if err != nil {
		return nil, err
	}
	if _, err := settings.FromEnv(fs, getenv, twin); err != nil {
		return nil, err
	}
	if err := o.store.Valid(); err != nil {
		return nil, err
	}
	if len(rest) > 1 {
		return nil, usageErrorf("export", "export takes one FILTER, got %d arguments", len(rest))
	}
	if len(rest) == 1 {
		if err := o.filter.UnmarshalJSON([]byte(rest[0])); err != nil {
			return nil, usageErrorf("export", "FILTER is not a NIP-01 filter: %v", err)
		}
	}
	if err := o.applyFlags(fs); err != nil {
		return nil, err
	}
	o.DataDir, err = filepath.Abs(o.DataDir)
	return o, err
}

// applyFlags sets the filter's fields from the flags given.
func (o *exportOptions) applyFlags(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, k := range o.kinds {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 || n > 65535 {
			return usageErrorf("export", "--kinds: %q is not a kind (0 to 65535)", k)
		}
		o.filter.Kinds = append(o.filter.Kinds, n)
	}
	for _, a := range o.authors {
		pk, err := pubkey.Parse(a)
		if err != nil {
			return usageErrorf("export", "--authors: %q: %v", a, err)
		}
		o.filter.Authors = append(o.filter.Authors, pk)
	}
	if given["since"] {
		t := nostr.Timestamp(o.since)
		o.filter.Since = &t
	}
	if given["until"] {
		t := nostr.Timestamp(o.until)
		o.filter.Until = &t
	}
	if given["limit"] {
		o.filter.Limit, o.filter.LimitZero = o.limit, false
	}
	switch {
	case o.filter.Limit < 0:
		return usageErrorf("export", "--limit must be 0 or more")
	case o.filter.Search != "":
		return usageErrorf("export", "search (NIP-50) is not supported")
	}
	return nil
}
