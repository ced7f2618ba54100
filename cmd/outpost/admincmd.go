package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/policies"
)

// adminOp is a parsed admin command, ready to run against a ban-list
// service. It writes its result to out (for scripts: KEY=$(outpost apikey
// create ...)) and anything said about it to msgs.
type adminOp func(ctx context.Context, svc *banlist.Service, out, msgs io.Writer) error

const cliActor = "cli"

// adminArgs are an admin command's flags and positional argument.
type adminArgs struct {
	name, role, reason, state string
	duration                  time.Duration
	arg                       string // the positional argument, for commands that take one
	pubkey                    string // arg as hex, for the commands on keys
	kind                      int    // arg as a number, for the kind commands
}

// adminCommand is one admin subcommand: how it is called, its flags, a
// check of its arguments before anything is opened, and what it does.
type adminCommand struct {
	synopsis string
	arg      string // the positional argument it takes, "" for none
	flags    func(fs *flag.FlagSet, a *adminArgs)
	check    func(a *adminArgs) error
	run      func(ctx context.Context, svc *banlist.Service, a adminArgs, out, msgs io.Writer) error
	// remoteArg: the argument as check rewrote it is what a running
	// outpost gets over its socket (a file's absolute path).
	remoteArg bool
	timeout   time.Duration // for the command to finish; default 30 s
}

