package process

import (
	"context"

	"connectrpc.com/connect"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
)

// Start starts a process and streams it (see follow). Connect-Timeout-Ms,
// which connect-go turns into ctx's deadline, is the process's lifetime;
// without it the process runs until it exits or is signalled.
func (s *Service) Start(ctx context.Context, req *connect.Request[rpc.StartRequest], stream *connect.ServerStream[rpc.StartResponse]) error {
	u, err := s.caller(req.Header())
	if err != nil {
		return err
	}
	sp, err := s.buildSpec(u, req.Msg)
	if err != nil {
		return err
	}
	release, err := s.reserveTag(sp.tag)
	if err != nil {
		return err
	}
	sub := newSubscriber(true)
	p, err := s.spawn(sp, sub)
	if err != nil {
		release()
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		p.killAt(deadline)
	}
	return follow(ctx, p, sub, keepaliveInterval(req.Header()), true, func(ev *rpc.ProcessEvent) error {
		return stream.Send(&rpc.StartResponse{Event: ev})
	})
}

// Connect attaches to a running process: start{pid}, its output from now on
// (this stream may lose its oldest chunks if it falls behind), then end.
func (s *Service) Connect(ctx context.Context, req *connect.Request[rpc.ConnectRequest], stream *connect.ServerStream[rpc.ConnectResponse]) error {
	p, err := s.find(req.Msg.GetProcess())
	if err != nil {
		return err
	}
	sub := p.subscribe(false)
	return follow(ctx, p, sub, keepaliveInterval(req.Header()), false, func(ev *rpc.ProcessEvent) error {
		return stream.Send(&rpc.ConnectResponse{Event: ev})
	})
}
