package strfry_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/strfry"
	"github.com/outpost-relay/outpost/policies"
)

// The pubkey of the whitelist example in strfry's plugin documentation
// (https://github.com/hoytech/strfry/blob/master/docs/plugins.md).
const docPubKey = "003ba9b2c5bd8afeed41a4ce362a8b7fc3ab59c25b6a1359cae9093f296dac01"

// input is a line as strfry's PluginEventSifter writes it: tao::json
// objects print their keys sorted.
func input(typ, id, pubkey string, kind int, content, sourceType, sourceInfo string) string {
	ev, _ := json.Marshal(map[string]any{"content": content, "created_at": 1700000000, "id": id, "kind": kind,
		"pubkey": pubkey, "sig": strings.Repeat("0", 128), "tags": [][]string{}})
	return fmt.Sprintf(`{"event":%s,"receivedAt":1700000001,"sourceInfo":%q,"sourceType":%q,"type":%q}`, ev, sourceInfo, sourceType, typ)
}

type answer struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	Msg    string `json:"msg"`
}

func decide(t *testing.T, l *policies.BanList, line string, now int64) *answer {
	t.Helper()
	out, _ := strfry.Decide(l, []byte(line), now)
	if out == nil {
		return nil
	}
	if !strings.HasSuffix(string(out), "\n") || strings.Count(string(out), "\n") != 1 {
		t.Fatalf("answer %q is not one line", out)
	}
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

func id(n int) string { return fmt.Sprintf("%064x", n) }

// TestDecide drives the plugin with strfry's input lines: every source
// type strfry names, bans (the documented example's key among them),
// words, a temporary ban at the second it lapses, and lines that get no
// answer.
func TestDecide(t *testing.T) {
	const now = 1_800_000_000
	l := policies.NewBanList()
	l.Ban(policies.Ban{PubKey: docPubKey, Reason: "spam"})
	temp := strings.Repeat("ab", 32)
	l.Ban(policies.Ban{PubKey: temp, Reason: "cool down", ExpiresAt: now + 60})
	l.SetWords([]string{"buy now"})
	clean := strings.Repeat("cd", 32)

	for _, src := range []struct{ typ, info string }{
		{"IP4", "127.0.0.1"}, {"IP6", "::1"}, {"Import", ""}, {"Stream", "wss://relay.example"}, {"Sync", "wss://relay.example"}, {"Stored", ""},
	} {
		t.Run(src.typ, func(t *testing.T) {
			a := decide(t, l, input("new", id(1), docPubKey, 1, "hello", src.typ, src.info), now)
			if a == nil || a.ID != id(1) || a.Action != "reject" || a.Msg != "blocked: you are banned from this relay: spam" {
				t.Fatalf("banned key: %+v", a)
			}
			a = decide(t, l, input("new", id(2), clean, 1, "hello", src.typ, src.info), now)
			if a == nil || a.ID != id(2) || a.Action != "accept" || a.Msg != "" {
				t.Fatalf("clean event: %+v", a)
			}
		})
	}
	if a := decide(t, l, input("new", id(3), clean, 1, "BUY. NOW!", "IP4", "1.2.3.4"), now); a.Action != "reject" || a.Msg != `blocked: contains the blocked word "buy now"` {
		t.Fatalf("blocked word: %+v", a)
	}
	if a := decide(t, l, input("new", id(4), clean, 0, `{"name":"buy now bot"}`, "IP4", "1.2.3.4"), now); a.Action != "reject" {
		t.Fatalf("blocked word in a profile: %+v", a)
	}
	if a := decide(t, l, input("new", id(5), temp, 1, "hi", "IP4", "1.2.3.4"), now+59); a.Action != "reject" || a.Msg != "blocked: you are banned from this relay: cool down" {
		t.Fatalf("a second before the temporary ban lapses: %+v", a)
	}
	if a := decide(t, l, input("new", id(5), temp, 1, "hi", "IP4", "1.2.3.4"), now+60); a.Action != "accept" {
		t.Fatalf("when the temporary ban lapses: %+v", a)
	}
	for name, line := range map[string]string{
		"an older strfry's lookback": input("lookback", id(6), docPubKey, 1, "", "Stored", ""),
		"not JSON":                   "this is not json",
		"no event id":                `{"type":"new","event":{"pubkey":"` + clean + `","kind":1},"receivedAt":1,"sourceType":"IP4","sourceInfo":"1.2.3.4"}`,
	} {
		if a := decide(t, l, line, now); a != nil {
			t.Errorf("%s: answered %+v", name, a)
		}
	}
	if a := decide(t, l, `{"type":"new","event":{"id":"`+id(7)+`"}}`, now); a == nil || a.Action != "reject" || !strings.HasPrefix(a.Msg, "invalid:") {
		t.Fatalf("an event without pubkey or kind: %+v", a)
	}
}

// TestServeAnswersInOrder: one answer per answerable line, in order, each
// flushed; the unanswerable ones are skipped.
func TestServeAnswersInOrder(t *testing.T) {
	l := policies.NewBanList()
	l.Ban(policies.Ban{PubKey: docPubKey, Reason: "spam"})
	lines := []string{
		input("new", id(1), docPubKey, 1, "x", "IP4", "1.2.3.4"),
		"garbage",
		input("new", id(2), strings.Repeat("cd", 32), 1, strings.Repeat("long ", 200_000), "IP6", "::1"),
	}
	var out strings.Builder
	err := strfry.Serve(l, strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, nowFunc(1), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(got) != 2 || !strings.Contains(got[0], id(1)) || !strings.Contains(got[0], `"reject"`) || !strings.Contains(got[1], id(2)) || !strings.Contains(got[1], `"accept"`) {
		t.Fatalf("answers = %q", got)
	}
}

func nowFunc(unix int64) func() time.Time { return func() time.Time { return time.Unix(unix, 0) } }
