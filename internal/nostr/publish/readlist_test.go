package publish_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/nostr/publish"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

// A reader of outpost's relay gets exactly the list from its pages
// (ReadList): with pages split two and three digits deep, and again once
// lifts merge the split pages back into one.
func TestReadListFromRelay(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.Options{})
	srv := httptest.NewUnstartedServer(nil)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	rl := relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: quiet(),
		PublicURL: "http://" + srv.Listener.Addr().String(), ServicePub: pk, Name: "test"})
	srv.Config.Handler = rl
	relaytest.Serve(t, srv, rl, st)

	list := policies.NewBanList()
	var bans []policies.Ban
	for i := range 6000 { // 5,000 under 00: pages 00x, some 00xy
		prefix := ""
		if i < 5000 {
			prefix = "00"
		}
		if i < 1000 {
			prefix = "000"
		}
		bans = append(bans, policies.Ban{PubKey: key(prefix), Reason: fmt.Sprint("reason ", i)})
	}
	list.SetBans(bans)
	var words []string
	for i := range 3000 {
		words = append(words, fmt.Sprint("word ", i))
	}
	list.SetWords(words)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := &publish.BanList{List: list, Events: st.Events, Sink: rl.Publish, SecretKey: sk, Log: quiet(), Every: 10 * time.Millisecond, Rest: -1}
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	c, err := nostrclient.Dial(ctx, "ws://"+srv.Listener.Addr().String(), nostrclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fetch := publish.RelayFetch(c)
	matches := func() bool {
		got, err := publish.ReadList(ctx, fetch, pk)
		if err != nil {
			t.Fatal(err)
		}
		return sameList(list, got)
	}
	testkit.WaitFor(t, 60*time.Second, "the pages read to equal the list", matches)

	for _, ban := range bans[:4990] { // 00 fits one page again; its split pages empty
		list.Unban(ban.PubKey)
	}
	list.RemoveWords(words[10:]...)
	testkit.WaitFor(t, 60*time.Second, "the pages read to equal the list after lifts", matches)
}

// sameList: the pages read hold exactly the list's bans (with reasons) and words.
func sameList(list *policies.BanList, got publish.List) bool {
	bans, _ := list.Bans(0)
	want := make([]string, len(bans))
	for i, b := range bans {
		want[i] = b.PubKey + " " + b.Reason
	}
	have := make([]string, len(got.Bans))
	for i, p := range got.Bans {
		have[i] = p[1] + " " + p[3]
	}
	slices.Sort(have)
	words := make([]string, 0)
	for _, w := range list.Words() {
		words = append(words, policies.NormalizeText(w))
	}
	slices.Sort(words)
	slices.Sort(got.Words)
	return slices.Equal(want, have) && slices.Equal(words, got.Words)
}

func key(prefix string) string {
	var b [32]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])[len(prefix):]
}
