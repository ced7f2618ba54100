package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/relay"
)

const importUsage = `outpost import [FILE|-] [--batch N] [--strict] [--protected] [--data-dir DIR] [store and relay settings]

reads Nostr events, one JSON object a line (JSONL, as "strfry export" and
"nak" write them), from FILE or standard input, and stores them in the data
dir, which outpost must not be serving. Each event is checked as the relay
checks an event another relay sends (signature, sizes and the relay limits
below, NIP-40 expiry, the ban list, NIP-09 deletions, NIP-70 unless
--protected); a replaceable or addressable event is kept only if it is the
newest of its address; a deletion request deletes what it names. Events
already stored are counted as duplicates, so an import that stopped can
simply be run again. Ctrl-C (or SIGTERM) ends it after the batch being
written. A line that is not an event is counted and skipped, unless
--strict.`

// importOptions are import's flags and argument.
type importOptions struct {
	dataDirSetting
	store     kv.Settings
	limits    relay.Limits
	batch     int
	strict    bool
	protected bool
	file      string
}

// defaultImportBatch is the events a transaction writes: see BENCHMARKS.md
// ("outpost import") for the rates measured at other sizes.
const defaultImportBatch = 1000

// importCLI is "outpost import".
func importCLI(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	o, err := parseImportArgs(args, getenv, stdout)
	if err != nil {
		return err
	}
	in, err := openInput(o.file, stdin)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := ensureDir(o.DataDir); err != nil {
		return err
	}
	db, err := openOffline("import", o.DataDir, o.store, o.limits, getenv, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr // what was written is committed; the close flushes it to the tables
		}
	}()
	imp := &importer{rl: db.rl, batch: o.batch, strict: o.strict, protected: o.protected, progress: progressTo(stderr), sum: importSummary{start: time.Now()}}
	err = imp.run(ctx, in, o.limits)
	imp.progress.end()
	fmt.Fprintln(stderr, imp.sum.line(o.DataDir, ctx.Err() != nil))
	return err
}

// parseImportArgs reads import's flags (the data dir and the relay limits
// also from their OUTPOST_* twins) and its FILE, "-" (the default) for stdin.
func parseImportArgs(args []string, getenv func(string) string, stdout io.Writer) (*importOptions, error) {
	o := &importOptions{dataDirSetting: defaultDataDir, store: offlineStore(), limits: relay.DefaultLimits(), batch: defaultImportBatch}
	fs := newFlagSet("import")
	settings.Var(fs, &o.batch, "batch", "events written in one transaction")
	settings.Var(fs, &o.strict, "strict", "stop at the first line that is not an event, before writing its batch")
	settings.Var(fs, &o.protected, "protected", "keep protected events (NIP-70), which the relay takes only from their authors: the relay the file comes from did")
	twin := twinsBut("batch", "strict", "protected")
	settings.Bind(fs, &o.dataDirSetting)
	settings.Bind(fs, &o.store)
	settings.Bind(fs, &o.limits)
	fs.Usage = func() { usage(fs, importUsage, twin) }
	rest, err := parseInterleaved(fs, "import", args, stdout)
	if err != nil {
		return nil, err
	}
	if _, err := settings.FromEnv(fs, getenv, twin); err != nil {
		return nil, err
	}
	switch {
	case len(rest) > 1:
		return nil, usageErrorf("import", "import takes one FILE, got %q", strings.Join(rest, " "))
	case o.batch < 1:
		return nil, usageErrorf("import", "--batch must be 1 or more")
	}
	if err := errors.Join(o.store.Valid(), o.limits.Valid()); err != nil {
		return nil, err
	}
	o.file = "-"
	if len(rest) == 1 {
		o.file = rest[0]
	}
	o.DataDir, err = filepath.Abs(o.DataDir)
	return o, err
}

// parseInterleaved parses flags wherever they are among the arguments
// ("import FILE --strict" as well as "import --strict FILE") and returns
// the arguments.
func parseInterleaved(fs *flag.FlagSet, cmd string, args []string, stdout io.Writer) (rest []string, err error) {
	for {
		if err := parseFlags(fs, cmd, args, stdout); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest, args = append(rest, fs.Arg(0)), fs.Args()[1:]
	}
}

// openInput opens FILE, or stdin for "-".
func openInput(file string, stdin io.Reader) (io.ReadCloser, error) {
	if file == "-" {
		return io.NopCloser(stdin), nil
	}
	return os.Open(file)
}

// errStrict ends an import with --strict at a bad line.
var errStrict = errors.New("stopped at a line that is not an event (--strict); the batches before it are stored")

