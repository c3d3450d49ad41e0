// Package integration runs the real daemon (bin/sbx serve) on real runtimes
// and drives it over HTTP like a user would. It needs root, the runtimes and
// a built base template (scripts/install.sh); without them it skips, except
// under CI=true where a missing piece is a failure.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const apiKey = "e2b_00000000000000000000000000000000000000aa"

// daemon is one running sbx serve.
type daemon struct {
	t       testing.TB
	url     string
	dataDir string
	cmd     *exec.Cmd
	log     *syncBuffer
	args    []string
	// netPrefix names its links, netns files and nftables table.
	netPrefix string
	// exited is closed once the daemon process has exited (cmd.Wait has
	// returned; cmd.ProcessState may be read after it).
	exited chan struct{}
}

// syncBuffer is a bytes.Buffer safe for the daemon's output goroutines and
// the test reading it concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// requirements skips (or fails under CI) when the host cannot run the suite.
func requirements(t testing.TB, runtimes ...string) (sbxBin, templates string) {
	t.Helper()
	missing := func(format string, a ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: "+format, a...)
		}
		t.Skipf(format, a...)
	}
	if os.Geteuid() != 0 {
		missing("integration tests need root")
	}
	templates = os.Getenv("SBX_TEMPLATES_DIR")
	if templates == "" {
		templates = "/var/lib/sbx/templates"
	}
	if _, err := os.Stat(filepath.Join(templates, "base")); err != nil {
		missing("no base template in %s (run scripts/install.sh)", templates)
	}
	sbxBin, _ = filepath.Abs("../bin/sbx")
	if _, err := os.Stat(sbxBin); err != nil {
		missing("no %s (go build -o bin/ ./cmd/sbx ./cmd/sbx-agent)", sbxBin)
	}
	for _, rt := range runtimes {
		bin := rt
		if rt == "runsc" {
			bin = runscBinary()
		}
		if _, err := exec.LookPath(bin); err != nil {
			missing("runtime %s not installed", rt)
		}
	}
	return sbxBin, templates
}

// runscBinary is the runsc the daemons run: SBX_RUNSC when set (a build
// other than the installed one, e.g. scripts/build-runsc.sh's output, passed
// as serve --runsc), else the installed /opt/sbx/bin/runsc.
func runscBinary() string {
	if bin := os.Getenv("SBX_RUNSC"); bin != "" {
		return bin
	}
	return "/opt/sbx/bin/runsc"
}

// startDaemon runs sbx serve with a fresh data dir (or dataDir if given).
func startDaemon(t testing.TB, runtime, dataDir string, extra ...string) *daemon {
	t.Helper()
	return startDaemonEnv(t, runtime, dataDir, nil, extra...)
}

// startDaemonEnv is startDaemon with extra environment variables (e.g.
// SBX_FAILPOINTS, PATH) for the daemon process.
func startDaemonEnv(t testing.TB, runtime, dataDir string, env []string, extra ...string) *daemon {
	t.Helper()
	sbxBin, templates := requirements(t, runtime)
	if dataDir == "" {
		dataDir = newDataDir(t)
	}
	// The free port can be taken by another process before the daemon
	// binds it (a shared host): start again on a fresh one.
	for attempt := 0; ; attempt++ {
		d := launchDaemon(t, sbxBin, templates, runtime, dataDir, env, extra)
		err := d.waitHealthy()
		if err == nil {
			return d
		}
		if attempt < 2 && strings.Contains(d.log.String(), "address already in use") {
			continue
		}
		t.Fatalf("%v:\n%s", err, d.log)
	}
}

// newDataDir is a daemon data dir that lives as long as t: daemons started
// on it later (restarts) must be stopped before t ends.
func newDataDir(t testing.TB) string {
	dataDir := t.TempDir()
	// Sandbox root on userns runtimes is an unprivileged host uid that must
	// traverse to its rootfs: open the test dirs' parents (0711).
	for p := filepath.Dir(dataDir); strings.HasPrefix(p, os.TempDir()+"/"); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o711)
	}
	t.Cleanup(func() {
		_ = syscall.Unmount(filepath.Join(dataDir, "run", "runtime", "runsc", "null-netns"), syscall.MNT_DETACH)
		_ = syscall.Unmount(filepath.Join(dataDir, "run"), syscall.MNT_DETACH) // the daemon's tmpfs
	})
	return dataDir
}

// launchDaemon starts one sbx serve process on a fresh port.
func launchDaemon(t testing.TB, sbxBin, templates, runtime, dataDir string, env, extra []string) *daemon {
	t.Helper()
	addr := freeAddr(t)
	d := &daemon{t: t, url: "http://" + addr, dataDir: dataDir, log: &syncBuffer{}, exited: make(chan struct{})}
	d.netPrefix = envOr("SBX_IT_NET_PREFIX", "sbi")
	d.args = append([]string{"serve", "--listen", addr, "--data-dir", dataDir, "--templates-dir", templates,
		"--runtime", runtime, "--subnet", envOr("SBX_IT_SUBNET", "10.202.0.0/16"), "--net-prefix", d.netPrefix,
		"--uplink", "none", "--audit-anchor-dir", anchorDir(dataDir)}, extra...) // never turn forwarding on for the host's real uplink
	if bin := os.Getenv("SBX_RUNSC"); bin != "" {
		d.args = append(d.args, "--runsc", bin)
	}
	d.cmd = exec.Command(sbxBin, d.args...)
	d.cmd.Env = append(append(os.Environ(), "SBX_API_KEY="+apiKey), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		d.stop(syscall.SIGTERM)
		d.reapAndCheck()
	})
	return d
}

