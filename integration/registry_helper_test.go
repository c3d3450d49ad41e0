package integration

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// ociRegistry is Debian's docker-registry (the CNCF distribution registry)
// run by the test on a loopback port with its own config and storage, not
// the system service.
type ociRegistry struct {
	t       *testing.T
	addr    string // 127.0.0.1:port
	dir     string
	cmd     *exec.Cmd
	log     *syncBuffer
	stopped chan struct{}
}

// startRegistry starts a registry (missing docker-registry skips, or
// fails under CI=true).
func startRegistry(t *testing.T) *ociRegistry {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI: docker-registry not installed (apt-get install docker-registry)")
		}
		t.Skip("docker-registry not installed")
	}
	r := &ociRegistry{t: t, dir: t.TempDir(), addr: freeAddr(t)}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n",
		filepath.Join(r.dir, "data"), r.addr)
	if err := os.WriteFile(filepath.Join(r.dir, "config.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start(bin)
	t.Cleanup(r.stop)
	return r
}

func (r *ociRegistry) start(bin string) {
	r.t.Helper()
	r.log = &syncBuffer{}
	r.cmd = exec.Command(bin, "serve", filepath.Join(r.dir, "config.yml"))
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.stopped = make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(r.stopped) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err := http.Get("http://" + r.addr + "/v2/"); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("registry did not start:\n%s", r.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// restart starts the registry again on the same address and storage.
func (r *ociRegistry) restart() { r.start(r.cmd.Path) }

func (r *ociRegistry) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.stopped:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.stopped
}
