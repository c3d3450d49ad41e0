package egress

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scriptedListener answers Accept from a script of errors, then blocks
// until closed.
type scriptedListener struct {
	errs   []error
	closed chan struct{}
}

func (l *scriptedListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		if err == nil {
			c, _ := net.Pipe()
			return c, nil
		}
		return nil, err
	}
	<-l.closed
	return nil, net.ErrClosed
}
func (l *scriptedListener) Close() error {
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
	return nil
}
func (l *scriptedListener) Addr() net.Addr { return &net.TCPAddr{} }

func TestServeConns(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name    string
		errs    []error
		handled int
		wantErr string // "" = returns nil once ctx ends
	}{
		{"retries descriptor exhaustion, then serves", []error{syscall.EMFILE, syscall.ECONNABORTED, nil}, 1, ""},
		{"a hard accept error ends it, named", []error{nil, errors.New("boom")}, 1, "egress test: accept: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			ln := &scriptedListener{errs: tc.errs, closed: make(chan struct{})}
			handled := make(chan struct{}, 8)
			done := make(chan error, 1)
			go func() {
				done <- ServeConns(ctx, ln, "egress test", log, func(ctx context.Context, c net.Conn) {
					handled <- struct{}{}
					<-ctx.Done() // a handler lives until ctx ends; ServeConns waits for it
					c.Close()
				})
			}()
			for i := 0; i < tc.handled; i++ {
				<-handled
			}
			if tc.wantErr == "" {
				cancel()
			}
			select {
			case err := <-done:
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("ServeConns = %v; want %q", err, tc.wantErr)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("ServeConns did not return")
			}
			cancel()
		})
	}
}