// adminCommands are the admin subcommands, by "command subcommand".
var adminCommands = map[string]adminCommand{
	"apikey create": {
		synopsis: "outpost apikey create --name N --role viewer|moderator|admin",
		flags: func(fs *flag.FlagSet, a *adminArgs) {
			a.role = "moderator"
			settings.Var(fs, &a.name, "name", "a name for the key (shown in bans and the audit log)")
			settings.Var(fs, &a.role, "role", "viewer, moderator or admin")
		},
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, msgs io.Writer) error {
			secret, k, err := svc.CreateKey(ctx, cliActor, a.name, banlist.Role(a.role))
			if err != nil {
				return err
			}
			fmt.Fprintf(msgs, "created %s key %q (id %s); it is shown only now\n", k.Role, k.Name, k.ID)
			fmt.Fprintln(out, secret)
			return nil
		},
	},
	"apikey list": {synopsis: "outpost apikey list", run: listKeys},
	"apikey revoke": {
		synopsis: "outpost apikey revoke <id|name>", arg: "id|name",
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			k, err := svc.RevokeKey(ctx, cliActor, a.arg)
			if err == nil {
				fmt.Fprintf(out, "revoked key %q (id %s)\n", k.Name, k.ID)
			}
			return err
		},
	},
	"ban add": {
		synopsis: "outpost ban add <npub|hex> --reason R [--duration 24h]", arg: "npub|hex",
		flags: func(fs *flag.FlagSet, a *adminArgs) {
			settings.Var(fs, &a.reason, "reason", "reason for the ban")
			settings.Var(fs, &a.duration, "duration", "how long the ban lasts, e.g. 24h (default: no end)")
		},
		check: parseBanTarget,
		run:   ban,
	},
	"ban remove": {
		synopsis: "outpost ban remove <npub|hex>", arg: "npub|hex", check: parseBanTarget,
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			if _, err := svc.Unban(ctx, cliActor, a.pubkey); err != nil {
				return err
			}
			fmt.Fprintf(out, "unbanned %s\n", pubkey.NPub(a.pubkey))
			return nil
		},
	},
	"ban import": {
		synopsis: "outpost ban import FILE [--reason R]", arg: "FILE",
		flags: func(fs *flag.FlagSet, a *adminArgs) {
			settings.Var(fs, &a.reason, "reason", "reason for the lines that are a bare key")
		},
		check: checkImport, remoteArg: true, timeout: 10 * time.Minute,
		run: importBans,
	},
	"ban list": {
		synopsis: "outpost ban list [--state active|expired|lifted]",
		flags: func(fs *flag.FlagSet, a *adminArgs) {
			a.state = "active"
			settings.Var(fs, &a.state, "state", "which bans to list; empty for all")
		},
		run: listBans,
	},
	"words add": {
		synopsis: "outpost words add <word or phrase>", arg: "word or phrase",
		run: changeWord((*banlist.Service).AddWord, "blocked"),
	},
	"words remove": {
		synopsis: "outpost words remove <word or phrase>", arg: "word or phrase",
		run: changeWord((*banlist.Service).RemoveWord, "unblocked"),
	},
	"allow add": {
		synopsis: "outpost allow add <npub|hex> [--reason R]", arg: "npub|hex", flags: reasonFlag, check: parseBanTarget,
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			_, err := svc.AllowPubKey(ctx, cliActor, a.pubkey, a.reason)
			return say(out, err, "allowed %s; while the allow list is not empty only its keys may publish\n", pubkey.NPub(a.pubkey))
		},
	},
	"allow remove": {
		synopsis: "outpost allow remove <npub|hex>", arg: "npub|hex", check: parseBanTarget,
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			_, err := svc.UnallowPubKey(ctx, cliActor, a.pubkey)
			return say(out, err, "took %s off the allow list\n", pubkey.NPub(a.pubkey))
		},
	},
	"allow list": {
		synopsis: "outpost allow list",
		run: func(ctx context.Context, svc *banlist.Service, _ adminArgs, out, _ io.Writer) error {
			keys, err := svc.AllowedPubKeys(ctx)
			rows := [][]string{{"PUBKEY", "REASON", "ADDED", "BY"}}
			for _, k := range keys {
				rows = append(rows, []string{pubkey.NPub(k.PubKey), k.Reason, unixTime(k.AddedAt), k.AddedBy})
			}
			return table(out, rows, err)
		},
	},
	"ip block": {
		synopsis: "outpost ip block <address|CIDR> [--reason R]", arg: "address|CIDR", flags: reasonFlag,
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			// The operator at the machine is the last resort, who
			// recovers from any block: no confirmation is asked.
			b, err := svc.BlockIP(ctx, cliActor, a.arg, a.reason, true)
			return say(out, err, "blocked %s: the relay and the REST services refuse it\n", b.IP)
		},
	},
	"ip unblock": {
		synopsis: "outpost ip unblock <address|CIDR>", arg: "address|CIDR",
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			b, err := svc.UnblockIP(ctx, cliActor, a.arg)
			return say(out, err, "unblocked %s\n", b.IP)
		},
	},
	"ip list": {
		synopsis: "outpost ip list",
		run: func(ctx context.Context, svc *banlist.Service, _ adminArgs, out, _ io.Writer) error {
			ips, err := svc.BlockedIPs(ctx)
			rows := [][]string{{"IP", "REASON", "BLOCKED", "BY"}}
			for _, b := range ips {
				rows = append(rows, []string{b.IP, b.Reason, unixTime(b.BlockedAt), b.BlockedBy})
			}
			return table(out, rows, err)
		},
	},
	"kind allow":    {synopsis: "outpost kind allow <kind>", arg: "kind", check: parseKind, run: changeKind((*banlist.Service).AllowKind, "allowed; while any kind is allowed only allowed kinds are accepted")},
	"kind disallow": {synopsis: "outpost kind disallow <kind>", arg: "kind", check: parseKind, run: changeKind((*banlist.Service).DisallowKind, "disallowed")},
	"kind clear":    {synopsis: "outpost kind clear <kind>", arg: "kind", check: parseKind, run: changeKind((*banlist.Service).ClearKind, "has no rule now")},
	"kind list": {
		synopsis: "outpost kind list",
		run: func(ctx context.Context, svc *banlist.Service, _ adminArgs, out, _ io.Writer) error {
			rules, err := svc.KindRules(ctx)
			rows := [][]string{{"KIND", "RULE", "SET", "BY"}}
			for _, r := range rules {
				rows = append(rows, []string{strconv.Itoa(r.Kind), r.Rule, unixTime(r.SetAt), r.SetBy})
			}
			return table(out, rows, err)
		},
	},
	"event ban": {
		synopsis: "outpost event ban <id> [--reason R]", arg: "id", flags: reasonFlag,
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			e, err := svc.BanEvent(ctx, cliActor, a.arg, a.reason)
			return say(out, err, "banned event %s: the relay serves it to no one\n", e.ID)
		},
	},
	"event unban": {
		synopsis: "outpost event unban <id>", arg: "id",
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			e, err := svc.UnbanEvent(ctx, cliActor, a.arg)
			return say(out, err, "unbanned event %s\n", e.ID)
		},
	},
	"event allow": {
		synopsis: "outpost event allow <id> [--reason R]", arg: "id", flags: reasonFlag,
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			e, err := svc.AllowEvent(ctx, cliActor, a.arg, a.reason)
			return say(out, err, "allowed event %s: served, and off the moderation queue\n", e.ID)
		},
	},
	"event unallow": {
		synopsis: "outpost event unallow <id>", arg: "id",
		run: func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
			e, err := svc.UnallowEvent(ctx, cliActor, a.arg)
			return say(out, err, "took event %s off the allow list\n", e.ID)
		},
	},
	"event list": {
		synopsis: "outpost event list [--state banned|allowed|reported]",
		flags: func(fs *flag.FlagSet, a *adminArgs) {
			a.state = "banned"
			settings.Var(fs, &a.state, "state", "banned, allowed, or reported (awaiting a moderator)")
		},
		check: func(a *adminArgs) error {
			if a.state != "banned" && a.state != "allowed" && a.state != "reported" {
				return usageErrorf("event list", "--state must be banned, allowed or reported, not %q", a.state)
			}
			return nil
		},
		run: listEvents,
	},
	"words list": {
		synopsis: "outpost words list",
		run: func(ctx context.Context, svc *banlist.Service, _ adminArgs, out, _ io.Writer) error {
			words, err := svc.Words(ctx)
			for _, w := range words {
				fmt.Fprintln(out, w.Word)
			}
			return err
		},
	},
}

