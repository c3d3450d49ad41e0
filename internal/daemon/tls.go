package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"
)

// tlsFlags configure the HTTPS origin: the same handler as --listen (API and
// sandbox traffic, Host routing "<port>-<id>.<domain>") on its own listener,
// with a certificate for "*.<domain>" (E2B's URLs: https://api.<domain>,
// https://<port>-<id>.<domain>).
type tlsFlags struct {
	cert, key, listen string
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.cert, "tls-cert", "", "PEM certificate (chain) for *.<domain> and api.<domain>: serves HTTPS on --tls-listen")
	fs.StringVar(&t.key, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&t.listen, "tls-listen", ":443", "address of the HTTPS origin (with --tls-cert); --listen stays plain HTTP")
}

func (t *tlsFlags) enabled() bool { return t.cert != "" || t.key != "" }

// errTLSFlags is a --tls-cert without --tls-key or the reverse.
var errTLSFlags = errors.New("--tls-cert and --tls-key must be given together")

// loadTLS reads and checks the certificate: unreadable or mismatched files
// and, when domain is set, a certificate that does not cover both
// api.<domain> and <port>-<id>.<domain> are errors (a client would refuse
// every connection). An expired or not yet valid certificate only warns
// (clock skew; the operator may be renewing it).
func loadTLS(t tlsFlags, domain string, log *slog.Logger) (*tls.Config, error) {
	if t.cert == "" || t.key == "" {
		return nil, errTLSFlags
	}
	pair, err := tls.LoadX509KeyPair(t.cert, t.key)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", t.cert, t.key, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s: %w", t.cert, err)
	}
	if err := coversDomain(leaf, domain); err != nil {
		return nil, fmt.Errorf("--tls-cert %s: %w", t.cert, err)
	}
	if domain == "" {
		log.Warn("TLS without --domain: the certificate's names are not checked and Host routing accepts any domain")
	}
	if now := time.Now(); now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		log.Warn("TLS certificate is not valid now", "notBefore", leaf.NotBefore, "notAfter", leaf.NotAfter)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
		// HTTP/1.1 only, as on --listen: the proxy's streaming and the
		// server's header limits are written for it.
		NextProtos: []string{"http/1.1"},
	}, nil
}

// coversDomain checks that leaf is valid for the API host and for sandbox
// hosts of domain ("name" or "name:port"); "" checks nothing.
func coversDomain(leaf *x509.Certificate, domain string) error {
	if domain == "" {
		return nil
	}
	host := domain
	if h, _, err := net.SplitHostPort(domain); err == nil {
		host = h
	}
	for _, name := range []string{"api." + host, "49983-" + strings.Repeat("a", 20) + "." + host} {
		if err := leaf.VerifyHostname(name); err != nil {
			return fmt.Errorf("does not cover %s (it names %v): a wildcard certificate for *.%s is needed", name, leaf.DNSNames, host)
		}
	}
	return nil
}
