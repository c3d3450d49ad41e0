package filesystem

import (
	"context"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
)

// Stat describes one entry; a final symlink is not followed.
func (s *Service) Stat(_ context.Context, req *connect.Request[fspb.StatRequest]) (*connect.Response[fspb.StatResponse], error) {
	_, p, err := s.resolve(req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	e, err := fsutil.Entry(p, fsutil.NewNames(s.users))
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fspb.StatResponse{Entry: e}), nil
}
