package process

import (
	"context"

	"connectrpc.com/connect"
	"github.com/creack/pty"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
)

// Update resizes a process's PTY. Without a pty field it changes nothing.
func (s *Service) Update(_ context.Context, req *connect.Request[rpc.UpdateRequest]) (*connect.Response[rpc.UpdateResponse], error) {
	p, err := s.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if req.Msg.Pty != nil {
		size := req.Msg.GetPty().GetSize()
		switch {
		case p.tty == nil:
			return nil, errorf(connect.CodeFailedPrecondition, "process %d has no PTY to resize", p.pid)
		case size.GetCols() == 0 || size.GetRows() == 0 || size.GetCols() > 0xffff || size.GetRows() > 0xffff:
			return nil, errorf(connect.CodeInvalidArgument, "invalid pty size %dx%d", size.GetCols(), size.GetRows())
		}
		if err := pty.Setsize(p.tty, &pty.Winsize{Cols: uint16(size.GetCols()), Rows: uint16(size.GetRows())}); err != nil {
			return nil, errorf(connect.CodeFailedPrecondition, "resize pty of process %d: %v", p.pid, err)
		}
	}
	return connect.NewResponse(&rpc.UpdateResponse{}), nil
}
