package profiles

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
)

// maxEvents and maxMessage bound what one relay can make us hold.
const (
	maxEvents  = 500
	maxMessage = 512 << 10
)

// queryRelay sends one REQ and collects events until EOSE, CLOSED or ctx
// ends. Events are returned unverified.
func queryRelay(ctx context.Context, url string, dial func(context.Context, string, string) (net.Conn, error),
	filters nostr.Filters) (events []*nostr.Event, err error) {
	c, err := nostrclient.Dial(ctx, url, nostrclient.Options{ReadLimit: maxMessage, NetDial: dial})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	const sub = "outpost-profile"
	if err := c.Req(ctx, sub, filters...); err != nil {
		return nil, err
	}
	for {
		m, err := c.Next(ctx)
		if err != nil {
			return events, err
		}
		if m.Sub != sub {
			continue
		}
		switch m.Label {
		case "EVENT":
			if m.Event != nil {
				events = append(events, m.Event)
				if len(events) >= maxEvents {
					return events, errors.New("too many events")
				}
			}
		case "EOSE":
			c.Send(ctx, "CLOSE", sub)
			return events, nil
		case "CLOSED":
			return events, fmt.Errorf("relay closed the subscription: %s", m.Text)
		}
	}
}
