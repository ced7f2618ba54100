package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// pprofEnv names the address a profiled server serves net/http/pprof on.
const pprofEnv = "OUTPOST_BENCH_PPROF"

func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	return mux
}

// pprofSource is added to cmd/outpost (with go build -overlay, never to the
// tree) when the benchmark profiles: outpost itself has no pprof endpoint.
const pprofSource = `package main

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("` + pprofEnv + `")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		os.Stderr.WriteString("pprof: " + err.Error() + "\n")
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go http.Serve(ln, mux)
}
`

// pprofOverlay writes the go build -overlay file that adds pprofSource to
// the cmd/outpost package under srcDir, and returns its path.
func pprofOverlay(tmp, srcDir string) (string, error) {
	// One file per build: the builds run at once.
	src := filepath.Join(tmp, fmt.Sprintf("benchpprof-%d.go", time.Now().UnixNano()))
	if err := os.WriteFile(src, []byte(pprofSource), 0o644); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(filepath.Join(srcDir, "cmd", "outpost", "zz_benchpprof.go"))
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: src}})
	overlay := filepath.Join(tmp, fmt.Sprintf("overlay-%d.json", time.Now().UnixNano()))
	return overlay, os.WriteFile(overlay, b, 0o644)
}

// freeAddr is a loopback address nobody listens on right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// profiler takes CPU profiles of one server under load: servers started
// with its env serve pprof on its address.
type profiler struct{ addr string }

// newProfiler is a profiler when on, else nil (whose methods do nothing).
func newProfiler(on bool) (*profiler, error) {
	if !on {
		return nil, nil
	}
	addr, err := freeAddr()
	return &profiler{addr}, err
}

func (p *profiler) env() []string {
	if p == nil {
		return nil
	}
	return []string{pprofEnv + "=" + p.addr}
}

// during profiles the CPU into path for a load of d about to start (a
// second in, to a second before its end); the channel gets the outcome.
func (p *profiler) during(d time.Duration, path string) <-chan error {
	return p.after(nil, time.Second, d-2*time.Second, path)
}

// after profiles the CPU into path for d, starting after wait unless
// cancel is closed first (then it takes none); the channel gets the
// outcome.
func (p *profiler) after(cancel <-chan struct{}, wait, d time.Duration, path string) <-chan error {
	done := make(chan error, 1)
	if p == nil {
		done <- nil
		return done
	}
	go func() {
		select {
		case <-time.After(wait):
			done <- cpuProfile(p.addr, d, path)
		case <-cancel:
			done <- nil
		}
	}()
	return done
}

// cpuProfile fetches a CPU profile of d from the pprof server at addr into path.
func cpuProfile(addr string, d time.Duration, path string) error {
	client := &http.Client{Timeout: d + time.Minute}
	resp, err := client.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, max(1, int(d.Seconds()))))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func waitForSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
	<-ch
}
