package intercept

import (
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// feed is a body whose Reads return the pieces sent on it, one per Read;
// closing it (or its channel) ends it.
type feed struct {
	pieces  chan string
	end     error // returned once pieces is closed
	waiting chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func newFeed(end error) *feed {
	return &feed{pieces: make(chan string), end: end, waiting: make(chan struct{}, 100), closed: make(chan struct{})}
}

func (f *feed) Read(p []byte) (int, error) {
	f.waiting <- struct{}{}
	select {
	case s, ok := <-f.pieces:
		if !ok {
			return 0, f.end
		}
		return copy(p, s), nil
	case <-f.closed:
		return 0, net.ErrClosed
	}
}

func (f *feed) Close() error { f.once.Do(func() { close(f.closed) }); return nil }

// send hands s to the reader and waits until it asks for more: s is then
// in the readahead's queue.
func (f *feed) send(t *testing.T, s string) {
	t.Helper()
	f.pieces <- s
	select {
	case <-f.waiting:
	case <-time.After(5 * time.Second):
		t.Fatal("readahead did not read on")
	}
}

// gateLog records holds and releases.
type gateLog struct {
	mu     sync.Mutex
	events []string
}

func (g *gateLog) hold()    { g.add("hold") }
func (g *gateLog) release() { g.add("release") }
func (g *gateLog) add(e string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := len(g.events); n == 0 || g.events[n-1] != e {
		g.events = append(g.events, e)
	}
}
func (g *gateLog) last() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.events) == 0 {
		return ""
	}
	return g.events[len(g.events)-1]
}

// TestReadaheadBatches: one Read returns every piece already read, without
// waiting for more; the gate is held while Read hands bytes out, released
// before Read waits and at the end.
func TestReadaheadBatches(t *testing.T) {
	f, g := newFeed(io.EOF), &gateLog{}
	r := newReadahead(f, g)
	defer r.Close()
	<-f.waiting
	for _, s := range []string{"one ", "two ", "three"} {
		f.send(t, s)
	}
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if got := string(buf[:n]); got != "one two three" || err != nil {
		t.Fatalf("Read = %q, %v; want the three pieces at once", got, err)
	}
	if g.last() != "hold" {
		t.Fatalf("gate %v after a Read with bytes; want held", g.events)
	}
	done := make(chan string)
	go func() { n, _ := r.Read(buf); done <- string(buf[:n]) }()
	select {
	case s := <-done:
		t.Fatalf("Read returned %q with nothing read", s)
	case <-time.After(50 * time.Millisecond):
	}
	if g.last() != "release" {
		t.Fatalf("gate %v while Read waits; want released", g.events)
	}
	f.send(t, "four")
	if s := <-done; s != "four" {
		t.Fatalf("Read = %q, want four", s)
	}
	close(f.pieces)
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("at the end Read = %d, %v; want 0, EOF", n, err)
	}
	if g.last() != "release" {
		t.Fatalf("gate %v at the end; want released", g.events)
	}
}

// TestReadaheadSmallReads: a p smaller than what is queued takes it in
// turns, in order, across chunk boundaries.
func TestReadaheadSmallReads(t *testing.T) {
	f := newFeed(io.EOF)
	r := newReadahead(f, nil)
	defer r.Close()
	<-f.waiting
	want := strings.Repeat("abcdefghij", 20<<10) // several chunks
	go func() {
		for i := 0; i < len(want); i += 7000 {
			f.pieces <- want[i:min(i+7000, len(want))]
		}
		close(f.pieces)
	}()
	got, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(r, 50<<10)))
	if err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	got = append(got, rest...)
	if string(got) != want || err != nil {
		t.Fatalf("read %d bytes (%v), want %d in order", len(got), err, len(want))
	}
}

// TestReadaheadError: the body's own error comes after its bytes.
func TestReadaheadError(t *testing.T) {
	boom := errors.New("upstream reset")
	f := newFeed(boom)
	r := newReadahead(f, nil)
	defer r.Close()
	<-f.waiting
	f.send(t, "partial")
	close(f.pieces)
	got, err := io.ReadAll(r)
	if string(got) != "partial" || !errors.Is(err, boom) {
		t.Fatalf("ReadAll = %q, %v; want partial, %v", got, err, boom)
	}
}

// TestReadaheadClose: Close ends a read of the body in flight, releases
// the gate, and the reading goroutine ends (Read then reports it closed).
func TestReadaheadClose(t *testing.T) {
	f, g := newFeed(io.EOF), &gateLog{}
	r := newReadahead(f, g)
	<-f.waiting
	f.send(t, "x")
	buf := make([]byte, 8)
	if n, _ := r.Read(buf); n != 1 {
		t.Fatalf("Read %d bytes, want 1", n)
	}
	r.Close()
	if g.last() != "release" {
		t.Fatalf("gate %v after Close; want released", g.events)
	}
	done := make(chan error)
	go func() { _, err := r.Read(buf); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Read after Close: nil error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reading goroutine did not end on Close")
	}
	if !slices.Contains(g.events, "hold") {
		t.Fatalf("gate never held: %v", g.events)
	}
}
