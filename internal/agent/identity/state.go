package identity

import (
	"crypto/subtle"
	"maps"
	"sync"
)

// Defaults used before /init says otherwise.
const (
	DefaultUser    = "user"
	DefaultWorkdir = "" // empty: the user's home
)

// State is what the daemon sets through /init. mu guards every field.
type State struct {
	mu          sync.RWMutex
	token       string
	defaultUser string
	workdir     string
	envs        map[string]string
}

// NewState returns the state of a fresh agent: no token, default user "user".
func NewState() *State {
	return &State{defaultUser: DefaultUser, envs: map[string]string{}}
}

// Init is the body of POST /init. Nil/empty fields leave the value unchanged,
// except EnvVars, which replaces the default env when non-nil.
type Init struct {
	AccessToken    *string           `json:"accessToken,omitempty"`
	EnvVars        map[string]string `json:"envVars,omitempty"`
	DefaultUser    string            `json:"defaultUser,omitempty"`
	DefaultWorkdir string            `json:"defaultWorkdir,omitempty"`
	// EgressCA is the daemon's interception CA (PEM), installed in the
	// sandbox's trust stores (sbx; E2B's envd has no such field).
	EgressCA string `json:"egressCA,omitempty"`
}

// Apply sets the state from an /init request.
func (s *State) Apply(in Init) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.AccessToken != nil {
		s.token = *in.AccessToken
	}
	if in.EnvVars != nil {
		s.envs = maps.Clone(in.EnvVars)
	}
	if in.DefaultUser != "" {
		s.defaultUser = in.DefaultUser
	}
	if in.DefaultWorkdir != "" {
		s.workdir = in.DefaultWorkdir
	}
}

// Token returns the access token ("" when none is set).
func (s *State) Token() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.token
}

// CheckToken reports whether got is acceptable: always when no token is set,
// otherwise a constant-time match.
func (s *State) CheckToken(got string) bool {
	want := s.Token()
	if want == "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// DefaultUser returns the user for requests without Basic auth.
func (s *State) DefaultUser() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.defaultUser
}

// DefaultWorkdir returns the default cwd ("" means the user's home).
func (s *State) DefaultWorkdir() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.workdir
}

// Envs returns a copy of the default env vars for new processes.
func (s *State) Envs() map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.envs)
}

// AddEnvDefaults sets each of defs that the default env does not set yet.
func (s *State) AddEnvDefaults(defs map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range defs {
		if _, ok := s.envs[k]; !ok {
			s.envs[k] = v
		}
	}
}
