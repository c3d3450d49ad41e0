package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// AuthHeader carries the API front's signature on a request it forwards
// to a node.
const AuthHeader = "Sbx-Cluster-Auth"

// ClientHeader carries, on a request the front signed, the address of the
// client the front took it from, covered by the signature: a node's
// per-address rate limits and its logs then see the client, not the front
// (whose one address every keyless client would otherwise share).
const ClientHeader = "Sbx-Cluster-Client"

// maxSkew bounds how old (or early) a signature may be.
const maxSkew = 30 * time.Second

// ErrUnsigned is returned (wrapped) by Verify for a request without a
// valid signature.
var ErrUnsigned = errors.New("cluster: request not signed by the cluster's front")

// Signer signs and verifies front-to-node requests with the cluster's
// shared secret: HMAC-SHA256 over the time, the target node's id, the
// method and the request URI, so a signature is good for one request
// line to one node for maxSkew. The body is not covered (requests stream).
type Signer struct {
	key []byte
	now func() time.Time
}

// LoadSigner reads the shared secret from path: at least 32 bytes, the
// file not readable by group or others.
func LoadSigner(path string) (*Signer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("cluster secret %s: mode %v, want no access for group and others (chmod 600)", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	key := []byte(strings.TrimSpace(string(b)))
	if len(key) < 32 {
		return nil, fmt.Errorf("cluster secret %s: %d bytes, want at least 32", path, len(key))
	}
	return &Signer{key: key, now: time.Now}, nil
}

func (s *Signer) mac(ts, node string, r *http.Request) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "v1\n%s\n%s\n%s\n%s", ts, node, r.Method, r.URL.RequestURI())
	if c := r.Header.Values(ClientHeader); len(c) > 0 {
		fmt.Fprintf(m, "\n%s", strings.Join(c, ","))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Sign sets r's AuthHeader for node and its ClientHeader to the host of
// r.RemoteAddr (none when r has no remote address: a node's requests to
// itself), replacing whatever a client sent. A node that verifies it needs
// this version or later: update nodes before fronts.
func (s *Signer) Sign(r *http.Request, node string) {
	r.Header.Del(ClientHeader)
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		r.Header.Set(ClientHeader, h)
	}
	ts := strconv.FormatInt(s.now().Unix(), 10)
	r.Header.Set(AuthHeader, "v1."+ts+"."+s.mac(ts, node, r))
}

// Verify checks that r carries a signature for node made within maxSkew
// (its ClientHeader included).
func (s *Signer) Verify(r *http.Request, node string) error {
	v, ts, sig, ok := cut3(r.Header.Get(AuthHeader))
	if !ok || v != "v1" {
		return ErrUnsigned
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrUnsigned
	}
	if d := s.now().Sub(time.Unix(sec, 0)); d > maxSkew || d < -maxSkew {
		return fmt.Errorf("%w (signature %v old)", ErrUnsigned, d.Round(time.Second))
	}
	if !hmac.Equal([]byte(sig), []byte(s.mac(ts, node, r))) {
		return ErrUnsigned
	}
	return nil
}

func cut3(s string) (a, b, c string, ok bool) {
	a, rest, ok1 := strings.Cut(s, ".")
	b, c, ok2 := strings.Cut(rest, ".")
	return a, b, c, ok1 && ok2
}

// Client returns the client address a verified request's ClientHeader
// names; ok is false when it names none or not one address.
func Client(r *http.Request) (addr netip.Addr, ok bool) {
	c := r.Header.Values(ClientHeader)
	if len(c) != 1 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(c[0])
	return a.Unmap(), err == nil
}
