package files

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFilesNeverHang: a FIFO or a unix socket a sandbox's process
// planted (where a client downloads or uploads, or a name it swaps in) is
// refused with 400 at once, read or written, as root or as the user.
// Before, the agent opened a FIFO with a blocking open(2): a download or an
// upload of it never answered (its client held until its own timeout) and
// the agent's thread stayed blocked in the open after the client left, an
// upload holding the path's write lock too, so every later upload of that
// path waited behind it. Devices still read and write (/dev/null).
func TestSpecialFilesNeverHang(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(e.home, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o666))
	must(t, os.Chown(fifo, 1000, 1000))
	sock := filepath.Join(e.home, "sock")
	l, err := net.Listen("unix", sock)
	must(t, err)
	defer l.Close()
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	tests := []struct {
		name, method, query string
		status              int
	}{
		{"download fifo", "GET", "path=" + fifo, 400},
		{"download fifo as root", "GET", "username=root&path=" + fifo, 400},
		{"upload fifo", "POST", "path=" + fifo, 400},
		{"upload fifo as root", "POST", "username=root&path=" + fifo, 400},
		{"download socket", "GET", "username=root&path=" + sock, 400},
		{"download device", "GET", "path=/dev/null", 200},
		{"upload device", "POST", "username=root&path=/dev/null", 200},
		{"upload fifo again", "POST", "path=" + fifo, 400}, // no lock left held
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			var status int
			var body []byte
			go func() {
				defer close(done)
				var in *bytes.Buffer
				if tt.method == "POST" {
					in = bytes.NewBufferString("data")
				}
				status, body = doBody(t, tt.method, e.url+"/files?"+tt.query, octet, in)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				unblock(t, fifo) // let the blocked open through, so that the server can close
				<-done
				t.Fatalf("%s %s: no answer in 10 s (blocked on the special file)", tt.method, tt.query)
			}
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, body, tt.status)
			}
		})
	}
}

// doBody is do with a body that may be nil.
func doBody(t testing.TB, method, url string, hdr map[string]string, in *bytes.Buffer) (int, []byte) {
	if in == nil {
		s, _, b := do(t, method, url, hdr, nil)
		return s, b
	}
	s, _, b := do(t, method, url, hdr, in)
	return s, b
}

// unblock opens both ends of fifo until the request in flight is done, so a
// blocked open(2) of it (either end) returns.
func unblock(t testing.TB, fifo string) {
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	must(t, err)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { f.Close() })
}
