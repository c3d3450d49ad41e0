package filesystem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// Limits of the polled watchers.
const (
	MaxWatchers      = 64               // open polled watchers per agent
	MaxWatcherEvents = 4096             // buffered events per watcher; more are dropped
	WatcherIdle      = 10 * time.Minute // a watcher not polled this long is removed
)

// polled is one CreateWatcher watcher: a goroutine runs the dirWatch and
// buffers its events until GetWatcherEvents takes them. mu guards the
// fields below it.
type polled struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	events   []*fspb.FilesystemEvent
	err      error // why the watch ended, once it has
	lastPoll time.Time
}

func startPolled(d *dirWatch) *polled {
	ctx, cancel := context.WithCancel(context.Background())
	p := &polled{cancel: cancel, done: make(chan struct{}), lastPoll: time.Now()}
	go func() {
		defer close(p.done)
		defer d.Close()
		err := d.run(ctx, p.push, nil)
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
	}()
	return p
}

func (p *polled) push(fe *fspb.FilesystemEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.events) >= MaxWatcherEvents {
		return nil // dropped: the poller is too slow
	}
	p.events = append(p.events, fe)
	return nil
}

// take returns and clears the buffered events; once they are drained, the
// error that ended the watch, if any.
func (p *polled) take() ([]*fspb.FilesystemEvent, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastPoll = time.Now()
	ev := p.events
	p.events = nil
	if len(ev) == 0 && p.err != nil && p.err != context.Canceled {
		return nil, p.err
	}
	return ev, nil
}

func (p *polled) idleSince() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastPoll
}

// stop ends the watch and waits for its goroutine.
func (p *polled) stop() {
	p.cancel()
	<-p.done
}

// watcherSet holds the polled watchers by id. mu guards byID.
type watcherSet struct {
	users identity.Files
	mu    sync.Mutex
	byID  map[string]*polled
}

func newWatcherSet(users identity.Files) *watcherSet {
	return &watcherSet{users: users, byID: map[string]*polled{}}
}

// create opens a watch and registers it, after dropping idle watchers.
func (ws *watcherSet) create(spec watchSpec) (string, error) {
	ws.reapIdle(time.Now().Add(-WatcherIdle))
	ws.mu.Lock()
	n := len(ws.byID)
	ws.mu.Unlock()
	if n >= MaxWatchers {
		return "", fmt.Errorf("%w: %d watchers are open already", fsutil.ErrNoSpace, n)
	}
	d, err := openWatch(spec, ws.users)
	if err != nil {
		return "", err
	}
	id := newID()
	ws.mu.Lock()
	ws.byID[id] = startPolled(d)
	ws.mu.Unlock()
	return id, nil
}

func (ws *watcherSet) get(id string) *polled {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.byID[id]
}

// remove stops and forgets id; it reports whether id existed.
func (ws *watcherSet) remove(id string) bool {
	ws.mu.Lock()
	p := ws.byID[id]
	delete(ws.byID, id)
	ws.mu.Unlock()
	if p != nil {
		p.stop()
	}
	return p != nil
}

func (ws *watcherSet) reapIdle(before time.Time) {
	ws.mu.Lock()
	var idle []string
	for id, p := range ws.byID {
		if p.idleSince().Before(before) {
			idle = append(idle, id)
		}
	}
	ws.mu.Unlock()
	for _, id := range idle {
		ws.remove(id)
	}
}

func (ws *watcherSet) closeAll() { ws.reapIdle(time.Now().Add(time.Hour)) }

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
