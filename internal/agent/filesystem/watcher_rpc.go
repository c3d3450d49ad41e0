package filesystem

import (
	"context"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
)

// CreateWatcher starts a polled watch (the Python sync SDK's form of
// WatchDir) and returns its id. Events are buffered up to MaxWatcherEvents.
func (s *Service) CreateWatcher(_ context.Context, req *connect.Request[fspb.CreateWatcherRequest]) (*connect.Response[fspb.CreateWatcherResponse], error) {
	u, root, err := s.resolveDir(req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	id, err := s.watchers.create(watchSpec{
		root: root, user: u, recursive: req.Msg.GetRecursive(),
		includeEntry: req.Msg.GetIncludeEntry(), allowNetworkMounts: req.Msg.GetAllowNetworkMounts(),
	})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fspb.CreateWatcherResponse{WatcherId: id}), nil
}

// GetWatcherEvents returns and clears the events buffered since the last call.
func (s *Service) GetWatcherEvents(_ context.Context, req *connect.Request[fspb.GetWatcherEventsRequest]) (*connect.Response[fspb.GetWatcherEventsResponse], error) {
	p := s.watchers.get(req.Msg.GetWatcherId())
	if p == nil {
		return nil, errorf(connect.CodeNotFound, "watcher %q not found", req.Msg.GetWatcherId())
	}
	events, err := p.take()
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fspb.GetWatcherEventsResponse{Events: events}), nil
}

// RemoveWatcher stops a polled watch.
func (s *Service) RemoveWatcher(_ context.Context, req *connect.Request[fspb.RemoveWatcherRequest]) (*connect.Response[fspb.RemoveWatcherResponse], error) {
	if !s.watchers.remove(req.Msg.GetWatcherId()) {
		return nil, errorf(connect.CodeNotFound, "watcher %q not found", req.Msg.GetWatcherId())
	}
	return connect.NewResponse(&fspb.RemoveWatcherResponse{}), nil
}
