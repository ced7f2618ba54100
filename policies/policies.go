package policies

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// RejectBannedAuthors is a khatru RejectEvent policy that refuses events whose
// author has an active ban in l. It does not allocate.
func RejectBannedAuthors(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if e, ok := l.lookup(ev.PubKey, time.Now().Unix()); ok {
			return true, e.msg
		}
		return false, ""
	}
}

// RejectBannedEvents refuses events a moderator banned (NIP-86 banevent).
func RejectBannedEvents(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if l.EventBanned(ev.ID) {
			return true, "blocked: this event was banned by a moderator"
		}
		return false, ""
	}
}

// RejectBlockedWords is a khatru RejectEvent policy that refuses events whose
// text contains a blocked word of l: the content (for kind-0 profiles every
// string field of the profile JSON) and the values of TextTags.
func RejectBlockedWords(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		msg, blocked := l.BlockedMessage(ev)
		return blocked, msg
	}
}

// IsTextTag reports the tags whose values are text people read (NIP-14
// subject, NIP-23 title and summary, NIP-31 alt, names and descriptions of
// lists, badges, communities...): blocked words count there as in content.
func IsTextTag(name string) bool {
	switch name {
	case "subject", "title", "summary", "alt", "name", "description":
		return true
	}
	return false
}

func blockedIn(l *BanList, ev *nostr.Event) (string, bool) {
	var arr [8]string
	texts := append(arr[:0], ev.Content)
	if ev.Kind == 0 {
		var profile map[string]any
		if json.Unmarshal([]byte(ev.Content), &profile) == nil {
			texts = texts[:0]
			for _, v := range profile {
				if s, ok := v.(string); ok {
					texts = append(texts, s)
				}
			}
		}
	}
	for _, t := range ev.Tags {
		if len(t) >= 2 && IsTextTag(t[0]) {
			texts = append(texts, t[1])
		}
	}
	return l.BlockedWordIn(texts...)
}

// RejectUnlistedAuthors refuses events whose author is not on l's allow
// list while that list is not empty (NIP-86 allowpubkey).
func RejectUnlistedAuthors(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if !l.MayPublish(ev.PubKey) {
			return true, "restricted: this relay only accepts events from the keys on its allow list"
		}
		return false, ""
	}
}

// RejectDisallowedKinds refuses events of kinds l does not accept (NIP-86
// allowkind, disallowkind).
func RejectDisallowedKinds(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if !l.KindAccepted(ev.Kind) {
			return true, "blocked: events of kind " + strconv.Itoa(ev.Kind) + " are not accepted by this relay"
		}
		return false, ""
	}
}
