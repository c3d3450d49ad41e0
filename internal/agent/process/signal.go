package process

import (
	"context"

	"connectrpc.com/connect"
	"golang.org/x/sys/unix"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
)

// SendSignal sends SIGTERM or SIGKILL to a process's whole process group.
func (s *Service) SendSignal(_ context.Context, req *connect.Request[rpc.SendSignalRequest]) (*connect.Response[rpc.SendSignalResponse], error) {
	var sig unix.Signal
	switch req.Msg.GetSignal() {
	case rpc.Signal_SIGNAL_SIGTERM:
		sig = unix.SIGTERM
	case rpc.Signal_SIGNAL_SIGKILL:
		sig = unix.SIGKILL
	default:
		return nil, errorf(connect.CodeInvalidArgument, "unsupported signal %v", req.Msg.GetSignal())
	}
	p, err := s.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := p.signal(sig); err != nil {
		return nil, errorf(connect.CodeInternal, "signal process %d: %v", p.pid, err)
	}
	return connect.NewResponse(&rpc.SendSignalResponse{}), nil
}
