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
// match (constant time) and then not be expired. Failures are 401.
func authorize(r *http.Request, st *identity.State, op string) error {
	token := st.Token()
	if token == "" {
		return nil
	}
	if h := r.Header.Get("X-Access-Token"); h != "" {
		if !st.CheckToken(h) {
			return withStatus(http.StatusUnauthorized, errors.New("access token present in header but does not match"))
		}
		return nil
	}
	return checkSignature(r, token, op)
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
func (h *handler) caller(r *http.Request) (identity.User, error) {
	var (
		u   identity.User
		err error
	)
	if q := r.URL.Query(); q.Has("username") {
		u, err = h.users.Lookup(q.Get("username"))
	} else {
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
