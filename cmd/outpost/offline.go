package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

// offline is a stopped outpost's data dir opened by import or export: its
// store, and its relay with the ban list loaded, for the relay's own
// admission and visibility, but serving nothing.
type offline struct {
	st *store.Store
	rl *relay.Relay
}

// openOffline opens the data dir of an outpost that is not running. Unlike
// the admin commands these have no way through a running outpost's admin
// socket: they read or write every event, and the badger lock the running
// outpost holds refuses them.
func openOffline(cmd, dir string, s kv.Settings, limits relay.Limits, getenv func(string) string, stderr io.Writer) (*offline, error) {
	st, err := store.OpenWith(context.Background(), s, dir, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if errors.Is(err, kv.ErrLocked) {
		return nil, fmt.Errorf("an outpost is running on %s: stop it, then run %s again (it needs the data dir to itself)", dir, cmd)
	}
	if err != nil {
		return nil, err
	}
	o := &offline{st: st}
	if err := o.wire(dir, limits, getenv); err != nil {
		st.Close()
		return nil, err
	}
	return o, nil
}

// wire builds the ban list from the store and the relay on it, with the
// services' RejectEvent hooks as serve adds them.
func (o *offline) wire(dir string, limits relay.Limits, getenv func(string) string) error {
	sk, err := serviceKey(getenv(settings.EnvName("secret-key")), dir)
	if err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	list := policies.NewBanList()
	_, err = banlist.New(banlist.Config{DB: o.st.DB, Events: o.st.Events, List: list, SecretKey: sk, Log: quiet,
		Publish: saveOnly(o.st.Events)})
	if err != nil {
		return err
	}
	o.rl = relay.New(relay.Config{Store: o.st, BanList: list, Log: quiet, Limits: &limits})
	o.rl.RejectEvent = append(o.rl.RejectEvent, banlist.RejectInvalidReports, mintdir.RejectInvalidNIP87)
	return nil
}

func (o *offline) Close() error { return o.st.Close() }

// offlineStore are the store's settings for import and export: serve's
// (the same flags and OUTPOST_* twins: the free space kept, the cache),
// without warming the store, which a command reads once.
func offlineStore() kv.Settings {
	s := kv.DefaultSettings()
	s.WarmStore = false
	return s
}

// twinsBut is the environment twin of every flag but the command's own:
// the data dir, the store's and the relay's settings are read from the
// environment as serve reads them.
func twinsBut(own ...string) func(flagName string) string {
	return func(flagName string) string {
		if slices.Contains(own, flagName) {
			return ""
		}
		return settings.EnvName(flagName)
	}
}

// saveOnly is the ban list's Publish while outpost is stopped: its events
// (reports) go straight into the store, with no relay to broadcast to. One
// not stored as new is an error, as the relay's Publish makes it.
func saveOnly(st *events.Store) func(context.Context, *nostr.Event) error {
	return func(ctx context.Context, ev *nostr.Event) error {
		out, err := st.Save(ctx, ev)
		if err == nil && out != events.Stored {
			return fmt.Errorf("event %s not stored: %s", ev.ID, out)
		}
		return err
	}
}
