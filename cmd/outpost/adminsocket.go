package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/storage/store"
)

const socketName = "outpost.sock"

var errNoServer = errors.New("no outpost is running on this data dir")

type execRequest struct {
	Args []string `json:"args"`
}

type execResult struct {
	Output   string `json:"output"`   // the command's stdout
	Messages string `json:"messages"` // its stderr
	Error    string `json:"error,omitempty"`
}

// noEnv is the environment of a command run over the admin socket: the
// client resolved its arguments in its own.
func noEnv(string) string { return "" }

// listenAdmin serves admin commands on <dataDir>/outpost.sock (mode 0600:
// whoever can read the data dir may administer it).
func listenAdmin(dataDir string, svc *banlist.Service, st *store.Store, log *slog.Logger) (io.Closer, error) {
	path := filepath.Join(dataDir, socketName)
	if len(path) > 100 {
		return nil, fmt.Errorf("socket path too long for a unix socket: %s", path)
	}
	os.Remove(path) // a socket left by a crash; the database lock proves no one else serves it
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req execRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || len(req.Args) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var out, msgs bytes.Buffer
		res := execResult{}
		op, _, err := parseAdmin(req.Args, noEnv, &msgs)
		if err == nil {
			err = op(r.Context(), svc, &out, &msgs)
		}
		if err != nil {
			res.Error = cliError(err).Error()
		}
		res.Output, res.Messages = out.String(), msgs.String()
		log.Info("admin command", "command", strings.Join(req.Args[:min(2, len(req.Args))], " "), "ok", err == nil)
		json.NewEncoder(w).Encode(res)
	})}
	backup, backups := backupHandler(st, dataDir, log)
	mux := http.NewServeMux()
	mux.Handle("POST /backup", backup)
	mux.Handle("/", srv.Handler)
	srv.Handler = mux
	go srv.Serve(ln)
	return closerFunc(func() error { err := srv.Close(); backups(); return err }), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// execRemote runs args in the outpost serving dataDir; errNoServer when none does.
func execRemote(ctx context.Context, dataDir string, args []string) (execResult, error) {
	body, _ := json.Marshal(execRequest{Args: args})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://outpost/exec", bytes.NewReader(body))
	resp, err := adminClient(dataDir).Do(req)
	if err != nil {
		return execResult{}, errNoServer
	}
	defer resp.Body.Close()
	var res execResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return execResult{}, fmt.Errorf("admin socket: %w", err)
	}
	if res.Error != "" {
		return res, errors.New(res.Error)
	}
	return res, nil
}
