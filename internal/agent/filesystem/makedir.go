package filesystem

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// MakeDir creates a directory and any missing parents, as the caller (so
// owned by the caller, and only where the caller may write) with mode 0755.
// An existing directory is already_exists; an existing non-directory is
// invalid_argument.
func (s *Service) MakeDir(_ context.Context, req *connect.Request[fspb.MakeDirRequest]) (*connect.Response[fspb.MakeDirResponse], error) {
	u, p, err := s.resolveDir(req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	var e *fspb.EntryInfo
	err = identity.As(u, func() (err error) {
		e, err = s.makeDir(p, u)
		return err
	})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fspb.MakeDirResponse{Entry: e}), nil
}

// makeDir creates p for MakeDir; it runs with the caller's credentials.
func (s *Service) makeDir(p string, u identity.User) (*fspb.EntryInfo, error) {
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		return nil, errorf(connect.CodeAlreadyExists, "directory already exists: %s", p)
	case err == nil:
		return nil, errorf(connect.CodeInvalidArgument, "path already exists but it is not a directory: %s", p)
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return nil, fsutil.Classify(err)
	}
	if _, err := fsutil.EnsureDirs(p, int(u.UID), int(u.GID)); err != nil {
		return nil, err
	}
	return fsutil.Entry(p, fsutil.NewNames(s.users))
}
