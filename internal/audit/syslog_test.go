package audit

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSyslogStreamsRecords: every record reaches a (UDP) syslog server.
func TestSyslogStreamsRecords(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	s, err := DialSyslog("udp://" + pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	l.SetHooks(Hooks{Line: s.Line})
	for range 3 {
		if err := l.Append("api", "", "k", map[string]string{"m": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	_ = s.Close()
	buf := make([]byte, 4096)
	for i := 1; i <= 3; i++ {
		_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(buf[:n]); !strings.Contains(got, "sbx-audit") || !strings.Contains(got, `"seq":`+string(rune('0'+i))) {
			t.Fatalf("syslog message %d: %q", i, got)
		}
	}
}

func TestDialSyslogRejectsBadTargets(t *testing.T) {
	for _, bad := range []string{"http://x:1", "udp://", "nonsense"} {
		if _, err := DialSyslog(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
