package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// UpstreamDialTimeout bounds how long the daemon tries to reach a
// sandbox's destination on its behalf (the guard's splice, the
// interceptor's upstream): past it the sandbox's connection fails rather
// than waiting out the kernel's SYN retries.
const UpstreamDialTimeout = 10 * time.Second

// ServeConns accepts connections on ln until ctx ends or ln fails, calling
// handle for each in its own goroutine; the daemon's sandbox-facing servers
// (the guard, the tunnel) share it. Accept errors that pass (out of
// descriptors or memory, a connection aborted before it was accepted) are
// retried with a backoff up to 1 s. It closes ln, and returns only after
// every handle has: nil once ctx ended, the accept error otherwise. name
// prefixes its log lines and errors. handle must return when its ctx ends.
func ServeConns(ctx context.Context, ln net.Listener, name string, log *slog.Logger, handle func(context.Context, net.Conn)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); _ = ln.Close(); wg.Wait() }()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	for backoff := time.Duration(0); ; {
		c, err := ln.Accept()
		switch {
		case err == nil:
			backoff = 0
			wg.Add(1)
			go func() { defer wg.Done(); handle(ctx, c) }()
		case ctx.Err() != nil:
			return nil
		case retryableAccept(err):
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			log.Warn(name+": accept", "err", err, "retry", backoff)
			sleepCtx(ctx, backoff)
		default:
			return fmt.Errorf("%s: accept: %w", name, err)
		}
	}
}

// retryableAccept reports accept errors that pass: out of descriptors or
// memory, or a connection aborted before it was accepted.
func retryableAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS,
		syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
