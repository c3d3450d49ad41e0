package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"connectrpc.com/connect"

	fspb "github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// MaxListEntries bounds one ListDir answer; a larger tree is
// invalid_argument (ask for a smaller depth) rather than an unbounded reply.
const MaxListEntries = 100_000

var errTooMany = errors.New("too many entries")

// ListDir lists the directory at path down to depth levels (0 means 1), in
// lexical depth-first order as envd does. A symlinked directory given as the
// path is followed; symlinks inside it are listed, not followed. Entry paths
// are under the path as the caller gave it.
func (s *Service) ListDir(_ context.Context, req *connect.Request[fspb.ListDirRequest]) (*connect.Response[fspb.ListDirResponse], error) {
	u, p, err := s.resolveDir(req.Header(), req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	depth := max(int(req.Msg.GetDepth()), 1)
	var entries []*fspb.EntryInfo
	err = identity.As(u, func() error {
		real, err := dirTarget(p)
		if err != nil {
			return err
		}
		entries, err = walk(p, real, depth, fsutil.NewNames(s.users))
		return err
	})
	if errors.Is(err, errTooMany) {
		return nil, errorf(connect.CodeInvalidArgument, "%s has more than %d entries within depth %d", p, MaxListEntries, depth)
	}
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fspb.ListDirResponse{Entries: entries}), nil
}

// dirTarget follows symlinks in p and checks that it is a directory.
func dirTarget(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fsutil.Classify(fmt.Errorf("resolve %s: %w", p, err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fsutil.Classify(err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: path is not a directory: %s", fsutil.ErrInvalid, p)
	}
	return real, nil
}

// walk lists real down to depth, naming entries under shown.
func walk(shown, real string, depth int, names *fsutil.Names) ([]*fspb.EntryInfo, error) {
	entries := []*fspb.EntryInfo{}
	err := filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == real {
				return fsutil.Classify(err)
			}
			return nil // vanished or unreadable below the root: skip it
		}
		if path == real {
			return nil
		}
		rel, _ := filepath.Rel(real, path)
		level := strings.Count(rel, string(filepath.Separator)) + 1
		if fi, ierr := d.Info(); ierr == nil {
			entries = append(entries, fsutil.EntryFromInfo(filepath.Join(shown, rel), fi, names))
		}
		if len(entries) > MaxListEntries {
			return errTooMany
		}
		if d.IsDir() && level >= depth {
			return filepath.SkipDir
		}
		return nil
	})
	return entries, err
}
