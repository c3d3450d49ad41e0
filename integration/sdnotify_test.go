package integration

import (
	"net"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSystemdReadiness runs a real sbx serve as systemd runs a Type=notify
// unit (sbx service install): NOTIFY_SOCKET names a datagram socket, and the
// daemon must send READY=1 there once it serves — a request right after it
// is answered — and STOPPING=1 when it stops. (This host has no systemd as
// PID 1; this is the protocol's service side, end to end.)
func TestSystemdReadiness(t *testing.T) {
	requirements(t, "runsc")
	sock := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := startDaemonEnv(t, "runsc", "", []string{"NOTIFY_SOCKET=" + sock})
	if got := recvNotify(t, c, 30*time.Second); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	resp, err := http.Get(d.url + "/health")
	if err != nil {
		t.Fatalf("daemon not serving after READY=1: %v", err)
	}
	resp.Body.Close()
	d.stop(syscall.SIGTERM)
	if got := recvNotify(t, c, 5*time.Second); got != "STOPPING=1" {
		t.Fatalf("notification at stop %q, want STOPPING=1", got)
	}
}

// recvNotify reads one datagram from systemd's side of the socket.
func recvNotify(t *testing.T, c *net.UnixConn, within time.Duration) string {
	t.Helper()
	buf := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(within))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no notification within %v: %v", within, err)
	}
	return string(buf[:n])
}
