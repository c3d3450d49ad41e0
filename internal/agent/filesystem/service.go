// Package filesystem is the agent's Connect filesystem.Filesystem service,
// wire-compatible with E2B's envd: stat, list, make, move and remove entries,
// and watch directories (streamed, or polled through watcher ids).
//
// Every path is resolved for the calling user (Basic auth, else the default
// user from /init) in the agent's own filesystem view, and every operation
// runs with that user's uid, groups and umask (identity.As): the agent is
// root, but a request as "user" can stat, list, create, rename, remove and
// watch only what "user" could, whatever symlinks or hard links lead there.
package filesystem

import (
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/sbx-dev/sbx/api/proto/envd/filesystem/filesystemconnect"
	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// Service implements filesystemconnect.FilesystemHandler.
type Service struct {
	filesystemconnect.UnimplementedFilesystemHandler

	state    *identity.State
	users    identity.Files
	watchers *watcherSet
}

var _ filesystemconnect.FilesystemHandler = (*Service)(nil)

// New returns the service; st supplies the default user, users the account
// databases that name users and owners.
func New(st *identity.State, users identity.Files) *Service {
	return &Service{state: st, users: users, watchers: newWatcherSet(users)}
}

// Close stops every polled watcher. The service stays usable.
func (s *Service) Close() { s.watchers.closeAll() }

// caller returns the user a request acts as.
func (s *Service) caller(h http.Header) (identity.User, error) {
	u, err := identity.Caller(h, s.state, s.users)
	if err != nil {
		if errors.Is(err, identity.ErrUnknownUser) {
			return identity.User{}, connect.NewError(connect.CodeUnauthenticated, err)
		}
		return identity.User{}, connect.NewError(connect.CodeInternal, err)
	}
	return u, nil
}

// resolve returns the absolute path of p for the caller of h.
func (s *Service) resolve(h http.Header, p string) (identity.User, string, error) {
	u, err := s.caller(h)
	if err != nil {
		return u, "", err
	}
	abs, err := fsutil.Resolve(p, u)
	if err != nil {
		return u, "", toConnect(err)
	}
	return u, abs, nil
}

// resolveDir is resolve for the calls that look at or make a directory
// (stat, list, make, watch): an empty path names the default workdir from
// /init, else the caller's home, as envd's ExpandAndResolve has it, so the
// SDK's files.list("") lists the home. Remove, move and writes keep refusing
// an empty path: envd would remove or move the home directory itself.
func (s *Service) resolveDir(h http.Header, p string) (identity.User, string, error) {
	if p == "" {
		if p = s.state.DefaultWorkdir(); p == "" {
			p = "~"
		}
	}
	return s.resolve(h, p)
}

// toConnect maps an error to its Connect code, once for the whole service.
func toConnect(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	return connect.NewError(codeOf(fsutil.Category(err)), err)
}

func codeOf(category error) connect.Code {
	switch category {
	case fsutil.ErrInvalid:
		return connect.CodeInvalidArgument
	case fsutil.ErrNotFound:
		return connect.CodeNotFound
	case fsutil.ErrExists:
		return connect.CodeAlreadyExists
	case fsutil.ErrPermission:
		return connect.CodePermissionDenied
	case fsutil.ErrNoSpace:
		return connect.CodeResourceExhausted
	}
	return connect.CodeInternal
}

// errorf returns a Connect error with code c.
func errorf(c connect.Code, format string, args ...any) error {
	return connect.NewError(c, fmt.Errorf(format, args...))
}
