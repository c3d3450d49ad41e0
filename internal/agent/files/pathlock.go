package files

import "sync"

// pathLocks serialises the agent's writes to one file.
var pathLocks = keyedMutex{m: map[string]*refMutex{}}

// keyedMutex is a mutex per key, kept only while some caller holds or waits
// for it. mu guards m.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int // callers holding or waiting; guarded by keyedMutex.mu
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	rm := k.m[key]
	if rm == nil {
		rm = &refMutex{}
		k.m[key] = rm
	}
	rm.refs++
	k.mu.Unlock()
	rm.Lock()
	return func() {
		rm.Unlock()
		k.mu.Lock()
		if rm.refs--; rm.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
