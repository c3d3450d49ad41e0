package filesystem

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// Move renames source to destination as the caller (replacing a destination
// file, as rename(2) does), creating the destination's missing parents
// owned by the caller. Metadata xattrs travel with the file.
func (s *Service) Move(_ context.Context, req *connect.Request[fspb.MoveRequest]) (*connect.Response[fspb.MoveResponse], error) {
	u, src, err := s.resolve(req.Header(), req.Msg.GetSource())
	if err != nil {
		return nil, err
	}
	_, dst, err := s.resolve(req.Header(), req.Msg.GetDestination())
	if err != nil {
		return nil, err
	}
	var e *fspb.EntryInfo
	err = identity.As(u, func() (err error) {
		e, err = s.move(src, dst, u)
		return err
	})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fspb.MoveResponse{Entry: e}), nil
}

// move renames src to dst for Move; it runs with the caller's credentials.
func (s *Service) move(src, dst string, u identity.User) (*fspb.EntryInfo, error) {
	if _, err := os.Lstat(src); err != nil {
		return nil, fsutil.Classify(fmt.Errorf("source: %w", err))
	}
	if _, err := fsutil.EnsureDirs(filepath.Dir(dst), int(u.UID), int(u.GID)); err != nil {
		return nil, err
	}
	if err := os.Rename(src, dst); err != nil {
		return nil, fsutil.Classify(err)
	}
	return fsutil.Entry(dst, fsutil.NewNames(s.users))
}
