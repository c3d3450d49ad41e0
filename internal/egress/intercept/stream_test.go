package intercept

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStreamingBurstThenPause: a chunked body the upstream writes in a
// burst and then pauses reaches the client whole before the pause ends
// (the batching above and below TLS is released before the interceptor
// waits for the upstream), and single small chunks, each awaited by the
// client before the next is written, arrive one by one. HTTPS and HTTP.
func TestStreamingBurstThenPause(t *testing.T) {
	for _, tlsOn := range []bool{true, false} {
		t.Run(fmt.Sprint("tls=", tlsOn), func(t *testing.T) {
			release, ack, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
			burst := strings.Repeat("b", 300<<10)
			r := newRig(t, tlsOn, func(w http.ResponseWriter, _ *http.Request) {
				for i := 0; i < len(burst); i += 30 << 10 {
					w.Write([]byte(burst[i : i+30<<10]))
					w.(http.Flusher).Flush()
				}
				select {
				case <-release:
				case <-stop:
					return
				}
				for i := range 3 {
					fmt.Fprintf(w, "tick%d", i)
					w.(http.Flusher).Flush()
					select {
					case <-ack:
					case <-stop:
						return
					}
				}
			})
			t.Cleanup(func() { close(stop) }) // runs before the upstream's Close
			scheme := map[bool]string{true: "https", false: "http"}[tlsOn]
			resp, err := r.client(tlsOn).Get(scheme + "://example.com/stream")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got := make([]byte, len(burst))
			readWithin(t, "the burst", func() error { _, err := io.ReadFull(resp.Body, got); return err })
			if string(got) != burst {
				t.Fatal("burst corrupted")
			}
			close(release)
			for i := range 3 {
				tick := make([]byte, 5)
				readWithin(t, "a tick", func() error { _, err := io.ReadFull(resp.Body, tick); return err })
				if want := fmt.Sprintf("tick%d", i); string(tick) != want {
					t.Fatalf("got %q, want %q", tick, want)
				}
				ack <- struct{}{}
			}
		})
	}
}

// readWithin fails the test if read does not finish in 5 s (bytes held
// back by the interceptor) or fails.
func readWithin(t *testing.T, what string, read func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not arrive while the upstream waited", what)
	}
}

// TestAbortedDownloadEndsUpstream: a client that hangs up in the middle of
// an endless chunked body makes the interceptor stop reading ahead and
// close the upstream connection (the upstream's writes then fail).
func TestAbortedDownloadEndsUpstream(t *testing.T) {
	ended := make(chan struct{})
	r := newRig(t, true, func(w http.ResponseWriter, _ *http.Request) {
		defer close(ended)
		chunk := []byte(strings.Repeat("z", 16<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	resp, err := r.client(true).Get("https://example.com/endless")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream is still being read after the client left")
	}
}
