package interpreter

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// flushRecorder records the body as it stood at every Flush.
type flushRecorder struct {
	*httptest.ResponseRecorder
	mu      sync.Mutex
	flushed []string
}

func (f *flushRecorder) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed = append(f.flushed, f.Body.String())
}

// TestStreamFlushes: lines already waiting leave in one flush with the
// headers, a line that comes alone is flushed within lineWait (streaming
// stays prompt), and the last lines go with the end of the response, not a
// flush of their own.
func TestStreamFlushes(t *testing.T) {
	defer func(w time.Duration) { lineWait = w }(lineWait)
	lineWait = 50 * time.Millisecond // lines already waiting are all read by then, even on a loaded machine
	out := make(chan line, 8)
	out <- countLine(1)
	out <- streamLine("stdout", "a\n", time.Now())
	out <- streamLine("stdout", "b\n", time.Now())
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	done := make(chan struct{})
	go func() { stream(rec, out); close(done) }()
	waitFlushes(t, rec, 1)
	sent := time.Now()
	out <- streamLine("stdout", "c\n", time.Now())
	waitFlushes(t, rec, 2)
	if d := time.Since(sent); d > 2*time.Second {
		t.Errorf("a lone line flushed after %v, want about %v", d, lineWait)
	}
	close(out)
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := rec.flushed; len(got) != 2 || strings.Count(got[0], "\n") != 3 || strings.Count(got[1], "\n") != 4 {
		t.Fatalf("flushes: %q", got)
	}
	if body := rec.Body.String(); strings.Count(body, "\n") != 5 || !strings.HasSuffix(body, `{"type":"end_of_execution"}`+"\n") {
		t.Fatalf("body: %q", body)
	}

	// A cell that ended before its lines were read is one write: no flush
	// at all, the headers and lines go with the end of the response.
	out = make(chan line, 8)
	out <- countLine(2)
	out <- streamLine("stdout", "d\n", time.Now())
	close(out)
	rec = &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	stream(rec, out)
	if len(rec.flushed) != 0 || strings.Count(rec.Body.String(), "\n") != 3 {
		t.Fatalf("flushes %q, body %q", rec.flushed, rec.Body.String())
	}
}

// TestStreamHeadersOnTime: with no line to carry them (a busy context, a
// kernel starting), the headers are flushed alone after headerWait, so the
// SDK's request timer stops; keepalives follow.
func TestStreamHeadersOnTime(t *testing.T) {
	defer func(h, k time.Duration) { headerWait, keepaliveEvery = h, k }(headerWait, keepaliveEvery)
	headerWait, keepaliveEvery = 10*time.Millisecond, 200*time.Millisecond
	out := make(chan line)
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	done := make(chan struct{})
	start := time.Now()
	go func() { stream(rec, out); close(done) }()
	waitFlushes(t, rec, 1)
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Errorf("headers after %v, want about %v", d, headerWait)
	}
	waitFlushes(t, rec, 2)
	close(out)
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.flushed[0] != "" || rec.flushed[1] != `{"type":"keepalive"}`+"\n" {
		t.Fatalf("flushes: %q", rec.flushed)
	}
}

func waitFlushes(t *testing.T, f *flushRecorder, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		f.mu.Lock()
		got := len(f.flushed)
		f.mu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("fewer than %d flushes in 5 s", n)
}