// parseAdmin parses "<group> <sub> ..." (adminCommands) into an operation
// and the data dir it is for (--data-dir, else its twin in getenv). The same
// arguments work locally and over the socket, which ignores the data dir.
// --help prints the command's usage on stdout (flag.ErrHelp).
func parseAdmin(args []string, getenv func(string) string, stdout io.Writer) (adminOp, adminTarget, error) {
	group := args[0]
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		if len(args) >= 2 && isHelp(args[1]) {
			fmt.Fprint(stdout, groupUsage(group))
			return nil, adminTarget{}, flag.ErrHelp
		}
		return nil, adminTarget{}, usageErrorf(group, "%s needs a subcommand: %s", group, strings.Join(subcommands(group), ", "))
	}
	name := group + " " + args[1]
	cmd, ok := adminCommands[name]
	if !ok {
		return nil, adminTarget{}, usageErrorf(group, "unknown command %q; %s has %s", name, group, strings.Join(subcommands(group), ", "))
	}
	fs := newFlagSet(name)
	dir := defaultDataDir
	settings.Bind(fs, &dir)
	var a adminArgs
	if cmd.flags != nil {
		cmd.flags(fs, &a)
	}
	fs.Usage = func() {
		usage(fs, cmd.synopsis, dataDirTwin)
	}
	if err := parseFlags(fs, name, reorder(args[2:]), stdout); err != nil {
		return nil, adminTarget{}, err
	}
	if _, err := settings.FromEnv(fs, getenv, dataDirTwin); err != nil {
		return nil, adminTarget{}, err
	}
	switch {
	case cmd.arg != "" && fs.NArg() != 1:
		return nil, adminTarget{}, usageErrorf(name, "%s takes one argument (%s), got %d", name, cmd.arg, fs.NArg())
	case cmd.arg == "" && fs.NArg() > 0:
		return nil, adminTarget{}, usageErrorf(name, "%s takes no arguments, got %q", name, strings.Join(fs.Args(), " "))
	}
	a.arg = fs.Arg(0)
	if cmd.check != nil {
		if err := cmd.check(&a); err != nil {
			return nil, adminTarget{}, err
		}
	}
	remote := args
	if cmd.remoteArg {
		flags := reorder(args[2:])
		remote = append(append(slices.Clone(args[:2]), flags[:len(flags)-1]...), "--", a.arg)
	}
	return func(ctx context.Context, svc *banlist.Service, out, msgs io.Writer) error {
		return cmd.run(ctx, svc, a, out, msgs)
	}, adminTarget{dir.DataDir, remote, cmp.Or(cmd.timeout, 30*time.Second)}, nil
}

