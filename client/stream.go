package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/api/proto/envd/process"
)

// runner consumes the event stream of one started process.
type runner struct {
	conn           *SandboxConn
	req            RunRequest
	stdout, stderr io.Writer
	pid            uint32
}

// consume reads the stream: start first, then data and keepalives, then end.
func (r *runner) consume(ctx context.Context, stream *connect.ServerStreamForClient[process.StartResponse]) (int, error) {
	var end *process.ProcessEvent_EndEvent
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if r.pid == 0 && ev.GetStart() == nil {
			return -1, errors.New("protocol error: first event is not start")
		}
		switch {
		case ev.GetStart() != nil:
			r.started(ctx, ev.GetStart().GetPid())
		case ev.GetData() != nil:
			if err := r.write(ev.GetData()); err != nil {
				r.kill()
				return -1, err
			}
		case ev.GetEnd() != nil:
			end = ev.GetEnd()
		}
	}
	if err := stream.Err(); err != nil {
		r.killIfCanceled(ctx)
		return -1, r.classify(ctx, err)
	}
	return r.finish(end)
}

// started records the pid and starts feeding stdin. Stdin errors are not
// reported: the usual one is the command exiting before reading it all.
func (r *runner) started(ctx context.Context, pid uint32) {
	if r.pid != 0 {
		return
	}
	r.pid = pid
	switch {
	case r.req.TTY != nil:
		if r.req.Stdin != nil {
			go func() { _ = r.conn.feedTTY(ctx, pid, r.req.Stdin) }()
		}
		if r.req.TTY.Resize != nil {
			go r.conn.resizeLoop(ctx, pid, r.req.TTY.Resize)
		}
	case r.req.Stdin != nil:
		go func() { _ = r.conn.feedStdin(ctx, pid, r.req.Stdin) }()
	}
}

func (r *runner) write(d *process.ProcessEvent_DataEvent) error {
	var err error
	switch {
	case d.GetStdout() != nil:
		_, err = r.stdout.Write(d.GetStdout())
	case d.GetStderr() != nil:
		_, err = r.stderr.Write(d.GetStderr())
	case d.GetPty() != nil:
		_, err = r.stdout.Write(d.GetPty())
	}
	if err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// finish checks the end event. An end without a status means the process
// could not be waited for; without exited it was killed by a signal.
func (r *runner) finish(end *process.ProcessEvent_EndEvent) (int, error) {
	if end == nil {
		return -1, fmt.Errorf("%w: stream ended without an end event", ErrSessionEnded)
	}
	if !end.GetExited() && end.Error != nil && end.GetStatus() == "" {
		return -1, fmt.Errorf("process failed: %s", end.GetError())
	}
	if !end.GetExited() {
		return -1, nil
	}
	return int(end.GetExitCode()), nil
}

// classify is the package's classify, except that a stream cut after the
// start event, by the transport rather than by an error the daemon sent or
// the caller's context, is ErrSessionEnded: the sandbox went away under the
// command.
func (r *runner) classify(ctx context.Context, err error) error {
	if r.pid != 0 && ctx.Err() == nil && !connect.IsWireError(err) {
		var ae *APIError
		if !errors.As(err, &ae) {
			return fmt.Errorf("%w: %w", ErrSessionEnded, err)
		}
	}
	return classify(ctx, err)
}

// killIfCanceled kills the process when the caller gave up on it, so it does
// not outlive the stream.
func (r *runner) killIfCanceled(ctx context.Context) {
	if ctx.Err() != nil && !r.req.Detach && !errors.Is(context.Cause(ctx), ErrDetached) {
		r.kill()
	}
}

func (r *runner) kill() {
	if r.pid == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.conn.signal(ctx, r.pid, process.Signal_SIGNAL_SIGKILL)
}
