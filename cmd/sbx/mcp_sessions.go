package main

import (
	"context"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpMaxSessions bounds a team's open /mcp sessions. Each is an MCP server
// in the daemon's memory (~180 KiB) for up to mcpSessionIdle: before, one
// team key made 3000 in 9.5 s and grew the daemon's RSS by 546 MiB, so a
// few minutes of it would exhaust the host's memory under every tenant.
var mcpMaxSessions = 64

// mcpSessions counts each team's open /mcp sessions: the MCP handler makes
// one mcp.Server per session, open while it has a session, and each
// request that makes one holds a place while it runs.
type mcpSessions struct {
	max   int
	mu    sync.Mutex
	teams map[string][]*mcpSlot // by team; guarded by mu
}

// mcpSlot is one place: a request making a session, then its server.
type mcpSlot struct {
	srv  *mcp.Server // set by made
	busy bool        // its request is being served
}

type mcpSlotKey struct{}

func newMCPSessions(limit int) *mcpSessions {
	return &mcpSessions{max: limit, teams: map[string][]*mcpSlot{}}
}

// reserve takes one of team's places for r, a request that makes a
// session, and returns r carrying it and the func to call once r is
// served; that func is nil when team has no place left.
func (m *mcpSessions) reserve(r *http.Request, team string) (*http.Request, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	slots := m.prune(team)
	if len(slots) >= m.max {
		return r, nil
	}
	s := &mcpSlot{busy: true}
	m.teams[team] = append(slots, s)
	return r.WithContext(context.WithValue(r.Context(), mcpSlotKey{}, s)), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		s.busy = false
	}
}

// made records srv as the server of the session r makes.
func (m *mcpSessions) made(r *http.Request, srv *mcp.Server) {
	if s, ok := r.Context().Value(mcpSlotKey{}).(*mcpSlot); ok {
		m.mu.Lock()
		defer m.mu.Unlock()
		s.srv = srv
	}
}

// prune drops team's places whose request is over and whose session, if
// one was made, has ended (DELETE, idle), and returns the others. m.mu is
// held.
func (m *mcpSessions) prune(team string) []*mcpSlot {
	kept := m.teams[team][:0]
	for _, s := range m.teams[team] {
		if s.busy || s.srv != nil && hasSession(s.srv) {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		delete(m.teams, team)
		return nil
	}
	m.teams[team] = kept
	return kept
}

func hasSession(srv *mcp.Server) bool {
	for range srv.Sessions() {
		return true
	}
	return false
}
