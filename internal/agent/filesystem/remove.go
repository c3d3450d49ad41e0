package filesystem

import (
	"context"
	"fmt"
	"os"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// Remove deletes a file, a symlink (not its target) or a whole directory
// tree, as the caller. A missing path succeeds, as envd's os.RemoveAll does; "/" is
// refused.
func (s *Service) Remove(_ context.Context, req *connect.Request[fspb.RemoveRequest]) (*connect.Response[fspb.RemoveResponse], error) {
	u, p, err := s.resolve(req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	if p == "/" {
		return nil, errorf(connect.CodeInvalidArgument, "refusing to remove /")
	}
	if err := identity.As(u, func() error { return os.RemoveAll(p) }); err != nil {
		return nil, toConnect(fsutil.Classify(fmt.Errorf("remove %s: %w", p, err)))
	}
	return connect.NewResponse(&fspb.RemoveResponse{}), nil
}
