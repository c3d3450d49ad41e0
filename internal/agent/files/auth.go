package files

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/identity"
	"github.com/sbx-dev/sbx/internal/envdsig"
)

// Signed operations.
const (
	OpRead  = "read"
	OpWrite = "write"
)

// authorize checks a /files request as envd does: with no token set anything
// goes; an X-Access-Token header must match; otherwise the signature must
// match (constant time) and then not be expired. Failures are 401. signed
// reports that the signature authorised it: its user is then the one the
// signature covers (caller).
func authorize(r *http.Request, st *identity.State, op string) (signed bool, err error) {
	token := st.Token()
	if token == "" {
		return false, nil
	}
	if h := r.Header.Get("X-Access-Token"); h != "" {
		if !st.CheckToken(h) {
			return false, withStatus(http.StatusUnauthorized, errors.New("access token present in header but does not match"))
		}
		return false, nil
	}
	return true, checkSignature(r, token, op)
}

func checkSignature(r *http.Request, token, op string) error {
	q := r.URL.Query()
	if !q.Has("signature") {
		return withStatus(http.StatusUnauthorized, errors.New("missing signature query parameter"))
	}
	expiry, ok := envdsig.ParseExpiry(q.Get("signature_expiration"))
	if !ok {
		return withStatus(http.StatusBadRequest, fmt.Errorf("invalid signature_expiration %q", q.Get("signature_expiration")))
	}
	want := envdsig.Sign(q.Get("path"), op, q.Get("username"), token, expiry)
	if !envdsig.Equal(want, q.Get("signature")) {
		return withStatus(http.StatusUnauthorized, errors.New("invalid signature"))
	}
	if expiry > 0 && expiry < time.Now().Unix() {
		return withStatus(http.StatusUnauthorized, errors.New("signature is already expired"))
	}
	return nil
}

// caller returns the user of a /files request: the username query when
// present, else Basic auth, else the default user. Unknown users are 401.
// A signed request (signed) never takes Basic auth: its signature covers
// the username query ("" for the default user), and a header its holder
// adds must not make a URL signed for the default user act as root.
func (h *handler) caller(r *http.Request, signed bool) (identity.User, error) {
	var (
		u   identity.User
		err error
	)
	switch q := r.URL.Query(); {
	case q.Has("username"):
		u, err = h.users.Lookup(q.Get("username"))
	case signed:
		u, err = identity.Caller(nil, h.state, h.users)
	default:
		u, err = identity.Caller(r.Header, h.state, h.users)
	}
	if err != nil {
		if errors.Is(err, identity.ErrUnknownUser) {
			return u, withStatus(http.StatusUnauthorized, fmt.Errorf("error looking up user: %w", err))
		}
		return u, err
	}
	return u, nil
}
