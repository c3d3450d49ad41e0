package interpreter

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"
)

// Context is a context as the API shows it.
type Context struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

// kcontext is one stateful context: a driver started on first use and
// restarted after it died. Executions hold run (a one-slot semaphore, so a
// waiter whose client left can give up); mu guards d and globals.
type kcontext struct {
	Context
	srv *Server
	run chan struct{}
	seq uint64 // order of making (Server.list); set once, under srv.mu

	mu      sync.Mutex
	d       *driver
	globals map[string]string // sandbox env vars the driver has
	closed  bool
}

func newKContext(s *Server, c Context) *kcontext {
	return &kcontext{Context: c, srv: s, run: make(chan struct{}, 1)}
}

// acquire takes the context's execution slot, or fails when ctx ends first.
func (k *kcontext) acquire(ctx context.Context) error {
	select {
	case k.run <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *kcontext) release() { <-k.run }

// driver returns the running driver, starting one if needed. Call it
// holding the execution slot.
func (k *kcontext) driver() (*driver, error) {
	k.mu.Lock()
	d, closed := k.d, k.closed
	k.mu.Unlock()
	if closed {
		return nil, errContextClosed
	}
	if d != nil {
		return d, nil
	}
	envs := k.srv.sandboxEnvs()
	cmd, err := k.srv.command(k.Context, envs)
	if err != nil {
		return nil, err
	}
	d, err = startDriver(cmd)
	if err != nil {
		return nil, err
	}
	if code := startEnvCode(k.Language, envs); code != "" && !runSilent(d, code, startTimeout) {
		d.kill()
		return nil, fmt.Errorf("%w: could not set the sandbox's env vars: %s", errDriverStart, lastLine(strings.TrimSpace(d.logs.String())))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		d.kill()
		return nil, errContextClosed
	}
	k.d, k.globals = d, envs
	return d, nil
}

// drop forgets d (when it died or hung) and kills it.
func (k *kcontext) drop(d *driver) {
	k.mu.Lock()
	if k.d == d {
		k.d = nil
	}
	k.mu.Unlock()
	d.kill()
}

// restart kills the driver (a running execution ends with an error) and
// starts a fresh one.
func (k *kcontext) restart(ctx context.Context) error {
	k.mu.Lock()
	d := k.d
	k.d = nil
	k.mu.Unlock()
	if d != nil {
		d.kill()
	}
	if err := k.acquire(ctx); err != nil {
		return err
	}
	defer k.release()
	_, err := k.driver()
	return err
}

// close kills the driver for good.
func (k *kcontext) close() {
	k.mu.Lock()
	d := k.d
	k.d, k.closed = nil, true
	k.mu.Unlock()
	if d != nil {
		d.kill()
	}
}

// syncGlobals brings the driver's sandbox env vars up to date (the daemon
// may set them through /init after the context started).
func (k *kcontext) syncGlobals(d *driver) {
	envs := k.srv.sandboxEnvs()
	k.mu.Lock()
	old := k.globals
	k.mu.Unlock()
	if maps.Equal(old, envs) {
		return
	}
	code := setEnvCode(k.Language, envs, old)
	if code != "" {
		runSilent(d, code, 30*time.Second)
	}
	k.mu.Lock()
	k.globals = envs
	k.mu.Unlock()
}
