package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// bareMain serves one constant body with plain net/http: the baseline the
// HTTP scenarios are compared with. It answers If-None-Match like outpost.
func bareMain(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	bodyFile := fs.String("body", "", "file with the body to serve (default: a ban-status JSON)")
	fs.Parse(args)
	body := []byte(`{"blocked":true,"reason":"seeded ban","expires_at":null}` + "\n")
	if *bodyFile != "" {
		b, err := os.ReadFile(*bodyFile)
		if err != nil {
			return err
		}
		body = b
	}
	const etag = `"bare"`
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("serving on http://%s\n", ln.Addr())
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})}
	return srv.Serve(ln)
}