// adminTarget is where a parsed admin command runs: the data dir, and the
// arguments to send the outpost that serves it.
type adminTarget struct {
	dir     string
	remote  []string
	timeout time.Duration
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// subcommands are a group's subcommands, sorted.
func subcommands(group string) []string {
	var subs []string
	for name := range adminCommands {
		if g, sub, _ := strings.Cut(name, " "); g == group {
			subs = append(subs, sub)
		}
	}
	slices.Sort(subs)
	return subs
}

// groupUsage lists a group's subcommands.
func groupUsage(group string) string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, sub := range subcommands(group) {
		fmt.Fprintf(&b, "  %s\n", adminCommands[group+" "+sub].synopsis)
	}
	fmt.Fprintf(&b, "\n\"outpost %s <subcommand> --help\" lists its flags. Each takes --data-dir (OUTPOST_DATA_DIR).\n", group)
	return b.String()
}

func parseBanTarget(a *adminArgs) error {
	pk, err := pubkey.Parse(a.arg)
	if err != nil {
		return fmt.Errorf("%q: %w", a.arg, err)
	}
	if a.duration < 0 {
		return usageErrorf("ban add", "--duration must be positive")
	}
	a.pubkey = pk
	return nil
}

func reasonFlag(fs *flag.FlagSet, a *adminArgs) {
	settings.Var(fs, &a.reason, "reason", "a note for the audit log and the lists")
}

func parseKind(a *adminArgs) (err error) {
	if a.kind, err = strconv.Atoi(a.arg); err != nil {
		return fmt.Errorf("%q is not a kind number", a.arg)
	}
	return nil
}

// changeKind runs a kind rule change and says what was done.
func changeKind(change func(*banlist.Service, context.Context, string, int) (banlist.KindRule, error), done string) func(context.Context, *banlist.Service, adminArgs, io.Writer, io.Writer) error {
	return func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
		_, err := change(svc, ctx, cliActor, a.kind)
		return say(out, err, "kind %d %s\n", a.kind, done)
	}
}

func listEvents(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
	var rows [][]string
	var err error
	switch a.state {
	case "banned":
		var evs []banlist.BannedEvent
		evs, err = svc.BannedEvents(ctx)
		rows = [][]string{{"ID", "REASON", "BANNED", "BY"}}
		for _, e := range evs {
			rows = append(rows, []string{e.ID, e.Reason, unixTime(e.BannedAt), e.BannedBy})
		}
	case "allowed":
		var evs []banlist.AllowedEvent
		evs, err = svc.AllowedEvents(ctx)
		rows = [][]string{{"ID", "REASON", "ALLOWED", "BY"}}
		for _, e := range evs {
			rows = append(rows, []string{e.ID, e.Reason, unixTime(e.AllowedAt), e.AllowedBy})
		}
	default:
		var evs []banlist.ReportedEvent
		evs, err = svc.EventsNeedingModeration(ctx)
		rows = [][]string{{"ID", "REPORTS", "REASONS", "LAST REPORTED"}}
		for _, e := range evs {
			rows = append(rows, []string{e.ID, strconv.Itoa(e.Reports), strings.Join(e.Reasons, ", "), unixTime(e.LastReportedAt)})
		}
	}
	return table(out, rows, err)
}

// say prints what was done, unless err says it was not.
func say(out io.Writer, err error, format string, args ...any) error {
	if err == nil {
		fmt.Fprintf(out, format, args...)
	}
	return err
}

