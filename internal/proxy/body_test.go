package proxy

import (
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// blockingBody is a body whose Read blocks until its deadline is set, like a
// connection reader waiting for a slow client.
type blockingBody struct {
	started  chan struct{}
	deadline chan struct{}
	returned atomic.Bool // the read came back
}

func (b *blockingBody) Read([]byte) (int, error) {
	close(b.started)
	<-b.deadline
	b.returned.Store(true)
	return 0, errors.New("i/o timeout")
}
func (b *blockingBody) Close() error { return nil }

func TestCutBodyLength(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int64
		want string
	}{
		{"declared length stops early", "hello world", 5, "hello"},
		{"unknown length reads all", "hello world", -1, "hello world"},
		{"empty", "", -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newCutBody(io.NopCloser(strings.NewReader(tc.in)), tc.n)
			got, err := io.ReadAll(b)
			if err != nil || string(got) != tc.want {
				t.Fatalf("ReadAll = %q, %v; want %q", got, err, tc.want)
			}
			b.Cut(func(time.Time) error { t.Fatal("deadline set on a body at its end"); return nil })
		})
	}
}

func TestCutBodyInterruptsReadInFlight(t *testing.T) {
	bb := &blockingBody{started: make(chan struct{}), deadline: make(chan struct{})}
	b := newCutBody(bb, -1)
	readDone := make(chan error, 1)
	go func() { _, err := b.Read(make([]byte, 8)); readDone <- err }()
	<-bb.started

	var sets []time.Time
	b.Cut(func(d time.Time) error {
		sets = append(sets, d)
		if !d.IsZero() {
			close(bb.deadline) // the connection's read returns on its deadline
		}
		return nil
	})
	if !bb.returned.Load() {
		t.Fatal("Cut returned while a read was still in flight")
	}
	if err := <-readDone; err == nil {
		t.Fatal("interrupted read returned no error")
	}
	if len(sets) != 2 || sets[0].IsZero() || !sets[1].IsZero() {
		t.Fatalf("deadlines set = %v; want a past one, then cleared", sets)
	}
	if _, err := b.Read(make([]byte, 8)); !errors.Is(err, errBodyCut) {
		t.Fatalf("read after Cut = %v; want errBodyCut", err)
	}
}

func TestCutBodyNoDeadlineSupport(t *testing.T) {
	bb := &blockingBody{started: make(chan struct{}), deadline: make(chan struct{})}
	b := newCutBody(bb, -1)
	go func() { _, _ = b.Read(make([]byte, 8)) }()
	<-bb.started
	b.Cut(func(time.Time) error { return errors.New("not supported") }) // must not wait
	close(bb.deadline)
}

// closingBody's Close drains like the server's request body: it blocks, a
// read of the connection, until the deadline is set.
type closingBody struct {
	blockingBody
	closes atomic.Int32
}

func (b *closingBody) Close() error {
	b.closes.Add(1)
	_, err := b.blockingBody.Read(nil)
	return err
}

// TestCutBodyClose: the transport's Close, which may run on its own
// goroutine after the handler returned, counts as a read in flight (Cut
// interrupts and waits for it); after Cut it never reaches the server's body.
func TestCutBodyClose(t *testing.T) {
	t.Run("close in flight", func(t *testing.T) {
		cb := &closingBody{blockingBody: blockingBody{started: make(chan struct{}), deadline: make(chan struct{})}}
		b := newCutBody(cb, -1)
		closed := make(chan error, 1)
		go func() { closed <- b.Close() }()
		<-cb.started
		b.Cut(func(d time.Time) error {
			if !d.IsZero() {
				close(cb.deadline)
			}
			return nil
		})
		if !cb.returned.Load() {
			t.Fatal("Cut returned while Close was still draining the body")
		}
		<-closed
		if _, err := b.Read(make([]byte, 8)); !errors.Is(err, errBodyCut) {
			t.Fatalf("read after Close = %v; want errBodyCut", err)
		}
	})
	t.Run("close after cut", func(t *testing.T) {
		cb := &closingBody{blockingBody: blockingBody{started: make(chan struct{}), deadline: make(chan struct{})}}
		b := newCutBody(cb, -1)
		b.Cut(func(time.Time) error { t.Fatal("deadline set with nothing in flight"); return nil })
		if err := b.Close(); err != nil || cb.closes.Load() != 0 {
			t.Fatalf("Close after Cut = %v, underlying closes %d; want nil, 0", err, cb.closes.Load())
		}
	})
	t.Run("close twice", func(t *testing.T) {
		b := newCutBody(io.NopCloser(strings.NewReader("x")), -1)
		for i := range 2 {
			if err := b.Close(); err != nil {
				t.Fatalf("Close %d: %v", i+1, err)
			}
		}
	})
}
