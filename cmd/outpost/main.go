// Command outpost serves a Nostr relay with a ban list, a test-sats faucet and
// a Cashu mint directory on one listener.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/outpost-relay/outpost/internal/ops/settings"
)

func main() {
	spareProcs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(report(err, os.Stderr))
}

// spareProcs lets the scheduler run twice as many goroutines at once as
// there are CPUs, unless GOMAXPROCS is set. badger writes each table by
// copying it into a mapping of its new file and msync-ing it: a goroutine
// that page-faults there keeps its P while the kernel waits for the disk
// (a fault is no syscall the scheduler sees), so on 2 CPUs badger's two
// compactors and its memtable flush could leave the relay's writer and
// badger's watermark goroutines waiting for a P while the CPUs idled (a
// runtime trace of a ban wave: 1.6 s of scheduler delay in 20 s on the
// watermark, 1.5 s on the relay's writer, with outpost using a quarter of
// a core). With twice the Ps, a note's publish p99 during 100,000 bans in
// a minute fell from 17.3–19.1 ms to 11.3–12.7 ms (three interleaved runs
// each, go run ./bench -only banlist -banlist-sizes 100000, load 2–3).
func spareProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
	}
}

// report prints err once and says how the process exits: 0 without an
// error, 2 for a command used wrongly (with where to find the help), 1
// otherwise.
func report(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "outpost:", err)
	var u *usageError
	if errors.As(err, &u) {
		fmt.Fprintf(stderr, "run \"%s --help\" for usage\n", strings.TrimSpace("outpost "+u.cmd))
		return 2
	}
	return 1
}

// usageError is a command used wrongly: an unknown command or flag, a bad
// flag value, a missing or extra argument.
type usageError struct {
	cmd string // "" for outpost itself, else e.g. "ban add"
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

const topUsage = `outpost: a Nostr relay with a ban list, a test-sats faucet and a Cashu mint directory

usage:
  outpost [serve] [flags]                       run everything (the default)
  outpost apikey create --name N --role R       issue a ban-list API key (viewer, moderator, admin)
  outpost apikey list | revoke <id|name>
  outpost ban add <pubkey> --reason R [--duration 24h] | remove <pubkey> | list
  outpost words add|remove <word> | list
  outpost allow add <pubkey> [--reason R] | remove <pubkey> | list
                                                the allow list: when not empty, only its keys publish
  outpost ip block <address|CIDR> [--reason R] | unblock <address|CIDR> | list
  outpost kind allow|disallow|clear <kind> | list
  outpost event ban|allow <id> [--reason R] | unban|unallow <id> | list [--state banned|allowed|reported]
  outpost nip98 keygen                          a Nostr key to try the faucet with (OUTPOST_NSEC=...)
  outpost nip98 sign [--method M] [--body B] <url>
                                                the Authorization header of a NIP-98 request
  outpost backup FILE [--data-dir DIR]          a consistent backup, while outpost runs or not
  outpost restore FILE --data-dir DIR           into a new, empty data dir
  outpost import [FILE] [--batch N] [--strict]  Nostr events (JSONL, as strfry export writes) into a stopped outpost
  outpost export ['FILTER'] [--kinds K] [--output FILE]
                                                the events matching a filter, as JSONL
  outpost strfry-policy --from <URL>            a strfry write-policy plugin enforcing an outpost's ban list
  outpost version                               the version and the commit it was built from

Admin commands talk to a running outpost through <data-dir>/outpost.sock, or
open the data dir themselves when none runs. "outpost <command> --help" lists
a command's flags; "outpost serve --help" lists every setting, each also read
from its OUTPOST_* environment variable.
`

// commands are outpost's commands besides serve.
var commands = map[string]func(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error{
	"version": func(_ context.Context, args []string, _ func(string) string, _ io.Reader, stdout, _ io.Writer) error {
		return versionCLI(args, stdout)
	},
	"apikey": adminCLI("apikey"),
	"ban":    adminCLI("ban"),
	"words":  adminCLI("words"),
	"allow":  adminCLI("allow"),
	"ip":     adminCLI("ip"),
	"kind":   adminCLI("kind"),
	"event":  adminCLI("event"),
	"nip98": func(_ context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
		return nip98CLI(args, getenv, stdin, stdout, stderr)
	},
	"backup": func(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
		return backupCLI(ctx, args, getenv, stdout, stderr)
	},
	"restore": func(_ context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
		return restoreCLI(args, getenv, stdout, stderr)
	},
	"strfry-policy": strfryCLI,
	"import":        importCLI,
	"export":        exportCLI,
}

// run is the whole program; main only gives it the process's environment.
// A help request prints the help on stdout and is no error.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, getenv, stdin, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			fmt.Fprint(stdout, topUsage)
			return nil
		case "-version", "--version":
			args[0] = "version"
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return serveCLI(ctx, "", args, getenv, stdin, stdout, stderr)
	}
	if args[0] == "serve" {
		return serveCLI(ctx, "serve", args[1:], getenv, stdin, stdout, stderr)
	}
	if cmd, ok := commands[args[0]]; ok {
		return cmd(ctx, args[1:], getenv, stdin, stdout, stderr)
	}
	return usageErrorf("", "unknown command %q", args[0])
}

// serveCLI is "outpost [serve] [flags]". Flags written before another
// command ("outpost --data-dir X ban list") are that command's: it runs with
// them.
func serveCLI(ctx context.Context, name string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve")
	cf := newConfigFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), topUsage+"\n")
		usage(fs, "outpost [serve] [flags]", settings.EnvName)
	}
	if err := parseFlags(fs, name, args, stdout); err != nil {
		return err
	}
	if rest := fs.Args(); len(rest) > 0 {
		_, known := commands[rest[0]]
		switch {
		case name == "" && (known || rest[0] == "serve"):
			// The command, its arguments, then the flags given before it.
			flags := args[:len(args)-len(rest)]
			return dispatch(ctx, append(append([]string{}, rest...), flags...), getenv, stdin, stdout, stderr)
		case name == "":
			return usageErrorf("", "unknown command %q", rest[0])
		}
		return usageErrorf("serve", "serve takes no arguments, got %q", strings.Join(rest, " "))
	}
	cfg, err := cf.resolve(getenv)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stdout, stderr)
}

// newFlagSet is a flag set that prints nothing itself: parseFlags does.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args into fs. --help prints fs's usage on stdout and
// returns flag.ErrHelp (which run takes for success); anything else wrong
// is a usageError of cmd.
func parseFlags(fs *flag.FlagSet, cmd string, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return err
	}
	if err != nil {
		return &usageError{cmd: cmd, err: err}
	}
	return nil
}
