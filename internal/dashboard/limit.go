package dashboard

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Sign-in failures an address may make per window before its sign-ins are
// refused until the window ends. API keys are 160-bit random, so this is
// defence in depth: it keeps a guessing client from using the dashboard as
// a fast key oracle, and its log line from flooding the daemon's log.
const (
	loginFailures    = 10
	loginWindow      = time.Minute
	loginMaxTracked  = 10000 // addresses tracked at once; past it the table starts over
	loginRetryHeader = "Retry-After"
)

// loginLimiter counts failed sign-ins per remote address (IP, without the
// port). A blocked address is refused every sign-in, a right key included:
// otherwise a guess that hits would still pass. Behind a reverse proxy all
// clients share its address (documented in SECURITY.md).
type loginLimiter struct {
	now func() time.Time

	mu   sync.Mutex // guards seen
	seen map[string]*loginCount
}

type loginCount struct {
	start    time.Time // of the current window
	failures int
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{now: time.Now, seen: map[string]*loginCount{}}
}

// wait is how long addr must wait before it may sign in again (0: now).
func (l *loginLimiter) wait(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.seen[addr]
	if c == nil {
		return 0
	}
	left := loginWindow - l.now().Sub(c.start)
	if left <= 0 {
		delete(l.seen, addr)
		return 0
	}
	if c.failures < loginFailures {
		return 0
	}
	return left
}

// failed counts a failed sign-in of addr.
func (l *loginLimiter) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.seen[addr]
	if c == nil || now.Sub(c.start) >= loginWindow {
		if len(l.seen) >= loginMaxTracked {
			l.seen = map[string]*loginCount{}
		}
		c = &loginCount{start: now}
		l.seen[addr] = c
	}
	c.failures++
}

// remoteIP is r's peer address without its port.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
