package intercept

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"
)

// writeLog is a conn that records each Write it is given.
type writeLog struct {
	net.Conn
	writes [][]byte
	fail   error
}

func (w *writeLog) Write(p []byte) (int, error) {
	if w.fail != nil {
		return 0, w.fail
	}
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func (w *writeLog) sizes() []int {
	var s []int
	for _, b := range w.writes {
		s = append(s, len(b))
	}
	return s
}

// TestBatchConn: released, every Write goes straight through; held, writes
// are gathered and passed on in batchMax pieces, the rest on release, in
// order.
func TestBatchConn(t *testing.T) {
	wl := &writeLog{}
	c := newBatchConn(wl)
	c.Write([]byte("a"))
	c.Write([]byte("b"))
	if got := wl.sizes(); len(got) != 2 {
		t.Fatalf("released: writes %v, want two of 1 byte", got)
	}
	c.hold()
	var want bytes.Buffer
	for i := range 40 {
		p := bytes.Repeat([]byte{byte('c' + i%20)}, 4<<10+i) // 40 writes, ~170 KiB
		want.Write(p)
		if n, err := c.Write(p); n != len(p) || err != nil {
			t.Fatalf("held Write = %d, %v", n, err)
		}
	}
	if got := wl.sizes()[2:]; len(got) != 2 || got[0] != batchMax || got[1] != batchMax {
		t.Fatalf("held: writes %v, want two of %d so far", got, batchMax)
	}
	c.release()
	got := wl.sizes()[2:]
	if len(got) != 3 || got[2] != want.Len()-2*batchMax {
		t.Fatalf("after release: writes %v, want the rest in one", got)
	}
	if all := bytes.Join(wl.writes[2:], nil); !bytes.Equal(all, want.Bytes()) {
		t.Fatal("bytes out of order")
	}
	c.Write([]byte("z"))
	if n := len(wl.writes); n != 6 || string(wl.writes[5]) != "z" {
		t.Fatalf("released again: %d writes, want the 1 byte straight through", n)
	}
}

// TestBatchConnError: a failed write of a batch fails every later Write;
// Close writes what was gathered first.
func TestBatchConnError(t *testing.T) {
	wl := &writeLog{}
	c := newBatchConn(wl)
	c.hold()
	c.Write([]byte("held"))
	c.release()
	if len(wl.writes) != 1 {
		t.Fatalf("release: %d writes", len(wl.writes))
	}
	c.hold()
	c.Write([]byte("doomed"))
	wl.fail = errors.New("reset")
	c.release()
	if _, err := c.Write([]byte("next")); err == nil {
		t.Fatal("Write after a failed batch: nil error")
	}
}

// TestBatchConnCloseFlushes: Close passes on what a held conn gathered.
func TestBatchConnCloseFlushes(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	wl := &writeLog{Conn: a}
	c := newBatchConn(wl)
	c.hold()
	c.Write([]byte("last words"))
	c.Close()
	if len(wl.writes) != 1 || string(wl.writes[0]) != "last words" {
		t.Fatalf("Close: writes %q", wl.writes)
	}
}

// TestBatchConnCloseBreaksWrite: Close during a Write the peer does not
// read (held or not) returns at once and the Write fails, as with a bare
// tls.Conn: a stalled sandbox cannot hang the interceptor's Close.
func TestBatchConnCloseBreaksWrite(t *testing.T) {
	for _, held := range []bool{false, true} {
		a, b := net.Pipe() // unbuffered: a Write blocks until b reads
		c := newBatchConn(a)
		if held {
			c.hold()
		}
		done := make(chan error, 1)
		go func() { _, err := c.Write(make([]byte, 2*batchMax)); done <- err }()
		time.Sleep(20 * time.Millisecond) // the Write is blocked in the pipe
		closed := make(chan struct{})
		go func() { c.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatalf("held=%v: Close hangs behind a blocked Write", held)
		}
		if err := <-done; err == nil {
			t.Errorf("held=%v: the blocked Write returned no error", held)
		}
		b.Close()
	}
}
