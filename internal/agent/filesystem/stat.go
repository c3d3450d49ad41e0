package filesystem

import (
	"context"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// Stat describes one entry; a final symlink is not followed.
func (s *Service) Stat(_ context.Context, req *connect.Request[fspb.StatRequest]) (*connect.Response[fspb.StatResponse], error) {
	u, p, err := s.resolveDir(req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	var e *fspb.EntryInfo
	err = identity.As(u, func() (err error) {
		e, err = fsutil.Entry(p, fsutil.NewNames(s.users))
		return err
	})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fspb.StatResponse{Entry: e}), nil
}
