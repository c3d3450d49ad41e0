package process

import (
	"context"
	"slices"

	"connectrpc.com/connect"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
)

// List returns the running processes started through the service, by pid.
func (s *Service) List(_ context.Context, _ *connect.Request[rpc.ListRequest]) (*connect.Response[rpc.ListResponse], error) {
	s.mu.Lock()
	infos := make([]*rpc.ProcessInfo, 0, len(s.procs))
	for _, p := range s.procs {
		infos = append(infos, p.info())
	}
	s.mu.Unlock()
	slices.SortFunc(infos, func(a, b *rpc.ProcessInfo) int { return int(a.Pid) - int(b.Pid) })
	return connect.NewResponse(&rpc.ListResponse{Processes: infos}), nil
}
