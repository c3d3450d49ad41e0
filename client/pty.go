package client

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/api/proto/envd/process"
)

// TTY asks Run for a pseudo-terminal: the command's output (stdout and
// stderr together, as a terminal shows them) goes to Run's stdout, Stdin is
// sent as terminal input and is not closed at its end, and each size read
// from Resize is applied as it arrives.
type TTY struct {
	Size   TermSize
	Resize <-chan TermSize
}

// TermSize is a terminal's size in characters.
type TermSize struct{ Cols, Rows uint16 }

// ErrDetached is the cause to cancel Run's context with (context.WithCancelCause)
// to leave the command running, as `docker exec -it` does on its detach keys.
var ErrDetached = errors.New("detached")

func (t *TTY) proto() *process.PTY {
	return &process.PTY{Size: &process.PTY_Size{Cols: uint32(t.Size.Cols), Rows: uint32(t.Size.Rows)}}
}

// resizeLoop applies the sizes from the TTY's Resize channel to process pid
// until ctx ends. Resize failures are not fatal: the shell keeps its size.
func (s *SandboxConn) resizeLoop(ctx context.Context, pid uint32, resize <-chan TermSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case sz, ok := <-resize:
			if !ok {
				return
			}
			_ = s.Resize(ctx, pid, sz)
		}
	}
}

// Resize sets the terminal size of process pid (Process.Update).
func (s *SandboxConn) Resize(ctx context.Context, pid uint32, sz TermSize) error {
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	pty := &process.PTY{Size: &process.PTY_Size{Cols: uint32(sz.Cols), Rows: uint32(sz.Rows)}}
	if _, err := s.proc.Update(ctx, connect.NewRequest(&process.UpdateRequest{Process: sel, Pty: pty})); err != nil {
		return fmt.Errorf("resize: %w", rpcErr(err))
	}
	return nil
}
