package network

import (
	"context"
	"sync"
)

// idLocks serialises operations on one sandbox id: a Setup and a Teardown of
// the same id never interleave, so neither undoes the other's half-made
// state. Distinct ids never wait for each other.
type idLocks struct {
	mu   sync.Mutex
	busy map[string]chan struct{} // closed when the holder unlocks
}

// lock waits until id is free or ctx is done, and returns the unlock func.
func (l *idLocks) lock(ctx context.Context, id string) (func(), error) {
	for {
		l.mu.Lock()
		if l.busy == nil {
			l.busy = map[string]chan struct{}{}
		}
		ch, held := l.busy[id]
		if !held {
			ch = make(chan struct{})
			l.busy[id] = ch
			l.mu.Unlock()
			return func() { l.unlock(id, ch) }, nil
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (l *idLocks) unlock(id string, ch chan struct{}) {
	l.mu.Lock()
	delete(l.busy, id)
	l.mu.Unlock()
	close(ch)
}
