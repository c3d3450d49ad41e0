package filesystem

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
)

// Move renames source to destination (replacing a destination file, as
// rename(2) does), creating the destination's missing parents owned by the
// caller. Metadata xattrs travel with the file.
func (s *Service) Move(_ context.Context, req *connect.Request[fspb.MoveRequest]) (*connect.Response[fspb.MoveResponse], error) {
	u, src, err := s.resolve(req.Header(), req.Msg.GetSource())
	if err != nil {
		return nil, err
	}
	_, dst, err := s.resolve(req.Header(), req.Msg.GetDestination())
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(src); err != nil {
		return nil, toConnect(fsutil.Classify(fmt.Errorf("source: %w", err)))
	}
	if _, err := fsutil.EnsureDirs(filepath.Dir(dst), int(u.UID), int(u.GID)); err != nil {
		return nil, toConnect(err)
	}
	if err := os.Rename(src, dst); err != nil {
		return nil, toConnect(fsutil.Classify(err))
	}
	e, err := fsutil.Entry(dst, fsutil.NewNames(s.users))
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fspb.MoveResponse{Entry: e}), nil
}
