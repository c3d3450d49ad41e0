package front

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sbx-dev/sbx/internal/store"
)

// TestForwardFullDuplex: a node that answers its headers before reading
// the request body (a stream starting) still gets the whole body through
// the front, and the client the whole answer. Without full duplex the
// front's server would discard and close the body once the headers went
// out, under the transport still sending it.
func TestForwardFullDuplex(t *testing.T) {
	n := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		_, _ = io.Copy(w, r.Body) // echo, after the headers
	}))
	t.Cleanup(n.Close)
	d := &fakeDir{nodes: []*store.Node{node("n1", n.URL, 0)}, owners: map[string][2]string{idA: {"n1", "running"}}}
	fs := httptest.NewServer(newFront(d))
	t.Cleanup(fs.Close)
	body := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB: under the server's post-handler discard bound
	for range 20 {
		req, _ := http.NewRequest(http.MethodPost, fs.URL+"/process.Process/Start", bytes.NewReader(body))
		req.Header.Set("E2b-Sandbox-Id", idA)
		req.Header.Set("E2b-Sandbox-Port", "49983")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
			t.Fatalf("status %d, %d of %d bytes echoed, err %v", resp.StatusCode, len(got), len(body), err)
		}
	}
}
