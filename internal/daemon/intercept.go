package daemon

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-dev/sbx/internal/egress/intercept"
	"github.com/sbx-dev/sbx/internal/egress/rules"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// interceptFlags configure the header-injection path of network.rules.
type interceptFlags struct {
	caDir      string // the interception CA (key 0600); default <data-dir>/egress-ca
	upstreamCA string // extra PEM roots the interceptor trusts for upstream servers
}

func (i *interceptFlags) register(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&i.caDir, "egress-ca-dir", "", "directory of the CA that signs the certificates sbx presents to sandboxes for domains with network.rules (made on first start, key 0600; default <data-dir>/egress-ca)")
	fs.StringVar(&i.upstreamCA, "egress-upstream-ca", "", "PEM file of extra roots trusted, besides the system's, when the daemon verifies the upstream servers of domains with network.rules (private upstreams, tests)")
}

// loadEgressCA loads or makes the interception CA.
func loadEgressCA(f *Config, log *slog.Logger) (*intercept.CA, error) {
	dir := f.intercept.caDir
	if dir == "" {
		dir = filepath.Join(f.dataDir, "egress-ca")
	}
	ca, generated, err := intercept.LoadCA(dir)
	if err != nil {
		return nil, err
	}
	if generated {
		log.Info("egress interception CA generated", "dir", dir)
	}
	return ca, nil
}

// upstreamRoots are the system roots plus --egress-upstream-ca.
func upstreamRoots(path string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if path == "" {
		return pool, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--egress-upstream-ca: %w", err)
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--egress-upstream-ca: no certificate in %s", path)
	}
	return pool, nil
}

// newInterceptor serves the connections the guard admits to names with
// rules: rules and team read from the live sandbox (so updateNetwork
// applies to the next request), secrets opened at request time, each
// use audited by secret name.
func newInterceptor(f *Config, ca *intercept.CA, mgr *sandbox.Manager, aud auditor, log *slog.Logger) (*intercept.Interceptor, error) {
	roots, err := upstreamRoots(f.intercept.upstreamCA)
	if err != nil {
		return nil, err
	}
	return &intercept.Interceptor{CA: ca, RootCAs: roots, Log: log,
		Rules: func(sb string) (rules.Set, string, bool) { return sandboxRules(mgr, sb) },
		Secret: func(ctx context.Context, team, name string) (string, error) {
			return f.secrets.Value(ctx, team, name)
		},
		Used: func(sb, host string, names []string) {
			log.Info("secret used", "sandbox", sb, "host", host, "secrets", names)
			if aud != nil {
				_ = aud.Append("secret", sb, "", map[string]string{"host": host, "secrets": strings.Join(names, ",")})
			}
		},
	}, nil
}

// sandboxRules are sb's current network.rules and team.
func sandboxRules(mgr *sandbox.Manager, sb string) (rules.Set, string, bool) {
	in, err := mgr.Get(sb)
	if err != nil || in.Network == nil {
		return rules.Set{}, "", false
	}
	set, err := rules.Parse(in.Network.Rules)
	if err != nil || set.Empty() {
		return rules.Set{}, "", false
	}
	return set, in.Team, true
}
