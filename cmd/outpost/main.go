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
	"syscall"

	"github.com/outpost-relay/outpost"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "outpost:", err)
		os.Exit(1)
	}
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
  outpost backup FILE [--data-dir DIR]         a consistent backup, while outpost runs or not
  outpost restore FILE --data-dir DIR           into a new, empty data dir
  outpost strfry-policy --from <URL>           a strfry write-policy plugin enforcing an outpost's ban list
  outpost version

Admin commands talk to a running outpost through <data-dir>/outpost.sock, or
open the data dir themselves when none runs. "outpost <command> --help" lists
the flags; every flag has an OUTPOST_* environment twin.
`

// run is the whole program; main only gives it the process's environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(stderr)
		cf := newConfigFlags(fs)
		fs.Usage = func() { fmt.Fprint(stderr, topUsage+"\n"); usage(fs, stderr, "outpost [serve] [flags]")() }
		cfg, err := cf.parse(args, getenv)
		if err != nil {
			return err
		}
		return serve(ctx, cfg, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "outpost", outpost.Version)
		return nil
	case "apikey", "ban", "words", "allow", "ip", "kind", "event":
		return adminCLI(ctx, cmd, args, getenv, stdout, stderr)
	case "nip98":
		return nip98CLI(args, getenv, stdin, stdout, stderr)
	case "backup":
		return backupCLI(ctx, args, getenv, stdout, stderr)
	case "restore":
		return restoreCLI(args, getenv, stdout, stderr)
	case "strfry-policy":
		return strfryCLI(ctx, args, getenv, stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, topUsage)
		return nil
	default:
		fmt.Fprint(stderr, topUsage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
