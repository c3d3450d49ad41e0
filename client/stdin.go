package client

import (
	"context"
	"fmt"
	"io"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/api/proto/envd/process"
)

// stdinChunk is the most stdin bytes sent in one SendInput call.
const stdinChunk = 32 << 10

// feedStdin copies in to the process pid with SendInput, then closes its
// stdin with CloseStdin (also after a read error, so the command sees EOF).
func (s *SandboxConn) feedStdin(ctx context.Context, pid uint32, in io.Reader) error {
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	err := s.copyStdin(ctx, sel, in)
	if _, cerr := s.proc.CloseStdin(ctx, connect.NewRequest(&process.CloseStdinRequest{Process: sel})); cerr != nil && err == nil {
		err = fmt.Errorf("closing stdin: %w", rpcErr(cerr))
	}
	return err
}

// feedTTY copies in to the terminal of process pid; the end of in does not
// end the terminal's input (the shell ends on its own exit).
func (s *SandboxConn) feedTTY(ctx context.Context, pid uint32, in io.Reader) error {
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	return s.copyInput(ctx, sel, in, func(b []byte) *process.ProcessInput {
		return &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: b}}
	})
}

func (s *SandboxConn) copyStdin(ctx context.Context, sel *process.ProcessSelector, in io.Reader) error {
	return s.copyInput(ctx, sel, in, func(b []byte) *process.ProcessInput {
		return &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: b}}
	})
}

// copyInput sends what in yields, wrapped by wrap, until in ends.
func (s *SandboxConn) copyInput(ctx context.Context, sel *process.ProcessSelector, in io.Reader, wrap func([]byte) *process.ProcessInput) error {
	buf := make([]byte, stdinChunk)
	for {
		n, rerr := in.Read(buf)
		if n > 0 {
			input := wrap(append([]byte(nil), buf[:n]...))
			if _, err := s.proc.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{Process: sel, Input: input})); err != nil {
				return fmt.Errorf("sending stdin: %w", rpcErr(err))
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("reading stdin: %w", rerr)
		}
	}
}

// signal sends sig to the process pid.
func (s *SandboxConn) signal(ctx context.Context, pid uint32, sig process.Signal) error {
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	_, err := s.proc.SendSignal(ctx, connect.NewRequest(&process.SendSignalRequest{Process: sel, Signal: sig}))
	if err != nil {
		return rpcErr(err)
	}
	return nil
}
