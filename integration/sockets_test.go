package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdTCP (python, in the background) holds 1000 TCP connections over
// loopback written full, nobody reading: all of a 128 MiB sandbox's socket
// memory bound (memoryMB/16, 22-socket-buffer-limit.patch) and, with each
// socket's guarantee past it, more than the bound and the init's reserve
// together; /tmp/held once they are.
const holdTCP = `cat > /tmp/hold.py <<'PY'
import socket, time
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1024)
cs, sent = [], 0
for i in range(1000):
    c = socket.create_connection(l.getsockname()); a, _ = l.accept()
    cs.append((c, a)); c.setblocking(False)
    try:
        while True: sent += c.send(bytes(1 << 20))
    except BlockingIOError: pass
open('/tmp/held', 'w').write(str(sent))
time.sleep(600)
PY
nohup python3 /tmp/hold.py >/tmp/hold.log 2>&1 & echo $! >/tmp/hold.pid
for i in $(seq 300); do [ -s /tmp/held ] && break; sleep 0.1; done; echo held $(cat /tmp/held) bytes`

// parallelFiles is how many 1 MiB files go up and down at once in each
// round of TestSocketBoundKeepsAgent: more connections to the agent than
// the daemon's proxy keeps idle between rounds, so some are new ones made
// while the bound is held, and more data in flight to the agent than its
// reserve holds, so that its connections drop segments and must recover
// (the segment that fills a gap must always be taken).
const parallelFiles = 4

// TestSocketBoundKeepsAgent (runsc): while a process holds all of the
// sandbox's socket memory bound, the agent (the sandbox's init, whose
// sockets, and the connections made to its listener, have a reserve of
// their own past the bound) still serves: commands run, and parallelFiles
// files of 1 MiB go up and down at once through the file API, over new
// connections too, each round within 20 s; then the holder is killed and
// the host cgroup never reached its limit.
func TestSocketBoundKeepsAgent(t *testing.T) {
	sb := startDaemon(t, "runsc", "").create(map[string]any{"memoryMB": 128})
	if out, code, err := sb.runErr("user", holdTCP, 60*time.Second); err != nil || code != 0 {
		t.Fatalf("hold the sockets: %q %d %v", out, code, err)
	} else {
		t.Logf("1000 TCP connections: %s", strings.TrimSpace(out))
	}
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		if out, code, err := sb.runErr("user", "seq 20000 | md5sum", 10*time.Second); err != nil || code != 0 || !strings.Contains(out, "-") {
			t.Fatalf("command with the bound held: %q %d %v", out, code, err)
		}
		if err := sb.filesInParallel(i); err != nil {
			t.Fatalf("round %d with the bound held: %v", i, err)
		}
		if d := time.Since(t0); d > 20*time.Second {
			t.Fatalf("command and %d files of 1 MiB up and down took %v with the bound held", parallelFiles, d)
		} else {
			t.Logf("round %d: command, %d files of 1 MiB up and down in %v", i, parallelFiles, d)
		}
	}
	if out, code, err := sb.runErr("user", "kill $(cat /tmp/hold.pid) && cat /tmp/hold.log", 20*time.Second); err != nil || code != 0 {
		t.Fatalf("kill the holder: %q %d %v", out, code, err)
	}
	sb.usableAfter(t)
	logCgroup(t, sb.ID)
	noHostOOM(t, sb.ID, true)
}

// filesInParallel uploads parallelFiles distinct files of 1 MiB at once,
// then downloads them at once and compares; each request has 30 s.
func (s *sandbox) filesInParallel(round int) error {
	errs := make([]error, parallelFiles)
	each := func(f func(i int) error) error {
		var wg sync.WaitGroup
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = f(i) }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	body := func(i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("%02d-%02d-012345678\n", round, i)), 64<<10)
	}
	path := func(i int) string { return fmt.Sprintf("/home/user/up%d", i) }
	if err := each(func(i int) error {
		code, msg, err := s.filesTimed("POST", path(i), body(i))
		if err != nil || code != 200 {
			return fmt.Errorf("upload %d: %d %s %v", i, code, tail(msg, 200), err)
		}
		return nil
	}); err != nil {
		return err
	}
	return each(func(i int) error {
		code, got, err := s.filesTimed("GET", path(i), nil)
		if err != nil || code != 200 || got != string(body(i)) {
			return fmt.Errorf("download %d: %d, %d bytes, %v", i, code, len(got), err)
		}
		return nil
	})
}

// filesTimed is upload/download through /files (as user) within 30 s.
func (s *sandbox) filesTimed(method, path string, body []byte) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, s.d.url+"/files?"+url.Values{"path": {path}, "username": {"user"}}.Encode(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("E2b-Sandbox-Id", s.ID)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	req.Header.Set("X-Access-Token", s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
