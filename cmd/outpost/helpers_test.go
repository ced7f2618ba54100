package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Two races live in the libraries, not in outpost, and our tests run with
// -race, so the tests are shaped around them:
//
//   - go-nostr v0.52.1's client races with itself whenever its connection
//     ends (its writer sets Connection = nil while its reader's close reads
//     it). So go-nostr clients reach outpost through a stickyProxy that the
//     instance freezes before it shuts down: the client never hears the close.
//   - khatru v0.19.1 reads its listener list without a lock when it
//     broadcasts an event, while REQ, CLOSE and disconnects change it under
//     one. So a whole-program test publishes first and queries afterwards,
//     where the connection's write lock orders the two.

// stickyProxy forwards one connection at a time to target; after freeze it
// drops what the server sends and leaves the client's side open.
type stickyProxy struct {
	ln     net.Listener
	frozen atomic.Bool
}

func newStickyProxy(t *testing.T, target string) *stickyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stickyProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				continue // the client stays connected and hears nothing
			}
			go io.Copy(server, client)
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 && !p.frozen.Load() {
						client.Write(buf[:n])
					}
					if err != nil {
						server.Close()
						return
					}
				}
			}()
		}
	}()
	return p
}

func (p *stickyProxy) freeze() { p.frozen.Store(true) }

// connect opens a go-nostr client to the instance through a sticky proxy.
func connect(t *testing.T, inst *instance) *nostr.Relay {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := newStickyProxy(t, strings.TrimPrefix(inst.url, "http://"))
	inst.proxies = append(inst.proxies, p)
	addr := p.ln.Addr().String()
	r, err := nostr.RelayConnect(ctx, "ws://"+addr)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return r
}

// query returns the stored events matching f, leaving the subscription open.
func query(t *testing.T, r *nostr.Relay, f nostr.Filter) []*nostr.Event {
	t.Helper()
	sub, err := r.Subscribe(context.Background(), nostr.Filters{f})
	if err != nil {
		t.Fatal(err)
	}
	var out []*nostr.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-sub.Events:
			out = append(out, ev)
		case <-sub.EndOfStoredEvents:
			// Events sent before EOSE may still be queued in the channel.
			for {
				select {
				case ev := <-sub.Events:
					out = append(out, ev)
				default:
					return out
				}
			}
		case <-timeout:
			t.Fatal("no EOSE")
		}
	}
}
