package profiles

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// maxEvents and maxMessage bound what one relay can make us hold.
const (
	maxEvents  = 500
	maxMessage = 512 << 10
)

var wsClient = &http.Client{Timeout: 10 * time.Second}

// queryRelay sends one REQ and collects events until EOSE, CLOSED or ctx
// ends. It is a minimal client on purpose: go-nostr's Relay races with
// itself when its connection ends, and a REQ-until-EOSE needs none of its
// machinery. Events are returned unverified.
func queryRelay(ctx context.Context, url string, filters nostr.Filters) (events []*nostr.Event, err error) {
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: wsClient})
	if err != nil {
		return nil, err
	}
	defer c.CloseNow()
	c.SetReadLimit(maxMessage)
	const sub = "outpost-profile"
	req, err := nostr.ReqEnvelope{SubscriptionID: sub, Filters: filters}.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if err := c.Write(ctx, websocket.MessageText, req); err != nil {
		return nil, err
	}
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return events, err
		}
		switch env := parse(data).(type) {
		case *nostr.EventEnvelope:
			if env.SubscriptionID != nil && *env.SubscriptionID == sub {
				ev := env.Event
				events = append(events, &ev)
				if len(events) >= maxEvents {
					return events, errors.New("too many events")
				}
			}
		case *nostr.EOSEEnvelope:
			if string(*env) == sub {
				closeMsg, _ := nostr.CloseEnvelope(sub).MarshalJSON()
				// No close handshake: it could wait on the relay for
				// seconds past our deadline. CloseNow (deferred) is enough.
				c.Write(ctx, websocket.MessageText, closeMsg)
				return events, nil
			}
		case *nostr.ClosedEnvelope:
			if env.SubscriptionID == sub {
				return events, fmt.Errorf("relay closed the subscription: %s", env.Reason)
			}
		}
	}
}

// parse guards go-nostr's envelope parser against input it was not built for.
func parse(data []byte) (env nostr.Envelope) {
	defer func() {
		if recover() != nil {
			env = nil
		}
	}()
	env, err := nostr.NewMessageParser().ParseMessage(string(data))
	if err != nil {
		return nil
	}
	return env
}