// importer writes what a reader decodes, a batch at a time.
type importer struct {
	rl        *relay.Relay
	batch     int
	strict    bool
	protected bool      // keep protected events (NIP-70)
	progress  *progress // nil: no terminal to show it on
	sum       importSummary
}

// run imports the lines of in until they end, ctx ends (then after the
// batch being written), or a line is bad with --strict.
func (imp *importer) run(ctx context.Context, in io.Reader, limits relay.Limits) error {
	batches := make(chan lineBatch, 1)
	done := make(chan struct{})
	defer close(done)
	go readBatches(in, imp.rl, lineLimit(limits), imp.batch, batches, done)
	for ctx.Err() == nil { // interrupted: no batch after the one written
		var b lineBatch
		select {
		case <-ctx.Done():
			return nil
		case b = <-batches:
		}
		if err := imp.take(ctx, b); err != nil || b.last {
			return err
		}
	}
	return nil
}

// take writes one batch and counts what became of it. It is not stopped
// by ctx: an interrupted import finishes the batch it is writing.
func (imp *importer) take(ctx context.Context, b lineBatch) error {
	if imp.strict && len(b.bad) > 0 {
		imp.sum.badLines(b.bad[:1])
		return fmt.Errorf("line %d: %s: %w", b.bad[0].line, b.bad[0].reason, errStrict)
	}
	if len(b.evs) > 0 {
		res, err := imp.rl.Import(context.WithoutCancel(ctx), b.evs, imp.protected)
		if err != nil {
			return fmt.Errorf("writing the events of lines %d to %d: %w", b.first, b.lines, err)
		}
		imp.sum.add(res)
	}
	imp.sum.badLines(b.bad)
	imp.sum.lines = b.lines
	imp.progress.show(&imp.sum)
	if b.err != nil {
		return fmt.Errorf("reading line %d: %w", b.lines+1, b.err)
	}
	return nil
}

// lineBatch is a batch of lines read: the events decoded from them and the
// lines that were not events.
type lineBatch struct {
	evs          []*nostr.Event
	bad          []badLine
	first, lines int   // the first line of the batch and the last line read
	bytes        int   // of the lines of its events
	last         bool  // the input ends with this batch
	err          error // why reading ended early, with last
}

type badLine struct {
	line   int
	reason string
}

// maxBatchBytes ends a batch early when its events' lines add up to this
// much: a thousand events of the largest size a line may have (256 KiB by
// default) would hold a quarter of a gigabyte per batch, and the reader
// holds up to three batches (one building, one queued, one being written).
const maxBatchBytes = 16 << 20

// lineLimit is the longest line read whole: longer ones are refused as
// the relay refuses a message over max_message_length.
func lineLimit(l relay.Limits) int {
	if l.MaxMessageLength > 0 {
		return l.MaxMessageLength
	}
	return 16 << 20
}

// readBatches decodes the lines of in into batches of n events until in
// ends or done is closed. It holds one batch and one line at a time.
func readBatches(in io.Reader, rl *relay.Relay, limit, n int, out chan<- lineBatch, done <-chan struct{}) {
	br := bufio.NewReaderSize(in, 1<<16)
	b := lineBatch{first: 1}
	for {
		line, err := readLine(br, limit)
		if err == nil || len(line) > 0 || errors.Is(err, errLineTooLong) {
			b.lines++
			b.add(rl, line, err)
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			b.last = true
			if err != io.EOF {
				b.err = err
			}
		}
		// Bad lines count towards a batch too: a file of nothing else
		// must not pile them up.
		if len(b.evs)+len(b.bad) >= n || b.bytes >= maxBatchBytes || b.last {
			select {
			case out <- b:
			case <-done:
				return
			}
			if b.last {
				return
			}
			b = lineBatch{first: b.lines + 1, lines: b.lines}
		}
	}
}

// add decodes one line into the batch; blank lines are skipped.
func (b *lineBatch) add(rl *relay.Relay, line []byte, err error) {
	if errors.Is(err, errLineTooLong) {
		b.bad = append(b.bad, badLine{b.lines, "invalid: the line is over max_message_length"})
		return
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	ev, reason := rl.DecodeEvent(line)
	if reason != "" {
		b.bad = append(b.bad, badLine{b.lines, reason})
		return
	}
	b.evs = append(b.evs, ev)
	b.bytes += len(line)
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line, without its newline, of at most limit bytes; a
// longer one is skipped to its end and is errLineTooLong. The line is valid
// until the next call.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return bytes.TrimSuffix(line, []byte{'\n'}), err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		if len(long) <= limit {
			long = append(long, line...)
		}
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	long = bytes.TrimSuffix(long, []byte{'\n'})
	if len(long) > limit {
		return nil, errLineTooLong // the next call reads past it, or its EOF
	}
	return long, err
}
