package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// strfryConf is the strfry.conf the read-path scenario runs strfry with:
// strfry's defaults (its own strfry.conf) but for the settings below. None
// of its limits binds on the scenario's load, so none is changed: it has no
// per-IP or per-connection rate limit, maxFilterLimit (500) is the largest
// limit the shapes ask for, the load driver CLOSEs each REQ at its EOSE
// (maxSubsPerConnection 200), and -spread's notes are under three days old
// (rejectEventsOlderThanSeconds: three years).
const strfryConf = `# written by outpost's bench for the read-path scenario
# The LMDB environment, in the reader's data dir so it is copied and measured
# with it (strfry: "./strfry-db/", relative to where it runs).
db = %q

relay {
    # Loopback and a free port, like every relay the benchmark starts
    # (strfry: 127.0.0.1:7777).
    bind = "127.0.0.1"
    port = %d

    # Keep the open-file limit strfry inherits (0: don't set it): the
    # benchmark opens 17 connections at most, and strfry's 524288 fails to
    # start wherever the hard limit is lower.
    nofiles = 0

    # The relays compared answer without NIP-42 (strfry: enabled, without a
    # serviceUrl to check responses against).
    auth {
        enabled = false
    }

    # Neither outpost nor khatru offers permessage-deflate, and go-nostr's
    # client (the ingest driver) asks for it: off, so every relay reads and
    # writes the same bytes (strfry: on, with a sliding window).
    compression {
        enabled = false
    }
}
`

// strfryServing is the line strfry logs once it listens.
var strfryServing = regexp.MustCompile(`Started websocket server on (\S+)`)

// startStrfry serves the strfry binary at bin on an LMDB environment in
// dir, configured by strfryConf.
func startStrfry(bin, dir string) (*server, error) {
	db := filepath.Join(dir, "strfry-db")
	if err := os.MkdirAll(db, 0o700); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	var p int
	fmt.Sscan(port, &p)
	conf := filepath.Join(dir, "strfry.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, strfryConf, db+"/", p), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config="+conf, "relay")
	cmd.Dir = dir
	return launch(cmd, strfryServing, true)
}
