package sdnotify

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// listen opens a datagram socket as systemd's notify socket is, at path.
func listen(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recv reads one datagram within a second.
func recv(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestNotify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	c := listen(t, path)
	abstract := "@sbx-sdnotify-test-" + filepath.Base(t.TempDir())
	ac := listen(t, "\x00"+abstract[1:])
	for _, tc := range []struct {
		name, socket string
		conn         *net.UnixConn
	}{
		{"path", path, c},
		{"abstract", abstract, ac},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NOTIFY_SOCKET", tc.socket)
			sent, err := Notify(Ready)
			if !sent || err != nil {
				t.Fatalf("Notify = %v, %v", sent, err)
			}
			if got := recv(t, tc.conn); got != Ready {
				t.Fatalf("received %q, want %q", got, Ready)
			}
		})
	}
}

func TestNotifyWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if sent, err := Notify(Ready); sent || err != nil {
		t.Fatalf("Notify without NOTIFY_SOCKET = %v, %v; want false, nil", sent, err)
	}
}

func TestNotifyMissingSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent"))
	if sent, err := Notify(Ready); !sent || err == nil {
		t.Fatalf("Notify to a missing socket = %v, %v; want true and an error", sent, err)
	}
}
