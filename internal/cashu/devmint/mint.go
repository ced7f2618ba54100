// Package devmint runs a real Cashu mint (gonuts) in-process on 127.0.0.1,
// backed by a fake Lightning node. Tests use it as the mint wallets talk to;
// the faucet uses it as its embedded default mint.
package devmint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/elnosh/gonuts/mint"
	"github.com/outpost-relay/outpost/internal/ops/atomicfile"
)

// Options configure a mint; the zero value (plus Dir) is a working mint.
type Options struct {
	Dir  string // mint database and keys; required
	Addr string // listen address; default 127.0.0.1 on a port kept in Dir
	Node *Node  // Lightning backend; default a new node on DefaultNetwork

	Name, Description, LongDescription, Motd, IconURL string
	InputFeePpk                                       uint
	Limits                                            mint.MintLimits
	// KeysetIndex is the derivation index of the active keyset. A mint
	// restarted on its Dir with another index rotates its keyset: gonuts
	// makes that one active and every other inactive (still honoured as
	// inputs).
	KeysetIndex uint32
}

// Mint is a running test mint.
type Mint struct {
	URL  string // http://127.0.0.1:port
	Node *Node

	ms    *mint.MintServer
	srv   *http.Server
	own   bool // the node was made here and is closed with the mint
	close sync.Once
}

// Start runs a mint until Close.
func Start(opt Options) (*Mint, error) {
	if opt.Dir == "" {
		return nil, errors.New("devmint: Dir is required")
	}
	if err := os.MkdirAll(opt.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := prepareDB(opt.Dir); err != nil {
		return nil, fmt.Errorf("devmint: %w", err)
	}
	ln, err := listen(opt)
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String()
	node, own := opt.Node, false
	if node == nil {
		if node, err = NewNode(filepath.Join(opt.Dir, "lightning.json")); err != nil {
			ln.Close()
			return nil, err
		}
		own = true
	}
	if opt.Name == "" {
		opt.Name = "outpost test mint"
	}
	ms, err := mint.SetupMintServer(mint.Config{
		MintPath:          opt.Dir,
		DerivationPathIdx: opt.KeysetIndex,
		Port:              ln.Addr().(*net.TCPAddr).Port,
		InputFeePpk:       opt.InputFeePpk,
		LightningClient:   node,
		Limits:            opt.Limits,
		LogLevel:          mint.Disable,
		MintInfo: mint.MintInfo{Name: opt.Name, Description: opt.Description, LongDescription: opt.LongDescription,
			Motd: opt.Motd, IconURL: opt.IconURL, URLs: []string{url}},
	})
	if err != nil {
		ln.Close()
		if own {
			node.Close()
		}
		return nil, fmt.Errorf("devmint: %w", err)
	}
	h, err := handlerOf(ms)
	if err != nil {
		ln.Close()
		ms.Shutdown()
		return nil, err
	}
	m := &Mint{URL: url, Node: node, ms: ms, own: own,
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go m.srv.Serve(ln)
	return m, nil
}

// listen binds 127.0.0.1, on the port kept in Dir when no Addr is given, so a
// restarted mint keeps its URL: wallets know a mint by its URL, and ecash
// minted before would be stranded at another one. So a kept port that is
// taken is an error, not a reason to move. An empty port file was left by
// a kill before this version wrote it whole: no URL was given out yet.
func listen(opt Options) (net.Listener, error) {
	if opt.Addr != "" {
		return net.Listen("tcp", opt.Addr)
	}
	portFile := filepath.Join(opt.Dir, "port")
	if b, err := os.ReadFile(portFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
		addr := "127.0.0.1:" + strings.TrimSpace(string(b))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("devmint: the mint in %s lives at %s, which is taken (%v); free the port, or remove %s to start over at a new URL", opt.Dir, addr, err, portFile)
		}
		return ln, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if err := atomicfile.WriteFile(portFile, []byte(port+"\n"), 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// handlerOf takes the router gonuts built for its own server, which would
// listen on every interface; we serve it on our 127.0.0.1 listener instead.
// gonuts v0.4.2 keeps it in an unexported field; TestHandlerOf fails if a
// new version moves it.
func handlerOf(ms *mint.MintServer) (http.Handler, error) {
	f := reflect.ValueOf(ms).Elem().FieldByName("httpServer")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.Type().Elem() != reflect.TypeOf(http.Server{}) {
		return nil, errors.New("devmint: gonuts MintServer has no httpServer field; update handlerOf")
	}
	srv := (*http.Server)(unsafe.Pointer(f.Pointer()))
	if srv == nil || srv.Handler == nil {
		return nil, errors.New("devmint: gonuts MintServer has no handler")
	}
	return srv.Handler, nil
}

// Close stops the mint and closes its database; it may be called twice.
func (m *Mint) Close() (err error) {
	m.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = m.srv.Shutdown(ctx)
		m.ms.Shutdown()
		if m.own {
			m.Node.Close()
		}
	})
	return err
}
