package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// fakeRegistry answers each call from a script; it is only for Member's
// control flow (the real registry is conformance-tested in internal/store).
type fakeRegistry struct {
	mu        sync.Mutex
	held      int     // Register answers ErrLeaseHeld this many times
	renewErrs []error // successive Renew answers (nil: renewed); past the end: renewed
	renews    int
	released  bool
	expired   int
}

func (f *fakeRegistry) Register(_ context.Context, n *store.Node, ttl time.Duration) (store.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held > 0 {
		f.held--
		return store.Lease{}, store.ErrLeaseHeld
	}
	return store.Lease{Node: n.ID, Token: 7, Expires: time.Now().Add(ttl)}, nil
}

func (f *fakeRegistry) Renew(_ context.Context, l store.Lease, _ *store.Node, ttl time.Duration) (store.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.renews
	f.renews++
	if i < len(f.renewErrs) && f.renewErrs[i] != nil {
		return l, f.renewErrs[i]
	}
	l.Expires = time.Now().Add(ttl)
	return l, nil
}

func (f *fakeRegistry) Release(context.Context, store.Lease) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = true
	return nil
}

func (f *fakeRegistry) ExpireNodes(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired++
	return nil, nil
}

func TestMember(t *testing.T) {
	down := errors.New("connection refused")
	for _, c := range []struct {
		name       string
		held       int
		renewErrs  []error
		wantFenced bool
	}{
		{"renews until stopped", 0, nil, false},
		{"waits out a held lease", 2, nil, false},
		{"refused renewal fences", 0, []error{nil, store.ErrFenced}, true},
		{"a short outage is survived", 0, []error{down, nil}, false},
		{"an outage past the lease fences", 0, []error{down, down, down, down, down, down, down, down}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeRegistry{held: c.held, renewErrs: c.renewErrs}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			ttl := 300 * time.Millisecond
			m, err := Join(context.Background(), f, ttl, func() *store.Node { return &store.Node{ID: "n"} }, log)
			if err != nil || m.Lease().Token != 7 {
				t.Fatalf("Join = %v, %v", m, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*ttl)
			defer cancel()
			err = m.Run(ctx)
			if fenced := errors.Is(err, store.ErrFenced); fenced != c.wantFenced {
				t.Fatalf("Run = %v, want fenced %v", err, c.wantFenced)
			}
			if !c.wantFenced && (f.renews < 3 || f.expired == 0) {
				t.Fatalf("%d renewals, %d expiry passes in 4 ttl", f.renews, f.expired)
			}
		})
	}
}

func TestJoinGivesUpOnALiveHolder(t *testing.T) {
	f := &fakeRegistry{held: 1 << 30}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, err := Join(context.Background(), f, 100*time.Millisecond, func() *store.Node { return &store.Node{ID: "n"} }, log)
	if !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("Join = %v, want ErrLeaseHeld", err)
	}
}
