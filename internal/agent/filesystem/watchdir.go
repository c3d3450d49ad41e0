package filesystem

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
)

// DefaultKeepalive is the keepalive interval when the client sends no valid
// Keepalive-Ping-Interval header (seconds), as in envd.
const DefaultKeepalive = 90 * time.Second

// WatchDir streams a start message, then one message per filesystem event
// under the directory (names relative to it), with a keepalive after each
// quiet Keepalive-Ping-Interval. It ends when the client goes away or the
// Connect deadline passes.
func (s *Service) WatchDir(ctx context.Context, req *connect.Request[fspb.WatchDirRequest], stream *connect.ServerStream[fspb.WatchDirResponse]) error {
	u, root, err := s.resolveDir(req.Header(), req.Msg.GetPath())
	if err != nil {
		return err
	}
	d, err := openWatch(watchSpec{
		root: root, user: u, recursive: req.Msg.GetRecursive(),
		includeEntry: req.Msg.GetIncludeEntry(), allowNetworkMounts: req.Msg.GetAllowNetworkMounts(),
	}, s.users)
	if err != nil {
		return toConnect(err)
	}
	defer d.Close()
	start := &fspb.WatchDirResponse{Event: &fspb.WatchDirResponse_Start{Start: &fspb.WatchDirResponse_StartEvent{}}}
	if err := stream.Send(start); err != nil {
		return err
	}
	ka := &keepalive{interval: keepaliveInterval(req.Header()), send: func() error {
		return stream.Send(&fspb.WatchDirResponse{Event: &fspb.WatchDirResponse_Keepalive{Keepalive: &fspb.WatchDirResponse_KeepAlive{}}})
	}}
	err = d.run(ctx, func(fe *fspb.FilesystemEvent) error {
		return stream.Send(&fspb.WatchDirResponse{Event: &fspb.WatchDirResponse_Filesystem{Filesystem: fe}})
	}, ka)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	return toConnect(err)
}

// keepaliveInterval reads Keepalive-Ping-Interval (whole seconds).
func keepaliveInterval(h http.Header) time.Duration {
	n, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval"))
	if err != nil || n <= 0 {
		return DefaultKeepalive
	}
	return time.Duration(n) * time.Second
}
