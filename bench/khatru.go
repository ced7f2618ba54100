package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/fiatjaf/eventstore/badger"
	"github.com/fiatjaf/khatru"
)

// khatruMain serves a bare khatru relay on eventstore's badger backend with
// both libraries' defaults: the baseline of the read-path scenario, the relay
// a khatru user gets from its README.
func khatruMain(args []string) error {
	fs := flag.NewFlagSet("khatru", flag.ExitOnError)
	dir := fs.String("dir", "", "data dir")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("khatru: -dir is required")
	}
	db := &badger.BadgerBackend{Path: *dir}
	if err := db.Init(); err != nil {
		return err
	}
	defer db.Close()
	rl := khatru.NewRelay()
	rl.Log = log.New(io.Discard, "", 0)
	rl.StoreEvent = append(rl.StoreEvent, db.SaveEvent)
	rl.QueryEvents = append(rl.QueryEvents, db.QueryEvents)
	rl.CountEvents = append(rl.CountEvents, db.CountEvents)
	rl.DeleteEvent = append(rl.DeleteEvent, db.DeleteEvent)
	rl.ReplaceEvent = append(rl.ReplaceEvent, db.ReplaceEvent)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	servePprof()
	fmt.Printf("serving on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: rl, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	waitForSignal()
	srv.Close()
	return nil
}

// servePprof serves net/http/pprof on $OUTPOST_BENCH_PPROF when it is set:
// how the benchmark takes CPU profiles of the servers it measures.
func servePprof() {
	addr := os.Getenv(pprofEnv)
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprof:", err)
		return
	}
	go http.Serve(ln, pprofMux())
}
