package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestNewFailureClosesWhatItOpened: New, in-process, fails with a clear
// error when a piece is missing (here the agent binary), and closes what
// it had opened — the store, the audit log, the DNS filter's and the
// guard's sockets: a second New on the same data dir and ports gets just
// as far instead of finding them taken.
func TestNewFailureClosesWhatItOpened(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--agent", filepath.Join(dir, "no-agent"), "--audit-anchor-dir", "none",
		"--uplink", "none", "--dns-upstream", "127.0.0.1:53", "--dns-port", freePort(t), "--guard-port", freePort(t)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := 0; i < 2; i++ {
		cfg, err := ParseFlags(args)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(context.Background(), cfg, log)
		if err == nil {
			d.Close()
			t.Fatal("New succeeded without an agent binary")
		}
		if !strings.Contains(err.Error(), "sbx-agent binary") {
			t.Fatalf("New #%d = %v, want the missing agent named", i+1, err)
		}
	}
}

// TestParseFlagsDefaults: the flags keep their documented defaults.
func TestParseFlagsDefaults(t *testing.T) {
	cfg, err := ParseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.listen != "127.0.0.1:3000" || cfg.dataDir != "/var/lib/sbx" || cfg.templatesDir != "/var/lib/sbx/templates" ||
		cfg.runtime != "runsc" || cfg.maxCreating != 8 || cfg.obs.anchorDir != DefaultAnchorDir {
		t.Fatalf("defaults changed: %+v", cfg)
	}
	if _, err := ParseFlags([]string{"stray"}); err == nil {
		t.Fatal("a stray argument was accepted")
	}
}
