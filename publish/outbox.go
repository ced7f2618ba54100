package publish

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/tidwall/gjson"
)

// Outbox forwards the events outpost signs to other relays. Only the latest
// event of each address waits to be sent (an older version of a list is
// worth nothing once a newer one exists); a relay that is away gets the
// latest of each when it is back.
type Outbox struct {
	relays []string
	log    *slog.Logger

	mu      sync.Mutex
	pending map[string]map[string]*nostr.Event // relay → address → event
	wake    map[string]chan struct{}
}

// NewOutbox returns an outbox for relays; Run sends.
func NewOutbox(relays []string, log *slog.Logger) *Outbox {
	o := &Outbox{relays: relays, log: cmp.Or(log, slog.Default()), pending: map[string]map[string]*nostr.Event{},
		wake: map[string]chan struct{}{}}
	for _, r := range relays {
		o.pending[r] = map[string]*nostr.Event{}
		o.wake[r] = make(chan struct{}, 1)
	}
	return o
}

// Send queues ev for every relay.
func (o *Outbox) Send(ev *nostr.Event) {
	addr := ev.ID
	if ev.Kind >= 10000 && ev.Kind < 20000 || ev.Kind >= 30000 && ev.Kind < 40000 {
		addr = fmt.Sprintf("%d:%s:%s", ev.Kind, ev.PubKey, ev.Tags.GetD())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.relays {
		o.pending[r][addr] = ev
		select {
		case o.wake[r] <- struct{}{}:
		default:
		}
	}
}

// Run sends to every relay until ctx ends.
func (o *Outbox) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range o.relays {
		wg.Go(func() {
			backoff := time.Second
			for ctx.Err() == nil {
				err := o.deliver(ctx, r)
				if ctx.Err() != nil {
					return
				}
				o.log.Info("publish: relay unreachable", "relay", r, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Minute)
			}
		})
	}
	wg.Wait()
}

var outboxClient = &http.Client{Timeout: 30 * time.Second}

// deliver keeps one connection to relay and sends what is pending.
func (o *Outbox) deliver(ctx context.Context, relay string) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ws, _, err := websocket.Dial(dctx, relay, &websocket.DialOptions{HTTPClient: outboxClient})
	cancel()
	if err != nil {
		return err
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	for {
		o.mu.Lock()
		batch := make(map[string]*nostr.Event, len(o.pending[relay]))
		for k, ev := range o.pending[relay] {
			batch[k] = ev
		}
		o.mu.Unlock()
		for addr, ev := range batch {
			ok, reason, err := send(ctx, ws, ev)
			if err != nil {
				return err
			}
			if !ok {
				o.log.Warn("publish: relay refused an event", "relay", relay, "kind", ev.Kind, "reason", reason)
			}
			o.mu.Lock()
			if o.pending[relay][addr] == ev {
				delete(o.pending[relay], addr)
			}
			o.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.wake[relay]:
		case <-time.After(time.Minute):
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := ws.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		}
	}
}

// send writes ["EVENT", ev] and reads until the relay's OK for it.
func send(ctx context.Context, ws *websocket.Conn, ev *nostr.Event) (ok bool, reason string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	msg, _ := json.Marshal([]any{"EVENT", ev})
	if err := ws.Write(ctx, websocket.MessageText, msg); err != nil {
		return false, "", err
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return false, "", err
		}
		arr := gjson.ParseBytes(data).Array()
		if len(arr) >= 3 && arr[0].String() == "OK" && arr[1].String() == ev.ID {
			reason := ""
			if len(arr) > 3 {
				reason = arr[3].String()
			}
			return arr[2].Bool(), reason, nil
		}
	}
}
