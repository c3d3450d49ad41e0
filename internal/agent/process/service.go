// Package process is the agent's Connect process.Process service,
// wire-compatible with E2B's envd: start processes (piped or on a PTY) as a
// sandbox user, stream their output, re-attach to them, feed their input,
// signal them and resize their terminals.
//
// Processes outlive the streams that started them: a client that goes away
// leaves its process running (E2B's background commands), to be found again
// by pid or tag with Connect, and killed only by SendSignal or by the lifetime
// the Start call set with Connect-Timeout-Ms. How output reaches streams, and
// what a slow stream costs, is described in output.go.
package process

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sys/unix"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
	"github.com/sbx-dev/sbx/internal/agent/eventlog"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// Service implements processconnect.ProcessHandler.
type Service struct {
	state *identity.State
	users identity.Files

	mu    sync.Mutex
	procs map[uint32]*proc
	tags  map[string]*proc // a nil value reserves a tag for a process being started

	events *eventlog.Log // where starts and ends are recorded; may be nil (set before serving)
}

var _ processconnect.ProcessHandler = (*Service)(nil)

// New returns the service; st supplies the default user, workdir and env,
// users the account databases processes are run from.
func New(st *identity.State, users identity.Files) *Service {
	return &Service{state: st, users: users, procs: map[uint32]*proc{}, tags: map[string]*proc{}}
}

// Close kills every process the service started (their whole groups) and
// waits up to timeout for them to end. The service stays usable.
func (s *Service) Close(timeout time.Duration) {
	s.mu.Lock()
	procs := slices.Collect(maps.Values(s.procs))
	s.mu.Unlock()
	deadline := time.After(timeout)
	for _, p := range procs {
		_ = p.signal(unix.SIGKILL)
	}
	for _, p := range procs {
		select {
		case <-p.ended:
		case <-deadline:
			return
		}
	}
}

func (s *Service) add(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs[p.pid] = p
	if p.tag != nil {
		s.tags[*p.tag] = p
	}
}

func (s *Service) remove(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs[p.pid] == p {
		delete(s.procs, p.pid)
	}
	if p.tag != nil && s.tags[*p.tag] == p {
		delete(s.tags, *p.tag)
	}
}

// reserveTag claims tag for a process about to start; the returned func
// releases it if the start fails.
func (s *Service) reserveTag(tag *string) (release func(), err error) {
	if tag == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.tags[*tag]; taken {
		return nil, errorf(connect.CodeAlreadyExists, "a running process already has tag %q", *tag)
	}
	s.tags[*tag] = nil
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.tags[*tag] == nil {
			delete(s.tags, *tag)
		}
	}, nil
}

// find returns the running process a selector names.
func (s *Service) find(sel *rpc.ProcessSelector) (*proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch v := sel.GetSelector().(type) {
	case *rpc.ProcessSelector_Pid:
		if p := s.procs[v.Pid]; p != nil {
			return p, nil
		}
		return nil, errorf(connect.CodeNotFound, "process with pid %d not found", v.Pid)
	case *rpc.ProcessSelector_Tag:
		if p := s.tags[v.Tag]; p != nil {
			return p, nil
		}
		return nil, errorf(connect.CodeNotFound, "process with tag %q not found", v.Tag)
	}
	return nil, errorf(connect.CodeInvalidArgument, "process selector needs a pid or a tag")
}

// caller returns the user a request acts as (Basic auth, else the default).
func (s *Service) caller(h http.Header) (identity.User, error) {
	u, err := identity.Caller(h, s.state, s.users)
	if err != nil {
		if errors.Is(err, identity.ErrUnknownUser) { // envd's: unauthenticated, "invalid username: 'x'"
			return identity.User{}, connect.NewError(connect.CodeUnauthenticated, err)
		}
		return identity.User{}, connect.NewError(connect.CodeInternal, err)
	}
	return u, nil
}

// defaultKeepalive is envd's keepalive interval when the client sets none.
const defaultKeepalive = 90 * time.Second

// keepaliveInterval reads Keepalive-Ping-Interval (seconds).
func keepaliveInterval(h http.Header) time.Duration {
	n, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval"))
	if err != nil || n <= 0 {
		return defaultKeepalive
	}
	return time.Duration(min(n, 24*3600)) * time.Second
}
