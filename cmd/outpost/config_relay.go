package main

import (
	"errors"

	"github.com/outpost-relay/outpost/pubkey"
	"github.com/outpost-relay/outpost/relay"
)

// RelayConfig configures the relay's operator key and limits.
type RelayConfig struct {
	OperatorPubKey string // NIP-11 "pubkey": npub or hex as given, hex once validated
	Limits         relay.Limits
}

func registerRelayFlags(f *configFlags) {
	c, fs, d := &f.c.Relay, f.fs, relay.DefaultLimits()
	fs.StringVar(&c.OperatorPubKey, "relay-pubkey", "", "the operator's contact key (npub or hex), NIP-11 pubkey")
	l := &c.Limits
	fs.IntVar(&l.EventsPerMinute, "relay-events-per-minute", d.EventsPerMinute, "EVENTs per minute per author key; 0 disables")
	fs.IntVar(&l.IPEventsPerMinute, "relay-ip-events-per-minute", d.IPEventsPerMinute, "EVENTs per minute per client IP; 0 disables")
	fs.IntVar(&l.ConnectionsPerIP, "relay-ip-connections", d.ConnectionsPerIP, "open websocket connections per client IP; 0 disables")
	fs.IntVar(&l.MaxSubscriptions, "relay-max-subscriptions", d.MaxSubscriptions, "open subscriptions per connection (NIP-11 max_subscriptions); 0 disables")
	fs.IntVar(&l.MaxFilters, "relay-max-filters", d.MaxFilters, "filters per REQ or COUNT (max_filters); 0 disables")
	fs.IntVar(&l.MaxEventTags, "relay-max-event-tags", d.MaxEventTags, "tags per event (max_event_tags); 0 disables")
	fs.IntVar(&l.MaxContentLength, "relay-max-content-length", d.MaxContentLength, "characters of an event's content (max_content_length); 0 disables")
	fs.IntVar(&l.MaxMessageLength, "relay-max-message-length", d.MaxMessageLength, "bytes of one client message (max_message_length); 0: frames up to 16 MiB")
	fs.IntVar(&l.MaxLimit, "relay-max-limit", d.MaxLimit, "a filter's limit is clamped to this (max_limit)")
	fs.IntVar(&l.DefaultLimit, "relay-default-limit", d.DefaultLimit, "events a filter without a limit gets (default_limit)")
}

func validateRelay(f *configFlags) error {
	c := &f.c.Relay
	var errs []error
	if s := c.OperatorPubKey; s != "" {
		pk, err := pubkey.Parse(s)
		if err != nil {
			errs = append(errs, bad("relay-pubkey", "%q is not a public key", s))
		}
		c.OperatorPubKey = pk
	}
	l := c.Limits
	for name, v := range map[string]int{"relay-events-per-minute": l.EventsPerMinute, "relay-ip-events-per-minute": l.IPEventsPerMinute,
		"relay-ip-connections": l.ConnectionsPerIP, "relay-max-subscriptions": l.MaxSubscriptions, "relay-max-filters": l.MaxFilters,
		"relay-max-event-tags": l.MaxEventTags, "relay-max-content-length": l.MaxContentLength} {
		if v < 0 {
			errs = append(errs, bad(name, "must be 0 or more"))
		}
	}
	if l.MaxMessageLength != 0 && (l.MaxMessageLength < 1024 || l.MaxMessageLength > 16<<20) {
		errs = append(errs, bad("relay-max-message-length", "must be 0 or from 1024 to %d", 16<<20))
	}
	if l.MaxLimit < 1 {
		errs = append(errs, bad("relay-max-limit", "must be at least 1"))
	}
	if l.DefaultLimit < 1 || l.DefaultLimit > l.MaxLimit {
		errs = append(errs, bad("relay-default-limit", "must be from 1 to --relay-max-limit (%d)", l.MaxLimit))
	}
	return errors.Join(errs...)
}