// anchorDir is where a test daemon on dataDir keeps its audit signing key
// and checkpoints: beside the data dir in the test's temp tree (removed with
// it), not the host's /etc/sbx/audit.
func anchorDir(dataDir string) string {
	return filepath.Join(filepath.Dir(dataDir), filepath.Base(dataDir)+"-audit-anchor")
}

// envOr is the environment variable k, or def (concurrent runs on one host
// set their own subnet and link prefix).
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitHealthy waits up to 30 s for the daemon to answer, failing early if
// it exits.
func (d *daemon) waitHealthy() error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			return fmt.Errorf("daemon exited at start (%v)", d.cmd.ProcessState)
		default:
		}
		if resp, err := http.Get(d.url + "/health"); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("daemon did not answer within 30 s")
}

// stop signals the daemon and waits for it (SIGKILL simulates a crash).
func (d *daemon) stop(sig syscall.Signal) {
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(sig)
	select {
	case <-d.exited:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	if d.t.Failed() {
		d.t.Logf("daemon log, its warnings and errors:\n%s\nand its end:\n%s", problems(d.log.String(), 8000), tail(d.log.String(), 4000))
	}
}

// problems are the WARN and ERROR lines of a daemon log (their last n bytes):
// a failure's cause is often older than the log's tail.
func problems(log string, n int) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			b.WriteString(l + "\n")
		}
	}
	return tail(b.String(), n)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// api does one REST call and decodes the JSON answer into out (if non-nil).
func (d *daemon) api(method, path string, body any, out any) int {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.url+path, rd)
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			d.t.Fatalf("%s %s: decode %q: %v", method, path, b, err)
		}
	}
	return resp.StatusCode
}

// deleteQuiet removes a sandbox if its daemon is still up (cleanup).
func (d *daemon) deleteQuiet(id string) {
	req, _ := http.NewRequest("DELETE", d.url+"/sandboxes/"+id, nil)
	req.Header.Set("X-API-Key", apiKey)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

// sandbox is a created sandbox.
type sandbox struct {
	d     *daemon
	ID    string `json:"sandboxID"`
	Token string `json:"envdAccessToken"`
}

func (d *daemon) create(body map[string]any) *sandbox {
	d.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if _, ok := body["templateID"]; !ok {
		body["templateID"] = "base"
	}
	sb := &sandbox{d: d}
	if code := d.api("POST", "/v2/sandboxes", body, sb); code != 201 {
		d.t.Fatalf("create: status %d\n%s", code, tail(d.log.String(), 3000))
	}
	d.t.Cleanup(func() { sb.d.deleteQuiet(sb.ID) })
	return sb
}

// run executes a shell command in the sandbox via the agent's Connect API
// (JSON, server-streaming envelopes) and returns stdout+stderr and exit code.
func (s *sandbox) run(user, cmd string, timeout time.Duration) (string, int) {
	s.d.t.Helper()
	out, code, err := s.runErr(user, cmd, timeout)
	if err != nil {
		s.d.t.Fatalf("run %q: %v", cmd, err)
	}
	return out, code
}

func (s *sandbox) runErr(user, cmd string, timeout time.Duration) (string, int, error) {
	var out strings.Builder
	code, err := s.exec(procReq{user: user, cmd: cmd, timeout: timeout}, &out)
	return out.String(), code, err
}

// procReq is one process start through the daemon's proxy.
type procReq struct {
	user, cmd, cwd string
	env            map[string]string
	timeout        time.Duration // the process's lifetime (Connect-Timeout-Ms)
}

// exec starts p in the sandbox via the agent's Connect API (JSON,
// server-streaming envelopes), copies stdout+stderr to out and returns the
// exit code.
func (s *sandbox) exec(p procReq, out io.Writer) (int, error) {
	proc := map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", p.cmd}}
	if p.cwd != "" {
		proc["cwd"] = p.cwd
	}
	if p.env != nil {
		proc["envs"] = p.env
	}
	msg, _ := json.Marshal(map[string]any{"process": proc, "stdin": false})
	env := append([]byte{0, 0, 0, 0, 0}, msg...)
	env[1], env[2], env[3], env[4] = byte(len(msg)>>24), byte(len(msg)>>16), byte(len(msg)>>8), byte(len(msg))
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout+10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.d.url+"/process.Process/Start", bytes.NewReader(env))
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Connect-Timeout-Ms", fmt.Sprint(p.timeout.Milliseconds()))
	req.Header.Set("E2b-Sandbox-Id", s.ID)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	req.Header.Set("X-Access-Token", s.Token)
	if p.user != "" {
		req.SetBasicAuth(p.user, "")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return -1, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return readEventsTo(resp.Body, out)
}

// readEventsTo decodes Connect envelopes until the end-stream frame, copying
// output to out.
func readEventsTo(r io.Reader, out io.Writer) (int, error) {
	code := -1
	for {
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return code, fmt.Errorf("stream ended without end-stream frame: %w", err)
		}
		n := int(hdr[1])<<24 | int(hdr[2])<<16 | int(hdr[3])<<8 | int(hdr[4])
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return code, err
		}
		if hdr[0]&2 != 0 {
			var end struct {
				Error *struct{ Code, Message string } `json:"error"`
			}
			_ = json.Unmarshal(body, &end)
			if end.Error != nil {
				return code, fmt.Errorf("%s: %s", end.Error.Code, end.Error.Message)
			}
			return code, nil
		}
		var ev struct {
			Event struct {
				Data *struct{ Stdout, Stderr []byte } `json:"data"`
				End  *struct {
					ExitCode int `json:"exitCode"`
				} `json:"end"`
			} `json:"event"`
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			return code, err
		}
		if d := ev.Event.Data; d != nil {
			_, _ = out.Write(d.Stdout)
			_, _ = out.Write(d.Stderr)
		}
		if e := ev.Event.End; e != nil {
			code = e.ExitCode
		}
	}
}
