package identity

import (
	"fmt"
	"net/http"
)

// Caller resolves the user a request acts as: the Basic auth user name when
// present (the password is ignored, as in envd), else the state's default user.
func Caller(h http.Header, st *State, f Files) (User, error) {
	name := st.DefaultUser()
	if h.Get("Authorization") != "" {
		r := http.Request{Header: h}
		u, _, ok := r.BasicAuth()
		if !ok {
			return User{}, fmt.Errorf("%w: malformed Authorization header", ErrUnknownUser)
		}
		if u != "" {
			name = u
		}
	}
	return f.Lookup(name)
}