// table prints rows in aligned columns, the first a header, unless err.
func table(out io.Writer, rows [][]string, err error) error {
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func ban(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
	var expires *int64
	if a.duration > 0 {
		e := svc.ExpiresIn(int64(a.duration.Seconds()))
		expires = &e
	}
	b, err := svc.Ban(ctx, cliActor, a.pubkey, a.reason, expires)
	if err != nil {
		return err
	}
	until := "with no end"
	if b.ExpiresAt != nil {
		until = "until " + unixTime(*b.ExpiresAt)
	}
	fmt.Fprintf(out, "banned %s %s\n", pubkey.NPub(a.pubkey), until)
	return nil
}

// changeWord runs change (AddWord or RemoveWord) and says what was done.
func changeWord(change func(*banlist.Service, context.Context, string, string) (banlist.Word, error), done string) func(context.Context, *banlist.Service, adminArgs, io.Writer, io.Writer) error {
	return func(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
		w, err := change(svc, ctx, cliActor, a.arg)
		if err == nil {
			fmt.Fprintf(out, "%s %q\n", done, w.Word)
		}
		return err
	}
}

func listKeys(ctx context.Context, svc *banlist.Service, _ adminArgs, out, _ io.Writer) error {
	keys, err := svc.Keys(ctx)
	rows := [][]string{{"ID", "NAME", "ROLE", "CREATED", "REVOKED"}}
	for _, k := range keys {
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = unixTime(*k.RevokedAt)
		}
		rows = append(rows, []string{k.ID, k.Name, string(k.Role), unixTime(k.CreatedAt), revoked})
	}
	return table(out, rows, err)
}

func listBans(ctx context.Context, svc *banlist.Service, a adminArgs, out, _ io.Writer) error {
	bans, err := svc.Bans(ctx, a.state, 0, 1000)
	now := time.Now().Unix()
	rows := [][]string{{"PUBKEY", "STATE", "REASON", "EXPIRES", "BY"}}
	for _, b := range bans {
		exp := "-"
		if b.ExpiresAt != nil {
			exp = unixTime(*b.ExpiresAt)
		}
		rows = append(rows, []string{pubkey.NPub(b.PubKey), b.State(now), b.Reason, exp, b.BannedBy})
	}
	return table(out, rows, err)
}

// reorder puts flags before positional arguments, so "ban add npub1... --reason x" works.
func reorder(args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && !isBoolFlag(a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		rest = append(rest, a)
	}
	return append(flags, rest...)
}

func isBoolFlag(a string) bool { return isHelp(a) }

func unixTime(t int64) string { return time.Unix(t, 0).UTC().Format(time.RFC3339) }

// adminCLI is the admin command group: it runs a command in the running
// outpost that owns the data dir (so the relay sees the change at once), or
// opens the data dir itself. It never creates one: a data dir without a
// database is a mistyped --data-dir.
func adminCLI(group string) func(context.Context, []string, func(string) string, io.Reader, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
		full := append([]string{group}, args...)
		op, target, err := parseAdmin(full, getenv, stdout)
		if err != nil {
			return err
		}
		dir, _ := filepath.Abs(target.dir)
		ctx, cancel := context.WithTimeout(ctx, target.timeout)
		defer cancel()

		if res, err := execRemote(ctx, dir, target.remote); !errors.Is(err, errNoServer) {
			fmt.Fprint(stdout, res.Output)
			fmt.Fprint(stderr, res.Messages)
			return err
		}
		if !kv.Exists(dir) {
			return fmt.Errorf("no outpost database in %s: point --data-dir (or OUTPOST_DATA_DIR) at the data dir outpost serves from", dir)
		}
		st, err := store.Open(dir, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if errors.Is(err, kv.ErrLocked) {
			return fmt.Errorf("another outpost holds %s and its admin socket does not answer", dir)
		}
		if err != nil {
			return err
		}
		defer st.Close()
		sk, err := serviceKey(getenv(settings.EnvName("secret-key")), dir)
		if err != nil {
			return err
		}
		svc, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: policies.NewBanList(), SecretKey: sk,
			Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			Publish: saveOnly(st.Events)})
		if err != nil {
			return err
		}
		return cliError(op(ctx, svc, stdout, stderr))
	}
}

func cliError(err error) error {
	if e := outpost.AsError(err); e != nil {
		return errors.New(e.Message)
	}
	return err
}
