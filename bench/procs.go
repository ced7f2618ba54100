package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a process serving HTTP that printed "serving on <url>".
type server struct {
	url  string
	cmd  *exec.Cmd
	logs *bytes.Buffer
}

var servingOn = regexp.MustCompile(`serving on http://(\S+)`)

// startServer starts bin and waits for it to print "serving on <url>".
func startServer(bin string, args []string, env ...string) (*server, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return launch(cmd, servingOn, false)
}

// launch starts cmd and waits until a line of its stdout (of its stderr,
// when onStderr) matches ready, whose group is the host:port it serves on.
func launch(cmd *exec.Cmd, ready *regexp.Regexp, onStderr bool) (*server, error) {
	logs := &bytes.Buffer{}
	pipe := cmd.StdoutPipe
	if onStderr {
		pipe = cmd.StderrPipe
	} else {
		cmd.Stderr = logs
	}
	out, err := pipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found, ended := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if onStderr && logs.Len() < 1<<16 {
				logs.WriteString(sc.Text() + "\n")
			}
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-found:
		return &server{url: "http://" + u, cmd: cmd, logs: logs}, nil
	case <-ended:
	case <-time.After(2 * time.Minute):
	}
	cmd.Process.Kill()
	cmd.Wait()
	<-ended
	return nil, fmt.Errorf("%s did not start:\n%s", cmd.Path, logs)
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
	}
}

func (s *server) ws() string { return "ws" + strings.TrimPrefix(s.url, "http") }

// memory is the process's resident set now and at its peak, in bytes.
func (s *server) memory() (rss, peak int64) {
	m := s.mem()
	return m.RSS, m.Peak
}

// mem is what the process holds in memory now, in bytes.
type mem struct {
	RSS, Peak  int64
	Anon, File int64 // anonymous (heap, stacks) and file-backed (mapped files) parts of RSS
}

func (s *server) mem() mem { return procMem(s.cmd.Process.Pid) }

func procMem(pid int) mem {
	var m mem
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb << 10
		case "VmHWM:":
			m.Peak = kb << 10
		case "RssAnon:":
			m.Anon = kb << 10
		case "RssFile:", "RssShmem:":
			m.File += kb << 10
		}
	}
	return m
}

// runJSON runs bin with args and decodes its JSON stdout into v.
func runJSON(v any, bin string, args ...string) error {
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String())
	}
	return json.Unmarshal(out.Bytes(), v)
}

var httpClient = &http.Client{Timeout: time.Minute}

// fetch GETs url and returns the body and ETag.
func fetch(url string, header ...string) ([]byte, string, error) {
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.Header.Get("ETag"), err
}
