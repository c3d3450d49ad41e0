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
