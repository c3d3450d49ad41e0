package sandbox

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// Reaps short of descriptors are retried. When the daemon (or the host) is
// out of file descriptors, a reap fails part-way (`runsc delete: pipe2:
// too many open files`, a mount or netlink socket refused) through no fault
// of the sandbox; the shortage passes once its cause is gone (a tenant's
// connections closed and bounded). Before, the record stayed as reaping
// until the next daemon start and the sandbox's processes ran on meanwhile,
// with no record serving them, no deadline and no quota.

const (
	reapRetryFirst = time.Second      // ReapRetry's default
	reapRetryMax   = 30 * time.Second // the longest wait between tries
)

// shortOfDescriptors reports whether err is the process's or the system's
// file descriptor limit (EMFILE, ENFILE).
func shortOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// retryReap tries reapOnce of id again after wait (reapRetryFirst when 0),
// doubling the wait (at most reapRetryMax) while it fails short of
// descriptors; it stops on success, on another failure (the record stays
// as reaping for the next Recover) and once the manager is closed. id is
// still the caller's: nothing else reaps it meanwhile (it is no longer in
// m.sandboxes, and Recover runs only before serving).
func (m *Manager) retryReap(ctx context.Context, id, rtName string, rsb runtime.Sandbox, wait time.Duration) {
	if wait <= 0 {
		wait = reapRetryFirst
	}
	m.log.Warn("reap short of file descriptors; retrying", "sandbox", id, "in", wait)
	time.AfterFunc(wait, func() {
		if m.isClosed() {
			return
		}
		err := m.reapOnce(ctx, id, rtName, rsb)
		if shortOfDescriptors(err) {
			m.retryReap(ctx, id, rtName, rsb, min(2*wait, reapRetryMax))
		} else if err == nil {
			m.log.Info("reaped after a retry", "sandbox", id)
		}
	})
}

// isClosed reports whether Close was called.
func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}
